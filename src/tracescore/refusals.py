"""Calls a framework refused without running them, told by the words it answers with.

A model may call a tool that does not exist (a misspelt name) or is not available yet,
or with arguments the tool's schema refuses.
Some frameworks then run nothing and answer the call themselves, so that the model can
try again: no tool span records the call, and the answer that reaches the next model
call (or the run's history) is a plain tool result. Their own record of the run marks
the call failed; the telemetry says so only in the answer's words, which name the tool:

* pydantic-ai (``tool_manager``): "Unknown tool name: 'get_wether'. Available tools: …",
  "Tool 'lookup' is not available yet: …" (a ``ModelRetry``: the return's ``outcome`` is
  ``retried``, which the telemetry's ``tool_call_response`` leaves out); and for an
  output tool (``final_result``, which has no span) whose arguments do not validate, the
  validation errors themselves, pydantic's list of ``{"type", "loc", "msg", …}`` (a
  ``RetryPromptPart``, failed in pydantic-ai's record; a function tool's bad arguments
  fail its span); an output validator's ``ModelRetry`` on such a call answers with its
  own words, so any answer to an output tool's call but pydantic-ai's fixed ones
  ("Final result processed.", "Output tool not used - …") is a retry
  (:func:`output_tools`);
* Microsoft Agent Framework (``_tools``): 'Error: Requested function "get_wether" not
  found.', and for arguments that do not validate, "Error: Argument parsing failed."
  (with " Exception: …" when detailed errors are on): function results with an
  ``exception``, the function never run;
* LlamaIndex's agents (``BaseWorkflowAgent``): "Tool get_wether not found. Please select a
  tool that is available." (a ``ToolOutput`` with ``is_error``, whose ``raw_output``, the
  result LlamaIndex reports, is None: the words are only what the model was told, so
  they are the call's error and not its result). Under OpenInference only: OpenLLMetry
  writes the call's step, which says so itself.

smolagents tells the model in a user message instead, and the step span of the model
call that made the call ends in error (:func:`step_failures`).

Only a call no span answered is read this way: a tool that ran has a span that says
how it went. (agno answers "Error: The requested tool does not exist or is not
available." and does not mark the call failed itself, so neither is it here.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Final

from tracescore.conventions import pydantic_ai, smolagents
from tracescore.conventions.base import ConventionReader
from tracescore.conventions.messages import JsonValue
from tracescore.conventions.registry import first_found
from tracescore.model import ToolCall
from tracescore.run_records import AgentRun, LlmStep
from tracescore.tool_calls import failed_with

__all__ = ["output_tools", "refusals_failed", "refused", "step_failures", "validation_errors"]

#: Agent Framework's result for arguments that do not validate (it names no tool).
_BAD_ARGUMENTS: Final = "Error: Argument parsing failed."


def refused(name: str, result: JsonValue) -> bool:
    """Whether ``result`` is a framework's refusal of a call of the tool ``name``."""
    if not isinstance(result, str):
        return False
    starts = (
        f"Unknown tool name: {name!r}. ",  # pydantic-ai
        f"Tool {name!r} is not available yet: ",  # pydantic-ai
        f"{_BAD_ARGUMENTS} Exception: ",  # Agent Framework, with detailed errors
    )
    whole = (f'Error: Requested function "{name}" not found.', _BAD_ARGUMENTS)  # Agent Framework
    return result.startswith(starts) or result in whole or _no_result(name, result)


def validation_errors(result: JsonValue) -> str | None:
    """The validation errors pydantic-ai fed back for a retry, as one line; else None.

    pydantic-ai sends the model the errors of arguments that do not validate as a list
    of pydantic's ``ErrorDetails``: ``{"type": "missing", "loc": ["city"], "msg": "Field
    required", "input": …}``. Read as ``city: Field required``, errors joined by "; ".
    """
    if not isinstance(result, list) or not result:
        return None
    said: list[str] = []
    for error in result:
        if not isinstance(error, dict):
            return None
        kind, loc, msg = error.get("type"), error.get("loc"), error.get("msg")
        if not (isinstance(kind, str) and isinstance(loc, list) and isinstance(msg, str)):
            return None
        where = ".".join(str(part) for part in loc)
        said.append(f"{where}: {msg}" if where else msg)
    return "; ".join(said)


def _no_result(name: str, result: str) -> bool:
    """A refusal the framework reports no result for (LlamaIndex's), only the words."""
    return result == f"Tool {name} not found. Please select a tool that is available."


def step_failures(run: AgentRun, llm_steps: Sequence[LlmStep]) -> dict[str, str]:
    """Call id -> the error of the failed smolagents step whose model call made the call."""
    failed = {
        span.span_id: error
        for span in run.spans
        if (error := smolagents.failed_step(span)) is not None
    }
    if not failed:
        return {}
    found: dict[str, str] = {}
    for step in llm_steps:
        error = failed.get(step.view.span.parent_span_id or "")
        if error is None:
            continue
        output = first_found(step.views, ConventionReader.llm_output)
        for message in output.value if output is not None else ():
            for part in message.tool_calls():
                if part.id:
                    found.setdefault(part.id, error)
    return found


def output_tools(llm_steps: Sequence[LlmStep]) -> frozenset[str]:
    """The names of the run's output tools, as pydantic-ai's model calls state them."""
    return pydantic_ai.output_tools(step.view.span for step in llm_steps)


def refusals_failed(
    calls: Sequence[ToolCall],
    step_errors: Mapping[str, str] | None = None,
    outputs: frozenset[str] = frozenset(),
) -> list[ToolCall]:
    """``calls``, those no span answered that the framework refused failed.

    Refused: the result is a refusal (:func:`refused`) or validation errors
    (:func:`validation_errors`, the call's error then), the call's id is among
    ``step_errors`` (:func:`step_failures`: call id -> the framework's error), or it
    calls one of ``outputs`` (:func:`output_tools`) and pydantic-ai answered it with a
    retry.
    """
    return [_failed_if_refused(call, step_errors or {}, outputs) for call in calls]


def _failed_if_refused(
    call: ToolCall, step_errors: Mapping[str, str], outputs: frozenset[str]
) -> ToolCall:
    if call.span_id is not None or call.error is not None:
        return call
    if call.id is not None and call.id in step_errors:
        return replace(call, error=step_errors[call.id])
    if isinstance(call.result, str) and refused(call.name, call.result):
        kept = None if _no_result(call.name, call.result) else call.result
        return replace(call, result=kept, error=call.result)
    invalid = validation_errors(call.result)
    if invalid is not None:
        return replace(call, error=invalid)
    if call.name in outputs and call.result is not None and pydantic_ai.output_retried(call.result):
        return failed_with(call, call.result)
    return call
