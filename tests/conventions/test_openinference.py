"""OpenInference spans (flattened ``llm.*`` messages, TOOL spans) and the generic fallback.

Hand-built traces follow the OpenInference semantic conventions (REFERENCE §5.3); the
mixed ADK traces were recorded with the real ``openinference-instrumentation-google-adk``
by ``tests/fixtures/generate_openinference_adk.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from conv_helpers import FIXTURES, TraceBuilder, by_trace, load_sample, summary, to_json

from tracescore.conventions.base import SpanView
from tracescore.conventions.messages import TextPart, ToolCallPart, ToolResultPart
from tracescore.conventions.openinference import OpenInference
from tracescore.conventions.registry import agent_name, classify
from tracescore.spans import AttrValue
from tracescore.trajectory import build_invocations

USER = "Weather in Paris?"
FINAL = "It is 21C in Paris."
SYSTEM = "Answer weather questions."
SCHEMA = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object"}},
}


def llm_attrs(n: int, *, final: bool) -> dict[str, Any]:
    """An OpenAI chat call as openinference-instrumentation-openai records it."""
    attrs: dict[str, Any] = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o",
        "llm.system": "openai",
        "llm.token_count.prompt": 40 + 20 * n,
        "llm.token_count.completion": 10 + 10 * n,
        "llm.tools.0.tool.json_schema": to_json(SCHEMA),
        "input.value": to_json({"messages": [{"role": "user", "content": USER}]}),
        "input.mime_type": "application/json",
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": SYSTEM,
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.contents.0.message_content.type": "text",
        "llm.input_messages.1.message.contents.0.message_content.text": USER,
    }
    if n == 1:
        attrs.update(
            {
                "llm.input_messages.2.message.role": "assistant",
                "llm.input_messages.2.message.content": "Let me check.",
                "llm.input_messages.2.message.tool_calls.0.tool_call.id": "call_1",
                "llm.input_messages.2.message.tool_calls.0.tool_call.function.name": "get_weather",
                "llm.input_messages.2.message.tool_calls.0.tool_call.function.arguments": (
                    '{"city": "Paris"}'
                ),
                "llm.input_messages.3.message.role": "tool",
                "llm.input_messages.3.message.tool_call_id": "call_1",
                "llm.input_messages.3.message.content": "21C in Paris",
            }
        )
    out = "llm.output_messages.0.message."
    attrs[out + "role"] = "assistant"
    if final:
        attrs[out + "content"] = FINAL
    else:
        attrs[out + "content"] = "Let me check."
        attrs[out + "tool_calls.0.tool_call.id"] = "call_1"
        attrs[out + "tool_calls.0.tool_call.function.name"] = "get_weather"
        attrs[out + "tool_calls.0.tool_call.function.arguments"] = '{"city": "Paris"}'
    return attrs


def openinference_trace() -> TraceBuilder:
    t = TraceBuilder()
    agent = t.span(
        "Weather agent",
        {"openinference.span.kind": "AGENT", "agent.name": "weather_agent", "session.id": "s-1"},
    )
    t.span("ChatCompletion", llm_attrs(0, final=False), parent=agent)
    t.span(
        "get_weather",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "tool.parameters": to_json({"type": "object", "properties": {"city": {}}}),
            "input.value": '{"city": "Paris"}',
            "output.value": "21C in Paris",
        },
        parent=agent,
    )
    t.span("ChatCompletion", llm_attrs(1, final=True), parent=agent)
    return t


def test_openinference_trace() -> None:
    t = openinference_trace()
    [inv] = build_invocations(t.spans)
    assert summary(inv) == {
        "user": USER,
        "tool_calls": [
            {
                "name": "get_weather",
                "args": {"city": "Paris"},
                "id": "call_1",
                "result": "21C in Paris",
                "error": None,
            }
        ],
        "intermediate": [("weather_agent", "Let me check.")],
        "final": FINAL,
        "status": "ok",
        "reason_code": None,
        "usage": (100, 30),
        "source": ("llm.input_messages", "llm.output_messages"),
    }
    assert inv.system_instructions == SYSTEM
    assert inv.tool_definitions == [SCHEMA]
    assert inv.conversation_id == "s-1"
    assert inv.agents == ("weather_agent",)
    assert inv.warnings == ()


@pytest.mark.parametrize(
    ("hidden", "redact"),
    [
        pytest.param("all", "OPENINFERENCE_HIDE_INPUTS", id="hide_inputs_outputs"),
        pytest.param("text", "OPENINFERENCE_HIDE_INPUT_TEXT", id="hide_text"),
    ],
)
def test_redacted_content_is_not_evaluable(hidden: str, redact: str) -> None:
    """``OPENINFERENCE_HIDE_INPUTS/OUTPUTS`` drop the messages and write ``__REDACTED__``
    into ``input.value``/``output.value``; ``HIDE_*_TEXT`` redacts each text."""
    t = openinference_trace()
    for span in t.spans:
        attrs = span.attributes
        if hidden == "all":
            for key in list(attrs):
                if key.startswith(("llm.input_messages.", "llm.output_messages.")):
                    del attrs[key]
            for key in ("input.value", "output.value"):
                if key in attrs:
                    attrs[key] = "__REDACTED__"
        else:
            for key in list(attrs):
                if key.endswith((".message.content", ".message_content.text")):
                    attrs[key] = "__REDACTED__"
            if "input.value" in attrs and attrs.get("openinference.span.kind") == "LLM":
                attrs["input.value"] = "__REDACTED__"
    [inv] = build_invocations(t.spans)
    assert inv.status == "not_evaluable"
    assert inv.reason_code == "content_not_captured"
    assert redact in (inv.reason or "")
    assert inv.user_content is None
    assert [c.name for c in inv.tool_calls] == ["get_weather"]


def test_flattened_messages_parse() -> None:
    t = TraceBuilder()
    span = t.span("llm", llm_attrs(1, final=False))
    reader = OpenInference()
    view = SpanView(span)
    found = reader.llm_input(view)
    assert found is not None
    msgs = found.value
    assert [m.role for m in msgs] == ["system", "user", "assistant", "tool"]
    assert msgs[2].parts == (
        TextPart(text="Let me check."),
        ToolCallPart(name="get_weather", args={"city": "Paris"}, id="call_1"),
    )
    assert msgs[3].parts == (ToolResultPart(name=None, response="21C in Paris", id="call_1"),)
    assert "openinference" in view.cache  # parsed once, reused by the next question
    out = reader.llm_output(view)
    assert out is not None
    assert out.value[0].tool_calls()[0].args == {"city": "Paris"}
    assert reader.llm_input(SpanView(t.span("plain", {"x": 1}))) is None


def _two_outputs(obj: str) -> dict[str, Any]:
    """An LLM span with two output messages: a text, then a tool call without arguments."""
    prefix = "llm.output_messages."
    return {
        "openinference.span.kind": "LLM",
        "output.value": to_json({"id": "x1", "object": obj, "output": []}),
        f"{prefix}0.message.role": "assistant",
        f"{prefix}0.message.contents.0.message_content.type": "text",
        f"{prefix}0.message.contents.0.message_content.text": "Let me check.",
        f"{prefix}0.message.content": "Let me check.",
        f"{prefix}1.message.role": "assistant",
        f"{prefix}1.message.tool_calls.0.tool_call.id": "call_1",
        f"{prefix}1.message.tool_calls.0.tool_call.function.name": "transfer_to_weather",
    }


def test_responses_api_output_items_are_one_reply_and_choices_are_not() -> None:
    t = TraceBuilder()
    reader = OpenInference()
    reply = reader.llm_output(SpanView(t.span("response", _two_outputs("response"))))
    assert reply is not None
    # One message: its text once (content and contents are one content), then the call,
    # whose left-out arguments are the model's "{}".
    assert [m.parts for m in reply.value] == [
        (
            TextPart(text="Let me check."),
            ToolCallPart(name="transfer_to_weather", args={}, id="call_1"),
        )
    ]
    choices = reader.llm_output(SpanView(t.span("chat", _two_outputs("chat.completion"))))
    assert choices is not None
    assert len(choices.value) == 2  # two choices stay two: the reply is choice 0


def test_openai_agents_handoff_span_is_not_a_tool_execution() -> None:
    t = TraceBuilder()
    reader = OpenInference()
    handoff = {"openinference.span.kind": "TOOL", "input.value": "triage", "output.value": "w"}
    assert reader.step_kind(t.span("handoff to w", handoff)) == "other"
    named = {**handoff, "tool.name": "handoff to w"}  # a tool that happens to be named so
    assert reader.step_kind(t.span("handoff to w", named)) == "tool"


def test_langgraph_graph_is_named_by_its_span_and_its_nodes_are_not_agents() -> None:
    t = TraceBuilder()
    reader = OpenInference()
    graph_meta = to_json({"ls_integration": "langgraph"})
    node_meta = to_json({"ls_integration": "langgraph", "langgraph_node": "agent"})
    agent = {"openinference.span.kind": "AGENT"}
    assert reader.agent_name(t.span("support_bot", {**agent, "metadata": graph_meta})) == (
        "support_bot"
    )
    assert reader.agent_name(t.span("agent", {**agent, "metadata": node_meta})) is None
    assert reader.agent_name(t.span("AgentExecutor", agent)) is None  # no LangGraph: no guess
    assert reader.agent_name(t.span("x", {**agent, "metadata": "{not json"})) is None
    # Whatever their names, the graph is the agent run and a node a step of it.
    chain = {"openinference.span.kind": "CHAIN"}
    graph = t.span("LangGraph", {**chain, "metadata": graph_meta})
    node = t.span("agent", {**agent, "metadata": node_meta})
    assert (reader.step_kind(graph), reader.agent_name(graph)) == ("agent", "LangGraph")
    assert (reader.step_kind(node), reader.agent_name(node)) == ("chain", None)
    other = t.span("RunnableSequence", {**chain, "metadata": node_meta})
    assert reader.step_kind(other) == "chain"
    assert reader.step_kind(t.span("AgentExecutor", agent)) == "agent"  # not LangGraph


def test_langchain_tool_message_result_is_its_content() -> None:
    t = TraceBuilder()
    reader = OpenInference()
    message = {
        "type": "tool",
        "data": {"content": '{"a": 1}', "type": "tool", "tool_call_id": "c1", "status": "success"},
    }
    attrs = {"openinference.span.kind": "TOOL", "tool.name": "t", "output.value": to_json(message)}
    io = reader.tool_io(SpanView(t.span("t", attrs)))
    assert io is not None and io.result is not None
    assert io.result.value == {"a": 1}
    assert io.call_id == "c1"  # the instrumentation writes none of its own on the span
    other = {"type": "tool", "data": {"content": "x"}}  # not a serialized ToolMessage
    attrs["output.value"] = to_json(other)
    io = reader.tool_io(SpanView(t.span("t", attrs)))
    assert io is not None and io.result is not None
    assert io.result.value == other


def test_parallel_langchain_tools_join_their_calls_by_the_tool_message_id() -> None:
    """A ``ToolNode`` runs parallel calls on threads: the second may start first."""
    t = TraceBuilder()
    root = t.span("weather_agent", {"openinference.span.kind": "AGENT"})
    calls = [
        {"type": "tool_call", "id": f"p{i}", "name": "w", "arguments": {"c": c}}
        for i, c in ((1, "A"), (2, "B"))
    ]
    t.span(
        "chat",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": to_json(
                [{"role": "user", "parts": [{"type": "text", "content": "q"}]}]
            ),
            "gen_ai.output.messages": to_json([{"role": "assistant", "parts": calls}]),
        },
        parent=root,
    )
    for call_id, city in (("p2", "B"), ("p1", "A")):  # started in the other order
        message = {
            "type": "tool",
            "data": {"content": f"sun in {city}", "type": "tool", "tool_call_id": call_id},
        }
        t.span(
            "w",
            {"openinference.span.kind": "TOOL", "tool.name": "w", "output.value": to_json(message)},
            parent=root,
        )
    [inv] = build_invocations(t.spans)
    assert [(c.id, c.args, c.result) for c in inv.tool_calls] == [
        ("p1", {"c": "A"}, "sun in A"),
        ("p2", {"c": "B"}, "sun in B"),
    ]


def test_kinds_and_agent_names() -> None:
    t = TraceBuilder()
    reader = OpenInference()
    kinds = {
        k: reader.step_kind(t.span(k, {"openinference.span.kind": k}))
        for k in ("LLM", "AGENT", "TOOL", "CHAIN", "RETRIEVER", "EMBEDDING", "GUARDRAIL")
    }
    assert kinds == {
        "LLM": "llm",
        "AGENT": "agent",
        "TOOL": "tool",
        "CHAIN": "chain",
        "RETRIEVER": "retrieval",
        "EMBEDDING": "other",
        "GUARDRAIL": "other",
    }
    assert reader.step_kind(t.span("none")) is None
    agent = t.span("a", {"openinference.span.kind": "AGENT", "graph.node.id": "planner"})
    chain = t.span("c", {"openinference.span.kind": "CHAIN", "graph.node.id": "step_1"})
    named = t.span("n", {"agent.name": "writer", "graph.node.id": "node"})
    assert reader.agent_name(agent) == "planner"
    assert reader.agent_name(chain) is None
    assert reader.agent_name(named) == "writer"


def test_genai_operation_and_agent_name_beside_openinference_ones() -> None:
    """What OpenInference's span processor for Strands leaves on Strands' own spans."""
    t = TraceBuilder()
    reader = OpenInference()

    def chain(operation: str) -> Any:
        return t.span(
            operation, {"openinference.span.kind": "CHAIN", "gen_ai.operation.name": operation}
        )

    # CHAIN is the catch-all: a GenAI operation that runs agents says more.
    assert [classify(chain(op)) for op in ("invoke_swarm", "invoke_graph", "invoke_agent")] == [
        "workflow",
        "workflow",
        "agent",
    ]
    assert classify(chain("execute_event_loop_cycle")) == "chain"
    assert classify(chain("chat")) == "chain"  # only agent-ish kinds are taken over
    strands = {"openinference.span.kind": "AGENT", "graph.node.id": "strands_agent"}
    assert reader.agent_name(t.span("invoke_agent triage", strands)) == "strands_agent"
    both = t.span("invoke_agent triage", {**strands, "gen_ai.agent.name": "triage"})
    assert reader.agent_name(both) is None  # the GenAI reader names it
    assert agent_name(both) == "triage"


@pytest.mark.parametrize(
    ("mime", "expected"),
    [
        ("text/plain", '{"order_id": 7}'),  # text as the tool returned it
        ("application/json", {"order_id": 7}),
        (None, {"order_id": 7}),
    ],
)
def test_tool_output_is_read_as_its_mime_type_says(mime: str | None, expected: Any) -> None:
    attrs: dict[str, Any] = {
        "openinference.span.kind": "TOOL",
        "tool.name": "lookup_order",
        "tool.call_id": "c2",
        "output.value": '{"order_id": 7}',
    }
    if mime is not None:
        attrs["output.mime_type"] = mime
    io = OpenInference().tool_io(SpanView(TraceBuilder().span("execute_tool", attrs)))
    assert io is not None and io.result is not None
    assert io.result.value == expected
    assert io.call_id == "c2"


def test_smolagents_run_span_names_the_agent_and_states_task_and_answer() -> None:
    reader = OpenInference()
    smol = TraceBuilder(scope="openinference.instrumentation.smolagents")
    attrs = {
        "openinference.span.kind": "AGENT",
        "input.value": to_json({"task": "Weather in Paris?", "stream": False}),
        "output.value": "Paris is sunny.",
    }
    run = SpanView(smol.span("weather_agent.run", attrs))
    assert reader.agent_name(run.span) == "weather_agent"
    task, answer = reader.task(run), reader.final_output(run)
    assert task is not None and (task.value, task.source) == ("Weather in Paris?", "input.value")
    assert answer is not None and answer.value == "Paris is sunny."
    # Another instrumentation's AGENT span: no name from the span name, no task.
    other = SpanView(TraceBuilder().span("weather_agent.run", attrs))
    assert reader.agent_name(other.span) is None
    assert reader.task(other) is None
    # A framework's state is no answer; nor is anything on a span that is no AGENT.
    state = {**attrs, "output.value": to_json({"messages": [{"content": "hi"}]})}
    assert reader.final_output(SpanView(smol.span("graph", state))) is None
    chain = {**attrs, "openinference.span.kind": "CHAIN"}
    assert reader.final_output(SpanView(smol.span("Step 1", chain))) is None
    assert reader.task(SpanView(smol.span("Step 1", chain))) is None


def test_tool_parameters_as_arguments_only_when_not_a_schema() -> None:
    t = TraceBuilder()
    reader = OpenInference()
    base = {"openinference.span.kind": "TOOL", "tool.name": "f", "tool.id": "t-1"}
    schema = t.span("f", {**base, "tool.parameters": '{"type": "object", "properties": {}}'})
    args = t.span("f", {**base, "tool.parameters": '{"city": "Paris"}'})
    preferred = t.span(
        "f", {**base, "tool.parameters": '{"city": "Rome"}', "input.value": '{"city": "Paris"}'}
    )
    io_schema = reader.tool_io(SpanView(schema))
    io_args = reader.tool_io(SpanView(args))
    io_pref = reader.tool_io(SpanView(preferred))
    assert io_schema is not None and io_schema.args is None
    assert io_args is not None and io_args.args is not None
    assert io_args.args.value == {"city": "Paris"}
    assert io_args.args.source == "tool.parameters"
    assert io_args.call_id == "t-1"
    assert io_pref is not None and io_pref.args is not None
    assert io_pref.args.value == {"city": "Paris"}
    wrapped = t.span(
        "f",
        {**base, "output.value": '{"id": "t-1", "name": "f", "response": {"temp": 21}}'},
    )
    io_wrapped = reader.tool_io(SpanView(wrapped))
    assert io_wrapped is not None and io_wrapped.result is not None
    assert io_wrapped.result.value == {"temp": 21}


# --- mixed instrumentation ----------------------------------------------------------------


def test_openinference_on_genai_spans_counts_a_tool_call_once() -> None:
    """Both conventions on the same spans (what openinference-instrumentation-google-adk
    does to ADK's own spans): one model call, one tool call, read once each."""
    t = TraceBuilder()
    agent = t.span(
        "invoke_agent weather_agent",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "weather_agent",
            "openinference.span.kind": "AGENT",
            "agent.name": "weather_agent",
        },
    )
    for n in (0, 1):
        genai: dict[str, AttrValue] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.usage.input_tokens": 40 + 20 * n,
            "gen_ai.usage.output_tokens": 10 + 10 * n,
        }
        t.span("chat gpt-4o", {**genai, **llm_attrs(n, final=n == 1)}, parent=agent)
        if n == 0:
            t.span(
                "execute_tool get_weather",
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": "call_1",
                    "gen_ai.tool.call.arguments": '{"city": "Paris"}',
                    "openinference.span.kind": "TOOL",
                    "tool.name": "get_weather",
                    "input.value": '{"city": "Paris"}',
                    "output.value": '{"id": "call_1", "name": "get_weather", "response": "21C"}',
                },
                parent=agent,
            )
    [inv] = build_invocations(t.spans)
    assert summary(inv) == {
        "user": USER,
        "tool_calls": [
            {
                "name": "get_weather",
                "args": {"city": "Paris"},
                "id": "call_1",
                "result": "21C",
                "error": None,
            }
        ],
        "intermediate": [("weather_agent", "Let me check.")],
        "final": FINAL,
        "status": "ok",
        "reason_code": None,
        "usage": (100, 30),
        "source": ("llm.input_messages", "llm.output_messages"),
    }
    assert inv.inference_calls == 2


