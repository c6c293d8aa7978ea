"""Real Microsoft Agent Framework runs against the fake OpenAI server, as OTLP JSON Lines.

Agent Framework (``agent-framework-core``, the successor of AutoGen and Semantic Kernel)
traces with its own instrumentation: ``invoke_agent``, ``chat`` and ``execute_tool`` spans
(GenAI semconv), and a ``workflow.run`` span over a workflow's executors. What it records
of the content depends on its settings, read from the environment when the package is
imported (checked with agent-framework-core 1.23):

* ``ENABLE_SENSITIVE_DATA`` unset: no content at all (no messages, no tool arguments or
  results);
* ``ENABLE_SENSITIVE_DATA=true``: semconv >= 1.37 ``gen_ai.input.messages`` /
  ``gen_ai.output.messages`` on the model and agent spans, ``gen_ai.tool.call.arguments``
  / ``result`` on tool spans, and also the 1.36 per-message log records
  (``gen_ai.user.message``, ``gen_ai.choice``...) unless ``ENABLE_MESSAGE_EVENTS=false``;
* ``OTEL_SEMCONV_STABILITY_OPT_IN=""`` (its default is ``gen_ai_latest_experimental``):
  the 1.36 baseline, where the content is in those log records only.

The model is Agent Framework's ``OpenAIChatCompletionClient`` on the real ``openai``
client against :class:`fake_openai.FakeOpenAI`. The instrumentation uses the global
tracer and logger providers, so the runs happen in a child process:
``python maf_harness.py OUT_DIR`` with the mode in the environment writes one OTLP JSON
Lines file per scenario and ``expected.json``: each run as Agent Framework returned it
(the user's text, the tool calls with their results and whether they raised, the texts
before the answer, the answer), which the rebuilt invocations must equal. A workflow's
run is its agents' runs one after another, as one invocation of the task.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import openai
from agent_framework import (
    Agent,
    AgentContext,
    AgentResponse,
    MCPStreamableHTTPTool,
    Message,
    ResponseStream,
    agent_middleware,
    tool,
)
from agent_framework.exceptions import ChatClientException
from agent_framework.openai import OpenAIChatClient, OpenAIChatCompletionClient
from agent_framework.orchestrations import HandoffBuilder, SequentialBuilder
from opentelemetry import _logs, trace

import mcp_server
from fake_openai import FakeOpenAI, scripted_reply, scripted_response
from recording import Recorder, record_scenarios, weather

#: Content modes: the environment of each run.
MODES: dict[str, dict[str, str]] = {
    "latest": {"ENABLE_SENSITIVE_DATA": "true"},
    "latest_no_events": {"ENABLE_SENSITIVE_DATA": "true", "ENABLE_MESSAGE_EVENTS": "false"},
    "baseline": {"ENABLE_SENSITIVE_DATA": "true", "OTEL_SEMCONV_STABILITY_OPT_IN": ""},
    "off": {"ENABLE_SENSITIVE_DATA": "false"},
}
#: The OpenAI API the agents' client speaks (``TRACESCORE_HARNESS_MAF_API``): Chat
#: Completions (``OpenAIChatCompletionClient``, the default here) or the Responses API
#: (``OpenAIChatClient``, Agent Framework's default OpenAI client).
APIS = ("chat", "responses")
API = os.environ.get("TRACESCORE_HARNESS_MAF_API", "chat")
#: Input tokens the fake model reports per call.
INPUT_TOKENS = 17

#: A tool call the scripted model makes: (name, arguments, call id).
Call = tuple[str, dict[str, Any], str]


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return weather(city)


def _script(*turns: tuple[str | None, Sequence[Call]]) -> list[dict[str, Any]]:
    if API == "responses":
        return [
            scripted_response(i, [*([text] if text else []), *calls], input_tokens=INPUT_TOKENS)
            for i, (text, calls) in enumerate(turns)
        ]
    return [
        scripted_reply(i, text, calls, prompt_tokens=INPUT_TOKENS)
        for i, (text, calls) in enumerate(turns)
    ]


# --- what Agent Framework returned ------------------------------------------------------


#: Each agent run as the recording middleware saw it: agent, user text, response.
RUNS: list[tuple[str, str | None, AgentResponse]] = []


@agent_middleware
async def record_run(context: AgentContext, call_next: Callable[[], Awaitable[None]]) -> None:
    """Keep each run's input and its response (a streamed one once built), as runs end."""
    await call_next()
    agent, user = context.agent.name or "", _user_text(context.messages)

    def keep(response: AgentResponse) -> AgentResponse:
        RUNS.append((agent, user, response))
        return response

    if isinstance(context.result, AgentResponse):
        keep(context.result)
    elif isinstance(context.result, ResponseStream):  # run(stream=True), and as_tool's runs
        context.result = context.result.with_result_transform(keep)


