"""Real OpenAI Agents SDK runs, traced by OpenInference, recorded as OTLP JSON Lines.

The OpenAI Agents SDK traces with its own tracing API; ``openinference-instrumentation-
openai-agents`` turns those traces into OTel spans (``Agent workflow`` › agent ›
``turn`` › ``response`` or ``generation`` + tool and ``handoff to …`` spans). The SDK's
model is the real ``openai`` client against :class:`fake_openai.FakeOpenAI`, through
either model class: ``OpenAIResponsesModel`` (the SDK's default, Responses API) or
``OpenAIChatCompletionsModel``; OpenInference writes each differently. The ``streamed``
scenario runs with ``Runner.run_streamed``, and the fake streams its replies.

With ``TRACESCORE_HARNESS_INSTRUMENTATION=openllmetry`` OpenLLMetry's
``opentelemetry-instrumentation-openai-agents`` traces instead (``Agent Workflow`` ›
``<agent>.agent`` › ``openai.response`` + ``<tool>.tool`` spans, GenAI attributes).

OpenInference's instrumentation replaces the SDK's trace processors, so nothing is sent
to OpenAI (OpenLLMetry's adds one; the SDK's own exporter has no key and sends nothing);
the runs still happen in a child process, which keeps that process-wide state out of the
test process: ``python openai_agents_harness.py API OUT_DIR`` (API ``responses`` or
``chat``; ``OPENINFERENCE_HIDE_*`` from the environment) writes one OTLP JSON Lines file
per scenario and ``expected.json``: each run as the SDK itself recorded it (its
``raw_responses`` and ``new_items``), which the rebuilt invocations must equal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
from agents import (
    Agent,
    AgentsException,
    FileSearchTool,
    GuardrailFunctionOutput,
    HandoffOutputItem,
    ItemHelpers,
    MessageOutputItem,
    Model,
    ModelSettings,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunContextWrapper,
    Runner,
    RunResult,
    RunResultStreaming,
    ToolCallOutputItem,
    TResponseInputItem,
    function_tool,
    input_guardrail,
    output_guardrail,
)
from agents.exceptions import RunErrorDetails
from openai.types.responses import ResponseFileSearchToolCall, ResponseFunctionToolCall
from openai.types.shared import Reasoning as ReasoningSettings
from openinference.instrumentation import using_session
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.instrumentation.openai_agents import (
    OpenAIAgentsInstrumentor as OpenLLMetryAgentsInstrumentor,
)
from pydantic import BaseModel

from fake_openai import MODEL, FakeOpenAI, completion, scripted_response
from recording import Recorder, weather

APIS = ("responses", "chat")


@dataclass(frozen=True)
class Call:
    """A tool call the scripted model makes."""

    name: str
    args: dict[str, Any]
    id: str


@dataclass(frozen=True)
class FileSearch:
    """A file search the Responses API runs itself (``FileSearchTool``): its results."""

    id: str
    queries: list[str]
    texts: list[str]

    def item(self) -> dict[str, Any]:
        """The ``file_search_call`` output item, results included (as the SDK asks)."""
        results = [
            {"file_id": f"file-{n}", "filename": f"doc{n}.md", "score": 1 - n / 10, "text": t}
            for n, t in enumerate(self.texts)
        ]
        return {
            "type": "file_search_call",
            "id": self.id,
            "status": "completed",
            "queries": self.queries,
            "results": results,
        }


@dataclass(frozen=True)
class Reasoning:
    """A reasoning model's reasoning item, with the summary asked for."""

    id: str
    summary: list[str]

    def item(self) -> dict[str, Any]:
        """The ``reasoning`` output item."""
        texts = [{"type": "summary_text", "text": t} for t in self.summary]
        return {"type": "reasoning", "id": self.id, "summary": texts}


#: Output items the Responses API makes itself (not text, not a call of the agent's).
Item = FileSearch | Reasoning
Turn = Sequence[str | Call | Item]


