"""Deterministic trajectory math: tool-call and node-sequence matching.

Pure functions, free of any framework state, that the criterion layer calls once per
invocation:

* :func:`tool_trajectory_score` -- ``tool_trajectory_avg_score`` for one invocation, with the
  semantics of google-adk 2.13's ``TrajectoryEvaluator`` (checked side by side against it in
  ``tests/criteria/test_trajectory_match.py``).
* :func:`sequence_match` -- ``node_order_match_score`` (AgentFlow): the same three match modes
  over plain strings.
* :func:`tool_name_match` -- ``tool_name_match_score`` (AgentFlow): F1 of the two name sets.

How google-adk compares two tool calls (``genai.types.FunctionCall``): the names with ``==``
and then, unless ``ignore_args`` is set, the ``args`` attributes with plain Python ``==``; the
call ``id`` is never looked at. Since ``args`` is a ``dict`` (or ``None``), this means:

* key order is irrelevant, at every nesting level;
* numbers compare by value: ``1 == 1.0``, and also ``True == 1 == 1.0`` (a surprise:
  ``{"flag": True}`` matches ``{"flag": 1}``);
* types otherwise matter: ``"1" != 1``, ``[1] != {"0": 1}``;
* ``None`` args (no arguments recorded) do not equal ``{}`` (an empty argument object);
  ``FunctionCall`` keeps both as given, so neither side is normalised;
* a NaN only equals itself when it is the very same object (Python's identity shortcut in
  container comparison); two NaNs parsed from JSON never match.

The functions here reproduce this by comparing ``(name, args)`` with ``==`` in the same
order ADK does, so every one of these properties carries over unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Final, Literal, TypeAlias, TypeVar

from tracescore.conventions.messages import JsonValue

__all__ = [
    "MATCH_TYPES",
    "JsonLike",
    "MatchType",
    "parse_match_type",
    "sequence_match",
    "tool_name_match",
    "tool_trajectory_score",
]

JsonLike: TypeAlias = JsonValue
"""A JSON-compatible value: tool-call arguments as decoded from a trace or an eval set."""

MatchType: TypeAlias = Literal["EXACT", "IN_ORDER", "ANY_ORDER"]
"""How an actual sequence is compared with the expected one (ADK's ``MatchType`` names)."""

MATCH_TYPES: Final[tuple[MatchType, ...]] = ("EXACT", "IN_ORDER", "ANY_ORDER")
"""All match types; a type's index is its value in ADK's ``ToolTrajectoryCriterion.MatchType``."""

_T = TypeVar("_T")
_Same: TypeAlias = Callable[[_T, _T], bool]


def parse_match_type(value: object) -> MatchType:
    """Parse a match type as written in an eval config.

    Accepts what ADK's ``ToolTrajectoryCriterion`` accepts for ``match_type``: a name in any
    case, surrounding whitespace ignored, with ``-`` or a space allowed in place of ``_``
    (``"in-order"``, ``"Any Order"``), or the enum's integer value (``0`` EXACT, ``1``
    IN_ORDER, ``2`` ANY_ORDER). Unlike ADK (whose pydantic field also takes ``True``,
    ``False`` and ``1.0``), booleans and floats are rejected as configuration mistakes.

    Args:
        value: The configured match type.

    Returns:
        The canonical match type name.

    Raises:
        ValueError: If ``value`` names no match type; the message lists the allowed values.

    """
    if isinstance(value, int) and not isinstance(value, bool):
        if 0 <= value < len(MATCH_TYPES):
            return MATCH_TYPES[value]
    elif isinstance(value, str):
        normalized = value.strip().upper().replace("-", "_").replace(" ", "_")
        for match_type in MATCH_TYPES:
            if match_type == normalized:
                return match_type
    allowed = ", ".join(f"{name!r} ({index})" for index, name in enumerate(MATCH_TYPES))
    raise ValueError(f"Unknown match type {value!r}; expected one of {allowed}.")


def _exact(actual: Sequence[_T], expected: Sequence[_T], same: _Same[_T]) -> bool:
    """Same length and pairwise equal in order (two empty sequences match)."""
    if len(actual) != len(expected):
        return False
    return all(same(a, e) for a, e in zip(actual, expected))


def _in_order(actual: Sequence[_T], expected: Sequence[_T], same: _Same[_T]) -> bool:
    """``expected`` is a subsequence of ``actual``, found by a greedy left-to-right scan."""
    matched = 0
    for item in actual:
        if matched == len(expected):
            break
        if same(item, expected[matched]):
            matched += 1
    return matched == len(expected)


def _any_order(actual: Sequence[_T], expected: Sequence[_T], same: _Same[_T]) -> bool:
    """Each expected item consumes the first not-yet-consumed equal actual item."""
    unused = list(actual)
    for wanted in expected:
        for index, item in enumerate(unused):
            if same(item, wanted):
                del unused[index]
                break
        else:
            return False
    return True


def _match(
    actual: Sequence[_T], expected: Sequence[_T], match_type: MatchType, same: _Same[_T]
) -> float:
    """Dispatch on ``match_type``; 1.0 for a match, 0.0 otherwise."""
    if match_type == "EXACT":
        matched = _exact(actual, expected, same)
    elif match_type == "IN_ORDER":
        matched = _in_order(actual, expected, same)
    elif match_type == "ANY_ORDER":
        matched = _any_order(actual, expected, same)
    else:
        raise ValueError(f"Unknown match type {match_type!r}; expected one of {MATCH_TYPES}.")
    return 1.0 if matched else 0.0


def tool_trajectory_score(
    actual: Sequence[tuple[str, JsonLike]],
    expected: Sequence[tuple[str, JsonLike]],
    *,
    match_type: MatchType = "EXACT",
    ignore_args: bool = False,
) -> float:
    """Score one invocation's tool calls against the expected ones, as ADK does.

    Two calls are equal when their names are equal and, unless ``ignore_args``, their
    arguments are equal under Python ``==`` (see the module docstring for what that implies:
    key order ignored, ``1 == 1.0 == True``, ``"1" != 1``, ``None != {}``). Call ids are not
    part of the input and so never matter.

    * ``EXACT``: same length and pairwise equal in order.
    * ``IN_ORDER``: ``expected`` is a subsequence of ``actual`` (extra calls allowed anywhere;
      a greedy scan decides, which is exact for subsequences).
    * ``ANY_ORDER``: every expected call consumes the first unused equal actual call, so
      duplicates count (expected ``[a, a]`` fails against actual ``[a]``; expected ``[a]``
      passes against ``[a, a]``); extra actual calls are allowed.

    Edge cases (ADK 2.13): both empty scores 1.0 in every mode; empty ``expected`` with a
    non-empty ``actual`` scores 0.0 for ``EXACT`` and 1.0 for the other two; non-empty
    ``expected`` with an empty ``actual`` scores 0.0.

    Args:
        actual: The ``(name, args)`` calls the agent made, in order.
        expected: The ``(name, args)`` calls the reference expects, in order.
        match_type: How the sequences are compared.
        ignore_args: Compare tool names only.

    Returns:
        1.0 when the calls match under ``match_type``, else 0.0.

    Raises:
        ValueError: If ``match_type`` is not one of :data:`MATCH_TYPES`.

    """

    def same(call: tuple[str, JsonLike], wanted: tuple[str, JsonLike]) -> bool:
        return call[0] == wanted[0] and (ignore_args or call[1] == wanted[1])

    return _match(actual, expected, match_type, same)


def sequence_match(
    actual: Sequence[str], expected: Sequence[str], *, match_type: MatchType = "EXACT"
) -> float:
    """Score a sequence of visited nodes (agents, steps) against the expected sequence.

    The ``node_order_match_score`` rule: the three modes of :func:`tool_trajectory_score`,
    with the same edge cases, over plain strings compared with ``==``.

    Args:
        actual: The node names in the order they were visited.
        expected: The node names in the expected order.
        match_type: How the sequences are compared.

    Returns:
        1.0 when the sequences match under ``match_type``, else 0.0.

    Raises:
        ValueError: If ``match_type`` is not one of :data:`MATCH_TYPES`.

    """

    def same(node: str, wanted: str) -> bool:
        return node == wanted

    return _match(actual, expected, match_type, same)


def tool_name_match(actual_names: Iterable[str], expected_names: Iterable[str]) -> float:
    """Score the set of called tool names against the expected set (F1).

    Order and repetitions are ignored. With ``A`` the called names and ``E`` the expected
    ones, the score is the F1 (Dice) coefficient ``2·|A∩E| / (|A| + |E|)``, the harmonic mean
    of precision ``|A∩E|/|A|`` (called tools that were expected) and recall ``|A∩E|/|E|``
    (expected tools that were called). It is 1.0 exactly when ``A == E``; both empty scores
    1.0, exactly one empty scores 0.0.

    F1 rather than Jaccard ``|A∩E|/|A∪E|``: both are 1.0 only for equal sets and rank
    results identically (F1 = 2J/(1+J)), but F1 decomposes into precision (extra calls) and
    recall (missing calls), which is how users debug a failing score, and it is the usual
    measure for tool-call sets in agent-evaluation work. One missing tool out of four,
    with nothing extra, scores 0.857 (Jaccard: 0.75).

    Args:
        actual_names: Names of the tools the agent called.
        expected_names: Names of the tools it was expected to call.

    Returns:
        The F1 score in ``[0.0, 1.0]``.

    """
    called = set(actual_names)
    wanted = set(expected_names)
    if not called and not wanted:
        return 1.0
    return 2 * len(called & wanted) / (len(called) + len(wanted))