def _user_text(messages: Sequence[Message]) -> str | None:
    users = [m for m in messages if m.role == "user"]
    return users[-1].text if users else None


def view(agents: list[str], user: str | None, messages: Sequence[Message]) -> dict[str, Any]:
    """One run's response messages as the fields an invocation must have."""
    results = {c.call_id: c for m in messages for c in m.contents if c.type == "function_result"}
    replies = [m for m in messages if m.role == "assistant"]
    calls = []
    for m in replies:
        for c in m.contents:
            if c.type == "function_call":
                result = results.get(c.call_id)
                calls.append(
                    {
                        "name": c.name,
                        "args": c.parse_arguments(),
                        "id": c.call_id,
                        "result": None if result is None else _value(result.result),
                        "failed": result is not None and result.exception is not None,
                    }
                )
    texts = [
        (m.text, any(c.type == "function_call" for c in m.contents)) for m in replies if m.text
    ]
    final = texts[-1][0] if texts and not texts[-1][1] else None
    return {
        "agents": agents,
        "user": user,
        "calls": calls,
        "intermediate": [t for t, _ in (texts[:-1] if final is not None else texts)],
        "final": final,
    }


def _value(result: Any) -> Any:
    """A tool's result as tracescore reads it: JSON text (an MCP tool's) parsed."""
    if isinstance(result, str) and result.startswith(("{", "[")):
        try:
            return json.loads(result)
        except ValueError:
            return result
    return result


def _merged(workflow: str, views: Sequence[dict[str, Any]], user: str) -> dict[str, Any]:
    """A workflow's agent runs, one after another, as one invocation of its task."""
    texts = [t for v in views for t in [*v["intermediate"], v["final"]] if t]
    return {
        "agents": [workflow, *(a for v in views for a in v["agents"])],
        "user": user,
        "calls": [c for v in views for c in v["calls"]],
        "intermediate": texts[:-1],
        "final": texts[-1] if texts else None,
    }


# --- scenarios -----------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def _served(script: list[dict[str, Any]]) -> AsyncIterator[openai.AsyncOpenAI]:
    """An OpenAI client on a fake server that answers with ``script``, closed on the way out."""
    with FakeOpenAI(script) as fake:
        client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="test", max_retries=0)
        try:
            yield client
        finally:
            await client.close()


def _agent(client: openai.AsyncOpenAI, name: str, **kwargs: Any) -> Agent:
    chat_client = (
        OpenAIChatClient(model="gpt-4o", async_client=client)
        if API == "responses"
        else OpenAIChatCompletionClient(model="gpt-4o", async_client=client)
    )
    return Agent(
        client=chat_client,
        name=name,
        instructions=f"You are {name}.",
        middleware=[record_run],
        **kwargs,
    )


def _recorded_after(run: Callable[[], Coroutine[Any, Any, None]]) -> list[dict[str, Any]]:
    """Run ``run`` in a fresh event loop; the agent runs it made, in the order they ended."""
    RUNS.clear()
    asyncio.run(run())
    runs = [view([agent], user, response.messages) for agent, user, response in RUNS]
    RUNS.clear()
    return runs


def _one_run(
    script: list[dict[str, Any]], prompt: str, *, stream: bool = False
) -> list[dict[str, Any]]:
    async def run() -> None:
        async with _served(script) as client:
            agent = _agent(client, "weather_agent", tools=[get_weather])
            if not stream:
                await agent.run(prompt)
                return
            updates = agent.run(prompt, stream=True)
            async for _ in updates:
                pass
            await updates.get_final_response()

    return _recorded_after(run)


def parallel_calls_one_raises() -> list[dict[str, Any]]:
    """Text and two calls in one reply; the second tool raises; then the answer."""
    calls: list[Call] = [
        ("get_weather", {"city": "Paris"}, "call_p"),
        ("get_weather", {"city": "Atlantis"}, "call_a"),
    ]
    script = _script(("Let me check both.", calls), ("Paris: sunny. Atlantis: unknown.", ()))
    return _one_run(script, "Weather in Paris and Atlantis?")


def sequential_calls() -> list[dict[str, Any]]:
    script = _script(
        (None, [("get_weather", {"city": "Oslo"}, "call_1")]),
        (None, [("get_weather", {"city": "Bergen"}, "call_2")]),
        ("Oslo and Bergen are sunny.", ()),
    )
    return _one_run(script, "Oslo, then Bergen?")


