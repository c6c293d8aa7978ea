"""smolagents' spans (tracescore.conventions.smolagents): a tool's ``Tool.__call__``
arguments, a managed agent's run as its manager's call."""

from __future__ import annotations

from typing import Any

import pytest

from tracescore.conventions.smolagents import SCOPE, failed_step, managed_call, tool_args
from tracescore.spans import STATUS_ERROR, STATUS_OK, SpanRecord

INPUTS = {"city": {"type": "string"}, "days": {"type": "integer"}}


@pytest.mark.parametrize(
    ("bound", "expected"),
    [
        # keyword arguments, as a ToolCallingAgent's calls and most code pass them
        (
            {"args": [], "sanitize_inputs_outputs": False, "kwargs": {"city": "Oslo"}},
            {"city": "Oslo"},
        ),
        # positional ones, named by the tool's inputs in order
        (
            {"args": ["Oslo", 2], "sanitize_inputs_outputs": False, "kwargs": {}},
            {"city": "Oslo", "days": 2},
        ),
        ({"args": ["Oslo"], "kwargs": {"days": 3}}, {"city": "Oslo", "days": 3}),
        # a lone dict of the tool's inputs is its keyword arguments, as __call__ takes it
        ({"args": [{"city": "Oslo"}], "kwargs": {}}, {"city": "Oslo"}),
    ],
)
def test_bound_arguments_become_the_call_s(bound: dict[str, Any], expected: Any) -> None:
    assert tool_args(bound, INPUTS) == expected


@pytest.mark.parametrize(
    "bound",
    [
        {"args": ["Oslo", 2, "extra"], "kwargs": {}},  # more than the tool has names for
        {"args": ["Oslo"], "kwargs": {}, "other": 1},  # not __call__'s bound arguments
        {"args": "Oslo", "kwargs": {}},
        {"city": "Oslo"},
        ["Oslo"],
        "Oslo",
    ],
)
def test_anything_else_is_kept_as_it_is(bound: Any) -> None:
    assert tool_args(bound, INPUTS) == bound


def test_a_lone_dict_that_is_not_the_inputs_is_the_first_argument() -> None:
    bound: dict[str, Any] = {"args": [{"place": "Oslo"}], "kwargs": {}}
    assert tool_args(bound, INPUTS) == {"city": {"place": "Oslo"}}
    assert tool_args({"args": ["Oslo"], "kwargs": {}}, None) == {"args": ["Oslo"], "kwargs": {}}


def test_a_managed_agent_s_run_is_its_manager_s_call() -> None:
    def run(output: object) -> SpanRecord:
        attrs: dict[str, Any] = {"openinference.span.kind": "AGENT", "output.value": output}
        return SpanRecord(
            trace_id="1" * 32,
            span_id="2" * 16,
            parent_span_id="3" * 16,
            name="researcher.run",
            attributes=attrs,
            scope=SCOPE,
        )

    io = managed_call(run("Nice: sunny."))
    assert (io.name, io.call_id, io.args) == ("researcher", None, None)
    assert io.result is not None and io.result.value == "Nice: sunny."
    assert managed_call(run(None)).result is None


def _step(
    status_message: str | None,
    *,
    scope: str = SCOPE,
    code: int = STATUS_ERROR,
    kind: str = "CHAIN",
) -> SpanRecord:
    return SpanRecord(
        trace_id="1" * 32,
        span_id="2" * 16,
        parent_span_id="3" * 16,
        name="Step 1",
        attributes={"openinference.span.kind": kind},
        status_code=code,
        status_message=status_message,
        scope=scope,
    )


_UNKNOWN = "AgentToolExecutionError: Unknown tool get_wether, should be one of: get_weather."


def test_a_failed_step_states_its_error() -> None:
    assert failed_step(_step(_UNKNOWN)) == _UNKNOWN


@pytest.mark.parametrize(
    "span",
    [
        _step(_UNKNOWN, code=STATUS_OK),
        _step(_UNKNOWN, scope="openinference.instrumentation.openai"),
        _step(_UNKNOWN, kind="AGENT"),  # the run, not a step
        _step(None),
        _step(""),
    ],
)
def test_any_other_span_states_no_step_error(span: SpanRecord) -> None:
    assert failed_step(span) is None
