"""The criterion contract, the registry and the built-in deterministic criteria."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from types import MappingProxyType

import pytest

from tracescore.criteria import (
    Criterion,
    CriterionResult,
    EvalContext,
    Score,
    combine_statuses,
    criterion_class,
    known_criteria,
    register_criterion,
    status_for,
)
from tracescore.criteria.text import ContainsKeywords, ResponseMatchScore
from tracescore.criteria.trajectory import (
    NodeOrderMatchScore,
    ToolNameMatchScore,
    ToolTrajectoryAvgScore,
)
from tracescore.exceptions import ConfigError
from tracescore.model import Invocation, TokenUsage, ToolCall


def inv(
    *calls: tuple[str, object],
    final: str | None = "done",
    agents: tuple[str, ...] = (),
    **kw: object,
) -> Invocation:
    return Invocation(
        trace_id="t",
        invocation_id="i",
        tool_calls=tuple(ToolCall(name=n, args=a) for n, a in calls),  # type: ignore[arg-type]
        final_response=final,
        agents=agents,
        **kw,  # type: ignore[arg-type]
    )


def test_status_rules_follow_adk() -> None:
    assert status_for(0.8, 0.8, informational=False) == "passed"
    assert status_for(0.79, 0.8, informational=False) == "failed"
    assert status_for(None, 0.8, informational=False) == "not_evaluated"
    assert status_for(0.0, None, informational=True) == "informational"
    assert combine_statuses(["passed", "failed", "informational"]) == "failed"
    assert combine_statuses(["passed", "not_evaluated"]) == "passed"
    assert combine_statuses(["informational", "not_evaluated"]) == "not_evaluated"


def test_reference_criterion_without_golden_is_not_evaluated() -> None:
    result = ToolTrajectoryAvgScore().evaluate(EvalContext(actual=inv(("a", {}))))
    assert (result.status, result.score, result.reason) == ("not_evaluated", None, "no golden")


def test_results_are_the_records_their_keywords_build() -> None:
    # _result stores the fields one by one: every field set, equal to the keyword-built
    # record, and a result of its own (not the Score's) that pickles and replaces.
    actual = inv(("a", {}), final="the table is booked")
    result = ContainsKeywords(threshold=1.0, keywords=("table", "wine")).evaluate(
        EvalContext(actual=actual)
    )
    assert result == CriterionResult(
        criterion="contains_keywords",
        version="1",
        score=0.5,
        status="failed",
        threshold=1.0,
        reason=None,
        details={"missing": ["wine"]},
    )
    assert len(dataclasses.astuple(result)) == len(dataclasses.fields(CriterionResult))
    assert pickle.loads(pickle.dumps(result)) == result
    assert dataclasses.replace(result, reason="own").reason == "own"


def test_a_failing_criterion_becomes_data() -> None:
    @dataclass(frozen=True, kw_only=True)
    class Broken(Criterion):
        name = "broken_for_test"

        def score(self, ctx: EvalContext) -> Score:
            raise RuntimeError("boom")

    result = Broken(threshold=0.5).evaluate(EvalContext(actual=inv()))
    assert result.status == "not_evaluated"
    assert result.reason == "criterion error: RuntimeError: boom"


def returning(value: object, name: str = "returning_for_test") -> Criterion:
    """A user's criterion whose ``score`` returns ``value`` as it is."""

    @dataclass(frozen=True, kw_only=True)
    class Returning(Criterion):
        def score(self, ctx: EvalContext) -> Score:
            return value  # type: ignore[return-value]  # what a user's code may do

    Returning.name = name
    return Returning(threshold=0.5)


