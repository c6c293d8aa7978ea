"""agno's paused runs under OpenInference (tracescore.conventions.agno)."""

from __future__ import annotations

import pytest

from tracescore.conventions.agno import SCOPE, paused_for
from tracescore.conventions.base import SpanView
from tracescore.conventions.openinference import OpenInference
from tracescore.spans import AttrValue, SpanRecord


def _span(output: AttrValue, *, scope: str = SCOPE, kind: str = "AGENT") -> SpanRecord:
    return SpanRecord(
        trace_id="1" * 32,
        span_id="2" * 16,
        parent_span_id=None,
        name="refunder.run",
        attributes={"openinference.span.kind": kind, "output.value": output},
        scope=scope,
    )


@pytest.mark.parametrize(
    ("output", "waits"),
    [
        (
            "I have tools to execute, but I need confirmation.",
            "agno: I have tools to execute, but I need confirmation",
        ),
        (
            "I have tools to execute, but I need confirmation, user input, or external execution.",
            "agno: I have tools to execute, but I need confirmation, user input, or external"
            " execution",
        ),
        (
            "I have tools to execute, but it needs external execution.",
            "agno: I have tools to execute, but it needs external execution",
        ),
        (
            "Team run paused. The following require input:\n- billing: refund requires"
            " confirmation",
            "agno: Team run paused (billing: refund requires confirmation)",
        ),
        ("Team run paused.", "agno: Team run paused"),
    ],
)
def test_agno_s_sentence_for_a_paused_run_is_a_pause(output: str, waits: str) -> None:
    assert paused_for(_span(output)) == waits
    assert OpenInference().paused_for(SpanView(_span(output))) == waits


@pytest.mark.parametrize(
    "span",
    [
        _span("Order 4 is refunded."),
        _span("I have tools to execute, but I need confirmation. Sorry!"),  # the model's own
        _span("I have tools to execute, but I need confirmation.", kind="LLM"),
        _span("I have tools to execute, but I need confirmation.", scope="other"),
        _span(None),
        _span(3),
    ],
)
def test_anything_else_is_no_pause(span: SpanRecord) -> None:
    assert paused_for(span) is None
    assert OpenInference().paused_for(SpanView(span)) is None
