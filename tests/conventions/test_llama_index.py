"""LlamaIndex shapes: agent names in event reprs, tool arguments and outputs, a ReAct
agent's reading of its replies."""

from __future__ import annotations

import pytest
from conv_helpers import TraceBuilder, to_json

from tracescore.conventions import llama_index
from tracescore.conventions.base import ReadReply
from tracescore.conventions.messages import JsonValue, Message, OtherPart, TextPart, ToolCallPart
from tracescore.conventions.registry import classify
from tracescore.spans import AttrValue, SpanRecord
from tracescore.trace_tree import split_runs
from tracescore.trajectory import build_invocations


@pytest.mark.parametrize(
    ("event", "name"),
    [
        ("AgentSetup(input=[...], current_agent_name='weather_agent')", "weather_agent"),
        # A name with a quote is written in double quotes; escapes are read back.
        ("""AgentInput(input=[], current_agent_name="o'brien")""", "o'brien"),
        (r"AgentInput(input=[], current_agent_name='a\'b')", "a'b"),
        # Only the closing field counts: a message may quote the same words.
        (
            "AgentInput(input=[ChatMessage(text=\"current_agent_name='x')\")], "
            "current_agent_name='real')",
            "real",
        ),
        ("AgentInput(input=[], current_agent_name='weather_ag", None),  # cut short
        ("AgentInput(input=[], current_agent_name='')", None),
        ("ToolCall(tool_name='x')", None),
        ({"input": [], "current_agent_name": "json_agent"}, "json_agent"),
        ({"current_agent_name": 3}, None),
        (None, None),
    ],
)
def test_agent_in_event(event: object, name: str | None) -> None:
    assert llama_index.agent_in_event(event) == name


def test_names_agent_needs_an_agent_input() -> None:
    assert llama_index.names_agent({"input": [], "current_agent_name": "a"}) == "a"
    # An AgentOutput names its agent too, but is no turn's input.
    assert llama_index.names_agent({"response": {}, "current_agent_name": "a"}) is None
    assert llama_index.names_agent("a") is None


def test_without_context_drops_only_the_injected_context() -> None:
    ctx = "<workflows.context.context.Context object at 0x7fc57ac27350>"
    assert llama_index.without_context({"ctx": ctx, "to_agent": "b"}) == {"to_agent": "b"}
    args: JsonValue = {"note": f"see {ctx}", "n": 1}
    assert llama_index.without_context(args) is args
    assert llama_index.without_context(["x"]) == ["x"]


@pytest.mark.parametrize(
    ("value", "read"),
    [
        (
            {
                "blocks": [],
                "tool_name": "t",
                "raw_input": {},
                "raw_output": {"a": 1},
                "is_error": False,
            },
            ({"a": 1}, None),
        ),
        (
            {"tool_name": "t", "raw_output": "boom", "is_error": True},
            ("boom", "boom"),
        ),
        ({"tool_name": "t", "raw_output": None, "is_error": True}, (None, "tool error")),
        ({"tool_name": "t", "raw_output": "x"}, None),  # no is_error: not a ToolOutput
        ("text", None),
    ],
)
def test_tool_output(value: JsonValue, read: tuple[JsonValue, str | None] | None) -> None:
    assert llama_index.tool_output(value) == read


def test_tool_call_result() -> None:
    output: dict[str, JsonValue] = {"tool_name": "t", "raw_output": "ok", "is_error": False}
    value: dict[str, JsonValue] = {
        "tool_name": "t",
        "tool_kwargs": {},
        "tool_id": "c1",
        "tool_output": output,
    }
    assert llama_index.tool_call_result(value) == ("c1", "ok", None)
    assert llama_index.tool_call_result({**value, "tool_id": ""}) == (None, "ok", None)
    assert llama_index.tool_call_result({"tool_kwargs": {}, "tool_output": "x"}) is None
    assert llama_index.tool_call_result({"tool_output": output}) is None


