"""Released live traces → invocations → sampling → goldens → criteria → sinks.

Runs on the live worker's event loop. Deterministic work happens inline when a trace is
submitted; an invocation with sampled-in judged criteria becomes one task per trace, and
at most ``max_judged_traces`` such tasks wait for the judge at once. Beyond that the judged
criteria of new traces are not run but NOT_EVALUATED ``judge error: backlog full``
(outcome ``judge_error``): the deterministic scores still land, memory stays bounded and
the shedding is counted.

Every trace ends in exactly one counted outcome (``tracescore_traces_total``), and each
of its invocations in exactly one (``tracescore_invocations_total``): scored,
sampled_out, no_golden, not_evaluable, judge_error or dropped. A trace dropped before it
could be rebuilt counts as one dropped invocation (its invocations are unknown). A trace
with no agent activity has no invocation; its trace outcome is ``no_agent``.

Conversation context: the turns seen recently are kept per conversation id (bounded), so
a turn is matched to its golden turn and judged with the turns before it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

from prometheus_client import CollectorRegistry

from tracescore.criteria import Criterion
from tracescore.goldens import GoldenIndex, GoldenSet
from tracescore.live.assembly import LiveTrace
from tracescore.model import Invocation
from tracescore.sampling import SamplingDecision, SamplingPolicy
from tracescore.scoring import (
    InvocationResult,
    Matcher,
    Outcome,
    golden_matcher,
    match_nothing,
    score_invocation,
    score_invocation_async,
)
from tracescore.spans import STATUS_ERROR, Attributes, AttrValue, SpanRecord
from tracescore.trajectory import build_invocations

if TYPE_CHECKING:
    from tracescore.judge.client import JudgeClient
    from tracescore.judge.outcomes import JudgeCallRecord
    from tracescore.sinks.otel_events import EvaluationEventSink
    from tracescore.sinks.prometheus import ScoreMetrics

__all__ = ["BACKLOG_FULL", "LiveScorer"]

logger = logging.getLogger(__name__)

#: The NOT_EVALUATED reason of judged criteria shed because the judge is behind.
BACKLOG_FULL: Final = "judge error: backlog full"
#: A trace's outcome when its invocations disagree: the first in this order.
_TRACE_PRIORITY: Final[tuple[Outcome, ...]] = (
    "scored",
    "judge_error",
    "no_golden",
    "not_evaluable",
    "sampled_out",
    "dropped",
)
_AGENT_KEYS: Final = ("gen_ai.agent.name", "agent_name", "gcp.vertex.agent.agent_name")


class LiveScorer:
    """Scores released traces and reports every outcome to the sinks.

    Not thread-safe: used from the live worker's event loop only.

    Args:
        criteria: The configured criteria.
        match: Finds an invocation's golden turn (default: none).
        sampling: Which invocations and criteria to score.
        judge: Judge client for judged criteria.
        metrics: Prometheus sink.
        events: Evaluation-event sink.
        max_judged_traces: Traces waiting for the judge at once.
        max_conversations: Conversations whose recent turns are kept (least recently
            active ones are forgotten first; their next turn is matched alone).
        max_turns: Turns kept per conversation.

    """

    def __init__(
        self,
        criteria: Sequence[Criterion],
        *,
        match: Matcher = match_nothing,
        sampling: SamplingPolicy | None = None,
        judge: JudgeClient | None = None,
        metrics: ScoreMetrics | None = None,
        events: EvaluationEventSink | None = None,
        max_judged_traces: int = 256,
        max_conversations: int = 2_000,
        max_turns: int = 20,
    ) -> None:
        self.criteria = tuple(criteria)
        self.match = match
        self.sampling = sampling or SamplingPolicy()
        self.sampling.check_criteria(self.criteria)
        self.judge = judge
        self.metrics = metrics
        self.events = events
        self.max_judged_traces = max_judged_traces
        self.max_conversations = max_conversations
        self.max_turns = max_turns
        # Rebuild only what the criteria read (see Criterion.needs_model_context).
        self._model_context = any(c.needs_model_context for c in self.criteria)
        self._history: OrderedDict[str, list[Invocation]] = OrderedDict()
        #: Response id -> the conversation of the turn that made it (least recent first).
        self._chains: OrderedDict[str, str] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()
        #: Outcomes so far, per trace and per invocation (also what tests assert).
        self.trace_outcomes: dict[str, int] = {}
        self.invocation_outcomes: dict[str, int] = {}
        if metrics is not None:
            metrics.set_thresholds(self.criteria)

    @classmethod
    def build(
        cls,
        criteria: Sequence[Criterion],
        *,
        registry: CollectorRegistry,
        goldens: Sequence[GoldenSet] = (),
        sampling: SamplingPolicy | None = None,
        judge: JudgeClient | None = None,
        events: EvaluationEventSink | None = None,
        window_s: float = 300.0,
        max_judged_traces: int = 256,
        clock: Callable[[], float] = time.monotonic,
    ) -> LiveScorer:
        """A scorer with its metrics on ``registry`` and the judge reporting to them.

        A judge that already has an observer keeps it; the metrics observer is added.
        """
        from tracescore.sinks.prometheus import ScoreMetrics  # noqa: PLC0415 - cycle

        metrics = ScoreMetrics(registry, window_s=window_s, clock=clock)
        if judge is not None:
            metrics.track_budget(judge.ledger)
            previous = judge.observer
            if previous is None:
                judge.observer = metrics.observe_judge
            else:

                def both(record: JudgeCallRecord) -> None:
                    previous(record)
                    metrics.observe_judge(record)

                judge.observer = both
        return cls(
            criteria,
            match=golden_matcher(GoldenIndex(goldens)),
            sampling=sampling,
            judge=judge,
            metrics=metrics,
            events=events,
            max_judged_traces=max_judged_traces,
        )

    @property
    def pending(self) -> int:
        """Traces waiting for the judge."""
        return len(self._tasks)

    def submit(self, trace: LiveTrace) -> None:
        """Score a released trace: inline, or as a task when it needs the judge."""
        if trace.kind == "dropped":
            self._count_trace("dropped")
            self._count_invocation(_agent_hint(trace.spans), "dropped")
            return
        if not trace.spans:
            self._count_trace("no_agent")
            return
        invocations = [
            inv
            for inv in build_invocations(
                trace.spans,
                trace.logs,
                complete=trace.kind == "complete",
                model_context=self._model_context,
            )
            if inv.parent_tool_span_id is None  # agents called as tools belong to their caller
        ]
        if not invocations:
            self._count_trace("no_agent")
            return
        errored = any(span.status_code == STATUS_ERROR for span in trace.spans)
        roots = {span.span_id: span for span in trace.spans}
        plans: list[tuple[list[Invocation], SamplingDecision]] = []
        for inv in invocations:
            key = self._conversation_key(inv)
            decision = self.sampling.decide(
                inv,
                self.criteria,
                attributes=_root_attributes(roots, inv),
                errored=errored,
                conversation_id=key,
            )
            plans.append((self._remember(inv, key), decision))
        needs_judge = any(
            c.judged and c.name in d.criteria for _, d in plans for c in self.criteria
        )
        refused = BACKLOG_FULL if needs_judge and self.pending >= self.max_judged_traces else None
        if needs_judge and refused is None:
            task = asyncio.ensure_future(self._score_trace(plans))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        self._run_inline(plans, refused)

    def _run_inline(
        self, plans: list[tuple[list[Invocation], SamplingDecision]], refused: str | None
    ) -> None:
        outcomes = []
        for conversation, decision in plans:
            if decision.sampled_out:
                result = self._sampled_out(conversation[-1], decision)
            else:
                result = score_invocation(
                    conversation, self._chosen(decision), match=self.match, judge_refused=refused
                )
            self._emit(result, decision.skipped)
            outcomes.append(result.outcome)
        self._count_trace(_trace_outcome(outcomes))

    async def _score_trace(self, plans: list[tuple[list[Invocation], SamplingDecision]]) -> None:
        outcomes: list[str] = []
        try:
            for conversation, decision in plans:
                if decision.sampled_out:
                    result = self._sampled_out(conversation[-1], decision)
                else:
                    result = await score_invocation_async(
                        conversation, self._chosen(decision), match=self.match, judge=self.judge
                    )
                self._emit(result, decision.skipped)
                outcomes.append(result.outcome)
        except asyncio.CancelledError:
            # Shutdown gave up waiting: the rest of the trace is dropped, counted.
            for conversation, _ in plans[len(outcomes) :]:
                self._count_invocation(conversation[-1].agent, "dropped")
            outcomes.append("dropped")
            self._count_trace(_trace_outcome(outcomes))
            raise
        self._count_trace(_trace_outcome(outcomes))

    def _chosen(self, decision: SamplingDecision) -> list[Criterion]:
        return [c for c in self.criteria if c.name in decision.criteria]

    @staticmethod
    def _sampled_out(inv: Invocation, decision: SamplingDecision) -> InvocationResult:
        return InvocationResult(
            invocation=inv,
            golden=None,
            expected=None,
            outcome="sampled_out",
            reason=decision.reason,
            results=(),
        )

    def _emit(self, result: InvocationResult, skipped: Sequence[str]) -> None:
        self.invocation_outcomes[result.outcome] = (
            self.invocation_outcomes.get(result.outcome, 0) + 1
        )
        if self.metrics is not None:
            self.metrics.record(result, sampled_out=skipped)
        if self.events is not None and result.results:
            try:
                self.events.emit(result)
            except Exception:  # an exporter problem must not stop scoring
                logger.warning("evaluation events could not be emitted", exc_info=True)

    def _count_invocation(self, agent: str | None, outcome: str) -> None:
        self.invocation_outcomes[outcome] = self.invocation_outcomes.get(outcome, 0) + 1
        if self.metrics is not None:
            self.metrics.record_outcome(agent=agent, outcome=outcome)

    def _count_trace(self, outcome: str) -> None:
        self.trace_outcomes[outcome] = self.trace_outcomes.get(outcome, 0) + 1
        if self.metrics is not None:
            self.metrics.record_trace(outcome)

    def _conversation_key(self, inv: Invocation) -> str | None:
        """The id of the invocation's conversation, its responses noted under it.

        A turn continuing a response an earlier turn made (a Responses API chain, see
        :mod:`tracescore.response_chains`) belongs to that one's conversation; a turn
        that made responses is keyed by its first one's id when it has no other, so that
        a later turn can continue it. Sampling ``by = "conversation"`` hashes this key,
        so a chain's turns are sampled together when this scorer saw the chain begin.
        """
        key = inv.conversation_id
        if key:
            key = self._chains.get(key, key)
        elif inv.response_ids:
            key = inv.response_ids[0]
        if not key:
            return None
        for response_id in inv.response_ids:
            self._chains[response_id] = key
            self._chains.move_to_end(response_id)
        while len(self._chains) > self.max_conversations * self.max_turns:
            self._chains.popitem(last=False)
        return key

    def _remember(self, inv: Invocation, key: str | None) -> list[Invocation]:
        """The invocation's conversation so far (earlier turns, then it).

        Args:
            inv: The invocation.
            key: Its conversation's key (:meth:`_conversation_key`); None: a lone run.

        """
        if not key:
            return [inv]
        turns = self._history.get(key)
        if turns is None:
            turns = self._history[key] = []
            if len(self._history) > self.max_conversations:
                self._history.popitem(last=False)
        else:
            self._history.move_to_end(key)
        turns.append(inv)
        turns.sort(key=lambda i: i.start_ns)
        if len(turns) > self.max_turns:
            del turns[: len(turns) - self.max_turns]
        return turns[: turns.index(inv) + 1]

    def snapshot(self) -> set[asyncio.Task[None]]:
        """The tasks pending now (a flush waits for these, not later ones)."""
        return set(self._tasks)

    def count_failed(self, trace: LiveTrace) -> None:
        """Count a trace whose scoring raised (a bug, logged by the caller) as dropped."""
        self._count_trace("dropped")
        self._count_invocation(_agent_hint(trace.spans), "dropped")

    async def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for the traces pending on the judge; False when ``timeout_s`` passed first.

        On timeout the remaining tasks are cancelled (their invocations count as dropped).
        """
        if not self._tasks:
            return True
        tasks = set(self._tasks)
        _, pending = await asyncio.wait(tasks, timeout=timeout_s)
        if pending:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            return False
        return True


def _trace_outcome(outcomes: Sequence[str]) -> str:
    for outcome in _TRACE_PRIORITY:
        if outcome in outcomes:
            return outcome
    return "no_agent"


def _root_attributes(spans: dict[str, SpanRecord], inv: Invocation) -> dict[str, AttrValue]:
    root = spans.get(inv.root_span_id or "")
    if root is None:
        return {}
    merged: Attributes = dict(root.resource)
    merged.update(root.attributes)
    return merged


def _agent_hint(spans: Sequence[SpanRecord]) -> str | None:
    """An agent name from a trace that will not be rebuilt (for the dropped count)."""
    for span in spans:
        for key in _AGENT_KEYS:
            value = span.attributes.get(key)
            if isinstance(value, str) and value:
                return value
    return None
