"""Per-invocation scoring, outcomes, and ADK's case aggregation over repeated runs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from tracescore.criteria.base import Criterion, CriterionResult, EvalContext, EvalStatus, Score
from tracescore.criteria.efficiency import ToolCallCount
from tracescore.criteria.text import ContainsKeywords, ResponseMatchScore
from tracescore.criteria.trajectory import ToolTrajectoryAvgScore
from tracescore.model import Conversation, Invocation, ToolCall
from tracescore.scoring import GoldenTurn, score_conversations, summarize_cases

GOLDEN = {
    "weather in paris?": Invocation(
        trace_id="",
        invocation_id="g1",
        user_content="Weather in Paris?",
        tool_calls=(ToolCall(name="get_weather", args={"city": "Paris"}),),
        final_response="It is sunny in Paris",
    )
}


def match(
    inv: Invocation, earlier: Sequence[Invocation]
) -> tuple[GoldenTurn | None, Invocation | None, str | None]:
    golden = GOLDEN.get((inv.user_content or "").casefold())
    if golden is None:
        return None, None, "no golden"
    return GoldenTurn(eval_set_id="s", eval_id="paris", turn=0), golden, None


def run(conv: str, user: str, city: str, final: str, **kw: object) -> Conversation:
    inv = Invocation(
        trace_id=conv,
        invocation_id=conv,
        conversation_id=conv,
        user_content=user,
        tool_calls=(ToolCall(name="get_weather", args={"city": city}),),
        final_response=final,
        **kw,  # type: ignore[arg-type]
    )
    return Conversation(conversation_id=conv, invocations=(inv,))


CRITERIA = (
    ToolTrajectoryAvgScore(),
    ResponseMatchScore(threshold=0.8),
    ContainsKeywords(keywords=("sunny",)),
    ToolCallCount(),
)


def test_outcomes_and_reasons() -> None:
    results = score_conversations(
        [
            run("a", "Weather in Paris?", "Paris", "It is sunny in Paris"),
            run("b", "Weather in Rome?", "Rome", "Sunny in Rome"),
            run("c", "x", "x", "x", status="not_evaluable", reason="content not captured: set X"),
        ],
        CRITERIA,
        match=match,
    )
    a, b, c = results
    assert (a.outcome, a.golden) == ("scored", GoldenTurn(eval_set_id="s", eval_id="paris", turn=0))
    assert [r.status for r in a.results] == ["passed", "passed", "passed", "informational"]
    assert b.outcome == "no_golden"
    assert [(r.status, r.reason) for r in b.results[:2]] == [
        ("not_evaluated", "no golden"),
        ("not_evaluated", "no golden"),
    ]
    assert b.results[2].status == "passed"  # reference-free criteria still run
    assert c.outcome == "not_evaluable"
    assert {r.reason for r in c.results} == {"content not captured: set X"}
    assert [r.status for r in c.results] == ["not_evaluated"] * 3 + ["informational"]


def test_repeated_runs_of_one_case_are_pooled() -> None:
    runs = [
        run("r1", "Weather in Paris?", "Paris", "It is sunny in Paris"),
        run("r2", "weather in PARIS?", "Lyon", "It is sunny in Paris"),
    ]
    results = score_conversations(runs, CRITERIA, match=match)
    [case] = summarize_cases(results, CRITERIA)
    assert (case.eval_set_id, case.eval_id) == ("s", "paris")
    by_name = {c.criterion: c for c in case.criteria}
    assert by_name["tool_trajectory_avg_score"].score == 0.5
    assert by_name["tool_trajectory_avg_score"].status == "failed"
    assert by_name["response_match_score"].status == "passed"
    assert by_name["tool_call_count_v1"].status == "informational"
    assert case.status == "failed"
    assert len(case.invocations) == 2


def test_unmatched_conversations_are_their_own_cases() -> None:
    results = score_conversations([run("z", "hello", "x", "sunny")], CRITERIA, match=match)
    [case] = summarize_cases(results, CRITERIA)
    assert (case.eval_set_id, case.eval_id) == (None, "z")
    assert case.status == "passed"  # only contains_keywords judged


@dataclass(frozen=True, kw_only=True)
class _Worst(ToolTrajectoryAvgScore):
    """Pools a case by its worst invocation, not the mean."""

    name = "worst_trajectory"

    def aggregate(self, results: Sequence[CriterionResult]) -> float | None:
        return min(r.score for r in results if r.score is not None)


@dataclass(frozen=True, kw_only=True)
class _ParisOnly(Criterion):
    """Scores only runs that asked for Paris's weather (None, not evaluated, elsewhere)."""

    name = "paris_only"

    def score(self, ctx: EvalContext) -> Score:
        args = ctx.actual.tool_calls[0].args
        return Score(value=1.0 if args == {"city": "Paris"} else None)


