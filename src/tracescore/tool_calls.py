"""Tool calls: the model's calls joined to their executions and results.

The model's output says which tools it called, in what order and with which arguments;
execution spans say what ran, what came back and whether it failed. A call is joined to
its execution by call id, else by name and order (ids may differ between the two: ADK
schema 2 synthesizes per-message ids). Results missing from the execution spans are
taken from the tool results fed back to the model in its next request, paired by name
and order. Executions no model output mentions are kept, placed by start time, with a
warning: dropping them would lose real calls.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence, Set
from dataclasses import replace
from typing import Final

from tracescore.conventions.base import ConventionReader, SpanView
from tracescore.conventions.messages import (
    JsonValue,
    ToolCallPart,
    ToolResultPart,
    parse_arguments,
)
from tracescore.conventions.openai_agents import error_text
from tracescore.conventions.registry import first_found, merged_tool_io
from tracescore.model import ToolCall
from tracescore.run_records import Execution, LlmStep, ModelReply
from tracescore.spans import STATUS_ERROR, SpanRecord

__all__ = [
    "UNNAMED_ERROR",
    "call_from_execution",
    "execution",
    "failed_with",
    "join_calls",
    "span_error",
]

#: Call ids that identify nothing (ADK writes this when a tool raised).
_NO_IDS = frozenset({None, "", "<not specified>"})


#: What :func:`span_error` says of a span that failed without saying why.
UNNAMED_ERROR: Final = "error"


def span_error(span: SpanRecord) -> str | None:
    """The error of a span that ended in error, None for any other span.

    ``error.type``, else the status message, else the last ``exception`` event's type
    (and message, if recorded): an instrumentation that keeps content out may leave only
    that (pydantic-ai with ``include_content=False`` drops the message, not the type).
    """
    if span.status_code != STATUS_ERROR:
        return None
    etype = span.attributes.get("error.type")
    if etype:
        return str(etype)
    return error_text(span) or _exception_event(span) or UNNAMED_ERROR


def _exception_event(span: SpanRecord) -> str | None:
    """``type: message`` of the span's last ``exception`` event (OTel's record of a raise)."""
    for event in reversed(span.events):
        if event.name == "exception":
            kind = _text(event.attributes.get("exception.type"))
            message = _text(event.attributes.get("exception.message"))
            if kind and message:
                return f"{kind}: {message}"
            if kind or message:
                return kind or message
    return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def execution(view: SpanView, agent: str | None, nested: Sequence[SpanRecord] = ()) -> Execution:
    """Read a tool span (every convention, field by field) into an :class:`Execution`.

    ``nested`` are the tool spans inside it. A call whose own span did not fail takes
    the error of the one nested span of the same tool: the MCP SDK's server span of the
    call fails when the server reports a tool error, under an instrumentation that
    records the client's tool span as a success (OpenInference's for the OpenAI Agents
    SDK). With several (a tool that retried its MCP call, say), nothing tells which
    answer the call ended with.
    """
    io = merged_tool_io(view)
    span = view.span
    call_id = io.call_id if io.call_id not in _NO_IDS else None
    name = io.name or span.name
    error = span_error(span) or io.error
    if error is None and nested:
        same = [inner for inner in nested if inner.attributes.get("gen_ai.tool.name") == name]
        if len(same) == 1:
            error = span_error(same[0])
    return Execution(
        name=name,
        call_id=call_id,
        args=io.args.value if io.args is not None else None,
        result=io.result.value if io.result is not None else None,
        error=error,
        agent=agent,
        span=span,
    )


def call_from_execution(
    e: Execution, *, name: str | None = None, args: JsonValue = None
) -> ToolCall:
    """A tool call known from its execution span (model-side name and args if given)."""
    return ToolCall(
        name=name or e.name,
        args=args if args is not None else e.args,
        id=e.call_id,
        result=e.result,
        error=e.error,
        agent=e.agent,
        start_ns=e.span.start_ns,
        end_ns=e.span.end_ns,
        span_id=e.span.span_id,
    )


def join_calls(
    responses: list[ModelReply],
    execs: list[Execution],
    llm_steps: list[LlmStep],
    provenance: dict[str, str],
    warnings: list[str],
    *,
    from_code: bool = False,
) -> list[ToolCall]:
    """Model tool calls in order, each joined to its execution (:func:`_matches`).

    ``responses`` and ``llm_steps`` are aligned (one response per model call). Tool
    executions no call asks for are placed by start time, with a warning each unless
    ``from_code`` says the model's code ran them (a code agent's).
    """
    # Executions by call id, in start order: an id may repeat (LlamaIndex's are the tool's
    # name), and the calls of one id take its executions in order.
    by_id: dict[str, list[Execution]] = {}
    for e in execs:
        if e.call_id:
            by_id.setdefault(e.call_id, []).append(e)
    # Executions another call asks for by id are that call's: never taken by name (a call
    # the framework refused before running it, Agent Framework's for arguments that do
    # not parse, would take the next call's execution of the same tool).
    claimed = {p.id for r in responses for p in r.message.tool_calls() if p.id in by_id}
    asked = [(resp, part) for resp in responses for part in resp.message.tool_calls()]
    matches = _matches(asked, execs, by_id, claimed)
    calls: list[ToolCall] = []
    origin: list[ModelReply] = []
    for (resp, part), match in zip(asked, matches, strict=True):
        origin.append(resp)
        if match is None:
            calls.append(ToolCall(name=part.name, args=part.args, id=part.id, agent=resp.agent))
            continue
        span = match.span
        calls.append(
            ToolCall(
                name=part.name,
                args=part.args if part.args is not None else match.args,
                # The execution's id is the framework's own (ADK: ``adk-…``);
                # model-side ids may be synthesized per message.
                id=match.call_id or part.id,
                result=match.result,
                error=match.error,
                agent=resp.agent or match.agent,
                start_ns=span.start_ns,
                end_ns=span.end_ns,
                span_id=span.span_id,
            )
        )
    if calls:
        provenance["tool_calls"] = provenance.get("responses", "model output")
    # Each reply's calls, for those that lack a result: all of them pair with the results
    # fed back, in order, so one answered by its span still takes its own result's place.
    by_reply: dict[int, list[int]] = {}
    if any(call.result is None for call in calls):
        for i in range(len(calls)):
            by_reply.setdefault(id(origin[i]), []).append(i)
    for indices in by_reply.values():
        if all(calls[i].result is not None for i in indices):
            continue
        resp = origin[indices[0]]
        if resp.results is not None:
            _pair_results(calls, indices, resp.results, resp.source, provenance)
        elif resp.step is not None:
            _results_from_next_request(calls, indices, resp.step, llm_steps, provenance)
    unmatched = [e for e in execs if not e.used]
    return _with_unmatched(calls, unmatched, None if from_code else warnings)


def _matches(
    asked: list[tuple[ModelReply, ToolCallPart]],
    execs: list[Execution],
    by_id: dict[str, list[Execution]],
    claimed: Set[str],
) -> list[Execution | None]:
    """Each call's execution (or None), in three passes; each execution taken once.

    By id first (of several executions with the call's id, the first unused); then by
    tool name and the same arguments; then by tool name and order. Executions are in
    start order, the calls' order except across concurrent branches (ADK's
    ParallelAgent), where calls of one tool are told apart by their arguments. And an
    execution with a later call's arguments is that call's, not an earlier call's by
    order: smolagents' tool spans carry no call id, and a call the framework refused
    without running it (arguments its schema refuses) would take the next call's
    execution of the tool. An execution another call asks for by id is never taken by
    name (``claimed``).
    """
    # Module-level helpers, not closures: compiled, closures that call each other hold
    # their shared environment in a reference cycle (garbage bulk_gc would keep).
    matches: list[Execution | None] = [None] * len(asked)
    for by in (_BY_ID, _BY_ARGUMENTS, _BY_ORDER):
        for i, (_, part) in enumerate(asked):
            if matches[i] is None:
                if by == _BY_ID:
                    match = _unused_by_id(part, by_id)
                elif by == _BY_ARGUMENTS and part.args is None:
                    match = None
                else:
                    match = _free(part, execs, claimed, same_args=by == _BY_ARGUMENTS)
                if match is not None:
                    match.used = True
                    matches[i] = match
    return matches


_BY_ID: Final = 0
_BY_ARGUMENTS: Final = 1
_BY_ORDER: Final = 2


def _unused_by_id(part: ToolCallPart, by_id: dict[str, list[Execution]]) -> Execution | None:
    """The first unused execution with the call's id."""
    for e in by_id.get(part.id or "", ()):
        if not e.used:
            return e
    return None