class Numpyish(float):
    """A float subclass, as numpy.float64 is (its type is not float)."""


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (0.7, "criterion error: score() returned float, not a Score"),
        (None, "criterion error: score() returned NoneType, not a Score"),
        (Score(value=float("nan")), "criterion error: score nan is not a finite number"),
        (Score(value=float("-inf")), "criterion error: score -inf is not a finite number"),
        (Score(value="0.9"), "criterion error: score '0.9' is str, not a number"),  # type: ignore[arg-type]
        (Score(value=[1.0]), "criterion error: score [1.0] is list, not a number"),  # type: ignore[arg-type]
        (
            Score(value=Decimal("sNaN")),  # type: ignore[arg-type]
            "criterion error: score Decimal('sNaN') is not a finite number",
        ),
        (
            Score(value=1.0, reason=123),  # type: ignore[arg-type]
            "criterion error: reason 123 is int, not a str",
        ),
        (
            Score(value=None, reason=b"why"),  # type: ignore[arg-type]
            "criterion error: reason b'why' is bytes, not a str",
        ),
        (
            Score(value=1.0, details=["x"]),  # type: ignore[arg-type]
            "criterion error: details ['x'] is list, not a mapping",
        ),
        (
            Score(value=1.0, details=None),  # type: ignore[arg-type]
            "criterion error: details None is NoneType, not a mapping",
        ),
        (
            Score(value=10**400),
            "criterion error: score 100000000000000000...0000000000000000000 is not a finite number",
        ),
    ],
)
def test_a_bad_score_is_not_evaluated_with_the_reason(value: object, reason: str) -> None:
    # evaluate never raises: these raised AttributeError / TypeError (and a replay with
    # them), or NaN failed every threshold and made every mean NaN.
    result = returning(value).evaluate(EvalContext(actual=inv()))
    assert (result.status, result.score, result.reason) == ("not_evaluated", None, reason)


@pytest.mark.parametrize(
    ("value", "status", "score"),
    [
        (True, "passed", 1.0),
        (0, "failed", 0.0),
        (3, "passed", 3.0),
        (Numpyish(0.25), "failed", 0.25),
        (Fraction(3, 4), "passed", 0.75),
        (Decimal("0.5"), "passed", 0.5),
    ],
)
def test_numbers_of_other_types_become_floats(value: object, status: str, score: float) -> None:
    result = returning(Score(value=value, reason="r", details={"k": 1})).evaluate(  # type: ignore[arg-type]
        EvalContext(actual=inv())
    )
    assert (result.status, result.score, result.reason, result.details) == (
        status,
        score,
        "r",
        {"k": 1},
    )
    assert type(result.score) is float


def test_a_criterion_broken_on_every_run_logs_once(caplog: pytest.LogCaptureFixture) -> None:
    crit = returning(0.7, name="logs_once_for_test")
    ctx = EvalContext(actual=inv())
    with caplog.at_level("DEBUG", logger="tracescore.criteria.base"):
        for _ in range(5):
            crit.evaluate(ctx)
    levels = [r.levelname for r in caplog.records if "logs_once_for_test" in r.getMessage()]
    assert levels == ["WARNING", "DEBUG", "DEBUG", "DEBUG", "DEBUG"]


@pytest.mark.parametrize(
    ("match_type", "expected_score"), [("EXACT", 0.0), ("IN_ORDER", 1.0), ("ANY_ORDER", 1.0)]
)
def test_tool_trajectory_modes_and_case_aggregation(match_type: str, expected_score: float) -> None:
    crit = ToolTrajectoryAvgScore(match_type=match_type)  # type: ignore[arg-type]
    actual = inv(("search", {"q": 1}), ("lookup", {"id": 2}), ("extra", None))
    golden = inv(("search", {"q": 1.0}), ("lookup", {"id": 2}))
    first = crit.evaluate(EvalContext(actual=actual, expected=golden))
    second = crit.evaluate(EvalContext(actual=golden, expected=golden))
    assert first.score == expected_score
    score, status = crit.case_result([first, second])
    assert score == (expected_score + 1.0) / 2
    assert status == ("passed" if expected_score == 1.0 else "failed")


def test_ignore_args_and_name_match() -> None:
    actual = inv(("search", {"q": 1}), ("search", {"q": 2}))
    golden = inv(("search", {"q": 3}), ("book", {}))
    ctx = EvalContext(actual=actual, expected=golden)
    assert ToolTrajectoryAvgScore(ignore_args=True).evaluate(ctx).score == 0.0
    assert (
        ToolTrajectoryAvgScore(ignore_args=True, match_type="IN_ORDER")
        .evaluate(EvalContext(actual=actual, expected=inv(("search", {"q": 9}))))
        .score
        == 1.0
    )
    assert ToolNameMatchScore().evaluate(ctx).score == pytest.approx(2 / 3)


def test_response_match_is_rouge1_f_and_missing_text_is_empty() -> None:
    crit = ResponseMatchScore()
    ctx = EvalContext(
        actual=inv(final="It's sunny in London today"),
        expected=inv(final="The weather in London is sunny"),
    )
    assert crit.evaluate(ctx).score == 0.5
    assert crit.evaluate(ctx).status == "failed"
    assert crit.evaluate(EvalContext(actual=inv(final=None), expected=inv())).score == 0.0


