"""The records of scoring: what a criterion sees, its score, its result.

Kept apart from the :class:`~tracescore.criteria.base.Criterion` contract so that the
rules that read them (:mod:`.aggregation`) can be compiled with mypyc (``hatch_build.py``)
while these public dataclasses stay Python: users build, copy and read them with
``dataclasses``. Re-exported by :mod:`tracescore.criteria`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from tracescore.conventions.messages import JsonValue
from tracescore.goldens.evalset import GoldenRubric, GoldenScenario
from tracescore.model import Invocation
from tracescore.records import quick_init

__all__ = ["NO_GOLDEN", "CriterionResult", "EvalContext", "EvalStatus", "Score"]

EvalStatus = Literal["passed", "failed", "not_evaluated", "informational"]
NO_GOLDEN: Final = "no golden"


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class EvalContext:
    """What a criterion sees for one invocation.

    Attributes:
        actual: The invocation rebuilt from telemetry.
        expected: The golden turn it was matched to, or None.
        conversation: The earlier turns of the same conversation, oldest first.
        rubrics: Rubrics of the matched golden case and turn (case first).
        scenario: The matched case's ``conversation_scenario`` (simulated-user replays).
        last_turn: True when ``actual`` is known to be the conversation's last turn
            (replays know; live scoring does not).

    """

    actual: Invocation
    expected: Invocation | None = None
    conversation: tuple[Invocation, ...] = ()
    rubrics: tuple[GoldenRubric, ...] = ()
    scenario: GoldenScenario | None = None
    last_turn: bool = False


# Score and CriterionResult are not frozen: a replay builds one of each per criterion and
# invocation (100k+ for 13k turns), and a frozen dataclass's __init__ (object.__setattr__
# per field) costs 2.5 times as much. Treat them as immutable all the same: sinks share them.


@dataclass(slots=True, kw_only=True)
class Score:
    """A criterion's rating of one invocation; ``value`` None means not evaluated."""

    value: float | None
    reason: str | None = None
    details: Mapping[str, JsonValue] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class CriterionResult:
    """A score with its status, as reported and exported."""

    criterion: str
    version: str
    score: float | None
    status: EvalStatus
    threshold: float | None
    reason: str | None = None
    details: Mapping[str, JsonValue] = field(default_factory=dict)