def test_a_case_pools_each_criterion_its_own_way() -> None:
    """The mean skips None scores; a criterion's own aggregate is used as it is."""
    runs = [
        run("r1", "Weather in Paris?", "Paris", "It is sunny in Paris"),
        run("r2", "weather in PARIS?", "Lyon", "It is sunny in Paris"),
        run("r3", "Weather in Paris?", "Paris", "It is sunny in Paris"),
    ]
    criteria = (ToolTrajectoryAvgScore(), _Worst(threshold=0.5), _ParisOnly(threshold=1.0))
    [case] = summarize_cases(score_conversations(runs, criteria, match=match), criteria)
    by_name = {c.criterion: (c.score, c.status) for c in case.criteria}
    assert by_name["tool_trajectory_avg_score"] == (2 / 3, "failed")
    assert by_name["worst_trajectory"] == (0.0, "failed")
    assert by_name["paris_only"] == (1.0, "passed")
    [single] = summarize_cases(score_conversations(runs[1:2], criteria, match=match), criteria)
    assert [(c.score, c.status) for c in single.criteria] == [
        (0.0, "failed"),
        (0.0, "failed"),
        (None, "not_evaluated"),
    ]


@dataclass(frozen=True, kw_only=True)
class _AllMustPass(ToolTrajectoryAvgScore):
    """A case passes only when every run did: its own case result, not mean vs threshold."""

    name = "all_must_pass"

    def case_result(self, results: Sequence[CriterionResult]) -> tuple[float | None, EvalStatus]:
        passed = all(r.status == "passed" for r in results)
        return (1.0 if passed else 0.0), ("passed" if passed else "failed")


def test_a_criterion_s_own_case_result_is_used_and_the_default_is_case_result_s() -> None:
    runs = [
        run("r1", "Weather in Paris?", "Paris", "It is sunny in Paris"),
        run("r2", "weather in PARIS?", "Lyon", "It is sunny in Paris"),
        run("r3", "Weather in Paris?", "Paris", "It is sunny in Paris"),
    ]
    criteria = (ToolTrajectoryAvgScore(threshold=0.5), _AllMustPass(threshold=0.5), *CRITERIA)
    results = score_conversations(runs, criteria, match=match)
    [case] = summarize_cases(results, criteria)
    per_criterion = list(zip(*[r.results for r in results], strict=True))
    # Every summary is what the criterion's own case_result gives, whichever path built it.
    assert [(c.score, c.status) for c in case.criteria] == [
        crit.case_result(per_inv) for crit, per_inv in zip(criteria, per_criterion, strict=True)
    ]
    assert [(c.score, c.status) for c in case.criteria[:2]] == [(2 / 3, "passed"), (0.0, "failed")]
    assert case.status == "failed"


@dataclass(frozen=True, kw_only=True)
class _OwnMean(ToolTrajectoryAvgScore):
    """Pools the per-invocation scores as ``pool`` says: what a user's aggregate may give."""

    name = "own_mean"
    pool: str = "decimal"

    def aggregate(self, results: Sequence[CriterionResult]) -> float | None:
        scores = [r.score for r in results if r.score is not None]
        pooled: object
        if self.pool == "decimal":
            pooled = sum((Decimal(str(s)) for s in scores), Decimal(0)) / len(scores)
        elif self.pool == "nan":
            pooled = math.nan
        elif self.pool == "text":
            pooled = "half"
        elif self.pool == "signalling":
            pooled = Decimal("sNaN")
        elif self.pool == "huge":
            pooled = Fraction(10**400)
        else:
            raise ZeroDivisionError("no scores")
        return pooled  # type: ignore[return-value]


