"""smolagents' spans (tracescore.conventions.smolagents): a tool's ``Tool.__call__``
arguments, a managed agent's run as its manager's call."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tracescore.conventions.smolagents import (
    SCOPE,
    failed_step,
    managed_call,
    managed_task,
    tool_args,
)
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
    assert (io.name, io.call_id, io.args) == ("researcher", None, None)  # no task captured
    assert io.result is not None and io.result.value == "Nice: sunny."
    assert managed_call(run(None)).result is None


def _templated(task: str, name: str = "researcher") -> str:
    """smolagents 1.26's ``managed_agent`` task template, filled in."""
    return (
        f"You're a helpful agent named '{name}'.\nYou have been submitted this task by your"
        f" manager.\n---\nTask:\n{task}\n---\nYou're helping your manager solve a wider"
        " task: so make sure to not provide a one-line answer, but give as much information"
        " as possible to give them a clear understanding of the answer."
    )


def _run_of(task: object, name: str = "researcher.run") -> SpanRecord:
    value = orjson.dumps({"task": task, "stream": False}).decode()
    attrs: dict[str, Any] = {"openinference.span.kind": "AGENT", "input.value": value}
    return SpanRecord(
        trace_id="1" * 32,
        span_id="2" * 16,
        parent_span_id=None,
        name=name,
        attributes=attrs,
        scope=SCOPE,
    )


@pytest.mark.parametrize(
    "task", ["Weather in Nice?", "Two parts:\n---\nNice, then Oslo.", "", "Ünïcødé 🌤"]
)
def test_the_task_a_manager_gave_is_read_out_of_the_template(task: str) -> None:
    span = _run_of(_templated(task))
    assert managed_task(span) == task
    io = managed_call(span)
    assert io.args is not None and io.args.value == {"task": task}


@pytest.mark.parametrize(
    "span",
    [
        _run_of("Weather in Nice?"),  # a run no manager made: the user's own task
        _run_of(_templated("Weather in Nice?", name="boss")),  # another agent's template
        _run_of("Your task, by my own template:\nWeather in Nice?"),
        _run_of(_templated("x")[:-200]),  # cut short
        _run_of(None),
        _run_of(["Weather in Nice?"]),
    ],
)
def test_no_task_is_read_out_of_anything_else(span: SpanRecord) -> None:
    assert managed_task(span) is None
    assert managed_call(span).args is None


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
