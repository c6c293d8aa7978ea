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
from typing import Final

from tracescore.conventions.adk import is_adk
from tracescore.conventions.base import ConventionReader, Found, ReadReply, SpanView
from tracescore.conventions.messages import Message
from tracescore.conventions.registry import (
    acts_in_code,
    capture_hint,
    final_output,
    first_found,
    merged_usage,
    model_called,
    stated_answer,
)
from tracescore.conventions.replies import joined_stream
from tracescore.history import (
    framework_answer,
    history_replies,
    last_user_text,
    results_from_history,
    with_unseen_replies,
)
from tracescore.model import (
    AgentText,
    Invocation,
    NotEvaluableReason,
    TokenUsage,
    ToolCall,
)
from tracescore.model_context import NO_CONTEXT, read_model_context
from tracescore.refusals import output_tools, refusals_failed, step_failures
from tracescore.run_errors import is_pause, pause, run_error
from tracescore.run_ids import run_ids
from tracescore.run_records import AgentRun, Execution, LlmStep, ModelReply
from tracescore.spans import STATUS_ERROR, LogRecord, SpanRecord
from tracescore.tool_calls import call_from_execution, execution, join_calls
from tracescore.trace_tree import split_runs
from tracescore.user_turn import user_text

__all__ = ["build_invocations"]

#: A run with no user text that resumed a turn (:mod:`tracescore.user_turn`).
_NO_USER_RESUMED: Final = (
    "the run goes on with a turn an earlier run began: its first model call starts with"
    " tool results, and the user's message is in that run's trace, not this one's"
)
#: Why an ADK run can have no model call at all: schema 2 writes the model's input and
#: reply only on ``generate_content`` spans, which a callback's answer never opens.
_ADK_NO_MODEL_CALL: Final = (
    "ADK telemetry schema 2 records no model call, and nothing of what was said, when a"
    " before_model_callback answers in the model's place"
)
#: A run that did not fail, whose last model reply calls tools and that states no answer:
#: nothing after the calls is in the trace. Frameworks that answer with the tool results
#: themselves do that (AutoGen's AssistantAgent by default, ``reflect_on_tool_use=False``),
#: and so does a run waiting on a long-running tool or a human approval.
_ENDED_ON_CALLS: Final = (
    "the run ended on tool calls, with no model reply after them: it has no final "
    "response (an answer the framework made of the tool results is in no span)"
)


def build_invocations(
    spans: Sequence[SpanRecord],
    logs: Sequence[LogRecord] = (),
    *,
    complete: bool = True,
    model_context: bool = True,
) -> list[Invocation]:
    """Rebuild every invocation in one trace.

    Args:
        spans: All spans of one trace (any order). Spans of other traces are a bug.
        logs: Log records of the same trace (GenAI content events).
        complete: False when the trace was flushed before its root ended (TTL); its
            invocations are then ``not_evaluable`` with reason ``incomplete_trace``.
        model_context: Read the model's context (:mod:`tracescore.model_context`:
            ``system_instructions``, ``tool_definitions``, ``retrieved``, ``grounding``).
            False leaves them empty (and out of the provenance): for scorers whose
            criteria never read them
            (:attr:`tracescore.criteria.Criterion.needs_model_context`).

    Returns:
        Invocations ordered by start time; empty when the trace has no agent activity.
        A span repeating the id of an earlier one (a retried export written twice, or
        corrupt input) is ignored, and the invocations say so in their warnings.

    """
    unique = _unique(spans)
    notes = []
    if len(unique) < len(spans):
        repeated = len(spans) - len(unique)
        notes.append(f"{repeated} span(s) repeating an earlier span's id were ignored")
    return [
        _build(run, complete=complete, notes=notes, model_context=model_context)
        for run in split_runs(unique, logs)
    ]


def _unique(spans: Sequence[SpanRecord]) -> Sequence[SpanRecord]:
    """The first span of each id.

    The tree walk needs unique ids: with a repeated one, a span can be its own
    descendant, and the walk would never end.
    """
    if len({span.span_id for span in spans}) == len(spans):
        return spans  # the usual case, told by one C-level pass
    first: dict[str, SpanRecord] = {}
    for span in spans:
        first.setdefault(span.span_id, span)
    return list(first.values())


