"""Match a live invocation to the golden turn it should be scored against.

Rules, in order (see :meth:`GoldenIndex.match`):

1. **Explicit**: ``tracescore.golden.eval_id`` in ``Invocation.tags`` (set on the root or
   agent span, the resource, or via baggage copied onto spans). Optional
   ``tracescore.golden.eval_set_id`` picks the eval set when the id is in several, and
   optional ``tracescore.golden.turn`` is the **0-based** turn index into the case's
   conversation (a non-negative decimal integer smaller than the number of turns).
   Without a turn: a one-turn case is turn 0; otherwise the invocation's position in its
   conversation among the invocations tagged with the same eval id; otherwise the one
   turn whose user text equals the invocation's (a scenario case on its own: turn 0).
   An explicit tag is never second-guessed: when it names nothing, or something invalid,
   the result is ``no_golden`` with the reason, and text matching is not tried.
2. **Text**: the user text, normalised (NFKC, casefold, whitespace runs collapsed to one
   space, trimmed). The i-th turn of a conversation (by start time) matches turn i of
   every case whose turns 0..i equal the conversation's turns 0..i. A conversation
   scenario case matches on its ``starting_prompt`` for turn 0, and any later turn of a
   conversation that started that way (it has no expected invocation). A lone
   ``tracescore.golden.eval_set_id`` restricts text matching to that eval set.
3. **Ambiguity**: several candidates are narrowed to those sharing the longest common
   prefix with the *whole* conversation known so far (more evidence, not a guess); if
   several remain the result is ``ambiguous`` with the candidates. Nothing → ``no_golden``.

Only top-level, evaluable turns count as conversation turns (``status == "ok"`` and not an
agent run called as a tool), exactly the turns :mod:`tracescore.evalset` writes, so an
imported evalset matches its own traces.

Each lookup is a dict access keyed by the normalised texts of the conversation prefix.
"""

from __future__ import annotations

import functools
import operator
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from tracescore.goldens.evalset import GoldenCase, GoldenSet
from tracescore.model import Invocation
from tracescore.records import quick_init

__all__ = [
    "EVAL_ID_TAG",
    "EVAL_SET_ID_TAG",
    "TURN_TAG",
    "GoldenIndex",
    "GoldenMatch",
    "GoldenRef",
    "MatchOutcome",
    "normalize_text",
]

EVAL_ID_TAG: Final = "tracescore.golden.eval_id"
EVAL_SET_ID_TAG: Final = "tracescore.golden.eval_set_id"
TURN_TAG: Final = "tracescore.golden.turn"

MatchOutcome = Literal["matched", "ambiguous", "no_golden"]
MatchMethod = Literal["explicit", "text"]


