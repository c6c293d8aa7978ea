"""Score invocations with criteria, and aggregate as ``adk eval`` does (REFERENCE §3).

Per invocation: every criterion rates it (reference criteria only where a golden turn
matched, else NOT_EVALUATED ``no golden``); an invocation that is not evaluable (content
not captured, ...) gets NOT_EVALUATED with its own reason for every criterion.

Per case: the invocations matched to one golden case — across every conversation that
replayed it, which pools repeated runs as ADK's pytest helper does — give each criterion
a case score (:meth:`Criterion.aggregate`) and status against the threshold; the case
status combines them (:func:`combine_statuses`). Conversations without a golden form
their own case, scored by the reference-free criteria.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from tracescore.criteria import Criterion, CriterionResult, EvalContext, combine_statuses
from tracescore.criteria.base import EvalStatus
from tracescore.model import Conversation, Invocation

__all__ = [
    "CaseResult",
    "CriterionSummary",
    "GoldenTurn",
    "InvocationResult",
    "Matcher",
    "Outcome",
    "score_conversations",
    "summarize_cases",
]

#: What became of an invocation in a replay.
Outcome = Literal["scored", "no_golden", "not_evaluable"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GoldenTurn:
    """The golden turn an invocation was matched to (case and 0-based turn)."""

    eval_set_id: str
    eval_id: str
    turn: int


#: Finds the golden turn of an invocation, given its whole conversation (the invocation
#: included): ``(ref, expected, why_not)``; ``why_not`` explains a miss.
Matcher = Callable[
    [Invocation, Sequence[Invocation]], tuple[GoldenTurn | None, Invocation | None, str | None]
]


@dataclass(frozen=True, slots=True, kw_only=True)
class InvocationResult:
    """One invocation's scores, its golden and its outcome."""

    invocation: Invocation
    golden: GoldenTurn | None
    expected: Invocation | None
    outcome: Outcome
    reason: str | None
    results: tuple[CriterionResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CriterionSummary:
    """One criterion over one case."""

    criterion: str
    score: float | None
    status: EvalStatus
    threshold: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseResult:
    """A golden case (or an unmatched conversation) with its criteria and status."""

    eval_set_id: str | None
    eval_id: str
    status: EvalStatus
    criteria: tuple[CriterionSummary, ...]
    invocations: tuple[InvocationResult, ...] = field(default_factory=tuple)


def _no_golden(inv: Invocation, conversation: Sequence[Invocation]) -> tuple[None, None, str]:
    return None, None, "no golden"


def score_conversations(
    conversations: Iterable[Conversation],
    criteria: Sequence[Criterion],
    *,
    match: Matcher = _no_golden,
) -> list[InvocationResult]:
    """Score every invocation of every conversation, turn by turn."""
    out: list[InvocationResult] = []
    for conv in conversations:
        earlier: list[Invocation] = []
        for inv in conv.invocations:
            found = match(inv, conv.invocations)
            out.append(_score(inv, tuple(earlier), criteria, found))
            earlier.append(inv)
    return out


def _score(
    inv: Invocation,
    earlier: tuple[Invocation, ...],
    criteria: Sequence[Criterion],
    found: tuple[GoldenTurn | None, Invocation | None, str | None],
) -> InvocationResult:
    ref, expected, why_not = found
    if inv.status != "ok":
        reason = inv.reason or inv.reason_code or "not evaluable"
        results = tuple(c.evaluate_not_evaluable(reason) for c in criteria)
        return InvocationResult(
            invocation=inv,
            golden=ref,
            expected=expected,
            outcome="not_evaluable",
            reason=reason,
            results=results,
        )
    ctx = EvalContext(actual=inv, expected=expected, conversation=earlier)
    results = tuple(c.evaluate(ctx) for c in criteria)
    if expected is None:
        results = tuple(
            _with_reason(r, why_not) if r.reason == "no golden" and why_not else r for r in results
        )
    return InvocationResult(
        invocation=inv,
        golden=ref,
        expected=expected,
        outcome="scored" if expected is not None else "no_golden",
        reason=None if expected is not None else why_not,
        results=results,
    )


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
    cases = []
    for (set_id, eval_id), members in groups.items():
        summaries = []
        for i, crit in enumerate(criteria):
            per_inv = [m.results[i] for m in members]
            score, status = crit.case_result(per_inv)
            summaries.append(
                CriterionSummary(
                    criterion=crit.name, score=score, status=status, threshold=crit.threshold
                )
            )
        cases.append(
            CaseResult(
                eval_set_id=set_id,
                eval_id=eval_id,
                status=combine_statuses([s.status for s in summaries]),
                criteria=tuple(summaries),
                invocations=tuple(members),
            )
        )
    return cases