def _sample_invocations(name: str) -> tuple[list[Any], dict[str, Any]]:
    spans, logs, sample = load_sample(FIXTURES / "openinference" / name)
    invocations = [inv for s, lg in by_trace(spans, logs) for inv in build_invocations(s, lg)]
    return invocations, sample


def test_real_adk_schema1_with_openinference() -> None:
    """ADK schema 1 + openinference-instrumentation-google-adk 1.0.5 (recorded)."""
    [inv], sample = _sample_invocations("adk_v1_two_sequential_tools.json")
    [adk] = sample["adk"]
    assert summary(inv) == {
        "user": adk["user_content"]["parts"][0]["text"],
        "tool_calls": [
            {
                "name": "get_weather",
                "args": {"city": "Paris"},
                "id": inv.tool_calls[0].id,
                "result": {"city": "Paris", "temp_c": 21.5, "condition": "sunny"},
                "error": None,
            },
            {
                "name": "convert_temperature",
                "args": {"celsius": 21.5, "precision": 1},
                "id": inv.tool_calls[1].id,
                "result": {"fahrenheit": 70.7},
                "error": None,
            },
        ],
        "intermediate": [],
        "final": adk["final_response"]["parts"][0]["text"],
        "status": "ok",
        "reason_code": None,
        "usage": (480, 37),
        # On ADK's own spans the reply is read whole from output.value (see
        # openinference._adk_response).
        "source": ("llm.input_messages", "output.value"),
    }
    assert inv.invocation_id == adk["invocation_id"]
    assert inv.agents == ("weather_agent",)
    assert all((c.id or "").startswith("adk-") for c in inv.tool_calls)
    spans = load_sample(FIXTURES / "openinference" / "adk_v1_two_sequential_tools.json")[0]
    assert sorted(classify(s) for s in spans).count("tool") == 2


