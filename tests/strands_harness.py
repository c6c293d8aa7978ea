"""Real Strands Agents runs with a scripted model, recorded as OTLP JSON Lines.

Strands (``strands-agents``) traces with its own tracer: ``invoke_agent``,
``execute_event_loop_cycle``, ``chat`` and ``execute_tool`` spans, plus ``invoke_swarm``
/ ``invoke_graph`` for its multi-agent patterns. Where the content goes depends on
``OTEL_SEMCONV_STABILITY_OPT_IN``, read once when its process-wide tracer is made:

* unset: semconv 1.28-1.36 per-message span events (``gen_ai.user.message``,
  ``gen_ai.choice``...) whose ``content``/``message`` is a JSON string of Bedrock
  Converse content blocks;
* ``gen_ai_latest_experimental``: ``gen_ai.client.inference.operation.details`` span
  events with ≥ 1.37 message lists, and ``gen_ai.tool.call.arguments|result`` attributes
  on tool spans;
* ``gen_ai_latest_experimental,gen_ai_span_attributes_only``: the same lists as span
  attributes (what Strands does for Langfuse).

With ``openinference-instrumentation-strands-agents``' span processor (Arize Phoenix's
way), the legacy and latest spans are rewritten before export: OpenInference kinds and
``llm.*`` / ``input.value`` / ``output.value`` attributes, the content events dropped,
``graph.node.id`` "strands_agent" on every agent span, and CHAIN for a swarm or graph.

Strands also instruments ``threading`` process-wide, so the runs happen in a child
process: ``python strands_harness.py OUT_DIR`` with the mode in the environment writes one
OTLP JSON Lines file per scenario (the real SDK's spans through the real OTLP encoder)
and ``expected.json``: for each scenario, the invocations as Strands itself recorded them
in its agents' ``messages`` (user prompt, tool calls with their results, texts, final
answer), which is what the rebuilt invocations must equal.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import AsyncGenerator, AsyncIterable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from openinference.instrumentation.strands_agents import StrandsAgentsToOpenInferenceProcessor
from opentelemetry import trace
from pydantic import BaseModel
from strands import Agent, ModelRetryStrategy, tool
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
from strands.models.model import Model
from strands.multiagent import GraphBuilder, Swarm
from strands.tools.mcp import MCPClient
from strands.tools.mcp._compat import streamable_http_transport
from strands.types.content import Messages
from strands.types.exceptions import ModelThrottledException
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolContext, ToolSpec

import mcp_server
from recording import Recorder, record_scenarios

#: Content modes: the environment of each run (``TRACESCORE_HARNESS_OPENINFERENCE`` adds
#: OpenInference's span processor for Strands, which rewrites the same spans).
MODES: dict[str, dict[str, str]] = {
    "legacy": {"OTEL_SEMCONV_STABILITY_OPT_IN": ""},
    "latest": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"},
    "latest_attributes": {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental,gen_ai_span_attributes_only"
    },
    "openinference_legacy": {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "",
        "TRACESCORE_HARNESS_OPENINFERENCE": "1",
    },
    "openinference_latest": {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "TRACESCORE_HARNESS_OPENINFERENCE": "1",
    },
}

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class Call:
    """A tool call the scripted model makes."""

    name: str
    args: dict[str, Any]
    id: str


@dataclass(frozen=True)
class Thought:
    """A thinking model's reasoning, streamed before the rest of its turn."""

    text: str


Block = str | Call | Thought
#: One model turn: content blocks to stream, or an exception to raise instead.
Turn = Sequence[Block] | Exception