def _own_summary(pool: str) -> tuple[object, str]:
    runs = [
        run("r1", "Weather in Paris?", "Paris", "It is sunny in Paris"),
        run("r2", "weather in PARIS?", "Lyon", "It is sunny in Paris"),
    ]
    criteria = (_OwnMean(threshold=0.5, pool=pool), ToolCallCount())
    [case] = summarize_cases(score_conversations(runs, criteria, match=match), criteria)
    own, count = case.criteria
    assert (count.criterion, count.status) == ("tool_call_count_v1", "informational")
    return own.score, own.status


def test_a_criterion_s_own_aggregate_may_pool_in_any_real_number() -> None:
    """A Decimal (numpy, fractions) case score becomes a float: compiled code downstream
    takes only floats, and refused it with a TypeError that crashed the summary."""
    score, status = _own_summary("decimal")
    assert type(score) is float
    assert (score, status) == (0.5, "passed")


def test_a_broken_own_aggregate_is_not_evaluated_for_the_case_and_costs_nothing_else() -> None:
    for pool in ("nan", "text", "signalling", "huge", "raise"):
        assert _own_summary(pool) == (None, "not_evaluated"), pool


@dataclass(frozen=True, kw_only=True)
class _OwnCaseResult(ToolTrajectoryAvgScore):
    """A case_result that gives what it is told to: a user's bug, in its shapes."""

    name = "own_case_result"
    outcome: object = None

    def case_result(self, results: Sequence[CriterionResult]) -> tuple[float | None, EvalStatus]:
        return self.outcome  # type: ignore[return-value]


def test_a_case_result_of_the_wrong_shape_is_not_evaluated_for_the_case() -> None:
    runs = [run("r1", "Weather in Paris?", "Paris", "It is sunny in Paris")]
    for outcome in ((0.5, ["passed"]), (0.5, "great"), (0.5,), [0.5, "passed"], None):
        criteria = (_OwnCaseResult(threshold=0.5, outcome=outcome), ToolCallCount())
        [case] = summarize_cases(score_conversations(runs, criteria, match=match), criteria)
        own, count = case.criteria
        assert (own.score, own.status) == (None, "not_evaluated"), outcome
        assert count.status == "informational"
    one = (_OwnCaseResult(threshold=0.5, outcome=(1, "passed")),)
    [case] = summarize_cases(score_conversations(runs, one, match=match), one)
    [own] = case.criteria
    assert (own.score, own.status, type(own.score)) == (1.0, "passed", float)


@dataclass(frozen=True, kw_only=True)
class _LooseScore(Criterion):
    """Returns a Score whose reason and details ignore their annotations."""

    name = "loose_score"
    reason: object = None
    details: object = None

    def score(self, ctx: EvalContext) -> Score:
        return Score(value=1.0, reason=self.reason, details=self.details)  # type: ignore[arg-type]


def test_a_score_with_a_reason_or_details_of_another_type_is_not_evaluated() -> None:
    """Compiled, the outcome's reasons are read as str: an int reason was a TypeError
    that stopped the whole replay."""
    runs = [run("r1", "Weather in Paris?", "Paris", "It is sunny in Paris")]
    for loose in (_LooseScore(reason=123, details={}), _LooseScore(details=["x"])):
        criteria = (loose, ToolCallCount())
        [res] = score_conversations(runs, criteria, match=match)
        own, count = res.results
        assert own.status == "not_evaluated"
        assert (own.reason or "").startswith("criterion error: ")
        assert count.status == "informational"
        [case] = summarize_cases([res], criteria)
        assert case.criteria[0].status == "not_evaluated"
