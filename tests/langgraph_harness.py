"""Real LangGraph ReAct agents, traced by OpenInference or OpenLLMetry, as OTLP JSON Lines.

Two instrumentations trace LangChain runs: the compiled graph
(``create_react_agent(name=...)``), its ``agent`` and ``tools`` nodes, the chat model and
each tool.

* ``openinference-instrumentation-langchain`` writes no agent name and marks any run
  whose name holds "agent" as AGENT, so the graph is named by its span; a tool's output
  is the serialized ``ToolMessage``.
* OpenLLMetry's ``opentelemetry-instrumentation-langchain`` wraps the graph in an
  ``invoke_agent`` span, writes ``gen_ai.input|output.messages`` on chat spans, and on
  tool spans the LangChain callback payloads (``{"input_str", "inputs", "kwargs"…}``,
  ``{"output": <ToolMessage in LangChain's serialization>, "kwargs"}``) as both
  ``traceloop.entity.input|output`` and ``gen_ai.tool.call.arguments|result``; content
  is kept unless ``TRACELOOP_TRACE_CONTENT=false``.

The chat model is LangChain's own ``FakeMessagesListChatModel`` (scripted ``AIMessage``
replies, tool calls included). Both instrumentations patch LangChain's callback manager
process-wide, so the runs happen in a child process: ``python langgraph_harness.py
INSTRUMENTATION OUT_DIR`` writes one OTLP JSON Lines file per scenario and
``expected.json``, each run as LangGraph itself returned it (the new messages of its
state), which the rebuilt invocations must equal.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import (
    HumanInTheLoopMiddleware,
    ModelCallLimitMiddleware,
    ToolCallLimitMiddleware,
)
from langchain.agents.structured_output import ToolStrategy
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.tools import tool
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.instrumentation.langchain import LangchainInstrumentor
from pydantic import BaseModel

from recording import Recorder, record_scenarios, weather

with warnings.catch_warnings():  # moved to langchain.agents.create_agent in LangGraph 1.0
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import ToolNode, create_react_agent


class ScriptedChatModel(FakeMessagesListChatModel):
    """LangChain's list-replaying fake chat model, accepting the agent's tools."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self


class StreamingChatModel(ScriptedChatModel):
    """The scripted model, streamed: text in 4-character pieces, each tool call's name and
    id then its arguments in two pieces, usage on the last chunk (as a provider streams)."""

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        reply = self.responses[self.i]
        self.i = (self.i + 1) % len(self.responses)
        text = reply.content if isinstance(reply.content, str) else ""
        for start in range(0, len(text), 4):
            piece = text[start : start + 4]
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager is not None:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk
        for index, call in enumerate(getattr(reply, "tool_calls", [])):
            args = json.dumps(call["args"], ensure_ascii=False)
            for name, call_id, part in (
                (call["name"], call["id"], args[:5]),
                (None, None, args[5:]),
            ):
                piece_call = {"name": name, "args": part, "id": call_id, "index": index}
                yield ChatGenerationChunk(
                    message=AIMessageChunk(content="", tool_call_chunks=[piece_call])  # type: ignore[list-item]
                )
        usage = {"input_tokens": 11, "output_tokens": 3, "total_tokens": 14}
        yield ChatGenerationChunk(
            message=AIMessageChunk(content="", usage_metadata=usage, chunk_position="last")  # type: ignore[arg-type]
        )


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return weather(city)


@tool
def lookup_order(order_id: int) -> dict[str, Any]:
    """An order's status."""
    return {"order_id": order_id, "status": "shipped"}


@tool
def refund(order_id: int) -> str:
    """Refund an order, once a human approves."""
    approved = interrupt({"question": f"Refund order {order_id}?"})
    return f"order {order_id} refunded" if approved == "yes" else "refund declined"


def ai(text: str = "", *calls: tuple[str, dict[str, Any], str]) -> AIMessage:
    return AIMessage(
        content=text,
        tool_calls=[{"name": n, "args": a, "id": i, "type": "tool_call"} for n, a, i in calls],
    )