@functools.lru_cache(maxsize=65536)
def normalize_text(text: str) -> str:
    """NFKC, casefold, collapse whitespace runs to one space, trim."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


@dataclass(frozen=True, slots=True)
class GoldenRef:
    """Names a case: ``eval_set_id`` and ``eval_id`` (``str()`` is ``set/id``)."""

    eval_set_id: str
    eval_id: str

    def __str__(self) -> str:
        return f"{self.eval_set_id}/{self.eval_id}"


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class GoldenMatch:
    """The outcome of matching one invocation.

    Attributes:
        outcome: ``matched``, ``ambiguous`` or ``no_golden``.
        case: The matched case (``matched`` only).
        turn: 0-based turn index into ``case.turns`` (``matched`` only; for a scenario case,
            the turn's position in the conversation).
        method: ``explicit`` (tags) or ``text`` (user text), when matched.
        candidates: The competing cases when ``ambiguous``, sorted.
        reason: Why it did not match (empty when matched).

    """

    outcome: MatchOutcome
    case: GoldenCase | None = None
    turn: int | None = None
    method: MatchMethod | None = None
    candidates: tuple[GoldenRef, ...] = ()
    reason: str = ""

    @property
    def expected(self) -> Invocation | None:
        """The golden turn to score against; None unless matched to a static conversation."""
        if self.case is None or self.turn is None:
            return None
        return self.case.expected(self.turn)

    @property
    def ref(self) -> GoldenRef | None:
        """The matched case's reference, when matched."""
        return None if self.case is None else GoldenRef(self.case.eval_set_id, self.case.eval_id)


def _no(reason: str) -> GoldenMatch:
    return GoldenMatch(outcome="no_golden", reason=reason)


def _ambiguous(cases: Iterable[GoldenCase], why: str) -> GoldenMatch:
    refs = tuple(sorted({GoldenRef(c.eval_set_id, c.eval_id) for c in cases}, key=str))
    names = ", ".join(map(str, refs))
    return GoldenMatch(outcome="ambiguous", candidates=refs, reason=f"{why}: {names}")


_START = operator.attrgetter("start_ns")


def _is_turn(inv: Invocation) -> bool:
    return inv.status == "ok" and inv.parent_tool_span_id is None


def _position(inv: Invocation, turns: Sequence[Invocation]) -> int | None:
    for i, other in enumerate(turns):
        if other is inv:
            return i
    for i, other in enumerate(turns):
        if other.invocation_id == inv.invocation_id and other.trace_id == inv.trace_id:
            return i
    return None


class GoldenIndex:
    """Golden cases indexed by eval id and by normalised conversation prefix."""

    def __init__(self, sets: Iterable[GoldenSet]) -> None:
        """Index every case of ``sets`` (cases keep the order they were given in)."""
        self.cases: tuple[GoldenCase, ...] = tuple(c for s in sets for c in s.cases)
        self._by_id: dict[str, list[GoldenCase]] = defaultdict(list)
        self._by_prefix: dict[tuple[str, ...], list[GoldenCase]] = defaultdict(list)
        self._scenarios: dict[str, list[GoldenCase]] = defaultdict(list)
        for case in self.cases:
            self._by_id[case.eval_id].append(case)
            if case.scenario is not None:
                self._scenarios[normalize_text(case.scenario.starting_prompt)].append(case)
            prefix: tuple[str, ...] = ()
            for turn in case.turns:
                prefix = (*prefix, normalize_text(turn.user_content or ""))
                self._by_prefix[prefix].append(case)

    def __len__(self) -> int:
        return len(self.cases)

    def match(self, inv: Invocation, *, conversation: Sequence[Invocation] = ()) -> GoldenMatch:
        """Find the golden turn ``inv`` should be scored against.

        Args:
            inv: The invocation to match.
            conversation: Every invocation of ``inv``'s conversation known so far (``inv``
                included, any order); empty means ``inv`` is a conversation on its own.

        Returns:
            ``matched`` with the case and 0-based turn, or ``ambiguous`` with the
            candidates, or ``no_golden`` with the reason. Never raises for bad tags.

        """
        tags = inv.tags
        set_id = tags.get(EVAL_SET_ID_TAG) or None
        if tags.get(EVAL_ID_TAG):
            return self._explicit(inv, conversation, set_id)
        return self._by_text(inv, conversation, set_id)

    # -- explicit ------------------------------------------------------------------

    def _explicit(
        self, inv: Invocation, conversation: Sequence[Invocation], set_id: str | None
    ) -> GoldenMatch:
        eval_id = inv.tags[EVAL_ID_TAG]
        cases = [c for c in self._by_id.get(eval_id, ()) if set_id in (None, c.eval_set_id)]
        if not cases:
            where = f" in eval set {set_id!r}" if set_id else ""
            return _no(f"{EVAL_ID_TAG}={eval_id!r}: no golden case with this id{where}")
        if len(cases) > 1:
            return _ambiguous(
                cases, f"eval id {eval_id!r} is in several eval sets; set {EVAL_SET_ID_TAG}"
            )
        case = cases[0]
        size = len(case.turns) if case.scenario is None else None
        raw = inv.tags.get(TURN_TAG)
        if raw is not None:
            text = raw.strip()
            if not text.isdecimal() or (size is not None and int(text) >= size):
                allowed = (
                    "a non-negative integer"
                    if size is None
                    else (f"0..{size - 1}" if size else "but the case has no turns")
                )
                return _no(
                    f"{TURN_TAG}={raw!r} is invalid for {eval_id!r}: 0-based turn, {allowed}"
                )
            return self._found(case, int(text), "explicit")
        if size == 1:
            return self._found(case, 0, "explicit")
        same = [c for c in conversation if _is_turn(c) and c.tags.get(EVAL_ID_TAG) == eval_id]
        position = _position(inv, sorted(same, key=lambda c: c.start_ns))
        if position is not None and (size is None or position < size):
            return self._found(case, position, "explicit")
        if position is not None:
            return _no(
                f"turn {position} of the conversation is beyond case {eval_id!r} ({size} turns)"
            )
        key = normalize_text(inv.user_content or "")
        hits = [i for i, t in enumerate(case.turns) if normalize_text(t.user_content or "") == key]
        if len(hits) == 1:
            return self._found(case, hits[0], "explicit")
        if size is None and not conversation:  # a scenario case, inv a conversation of its own
            return self._found(case, 0, "explicit")
        return _no(f"case {eval_id!r} has {size or 'simulated'} turns: set {TURN_TAG} (0-based)")

    @staticmethod
    def _found(case: GoldenCase, turn: int, method: MatchMethod) -> GoldenMatch:
        return GoldenMatch(outcome="matched", case=case, turn=turn, method=method)

    # -- by text -------------------------------------------------------------------

    def _by_text(
        self, inv: Invocation, conversation: Sequence[Invocation], set_id: str | None
    ) -> GoldenMatch:
        if inv.user_content is None:
            return _no("the invocation has no user text to match")
        if not _is_turn(inv):
            why = "not evaluable" if inv.status != "ok" else "an agent run called as a tool"
            return _no(f"the invocation is {why}: only conversation turns are matched")
        turns = sorted((c for c in conversation if _is_turn(c)), key=_START)
        position = _position(inv, turns)
        if position is None:  # not part of the given conversation: a conversation of its own
            turns, position = [inv], 0
        # Up to this turn only: the later ones matter only when several cases compete.
        texts = tuple(normalize_text(t.user_content or "") for t in turns[: position + 1])
        cases = [
            *self._by_prefix.get(texts, ()),
            *self._scenarios.get(texts[0], ()),
        ]
        if set_id is not None:
            cases = [c for c in cases if c.eval_set_id == set_id]
        if not cases:
            where = f" in eval set {set_id!r}" if set_id else ""
            if position == 0:
                return _no(f"no golden case{where} has this user text")
            return _no(
                f"no golden case{where} has the conversation's first {position + 1} user texts"
            )
        if len(cases) > 1:
            later = tuple(normalize_text(t.user_content or "") for t in turns[position + 1 :])
            cases = _longest_agreement(cases, texts + later)
        if len(cases) > 1:
            same = "first message" if position == 0 else f"first {position + 1} messages"
            return _ambiguous(cases, f"several golden cases have the same {same}")
        return self._found(cases[0], position, "text")


def _longest_agreement(cases: Sequence[GoldenCase], texts: tuple[str, ...]) -> list[GoldenCase]:
    """Keep the cases whose turns agree with the longest prefix of the whole conversation."""

    def agreement(case: GoldenCase) -> int:
        if case.scenario is not None:
            return 1  # only the starting prompt is fixed
        n = 0
        for turn, text in zip(case.turns, texts):
            if normalize_text(turn.user_content or "") != text:
                break
            n += 1
        return n

    scores = [agreement(c) for c in cases]
    best = max(scores)
    return [c for c, s in zip(cases, scores) if s == best]
