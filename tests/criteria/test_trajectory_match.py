"""Trajectory math: REFERENCE §4 examples, then side-by-side equality with google-adk 2.13.

ADK's ``TrajectoryEvaluator`` is the oracle: for generated call lists (small name alphabet so
duplicates happen, reorderings, ``1`` vs ``1.0`` vs ``True``, ``"1"`` vs ``1``, nested
dicts/lists, ``None`` vs ``{}`` args, permuted key order, differing call ids) every
per-invocation score of ours must equal ADK's, for every match type and ``ignore_args``.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from google.adk.evaluation.eval_case import IntermediateData, Invocation
from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
from google.genai import types as genai_types
from hypothesis import event, given, settings
from hypothesis import strategies as st

from tracescore.criteria.trajectory_match import (
    MATCH_TYPES,
    MatchType,
    parse_match_type,
    sequence_match,
    tool_name_match,
    tool_trajectory_score,
)

Call = tuple[str, Any]
Pair = tuple[list[Call], list[Call]]

# --------------------------------------------------------------------------- ADK oracle

_EVALUATORS = {
    (match_type, ignore_args): TrajectoryEvaluator(
        eval_metric=EvalMetric(
            metric_name="tool_trajectory_avg_score",
            criterion=ToolTrajectoryCriterion(
                threshold=1.0,
                match_type=ToolTrajectoryCriterion.MatchType[match_type],
                ignore_args=ignore_args,
            ),
        )
    )
    for match_type in MATCH_TYPES
    for ignore_args in (False, True)
}
_USER = genai_types.Content(role="user", parts=[genai_types.Part(text="q")])


def _invocation(calls: list[Call], ids: list[str | None] | None = None) -> Invocation:
    ids = ids or [None] * len(calls)
    tool_uses = [
        genai_types.FunctionCall(name=name, args=args, id=call_id)
        for (name, args), call_id in zip(calls, ids)
    ]
    return Invocation(user_content=_USER, intermediate_data=IntermediateData(tool_uses=tool_uses))


def adk_scores(
    pairs: list[Pair],
    match_type: MatchType,
    ignore_args: bool,
    ids: list[tuple[list[str | None], list[str | None]]] | None = None,
) -> list[float | None]:
    ids = ids or [([], [])] * len(pairs)
    result = _EVALUATORS[match_type, ignore_args].evaluate_invocations(
        actual_invocations=[_invocation(a, i) for (a, _), (i, _) in zip(pairs, ids)],
        expected_invocations=[_invocation(e, j) for (_, e), (_, j) in zip(pairs, ids)],
    )
    return [r.score for r in result.per_invocation_results]


def test_match_type_indices_are_adks_enum_values() -> None:
    assert {m.name: m.value for m in ToolTrajectoryCriterion.MatchType} == {
        name: index for index, name in enumerate(MATCH_TYPES)
    }


# --------------------------------------------------------------------------- REFERENCE §4

A: Call
B: Call
C: Call
A, B, C = ("a", {"x": 1}), ("b", None), ("c", {})
EDGE_CASES: list[tuple[str, list[Call], list[Call], dict[str, float]]] = [
    ("both empty", [], [], {"EXACT": 1, "IN_ORDER": 1, "ANY_ORDER": 1}),
    ("expected empty", [A], [], {"EXACT": 0, "IN_ORDER": 1, "ANY_ORDER": 1}),
    ("actual empty", [], [A], {"EXACT": 0, "IN_ORDER": 0, "ANY_ORDER": 0}),
    ("identical", [A, B, C], [A, B, C], {"EXACT": 1, "IN_ORDER": 1, "ANY_ORDER": 1}),
    ("extra calls between", [A, C, B], [A, B], {"EXACT": 0, "IN_ORDER": 1, "ANY_ORDER": 1}),
    ("reordered", [B, A], [A, B], {"EXACT": 0, "IN_ORDER": 0, "ANY_ORDER": 1}),
    ("expected dup, actual once", [A], [A, A], {"EXACT": 0, "IN_ORDER": 0, "ANY_ORDER": 0}),
    ("expected once, actual dup", [A, A], [A], {"EXACT": 0, "IN_ORDER": 1, "ANY_ORDER": 1}),
    ("missing call", [A, B], [A, B, C], {"EXACT": 0, "IN_ORDER": 0, "ANY_ORDER": 0}),
    (
        "key order",
        [("a", {"x": 1, "y": 2})],
        [("a", {"y": 2, "x": 1})],
        dict.fromkeys(MATCH_TYPES, 1),
    ),
    (
        "1 == 1.0",
        [("a", {"x": [1, {"z": 2}]})],
        [("a", {"x": [1.0, {"z": 2.0}]})],
        dict.fromkeys(MATCH_TYPES, 1),
    ),
    ("True == 1", [("a", {"x": True})], [("a", {"x": 1})], dict.fromkeys(MATCH_TYPES, 1)),
    ('"1" != 1', [("a", {"x": "1"})], [("a", {"x": 1})], dict.fromkeys(MATCH_TYPES, 0)),
    ("None != {}", [("a", None)], [("a", {})], dict.fromkeys(MATCH_TYPES, 0)),
    ("None == None", [("a", None)], [("a", None)], dict.fromkeys(MATCH_TYPES, 1)),
    ("name differs", [("a", {})], [("b", {})], dict.fromkeys(MATCH_TYPES, 0)),
]


@pytest.mark.parametrize(
    ("actual", "expected", "scores"), [c[1:] for c in EDGE_CASES], ids=[c[0] for c in EDGE_CASES]
)
@pytest.mark.parametrize("match_type", MATCH_TYPES)
def test_reference_edge_cases(
    actual: list[Call], expected: list[Call], scores: dict[str, float], match_type: MatchType
) -> None:
    ours = tool_trajectory_score(actual, expected, match_type=match_type)
    assert ours == scores[match_type]
    assert [ours] == adk_scores([(actual, expected)], match_type, ignore_args=False)


def test_ignore_args_compares_names_only() -> None:
    actual: list[Call]
    expected: list[Call]
    actual, expected = [("a", None), ("b", {"x": "1"})], [("a", {}), ("b", {"x": 1})]
    for match_type in MATCH_TYPES:
        assert (
            tool_trajectory_score(actual, expected, match_type=match_type, ignore_args=True) == 1.0
        )
        assert tool_trajectory_score(actual, expected, match_type=match_type) == 0.0
    assert tool_trajectory_score([("a", 1)], [("b", 1)], ignore_args=True) == 0.0


def test_call_ids_are_ignored_by_adk_too() -> None:
    pair: Pair = ([("a", {"x": 1})], [("a", {"x": 1})])
    assert adk_scores([pair], "EXACT", False, ids=[(["id-1"], ["id-2"])]) == [1.0]
    assert tool_trajectory_score(*pair) == 1.0


def test_in_order_greedy_scan() -> None:
    # Greedy is exact for subsequences: an early match never blocks a later one.
    assert tool_trajectory_score([A, B, A, C], [A, C], match_type="IN_ORDER") == 1.0
    assert tool_trajectory_score([A, B, A, C], [B, A, A], match_type="IN_ORDER") == 0.0


def test_unknown_match_type_raises() -> None:
    with pytest.raises(ValueError, match="IN_ORDER"):
        tool_trajectory_score([], [], match_type="in_order")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ANY_ORDER"):
        sequence_match([], [], match_type="SUBSET")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- parse_match_type


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        (0, "EXACT"),
        (1, "IN_ORDER"),
        (2, "ANY_ORDER"),
        ("exact", "EXACT"),
        (" In_Order ", "IN_ORDER"),
        ("in-order", "IN_ORDER"),
        ("any order", "ANY_ORDER"),
        ("ANY_ORDER", "ANY_ORDER"),
    ],
)
def test_parse_match_type(value: str | int, parsed: str) -> None:
    assert parse_match_type(value) == parsed


@pytest.mark.parametrize("value", [3, -1, "1", "inorder", "", "SUBSET", True, False, 1.0])
def test_parse_match_type_rejects(value: Any) -> None:
    with pytest.raises(ValueError, match=r"'EXACT' \(0\), 'IN_ORDER' \(1\), 'ANY_ORDER' \(2\)"):
        parse_match_type(value)


_MATCH_TYPE_TEXT = st.builds(
    lambda name, sep, case, pad: pad + case(name.replace("_", sep)) + pad,
    st.sampled_from([*MATCH_TYPES, "INORDER", "ANY", "EXACTLY", "1"]),
    st.sampled_from(["_", "-", " ", "__", "."]),
    st.sampled_from([str.lower, str.upper, str.title, str.swapcase]),
    st.sampled_from(["", " ", "\t"]),
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(_MATCH_TYPE_TEXT, st.integers(-2, 4)))
def test_parse_match_type_agrees_with_adk(value: str | int) -> None:
    try:
        adk: str | None = ToolTrajectoryCriterion(
            threshold=1.0,
            match_type=value,  # type: ignore[arg-type]  # pydantic validates raw names and indices
        ).match_type.name
    except ValueError:  # pydantic's ValidationError is a ValueError
        adk = None
    try:
        ours: str | None = parse_match_type(value)
    except ValueError:
        ours = None
    assert ours == adk


# --------------------------------------------------------------------------- generated equality

_NAMES = st.sampled_from(["f", "g", "h"])
_SCALARS = st.sampled_from([0, 1, 1.0, True, False, "1", "x", None, 2.5, -1, ""])
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from("pq"), inner, max_size=2)
    ),
    max_leaves=4,
)
_ARGS = st.one_of(
    st.none(), st.just({}), st.dictionaries(st.sampled_from("abc"), _VALUES, max_size=3)
)
_CALLS = st.tuples(_NAMES, _ARGS)
_TWINS: dict[Any, list[Any]] = {
    1: [1.0, True, "1"],
    0: [0.0, False, None],
    2.5: [2.5, "2.5"],
    "": [None, {}],
}


def _twin(value: Any, draw: st.DrawFn) -> Any:
    """A variant of ``value``: key order reversed, numbers swapped for equal or unequal twins."""
    if isinstance(value, dict):
        items = [(k, _twin(v, draw)) for k, v in value.items()]
        return dict(reversed(items)) if draw(st.booleans()) else dict(items)
    if isinstance(value, list):
        return [_twin(v, draw) for v in value]
    if value is None:
        return draw(st.sampled_from([None, None, {}]))
    if not isinstance(value, bool) and value in _TWINS and draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(_TWINS[value]))
    return value


@st.composite
def _invocation_pairs(draw: st.DrawFn) -> Pair:
    actual = draw(st.lists(_CALLS, max_size=5))
    how = draw(st.sampled_from(["independent", "subsequence", "shuffled", "resampled", "same"]))
    if how == "independent" or not actual:
        expected = draw(st.lists(_CALLS, max_size=4))
    elif how == "same":
        expected = list(actual)
    else:
        indices = list(range(len(actual)))
        if how == "subsequence":
            indices = sorted(draw(st.sets(st.sampled_from(indices))))
        elif how == "shuffled":
            indices = draw(st.permutations(indices))[: draw(st.integers(0, len(indices)))]
        else:
            indices = draw(st.lists(st.sampled_from(indices), max_size=5))
        expected = [actual[i] for i in indices]
    expected = [(name, _twin(args, draw)) for name, args in expected]
    if draw(st.integers(0, 4)) == 0:  # occasionally an extra or a renamed call
        expected.insert(draw(st.integers(0, len(expected))), draw(_CALLS))
    return actual, expected


@settings(max_examples=400, deadline=None)
@given(st.lists(_invocation_pairs(), min_size=1, max_size=4), st.data())
def test_tool_trajectory_score_equals_adk(pairs: list[Pair], data: st.DataObject) -> None:
    ids = [
        (
            data.draw(
                st.lists(st.sampled_from([None, "c1", "c2"]), min_size=len(a), max_size=len(a))
            ),
            data.draw(
                st.lists(st.sampled_from([None, "c1", "c2"]), min_size=len(e), max_size=len(e))
            ),
        )
        for a, e in pairs
    ]
    for match_type in MATCH_TYPES:
        for ignore_args in (False, True):
            ours = [
                tool_trajectory_score(a, e, match_type=match_type, ignore_args=ignore_args)
                for a, e in pairs
            ]
            assert ours == adk_scores(pairs, match_type, ignore_args, ids), (
                match_type,
                ignore_args,
            )
            event(f"{match_type} ignore_args={ignore_args}: score {ours[0]}")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(_NAMES, max_size=5), st.lists(_NAMES, max_size=4)),
        min_size=1,
        max_size=4,
    )
)
def test_sequence_match_equals_adk_on_names(pairs: list[tuple[list[str], list[str]]]) -> None:
    as_calls: list[Pair] = [([(n, None) for n in a], [(n, None) for n in e]) for a, e in pairs]
    for match_type in MATCH_TYPES:
        ours = [sequence_match(a, e, match_type=match_type) for a, e in pairs]
        assert ours == adk_scores(as_calls, match_type, ignore_args=False)
        event(f"{match_type}: score {ours[0]}")


# --------------------------------------------------------------------------- tool_name_match


@pytest.mark.parametrize(
    ("actual", "expected", "score"),
    [
        ([], [], 1.0),
        (["a"], [], 0.0),
        ([], ["a"], 0.0),
        (["a", "b"], ["b", "a"], 1.0),
        (["a", "a", "b"], ["a", "b", "b"], 1.0),
        (["a"], ["a", "b"], 2 / 3),
        (["a", "b", "c"], ["a", "b", "c", "d"], 6 / 7),
        (["a", "x"], ["a", "b"], 0.5),
        (["x"], ["a"], 0.0),
    ],
)
def test_tool_name_match_examples(actual: list[str], expected: list[str], score: float) -> None:
    assert tool_name_match(actual, expected) == pytest.approx(score)


@settings(max_examples=200, deadline=None)
@given(st.lists(_NAMES, max_size=5), st.lists(_NAMES, max_size=5))
def test_tool_name_match_properties(actual: list[str], expected: list[str]) -> None:
    score = tool_name_match(actual, expected)
    assert 0.0 <= score <= 1.0
    assert score == tool_name_match(expected, actual)
    assert (score == 1.0) == (set(actual) == set(expected))
    union = set(actual) | set(expected)
    if union:  # F1 is a monotone function of Jaccard: F1 = 2J / (1 + J)
        jaccard = len(set(actual) & set(expected)) / len(union)
        assert math.isclose(score, 2 * jaccard / (1 + jaccard))