def unknown_function() -> list[dict[str, Any]]:
    """The model calls a function the agent does not have: Agent Framework runs nothing
    (no tool span) and answers 'Error: Requested function "get_wether" not found.', a
    result with an exception, which the telemetry leaves out but for those words."""
    script = _script(
        (None, [("get_wether", {"city": "Oslo"}, "call_u")]),
        (None, [("get_weather", {"city": "Oslo"}, "call_v")]),
        ("Oslo is sunny.", ()),
    )
    return _one_run(script, "Oslo?")


def bad_arguments() -> list[dict[str, Any]]:
    """Arguments the function's schema refuses: Agent Framework runs nothing (no tool
    span) and answers "Error: Argument parsing failed.", a result with an exception; the
    model calls again, right, and that call alone has a span."""
    script = _script(
        (None, [("get_weather", {"town": "Oslo"}, "call_b")]),
        (None, [("get_weather", {"city": "Oslo"}, "call_c")]),
        ("Oslo is sunny.", ()),
    )
    return _one_run(script, "Oslo?")


def no_tools_non_ascii() -> list[dict[str, Any]]:
    return _one_run(_script(("東京は晴れです。Ça va très bien.", ())), "東京の天気は？")


def streamed() -> list[dict[str, Any]]:
    """``run(stream=True)``: every model call streamed; the response built from updates."""
    script = _script(
        ("Checking.", [("get_weather", {"city": "Lima"}, "call_l")]), ("Lima: sunny.", ())
    )
    return _one_run(script, "Weather in Lima?", stream=True)


def three_turns() -> list[dict[str, Any]]:
    """One session of three turns, the first and last with one model call each.

    On Chat Completions every request carries the turns before (each turn's user is the
    new text); on the Responses API each names the response it continues instead.
    """
    script = _script(
        ("Hello! Ask me about the weather.", ()),
        (None, [("get_weather", {"city": "Rome"}, "call_r")]),
        ("Rome is sunny.", ()),
        ("You asked about Rome.", ()),
    )

    async def run() -> None:
        async with _served(script) as client:
            agent = _agent(client, "weather_agent", tools=[get_weather])
            session = agent.create_session()
            for prompt in ("Hi", "Weather in Rome?", "What did I ask?"):
                await agent.run(prompt, session=session)

    return _recorded_after(run)


def agent_as_tool() -> list[dict[str, Any]]:
    """An agent calls another through ``as_tool`` (run streamed): a run of its own."""
    script = _script(
        (None, [("forecaster", {"task": "Forecast for Nice"}, "call_f")]),
        (None, [("get_weather", {"city": "Nice"}, "call_n")]),
        ("Nice: sunny.", ()),
        ("The forecaster says Nice is sunny.", ()),
    )

    async def run() -> None:
        async with _served(script) as client:
            inner = _agent(client, "forecaster", description="Forecasts.", tools=[get_weather])
            await _agent(client, "boss", tools=[inner.as_tool()]).run("Weather in Nice?")

    inner, outer = _recorded_after(run)  # the called run ends first
    return [outer, inner]


def sequential_workflow() -> list[dict[str, Any]]:
    """``SequentialBuilder``: one agent answers with a tool, the next summarises."""
    prompt = "Weather in Porto?"
    script = _script(
        (None, [("get_weather", {"city": "Porto"}, "call_o")]),
        ("Porto is sunny.", ()),
        ("In short: sunny.", ()),
    )

    async def run() -> None:
        async with _served(script) as client:
            first = _agent(client, "weather_agent", tools=[get_weather])
            second = _agent(client, "summarizer")
            await SequentialBuilder(participants=[first, second]).build().run(prompt)

    return [_merged("Sequential", _recorded_after(run), prompt)]


def handoff_workflow() -> list[dict[str, Any]]:
    """``HandoffBuilder``: triage hands off to a forecaster, which answers with a tool.

    The framework answers the handoff call itself: no tool span, and the next request
    leaves it out; the triage agent's span lists its result.
    """
    prompt = "Weather in Oslo?"
    script = _script(
        (None, [("handoff_to_forecaster", {}, "call_h")]),
        (None, [("get_weather", {"city": "Oslo"}, "call_w")]),
        ("Oslo is sunny.", ()),
    )

    async def run() -> None:
        async with _served(script) as client:
            # Handoff participants must keep the service's history per call.
            keep = {"require_per_service_call_history_persistence": True}
            triage = _agent(client, "triage", **keep)
            forecaster = _agent(client, "forecaster", tools=[get_weather], **keep)
            workflow = HandoffBuilder(participants=[triage, forecaster])
            await workflow.with_start_agent(triage).build().run(prompt)

    return [_merged("Handoff", _recorded_after(run), prompt)]


