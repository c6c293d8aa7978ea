"""Match and score in the import workers, so that a parallel replay scores in parallel.

``tracescore replay`` imports large JSON Lines inputs on several processes
(:mod:`tracescore.parallel`). Matching and scoring then ran in the parent alone, after
every worker had sent its invocations back: on the replay benchmark (200k spans, 2 CPUs)
the replay took nearly twice as long as the parallel import, where a replay in one
process takes a quarter to a third longer than an import in one process. The more CPUs,
the more that serial share weighs.

So each worker, forked with the criteria and the golden index (:class:`Prescoring`),
also groups the turns of its part into conversations, matches and scores them
(:func:`prescore`), and sends back with each turn a compact :data:`Verdict`.

A worker sees its part only. A conversation whose turns are spread over several parts,
or include a trace the parent rebuilt (one crossing a cut), was matched and scored on
part of its turns. The parent therefore groups every turn again, and takes a worker's
verdicts for a conversation only when every one of its turns has one from the same
part, and that part's conversation had as many turns: then the two are the same turns,
in the same order (:func:`tracescore.model.group_conversations` orders them by start,
trace id and root span). Any other conversation is scored in the parent
(:func:`score_prescored`). Either way the results are those of a one-process replay.

Judged criteria are never scored in workers (they need the parent's judge client and
its event loop), and workers are given the scoring only when they are forked (a
spawned worker would need the criteria, a user's own included, and every golden
pickled to it).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from tracescore.conventions.messages import JsonValue
from tracescore.criteria import Criterion, CriterionResult
from tracescore.criteria.base import EvalStatus
from tracescore.goldens import GoldenIndex, GoldenSet
from tracescore.model import Conversation, Invocation, group_conversations
from tracescore.scoring import (
    InvocationResult,
    Outcome,
    golden_matcher,
    golden_turn,
    score_conversations,
)

__all__ = ["Prescored", "Prescoring", "Verdict", "prescore", "score_prescored"]

logger = logging.getLogger(__name__)

#: A criterion's result as a worker sends it: its score, status, reason and details
#: (None for none); the criterion's name, version and threshold are the parent's to add.
#: Pickled as objects, the results of 6.7k turns took a worker 0.39 s to send and the
#: parent 0.29 s to read, against 0.01 s and 0.06 s as tuples (plus 0.13 s to build the
#: objects again). A result that is not the plain one of its criterion (a user's own
#: ``evaluate`` may return anything) travels as the object itself.
Compact = tuple["float | None", EvalStatus, "str | None", "Mapping[str, JsonValue] | None"]
#: One turn scored by a worker: the number of turns of its conversation in the worker's
#: part, the matched case (its position in the golden index, -1 without golden) and
#: 0-based turn (-1), the outcome and its reason, and each criterion's result.
Verdict = tuple[int, int, int, Outcome, "str | None", tuple["Compact | CriterionResult", ...]]

_NO_CASE: Final = -1


@dataclass(frozen=True, slots=True, eq=False)
class Prescoring:
    """What a worker scores with: the criteria and the golden index.

    Build it with :meth:`build`; it is handed to the workers when they are forked.
    """

    criteria: tuple[Criterion, ...]
    goldens: tuple[GoldenSet, ...]
    index: GoldenIndex
    #: (eval set id, eval id) -> the case's position in ``index.cases``; a key that two
    #: cases share is left out (a turn matched to either is scored in the parent).
    positions: dict[tuple[str, str], int] = field(repr=False)

    @classmethod
    def build(
        cls, criteria: Sequence[Criterion], goldens: Sequence[GoldenSet]
    ) -> Prescoring | None:
        """The scoring of ``criteria`` against ``goldens``; None if a criterion is judged."""
        if any(c.judged for c in criteria):
            return None
        index = GoldenIndex(goldens)
        positions: dict[tuple[str, str], int] = {}
        shared: set[tuple[str, str]] = set()
        for position, case in enumerate(index.cases):
            key = (case.eval_set_id, case.eval_id)
            if key in positions:
                shared.add(key)
            positions[key] = position
        for key in shared:
            del positions[key]
        return cls(tuple(criteria), tuple(goldens), index, positions)

    def serves(self, criteria: Sequence[Criterion], goldens: Sequence[GoldenSet]) -> bool:
        """True when scoring ``criteria`` against ``goldens`` is what this one does."""
        return (
            tuple(criteria) == self.criteria
            and len(goldens) == len(self.goldens)
            and all(a is b for a, b in zip(goldens, self.goldens))
        )


def prescore(invocations: Sequence[Invocation], scoring: Prescoring) -> list[Verdict | None]:
    """Worker: score the turns among ``invocations`` as conversations of their own.

    Returns:
        A verdict per invocation, in the same order; None for an agent run called as a
        tool (never a turn), and for every turn of a conversation one of whose turns
        matched a case whose ids another case shares.

    """
    turns = [i for i in invocations if i.parent_tool_span_id is None]
    conversations = group_conversations(turns)
    results = score_conversations(
        conversations, scoring.criteria, match=golden_matcher(scoring.index)
    )
    verdicts: dict[int, Verdict] = {}
    at = 0
    for conversation in conversations:
        size = len(conversation.invocations)
        mine = results[at : at + size]
        at += size
        found = [_verdict(r, size, scoring) for r in mine]
        if all(v is not None for v in found):
            verdicts.update((id(r.invocation), v) for r, v in zip(mine, found) if v is not None)
    return [verdicts.get(id(i)) for i in invocations]


def _verdict(result: InvocationResult, size: int, scoring: Prescoring) -> Verdict | None:
    golden = result.golden
    case, turn = _NO_CASE, _NO_CASE
    if golden is not None:
        position = scoring.positions.get((golden.eval_set_id, golden.eval_id))
        if position is None:
            return None
        case, turn = position, golden.turn
    results = tuple(
        (r.score, r.status, r.reason, r.details or None)
        if r.criterion == c.name and r.version == c.version and r.threshold == c.threshold
        else r
        for c, r in zip(scoring.criteria, result.results)
    )
    return (size, case, turn, result.outcome, result.reason, results)


def _results(
    criteria: Sequence[Criterion], sent: tuple[Compact | CriterionResult, ...]
) -> tuple[CriterionResult, ...]:
    """The criteria's results again from what a worker sent."""
    return tuple(
        r
        if isinstance(r, CriterionResult)
        else CriterionResult(
            criterion=c.name,
            version=c.version,
            score=r[0],
            status=r[1],
            threshold=c.threshold,
            reason=r[2],
            details=r[3] or {},
        )
        for c, r in zip(criteria, sent)
    )


