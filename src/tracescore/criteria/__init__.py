"""Criteria: the contract, the registry, and the built-in criteria (registered on import)."""

from tracescore.criteria import efficiency, judged, text, trajectory
from tracescore.criteria.base import (
    Criterion,
    CriterionResult,
    EvalContext,
    EvalStatus,
    Score,
    combine_statuses,
    status_for,
)
from tracescore.criteria.registry import (
    criterion_class,
    informational_criteria,
    known_criteria,
    register_criterion,
)

__all__ = [
    "Criterion",
    "CriterionResult",
    "EvalContext",
    "EvalStatus",
    "Score",
    "combine_statuses",
    "criterion_class",
    "efficiency",
    "informational_criteria",
    "judged",
    "known_criteria",
    "register_criterion",
    "status_for",
    "text",
    "trajectory",
]
