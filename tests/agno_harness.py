"""Real agno agents and a team, traced by OpenInference, recorded as OTLP JSON Lines.

``openinference-instrumentation-agno`` traces a run as an AGENT span ``<agent>.run``
(``agent.name``, ``session.id``, the input and the answer) › the model calls (LLM) and the
tools (TOOL). A team delegates through its ``delegate_task_to_member`` tool, and the
member's run span is written beside that tool span, within its time, not under it. The
model is agno's ``OpenAIChat`` on the real ``openai`` client against
:class:`fake_openai.FakeOpenAI`.

The instrumentation patches agno's classes process-wide, so the runs happen in a child
process: ``python agno_harness.py [--pausing] OUT_DIR`` writes one OTLP JSON Lines file per scenario
and ``expected.json``: each run as agno itself returned it (its ``RunOutput.messages``;
a team's member runs from ``member_responses``), which the rebuilt invocations must equal.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agno.agent import Agent, RunOutput
from agno.models.openai import OpenAIChat
from agno.run.team import TeamRunOutput
from agno.team import Team
from agno.tools import tool
from openinference.instrumentation.agno import AgnoInstrumentor
from pydantic import BaseModel

from fake_openai import MODEL, FakeOpenAI, scripted_reply
from recording import Recorder, record_scenarios, weather

#: A tool call the scripted model makes: (name, arguments, call id).
Call = tuple[str, dict[str, Any], str]
#: One model turn: text, or tool calls.
Turn = str | Sequence[Call]


def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: The city.
    """
    return weather(city)


def _bodies(turns: Sequence[Turn]) -> list[dict[str, Any]]:
    return [
        scripted_reply(i, turn, prompt_tokens=13)
        if isinstance(turn, str)
        else scripted_reply(i, None, turn, prompt_tokens=13)
        for i, turn in enumerate(turns)
    ]


def view(output: RunOutput | TeamRunOutput, agent: str) -> dict[str, Any]:
    """One run as agno returned it, as an invocation's fields."""
    messages = output.messages or []
    results = {m.tool_call_id: m for m in messages if m.role == "tool"}
    calls = []
    for message in messages:
        if message.role != "assistant":
            continue
        for call in message.tool_calls or []:
            result = results.get(call["id"])
            calls.append(
                {
                    "name": call["function"]["name"],
                    "args": json.loads(call["function"]["arguments"]),
                    "id": call["id"],
                    "result": result.content if result is not None else None,
                    "failed": bool(result is not None and result.tool_call_error),
                }
            )
    replies = [m for m in messages if m.role == "assistant"]
    texts = [m.content for m in replies if isinstance(m.content, str) and m.content]
    user = next(m.content for m in messages if m.role == "user")
    return {
        "agents": [agent],
        "user": user,
        "calls": calls,
        "intermediate": texts[:-1],
        "final": output.content,
    }


def _weather_agent(model: OpenAIChat, **kwargs: Any) -> Agent:
    return Agent(name="weather_agent", model=model, tools=[get_weather], **kwargs)


def _run(turns: Sequence[Turn], prompt: str, **kwargs: Any) -> RunOutput:
    """The weather agent (made with ``kwargs``) run once on ``prompt``, the model scripted."""
    with FakeOpenAI(_bodies(turns)) as fake:
        model = OpenAIChat(id=MODEL, base_url=fake.base_url, api_key="test")
        return _weather_agent(model, **kwargs).run(prompt)


def _one(turns: Sequence[Turn], prompt: str) -> list[dict[str, Any]]:
    return [view(_run(turns, prompt), "weather_agent")]


def sequential_tools() -> list[dict[str, Any]]:
    turns: list[Turn] = [
        [("get_weather", {"city": "Paris"}, "c1")],
        [("get_weather", {"city": "Rome"}, "c2")],
        "Paris and Rome: sunny.",
    ]
    return _one(turns, "Weather in Paris, then Rome?")


def parallel_and_failed() -> list[dict[str, Any]]:
    turns: list[Turn] = [
        [("get_weather", {"city": "Zürich"}, "p1"), ("get_weather", {"city": "Atlantis"}, "p2")],
        "Zürich: sunny. Atlantis has no station.",
    ]
    return _one(turns, "Wetter in Zürich und Atlantis?")


def no_tools() -> list[dict[str, Any]]:
    return _one(["Bonjour ! Ça va ? 👋"], "Dis bonjour — en français.")


