"""How a Strands run ended, from its ``invoke_agent`` span (tracescore.conventions.strands)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tracescore.conventions.base import SpanView
from tracescore.conventions.strands import SCOPE, Strands, stop
from tracescore.spans import AttrValue, SpanEvent, SpanRecord

READER = Strands()
INTERRUPTS = (
    "[{'id': 'v1:before_tool_call:i1:d5', 'name': 'approve_lookup', 'reason': 'APPROVAL',"
    " 'response': None}, {'id': 'v1:tool_call:r1:1d', 'name': \"it's me\", 'reason': None,"
    " 'response': None}]"
)


def _run(
    attributes: dict[str, AttrValue] | None = None,
    events: list[SpanEvent] | None = None,
    *,
    scope: str = SCOPE,
    name: str = "invoke_agent order_agent",
) -> SpanView:
    span = SpanRecord(
        trace_id="1" * 32,
        span_id="2" * 16,
        parent_span_id=None,
        name=name,
        attributes={"gen_ai.operation.name": "invoke_agent", **(attributes or {})},
        events=events or [],
        scope=scope,
    )
    return SpanView(span)


def _legacy(text: str, reason: str) -> SpanView:
    """The default mode: a ``gen_ai.choice`` event."""
    return _run(
        events=[
            SpanEvent(name="gen_ai.choice", attributes={"message": text, "finish_reason": reason})
        ]
    )


def _messages(text: str, reason: str) -> str:
    parts = [{"type": "text", "content": text}]
    return json.dumps([{"role": "assistant", "parts": parts, "finish_reason": reason}])


def _latest(text: str, reason: str) -> SpanView:
    """``gen_ai_latest_experimental``: an operation-details event."""
    details = SpanEvent(
        name="gen_ai.client.inference.operation.details",
        attributes={"gen_ai.output.messages": _messages(text, reason)},
    )
    inputs = SpanEvent(
        name="gen_ai.client.inference.operation.details",
        attributes={"gen_ai.input.messages": "[]"},
    )
    return _run(events=[inputs, details])


def _attributes(text: str, reason: str) -> SpanView:
    """``gen_ai_span_attributes_only``."""
    return _run({"gen_ai.output.messages": _messages(text, reason)})


def _openinference(text: str, reason: str) -> SpanView:
    """OpenInference's span processor for Strands."""
    return _run(
        {
            "llm.output_messages.0.message.content": text,
            "llm.output_messages.0.message.finish_reason": reason,
            "output.value": text,
        }
    )


FORMS = [_legacy, _latest, _attributes, _openinference]


@pytest.mark.parametrize("form", FORMS)
def test_each_content_mode_states_the_result_and_stop_reason(form: Any) -> None:
    ended = stop(form('{"city":"Paris"}', "tool_use"))
    assert ended is not None
    assert (ended.text, ended.reason) == ('{"city":"Paris"}', "tool_use")


@pytest.mark.parametrize("form", FORMS)
def test_a_structured_output_is_the_final_output(form: Any) -> None:
    found = READER.final_output(form('{"city":"Paris","sky":"sunny"}', "tool_use"))
    assert found is not None
    assert found.value == '{"city":"Paris","sky":"sunny"}'
    assert READER.paused_for(form("x", "tool_use")) is None
    assert READER.stopped_by(form("x", "tool_use")) is None


@pytest.mark.parametrize("form", FORMS)
def test_an_interrupted_run_waits_on_its_interrupts_by_name(form: Any) -> None:
    view = form(INTERRUPTS, "interrupt")
    assert READER.paused_for(view) == "Strands interrupt approve_lookup, it's me"
    assert READER.final_output(view) is None  # the interrupts' list is no answer
    assert READER.stopped_by(view) is None


def test_interrupts_without_names_and_a_checkpoint_are_pauses_too() -> None:
    assert READER.paused_for(_legacy("", "interrupt")) == "Strands interrupt"
    assert READER.paused_for(_legacy("", "checkpoint")) == "Strands checkpoint"


@pytest.mark.parametrize(
    ("reason", "says"),
    [
        ("limit_turns", "it reached its turn limit (limits['turns'])"),
        ("limit_total_tokens", "it reached its token limit (limits['total_tokens'])"),
        ("limit_output_tokens", "it reached its output token limit (limits['output_tokens'])"),
        ("cancelled", "it was cancelled (agent.cancel() or its cancel_signal)"),
    ],
)
@pytest.mark.parametrize("form", FORMS)
def test_a_run_strands_stopped_has_the_stop_as_its_error(form: Any, reason: str, says: str) -> None:
    view = form("", reason)
    assert READER.stopped_by(view) == f"Strands stopped the run: {says}; stop reason {reason}"
    assert READER.final_output(view) is None
    assert READER.paused_for(view) is None


@pytest.mark.parametrize(
    "view",
    [
        _legacy("", "end_turn"),  # no text
        _legacy("   ", "end_turn"),
        _run(),  # no result stated
        _run({"gen_ai.output.messages": "not json"}),
        _run({"gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": "x"}])}),
        _run({"gen_ai.output.messages": json.dumps(["text"])}),
        _run({"gen_ai.output.messages": "[]"}),
    ],
)
def test_no_text_is_no_final_output(view: SpanView) -> None:
    assert READER.final_output(view) is None
    assert READER.paused_for(view) is None
    assert READER.stopped_by(view) is None


@pytest.mark.parametrize(
    "view",
    [
        _run({"llm.output_messages.0.message.content": INTERRUPTS}, scope="other.scope"),
        _run(
            {
                "llm.output_messages.0.message.content": INTERRUPTS,
                "llm.output_messages.0.message.finish_reason": "interrupt",
            },
            name="execute_event_loop_cycle",
        ),
    ],
)
def test_only_a_strands_agent_span_is_read(view: SpanView) -> None:
    assert stop(view) is None
    assert READER.paused_for(view) is None


def test_the_text_of_every_text_part_and_a_missing_reason() -> None:
    parts = [{"type": "text", "content": "a"}, {"type": "thinking", "content": "t"}]
    parts.append({"type": "text", "content": "b"})
    view = _run({"gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}])})
    ended = stop(view)
    assert ended is not None
    assert (ended.text, ended.reason, ended.source) == ("ab", None, "gen_ai.output.messages")
    found = READER.final_output(view)
    assert found is not None and found.value == "ab"