@dataclass(slots=True)
class Prescored:
    """The verdicts the workers sent, for :func:`score_prescored`.

    ``verdicts`` maps ``id(invocation)`` to the invocation itself (so that an id reused by
    another object never passes for it), the index of the part that scored it, and its
    verdict.
    """

    scoring: Prescoring
    verdicts: dict[int, tuple[Invocation, int, Verdict]] = field(default_factory=dict)

    def add(
        self, part: int, invocations: Sequence[Invocation], verdicts: Sequence[Verdict | None]
    ) -> None:
        """Keep the verdicts of ``part`` (parallel to its ``invocations``)."""
        for inv, verdict in zip(invocations, verdicts):
            if verdict is not None:
                self.verdicts[id(inv)] = (inv, part, verdict)


def score_prescored(
    conversations: Sequence[Conversation], criteria: Sequence[Criterion], prescored: Prescored
) -> list[InvocationResult]:
    """:func:`tracescore.scoring.score_conversations`, taking the workers' verdicts.

    A conversation is scored here unless all its turns have verdicts of one part whose
    conversation had as many turns. ``criteria`` are ``prescored.scoring``'s.
    """
    scoring = prescored.scoring
    match = golden_matcher(scoring.index)
    cases = scoring.index.cases
    out: list[InvocationResult] = []
    rescored = 0
    for conversation in conversations:
        taken = _taken(conversation, prescored)
        if taken is None:
            rescored += 1
            out.extend(score_conversations([conversation], criteria, match=match))
            continue
        for inv, (_, case_at, turn, outcome, reason, results) in zip(
            conversation.invocations, taken
        ):
            case = cases[case_at] if case_at != _NO_CASE else None
            out.append(
                InvocationResult(
                    invocation=inv,
                    golden=None if case is None else golden_turn(case, turn),
                    expected=None if case is None else case.expected(turn),
                    outcome=outcome,
                    reason=reason,
                    results=_results(criteria, results),
                )
            )
    logger.debug("%d of %d conversations scored after the import", rescored, len(conversations))
    return out


def _taken(conversation: Conversation, prescored: Prescored) -> list[Verdict] | None:
    """The workers' verdicts for ``conversation``'s turns, if they hold for it whole."""
    turns = conversation.invocations
    verdicts = prescored.verdicts
    first = verdicts.get(id(turns[0]))
    if first is None:
        return None
    part = first[1]
    taken: list[Verdict] = []
    for inv in turns:
        entry = verdicts.get(id(inv))
        if entry is None or entry[0] is not inv or entry[1] != part:
            return None
        taken.append(entry[2])
    # Every turn is in that part's conversation of the same id: as many turns, the same.
    return taken if taken[0][0] == len(turns) else None
