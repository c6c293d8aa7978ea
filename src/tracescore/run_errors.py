"""Why an agent run failed, or that it paused, from its spans.

:func:`run_error` is the ``error`` of its invocation; :func:`pause`, what paused it.

Most frameworks set the error on the run's root span. Some do not: the OpenAI Agents
SDK leaves its ``Agent workflow`` trace span OK and sets the error on the agent's own
span (a model call that failed for good, ``Max turns exceeded``, an output guardrail's
tripwire) or, for an input guardrail's tripwire, on the ``turn`` span inside it, both
under OpenInference and OpenLLMetry. Read from the root alone, such a run looked like
one that ended well on its tool calls, or that made no model call for no reason.

So, in this order:

1. the root span's error;
2. when the run has no answer, the error of the model call that failed last (also when
   the root only says that it failed: the call names why);
3. the framework's word that it stopped the run before the model answered, where its
   agent span says so and no span is in error (``ConventionReader.stopped_by``: Strands'
   ``limits`` and cancellations);
4. the error of a span that ended the run: one of its inner agent spans, or a step
   directly inside one that is not a tool's (a model call, the SDK's ``turn``), provided
   no model call of the run started after that span ended. A step the framework retried
   (a model call after a rate limit, a LangGraph node under a retry policy, a chain with
   a fallback) is followed by the retry's model call; a step that failed the run is
   not. So a run whose last model call failed, after replies that called tools, failed
   there, and did not end on its calls;
5. a run whose root ends first and that no span says ended
   (:mod:`tracescore.conventions.run_end`): it did not finish.

A tool that raised is not the run's failure: the framework hands the error to the model,
and the call carries it (``ToolCall.error``).

A run can also pause, waiting for input (a human's approval):

* a LangGraph ``interrupt()`` raises ``GraphInterrupt`` through the node that called
  it, which both LangChain instrumentations record as an ``exception`` event (OpenLLMetry
  also as the error of the node's, the tool's and the graph's spans);
* a pydantic-ai run whose tool needs approval ends with ``DeferredToolRequests`` as its
  output, which its agent span states (``ConventionReader.paused_for``);
* a Strands run stops with stop reason ``interrupt`` when a hook or a tool asks a human
  (:mod:`tracescore.conventions.strands`);
* an agno run's output is agno's sentence for a paused run
  (:mod:`tracescore.conventions.agno`), an Agent Framework run's agent span holds a
  ``function_approval_request``;
* ADK answers a call of a tool that needs a person's confirmation with a fixed error
  and ends the run (its ``adk_request_confirmation`` is in no span); the confirmation
  goes on with the same ADK invocation, in a trace of its own. A long-running tool that
  gave no result yet ends the run the same way (its span says so), until the user's
  function response brings the result;
* the OpenAI Agents SDK holds a call of a tool made with ``needs_approval`` unrun and
  ends the run: a tool span with arguments and no result after the run's last model
  call (:mod:`tracescore.conventions.openai_agents`).

The run resumes in a new run, a trace of its own, whose model calls see the whole turn:
the user's message, the call that paused and its result. That run is the turn; the
paused one is not evaluable (``paused``), and so is not a turn of its conversation for
golden matching either.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from tracescore.conventions import run_end
from tracescore.conventions.adk import CONFIRMATION_PENDING, awaits_long_running_result
from tracescore.conventions.openai_agents import held_for_approval
from tracescore.conventions.registry import paused_for, stopped_by
from tracescore.model import ToolCall
from tracescore.run_records import AgentRun, LlmStep
from tracescore.spans import STATUS_ERROR
from tracescore.tool_calls import UNNAMED_ERROR, span_error

__all__ = ["UNFINISHED", "is_pause", "pause", "run_error"]

UNFINISHED: Final = (
    "the run did not finish: its root span ended first, and the step that ends the run"
    " never came (a step failed and left no span, or the run was cut off)"
)


def run_error(run: AgentRun, failed: Sequence[LlmStep], *, answered: bool) -> str | None:
    """The run's error, by the rules of the module docstring; None for a run that did not fail.

    Args:
        run: The agent run.
        failed: The model calls that failed while the run had no answer (empty when it
            has one: a call that failed and was retried is no failure of the run).
        answered: Whether some model output was read. An unfinished run is said to be
            one only then: without content capture, the span that says a run ended
            carries nothing to say it with.

    """
    root = run.root
    error = span_error(root)
    if failed and error in (None, UNNAMED_ERROR):
        return span_error(failed[-1].view.span) or error
    if error is None and run.agent_views:
        error = stopped_by(run.agent_views)
    if error is None:
        error = _inner_error(run)
    if error is None and answered and root.scope in run_end.SCOPES and not _run_ended(run):
        return UNFINISHED
    return error


def _inner_error(run: AgentRun) -> str | None:
    """Rule 4: the error of a span that ended the run, inside it."""
    errors = [s for s in run.spans if s.status_code == STATUS_ERROR and s is not run.root]
    if not errors:
        return None
    agents = {v.span.span_id for v in run.agent_views}
    tools = {t.view.span.span_id for t in run.tool_steps}
    last_call = max((s.view.span.start_ns for s in run.llm_steps), default=None)
    for span in errors:
        inside = span.span_id in agents or (
            span.parent_span_id in agents and span.span_id not in tools
        )
        if inside and (last_call is None or last_call < span.end_ns):
            return span_error(span)
    return None


def _run_ended(run: AgentRun) -> bool:
    root = run.root
    return any(run_end.ends_run(span, root=span is root) for span in run.spans)


#: The exceptions a framework raises to pause a run for input (LangGraph's).
_PAUSES: Final = frozenset({"GraphInterrupt", "NodeInterrupt"})


def pause(run: AgentRun, calls: Sequence[ToolCall] = ()) -> str | None:
    """What paused the run for input (``"GraphInterrupt in refund"``), or None.

    The span named is the innermost that recorded the pause (the tool, not its node).
    ``calls`` are the run's tool calls: ADK answers one that needs a confirmation with a
    fixed error, and ends the run.
    """
    waiting = [c.name for c in calls if c.result == CONFIRMATION_PENDING]
    if waiting:
        return f"ADK tool confirmation for {', '.join(waiting)}"
    pending = [
        s.view.span.name.removeprefix("execute_tool ")
        for s in run.tool_steps
        if awaits_long_running_result(s.view.span)
    ]
    if pending:
        return f"ADK long-running tool {', '.join(pending)}"
    held = [
        (step.view.span.start_ns, name)
        for step in run.tool_steps
        if (name := held_for_approval(step.view.span)) is not None
    ]
    if held and run.llm_steps:
        # The model was not called again after them: the SDK held them, the run ended.
        last_call = max(step.view.span.start_ns for step in run.llm_steps)
        names = [name for start, name in held if start > last_call]
        if names:
            return f"OpenAI Agents tool approval for {', '.join(names)}"
    paused: str | None = None
    for span in run.spans:  # in tree order: an inner span comes after its parent
        for event in span.events:
            kind = event.attributes.get("exception.type") if event.name == "exception" else None
            if isinstance(kind, str) and kind.rpartition(".")[2] in _PAUSES:
                paused = f"{kind.rpartition('.')[2]} in {span.name}"
    return paused if paused is not None else paused_for(run.agent_views)


def is_pause(error: str) -> bool:
    """Whether ``error`` is the exception that paused a run: no failure.

    OpenLLMetry's LangGraph spans end in error ``GraphInterrupt`` when the graph pauses.
    """
    return error.rpartition(".")[2] in _PAUSES