class ScriptedModel(Model):
    """A Strands model that streams scripted turns (text and tool-use blocks) in order."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self.turns = list(turns)
        self.config: dict[str, Any] = {"model_id": "scripted-1"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return self.config

    def structured_output(
        self,
        output_model: type[T],
        prompt: Messages,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        raise NotImplementedError("not scripted")

    async def stream(  # the keyword-only extras (tool_choice...) arrive in **kwargs
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncIterable[StreamEvent]:
        if not self.turns:
            raise RuntimeError("script exhausted")
        turn = self.turns.pop(0)
        if isinstance(turn, Exception):
            raise turn
        yield {"messageStart": {"role": "assistant"}}
        stop = "end_turn"
        for block in turn:
            if isinstance(block, str):
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": block}}}
            elif isinstance(block, Thought):
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"reasoningContent": {"text": block.text}}}}
            else:
                stop = "tool_use"
                start = {"toolUse": {"name": block.name, "toolUseId": block.id}}
                yield {"contentBlockStart": {"start": start}}  # type: ignore[typeddict-item]
                yield {
                    "contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(block.args)}}}
                }
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": stop}}  # type: ignore[typeddict-item]
        yield {
            "metadata": {
                "usage": {"inputTokens": 11, "outputTokens": 7, "totalTokens": 18},
                "metrics": {"latencyMs": 1},
            }
        }


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}, 21 °C"


@tool
def lookup_order(order_id: int) -> dict[str, Any]:
    """An order's status."""
    if order_id < 0:
        raise ConnectionError(f"order database unreachable while reading order {order_id}")
    return {"order_id": order_id, "status": "shipped", "items": [1, 2]}


def _agent(name: str, turns: Sequence[Turn], **kwargs: Any) -> Agent:
    return Agent(
        model=ScriptedModel(turns),
        tools=[get_weather, lookup_order],
        name=name,
        callback_handler=None,
        system_prompt=f"You are {name}.",
        **kwargs,
    )


# --- what Strands recorded -------------------------------------------------------------


def _texts(message: Any) -> str | None:
    texts = [block["text"] for block in message["content"] if "text" in block]
    return "".join(texts) if texts else None


def _result_value(result: Any) -> Any:
    content = result.get("content") or []
    if len(content) == 1 and set(content[0]) == {"text"}:
        return content[0]["text"]
    if len(content) == 1 and set(content[0]) == {"json"}:
        return content[0]["json"]
    return content


def view(messages: Sequence[Any], *, user: str | None = None) -> dict[str, Any]:
    """One run's new messages (Strands' record) as the fields an invocation must have.

    ``user`` overrides the prompt (multi-agent nodes see rewritten prompts; the run's user
    message is the task).
    """
    replies = [m for m in messages if m["role"] == "assistant"]
    results: dict[str, Any] = {}
    for m in messages:
        for block in m["content"]:
            if "toolResult" in block:
                results[block["toolResult"]["toolUseId"]] = block["toolResult"]
    calls = []
    for m in replies:
        for block in m["content"]:
            if "toolUse" in block:
                use = block["toolUse"]
                res = results.get(use["toolUseId"])
                calls.append(
                    {
                        "name": use["name"],
                        "args": use["input"],
                        "id": use["toolUseId"],
                        "result": _result_value(res) if res else None,
                        "failed": res is not None and res.get("status") == "error",
                    }
                )
    final_index = None
    for i in range(len(replies) - 1, -1, -1):
        if not any("toolUse" in b for b in replies[i]["content"]) and _texts(replies[i]):
            final_index = i
            break
    first_user = next(m for m in messages if m["role"] == "user")
    return {
        "user": user if user is not None else _texts(first_user),
        "calls": calls,
        "intermediate": [
            text for i, m in enumerate(replies) if i != final_index and (text := _texts(m))
        ],
        "final": _texts(replies[final_index]) if final_index is not None else None,
    }


def _merged(views: Sequence[dict[str, Any]], user: str) -> dict[str, Any]:
    """Node runs of a multi-agent run, one after another, as one invocation."""
    texts = [t for v in views for t in [*v["intermediate"], v["final"]] if t]
    return {
        "user": user,
        "calls": [c for v in views for c in v["calls"]],
        "intermediate": texts[:-1],
        "final": texts[-1] if texts else None,
    }


def _turns(agent: Agent, prompts: Sequence[str]) -> list[dict[str, Any]]:
    out = []
    for prompt in prompts:
        before = len(agent.messages)
        agent(prompt)
        out.append({"agents": [agent.name], **view(agent.messages[before:])})
    return out


# --- scenarios --------------------------------------------------------------------------


def sequential_tools() -> list[dict[str, Any]]:
    agent = _agent(
        "weather_agent",
        [
            [Call("get_weather", {"city": "Paris"}, "c1")],
            [Call("lookup_order", {"order_id": 7}, "c2")],
            ["Paris is sunny and order 7 has shipped."],
        ],
    )
    return _turns(agent, ["Weather in Paris, and where is order 7?"])


