"""OpenAI Agents SDK calls held for approval (tracescore.conventions.openai_agents).

Spec-shaped spans of both instrumentations; the real SDK's runs are in
``test_openai_agents_real`` (OpenInference) and ``test_openai_agents_openllmetry``.
"""

from __future__ import annotations

from typing import Any

import pytest

from spanbuilder import TraceBuilder
from tracescore.conventions.openai_agents import (
    OI_SCOPE,
    OPENLLMETRY_SCOPE,
    error_text,
    held_for_approval,
)
from tracescore.spans import STATUS_ERROR

_OI_HELD = {"openinference.span.kind": "TOOL", "tool.name": "refund", "input.value": "{}"}
_OL_HELD = {"gen_ai.tool.name": "refund", "gen_ai.tool.call.arguments": '{"order": "42"}'}


@pytest.mark.parametrize(("scope", "attrs"), [(OI_SCOPE, _OI_HELD), (OPENLLMETRY_SCOPE, _OL_HELD)])
def test_a_tool_span_with_arguments_and_no_result_is_held(
    scope: str, attrs: dict[str, Any]
) -> None:
    span = TraceBuilder().span("refund", attrs=attrs, scope=scope)
    assert held_for_approval(span) == "refund"


@pytest.mark.parametrize(
    ("scope", "attrs", "status"),
    [
        (OI_SCOPE, {**_OI_HELD, "output.value": "refunded 42"}, 0),  # it ran
        (OPENLLMETRY_SCOPE, {**_OL_HELD, "gen_ai.tool.call.result": "refunded 42"}, 0),
        (OI_SCOPE, _OI_HELD, STATUS_ERROR),  # it raised
        (OI_SCOPE, {"openinference.span.kind": "TOOL", "tool.name": "refund"}, 0),  # hidden
        (OPENLLMETRY_SCOPE, {"gen_ai.tool.name": "refund"}, 0),
        (OI_SCOPE, {**_OI_HELD, "openinference.span.kind": "LLM"}, 0),  # no tool span
        (OI_SCOPE, {**_OI_HELD, "tool.name": ""}, 0),
        ("openinference.instrumentation.langchain", _OI_HELD, 0),  # another framework's
    ],
)
def test_anything_else_is_not(scope: str, attrs: dict[str, Any], status: int) -> None:
    span = TraceBuilder().span("refund", attrs=attrs, scope=scope, status=status)
    assert held_for_approval(span) is None


@pytest.mark.parametrize(
    ("scope", "message", "read"),
    [
        (
            OPENLLMETRY_SCOPE,
            "{'message': 'Max turns exceeded', 'data': {'max_turns': 1}}",
            "Max turns exceeded: {'max_turns': 1}",
        ),
        (
            OPENLLMETRY_SCOPE,
            "{'message': 'Error in agent run', 'data': None}",
            "Error in agent run",
        ),
        # Anything else stays as written: no dict, no message, not a literal, too long.
        (OPENLLMETRY_SCOPE, "{'message': 1}", "{'message': 1}"),
        (OPENLLMETRY_SCOPE, "{'message': 'x', 'data': f()}", "{'message': 'x', 'data': f()}"),
        (OPENLLMETRY_SCOPE, "{'message': 'x'", "{'message': 'x'"),
        (OPENLLMETRY_SCOPE, "Error code: 500", "Error code: 500"),
        (OI_SCOPE, "{'message': 'x', 'data': None}", "{'message': 'x', 'data': None}"),
        (OPENLLMETRY_SCOPE, "{'message': '" + "x" * 20_000 + "'}", None),
    ],
)
def test_error_text(scope: str, message: str, read: str | None) -> None:
    span = TraceBuilder().span("billing.agent", scope=scope, status=STATUS_ERROR)
    span.status_message = message
    assert error_text(span) == (message if read is None else read)