@pytest.mark.parametrize(
    ("name", "kind", "step"),
    [
        ("FunctionAgent.run", "CHAIN", "workflow"),
        ("AgentWorkflow.run", "CHAIN", "workflow"),
        ("MyRetrievalFlow.run", "CHAIN", "chain"),  # the user's own workflow
        ("BaseWorkflowAgent.run_agent_step", "CHAIN", "turn"),
        ("BaseWorkflowAgent.call_tool", "CHAIN", "chain"),
        ("Ollama._prepare_chat_with_tools", "LLM", "other"),
        ("Ollama.predict", "LLM", "chain"),  # the chat call inside it is the model call
        ("Ollama.astream_structured_predict", "LLM", "chain"),
        ("Ollama.astream_chat", "LLM", "llm"),
        ("FunctionTool.acall", "TOOL", "tool"),
        ("ReActOutputParser.parse", "CHAIN", "parse"),
        ("MyReActParser.parse", "CHAIN", "chain"),  # not an output parser's
        ("ReActOutputParser.format", "CHAIN", "chain"),
    ],
)
def test_openinference_llama_index_steps(name: str, kind: str, step: str) -> None:
    span = TraceBuilder(scope=llama_index.OI_SCOPE).span(name, {"openinference.span.kind": kind})
    assert classify(span) == step


def test_the_rules_stay_in_llama_index_spans() -> None:
    """Another OpenInference instrumentation's spans of the same names are read as before."""
    trace = TraceBuilder(scope="openinference.instrumentation.langchain")
    prepare = trace.span("Ollama._prepare_chat_with_tools", {"openinference.span.kind": "LLM"})
    step = trace.span("BaseWorkflowAgent.run_agent_step", {"openinference.span.kind": "CHAIN"})
    parse = trace.span("ReActOutputParser.parse", {"openinference.span.kind": "CHAIN"})
    task = trace.span(
        "ReActOutputParser.task", {"traceloop.span.kind": "task"}, scope="traceloop.sdk"
    )
    assert [classify(s) for s in (prepare, step, parse, task)] == ["llm", "chain", "chain", "chain"]


def test_openllmetry_llama_index_steps() -> None:
    trace = TraceBuilder(scope=llama_index.OL_SCOPE)
    parse = trace.span("ReActOutputParser.task", {"traceloop.span.kind": "task"})
    agent = trace.span("ReActAgent.workflow", {"traceloop.span.kind": "workflow"})
    # A query engine's (an index's...) top span is no agent run.
    engine = trace.span("RetrieverQueryEngine.workflow", {"traceloop.span.kind": "workflow"})
    retriever = trace.span("VectorIndexRetriever.task", {"traceloop.span.kind": "task"})
    kinds = [classify(s) for s in (parse, agent, engine, retriever)]
    assert kinds == ["parse", "workflow", "chain", "retrieval"]


ACTION: JsonValue = {"thought": "I need it.", "action": "get_weather", "action_input": {"c": 1}}
ANSWER: JsonValue = {"thought": "Done.", "response": "Lima is sunny.", "is_streaming": False}


@pytest.mark.parametrize(
    ("value", "read"),
    [
        (ACTION, ReadReply(call=("get_weather", {"c": 1}))),
        (ANSWER, ReadReply(answer="Lima is sunny.")),
        ({"thought": "t", "response": ""}, ReadReply(answer="")),
        # An observation step, a structured output, a call without a name or input:
        ({"observation": "sunny", "return_direct": False}, None),
        ({"name": "x", "response": "y"}, None),
        ({"thought": "t", "action": "", "action_input": {}}, None),
        ({"thought": "t", "action": "get_weather"}, None),
        ({"thought": "t", "response": 3}, None),
        ("Answer: x", None),
    ],
)
def test_reasoning_step(value: JsonValue, read: ReadReply | None) -> None:
    assert llama_index.reasoning_step(value) == read


def test_a_read_reply_applied() -> None:
    text = TextPart(text="Thought: I need it.\nAction: get_weather")
    blob = OtherPart(type="blob", data="x")
    reply = Message(role="assistant", parts=(text, blob))
    with_call = ReadReply(call=("get_weather", {"c": 1})).applied_to(reply)
    assert with_call.parts == (text, blob, ToolCallPart(name="get_weather", args={"c": 1}))
    answered = ReadReply(answer="Lima is sunny.").applied_to(reply)
    assert answered.parts == (TextPart(text="Lima is sunny."), blob)
    # A reply with calls of its own is the model's word: the parse adds nothing.
    called = Message(role="assistant", parts=(ToolCallPart(name="t", args={}),))
    assert ReadReply(call=("get_weather", {})).applied_to(called) is called
    assert ReadReply(answer="x").applied_to(called) is called
    assert ReadReply().applied_to(reply) is reply


