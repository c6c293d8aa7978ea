"""LlamaIndex shapes: agent names in event reprs, tool arguments and outputs."""

from __future__ import annotations

import pytest
from conv_helpers import TraceBuilder

from tracescore.conventions import llama_index
from tracescore.conventions.messages import JsonValue
from tracescore.conventions.registry import classify


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
        ("Ollama.astream_chat", "LLM", "llm"),
        ("FunctionTool.acall", "TOOL", "tool"),
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
    assert (classify(prepare), classify(step)) == ("llm", "chain")