def test_contains_keywords() -> None:
    crit = ContainsKeywords(keywords=("Paris", "21°C"))
    result = crit.evaluate(EvalContext(actual=inv(final="It is 21°C in paris.")))
    assert (result.score, result.status) == (1.0, "passed")
    half = crit.evaluate(EvalContext(actual=inv(final="Paris is nice")))
    assert half.score == 0.5
    assert half.details == {"missing": ["21°C"]}
    assert ContainsKeywords().evaluate(EvalContext(actual=inv())).status == "not_evaluated"


def test_node_order() -> None:
    crit = NodeOrderMatchScore(match_type="IN_ORDER")
    ctx = EvalContext(
        actual=inv(agents=("root", "sub", "writer")), expected=inv(agents=("root", "writer"))
    )
    assert crit.evaluate(ctx).score == 1.0
    no_order = crit.evaluate(EvalContext(actual=inv(agents=("root",)), expected=inv()))
    assert no_order.status == "not_evaluated"


def test_efficiency_metrics_are_informational() -> None:
    actual = inv(
        ("a", {}),
        ("b", {}),
        inference_calls=3,
        usage=TokenUsage(input_tokens=10, output_tokens=5),
        start_ns=1_000_000_000,
        end_ns=3_500_000_000,
    )
    ctx = EvalContext(actual=actual)
    values = {
        name: criterion_class(name)().evaluate(ctx)
        for name in (
            "tool_call_count_v1",
            "inference_call_count_v1",
            "token_usage_v1",
            "invocation_duration_v1",
        )
    }
    assert {k: v.score for k, v in values.items()} == {
        "tool_call_count_v1": 2.0,
        "inference_call_count_v1": 3.0,
        "token_usage_v1": 15.0,
        "invocation_duration_v1": 2.5,
    }
    assert {v.status for v in values.values()} == {"informational"}
    assert criterion_class("token_usage_v1")().evaluate(EvalContext(actual=inv())).score is None


@pytest.mark.parametrize(
    ("calls", "framework_replies", "expected"),
    [
        (2, 0, 2.0),
        (0, 0, None),  # no model call seen: not known, never zero
        (0, 1, 0.0),  # a guardrail answered in the model's place: zero calls, as ADK says
        (1, 1, 1.0),
    ],
)
def test_inference_call_count_is_zero_only_where_a_callback_answered(
    calls: int, framework_replies: int, expected: float | None
) -> None:
    actual = inv(inference_calls=calls, framework_replies=framework_replies)
    result = criterion_class("inference_call_count_v1")().evaluate(EvalContext(actual=actual))
    assert (result.score, result.status) == (expected, "informational")


def test_registry_names_aliases_and_suggestions() -> None:
    assert criterion_class("rouge_match") is ResponseMatchScore
    for name in (
        "tool_trajectory_avg_score",
        "response_match_score",
        "tool_name_match_score",
        "node_order_match_score",
        "contains_keywords",
    ):
        assert name in known_criteria()
    with pytest.raises(ConfigError, match="Did you mean 'tool_trajectory_avg_score'") as err:
        criterion_class("tool_trajectory_avg_scor")
    assert "Known criteria:" in str(err.value)


def test_user_criteria_register_like_builtins() -> None:
    @register_criterion(aliases=("short_answer",))
    @dataclass(frozen=True, kw_only=True)
    class AnswerLength(Criterion):
        name = "answer_is_short_for_test"
        threshold: float | None = 1.0
        limit: int = 10

        def score(self, ctx: EvalContext) -> Score:
            return Score(value=float(len(ctx.actual.final_response or "") <= self.limit))

    assert criterion_class("short_answer") is AnswerLength
    assert AnswerLength(limit=3).evaluate(EvalContext(actual=inv(final="ok"))).status == "passed"

    class SameName(AnswerLength):  # another class under a taken name
        pass

    with pytest.raises(ValueError, match="already registered"):
        register_criterion()(SameName)


def defined(name: object, *, with_score: bool = True) -> type[Criterion]:
    """A new Criterion class named ``name`` (module and qualname alike on every call)."""

    @dataclass(frozen=True, kw_only=True)
    class Defined(Criterion):
        def score(self, ctx: EvalContext) -> Score:
            return Score(value=1.0)

    if not with_score:
        Defined.__abstractmethods__ = frozenset({"score"})
    if name is not None:
        Defined.name = name  # type: ignore[assignment]  # what a user may write
    return Defined


