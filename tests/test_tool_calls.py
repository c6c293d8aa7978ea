"""Pairing calls with the results fed back to the model (tracescore.tool_calls)."""

from __future__ import annotations

import pytest

from tracescore.conventions.messages import JsonValue, ToolResultPart
from tracescore.model import ToolCall
from tracescore.tool_calls import _pair_results


def _paired(call: ToolCall, result: JsonValue, *, failed: bool) -> ToolCall:
    calls = [call]
    provenance: dict[str, str] = {}
    fed_back = [ToolResultPart(name="t", response=result, id="c1", failed=failed)]
    _pair_results(calls, [0], fed_back, "llm.input_messages", provenance)
    return calls[0]


def test_a_failed_result_is_the_error_of_a_call_no_span_answered() -> None:
    """A call the framework refused without running it (agno's tool-call limit)."""
    paired = _paired(ToolCall(name="t", id="c1"), "Tool call limit reached.", failed=True)
    assert (paired.result, paired.error) == ("Tool call limit reached.", "Tool call limit reached.")


def test_a_failed_result_that_is_no_text_still_fails_the_call() -> None:
    paired = _paired(ToolCall(name="t", id="c1"), {"code": 7}, failed=True)
    assert (paired.result, paired.error) == ({"code": 7}, "error")


@pytest.mark.parametrize(
    ("call", "error"),
    [
        # Its span ran it: the span says how it went.
        (ToolCall(name="t", id="c1", span_id="5" * 16), None),
        (ToolCall(name="t", id="c1", span_id="5" * 16, error="Boom"), "Boom"),
        # An error already known stays.
        (ToolCall(name="t", id="c1", error="TimeoutError"), "TimeoutError"),
    ],
)
def test_a_span_or_a_known_error_keeps_its_verdict(call: ToolCall, error: str | None) -> None:
    assert _paired(call, "refused", failed=True).error == error


def test_a_result_not_marked_failed_is_only_a_result() -> None:
    paired = _paired(ToolCall(name="t", id="c1"), "sunny", failed=False)
    assert (paired.result, paired.error) == ("sunny", None)