def _free(
    part: ToolCallPart, execs: list[Execution], claimed: Set[str], *, same_args: bool
) -> Execution | None:
    """The first unused execution of the call's tool that no other call claims by id.

    With ``same_args``, the first of those with the call's arguments.
    """
    for e in execs:
        if (
            not e.used
            and e.name == part.name
            and (e.call_id not in claimed or e.call_id == part.id)
            and (not same_args or (e.args is not None and _same_args(e.args, part.args)))
        ):
            return e
    return None


def _same_args(a: JsonValue, b: JsonValue) -> bool:
    """Equal arguments, written as JSON text or as values."""
    return a == b or parse_arguments(a) == parse_arguments(b)


def _results_from_next_request(
    calls: list[ToolCall],
    indices: list[int],
    step: int,
    llm_steps: list[LlmStep],
    provenance: dict[str, str],
) -> None:
    """Fill missing results from the tool results fed back in the next model request.

    The next request of the same agent ends with the results of the calls its previous
    response made (after the last assistant message). Paired by id where a result's is
    its call's, else by name and order: ADK schema 2 synthesizes per-message ids
    (``<name>_<part index>``) that may differ between a call and its response (and
    repeat across turns, which these results, after the last reply, never span).
    """
    agent = llm_steps[step].agent
    later = llm_steps[step + 1 :]
    nxt = next((s for s in later if s.agent == agent), later[0] if later else None)
    if nxt is None:
        return
    found = first_found(nxt.views, ConventionReader.llm_input)
    if found is None:
        return
    messages = found.value
    last_assistant = max((i for i, m in enumerate(messages) if m.is_assistant), default=-1)
    results = [p for m in messages[last_assistant + 1 :] for p in m.tool_results()]
    _pair_results(calls, indices, results, found.source, provenance)


