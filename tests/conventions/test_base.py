"""The rebuild's small records (msgspec Structs): fresh defaults, values, copies, pickling."""

from __future__ import annotations

import pickle

from msgspec.structs import replace

from tracescore.conventions.base import Found, SpanView
from tracescore.conventions.messages import Message, TextPart, ToolCallPart
from tracescore.run_records import AgentRun, LlmStep, ToolStep
from tracescore.spans import SpanRecord


def _span(span_id: str) -> SpanRecord:
    return SpanRecord(trace_id="1" * 32, span_id=span_id, parent_span_id=None, name="s")


def test_each_view_gets_its_own_logs_warnings_and_cache() -> None:
    first, second = SpanView(_span("a" * 16)), SpanView(_span("b" * 16))
    first.warnings.append("cut at 64 KiB")
    first.cache["payload"] = {"x": 1}
    assert second.warnings == []
    assert second.cache == {}
    assert first.logs is not second.logs
    assert first.cached("payload", dict) == {"x": 1}  # computed once, kept per view
    assert second.cached("payload", lambda: {"y": 2}) == {"y": 2}


def test_each_run_and_step_gets_its_own_lists() -> None:
    root = _span("a" * 16)
    one, two = AgentRun(root=root), AgentRun(root=root)
    one.spans.append(root)
    one.agents.append("planner")
    assert (two.spans, two.agents, two.llm_steps, two.tool_steps) == ([], [], [], [])
    view = SpanView(root)
    llm_a, llm_b = LlmStep(view, "planner"), LlmStep(view, None)
    llm_a.nested.append(view)
    assert llm_b.nested == []
    assert llm_a.views == [view, view]
    tool_a, tool_b = ToolStep(view, None), ToolStep(view, None)
    tool_a.nested.append(root)
    assert tool_b.nested == []


def test_messages_compare_copy_and_pickle_by_value() -> None:
    message = Message(
        role="model",
        parts=(TextPart(text="Looking it up."), ToolCallPart(name="lookup", args={"q": "ü"})),
    )
    same = Message(
        role="model",
        parts=(TextPart(text="Looking it up."), ToolCallPart(name="lookup", args={"q": "ü"})),
    )
    assert message == same
    assert message != Message(role="user", parts=message.parts)
    assert pickle.loads(pickle.dumps(message)) == message
    answered = replace(message, parts=(TextPart(text="Done."),))
    assert answered.text() == "Done."
    assert message.text() == "Looking it up."  # the original is untouched
    assert [call.name for call in message.tool_calls()] == ["lookup"]
    args = Found({"a": 1}, "gen_ai.tool.call.arguments")
    assert args.truncated is False  # a value read whole unless a reader says it was cut
    assert args != Found({"a": 1}, "gcp.vertex.agent.tool_call_args")  # where it came from counts
    assert pickle.loads(pickle.dumps(args)) == args