def _react_run(
    replies: list[tuple[str, JsonValue]], *, parse_elsewhere: bool = False
) -> list[SpanRecord]:
    """A ReActAgent run as OpenInference writes it: per step, the model call and the
    parse of its reply (``None``: a parse that failed), a tool span after a call."""
    chain = {"openinference.span.kind": "CHAIN"}
    trace = TraceBuilder(scope=llama_index.OI_SCOPE)
    run = trace.span("ReActAgent.run", chain)
    for text, parsed in replies:
        step = trace.span(
            "BaseWorkflowAgent.run_agent_step",
            {**chain, "input.value": '{"ev": "AgentSetup(current_agent_name=\'react\')"}'},
            parent=run,
        )
        trace.span(
            "Ollama.astream_chat",
            {
                "openinference.span.kind": "LLM",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": "Weather in Lima?",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": text,
            },
            parent=step,
        )
        attrs = dict(chain)
        if parsed is not None:
            attrs["output.value"] = to_json(parsed)
            attrs["output.mime_type"] = "application/json"
        trace.span(
            "ReActOutputParser.parse",
            attrs,
            parent=run if parse_elsewhere else step,
            error=None if parsed is not None else "Could not parse output",
        )
        if isinstance(parsed, dict) and "action" in parsed:
            trace.span(
                "FunctionTool.acall",
                {
                    "openinference.span.kind": "TOOL",
                    "tool.name": "get_weather",
                    "input.value": '{"kwargs": {"c": 1}}',
                    "output.value": "sunny",
                },
                parent=run,
            )
    return trace.spans


CALL_TEXT = "Thought: I need it.\nAction: get_weather\nAction Input: {...}"
ANSWER_TEXT = "Thought: Done.\nAnswer: Lima is sunny."


def test_a_react_run_reads_each_reply_as_its_parser_did() -> None:
    [inv] = build_invocations(_react_run([(CALL_TEXT, ACTION), (ANSWER_TEXT, ANSWER)]))
    [call] = inv.tool_calls
    assert (call.name, call.args, call.result) == ("get_weather", {"c": 1}, "sunny")
    assert [t.text for t in inv.intermediate_responses] == [CALL_TEXT]
    assert inv.final_response == "Lima is sunny."
    assert inv.warnings == ()


def test_a_failed_parse_leaves_the_reply_as_written() -> None:
    """LlamaIndex asks the model again after a reply it could not parse."""
    [inv] = build_invocations(
        _react_run([("Lima?", None), (CALL_TEXT, ACTION), (ANSWER_TEXT, ANSWER)])
    )
    assert [t.text for t in inv.intermediate_responses] == ["Lima?", CALL_TEXT]
    assert inv.final_response == "Lima is sunny."


def test_a_parse_beside_no_model_call_reads_none() -> None:
    """A parse span that is not in the model call's step (an output parser run on text
    of the user's own) changes nothing: the call comes from its tool span, placed."""
    [inv] = build_invocations(
        _react_run([(CALL_TEXT, ACTION), (ANSWER_TEXT, ANSWER)], parse_elsewhere=True)
    )
    assert inv.final_response == ANSWER_TEXT
    [warning] = inv.warnings
    assert "placed by its start time" in warning


def test_a_turn_names_the_steps_after_it_beside_it() -> None:
    """OpenLLMetry writes a LlamaIndex agent's steps side by side under the workflow: the
    step whose event names the agent, then its model call, then its tool calls. Each
    step is the agent's the last turn before it named; none before the first turn."""
    trace = TraceBuilder(scope=llama_index.OL_SCOPE)
    task = {"traceloop.span.kind": "task"}
    workflow = trace.span("AgentWorkflow.workflow", {"traceloop.span.kind": "workflow"})

    def turn(agent: str) -> None:
        named = {"input": [], "current_agent_name": agent}
        trace.span(
            "BaseWorkflowAgent.task",
            {**task, "traceloop.entity.output": to_json(named)},
            parent=workflow,
        )

    def model() -> None:
        step = trace.span("BaseWorkflowAgent.task", task, parent=workflow)
        trace.span("Ollama.task", {**task, "gen_ai.operation.name": "chat"}, parent=step)

    def call(tool: str) -> None:
        trace.span("BaseWorkflowAgent.task", {**task, "tool.name": tool}, parent=workflow)

    call("before_any_turn")
    turn("triage")
    model()
    call("handoff")
    turn("weather")
    model()
    call("get_weather")
    [run] = split_runs(trace.spans)
    assert run.agents == ["triage", "weather"]
    assert [s.agent for s in run.llm_steps] == ["triage", "weather"]
    assert [(s.view.span.attributes["tool.name"], s.agent) for s in run.tool_steps] == [
        ("before_any_turn", None),
        ("handoff", "triage"),
        ("get_weather", "weather"),
    ]