def parallel_calls() -> list[dict[str, Any]]:
    agent = _agent(
        "weather_agent",
        [
            [
                Call("get_weather", {"city": "Zürich"}, "p1"),
                Call("get_weather", {"city": "東京"}, "p2"),
            ],
            ["Both sunny."],
        ],
    )
    return _turns(agent, ["Wetter in Zürich und 東京?"])


def text_and_call() -> list[dict[str, Any]]:
    agent = _agent(
        "weather_agent",
        [["Let me check.", Call("get_weather", {"city": "Oslo"}, "t1")], ["Oslo: sunny."]],
    )
    return _turns(agent, ["Oslo?"])


def thinking() -> list[dict[str, Any]]:
    """Reasoning content before a call and before the answer (a thinking model's turns).

    Strands' answer (its messages' text blocks, ``str(result)``) leaves it out.
    """
    agent = _agent(
        "weather_agent",
        [
            [Thought("They want Lima; look it up."), Call("get_weather", {"city": "Lima"}, "r1")],
            [Thought("Sunny; say so."), "Lima: sunny."],
        ],
    )
    return _turns(agent, ["Is Lima sunny today?"])


def tool_raises() -> list[dict[str, Any]]:
    # Strands hands the exception to the model as an error result and goes on.
    agent = _agent(
        "order_agent",
        [[Call("lookup_order", {"order_id": -1}, "e1")], ["The order database is down."]],
    )
    return _turns(agent, ["Where is order -1?"])


def mcp_tools() -> list[dict[str, Any]]:
    """Two calls of a tool served over MCP (``mcp_server``); the server fails the second.

    Strands' ``execute_tool`` span holds the MCP SDK's client and server spans of each.
    """
    client = MCPClient(lambda: streamable_http_transport(mcp_server.url()))
    with client:
        agent = Agent(
            model=ScriptedModel(
                [
                    [
                        Call("forecast", {"city": "Lisbon", "days": 2}, "m1"),
                        Call("forecast", {"city": "Atlantis", "days": 1}, "m2"),
                    ],
                    ["Lisbon: sunny in two days. Atlantis has no forecast."],
                ]
            ),
            tools=client.list_tools_sync(),
            name="forecast_agent",
            callback_handler=None,
            system_prompt="You are forecast_agent.",
        )
        return _turns(agent, ["Forecasts for Lisbon in 2 days and Atlantis tomorrow?"])


def no_tools() -> list[dict[str, Any]]:
    return _turns(_agent("plain", [["Hello! Ça va ? 👋"]]), ["Say hello — en français."])


def two_turn_session() -> list[dict[str, Any]]:
    agent = _agent(
        "weather_agent",
        [[Call("get_weather", {"city": "Rome"}, "s1")], ["Rome is sunny."], ["You're welcome."]],
        trace_attributes={"session.id": "strands-session-1", "user.id": "u-1"},
    )
    return _turns(agent, ["Weather in Rome?", "Thanks!"])


def agent_as_tool() -> list[dict[str, Any]]:
    researcher = _agent("researcher", [["The answer is 42."]])
    recorded: list[dict[str, Any]] = []

    @tool
    def research(question: str) -> str:
        """Ask the researcher agent."""
        before = len(researcher.messages)
        answer = str(researcher(question)).strip()
        recorded.append({"agents": ["researcher"], **view(researcher.messages[before:])})
        return answer

    boss = Agent(
        model=ScriptedModel(
            [[Call("research", {"question": "meaning of life?"}, "r1")], ["It is 42."]]
        ),
        tools=[research],
        name="boss",
        callback_handler=None,
    )
    outer = _turns(boss, ["What is the meaning of life?"])
    return outer + recorded  # the caller's run starts first


def swarm() -> list[dict[str, Any]]:
    triage = _agent(
        "triage",
        [
            [
                "Handing this to billing.",
                Call("handoff_to_agent", {"agent_name": "billing", "message": "refund"}, "h1"),
            ],
            ["Billing has it."],
        ],
    )
    billing = _agent(
        "billing", [[Call("lookup_order", {"order_id": 9}, "b1")], ["Refund issued for 9."]]
    )
    task = "I want a refund for order 9."
    result = Swarm([triage, billing])(task)
    agents = [node.node_id for node in result.node_history]
    views = [view({"triage": triage, "billing": billing}[a].messages) for a in agents]
    return [{"agents": agents, **_merged(views, task)}]