def two_turn_session() -> list[dict[str, Any]]:
    turns: list[Turn] = [[("get_weather", {"city": "Rome"}, "s1")], "Rome is sunny.", "Welcome!"]
    with FakeOpenAI(_bodies(turns)) as fake:
        model = OpenAIChat(id=MODEL, base_url=fake.base_url, api_key="test")
        agent = _weather_agent(model, session_id="agno-session-1")
        first = agent.run("Weather in Rome?")
        second = agent.run("Thanks!")
    return [view(first, "weather_agent"), view(second, "weather_agent")]


def team_delegation() -> list[dict[str, Any]]:
    turns: list[Turn] = [
        [("delegate_task_to_member", {"member_id": "researcher", "task": "Nice?"}, "t1")],
        [("get_weather", {"city": "Nice"}, "r1")],
        "Nice: sunny.",
        "The researcher says Nice is sunny.",
    ]
    with FakeOpenAI(_bodies(turns)) as fake:
        model = OpenAIChat(id=MODEL, base_url=fake.base_url, api_key="test")
        researcher = Agent(
            name="researcher", role="Finds weather", model=model, tools=[get_weather]
        )
        output = Team(name="desk", members=[researcher], model=model).run("How is Nice?")
    [member] = output.member_responses
    assert isinstance(member, RunOutput)
    return [view(output, "desk"), view(member, "researcher")]


def thinking() -> list[dict[str, Any]]:
    """A reasoning model (``reasoning_content`` beside each reply, DeepSeek's way): agno
    keeps it apart from the answer, in its messages' ``reasoning_content``."""
    turns: list[Turn] = [[("get_weather", {"city": "Lima"}, "k1")], "Lima: sunny."]
    bodies = _bodies(turns)
    for body, thought in zip(bodies, ["They want Lima.", "Sunny; say so."], strict=True):
        body["choices"][0]["message"]["reasoning_content"] = thought
    with FakeOpenAI(bodies) as fake:
        model = OpenAIChat(id=MODEL, base_url=fake.base_url, api_key="test")
        output = _weather_agent(model).run("Lima: sunny today?")
    assert [m.reasoning_content for m in output.messages or [] if m.role == "assistant"] == [
        "They want Lima.",
        "Sunny; say so.",
    ]
    return [view(output, "weather_agent")]


class Forecast(BaseModel):
    city: str
    sky: str


def structured_output() -> list[dict[str, Any]]:
    """``output_schema``: the model answers in JSON, agno's content is the parsed model."""
    answer = Forecast(city="Paris", sky="sunny")
    turns: list[Turn] = [[("get_weather", {"city": "Paris"}, "o1")], answer.model_dump_json()]
    with FakeOpenAI(_bodies(turns)) as fake:
        model = OpenAIChat(id=MODEL, base_url=fake.base_url, api_key="test")
        output = _weather_agent(model, output_schema=Forecast).run("Paris weather, as JSON?")
    assert output.content == answer
    return [{**view(output, "weather_agent"), "final": answer.model_dump_json()}]


@tool(stop_after_tool_call=True)
def announce_weather(city: str) -> str:
    """The weather, said to the user as it is: the run ends with it.

    Args:
        city: The city.
    """
    return f"Announcement: {weather(city)}"


def stop_after_tool_call() -> list[dict[str, Any]]:
    """A tool whose result is the run's answer (``stop_after_tool_call``): no model call
    after it; agno's content is the result, which a model call's output never holds."""
    with FakeOpenAI(_bodies([[("announce_weather", {"city": "Bern"}, "a1")]])) as fake:
        model = OpenAIChat(id=MODEL, base_url=fake.base_url, api_key="test")
        output = Agent(name="announcer", model=model, tools=[announce_weather]).run("Bern?")
    return [view(output, "announcer")]


def tool_call_limit() -> list[dict[str, Any]]:
    """A call past the agent's ``tool_call_limit``: agno answers it itself, "Tool call
    limit reached. …", flagged ``tool_call_error``, and no tool span records it."""
    turns: list[Turn] = [
        [("get_weather", {"city": "Paris"}, "l1")],
        [("get_weather", {"city": "Rome"}, "l2")],
        "Paris: sunny. Rome: not looked up.",
    ]
    return _limited(turns, "Weather in Paris, then Rome?")


def tool_call_limit_parallel() -> list[dict[str, Any]]:
    """Two calls in one reply, the limit 1: the first runs, agno refuses the second."""
    turns: list[Turn] = [
        [("get_weather", {"city": "Oslo"}, "m1"), ("get_weather", {"city": "Bergen"}, "m2")],
        "Oslo: sunny. Bergen: not looked up.",
    ]
    return _limited(turns, "Weather in Oslo and Bergen?")