@pytest.mark.parametrize(
    ("value", "question"),
    [
        ("What is the weather in Lima?", "What is the weather in Lima?"),
        ({"str_or_query_bundle": "Lima?"}, "Lima?"),
        ({"str_or_query_bundle": {"query_str": "Lima?", "embedding": None}}, "Lima?"),
        ({"query_bundle": {"query_str": "Lima?", "image_path": None}}, "Lima?"),
        ({"message": "And Oslo?", "chat_history": []}, "And Oslo?"),
        # Blank, not a text, nested deeper than a QueryBundle, or none of the arguments:
        ({"message": "  "}, None),
        ({"message": 3}, None),
        ({"message": {"message": {"message": "x"}}}, None),
        ({"text": "Lima?"}, None),
        (["Lima?"], None),
        (None, None),
    ],
)
def test_engine_question(value: JsonValue, question: str | None) -> None:
    assert llama_index.engine_question(value) == question


@pytest.mark.parametrize(
    ("name", "methods", "engine"),
    [
        ("RetrieverQueryEngine.query", llama_index.ENGINE_CALLS, True),
        ("CondensePlusContextChatEngine.achat", llama_index.ENGINE_CALLS, True),
        ("RetrieverQueryEngine._query", llama_index.ENGINE_CALLS, False),  # inside the call
        ("VectorIndexRetriever.retrieve", llama_index.ENGINE_CALLS, False),
        ("RetrieverQueryEngine.workflow", {"workflow"}, True),
        ("RetrieverQueryEngine.task", {"workflow"}, False),
        ("FunctionAgent.workflow", {"workflow"}, False),
    ],
)
def test_is_engine_call(name: str, methods: frozenset[str], engine: bool) -> None:
    span = TraceBuilder().span(name)
    assert llama_index.is_engine_call(span, methods) is engine


TEMPLATE = "Context information is below.\nLima: sunny.\nQuery: What is the weather in Lima?"


def _engine_run(scope: str, engine: str, question: dict[str, AttrValue]) -> list[SpanRecord]:
    """A query engine asked under an HTTP server span: the engine's call, a retrieval, the
    model call (the question in its template), then a second engine call after it: its
    question is no answer for the first call, which comes before it."""
    trace = TraceBuilder()
    http = trace.span("POST /ask", {"http.request.method": "POST"})
    call = trace.span(engine, question, parent=http, scope=scope)
    trace.span(
        "VectorIndexRetriever.retrieve",
        {"openinference.span.kind": "RETRIEVER", "input.value": "not the question"},
        parent=call,
        scope=scope,
    )
    trace.span(
        "Ollama.chat",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": to_json(
                [{"role": "user", "parts": [{"type": "text", "content": TEMPLATE}]}]
            ),
            "gen_ai.output.messages": to_json(
                [{"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}]}]
            ),
        },
        parent=call,
        scope=scope,
    )
    trace.span(engine, {**question, "input.value": "a later question"}, parent=http, scope=scope)
    return trace.spans


@pytest.mark.parametrize(
    ("scope", "engine", "question"),
    [
        (
            llama_index.OI_SCOPE,
            "RetrieverQueryEngine.query",
            {"openinference.span.kind": "CHAIN", "input.value": "What is the weather in Lima?"},
        ),
        (
            llama_index.OI_SCOPE,
            "ContextChatEngine.chat",
            {
                "openinference.span.kind": "CHAIN",
                "input.value": '{"message": "What is the weather in Lima?"}',
                "input.mime_type": "application/json",
            },
        ),
        (
            llama_index.OL_SCOPE,
            "RetrieverQueryEngine.workflow",
            {
                "traceloop.span.kind": "workflow",
                "traceloop.entity.input": '{"str_or_query_bundle": "What is the weather in Lima?"}',
            },
        ),
    ],
)
def test_a_run_without_agents_is_asked_what_its_engine_was(
    scope: str, engine: str, question: dict[str, AttrValue]
) -> None:
    [inv] = build_invocations(_engine_run(scope, engine, question))
    assert inv.user_content == "What is the weather in Lima?"
    assert inv.provenance["user_content"] in ("input.value", "traceloop.entity.input")
    assert inv.final_response == "Sunny."