def test_real_adk_schema2_with_openinference_keeps_tool_spans() -> None:
    [inv], _ = _sample_invocations("adk_v2_two_sequential_tools.json")
    assert [c.name for c in inv.tool_calls] == ["get_weather", "convert_temperature"]


# --- generic input.value / output.value --------------------------------------------------


@pytest.mark.parametrize(
    ("input_value", "output_value"),
    [
        pytest.param(USER, FINAL, id="plain_text"),
        pytest.param(
            to_json(
                {
                    "messages": [
                        {"role": "system", "content": SYSTEM},
                        {"role": "user", "content": USER},
                    ]
                }
            ),
            to_json(
                {"choices": [{"index": 0, "message": {"role": "assistant", "content": FINAL}}]}
            ),
            id="openai_json",
        ),
        pytest.param(
            to_json({"model": "gemini", "contents": [{"role": "user", "parts": [{"text": USER}]}]}),
            to_json({"content": {"role": "model", "parts": [{"text": FINAL}]}}),
            id="gemini_json",
        ),
        pytest.param(
            to_json({"prompt": USER}), to_json({"role": "assistant", "content": FINAL}), id="prompt"
        ),
    ],
)
def test_generic_input_output_value(input_value: str, output_value: str) -> None:
    t = TraceBuilder()
    t.span(
        "llm",
        {
            "openinference.span.kind": "LLM",
            "input.value": input_value,
            "output.value": output_value,
            "llm.token_count.prompt": 5,
            "llm.token_count.completion": 2,
        },
    )
    [inv] = build_invocations(t.spans)
    assert summary(inv) == {
        "user": USER,
        "tool_calls": [],
        "intermediate": [],
        "final": FINAL,
        "status": "ok",
        "reason_code": None,
        "usage": (5, 2),
        "source": ("input.value", "output.value"),
    }