def _limited(turns: Sequence[Turn], prompt: str) -> list[dict[str, Any]]:
    output = _run(turns, prompt, tool_call_limit=1)
    refused = [m for m in output.messages or [] if m.role == "tool" and m.tool_call_error]
    assert [str(m.content).startswith("Tool call limit reached") for m in refused] == [True]
    return [view(output, "weather_agent")]


@tool(requires_confirmation=True)
def refund(order_id: int) -> str:
    """Refund an order, once a human confirms.

    Args:
        order_id: The order.
    """
    return f"refunded {order_id}"


@tool(requires_user_input=True, user_input_fields=["reason"])
def cancel_order(order_id: int, reason: str) -> str:
    """Cancel an order, for a reason the user gives.

    Args:
        order_id: The order.
        reason: Why, in the user's words.
    """
    return f"cancelled {order_id}: {reason}"


@tool(external_execution=True)
def ship(order_id: int) -> str:
    """Ship an order: the warehouse does it, outside the agent.

    Args:
        order_id: The order.
    """
    raise AssertionError("an external tool is not run by the agent")


def _paused_then_resumed(
    tool: Any, call: Call, answer: str, prompt: str, resolve: Callable[[RunOutput], None]
) -> list[dict[str, Any]]:
    """A run that pauses on ``call`` for a human, resolved by ``resolve``, then
    ``continue_run``: agno's output of the resumed run is the turn."""
    name = f"{call[0]}_agent"
    with FakeOpenAI(_bodies([[call], answer])) as fake:
        model = OpenAIChat(id=MODEL, base_url=fake.base_url, api_key="test")
        agent = Agent(name=name, model=model, tools=[tool], session_id=f"agno-hitl-{call[0]}")
        paused = agent.run(prompt)
        assert paused.is_paused
        resolve(paused)
        resumed = agent.continue_run(run_response=paused)
    assert resumed.content == answer
    return [view(resumed, name)]


def _confirm(run: RunOutput) -> None:
    for t in run.tools_requiring_confirmation:
        t.confirmed = True


def _give_reason(run: RunOutput) -> None:
    for t in run.tools_requiring_user_input:
        for field in t.user_input_schema or []:
            if field.name == "reason":
                field.value = "ordered twice"


def _run_elsewhere(run: RunOutput) -> None:
    for t in run.tools_awaiting_external_execution:
        t.result = "shipped 6 by hand"


def confirmation() -> list[dict[str, Any]]:
    call: Call = ("refund", {"order_id": 4}, "h1")
    return _paused_then_resumed(refund, call, "Order 4 is refunded.", "Refund order 4?", _confirm)


def user_input() -> list[dict[str, Any]]:
    call: Call = ("cancel_order", {"order_id": 5}, "h2")
    return _paused_then_resumed(
        cancel_order, call, "Order 5 is cancelled.", "Cancel order 5?", _give_reason
    )


def external_execution() -> list[dict[str, Any]]:
    call: Call = ("ship", {"order_id": 6}, "h3")
    return _paused_then_resumed(ship, call, "Order 6 is shipped.", "Ship order 6?", _run_elsewhere)


SCENARIOS: dict[str, Callable[[], list[dict[str, Any]]]] = {
    f.__name__: f
    for f in (
        sequential_tools,
        parallel_and_failed,
        no_tools,
        two_turn_session,
        team_delegation,
        thinking,
        structured_output,
        stop_after_tool_call,
        tool_call_limit,
        tool_call_limit_parallel,
    )
}
#: Runs that pause for a human (two runs each, one turn); recorded with ``--pausing``
#: only: the serve test counts every recorded run as a scored turn.
PAUSING: dict[str, Callable[[], list[dict[str, Any]]]] = {
    f.__name__: f for f in (confirmation, user_input, external_execution)
}


def main(out_dir: Path, *, pausing: bool = False) -> None:
    """Run every scenario (and with ``pausing``, the :data:`PAUSING` ones); write
    ``<scenario>.jsonl`` (OTLP JSON) and ``expected.json``."""
    recorder = Recorder()
    AgnoInstrumentor().instrument(tracer_provider=recorder.provider)
    record_scenarios(recorder, {**SCENARIOS, **(PAUSING if pausing else {})}, out_dir)


if __name__ == "__main__":
    main(Path(sys.argv[-1]), pausing="--pausing" in sys.argv[1:-1])