def _pair_results(
    calls: list[ToolCall],
    indices: list[int],
    results: list[ToolResultPart],
    source: str,
    provenance: dict[str, str],
) -> None:
    """Pair each call in ``indices`` with its result: by id, else by name and order.

    By name and order: the first unused result of the call's tool. A call without a
    result takes its pair's; one that has a result keeps it, its pair only used up
    (parallel calls of one tool, the first answered by its span). Results can come in
    another order than the calls (LangChain's tool-call limit answers the calls past it
    before the tool runs the others): ids come first, where a result's is its call's.
    A result marked failed that pairs with a call no span answered is its error too.
    """
    taken = [False] * len(results)
    pairs: dict[int, int] = {}
    by_id = {res.id: j for j, res in reversed(list(enumerate(results))) if res.id}
    for idx in indices:
        call_id = calls[idx].id
        j = by_id.get(call_id) if call_id else None
        if j is not None and not taken[j] and results[j].name in (calls[idx].name, None):
            taken[j] = True
            pairs[idx] = j
    for idx in indices:
        if idx in pairs:
            continue
        call = calls[idx]
        for j, res in enumerate(results):
            if not taken[j] and res.name in (call.name, None):
                taken[j] = True
                pairs[idx] = j
                break
    for idx, j in pairs.items():
        call, res = calls[idx], results[j]
        if call.result is None:
            call = calls[idx] = replace(call, result=res.response)
            provenance["tool_results"] = source
        if res.failed and call.span_id is None and call.error is None:
            # A call the framework refused without running it (agno's tool-call limit):
            # no span says it failed, the result fed back does (as in the history).
            calls[idx] = failed_with(call, res.response)


def failed_with(call: ToolCall, result: JsonValue) -> ToolCall:
    """``call`` failed with ``result``, a refusal fed back in no span: its text, or "error"."""
    return replace(call, error=result if isinstance(result, str) else "error")


#: Below every start time a span can have (they are signed 64-bit at least).
_BEFORE_ANY: Final = -(1 << 64)


def _with_unmatched(
    calls: list[ToolCall], unmatched: list[Execution], warnings: list[str] | None
) -> list[ToolCall]:
    """Insert tool executions no model output mentions, by start time; say so in ``warnings``.

    Happens when an instrumentation loses model outputs (e.g. OpenInference over ADK
    schema 2 overwrites one span per model call); dropping them would lose real calls.
    No warning when ``warnings`` is None: a code agent's tools run from its code.

    Each goes before the first call that started after it (calls without a start time
    never count as later); executions landing in one gap keep their start-time order.
    That first later call is where the running maximum of start times first exceeds the
    execution's start, a monotonic sequence: a binary search, so thousands of unmatched
    tool spans cost n log n, not n² (found by fuzzing).
    """
    if not unmatched:
        return calls
    running: list[int] = []
    highest = _BEFORE_ANY  # an int, not -inf: compiled, a list[float] cannot hold ints
    for call in calls:
        if call.start_ns is not None and call.start_ns > highest:
            highest = call.start_ns
        running.append(highest)
    gaps: dict[int, list[ToolCall]] = {}
    for e in sorted(unmatched, key=lambda e: e.span.start_ns):
        if warnings is not None:
            warnings.append(
                f"tool span {e.span.span_id} ({e.name}) matches no model output; "
                "placed by its start time"
            )
        gaps.setdefault(bisect_right(running, e.span.start_ns), []).append(call_from_execution(e))
    out: list[ToolCall] = []
    for i, call in enumerate(calls):
        out.extend(gaps.get(i, ()))
        out.append(call)
    out.extend(gaps.get(len(calls), ()))
    return out
