"""ADK's status and aggregation rules (REFERENCE §3), for one result and for one case.

* ``score >= threshold`` passes, below fails; a ``None`` score or threshold is
  NOT_EVALUATED; informational criteria never pass or fail (:func:`status_for`);
* a case's score is the mean of its invocations' scores that are not ``None``
  (:func:`mean_score`, what :meth:`Criterion.aggregate` returns unless a criterion pools
  otherwise), and a case's overall status combines its criteria's (:func:`combine_statuses`).

A replay applies these once per criterion and invocation, and again per case. The
module stays interpreted, though the scoring loop that calls it is compiled: users'
criteria call it too, with any number Python compares (a ``Decimal`` from an own
``aggregate``), which a compiled ``float`` parameter would refuse.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracescore.criteria.results import CriterionResult, EvalStatus

__all__ = ["combine_statuses", "mean_score", "status_for"]


def combine_statuses(statuses: Sequence[EvalStatus]) -> EvalStatus:
    """A case's overall status from its criteria's statuses, as ADK combines them.

    Any failed → failed; else any passed → passed; else not evaluated. Informational
    statuses do not count.
    """
    judged = [s for s in statuses if s != "informational"]
    if "failed" in judged:
        return "failed"
    return "passed" if "passed" in judged else "not_evaluated"


def status_for(score: float | None, threshold: float | None, *, informational: bool) -> EvalStatus:
    """ADK's status rule: informational never judges; ``>=`` passes; None is not evaluated."""
    if informational:
        return "informational"
    if score is None or threshold is None:
        return "not_evaluated"
    return "passed" if score >= threshold else "failed"


def mean_score(results: Sequence[CriterionResult]) -> float | None:
    """The mean of the results' scores that are not ``None``; ``None`` when none is."""
    values = [r.score for r in results if r.score is not None]
    return sum(values) / len(values) if values else None