def _text(message: BaseMessage) -> str | None:
    content = message.content
    if isinstance(content, str):
        return content or None
    texts = [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join(texts) or None


def _value(content: Any) -> Any:
    if isinstance(content, str):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return content


def view(messages: Sequence[BaseMessage], agent: str) -> dict[str, Any]:
    """One run's new messages, as LangGraph returned them, as an invocation's fields."""
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    replies = [m for m in messages if isinstance(m, AIMessage)]
    calls = []
    for reply in replies:
        for call in reply.tool_calls:
            result = results.get(str(call["id"]))
            calls.append(
                {
                    "name": call["name"],
                    "args": call["args"],
                    "id": call["id"],
                    "result": _value(result.content) if result is not None else None,
                    "failed": result is not None and result.status == "error",
                }
            )
    final = replies[-1] if replies and not replies[-1].tool_calls else None
    user = next(m for m in messages if isinstance(m, HumanMessage))
    return {
        "agents": [agent],
        "user": _text(user),
        "calls": calls,
        "intermediate": [t for m in replies if m is not final and (t := _text(m))],
        "final": _text(final) if final is not None else None,
    }


def _agent(replies: Sequence[AIMessage], name: str | None = "weather_agent", **kwargs: Any) -> Any:
    model = ScriptedChatModel(responses=list(replies))
    # handle_tool_errors: an exception becomes an error ToolMessage the model sees (since
    # LangGraph 1.0 the default handles only bad arguments and re-raises the rest).
    tools = ToolNode([get_weather, lookup_order], handle_tool_errors=True)
    if name is None:  # LangGraph's default name, "LangGraph"
        return create_react_agent(model, tools, **kwargs)
    return create_react_agent(model, tools, name=name, **kwargs)


def _one(replies: Sequence[AIMessage], prompt: str) -> list[dict[str, Any]]:
    state = _agent(replies).invoke({"messages": [{"role": "user", "content": prompt}]})
    return [view(state["messages"], "weather_agent")]


def sequential_tools() -> list[dict[str, Any]]:
    replies = [
        ai("", ("get_weather", {"city": "Paris"}, "c1")),
        ai("", ("lookup_order", {"order_id": 7}, "c2")),
        ai("Paris is sunny and order 7 has shipped."),
    ]
    return _one(replies, "Weather in Paris, and where is order 7?")


def parallel_calls() -> list[dict[str, Any]]:
    replies = [
        ai("", ("get_weather", {"city": "Zürich"}, "p1"), ("get_weather", {"city": "東京"}, "p2")),
        ai("Both sunny."),
    ]
    return _one(replies, "Wetter in Zürich und 東京?")


def text_and_call() -> list[dict[str, Any]]:
    replies = [ai("Let me check.", ("get_weather", {"city": "Oslo"}, "t1")), ai("Oslo: sunny.")]
    return _one(replies, "Oslo?")


def tool_raises() -> list[dict[str, Any]]:
    # The ToolNode hands the error to the model as a ToolMessage with status "error".
    replies = [ai("", ("get_weather", {"city": "Atlantis"}, "e1")), ai("No station there.")]
    return _one(replies, "Weather in Atlantis?")


def no_tools() -> list[dict[str, Any]]:
    return _one([ai("Bonjour ! Ça va ? 👋")], "Dis bonjour — en français.")


def two_turn_session() -> list[dict[str, Any]]:
    replies = [
        ai("", ("get_weather", {"city": "Rome"}, "s1")),
        ai("Rome is sunny."),
        ai("You're welcome."),
    ]
    graph = _agent(replies, checkpointer=MemorySaver())
    config: Any = {"configurable": {"thread_id": "thread-1"}}
    out = []
    seen = 0
    # The instrumentation writes the LangGraph thread id as every span's session.id.
    for prompt in ("Weather in Rome?", "Thanks!"):
        state = graph.invoke({"messages": [{"role": "user", "content": prompt}]}, config)
        out.append(view(state["messages"][seen:], "weather_agent"))
        seen = len(state["messages"])
    return out


def unnamed_agent() -> list[dict[str, Any]]:
    # No "agent" in the graph's name: OpenInference marks it CHAIN, its agent node AGENT.
    replies = [ai("", ("get_weather", {"city": "Porto"}, "u1")), ai("Porto: sunny.")]
    graph = _agent(replies, name=None)
    state = graph.invoke({"messages": [{"role": "user", "content": "Porto?"}]})
    return [view(state["messages"], "LangGraph")]


def streamed() -> list[dict[str, Any]]:
    """``graph.stream(stream_mode="messages")``: each model reply streamed in pieces."""
    replies: list[BaseMessage] = [
        ai("Let me check.", ("get_weather", {"city": "Oslo"}, "m1")),
        ai("Oslo: sunny."),
    ]
    model = StreamingChatModel(responses=replies)
    graph = create_react_agent(
        model, ToolNode([get_weather], handle_tool_errors=True), name="weather_agent"
    )
    pieces, state = 0, None
    item: Any
    for mode, item in graph.stream(
        {"messages": [{"role": "user", "content": "Oslo?"}]}, stream_mode=["messages", "values"]
    ):
        if mode == "messages":
            pieces += 1
        else:
            state = item
    assert state is not None and pieces > len(replies), "the replies were not streamed"
    return [view(state["messages"], "weather_agent")]


def pipeline() -> list[dict[str, Any]]:
    """Two ReAct agents as the nodes of a graph, one after the other: one run."""
    researcher = _agent(
        [ai("", ("get_weather", {"city": "Nice"}, "r1")), ai("Nice is sunny.")], name="researcher"
    )
    writer = _agent([ai("Report: Nice is sunny.")], name="writer")
    builder = StateGraph(MessagesState)
    builder.add_node("researcher", researcher)
    builder.add_node("writer", writer)
    builder.add_edge(START, "researcher")
    builder.add_edge("researcher", "writer")
    builder.add_edge("writer", END)
    graph = builder.compile(name="pipeline")
    prompt: Any = {"messages": [HumanMessage("Weather report for Nice?")]}
    state = graph.invoke(prompt)
    return [{**view(state["messages"], "pipeline"), "agents": ["pipeline", "researcher", "writer"]}]


def server_tool() -> list[dict[str, Any]]:
    """A reply holding a tool the provider ran (a web search, LangChain's standard
    ``server_tool_call`` / ``server_tool_result`` content blocks) beside its text: no
    call of the agent's (``tool_calls`` is empty), the text its answer."""
    search = {"type": "server_tool_call", "id": "ws_1", "name": "web_search", "args": {"q": "lima"}}
    found = {"type": "server_tool_result", "tool_call_id": "ws_1", "status": "success"}
    reply = AIMessage(content=[search, found, {"type": "text", "text": "Lima is sunny."}])
    return _one([reply], "Weather in Lima?")


def thinking() -> list[dict[str, Any]]:
    """A thinking model's replies (Anthropic's ``thinking`` blocks, as LangChain keeps
    them in the content) before a call and before the answer: the answer is the text."""
    first = AIMessage(
        content=[{"type": "thinking", "thinking": "They want Lima.", "signature": "s1"}],
        tool_calls=[
            {"name": "get_weather", "args": {"city": "Lima"}, "id": "k1", "type": "tool_call"}
        ],
    )
    second = AIMessage(
        content=[
            {"type": "thinking", "thinking": "Sunny; say so.", "signature": "s2"},
            {"type": "text", "text": "Lima: sunny."},
        ]
    )
    return _one([first, second], "Lima, sunny or not?")


@tool(return_direct=True)
def announce_weather(city: str) -> str:
    """The weather, said to the user as it is: the graph ends with it."""
    return f"Announcement: {weather(city)}"


def return_direct() -> list[dict[str, Any]]:
    """A ``return_direct`` tool: the graph ends with its message, no model call after it;
    that message is the graph's answer (LangGraph's messages have no final AI text)."""
    model = ScriptedChatModel(responses=[ai("", ("announce_weather", {"city": "Bern"}, "d1"))])
    graph = create_react_agent(model, ToolNode([announce_weather]), name="weather_agent")
    state = graph.invoke({"messages": [{"role": "user", "content": "Bern, announced?"}]})
    last = state["messages"][-1]
    assert isinstance(last, ToolMessage)
    return [{**view(state["messages"], "weather_agent"), "final": last.content}]


# --- LangChain 1.x's create_agent (LangGraph underneath, middleware around the model) ---


class Forecast(BaseModel):
    """A city's weather, as data."""

    city: str
    sky: str


def _created(replies: Sequence[AIMessage], prompt: str, **kwargs: Any) -> dict[str, Any]:
    """The final state of a ``create_agent`` graph (its tools: weather and orders)."""
    graph = create_agent(
        ScriptedChatModel(responses=list(replies)), [get_weather, lookup_order], **kwargs
    )
    state: dict[str, Any] = graph.invoke({"messages": [{"role": "user", "content": prompt}]})
    return state


def agent_tools() -> list[dict[str, Any]]:
    replies = [ai("", ("get_weather", {"city": "Turin"}, "ca1")), ai("Turin: sunny.")]
    state = _created(replies, "Weather in Turin?", name="weather_agent")
    return [view(state["messages"], "weather_agent")]


def _structured(replies: Sequence[AIMessage], prompt: str) -> list[dict[str, Any]]:
    """A ``create_agent`` run with ``response_format=ToolStrategy(Forecast)``; its answer
    the state's ``structured_response``, as JSON."""
    state = _created(replies, prompt, name="weather_agent", response_format=ToolStrategy(Forecast))
    answer = state["structured_response"]
    assert isinstance(answer, Forecast)
    return [{**view(state["messages"], "weather_agent"), "final": answer.model_dump_json()}]


def agent_structured_output() -> list[dict[str, Any]]:
    """``response_format=ToolStrategy(...)``: the model answers by calling the schema's
    tool; the framework answers that call itself ("Returning structured response"), in no
    tool span; the caller gets the state's ``structured_response``, as JSON here."""
    replies = [
        ai("", ("get_weather", {"city": "Oslo"}, "cs1")),
        ai("", ("Forecast", {"city": "Oslo", "sky": "sunny"}, "cs2")),
    ]
    return _structured(replies, "Oslo, as data?")


def agent_structured_retry() -> list[dict[str, Any]]:
    """``ToolStrategy`` arguments that do not validate: the framework answers the call
    itself with the validation error (an error ``ToolMessage``, in no tool span) and the
    model calls the schema's tool again."""
    replies = [
        ai("", ("Forecast", {"city": "Oslo"}, "cr1")),
        ai("", ("Forecast", {"city": "Oslo", "sky": "sunny"}, "cr2")),
    ]
    return _structured(replies, "Oslo as data, please?")


def agent_model_call_limit() -> list[dict[str, Any]]:
    """``ModelCallLimitMiddleware(exit_behavior="end")``: past the limit the framework ends
    the run with a message of its own, in no model call; the agent's last message."""
    replies = [ai("", ("get_weather", {"city": "Bonn"}, "cm1")), ai("Never said.")]
    limit = ModelCallLimitMiddleware(run_limit=1, exit_behavior="end")
    state = _created(replies, "Bonn, in one call?", name="weather_agent", middleware=[limit])
    return [view(state["messages"], "weather_agent")]


SCENARIOS: dict[str, Callable[[], list[dict[str, Any]]]] = {
    f.__name__: f
    for f in (
        sequential_tools,
        parallel_calls,
        text_and_call,
        tool_raises,
        no_tools,
        two_turn_session,
        unnamed_agent,
        streamed,
        pipeline,
        server_tool,
        thinking,
        return_direct,
        agent_tools,
        agent_structured_output,
        agent_structured_retry,
        agent_model_call_limit,
    )
}


def agent_tool_call_limit() -> list[dict[str, Any]]:
    """``ToolCallLimitMiddleware(run_limit=1)``: of two calls in one reply the second is
    answered by the framework, an error ``ToolMessage`` in no tool span, fed back before
    the first call's result."""
    replies = [
        ai("", ("get_weather", {"city": "Oslo"}, "ct1"), ("get_weather", {"city": "Rome"}, "ct2")),
        ai("Only Oslo is known."),
    ]
    limit = ToolCallLimitMiddleware(run_limit=1, exit_behavior="continue")
    state = _created(
        replies, "Oslo and Rome, one tool call?", name="weather_agent", middleware=[limit]
    )
    return [view(state["messages"], "weather_agent")]


#: Runs compared on their own (a refused call has no tool span, even with content off).
APART: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "agent_tool_call_limit": agent_tool_call_limit
}


