"""Score invocations with criteria, and aggregate as ``adk eval`` does (REFERENCE §3).

Per invocation: every criterion rates it (reference criteria only where a golden turn
matched, else NOT_EVALUATED ``no golden``); an invocation that is not evaluable (content
not captured, ...) gets NOT_EVALUATED with its own reason for every criterion.

Judged criteria (LLM judge) run concurrently on one event loop
(:func:`score_conversations_async`); deterministic ones run inline. The invocation's
outcome is the one reason an operator needs ("why was this not scored?"), first match
wins:

* ``not_evaluable``: the invocation itself cannot be scored (content not captured, ...);
* ``no_golden``: reference criteria are configured and no golden turn matched (the
  reference-free criteria still ran);
* ``judge_error``: a judged criterion got no verdict because of the judge (timeout,
  errors, unavailable, budget exhausted, ...);
* ``scored``: at least one criterion produced a pass/fail score (or only informational
  criteria are configured);
* ``not_evaluable`` with the criteria's reason when nothing could be scored otherwise
  (no rubrics, no final response, ...).

Per case: the invocations matched to one golden case — across every conversation that
replayed it, which pools repeated runs as ADK's pytest helper does — give each criterion
a case score (:meth:`Criterion.aggregate`) and status against the threshold; the case
status combines them (:func:`combine_statuses`). Conversations without a golden form
their own case, scored by the reference-free criteria.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tracescore.criteria import Criterion, CriterionResult, EvalContext, combine_statuses
from tracescore.criteria.base import NO_GOLDEN, EvalStatus, checked_case_result
from tracescore.criteria.evaluators import Evaluator, float_status
from tracescore.exceptions import JudgeError
from tracescore.goldens.matching import GoldenIndex
from tracescore.model import Conversation, Invocation
from tracescore.scored import (
    CaseResult,
    CriterionSummary,
    GoldenTurn,
    InvocationResult,
    Outcome,
    case_result,
    criterion_summary,
    eval_context,
    golden_turn,
    invocation_result,
)

if TYPE_CHECKING:
    from tracescore.judge.client import JudgeClient

__all__ = [
    "CaseResult",
    "CriterionSummary",
    "GoldenTurn",
    "InvocationResult",
    "Matcher",
    "Outcome",
    "evaluators_for",
    "golden_matcher",
    "golden_turn",
    "match_nothing",
    "score_conversations",
    "score_conversations_async",
    "score_invocation",
    "score_invocation_async",
    "summarize_cases",
]


#: NOT_EVALUATED reasons that come from the judge (the JudgeError family's reasons).
_JUDGE_REASONS: frozenset[str] = frozenset(
    [JudgeError.default_reason, *(cls.default_reason for cls in JudgeError.__subclasses__())]
)


def _is_judge_reason(reason: str | None) -> bool:
    return reason is not None and (reason in _JUDGE_REASONS or reason.startswith("judge error"))


#: Finds the golden turn of an invocation, given its whole conversation (the invocation
#: included): ``(ref, expected, why_not)``; ``why_not`` explains a miss.
Matcher = Callable[
    [Invocation, Sequence[Invocation]], tuple[GoldenTurn | None, Invocation | None, str | None]
]


def golden_matcher(index: GoldenIndex) -> Matcher:
    """A :data:`Matcher` over a golden index (turn by turn within a conversation)."""

    def match(
        inv: Invocation, conversation: Sequence[Invocation]
    ) -> tuple[GoldenTurn | None, Invocation | None, str | None]:
        found = index.match(inv, conversation=conversation)
        if found.outcome != "matched" or found.case is None or found.turn is None:
            return None, None, found.reason or "no golden"
        return golden_turn(found.case, found.turn), found.expected, None

    return match


def match_nothing(inv: Invocation, conversation: Sequence[Invocation]) -> tuple[None, None, str]:
    """The :data:`Matcher` without goldens: every invocation has ``no golden``."""
    return None, None, "no golden"


def score_conversations(
    conversations: Iterable[Conversation],
    criteria: Sequence[Criterion],
    *,
    match: Matcher = match_nothing,
    judge: JudgeClient | None = None,
) -> list[InvocationResult]:
    """Score every invocation of every conversation, turn by turn.

    Judged criteria need ``judge`` (without one they are NOT_EVALUATED ``no judge
    configured``); with one, the judged work runs on a fresh event loop, at whose end
    the backend's connections are closed (:func:`score_conversations_async` is the entry
    point inside a running loop).
    """
    if judge is not None and any(c.judged for c in criteria):
        client = judge

        async def run() -> list[InvocationResult]:
            try:
                return await score_conversations_async(
                    conversations, criteria, match=match, judge=client
                )
            finally:
                # Connections belong to this loop, which ends here; backends reopen lazily.
                await client.backend.aclose()

        return asyncio.run(run())
    evaluators = evaluators_for(criteria)
    return [_finish(p, p.sync_results(evaluators)) for p in _plan(conversations, criteria, match)]


async def score_conversations_async(
    conversations: Iterable[Conversation],
    criteria: Sequence[Criterion],
    *,
    match: Matcher = match_nothing,
    judge: JudgeClient | None = None,
    max_pending: int | None = None,
) -> list[InvocationResult]:
    """:func:`score_conversations` inside a running event loop.

    Deterministic criteria run inline; judged ones run as tasks, at most ``max_pending``
    criterion evaluations at a time (default: two per judge concurrency slot), so a
    large replay never holds more than a window of prompts in memory while the judge
    client's own cap keeps its calls bounded.
    """
    planned = _plan(conversations, criteria, match)
    judged = [i for i, c in enumerate(criteria) if c.judged]
    slots = asyncio.Semaphore(max_pending or 2 * (judge.concurrency if judge else 1))
    evaluators = evaluators_for(criteria)
    results = [p.sync_results(evaluators) for p in planned]

    async def run(p_index: int, c_index: int) -> None:
        planned_inv = planned[p_index]
        crit = criteria[c_index]
        async with slots:
            results[p_index][c_index] = await crit.evaluate_async(  # type: ignore[attr-defined]
                planned_inv.context, judge
            )

    tasks: list[asyncio.Task[None]] = []
    for p_index, planned_inv in enumerate(planned):
        if planned_inv.context is None:
            continue  # not evaluable: already decided for every criterion
        for c_index in judged:
            tasks.append(asyncio.ensure_future(run(p_index, c_index)))
    if tasks:
        await asyncio.gather(*tasks)
    return [_finish(p, r) for p, r in zip(planned, results)]


@dataclass(slots=True)
class _Planned:
    """An invocation with its golden and the context criteria will see."""

    inv: Invocation
    ref: GoldenTurn | None
    expected: Invocation | None
    why_not: str | None
    context: EvalContext | None  # None: not evaluable

    def sync_results(self, evaluators: Sequence[Evaluator]) -> list[CriterionResult]:
        if self.context is None:
            reason = self.inv.reason or self.inv.reason_code or "not evaluable"
            return [e.not_evaluable(reason) for e in evaluators]
        # Judged criteria evaluate synchronously to "no judge configured"; the async
        # engine replaces those results.
        context = self.context
        return [e.evaluate(context) for e in evaluators]


#: Each criterion's evaluator by the criterion's id, with the criterion itself (which
#: keeps the id from being reused while the entry lives): live scoring asks for them
#: per invocation. Cleared when it reaches :data:`_MAX_EVALUATORS` (a program that
#: makes criteria over and over).
_EVALUATORS: dict[int, tuple[Criterion, Evaluator]] = {}
_MAX_EVALUATORS = 1024


def evaluators_for(criteria: Sequence[Criterion]) -> list[Evaluator]:
    """The evaluators of ``criteria`` (:meth:`Criterion.evaluator`), in their order.

    Made once per criterion object: criteria are frozen, so an evaluator made from one
    stays right for as long as the criterion lives.
    """
    out: list[Evaluator] = []
    for criterion in criteria:
        entry = _EVALUATORS.get(id(criterion))
        if entry is None or entry[0] is not criterion:
            if len(_EVALUATORS) >= _MAX_EVALUATORS:
                _EVALUATORS.clear()
            entry = (criterion, criterion.evaluator())
            _EVALUATORS[id(criterion)] = entry
        out.append(entry[1])
    return out


def _plan(
    conversations: Iterable[Conversation], criteria: Sequence[Criterion], match: Matcher
) -> list[_Planned]:
    out: list[_Planned] = []
    for conv in conversations:
        last = len(conv.invocations) - 1
        for i, inv in enumerate(conv.invocations):
            out.append(_plan_one(inv, conv.invocations, i, match=match, last_turn=i == last))
    return out


def _plan_one(
    inv: Invocation,
    conversation: Sequence[Invocation],
    index: int,
    *,
    match: Matcher,
    last_turn: bool,
) -> _Planned:
    """Plan ``conversation[index]`` (which is ``inv``): its golden and its context."""
    ref, expected, why_not = match(inv, conversation[: index + 1])
    context = None
    if inv.status == "ok":
        context = eval_context(inv, expected, tuple(conversation[:index]), ref, last_turn)
    return _Planned(inv=inv, ref=ref, expected=expected, why_not=why_not, context=context)


def score_invocation(
    conversation: Sequence[Invocation],
    criteria: Sequence[Criterion],
    *,
    match: Matcher = match_nothing,
    judge_refused: str | None = None,
) -> InvocationResult:
    """Score the last invocation of ``conversation`` without the judge (live scoring).

    The earlier invocations are the conversation's previous turns (context for the
    matcher); whether this is the last turn is unknown. Judged criteria are NOT_EVALUATED
    with ``judge_refused`` when given (load shedding: it must name the judge so the
    outcome is ``judge_error``), else ``no judge configured``.
    """
    planned, results, _ = _prepare(conversation, criteria, match, judge_refused)
    return _finish(planned, results)


async def score_invocation_async(
    conversation: Sequence[Invocation],
    criteria: Sequence[Criterion],
    *,
    match: Matcher = match_nothing,
    judge: JudgeClient | None = None,
) -> InvocationResult:
    """:func:`score_invocation` with the judged criteria run through ``judge``."""
    planned, results, judged = _prepare(conversation, criteria, match, None)
    if planned.context is not None and judged:
        context = planned.context
        verdicts = await asyncio.gather(
            *(criteria[i].evaluate_async(context, judge) for i in judged)  # type: ignore[attr-defined]
        )
        for i, verdict in zip(judged, verdicts):
            results[i] = verdict
    return _finish(planned, results)


def _prepare(
    conversation: Sequence[Invocation],
    criteria: Sequence[Criterion],
    match: Matcher,
    judge_refused: str | None,
) -> tuple[_Planned, list[CriterionResult], list[int]]:
    index = len(conversation) - 1
    planned = _plan_one(conversation[index], conversation, index, match=match, last_turn=False)
    results = planned.sync_results(evaluators_for(criteria))
    judged = [i for i, c in enumerate(criteria) if c.judged]
    if planned.context is not None and judge_refused is not None:
        for i in judged:
            results[i] = criteria[i].evaluate_not_evaluable(judge_refused)
    return planned, results, judged


def _finish(p: _Planned, results: Sequence[CriterionResult]) -> InvocationResult:
    if p.context is None:
        reason = p.inv.reason or p.inv.reason_code or "not evaluable"
        return invocation_result(p.inv, p.ref, p.expected, "not_evaluable", reason, tuple(results))
    why: str | None = None
    if p.expected is None:
        missing = p.why_not or NO_GOLDEN
        if p.ref is not None and p.ref.scenario is not None:
            missing = "the golden case is a conversation_scenario: it has no expected turn"
        results = [_with_reason(r, missing) if r.reason == NO_GOLDEN else r for r in results]
        why = missing
    outcome, outcome_reason = _outcome(results, no_golden=why)
    return invocation_result(p.inv, p.ref, p.expected, outcome, outcome_reason, tuple(results))


def _outcome(
    results: Sequence[CriterionResult], *, no_golden: str | None
) -> tuple[Outcome, str | None]:
    """The first matching outcome of the module docstring's list."""
    if no_golden is not None and any(r.reason == no_golden for r in results):
        return "no_golden", no_golden
    judge_failures = [r.reason for r in results if _is_judge_reason(r.reason)]
    if judge_failures:
        return "judge_error", judge_failures[0]
    if any(r.status in ("passed", "failed") for r in results):
        return "scored", None
    reasons = [r.reason for r in results if r.status == "not_evaluated" and r.reason]
    if reasons:
        return "not_evaluable", reasons[0]
    return "scored", None