def _build(
    run: AgentRun, *, complete: bool, notes: Sequence[str] = (), model_context: bool = True
) -> Invocation:
    root = run.root
    provenance: dict[str, str] = {}
    warnings: list[str] = list(notes)
    # By when each reply came back: model calls of concurrent branches (ADK's
    # ParallelAgent) overlap, and the run goes on from a reply once it has arrived, in
    # the order ADK appends them to the session. Calls that do not overlap keep their
    # order either way.
    llm_steps = sorted(run.llm_steps, key=_replied_at if _all_ended(run.llm_steps) else _asked_at)
    tool_steps = sorted(run.tool_steps, key=lambda s: s.view.span.start_ns)

    user, resumed, responses, missing_outputs, failed = _conversation(run, llm_steps, provenance)
    execs = [execution(step.view, step.agent, step.nested) for step in tool_steps]
    # A reply a callback gave in the model's place is a step of the run, not a model call.
    in_place = len([step for step in llm_steps if not model_called(step.views)])
    inferences = len(llm_steps) - in_place
    if responses and not missing_outputs:
        # A code agent's tools run from the code its replies hold, which calls no tool.
        from_code = acts_in_code(run.agent_views) and not any(
            r.message.tool_calls() for r in responses
        )
        responses, calls, unseen = _joined_calls(
            responses, execs, llm_steps, provenance, warnings, from_code=from_code, resumed=resumed
        )
        inferences += unseen
    else:
        if execs and llm_steps:
            warnings.append(
                "model outputs were not captured: tool calls read from tool spans in start order"
            )
        calls = [call_from_execution(e) for e in execs]
        if execs:
            provenance.setdefault("tool_calls", "tool spans")

    # Calls no span answered may have their result, or their failure, in the run's history.
    if run.agent_views and any(
        (c.result is None or c.span_id is None) and c.error is None and c.id for c in calls
    ):
        calls = results_from_history(run, calls, provenance)
    if any(c.span_id is None for c in calls):
        # Calls the framework answered itself, refusing them.
        calls = refusals_failed(calls, step_failures(run, llm_steps), output_tools(llm_steps))

    # ADK's eval reads a reply's thoughts as its text; every other framework's answer (a
    # pydantic-ai output, an OpenAI Agents final output) leaves them out.
    thoughts = any(is_adk(span) for span in run.spans)
    final_idx = _final_index(responses, thoughts)
    final = responses[final_idx].message.text(thoughts=thoughts) if final_idx is not None else None
    answer = stated_answer(run.agent_views)
    if answer is not None:
        if answer.value != final:
            # The last reply is no answer (a code agent's code): every reply's text is
            # intermediate.
            final_idx = None
        final = answer.value
        provenance["final_response"] = answer.source
    paused_by = pause(run, calls)
    # A paused run's agent span states what it waits for (Strands' interrupts), no answer.
    if final is None and run.agent_views and paused_by is None:
        stated = final_output(run.agent_views)
        if stated is not None:
            final = stated.value
            provenance["final_response"] = stated.source
    error = run_error(run, failed if not responses else [], answered=bool(responses))
    if paused_by is not None and error is not None and is_pause(error):
        error = None  # waiting for a human is no failure
    stopped = error is not None or paused_by is not None
    if final is None and not stopped and responses and responses[-1].message.tool_calls():
        ending = framework_answer(run)
        if ending is None:
            warnings.append(_ENDED_ON_CALLS)
        else:  # a reply the framework wrote in the model's place
            final = ending.value
            provenance["final_response"] = ending.source
            in_place += 1
    intermediate = tuple(
        AgentText(author=r.agent or "", text=text)
        for i, r in enumerate(responses)
        if i != final_idx and (text := r.message.text(thoughts=thoughts))
    )

    usage_in = usage_out = 0
    for step in llm_steps:
        usage = merged_usage(step.views)
        if usage is not None:
            usage_in += usage.input_tokens or 0
            usage_out += usage.output_tokens or 0

    context = read_model_context(run, llm_steps, provenance) if model_context else NO_CONTEXT

    ids = run_ids(run, (s.view.span for s in llm_steps), provenance)

    for view in _all_views(run):
        warnings.extend(view.warnings)

    reason_code, reason = _evaluability(
        run,
        user,
        responses,
        warnings,
        complete,
        failed=failed,
        missing=missing_outputs,
        resumed=resumed,
    )
    if reason_code == "no_model_call" and error is not None:
        reason = f"{reason}; the run failed first: {error}"
    elif reason_code is None and paused_by is not None:
        reason_code, reason = (
            "paused",
            (
                f"the run paused for input ({paused_by}): its turn goes on in the run that"
                " resumes it, which is scored"
            ),
        )
    return Invocation(
        trace_id=root.trace_id,
        invocation_id=ids.invocation_id,
        conversation_id=ids.conversation_id,
        agent=run.agents[0] if run.agents else (llm_steps[0].agent if llm_steps else None),
        agents=tuple(run.agents),
        user_content=user,
        tool_calls=tuple(calls),
        intermediate_responses=intermediate,
        final_response=final,
        usage=TokenUsage(input_tokens=usage_in, output_tokens=usage_out),
        inference_calls=inferences,
        framework_replies=in_place,
        start_ns=root.start_ns,
        end_ns=root.end_ns,
        status="ok" if reason_code is None else "not_evaluable",
        reason_code=reason_code,
        reason=reason,
        warnings=tuple(dict.fromkeys(warnings)),
        provenance=provenance,
        system_instructions=context.system_instructions,
        tool_definitions=context.tool_definitions,
        retrieved=context.retrieved,
        grounding=context.grounding,
        tags=ids.tags,
        root_span_id=root.span_id,
        error=error,
        parent_tool_span_id=run.parent_tool.span_id if run.parent_tool else None,
        response_ids=ids.response_ids,
    )


