"""The compiled evaluators: each built-in's gives exactly what its ``evaluate`` gives."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import pytest

from tracescore.criteria import Criterion, EvalContext, Score, criterion_class, known_criteria
from tracescore.criteria import evaluators as ev
from tracescore.criteria.base import CriterionResult
from tracescore.criteria.efficiency import ToolCallCount
from tracescore.criteria.text import ContainsKeywords, ResponseMatchScore
from tracescore.criteria.trajectory import NodeOrderMatchScore, ToolTrajectoryAvgScore
from tracescore.criteria.trajectory_match import MATCH_TYPES
from tracescore.model import Invocation, TokenUsage, ToolCall, group_conversations
from tracescore.scoring import evaluators_for, score_conversations

#: Every built-in deterministic criterion, with settings that exercise its branches.
BUILT_INS: list[Criterion] = [
    ResponseMatchScore(),
    ResponseMatchScore(threshold=0.3),
    ContainsKeywords(keywords=("Table", "ÉTÉ")),
    ContainsKeywords(threshold=0.3, keywords=("Table", "wine", "本")),
    ContainsKeywords(),
    *(
        ToolTrajectoryAvgScore(match_type=m, ignore_args=i)
        for m, i in itertools.product(MATCH_TYPES, (False, True))
    ),
    criterion_class("tool_name_match_score")(threshold=0.5),
    *(NodeOrderMatchScore(match_type=m) for m in MATCH_TYPES),
    *(criterion_class(n)() for n in ("tool_call_count_v1", "inference_call_count_v1")),
    *(criterion_class(n)() for n in ("token_usage_v1", "invocation_duration_v1")),
]


def _inv(**kw: object) -> Invocation:
    return Invocation(trace_id="t", invocation_id="i", **kw)  # type: ignore[arg-type]


ACTUALS = [
    _inv(),
    _inv(
        final_response="The table for two is booked for the summer (été).",
        tool_calls=(ToolCall(name="book", args={"n": 2}), ToolCall(name="find", args=None)),
        agents=("root", "booker"),
        usage=TokenUsage(input_tokens=12, output_tokens=30),
        inference_calls=2,
        start_ns=1_000,
        end_ns=2_500_001_000,
    ),
    _inv(final_response="", framework_replies=1, start_ns=5, end_ns=3),
    _inv(final_response="書いた 本", tool_calls=(ToolCall(name="find", args={}),), end_ns=-1),
]
GOLDENS = [
    None,
    _inv(),
    _inv(
        final_response="Booked a table for two.",
        tool_calls=(ToolCall(name="find", args=None), ToolCall(name="book", args={"n": 2.0})),
        agents=("root", "booker"),
    ),
    _inv(final_response="本", tool_calls=(ToolCall(name="find", args={}),), agents=("root",)),
]
CONTEXTS = [EvalContext(actual=a, expected=g) for a, g in itertools.product(ACTUALS, GOLDENS)]


def test_every_built_in_deterministic_criterion_has_a_compiled_evaluator() -> None:
    names = {c.name for c in BUILT_INS}
    # Built-ins only: other tests register criteria of their own.
    kinds = [criterion_class(name) for name in known_criteria()]
    deterministic = {
        k.name for k in kinds if not k.judged and k.__module__.startswith("tracescore.")
    }
    assert deterministic <= names
    for criterion in BUILT_INS:
        evaluator = criterion.evaluator()
        assert type(evaluator) is type(criterion).evaluator_class
        assert isinstance(evaluator, ev.Compiled)


@pytest.mark.parametrize("criterion", BUILT_INS, ids=repr)
def test_a_compiled_evaluator_gives_what_evaluate_gives(criterion: Criterion) -> None:
    evaluator = criterion.evaluator()
    statuses = set()
    for ctx in CONTEXTS:
        result = evaluator.evaluate(ctx)
        assert result == Criterion.evaluate(criterion, ctx)
        assert type(result) is CriterionResult
        assert type(result.score) in (float, type(None))
        statuses.add(result.status)
    assert evaluator.not_evaluable("content not captured") == criterion.evaluate_not_evaluable(
        "content not captured"
    )
    # The contexts reach more than one outcome of every criterion that has outcomes.
    if criterion == ContainsKeywords():
        assert statuses == {"not_evaluated"}
    else:
        assert len(statuses) >= 2 or criterion.informational


def test_results_share_no_details_dict() -> None:
    evaluator = ContainsKeywords(keywords=("x",)).evaluator()
    first, second = (evaluator.evaluate(EvalContext(actual=_inv())) for _ in range(2))
    assert first.details == {"missing": ["x"]}
    assert first.details is not second.details


def test_an_error_inside_a_compiled_rating_is_not_evaluated() -> None:
    broken = EvalContext(actual=_inv(final_response=5), expected=_inv(final_response="x"))
    result = ResponseMatchScore().evaluator().evaluate(broken)
    assert (result.status, result.score) == ("not_evaluated", None)
    assert result.reason is not None and result.reason.startswith("criterion error: ")
    assert result == ResponseMatchScore().evaluate(broken)


@dataclass(frozen=True, kw_only=True)
class _OwnScore(ResponseMatchScore):
    name = "own_rouge"

    def score(self, ctx: EvalContext) -> Score:
        return Score(value=0.25)


@dataclass(frozen=True, kw_only=True)
class _OwnEvaluate(ToolCallCount):
    def evaluate(self, ctx: EvalContext) -> CriterionResult:
        return replace(super().evaluate(ctx), reason="mine")


@dataclass(frozen=True, kw_only=True)
class _Renamed(ResponseMatchScore):
    name = "renamed_rouge"
    version = "7"


@pytest.mark.parametrize("kind", [_OwnScore, _OwnEvaluate])
def test_a_subclass_that_rates_on_its_own_is_called(kind: type[Criterion]) -> None:
    criterion = kind()
    assert kind.evaluator_class is None
    evaluator = criterion.evaluator()
    assert type(evaluator) is ev.Delegating
    ctx = CONTEXTS[-1]
    assert evaluator.evaluate(ctx) == criterion.evaluate(ctx)
    assert evaluator.evaluate(ctx).score in (0.25, 1.0)


def test_a_subclass_that_only_renames_keeps_the_compiled_rating() -> None:
    criterion = _Renamed(threshold=0.1)
    evaluator = criterion.evaluator()
    assert type(evaluator) is ev.ResponseMatch
    result = evaluator.evaluate(CONTEXTS[-1])
    assert (result.criterion, result.version, result.threshold) == ("renamed_rouge", "7", 0.1)
    assert result == criterion.evaluate(CONTEXTS[-1])


def test_an_unconverted_threshold_stays_with_the_interpreted_rules() -> None:
    criterion = ResponseMatchScore()
    object.__setattr__(criterion, "threshold", 0)  # as a __post_init__ skipping super's
    evaluator = criterion.evaluator()
    assert type(evaluator) is ev.Delegating
    assert evaluator.evaluate(CONTEXTS[-1]).status == "passed"


def test_evaluators_are_made_once_per_criterion_object() -> None:
    a, b = ResponseMatchScore(), ResponseMatchScore()
    first = evaluators_for([a, b])
    assert first[0] is not first[1]
    assert [x is y for x, y in zip(first, evaluators_for([a, b]))] == [True, True]


def test_the_scoring_loop_uses_them_for_built_ins_and_users_alike() -> None:
    turns = [replace(a, conversation_id="c", start_ns=k) for k, a in enumerate(ACTUALS)]
    criteria = [ResponseMatchScore(), _OwnScore(), ContainsKeywords(keywords=("table",))]
    (conversation,) = group_conversations(turns)
    results = score_conversations([conversation], criteria)
    assert [[r.score for r in res.results] for res in results][1] == [None, None, 1.0]
    assert {r.results[1].reason for r in results} == {"no golden"}


def test_the_informational_values_are_the_invocations_own_figures() -> None:
    duration = criterion_class("invocation_duration_v1")().evaluator()
    tokens = criterion_class("token_usage_v1")().evaluator()
    timed = 0
    for actual in ACTUALS:
        ctx = EvalContext(actual=actual)
        seconds, used = duration.evaluate(ctx).score, tokens.evaluate(ctx).score
        if seconds is not None:
            timed += 1
            assert seconds == actual.duration_s
        assert used == (float(actual.usage.total_tokens) if actual.usage.total_tokens else None)
    assert timed == 1


def test_settings_given_loosely_in_python_rate_as_before() -> None:
    # A list of keywords and an int flag, as Python callers may pass them: compiled, the
    # evaluator takes them as a tuple and a bool, and rates as the criterion does.
    keywords = ContainsKeywords(keywords=["table", "wine"])  # type: ignore[arg-type]
    trajectory = ToolTrajectoryAvgScore(ignore_args=1)  # type: ignore[arg-type]
    for criterion in (keywords, trajectory):
        evaluator = criterion.evaluator()
        assert isinstance(evaluator, ev.Compiled)
        for ctx in CONTEXTS:
            assert evaluator.evaluate(ctx) == Criterion.evaluate(criterion, ctx)


def test_settings_no_compiled_evaluator_takes_are_an_error_per_invocation() -> None:
    criterion = ContainsKeywords(keywords=(1,))  # type: ignore[arg-type]
    evaluator = criterion.evaluator()  # never raises: the criterion is called instead
    assert type(evaluator) is ev.Delegating
    result = evaluator.evaluate(CONTEXTS[5])
    assert (result.status, result.score) == ("not_evaluated", None)
    assert result.reason is not None and result.reason.startswith("criterion error: ")