def graph() -> list[dict[str, Any]]:
    first = _agent("drafter", [["A first draft."]])
    second = _agent("editor", [[Call("get_weather", {"city": "Lyon"}, "g1")], ["Final text."]])
    builder = GraphBuilder()
    builder.add_node(first, "drafter")
    builder.add_node(second, "editor")
    builder.add_edge("drafter", "editor")
    builder.set_entry_point("drafter")
    builder.set_execution_timeout(60.0)
    task = "Write a note about Lyon."
    result = builder.build()(task)
    agents = [node.node_id for node in result.execution_order]
    views = [view({"drafter": first, "editor": second}[a].messages) for a in agents]
    return [{"agents": agents, **_merged(views, task)}]


def model_error() -> list[dict[str, Any]]:
    agent = _agent("fragile", [RuntimeError("model endpoint down")])
    try:
        agent("Anyone there?")
    except Exception as exc:  # the run fails: the invocation must say so
        return [
            {
                "agents": ["fragile"],
                "user": "Anyone there?",
                "calls": [],
                "intermediate": [],
                "final": None,
                "error": str(exc),  # the root span's status message
                "failed_model_calls": 1,
            }
        ]
    raise AssertionError("the scripted model error did not reach the caller")


def model_retried() -> list[dict[str, Any]]:
    # A throttled model call (its span ends in error) after a tool call; the retry answers.
    agent = _agent(
        "patient",
        [
            [Call("get_weather", {"city": "Bergen"}, "w1")],
            ModelThrottledException("slow down"),
            ["Bergen: sunny, answered on the second try."],
        ],
        retry_strategy=ModelRetryStrategy(max_attempts=2, initial_delay=0, max_delay=0),
    )
    return [{**run, "failed_model_calls": 1} for run in _turns(agent, ["Ping?"])]


class Forecast(BaseModel):
    """A city's weather, as data."""

    city: str
    sky: str


def _structured(turns: Sequence[Turn], prompt: str) -> list[dict[str, Any]]:
    """A run asked for a ``Forecast`` (``structured_output_model``), as Strands kept it."""
    agent = _agent("weather_agent", turns)
    before = len(agent.messages)
    result = agent(prompt, structured_output_model=Forecast)
    assert isinstance(result.structured_output, Forecast)
    recorded = view(agent.messages[before:])
    return [{"agents": [agent.name], **recorded, "final": str(result), "final_is_json": True}]


def structured_output() -> list[dict[str, Any]]:
    """``structured_output_model``: the model answers by calling the output model's tool.

    No reply has text; the caller gets the structured output, whose JSON (``str(result)``)
    the run span states.
    """
    turns = [
        [Call("get_weather", {"city": "Paris"}, "o1")],
        [Call("Forecast", {"city": "Paris", "sky": "sunny"}, "o2")],
    ]
    return _structured(turns, "Paris, as data?")


def structured_retry() -> list[dict[str, Any]]:
    """The output model's tool called with arguments that do not validate: Strands
    answers with the validation error and the model calls it again."""
    turns = [
        [Call("Forecast", {"city": "Paris"}, "r1")],
        [Call("Forecast", {"city": "Paris", "sky": "sunny"}, "r2")],
    ]
    return _structured(turns, "Paris as data, please?")


def _stopped(agent: Agent, prompt: str, **kwargs: Any) -> list[dict[str, Any]]:
    before = len(agent.messages)
    result = agent(prompt, **kwargs)
    assert str(result) == ""  # Strands returns normally, with no answer
    return [{"agents": [agent.name], **view(agent.messages[before:]), "stop": result.stop_reason}]


def limit_turns() -> list[dict[str, Any]]:
    """``limits={"turns": 1}``: Strands stops the run after the first cycle's tools ran."""
    agent = _agent(
        "weather_agent",
        [[Call("get_weather", {"city": "Oslo"}, "l1")], ["Oslo: sunny (never said)."]],
    )
    return _stopped(agent, "Weather in Oslo?", limits={"turns": 1})