def human_in_the_loop() -> list[dict[str, Any]]:
    """A tool that asks a human (``interrupt()``): the graph pauses, and the next
    ``invoke(Command(resume=...))`` on the thread goes on. One turn in two runs (two
    traces); LangGraph's record of the turn is the state after the resume."""
    model = ScriptedChatModel(
        responses=[ai("", ("refund", {"order_id": 4}, "h1")), ai("Order 4 is refunded.")]
    )
    graph = create_react_agent(model, [refund], name="refund_agent", checkpointer=MemorySaver())
    config: Any = {"configurable": {"thread_id": "thread-hitl"}}
    paused = graph.invoke({"messages": [{"role": "user", "content": "Refund order 4?"}]}, config)
    assert paused["__interrupt__"]
    state = graph.invoke(Command(resume="yes"), config)
    return [view(state["messages"], "refund_agent")]


def agent_human_in_the_loop() -> list[dict[str, Any]]:
    """``HumanInTheLoopMiddleware``: the run pauses before the tool runs, the next
    ``invoke(Command(resume={"decisions": [...]}))`` approves it and goes on."""
    replies: list[BaseMessage] = [
        ai("", ("lookup_order", {"order_id": 3}, "ch1")),
        ai("Order 3 has shipped."),
    ]
    approval = HumanInTheLoopMiddleware(interrupt_on={"lookup_order": True})
    graph = create_agent(
        ScriptedChatModel(responses=replies),
        [lookup_order],
        name="order_agent",
        checkpointer=MemorySaver(),
        middleware=[approval],
    )
    config: Any = {"configurable": {"thread_id": "thread-hitl-agent"}}
    paused = graph.invoke({"messages": [{"role": "user", "content": "Where is order 3?"}]}, config)
    assert paused["__interrupt__"]
    state = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    return [view(state["messages"], "order_agent")]


#: Runs that pause for a human: recorded with the scenarios, compared on their own.
PAUSING: dict[str, Callable[[], list[dict[str, Any]]]] = {
    f.__name__: f for f in (human_in_the_loop, agent_human_in_the_loop)
}

#: The LangChain instrumentations the harness can trace with.
INSTRUMENTATIONS = ("openinference", "openllmetry")


def main(instrumentation: str, out_dir: Path) -> None:
    """Run every scenario; write ``<scenario>.jsonl`` (OTLP JSON) and ``expected.json``."""
    recorder = Recorder()
    if instrumentation == "openinference":
        LangChainInstrumentor().instrument(tracer_provider=recorder.provider)
    elif instrumentation == "openllmetry":
        LangchainInstrumentor().instrument(tracer_provider=recorder.provider)
    else:
        raise SystemExit(f"unknown instrumentation {instrumentation!r}: {INSTRUMENTATIONS}")
    record_scenarios(recorder, {**SCENARIOS, **APART, **PAUSING}, out_dir)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
