"""Spans of one trace → invocations. Pure and synchronous.

For each agent run (see :mod:`tracescore.trace_tree`) the invocation is rebuilt the way
ADK's ``EvaluationGenerator.convert_events_to_eval_invocations`` reads session events:

* user content = the last user message with text in the first model call's input
  (each call's input carries the whole history, so later turns' inputs still work);
* tool calls = the tool-call parts of each model response, in model order (parallel
  calls keep the model's order; ``transfer_to_agent`` is a call like any other), joined
  to their execution spans by call id, else by name and order;
* final response = the last model response with text and no tool call; the text of
  every other response is intermediate, authored by the agent that produced it.

When no model output was captured but tool spans were, tool calls come from the tool
spans in start order and the invocation says so in its warnings.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from tracescore.conventions.base import SpanView
from tracescore.conventions.messages import JsonValue, Message, ToolResultPart
from tracescore.conventions.registry import (
    all_found,
    capture_hint,
    first_found,
    merged_tool_io,
    merged_usage,
)
from tracescore.model import AgentText, Invocation, NotEvaluableReason, TokenUsage, ToolCall
from tracescore.spans import STATUS_ERROR, LogRecord, SpanRecord
from tracescore.trace_tree import AgentRun, LlmStep, split_runs

__all__ = ["build_invocations"]

_CONVERSATION_KEYS = (
    "gen_ai.conversation.id",
    "session.id",
    "gcp.vertex.agent.session_id",
    "traceloop.association.properties.session_id",
    "traceloop.association.properties.conversation_id",
    "traceloop.association.properties.thread_id",
    "traceloop.association.properties.chat_id",
)
_TAG_PREFIX = "tracescore."
#: Call ids that identify nothing (ADK writes this when a tool raised).
_NO_IDS = frozenset({None, "", "<not specified>"})


@dataclass(slots=True)
class _Response:
    agent: str | None
    message: Message
    source: str
    #: Index of the model-call step it came from; None when read from a run history.
    step: int | None = None
    #: For history responses: the tool results that follow it in the history.
    results: list[ToolResultPart] | None = None


@dataclass(slots=True)
class _Exec:
    name: str
    call_id: str | None
    args: JsonValue
    result: JsonValue
    error: str | None
    agent: str | None
    span: SpanRecord
    used: bool = False


def build_invocations(
    spans: Sequence[SpanRecord],
    logs: Sequence[LogRecord] = (),
    *,
    complete: bool = True,
) -> list[Invocation]:
    """Rebuild every invocation in one trace.

    Args:
        spans: All spans of one trace (any order). Spans of other traces are a bug.
        logs: Log records of the same trace (GenAI content events).
        complete: False when the trace was flushed before its root ended (TTL); its
            invocations are then ``not_evaluable`` with reason ``incomplete_trace``.

    Returns:
        Invocations ordered by start time; empty when the trace has no agent activity.

    """
    return [_build(run, complete=complete) for run in split_runs(spans, logs)]


def _build(run: AgentRun, *, complete: bool) -> Invocation:
    root = run.root
    provenance: dict[str, str] = {}
    warnings: list[str] = []
    llm_steps = sorted(run.llm_steps, key=lambda s: s.view.span.start_ns)
    tool_steps = sorted(run.tool_steps, key=lambda s: s.view.span.start_ns)

    user, responses, missing_outputs = _conversation(run, llm_steps, provenance)
    execs = [_exec(step.view, step.agent) for step in tool_steps]
    if responses and not missing_outputs:
        calls = _join_calls(responses, execs, llm_steps, provenance, warnings)
    else:
        if execs and llm_steps:
            warnings.append(
                "model outputs were not captured: tool calls read from tool spans in start order"
            )
        calls = [_call_from_exec(e) for e in execs]
        if execs:
            provenance.setdefault("tool_calls", "tool spans")

    final_idx = _final_index(responses)
    final = responses[final_idx].message.text() if final_idx is not None else None
    if final is None and run.agent_views:
        stated = first_found(run.agent_views, lambda r, v: r.final_output(v))
        if stated is not None:
            final = stated.value
            provenance["final_response"] = stated.source
    intermediate = tuple(
        AgentText(author=r.agent or "", text=text)
        for i, r in enumerate(responses)
        if i != final_idx and (text := r.message.text())
    )

    usage_in = usage_out = 0
    for step in llm_steps:
        usage = merged_usage(step.views)
        if usage is not None:
            usage_in += usage.input_tokens or 0
            usage_out += usage.output_tokens or 0

    system = tools = None
    if llm_steps:
        first_views = llm_steps[0].views
        found_sys = first_found(first_views, lambda r, v: r.system_instructions(v))
        if found_sys is not None:
            system = found_sys.value
            provenance["system_instructions"] = found_sys.source
        found_tools = first_found(first_views, lambda r, v: r.tool_definitions(v))
        if found_tools is not None:
            tools = found_tools.value
            provenance["tool_definitions"] = found_tools.source

    conversation_id = _first_attr(run.spans, _CONVERSATION_KEYS, provenance, "conversation_id")
    invocation_id = (
        _first_attr(run.spans, ("gcp.vertex.agent.invocation_id",), provenance, "invocation_id")
        or f"{root.trace_id}:{root.span_id}"
    )

    for view in _all_views(run):
        warnings.extend(view.warnings)

    reason_code, reason = _evaluability(run, user, responses, warnings, complete)
    return Invocation(
        trace_id=root.trace_id,
        invocation_id=invocation_id,
        conversation_id=conversation_id,
        agent=run.agents[0] if run.agents else (llm_steps[0].agent if llm_steps else None),
        agents=tuple(run.agents),
        user_content=user,
        tool_calls=tuple(calls),
        intermediate_responses=intermediate,
        final_response=final,
        usage=TokenUsage(input_tokens=usage_in, output_tokens=usage_out),
        inference_calls=len(llm_steps),
        start_ns=root.start_ns,
        end_ns=root.end_ns,
        status="ok" if reason_code is None else "not_evaluable",
        reason_code=reason_code,
        reason=reason,
        warnings=tuple(dict.fromkeys(warnings)),
        provenance=provenance,
        system_instructions=system,
        tool_definitions=tools,
        tags=_tags(run),
        root_span_id=root.span_id,
        error=_span_error(root),
        parent_tool_span_id=run.parent_tool.span_id if run.parent_tool else None,
    )


def _conversation(
    run: AgentRun, llm_steps: list[LlmStep], provenance: dict[str, str]
) -> tuple[str | None, list[_Response], int]:
    """User text, model responses in order, and how many model calls had no output."""
    user = _user_text(llm_steps, provenance)
    responses: list[_Response] = []
    missing = 0
    sources: list[str] = []
    for index, step in enumerate(llm_steps):
        found_out = first_found(step.views, lambda r, v: r.llm_output(v))
        message = _reply(found_out.value) if found_out is not None else None
        if found_out is None or message is None:
            missing += 1
            continue
        responses.append(_Response(step.agent, message, found_out.source, step=index))
        sources.append(found_out.source)
    if sources:
        provenance["responses"] = ", ".join(dict.fromkeys(sources))
    if (user is None or missing) and run.agent_views:
        history = first_found(run.agent_views, lambda r, v: r.history(v))
        if history is not None:
            if user is None:
                user = _last_user_text(history.value)
                if user is not None:
                    provenance["user_content"] = history.source
            if missing:
                agent = run.agents[0] if run.agents else None
                responses = _history_responses(history.value, agent, history.source)
                missing = 0 if responses else missing
                provenance["responses"] = history.source
    return user, responses, missing


def _user_text(llm_steps: list[LlmStep], provenance: dict[str, str]) -> str | None:
    """The last user text in the first model call's input.

    Later calls of agents other than the first see other agents' turns rewritten as
    user text (ADK's "For context:"), so only the first agent's calls are asked. Later
    inputs and other sources are tried only when the first answer holds no user text
    (e.g. a request truncated by the backend before its ``contents``).
    """
    if not llm_steps:
        return None
    first_agent = llm_steps[0].agent
    for step in llm_steps:
        if step.agent != first_agent:
            continue
        for found in all_found(step.views, lambda r, v: r.llm_input(v)):
            text = _last_user_text(found.value)
            if text is not None:
                provenance["user_content"] = found.source
                return text
    return None


def _reply(messages: list[Message]) -> Message | None:
    """The model's reply among output messages: the first assistant message (choice 0)."""
    for msg in messages:
        if msg.is_assistant:
            return msg
    return messages[0] if messages else None


def _last_user_text(messages: Iterable[Message]) -> str | None:
    text = None
    for msg in messages:
        if msg.is_user:
            t = msg.text()
            if t is not None:
                text = t
    return text


def _history_responses(messages: list[Message], agent: str | None, source: str) -> list[_Response]:
    """The model replies of the current run in a history, each with the results after it."""
    start = 0
    for i, msg in enumerate(messages):
        if msg.is_user and msg.text() is not None:
            start = i + 1
    responses: list[_Response] = []
    for msg in messages[start:]:
        if msg.is_assistant:
            responses.append(_Response(agent, msg, source, results=[]))
        elif responses:
            results = responses[-1].results
            if results is not None:
                results.extend(msg.tool_results())
    return responses


def _span_error(span: SpanRecord) -> str | None:
    if span.status_code != STATUS_ERROR:
        return None
    etype = span.attributes.get("error.type")
    return str(etype) if etype else (span.status_message or "error")


def _exec(view: SpanView, agent: str | None) -> _Exec:
    io = merged_tool_io(view)
    span = view.span
    call_id = io.call_id if io.call_id not in _NO_IDS else None
    return _Exec(
        name=io.name or span.name,
        call_id=call_id,
        args=io.args.value if io.args is not None else None,
        result=io.result.value if io.result is not None else None,
        error=_span_error(span),
        agent=agent,
        span=span,
    )


def _call_from_exec(e: _Exec, *, name: str | None = None, args: JsonValue = None) -> ToolCall:
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


def _join_calls(
    responses: list[_Response],
    execs: list[_Exec],
    llm_steps: list[LlmStep],
    provenance: dict[str, str],
    warnings: list[str],
) -> list[ToolCall]:
    """Model tool calls in order, each joined to its execution (id, else name and order).

    ``responses`` and ``llm_steps`` are aligned (one response per model call).
    """
    by_id = {e.call_id: e for e in execs if e.call_id}
    calls: list[ToolCall] = []
    origin: list[_Response] = []
    for resp in responses:
        for part in resp.message.tool_calls():
            match = by_id.get(part.id) if part.id else None
            if match is None or match.used:
                match = next((e for e in execs if not e.used and e.name == part.name), None)
            origin.append(resp)
            if match is None:
                calls.append(ToolCall(name=part.name, args=part.args, id=part.id, agent=resp.agent))
                continue
            match.used = True
            calls.append(
                replace(
                    _call_from_exec(match),
                    name=part.name,
                    args=part.args if part.args is not None else match.args,
                    # The execution's id is the framework's own (ADK: ``adk-…``);
                    # model-side ids may be synthesized per message.
                    id=match.call_id or part.id,
                    agent=resp.agent or match.agent,
                )
            )
    if calls:
        provenance["tool_calls"] = provenance.get("responses", "model output")
    pending: dict[int, list[int]] = {}
    for i, call in enumerate(calls):
        if call.result is None:
            pending.setdefault(id(origin[i]), []).append(i)
    for indices in pending.values():
        resp = origin[indices[0]]
        if resp.results is not None:
            _pair_results(calls, indices, resp.results, resp.source, provenance)
        elif resp.step is not None:
            _results_from_next_request(calls, indices, resp.step, llm_steps, provenance)
    return _with_unmatched(calls, [e for e in execs if not e.used], warnings)


def _results_from_next_request(
    calls: list[ToolCall],
    indices: list[int],
    step: int,
    llm_steps: list[LlmStep],
    provenance: dict[str, str],
) -> None:
    """Fill missing results from the tool results fed back in the next model request.

    The next request of the same agent ends with the results of the calls its previous
    response made (after the last assistant message). Pairs by name and order, never by
    id: ADK schema 2 synthesizes per-message ids (``<name>_<part index>``) that differ
    between a call and its response and repeat across turns.
    """
    agent = llm_steps[step].agent
    later = llm_steps[step + 1 :]
    nxt = next((s for s in later if s.agent == agent), later[0] if later else None)
    if nxt is None:
        return
    found = first_found(nxt.views, lambda r, v: r.llm_input(v))
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
    """Give each call in ``indices`` the first unused result of the same name, in order."""
    taken = [False] * len(results)
    for idx in indices:
        call = calls[idx]
        for j, res in enumerate(results):
            if not taken[j] and res.name in (call.name, None):
                taken[j] = True
                calls[idx] = replace(call, result=res.response)
                provenance["tool_results"] = source
                break


def _with_unmatched(
    calls: list[ToolCall], unmatched: list[_Exec], warnings: list[str]
) -> list[ToolCall]:
    """Insert tool executions no model output mentions, by start time, and say so.

    Happens when an instrumentation loses model outputs (e.g. OpenInference over ADK
    schema 2 overwrites one span per model call); dropping them would lose real calls.
    """
    for e in unmatched:
        warnings.append(
            f"tool span {e.span.span_id} ({e.name}) matches no model output; "
            "placed by its start time"
        )
        call = _call_from_exec(e)
        pos = len(calls)
        for i, other in enumerate(calls):
            if other.start_ns is not None and other.start_ns > e.span.start_ns:
                pos = i
                break
        calls.insert(pos, call)
    return calls


def _final_index(responses: list[_Response]) -> int | None:
    for i in range(len(responses) - 1, -1, -1):
        msg = responses[i].message
        if not msg.tool_calls() and msg.text() is not None:
            return i
    return None


def _first_attr(
    spans: Sequence[SpanRecord],
    keys: Sequence[str],
    provenance: dict[str, str],
    field_name: str,
) -> str | None:
    for key in keys:
        for span in spans:
            value = span.attributes.get(key)
            if value is None:
                value = span.resource.get(key)
            if value not in (None, ""):
                provenance[field_name] = key
                return str(value)
    return None


def _tags(run: AgentRun) -> dict[str, str]:
    """``tracescore.*`` attributes of the run's root and agent spans and their resources.

    Tags are set by the application on its agent span, on the resource, or as baggage
    copied onto every span; the root and agent spans see all three, so the (many) other
    spans need not be scanned.
    """
    tags: dict[str, str] = {}
    seen: set[int] = set()
    for span in (run.root, *(v.span for v in run.agent_views)):
        sources = (
            (span.attributes,) if id(span.resource) in seen else (span.attributes, span.resource)
        )
        seen.add(id(span.resource))
        for source in sources:
            for key in [k for k in source if k.startswith(_TAG_PREFIX)]:
                value = source[key]
                if value is not None:
                    tags.setdefault(key, str(value))
    return tags


def _all_views(run: AgentRun) -> Iterable[SpanView]:
    for step in run.llm_steps:
        yield from step.views
    for tool in run.tool_steps:
        yield tool.view
    yield from run.agent_views


def _evaluability(
    run: AgentRun,
    user: str | None,
    responses: list[_Response],
    warnings: list[str],
    complete: bool,
) -> tuple[NotEvaluableReason | None, str | None]:
    if not complete:
        return "incomplete_trace", "the trace was flushed before its root span ended"
    if not run.llm_steps and not responses:
        return "no_model_call", "no model call was found in this agent run"
    if user is None and any("truncated" in w for w in warnings):
        return "no_user_message", (
            "the user message was lost: the payload that carries it was truncated "
            "(tracing backends cap attribute values, e.g. at 64 KiB)"
        )
    if user is None or not responses:
        what = "user message" if user is None else "model output"
        hint = capture_hint(run.spans) or "turn on message content capture in the agent"
        return "content_not_captured", f"content not captured ({what} missing): {hint}"
    return None, None