def _replied_at(step: LlmStep) -> tuple[int, int]:
    span = step.view.span
    return span.end_ns, span.start_ns


def _asked_at(step: LlmStep) -> int:
    return step.view.span.start_ns


def _all_ended(steps: Sequence[LlmStep]) -> bool:
    """Every call has an end time (bad input may not): else none is ordered by it."""
    return all(s.view.span.end_ns >= s.view.span.start_ns for s in steps)


def _joined_calls(
    responses: list[ModelReply],
    execs: list[Execution],
    llm_steps: list[LlmStep],
    provenance: dict[str, str],
    warnings: list[str],
    *,
    from_code: bool = False,
    resumed: bool = False,
) -> tuple[list[ModelReply], list[ToolCall], int]:
    """The replies, their calls joined to the tool spans, and how many replies had no span.

    A tool span no reply asked for may be a call of a reply whose model call left no
    span (:func:`tracescore.history.with_unseen_replies`): only then are the model
    calls' inputs read for such replies, and the calls joined again with them. So is a
    run that resumed a turn (``resumed``): the reply that called tools before the pause
    is in the paused run's trace, and its call may have run outside the agent (agno's
    external execution), with no tool span here to miss.
    """
    mark = len(warnings)
    calls = join_calls(responses, execs, llm_steps, provenance, warnings, from_code=from_code)
    if from_code or (all(e.used for e in execs) and not resumed):
        return responses, calls, 0
    more, unseen = with_unseen_replies(responses, llm_steps)
    if not unseen:
        return responses, calls, 0
    del warnings[mark:]  # said of the tool spans the replies found now may explain
    for e in execs:
        e.used = False
    calls = join_calls(more, execs, llm_steps, provenance, warnings)
    warnings.append(
        "model replies read from a later model call's input (their calls left"
        f" no span of their own; their token usage is not counted): {unseen}"
    )
    return more, calls, unseen