@pytest.mark.parametrize(
    ("scope", "question"),
    [
        # Hidden by OPENINFERENCE_HIDE_INPUTS:
        (llama_index.OI_SCOPE, {"openinference.span.kind": "CHAIN", "input.value": "__REDACTED__"}),
        # Arguments that hold no question:
        (
            llama_index.OI_SCOPE,
            {
                "openinference.span.kind": "CHAIN",
                "input.value": '{"unrelated": 1}',
                "input.mime_type": "application/json",
            },
        ),
        # A span of that name from another instrumentation:
        (
            "openinference.instrumentation.langchain",
            {"openinference.span.kind": "CHAIN", "input.value": "What is the weather in Lima?"},
        ),
    ],
)
def test_without_the_question_the_model_input_is_the_user_text(
    scope: str, question: dict[str, AttrValue]
) -> None:
    [inv] = build_invocations(_engine_run(scope, "RetrieverQueryEngine.query", question))
    assert inv.user_content == TEMPLATE


def test_a_plain_text_question_that_looks_like_json_is_kept_as_text() -> None:
    """OpenInference writes a text argument as is, with no mime type: JSON-looking text
    is still the question."""
    asked = '{"city": "Lima"}'
    attrs: dict[str, AttrValue] = {"openinference.span.kind": "CHAIN", "input.value": asked}
    [inv] = build_invocations(
        _engine_run(llama_index.OI_SCOPE, "RetrieverQueryEngine.query", attrs)
    )
    assert inv.user_content == asked


def _node(text: object) -> str:
    return to_json({"node": {"id_": "n", "text": text, "metadata": {}}, "score": 0.5})


@pytest.mark.parametrize(
    ("value", "texts"),
    [
        ([_node("Lima: sunny."), _node("Oslo: rain.")], ["Lima: sunny.", "Oslo: rain."]),
        ([{"node": {"text": "as an object"}, "score": 1.0}], ["as an object"]),
        # Nodes without text (an image node), blank, cut short, not a node:
        ([_node(None), _node("  "), _node("x")[:20], '"text"', 3], []),
        ([], []),
        ({"node": {"text": "x"}}, None),
        ("Lima: sunny.", None),
    ],
)
def test_node_texts(value: JsonValue, texts: list[str] | None) -> None:
    assert llama_index.node_texts(value) == texts


def test_is_retriever() -> None:
    trace = TraceBuilder(scope=llama_index.OL_SCOPE)
    assert llama_index.is_retriever(trace.span("BM25Retriever.task"), "task")
    assert not llama_index.is_retriever(trace.span("BM25Retriever.workflow"), "task")
    assert not llama_index.is_retriever(trace.span("RetrieverQueryEngine.task"), "task")


def test_a_predict_is_read_by_the_call_inside_it() -> None:
    """``llm.predict(template, **values)`` formats the prompt and calls ``chat``; both are
    OpenInference LLM spans. The outer one's input is the template object's repr, the
    inner one's the messages the model got: the run is read from the inner one."""
    trace = TraceBuilder(scope=llama_index.OI_SCOPE)
    template = "PromptTemplate(metadata={...}, template_vars=['city'], kwargs={'city': 'Lima'})"
    predict = trace.span(
        "Ollama.predict",
        {
            "openinference.span.kind": "LLM",
            "input.value": to_json({"prompt": template}),
            "input.mime_type": "application/json",
            "output.value": "Sunny.",
        },
    )
    trace.span(
        "Ollama.chat",
        {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "Tell me about the weather in Lima.",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "Sunny.",
            "llm.token_count.prompt": 12,
            "llm.token_count.completion": 2,
        },
        parent=predict,
    )
    [inv] = build_invocations(trace.spans)
    assert inv.user_content == "Tell me about the weather in Lima."
    assert (inv.final_response, inv.inference_calls) == ("Sunny.", 1)
    assert (inv.usage.input_tokens, inv.usage.output_tokens) == (12, 2)
