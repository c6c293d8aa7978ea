"""Calls a framework refused without running them, told by the words it answers with.

A model may call a tool that does not exist (a misspelt name) or is not available yet,
or with arguments the tool's schema refuses.
Some frameworks then run nothing and answer the call themselves, so that the model can
try again: no tool span records the call, and the answer that reaches the next model
call (or the run's history) is a plain tool result. Their own record of the run marks
the call failed; the telemetry says so only in the answer's words, which name the tool:

* pydantic-ai (``tool_manager``): "Unknown tool name: 'get_wether'. Available tools: …",
  "Tool 'lookup' is not available yet: …" (a ``ModelRetry``: the return's ``outcome`` is
  ``retried``, which the telemetry's ``tool_call_response`` leaves out);
* Microsoft Agent Framework (``_tools``): 'Error: Requested function "get_wether" not
  found.', and for arguments that do not validate, "Error: Argument parsing failed."
  (with " Exception: …" when detailed errors are on): function results with an
  ``exception``, the function never run;
* LlamaIndex's agents (``BaseWorkflowAgent``): "Tool get_wether not found. Please select a
  tool that is available." (a ``ToolOutput`` with ``is_error``, whose ``raw_output``, the
  result LlamaIndex reports, is None: the words are only what the model was told, so
  they are the call's error and not its result). Under OpenInference only: OpenLLMetry
  writes the call's step, which says so itself.

smolagents tells the model in a user message instead, and its step span ends in error:
those calls come as ``unknown`` (:func:`tracescore.conventions.smolagents.unknown_tools`).

Only a call no span answered is read this way: a tool that ran has a span that says
how it went. (agno answers "Error: The requested tool does not exist or is not
available." and does not mark the call failed itself, so neither is it here.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Final

from tracescore.conventions.messages import JsonValue
from tracescore.model import ToolCall

__all__ = ["refused", "refusals_failed"]

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


def _no_result(name: str, result: str) -> bool:
    """A refusal the framework reports no result for (LlamaIndex's), only the words."""
    return result == f"Tool {name} not found. Please select a tool that is available."


def refusals_failed(
    calls: Sequence[ToolCall], unknown: Mapping[str, str] | None = None
) -> list[ToolCall]:
    """``calls``, those no span answered that the framework refused failed.

    Refused: the result is a refusal (:func:`refused`), or the tool is among ``unknown``
    (tool name -> the framework's error), which the run's spans say it did not know.
    """
    return [_failed_if_refused(call, unknown or {}) for call in calls]


def _failed_if_refused(call: ToolCall, unknown: Mapping[str, str]) -> ToolCall:
    if call.span_id is not None or call.error is not None:
        return call
    if call.name in unknown:
        return replace(call, error=unknown[call.name])
    if isinstance(call.result, str) and refused(call.name, call.result):
        kept = None if _no_result(call.name, call.result) else call.result
        return replace(call, result=kept, error=call.result)
    return call
