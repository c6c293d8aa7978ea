"""smolagents' agents as OpenInference's instrumentation writes them.

``openinference-instrumentation-smolagents`` (0.1) writes a run as an AGENT span named
``<agent name>.run``: its ``input.value`` the ``run`` arguments (``{"task": ...}``), its
``output.value`` what ``run`` returned, the answer. Inside it, a CHAIN span per step,
each with its model call (LLM) and the tools the step ran (TOOL). Checked with
smolagents 1.26:

* A ``ToolCallingAgent``'s model calls tools; it answers by calling ``final_answer``, so
  no reply holds the answer as text.
* A ``CodeAgent``'s model writes Python (a thought, then code) that calls the tools; the
  code's ``final_answer(...)`` ends the run. Its replies make no tool call, and are no
  answer: the answer is the run span's. Its tool spans answer no call of the model's,
  and come in the order the code ran them.
* When the steps run out (``max_steps``), one more model call writes the answer as text.

In every case the run span states the answer, so it is the final response.

A tool span's ``input.value`` is the bound arguments of ``Tool.__call__(*args,
sanitize_inputs_outputs=False, **kwargs)``: ``{"args": [...], "sanitize_inputs_outputs":
false, "kwargs": {...}}``. A ``CodeAgent``'s code calls tools with positional arguments
too (``final_answer("…")``); ``tool.parameters`` is the tool's ``inputs``, in the order
its ``forward`` takes them.
"""

from __future__ import annotations

from typing import Final, cast

from tracescore.conventions.base import Found, ToolIO
from tracescore.conventions.messages import JsonValue, decoded_json
from tracescore.spans import STATUS_ERROR, SpanRecord

__all__ = [
    "RUN_SUFFIX",
    "SCOPE",
    "failed_step",
    "is_run",
    "managed_call",
    "managed_task",
    "tool_args",
]

SCOPE: Final = "openinference.instrumentation.smolagents"
#: The suffix of a run span's name, after the agent's name.
RUN_SUFFIX: Final = ".run"
_BOUND: Final = frozenset({"args", "kwargs", "sanitize_inputs_outputs"})


def is_run(span: SpanRecord) -> bool:
    """Whether ``span`` is a smolagents agent's run (an AGENT span ``<agent>.run``)."""
    return (
        span.scope == SCOPE
        and span.attributes.get("openinference.span.kind") == "AGENT"
        and span.name.endswith(RUN_SUFFIX)
    )


def tool_args(value: JsonValue, parameters: object) -> JsonValue:
    """A tool's arguments from the bound arguments of its ``__call__``.

    Keyword arguments as they are; positional ones named by ``parameters`` (the tool's
    ``inputs``), in order; a lone dict of the tool's inputs is its keyword arguments, as
    ``Tool.__call__`` takes it. Anything else, or positional arguments without names for
    them all, is returned unchanged.
    """
    if not isinstance(value, dict) or set(value) - _BOUND or "kwargs" not in value:
        return value
    args, kwargs = value.get("args", []), value["kwargs"]
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        return value
    names = list(parameters) if isinstance(parameters, dict) else []
    if not args:
        return kwargs
    lone = args[0] if len(args) == 1 and not kwargs else None
    if isinstance(lone, dict) and all(key in names for key in lone):
        return lone
    if len(args) > len(names):
        return value
    return {**dict(zip(names, args, strict=False)), **kwargs}


def managed_call(span: SpanRecord) -> ToolIO:
    """A managed agent's run (its manager calls it by name) as that call's execution.

    smolagents writes no tool span for the call: the run span is its only trace. Its
    result is the agent's answer, the run's ``output.value`` (smolagents hands the
    manager that answer inside its ``managed_agent`` report template, which no span of
    the call states). Its arguments are the task its manager gave it (:func:`managed_task`):
    a ``ToolCallingAgent`` manager's reply has them too, a ``CodeAgent``'s code called
    the agent, and no reply does.
    """
    output = span.attributes.get("output.value")
    result: Found[JsonValue] | None = (
        Found(cast(JsonValue, output), "output.value") if isinstance(output, str) else None
    )
    task = managed_task(span)
    args: Found[JsonValue] | None = (
        None if task is None else Found(cast(JsonValue, {"task": task}), "input.value")
    )
    name = span.name.removesuffix(RUN_SUFFIX) or None
    return ToolIO(name=name, call_id=None, args=args, result=result)


#: smolagents' ``managed_agent`` task template (the same for every agent class), around
#: the task the manager gave: ``populate_template`` of it is what the managed run gets.
_TASK_HEAD: Final = (
    "You're a helpful agent named '{name}'.\nYou have been submitted this task by your"
    " manager.\n---\nTask:\n"
)
_TASK_TAIL: Final = "\n---\nYou're helping your manager solve a wider task"


def managed_task(span: SpanRecord) -> str | None:
    """The task a managed agent's manager gave it, out of smolagents' task template.

    None when the run's task is not in that template (an agent with templates of its
    own, a run no manager made) or was not captured.
    """
    value = decoded_json(span.attributes.get("input.value"))
    task = value.get("task") if isinstance(value, dict) else None
    if not isinstance(task, str):
        return None
    head = _TASK_HEAD.format(name=span.name.removesuffix(RUN_SUFFIX))
    end = task.rfind(_TASK_TAIL)  # the task itself may hold "---" lines
    return task[len(head) : end] if task.startswith(head) and end >= len(head) else None


def failed_step(span: SpanRecord) -> str | None:
    """The error a failed smolagents step span states (its status message), else None.

    A ``ToolCallingAgent`` step whose call smolagents refused runs no tool (no tool
    span): a tool the agent does not have, ``AgentToolExecutionError: Unknown tool
    get_wether, should be one of: …``; arguments the tool's inputs refuse,
    ``AgentToolCallError: Argument town is not in the tool's input schema``. The model
    is told in a user message, not a tool result.
    """
    if (
        span.scope != SCOPE
        or span.status_code != STATUS_ERROR
        or span.attributes.get("openinference.span.kind") != "CHAIN"
    ):
        return None
    return span.status_message or None