def _retrieval(
    trace: TraceBuilder, parent: Any, *texts: str, name: str = "VectorStoreRetriever"
) -> None:
    attrs: dict[str, AttrValue] = {"openinference.span.kind": "RETRIEVER", "input.value": "q"}
    for i, text in enumerate(texts):
        attrs[f"retrieval.documents.{i}.document.content"] = text
    trace.span(name, attrs, parent=parent)


def test_retrieved_documents_are_the_runs_context_each_once() -> None:
    """A LangChain RAG chain under OpenInference: RETRIEVER spans (two searches finding
    one document twice), then the model call. A retriever a tool runs is the tool's
    business: its result is what the model saw."""
    t = TraceBuilder(scope="openinference.instrumentation.langchain")
    chain = t.span("RunnableSequence", {"openinference.span.kind": "CHAIN"})
    _retrieval(t, chain, "Paris: 21C.", "Rome: 25C.")
    _retrieval(t, chain, "Rome: 25C.", "Oslo: rain.")
    tool = t.span(
        "search_docs",
        {"openinference.span.kind": "TOOL", "tool.name": "search_docs", "output.value": "x"},
        parent=chain,
    )
    _retrieval(t, tool, "inside the tool")
    t.span("llm", llm_attrs(2, final=True), parent=chain)
    [inv] = build_invocations(t.spans)
    assert inv.retrieved == ("Paris: 21C.", "Rome: 25C.", "Oslo: rain.")
    assert inv.provenance["retrieved"] == "retrieval.documents"
    # The retrievals are no tool calls: the model called none of them.
    assert [c.name for c in inv.tool_calls] == ["search_docs"]
    [plain] = build_invocations(t.spans, model_context=False)
    assert plain.retrieved == ()
    assert classify(t.spans[1]) == "retrieval"