def mcp_tools() -> list[dict[str, Any]]:
    """Tools served over MCP (``MCPStreamableHTTPTool``) by the local server; one raises.

    The ``mcp`` SDK traces both sides of each call under Agent Framework's tool span.
    """
    script = _script(
        (
            None,
            [
                ("forecast", {"city": "Paris", "days": 2}, "call_m1"),
                ("forecast", {"city": "Atlantis", "days": 1}, "call_m2"),
            ],
        ),
        ("Paris: sunny. Atlantis: no station.", ()),
    )

    async def run() -> None:
        async with (
            _served(script) as client,
            MCPStreamableHTTPTool(name="forecasts", url=mcp_server.url()) as forecasts,
        ):
            await _agent(client, "weather_agent", tools=[forecasts]).run("Paris and Atlantis?")

    return _recorded_after(run)


def model_fails() -> list[dict[str, Any]]:
    """The model endpoint answers 500 (the fake's script is empty): the run raises."""

    async def run() -> None:
        async with _served([]) as client:
            try:
                await _agent(client, "weather_agent").run("Weather in Quito?")
            except ChatClientException:
                return
            raise AssertionError("the run should have failed")

    assert _recorded_after(run) == []  # no response to record
    return [view(["weather_agent"], "Weather in Quito?", [])]


def thinking() -> list[dict[str, Any]]:
    """A reasoning model's replies, each with its reasoning (the Responses API's reasoning
    item with its summary; Chat Completions' ``reasoning_content``, DeepSeek's way) before
    a call and before the answer. Agent Framework keeps it as ``text_reasoning`` content,
    apart from the answer's text."""
    script = _script((None, [("get_weather", {"city": "Lima"}, "call_k")]), ("Lima: sunny.", ()))
    for body, thought in zip(script, ["They want Lima.", "Sunny; say so."], strict=True):
        if API == "responses":
            summary = [{"type": "summary_text", "text": thought}]
            item = {"type": "reasoning", "id": f"rs_{thought[:4]}", "summary": summary}
            body["output"].insert(0, item)
        else:
            body["choices"][0]["message"]["reasoning_content"] = thought
    return _one_run(script, "Lima, sunny today or not?")


@tool(approval_mode="always_require")
def refund(order_id: int) -> str:
    """Refund an order, once a human approves."""
    return f"refunded {order_id}"


def approval() -> list[dict[str, Any]]:
    """A tool that needs approval: the run ends with the request; the user's approval,
    in the same session, runs the tool, and the model answers. Agent Framework returns
    two responses, the turn split between them: as one run, they are the turn."""
    script = _script(
        (None, [("refund", {"order_id": 4}, "call_refund")]), ("Order 4 is refunded.", ())
    )
    prompt = "Refund order 4?"

    async def run() -> None:
        async with _served(script) as client:
            agent = _agent(client, "refunder", tools=[refund])
            session = agent.create_session()
            paused = await agent.run(prompt, session=session)
            [request] = paused.user_input_requests
            answer = Message("user", [request.to_function_approval_response(True)])
            await agent.run([answer], session=session)

    RUNS.clear()
    asyncio.run(run())
    (_, _, paused), (_, _, resumed) = RUNS
    RUNS.clear()
    return [view(["refunder"], prompt, [*paused.messages, *resumed.messages])]


SCENARIOS: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "thinking": thinking,
    "parallel_calls_one_raises": parallel_calls_one_raises,
    "sequential_calls": sequential_calls,
    "unknown_function": unknown_function,
    "bad_arguments": bad_arguments,
    "no_tools_non_ascii": no_tools_non_ascii,
    "three_turns": three_turns,
    "streamed": streamed,
    "agent_as_tool": agent_as_tool,
    "sequential_workflow": sequential_workflow,
    "handoff_workflow": handoff_workflow,
    "mcp_tools": mcp_tools,
    "model_fails": model_fails,
}
#: Runs that pause for a human, then resume: two runs each, one turn.
PAUSING: dict[str, Callable[[], list[dict[str, Any]]]] = {"approval": approval}


if __name__ == "__main__":
    assert os.environ.get("ENABLE_SENSITIVE_DATA") is not None, "run with a mode's environment"
    assert API in APIS, API
    out_dir = Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    # Agent Framework traces and logs through the global providers (looked up when used:
    # set here, in the child process, never when the tests import this module).
    recorder = Recorder()
    trace.set_tracer_provider(recorder.provider)
    _logs.set_logger_provider(recorder.logger_provider)
    record_scenarios(recorder, {**SCENARIOS, **PAUSING}, out_dir)