def test_registering_works_with_or_without_parentheses() -> None:
    bare = register_criterion(defined("bare_decorator_for_test"))
    assert criterion_class("bare_decorator_for_test") is bare
    called = register_criterion(aliases=("called_alias_for_test",))(defined("called_for_test"))
    assert criterion_class("called_alias_for_test") is called


def test_the_same_definition_again_replaces_the_first() -> None:
    # A notebook cell run twice, or a reloaded module: the same module and qualified name.
    first = register_criterion(defined("redefined_for_test"))
    second = register_criterion(defined("redefined_for_test"))
    assert first is not second
    assert criterion_class("redefined_for_test") is second


def test_a_name_taken_by_another_class_names_its_owner() -> None:
    with pytest.raises(ValueError, match="already registered") as err:
        register_criterion(defined("response_match_score"))
    assert str(err.value) == (
        "criterion name 'response_match_score' is already registered by "
        "tracescore.criteria.text.ResponseMatchScore"
    )
    with pytest.raises(ValueError, match="'rouge_match' is already registered by "):
        register_criterion(aliases=("rouge_match",))(defined("alias_clash_for_test"))
    with pytest.raises(ConfigError):
        criterion_class("alias_clash_for_test")  # nothing half-registered


@pytest.mark.parametrize(
    ("cls", "error", "message"),
    [
        (int, TypeError, "register_criterion: <class 'int'> is not a Criterion subclass"),
        (
            defined(None),
            TypeError,
            "register_criterion: defined.<locals>.Defined has no name (the class attribute "
            "configs and metrics use, e.g. name = 'politeness')",
        ),
        (
            defined(""),
            ValueError,
            "register_criterion: defined.<locals>.Defined: '' is not a criterion name "
            "(non-empty, printable, no spaces)",
        ),
        (defined("two words"), ValueError, "'two words' is not a criterion name"),
        (defined(3), ValueError, "3 is not a criterion name"),
        (
            defined("no_score_for_test", with_score=False),
            TypeError,
            "register_criterion: defined.<locals>.Defined does not implement score",
        ),
    ],
)
def test_what_cannot_be_a_criterion_is_refused_at_registration(
    cls: type, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as err:
        register_criterion(cls)
    assert message in str(err.value)
    # An empty name once made every later name look taken (its lookup matched "").
    register_criterion(defined("registered_after_a_refusal_for_test"))


class _Why(str):
    """A str subclass, as an enum's str mixin or a markup string is."""


def test_a_str_subclass_reason_and_a_read_only_mapping_keep_the_score() -> None:
    details = MappingProxyType({"k": 1})
    result = returning(Score(value=0.75, reason=_Why("ok"), details=details)).evaluate(
        EvalContext(actual=inv())
    )
    assert (result.status, result.score, result.reason) == ("passed", 0.75, "ok")
    assert type(result.details) is dict
    assert result.details == {"k": 1}
    none = returning(Score(value=None, reason="no answer", details=details)).evaluate(
        EvalContext(actual=inv())
    )
    assert (none.status, none.score, none.reason, none.details) == (
        "not_evaluated",
        None,
        "no answer",
        {"k": 1},
    )


@pytest.mark.parametrize(
    ("given", "kept"),
    [(1, 1.0), (Decimal("0.5"), 0.5), (Fraction(3, 4), 0.75), (Numpyish(0.5), 0.5)],
)
def test_a_threshold_of_any_real_number_becomes_a_float(given: float, kept: float) -> None:
    kind = type(returning(Score(value=0.6)))
    made = kind(threshold=given)
    assert (made.threshold, type(made.threshold)) == (kept, float)
    assert made.evaluate(EvalContext(actual=inv())).status == (
        "passed" if kept <= 0.6 else "failed"
    )


@pytest.mark.parametrize("given", ["0.5", Decimal("sNaN"), 10**400, [0.5]])
def test_a_threshold_that_is_no_number_is_a_config_error(given: float) -> None:
    kind = type(returning(Score(value=0.6), name="strict_for_test"))
    with pytest.raises(
        ConfigError, match=r"criterion strict_for_test: threshold .* is not a number"
    ):
        kind(threshold=given)
