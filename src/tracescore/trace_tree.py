"""Cut one trace's span tree into agent runs (the future invocations) and their steps.

Rules (REFERENCE §5.1, §5.5):

* An agent run is rooted at the outermost agent-ish span (``invocation``, ``workflow``,
  ``agent``). Agent spans below it are sub-agents of the same run.
* An agent-ish span *under a tool span* starts a run of its own (ADK ``AgentTool``,
  agents used as tools): its spans belong to that nested run, not to the caller. So does
  one that runs *within the time of a tool span of the run*, for instrumentations that
  write the called agent beside the tool that called it (agno's team delegation under
  OpenInference, OpenLLMetry's OpenAI Agents ``as_tool``): an agent handed control
  (ADK's transfer) runs after the transfer tool returned, not during it. A smolagents
  managed agent's run, which no tool span records, is both: a run of its own, and the
  execution of its manager's call (a tool step of the manager's run).
* Model-call spans nested in a model-call span are one call seen by two instrumentations
  (e.g. ADK ``call_llm`` › ``generate_content``): the outer one is the step, the inner
  ones are extra sources for it. Model calls made *inside a tool* are the tool's business
  and not steps of the run; same for tool spans nested in a tool span (e.g. an MCP
  ``tools/call`` client span under the framework's ``execute_tool``).
* A ``turn`` span (one step of a named agent: LlamaIndex's ``run_agent_step``, or a
  step whose event names the agent taking over) names the agent of the spans inside
  it and of the steps after it beside it (same parent), until the next turn: a
  LlamaIndex workflow runs an agent's steps one after another, as siblings (its model
  call in one, its tool calls in others). Consecutive turns of one agent are one visit.
* A ``parse`` span (the agent reading a reply's text: a ReAct agent's output parser)
  belongs to the model call just before it in the same step.
* Model and tool spans outside any agent-ish span (plain LLM instrumentation, chains)
  form a run rooted at their tree root.
* A model output event (log record) on a span that is no model call belongs to the one
  model call running when it was emitted (a streamed call's ``gen_ai.choice`` emitted
  in the caller's context).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from itertools import repeat
from operator import attrgetter
from typing import Final

from tracescore.conventions import smolagents
from tracescore.conventions.base import SpanView, StepKind
from tracescore.conventions.registry import agent_name, classify
from tracescore.run_records import AgentRun, LlmStep, ToolStep
from tracescore.spans import LogRecord, SpanRecord

__all__ = ["split_runs"]

_AGENTISH: frozenset[StepKind] = frozenset({"invocation", "workflow", "agent"})


#: What a span inherits from its ancestors: its run, agent, enclosing tool and model call.
_Ctx = tuple["AgentRun | None", "str | None", "SpanRecord | None", "LlmStep | None"]


def split_runs(spans: Sequence[SpanRecord], logs: Sequence[LogRecord] = ()) -> list[AgentRun]:
    """Group the spans of one trace into agent runs, ordered by start time.

    Args:
        spans: Finished spans of a single trace, in any order.
        logs: Log records of the same trace; those with a span id are attached to it.

    """
    # Sorted once, so every children list is built in start order.
    ordered = sorted(spans, key=_START)
    by_id = {s.span_id: s for s in ordered}
    children: dict[str | None, list[SpanRecord]] = defaultdict(list)
    tops: list[SpanRecord] = []
    for s in ordered:
        if s.parent_span_id is None or s.parent_span_id not in by_id:
            tops.append(s)
        else:
            children[s.parent_span_id].append(s)
    logs_by_span: dict[str, list[LogRecord]] = defaultdict(list)
    outputs: list[tuple[str, LogRecord]] = []
    for log in logs:
        if log.span_id:
            logs_by_span[log.span_id].append(log)
            if log.name in _OUTPUT_EVENTS:
                outputs.append((log.span_id, log))
    if outputs:
        _rehome_stray_outputs(outputs, ordered, by_id, logs_by_span)

    def view(span: SpanRecord) -> SpanView:
        return SpanView(span, logs_by_span.get(span.span_id, []))

    runs: list[AgentRun] = []
    # Parent span id -> the agent the last turn among its children named: the steps
    # after a turn, beside it, are that agent's too (see the module docstring).
    turns: dict[str, str] = {}
    for top in tops:
        loose = AgentRun(root=top)
        stack: list[tuple[SpanRecord, _Ctx]] = [(top, (None, None, None, None))]
        while stack:
            span, (run, agent, tool, llm) = stack.pop()
            if turns and span.parent_span_id in turns:
                agent = turns[span.parent_span_id]
            kind = classify(span)
            if kind in _AGENTISH:
                name = agent_name(span)
                caller = tool
                if run is not None and caller is None:
                    caller = _calling_tool(span, run.tool_steps)
                    if caller is None and smolagents.is_run(span):
                        # A smolagents managed agent: its manager's model called it by
                        # name, and no tool span records the call; its run is the call.
                        run.tool_steps.append(ToolStep(view(span), agent))
                        caller = span
                if run is None or caller is not None:
                    run = AgentRun(root=span, parent_tool=caller)
                    runs.append(run)
                    tool, llm = None, None
                if name and name != agent:
                    run.agents.append(name)
                    agent = name
                run.agent_views.append(view(span))
            owner = run if run is not None else loose
            if kind == "turn":
                name = agent_name(span)
                if name:
                    if not owner.agents or owner.agents[-1] != name:
                        owner.agents.append(name)
                    agent = name
                    if span.parent_span_id is not None:
                        turns[span.parent_span_id] = name
            owner.spans.append(span)
            if kind == "llm" and tool is None:
                if llm is None:
                    llm = LlmStep(view(span), agent_name(span) or agent)
                    owner.llm_steps.append(llm)
                else:
                    llm.nested.append(view(span))
            elif kind == "parse" and tool is None:
                _read_by(owner.llm_steps, span, view)
            elif kind == "retrieval" and tool is None:
                owner.retrievals.append(view(span))
            elif kind == "tool":
                if tool is None:
                    owner.tool_steps.append(ToolStep(view(span), agent))
                    tool = span
                else:
                    step = _step_of(owner, tool)
                    if step is not None:
                        step.nested.append(span)
            kids = children.get(span.span_id)
            if kids:
                # Reverse start order on a LIFO stack = visit children in start order.
                stack.extend(zip(reversed(kids), repeat((run, agent, tool, llm))))
        if loose.llm_steps or (loose.tool_steps and not runs and not _served(loose.tool_steps)):
            runs.append(loose)
    runs.sort(key=lambda r: r.root.start_ns)
    return runs


def _read_by(
    steps: Sequence[LlmStep], parse: SpanRecord, view: Callable[[SpanRecord], SpanView]
) -> None:
    """Give the model call a ``parse`` span read its reply: the run's last call so far.

    Only one beside it (the same parent: the agent step that made the call and parsed
    its reply) and started before it, and only once: a parse span anywhere else (an
    output parser the user ran on text of their own) reads no model call.
    """
    if not steps:
        return
    step = steps[-1]
    call = step.view.span
    if (
        step.parse is None
        and call.parent_span_id == parse.parent_span_id
        and call.start_ns <= parse.start_ns
    ):
        step.parse = view(parse)


#: Model output events an instrumentation may emit in its caller's context when a streamed
#: call ends: OpenLLMetry's openai instrumentation (0.62) emits each ``gen_ai.choice``
#: where the stream was read (the agent's span), then ends the call's span.
_OUTPUT_EVENTS = frozenset({"gen_ai.choice"})


def _rehome_stray_outputs(
    outputs: Sequence[tuple[str, LogRecord]],
    spans: Sequence[SpanRecord],
    by_id: dict[str, SpanRecord],
    logs_by_span: dict[str, list[LogRecord]],
) -> None:
    """Give a model call the output events that landed on another span while it ran.

    ``outputs`` are the trace's output events with the span each is on. One on a span
    that is no model call (or on none of the trace's spans) belongs to the one model
    call whose time holds the event's and that has no output event of its own; with
    none or several such calls (overlapping streams) it stays where it is.
    """
    stray = [
        (span_id, log)
        for span_id, log in outputs
        if span_id not in by_id or classify(by_id[span_id]) != "llm"
    ]
    if not stray:
        return
    answered = {span_id for span_id, _ in outputs} - {span_id for span_id, _ in stray}
    calls = [s for s in spans if classify(s) == "llm" and s.span_id not in answered]
    for span_id, log in stray:
        running = [c for c in calls if c.start_ns <= log.time_ns <= c.end_ns]
        if len(running) == 1:
            logs_by_span[span_id].remove(log)
            logs_by_span[running[0].span_id].append(log)


def _step_of(run: AgentRun, tool: SpanRecord) -> ToolStep | None:
    """The run's step of ``tool``: the latest step, as the tree is walked depth first."""
    for step in reversed(run.tool_steps):
        if step.view.span is tool:
            return step
    return None  # pragma: no cover - the enclosing tool is always a step of the run


#: OTLP ``SpanKind.SERVER``.
_SERVER = 2


def _served(tools: Sequence[ToolStep]) -> bool:
    """Every tool span is the server side of an MCP call, in a trace of its own.

    The ``mcp`` SDK traces each ``tools/call`` a server handles (a SERVER span saying
    ``gen_ai.operation.name = execute_tool``). Without the client's trace context it
    starts a trace of its own: the MCP server's work, not an agent run (the agent's
    call is in the agent's trace), so the trace has no agent activity.
    """
    return all(
        step.view.span.kind == _SERVER and "mcp.method.name" in step.view.span.attributes
        for step in tools
    )


_START: Final = attrgetter("start_ns")


def _calling_tool(span: SpanRecord, tools: Sequence[ToolStep]) -> SpanRecord | None:
    """The run's tool span (seen so far) whose time holds ``span``'s: the tool that called it.

    The latest such tool wins (the innermost, when tools run tools).
    """
    for step in reversed(tools):
        called = step.view.span
        if called.start_ns <= span.start_ns and span.end_ns <= called.end_ns:
            return called
    return None