def cancelled() -> list[dict[str, Any]]:
    """A ``cancel_signal`` set while a tool runs: Strands stops before the next model call."""
    signal = threading.Event()

    @tool
    def slow_lookup(order_id: int) -> str:
        """An order's status, slowly; the caller gives up meanwhile."""
        signal.set()
        return f"order {order_id}: shipped"

    agent = Agent(
        model=ScriptedModel([[Call("slow_lookup", {"order_id": 3}, "k1")], ["Never said."]]),
        tools=[slow_lookup],
        name="order_agent",
        callback_handler=None,
    )
    return _stopped(agent, "Where is order 3?", cancel_signal=signal)


class _Approval(HookProvider):
    """Asks a human before ``lookup_order`` runs (an interrupt from a hook)."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.approve)

    def approve(self, event: BeforeToolCallEvent) -> None:
        if event.tool_use["name"] != "lookup_order":
            return
        if event.interrupt("approve_lookup", reason="APPROVAL") != "yes":
            event.cancel_tool = "not approved"


@tool(context=True)
def refund(order_id: int, tool_context: ToolContext) -> str:
    """Refund an order, once a human approves (an interrupt from the tool)."""
    answer = tool_context.interrupt("approve_refund", reason={"order_id": order_id})
    return f"refunded {order_id}" if answer == "yes" else "refund refused"


def _resumed(agent: Agent, prompt: str) -> list[dict[str, Any]]:
    """The run that stopped for a human, then the run the answer resumed: Strands' record
    of both is the turn."""
    before = len(agent.messages)
    result = agent(prompt)
    assert result.stop_reason == "interrupt"
    responses: Any = [
        {"interruptResponse": {"interruptId": i.id, "response": "yes"}}
        for i in result.interrupts or ()
    ]
    assert agent(responses).stop_reason == "end_turn"
    return [{"agents": [agent.name], **view(agent.messages[before:])}]


def hook_interrupt() -> list[dict[str, Any]]:
    agent = _agent(
        "order_agent",
        [[Call("lookup_order", {"order_id": 7}, "i1")], ["Order 7 has shipped."]],
        hooks=[_Approval()],
        trace_attributes={"session.id": "strands-hitl-1"},
    )
    return _resumed(agent, "Where is order 7?")


def tool_interrupt() -> list[dict[str, Any]]:
    agent = Agent(
        model=ScriptedModel([[Call("refund", {"order_id": 4}, "r1")], ["Order 4 is refunded."]]),
        tools=[refund],
        name="refunder",
        callback_handler=None,
        trace_attributes={"session.id": "strands-hitl-2"},
    )
    return _resumed(agent, "Refund order 4?")


SCENARIOS: dict[str, Callable[[], list[dict[str, Any]]]] = {
    f.__name__: f
    for f in (
        sequential_tools,
        parallel_calls,
        text_and_call,
        thinking,
        tool_raises,
        no_tools,
        two_turn_session,
        agent_as_tool,
        mcp_tools,
        swarm,
        graph,
        model_error,
        model_retried,
        structured_output,
        structured_retry,
    )
}
#: Runs Strands stopped before the model answered (``stop`` is their stop reason).
STOPPED: dict[str, Callable[[], list[dict[str, Any]]]] = {
    f.__name__: f for f in (limit_turns, cancelled)
}
#: Runs that stopped for a human's input, then resumed: two runs each, one turn.
PAUSING: dict[str, Callable[[], list[dict[str, Any]]]] = {
    f.__name__: f for f in (hook_interrupt, tool_interrupt)
}


def main(out_dir: Path) -> None:
    """Run every scenario; write ``<scenario>.jsonl`` (OTLP JSON) and ``expected.json``."""
    processors = []
    if os.environ.get("TRACESCORE_HARNESS_OPENINFERENCE"):
        processors.append(StrandsAgentsToOpenInferenceProcessor())
    recorder = Recorder(*processors)
    trace.set_tracer_provider(recorder.provider)  # Strands' tracer uses the global one
    record_scenarios(recorder, {**SCENARIOS, **STOPPED, **PAUSING}, out_dir)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
