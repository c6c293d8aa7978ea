"""The golden dataclasses: what the loaders build from an evalset (no pydantic here).

Kept apart from :mod:`tracescore.goldens.evalset` so that both loaders (its pydantic path
and :mod:`tracescore.goldens.fastpath`) build them without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from tracescore.conventions.messages import JsonValue
from tracescore.model import Invocation
from tracescore.records import quick_init

if TYPE_CHECKING:
    from tracescore.goldens import schema

__all__ = [
    "GoldenCase",
    "GoldenFormat",
    "GoldenRubric",
    "GoldenScenario",
    "GoldenSet",
    "golden_rubrics",
]

GoldenFormat = Literal["evalset", "test_json"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GoldenRubric:
    """A rubric of a case or turn: id, the property checked, optional type/description."""

    rubric_id: str
    text: str | None
    type: str | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GoldenScenario:
    """A ``conversation_scenario`` for a simulated user."""

    starting_prompt: str
    conversation_plan: str
    user_persona: JsonValue = None


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class GoldenCase:
    """One eval case, its turns rebuilt as expected invocations.

    Attributes:
        eval_set_id: The eval set the case belongs to.
        eval_id: The case id, unique within its eval set.
        turns: The expected invocations, in conversation order (empty for a scenario case).
        rubrics: Case rubrics (apply to every turn).
        turn_rubrics: Per-turn rubrics, parallel to ``turns``.
        scenario: The conversation scenario, for a case without a static conversation.
        session_input: ``session_input`` as written (extra keys kept), or None.

    """

    eval_set_id: str
    eval_id: str
    turns: tuple[Invocation, ...]
    rubrics: tuple[GoldenRubric, ...] = ()
    turn_rubrics: tuple[tuple[GoldenRubric, ...], ...] = ()
    scenario: GoldenScenario | None = None
    session_input: Mapping[str, JsonValue] | None = None

    def expected(self, turn: int) -> Invocation | None:
        """The expected invocation of 0-based ``turn``; None past the static turns."""
        return self.turns[turn] if turn < len(self.turns) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class GoldenSet:
    """The cases of one file."""

    path: str
    eval_set_id: str
    cases: tuple[GoldenCase, ...]
    name: str | None = None
    description: str | None = None
    format: GoldenFormat = "evalset"


def golden_rubrics(rubrics: Sequence[schema.Rubric] | None) -> tuple[GoldenRubric, ...]:
    """Validated schema rubrics as golden rubrics (both loaders use this)."""
    return tuple(
        GoldenRubric(
            rubric_id=r.rubric_id,
            text=r.rubric_content.text_property,
            type=r.type,
            description=r.description,
        )
        for r in rubrics or ()
    )