def _with_reason(result: CriterionResult, reason: str) -> CriterionResult:
    return CriterionResult(
        criterion=result.criterion,
        version=result.version,
        score=result.score,
        status=result.status,
        threshold=result.threshold,
        reason=reason,
        details=result.details,
    )


def summarize_cases(
    results: Sequence[InvocationResult], criteria: Sequence[Criterion]
) -> list[CaseResult]:
    """Group results into cases (golden case, else conversation) and aggregate each."""
    groups: dict[tuple[str | None, str], list[InvocationResult]] = {}
    for res in results:
        if res.golden is not None:
            key: tuple[str | None, str] = (res.golden.eval_set_id, res.golden.eval_id)
        else:
            inv = res.invocation
            key = (None, inv.conversation_id or f"{inv.trace_id}:{inv.root_span_id}")
        groups.setdefault(key, []).append(res)
    # A criterion that keeps the base class's aggregation is summarised by the same
    # functions Criterion.case_result calls, without its two method calls per case.
    rules = [(c, c.name, c.threshold, c.informational, _aggregates_by_default(c)) for c in criteria]
    cases = []
    for (set_id, eval_id), members in groups.items():
        summaries = []
        statuses: list[EvalStatus] = []
        for (crit, name, threshold, informational, default), per_inv in zip(
            rules, zip(*[m.results for m in members])
        ):
            if default:
                score = _mean(per_inv)
                case_status = float_status(score, threshold, informational)
            else:
                score, case_status = checked_case_result(crit, per_inv)
            statuses.append(case_status)
            summaries.append(criterion_summary(name, score, case_status, threshold))
        status = combine_statuses(statuses)
        cases.append(case_result(set_id, eval_id, status, tuple(summaries), tuple(members)))
    return cases


def _mean(results: Sequence[CriterionResult]) -> float | None:
    """:func:`tracescore.criteria.aggregation.mean_score`, on the floats of checked results."""
    values: list[float] = []
    for result in results:
        value = result.score
        if value is not None:
            values.append(value)
    return sum(values) / len(values) if values else None


def _aggregates_by_default(criterion: Criterion) -> bool:
    """Whether ``criterion``'s case result is the base class's: the mean, then the status."""
    kind = type(criterion)
    return kind.case_result is Criterion.case_result and kind.aggregate is Criterion.aggregate
