"""The records of a scoring run, and their quick construction from compiled code.

What :mod:`tracescore.scoring` produces (re-exported there): per invocation an
:class:`InvocationResult` (its golden turn, outcome and criterion results), per case a
:class:`CaseResult` of :class:`CriterionSummary` rows. A replay makes them by the
thousand (13k invocations, 70k summaries in the replay benchmark), so the builders here
store their fields through the slots (:func:`tracescore.records.field_setters`) rather
than calling the classes with keywords, as :func:`golden_turn` and
:func:`eval_context` do for the golden turn and the criteria's context. Each builder is
typed like its record, and tests/test_scoring.py holds every one to the record its
keywords build.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar

from tracescore.criteria.results import CriterionResult, EvalContext, EvalStatus
from tracescore.goldens.cases import GoldenCase
from tracescore.goldens.evalset import GoldenRubric, GoldenScenario
from tracescore.model import Invocation
from tracescore.records import Setter, field_setters, quick_init

__all__ = [
    "CaseResult",
    "CriterionSummary",
    "GoldenTurn",
    "InvocationResult",
    "Outcome",
    "case_result",
    "criterion_summary",
    "eval_context",
    "golden_turn",
    "invocation_result",
]

#: What became of an invocation. Replays produce ``scored``, ``no_golden``,
#: ``not_evaluable`` and ``judge_error``; the live engine also ``sampled_out`` (no
#: criterion was sampled for it) and ``dropped`` (shed under load, never scored).
Outcome = Literal["scored", "sampled_out", "no_golden", "not_evaluable", "judge_error", "dropped"]


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class GoldenTurn:
    """The golden turn an invocation was matched to (case and 0-based turn).

    ``rubrics`` (case then turn) and ``scenario`` travel along for judged criteria.
    """

    eval_set_id: str
    eval_id: str
    turn: int
    rubrics: tuple[GoldenRubric, ...] = field(default=(), compare=False)
    scenario: GoldenScenario | None = field(default=None, compare=False)


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class InvocationResult:
    """One invocation's scores, its golden and its outcome."""

    invocation: Invocation
    golden: GoldenTurn | None
    expected: Invocation | None
    outcome: Outcome
    reason: str | None
    results: tuple[CriterionResult, ...]


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class CriterionSummary:
    """One criterion over one case."""

    criterion: str
    score: float | None
    status: EvalStatus
    threshold: float | None


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class CaseResult:
    """A golden case (or an unmatched conversation) with its criteria and status."""

    eval_set_id: str | None
    eval_id: str
    status: EvalStatus
    criteria: tuple[CriterionSummary, ...]
    invocations: tuple[InvocationResult, ...] = field(default_factory=tuple)


_R = TypeVar("_R")
_new: Final = object.__new__

# The records made per invocation and per case are stored through their slots
# (records.field_setters): from compiled code, a keyword call of a quick_init class
# builds a kwargs dict for its Python __init__, which took a third of summarize_cases.
_SUMMARY: Final = field_setters(CriterionSummary, "criterion", "score", "status", "threshold")
_CASE: Final = field_setters(
    CaseResult, "eval_set_id", "eval_id", "status", "criteria", "invocations"
)
_RESULT: Final = field_setters(
    InvocationResult, "invocation", "golden", "expected", "outcome", "reason", "results"
)
_GOLDEN_TURN: Final = field_setters(
    GoldenTurn, "eval_set_id", "eval_id", "turn", "rubrics", "scenario"
)
_CONTEXT: Final = field_setters(
    EvalContext, "actual", "expected", "conversation", "rubrics", "scenario", "last_turn"
)


def _stored(kind: type[_R], setters: tuple[Setter, ...], values: tuple[Any, ...]) -> _R:
    """A ``kind`` record with ``values`` stored by ``setters`` (each field, in their order)."""
    record: _R = _new(kind)
    for index in range(len(setters)):  # as many as values: the typed builders below
        setters[index](record, values[index])
    return record


# Typed like their records, so that mypy checks what each caller stores.


def criterion_summary(
    criterion: str, score: float | None, status: EvalStatus, threshold: float | None
) -> CriterionSummary:
    """``CriterionSummary(criterion=..., ...)``, stored through the slots."""
    return _stored(CriterionSummary, _SUMMARY, (criterion, score, status, threshold))


def case_result(
    eval_set_id: str | None,
    eval_id: str,
    status: EvalStatus,
    criteria: tuple[CriterionSummary, ...],
    invocations: tuple[InvocationResult, ...],
) -> CaseResult:
    """``CaseResult(eval_set_id=..., ...)``, stored through the slots."""
    return _stored(CaseResult, _CASE, (eval_set_id, eval_id, status, criteria, invocations))


def invocation_result(
    invocation: Invocation,
    golden: GoldenTurn | None,
    expected: Invocation | None,
    outcome: Outcome,
    reason: str | None,
    results: tuple[CriterionResult, ...],
) -> InvocationResult:
    """``InvocationResult(invocation=..., ...)``, stored through the slots."""
    values = (invocation, golden, expected, outcome, reason, results)
    return _stored(InvocationResult, _RESULT, values)


def eval_context(
    actual: Invocation,
    expected: Invocation | None,
    conversation: tuple[Invocation, ...],
    ref: GoldenTurn | None,
    last_turn: bool,
) -> EvalContext:
    """The :class:`EvalContext` of ``actual``, with the rubrics and scenario of ``ref``."""
    rubrics, scenario = ((), None) if ref is None else (ref.rubrics, ref.scenario)
    values = (actual, expected, conversation, rubrics, scenario, last_turn)
    return _stored(EvalContext, _CONTEXT, values)


def golden_turn(case: GoldenCase, turn: int) -> GoldenTurn:
    """The :class:`GoldenTurn` of ``case``'s 0-based ``turn``, with its rubrics."""
    turn_rubrics = case.turn_rubrics[turn] if turn < len(case.turn_rubrics) else ()
    rubrics: tuple[GoldenRubric, ...] = (
        (*case.rubrics, *turn_rubrics) if turn_rubrics else case.rubrics  # usually both ()
    )
    scenario: GoldenScenario | None = case.scenario
    values = (case.eval_set_id, case.eval_id, turn, rubrics, scenario)
    return _stored(GoldenTurn, _GOLDEN_TURN, values)