def _responses_body(turn: Turn, index: int) -> dict[str, Any]:
    body = scripted_response(
        index,
        [
            b if isinstance(b, str) else (b.name, b.args, b.id)
            for b in turn
            if not isinstance(b, Item)
        ],
        input_tokens=13,
    )
    items = iter(body["output"])
    body["output"] = [b.item() if isinstance(b, Item) else next(items) for b in turn]
    return body


def _chat_body(turn: Turn, index: int) -> dict[str, Any]:
    if any(isinstance(b, Item) for b in turn):
        raise ValueError("hosted tools and reasoning items are Responses API features")
    texts = [b for b in turn if isinstance(b, str)]
    calls = [
        {
            "id": b.id,
            "type": "function",
            "function": {"name": b.name, "arguments": json.dumps(b.args, ensure_ascii=False)},
        }
        for b in turn
        if isinstance(b, Call)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    return completion(
        message,
        finish_reason="tool_calls" if calls else "stop",
        prompt_tokens=13,
        completion_tokens=5,
        response_id=f"chatcmpl-{index}",
    )


@function_tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return weather(city)


@function_tool
def convert(celsius: float) -> str:
    """Celsius to Fahrenheit."""
    return f"{celsius * 9 / 5 + 32:.1f} °F"


@function_tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order (a human approves each call first)."""
    return f"refunded {order}"


# --- what the SDK recorded ---------------------------------------------------------------


def _args(raw: str) -> Any:
    return json.loads(raw) if raw else {}


#: A run as the SDK keeps it: its result, or what a run that raised had done by then.
Record = RunResult | RunResultStreaming | RunErrorDetails


def view(result: Record) -> dict[str, Any]:
    """A run as the SDK recorded it: the fields an invocation must have."""
    outputs: dict[str, Any] = {}
    for item in result.new_items:
        if isinstance(item, (ToolCallOutputItem, HandoffOutputItem)):
            raw: Any = item.raw_item  # a function-call output: a TypedDict or a model
            fields = raw if isinstance(raw, dict) else vars(raw)
            outputs[str(fields.get("call_id"))] = fields.get("output")
    calls = []
    for response in result.raw_responses:
        for out in response.output:
            if isinstance(out, ResponseFunctionToolCall):
                value = outputs.get(out.call_id)
                with contextlib.suppress(ValueError):  # JSON text is read as its value
                    value = json.loads(value) if isinstance(value, str) else value
                calls.append(
                    {
                        "name": out.name,
                        "args": _args(out.arguments),
                        "id": out.call_id,
                        "result": value,
                    }
                )
    texts = [
        (item.agent.name, ItemHelpers.text_message_output(item))
        for item in result.new_items
        if isinstance(item, MessageOutputItem)
    ]
    last_output = result.raw_responses[-1].output if result.raw_responses else []
    final = None
    # The run ended on this reply: no call of the agent's own (a hosted tool's item, a
    # file search the API ran, is none).
    if texts and not any(isinstance(o, ResponseFunctionToolCall) for o in last_output):
        final = texts.pop()[1]
    first_input = result.input if isinstance(result.input, str) else None
    return {
        "user": first_input,
        "calls": calls,
        "intermediate": [list(t) for t in texts],
        "final": final,
    }


# --- scenarios ----------------------------------------------------------------------------

Scenario = Callable[[Model], Awaitable[list[dict[str, Any]]]]


async def _run(agent: Agent[Any], prompt: str | list[Any]) -> dict[str, Any]:
    result = await Runner.run(agent, prompt)
    return {"agents": _agents(result), **view(result)}


def _agents(result: Record) -> list[str]:
    names: list[str] = []
    for item in result.new_items:
        if item.agent.name not in names:
            names.append(item.agent.name)
    return names


def _weather(model: Model, **kwargs: Any) -> Agent[Any]:
    return Agent(
        name="weather",
        instructions="Answer weather questions.",
        tools=[get_weather, convert],
        model=model,
        **kwargs,
    )


SCRIPTS: dict[str, list[Turn]] = {
    "sequential_tools": [
        [Call("get_weather", {"city": "Paris"}, "c1")],
        [Call("convert", {"celsius": 21}, "c2")],
        ["Paris: sunny, 69.8 °F."],
    ],
    "parallel_calls": [
        [
            Call("get_weather", {"city": "Zürich"}, "p1"),
            Call("get_weather", {"city": "東京"}, "p2"),
        ],
        ["Both sunny."],
    ],
    "text_and_call": [
        ["Let me check.", Call("get_weather", {"city": "Oslo"}, "t1")],
        ["Oslo: sunny."],
    ],
    "tool_raises": [
        [Call("get_weather", {"city": "Atlantis"}, "e1")],
        ["Atlantis has no weather station."],
    ],
    "no_tools": [["Bonjour ! Ça va ? 👋"]],
    "two_turn_session": [
        [Call("get_weather", {"city": "Rome"}, "s1")],
        ["Rome is sunny."],
        ["You're welcome."],
    ],
    "handoff": [
        [Call("transfer_to_weather", {}, "h1")],
        [Call("get_weather", {"city": "Lima"}, "h2")],
        ["Lima is sunny."],
    ],
    "streamed": [
        ["Looking up Quito.", Call("get_weather", {"city": "Quito"}, "r1")],
        ["Quito: sunny, 21 °C."],
    ],
    "file_search": [
        [
            FileSearch("fs_1", ["weather in Lima"], ["Lima: sunny all year.", "Oslo: rain."]),
            "Lima is sunny all year, says the handbook.",
        ],
    ],
    "reasoning": [
        [
            Reasoning("rs_1", ["The user wants Lima's weather."]),
            Call("get_weather", {"city": "Lima"}, "w1"),
        ],
        [Reasoning("rs_2", ["It is sunny; say so."]), "Lima is sunny."],
    ],
    "structured_output": [
        [Call("get_weather", {"city": "Nice"}, "o1")],
        ['{"city":"Nice","sky":"sunny"}'],
    ],
    "stop_on_first_tool": [[Call("get_weather", {"city": "Lisbon"}, "f1")]],
    "model_fails": [[Call("get_weather", {"city": "Graz"}, "m1")]],  # then a 500
    "max_turns": [[Call("get_weather", {"city": "Linz"}, "x1")], ["Linz: sunny."]],
    "input_tripwire": [["4"]],
    "output_tripwire": [["Bergen: rain all day."]],
    "approval": [[Call("refund", {"order": "42"}, "r1")], ["Order 42 is refunded."]],
    "agent_as_tool": [
        [Call("ask_weather", {"input": "Weather in Kyiv?"}, "a1")],
        [Call("get_weather", {"city": "Kyiv"}, "a2")],
        ["Kyiv: sunny."],
        ["The weather agent says Kyiv is sunny."],
    ],
}


async def sequential_tools(model: Model) -> list[dict[str, Any]]:
    return [await _run(_weather(model), "Weather in Paris, in Fahrenheit?")]


async def parallel_calls(model: Model) -> list[dict[str, Any]]:
    return [await _run(_weather(model), "Wetter in Zürich und 東京?")]


async def text_and_call(model: Model) -> list[dict[str, Any]]:
    return [await _run(_weather(model), "Oslo?")]


async def tool_raises(model: Model) -> list[dict[str, Any]]:
    # The SDK's default failure handler gives the model an error message as the result.
    return [await _run(_weather(model), "Weather in Atlantis?")]


async def no_tools(model: Model) -> list[dict[str, Any]]:
    return [await _run(_weather(model), "Dis bonjour — en français.")]


async def streamed(model: Model) -> list[dict[str, Any]]:
    """``Runner.run_streamed``, as chat front ends run agents: the model calls stream."""
    # Usage only comes with a stream that asks for it (``stream_options.include_usage``).
    agent = _weather(model, model_settings=ModelSettings(include_usage=True))
    result = Runner.run_streamed(agent, "Quito?")
    async for _event in result.stream_events():
        pass
    return [{"agents": _agents(result), **view(result)}]


async def two_turn_session(model: Model) -> list[dict[str, Any]]:
    agent = _weather(model)
    with using_session("agents-session-1"):
        first = await Runner.run(agent, "Weather in Rome?")
        second = await Runner.run(
            agent, [*first.to_input_list(), {"role": "user", "content": "Thanks!"}]
        )
    return [
        {"agents": _agents(first), **view(first)},
        {"agents": _agents(second), **view(second), "user": "Thanks!"},
    ]


async def handoff(model: Model) -> list[dict[str, Any]]:
    weather = _weather(model)
    triage = Agent(name="triage", instructions="Route.", handoffs=[weather], model=model)
    return [await _run(triage, "Weather in Lima?")]


async def agent_as_tool(model: Model) -> list[dict[str, Any]]:
    inner: list[dict[str, Any]] = []

    async def keep(result: RunResult | RunResultStreaming) -> str:  # the nested run's own
        inner.append({"agents": _agents(result), **view(result)})
        return str(result.final_output)

    tool = _weather(model).as_tool(
        tool_name="ask_weather",
        tool_description="Ask the weather agent.",
        custom_output_extractor=keep,
    )
    boss = Agent(name="boss", instructions="Delegate.", tools=[tool], model=model)
    outer = await _run(boss, "How is Kyiv?")
    return [outer, *inner]  # the caller's run starts first


async def file_search(model: Model) -> list[dict[str, Any]]:
    """A ``FileSearchTool``: the API searches the files itself, inside the model call.

    The run also says what the search found (``retrieved``), from the SDK's response.
    """
    search = FileSearchTool(vector_store_ids=["vs_1"], include_search_results=True)
    agent = Agent(
        name="librarian", instructions="Answer from the files.", tools=[search], model=model
    )
    result = await Runner.run(agent, "Weather in Lima?")
    found = [
        r.text
        for response in result.raw_responses
        for out in response.output
        if isinstance(out, ResponseFileSearchToolCall)
        for r in out.results or ()
        if r.text is not None
    ]
    return [{"agents": _agents(result), **view(result), "retrieved": found}]


async def reasoning(model: Model) -> list[dict[str, Any]]:
    """A reasoning model asked for summaries: each reply starts with a reasoning item.

    The SDK's answer (``final_output``, its message items) leaves the reasoning out.
    """
    agent = Agent(
        name="thinker",
        instructions="Think, then answer.",
        tools=[get_weather],
        model=model,
        model_settings=ModelSettings(reasoning=ReasoningSettings(effort="low", summary="auto")),
    )
    result = await Runner.run(agent, "Is it sunny in Lima?")
    assert result.final_output == "Lima is sunny."
    return [{"agents": _agents(result), **view(result)}]


class Forecast(BaseModel):
    """The structured answer of the ``structured_output`` scenario."""

    city: str
    sky: str


async def structured_output(model: Model) -> list[dict[str, Any]]:
    """``output_type``: the SDK asks for JSON text and parses it; the text is the answer."""
    return [await _run(_weather(model, output_type=Forecast), "Forecast for Nice, as data?")]


async def stop_on_first_tool(model: Model) -> list[dict[str, Any]]:
    """``tool_use_behavior="stop_on_first_tool"``: the tool's result is the run's output.

    No span says so (``final_output`` is written nowhere), so the run has no final
    response, as its messages have none; ``final_output`` is kept for the test.
    """
    agent = _weather(model, tool_use_behavior="stop_on_first_tool")
    result = await Runner.run(agent, "Lisbon weather, raw?")
    return [{"agents": _agents(result), **view(result), "final_output": result.final_output}]


@input_guardrail
async def _refuse_sums(
    ctx: RunContextWrapper[Any], agent: Agent[Any], prompt: str | list[TResponseInputItem]
) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(output_info="a sum", tripwire_triggered=True)


@output_guardrail
async def _no_rain(
    ctx: RunContextWrapper[Any], agent: Agent[Any], output: Any
) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered="rain" in str(output))


async def _failing(agent: Agent[Any], prompt: str, **kwargs: Any) -> list[dict[str, Any]]:
    """A run that raises: what it had done by then (the SDK's ``run_data``, else the
    prompt only) and the exception's type as ``raised``."""
    try:
        await Runner.run(agent, prompt, **kwargs)
    except Exception as exc:  # the failure is the scenario
        data = exc.run_data if isinstance(exc, AgentsException) else None
        done = {"agents": _agents(data), **view(data)} if data is not None else {"user": prompt}
        return [{**done, "raised": type(exc).__name__}]
    raise AssertionError("the run was to fail")


async def model_fails(model: Model) -> list[dict[str, Any]]:
    """The second model call gets a 500: the run raises ``openai.InternalServerError``."""
    return await _failing(_weather(model), "Weather in Graz?")


async def max_turns(model: Model) -> list[dict[str, Any]]:
    """``max_turns=1``: the run raises ``MaxTurnsExceeded`` before its second model call."""
    return await _failing(_weather(model), "Weather in Linz?", max_turns=1)


async def input_tripwire(model: Model) -> list[dict[str, Any]]:
    """An input guardrail trips before the model answered (the run's only call is dropped)."""
    return await _failing(_weather(model, input_guardrails=[_refuse_sums]), "What is 2+2?")


async def output_tripwire(model: Model) -> list[dict[str, Any]]:
    """An output guardrail trips on the model's answer: the caller never gets it."""
    return await _failing(_weather(model, output_guardrails=[_no_rain]), "Bergen weather?")


async def approval(model: Model) -> list[dict[str, Any]]:
    """A tool with ``needs_approval``: the run stops with the call as an interruption; the
    run resumed from its state, the call approved, runs the tool and answers.

    The SDK's view of the resumed run is the whole turn (the user's text, the call and
    its result, the answer); the paused run's has the call and no result.
    """
    agent = Agent(name="billing", instructions="Refund orders.", tools=[refund], model=model)
    paused = await Runner.run(agent, "Refund order 42, please.")
    [pending] = paused.interruptions
    state = paused.to_state()
    state.approve(pending)
    resumed = await Runner.run(agent, state)
    return [
        {"agents": _agents(paused), **view(paused)},
        {"agents": _agents(resumed), **view(resumed)},
    ]


#: Scenarios of the Responses API only (its hosted tools, its reasoning items).
RESPONSES_ONLY: dict[str, Scenario] = {"file_search": file_search, "reasoning": reasoning}


def _by_name(*scenarios: Scenario) -> dict[str, Scenario]:
    return {f.__name__: f for f in scenarios}


SCENARIOS = _by_name(
    sequential_tools,
    parallel_calls,
    text_and_call,
    tool_raises,
    no_tools,
    two_turn_session,
    streamed,
    handoff,
    agent_as_tool,
    structured_output,
)
#: Runs that end without an answer of the model's: on a tool's result, or raising.
ENDINGS = _by_name(stop_on_first_tool, model_fails, max_turns, input_tripwire, output_tripwire)
#: Runs that pause for a human, and the runs that resume them.
PAUSES = _by_name(approval)


async def main(api: str, out_dir: Path) -> None:
    """Run every scenario with ``api``; write ``<scenario>.jsonl`` and ``expected.json``."""
    recorder = Recorder()
    if os.environ.get("TRACESCORE_HARNESS_INSTRUMENTATION") == "openllmetry":
        OpenLLMetryAgentsInstrumentor().instrument(tracer_provider=recorder.provider)
    else:
        OpenAIAgentsInstrumentor().instrument(
            tracer_provider=recorder.provider, exclusive_processor=True
        )
    render = _responses_body if api == "responses" else _chat_body
    expected = {}
    scenarios = {
        **SCENARIOS,
        **ENDINGS,
        **PAUSES,
        **(RESPONSES_ONLY if api == "responses" else {}),
    }
    for name, scenario in scenarios.items():
        bodies = [render(turn, i) for i, turn in enumerate(SCRIPTS[name])]
        with FakeOpenAI(bodies) as fake:
            client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="test", max_retries=0)
            model: Model = (
                OpenAIResponsesModel(model=MODEL, openai_client=client)
                if api == "responses"
                else OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
            )
            expected[name] = await scenario(model)
            await client.close()
        recorder.write(out_dir / f"{name}.jsonl")
    (out_dir / "expected.json").write_text(json.dumps(expected, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2])))