def _conversation(
    run: AgentRun, llm_steps: list[LlmStep], provenance: dict[str, str]
) -> tuple[str | None, bool, list[ModelReply], int, list[LlmStep]]:
    """The run's conversation as ``(user, resumed, replies, missing, failed)``.

    The user's text, whether the run resumed a turn (:func:`~tracescore.user_turn.user_text`),
    the model's replies, how many model calls had no output, and the calls that failed.

    A call that ended in error without output is not missing content (a throttled call
    that was retried, or the call that ended the run): it is listed, not counted.
    """
    user, resumed = user_text(run, llm_steps, provenance)
    responses: list[ModelReply] = []
    missing = 0
    failed: list[LlmStep] = []
    sources: list[str] = []
    for index, step in enumerate(llm_steps):
        found_out = first_found(step.views, ConventionReader.llm_output)
        message = _reply(found_out.value) if found_out is not None else None
        if found_out is None or message is None:
            if step.view.span.status_code == STATUS_ERROR:
                failed.append(step)
            else:
                missing += 1
            continue
        read = _read(step)
        if read is not None:
            message = read.value.applied_to(message)
        responses.append(ModelReply(step.agent, message, found_out.source, step=index))
        sources.append(found_out.source)
        if read is not None:
            sources.append(read.source)
    if sources:
        provenance["responses"] = ", ".join(dict.fromkeys(sources))
    if (user is None or missing) and run.agent_views:
        history = first_found(run.agent_views, ConventionReader.history)
        if history is not None:
            if user is None:
                user = last_user_text(history.value)
                if user is not None:
                    provenance["user_content"] = history.source
            if missing:
                agent = run.agents[0] if run.agents else None
                responses = history_replies(history.value, agent, history.source)
                missing = 0 if responses else missing
                provenance["responses"] = history.source
    return user, resumed, responses, missing, failed


def _read(step: LlmStep) -> Found[ReadReply] | None:
    """How the agent read the step's reply (a ReAct agent's parse), when traced."""
    if step.parse is None:
        return None
    return first_found([step.parse], ConventionReader.read_reply)


def _reply(messages: list[Message]) -> Message | None:
    """The model's reply among its output messages.

    A streamed reply's pieces joined (:func:`joined_stream`), else the first assistant
    message (choice 0).
    """
    streamed = joined_stream(messages)
    if streamed is not None:
        return streamed
    for msg in messages:
        if msg.is_assistant:
            return msg
    return messages[0] if messages else None


def _final_index(responses: list[ModelReply], thoughts: bool) -> int | None:
    for i in range(len(responses) - 1, -1, -1):
        msg = responses[i].message
        if not msg.tool_calls() and msg.text(thoughts=thoughts) is not None:
            return i
    return None


def _all_views(run: AgentRun) -> Iterable[SpanView]:
    for step in run.llm_steps:
        yield from step.views
    for tool in run.tool_steps:
        yield tool.view
    yield from run.agent_views
    yield from run.retrievals


def _evaluability(
    run: AgentRun,
    user: str | None,
    responses: list[ModelReply],
    warnings: list[str],
    complete: bool,
    *,
    failed: Sequence[LlmStep] = (),
    missing: int = 0,
    resumed: bool = False,
) -> tuple[NotEvaluableReason | None, str | None]:
    truncated = any("truncated" in w for w in warnings)
    # Model calls that carry no content at all say capture was off, which is what to
    # fix, whether or not the run's end came: with content capture off some runs never
    # say they ended (OpenLLMetry writes a LlamaIndex agent's StopEvent as content).
    uncaptured = bool(run.llm_steps) and user is None and not responses and not truncated
    if not complete and not uncaptured:
        return "incomplete_trace", (
            "the trace was flushed before its run ended (its root span, or the step that"
            " ends a run whose root span ends first, never arrived)"
        )
    if not run.llm_steps and not responses:
        reason = "no model call was found in this agent run"
        # Schema 1 records a callback's answer (its run's root is ``invocation``).
        if is_adk(run.root) and run.root.name != "invocation":
            reason += f"; {_ADK_NO_MODEL_CALL}"
        return "no_model_call", reason
    if user is None and truncated:
        return "no_user_message", (
            "the user message was lost: the payload that carries it was truncated "
            "(tracing backends cap attribute values, e.g. at 64 KiB)"
        )
    if user is None and resumed and responses:
        return "no_user_message", _NO_USER_RESUMED
    if user is not None and not responses and failed and not missing:
        # Every call without output failed: scored as a run with no answer, as ADK does.
        return None, None
    if user is None or not responses:
        # With the input there, capture may well be on: some instrumentations record no
        # model output for some APIs (OpenLLMetry's OpenAI Agents one, Chat Completions).
        what = "user message missing" if user is None else "model output missing, input captured"
        hint = capture_hint(run.spans) or "turn on message content capture in the agent"
        unended = "" if complete else "; the trace was flushed before its run was seen to end"
        return "content_not_captured", f"content not captured ({what}): {hint}{unended}"
    return None, None
