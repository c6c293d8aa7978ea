"""The scoring records' builders: each gives the record its keywords build."""

from __future__ import annotations

from tracescore import scored
from tracescore.criteria import CriterionResult, EvalContext
from tracescore.goldens.cases import GoldenCase, GoldenRubric, GoldenScenario
from tracescore.model import Invocation
from tracescore.scored import (
    CaseResult,
    CriterionSummary,
    GoldenTurn,
    InvocationResult,
    case_result,
    criterion_summary,
    eval_context,
    golden_turn,
    invocation_result,
)

ACTUAL = Invocation(trace_id="t", invocation_id="a", user_content="hi")
GOLDEN = Invocation(trace_id="", invocation_id="g", user_content="hi", final_response="ok")
RUBRIC = GoldenRubric(rubric_id="r", text="Polite.")
TURN_RUBRIC = GoldenRubric(rubric_id="t", text="Short.")
SCENARIO = GoldenScenario(starting_prompt="Hello", conversation_plan="Ask twice.")


def test_golden_turn_takes_the_case_rubrics_then_the_turns() -> None:
    case = GoldenCase(
        eval_set_id="s",
        eval_id="c",
        turns=(GOLDEN, GOLDEN),
        rubrics=(RUBRIC,),
        turn_rubrics=((), (TURN_RUBRIC,)),
        scenario=SCENARIO,
    )
    assert golden_turn(case, 1) == GoldenTurn(
        eval_set_id="s", eval_id="c", turn=1, rubrics=(RUBRIC, TURN_RUBRIC), scenario=SCENARIO
    )
    # Past the turns with rubrics of their own: the case's alone.
    assert golden_turn(case, 2).rubrics == (RUBRIC,)
    assert type(golden_turn(case, 0)) is GoldenTurn


def test_eval_context_with_and_without_a_golden_turn() -> None:
    ref = GoldenTurn(eval_set_id="s", eval_id="c", turn=0, rubrics=(RUBRIC,), scenario=SCENARIO)
    assert eval_context(ACTUAL, GOLDEN, (GOLDEN,), ref, True) == EvalContext(
        actual=ACTUAL,
        expected=GOLDEN,
        conversation=(GOLDEN,),
        rubrics=(RUBRIC,),
        scenario=SCENARIO,
        last_turn=True,
    )
    assert eval_context(ACTUAL, None, (), None, False) == EvalContext(actual=ACTUAL)


def test_the_result_records_are_the_ones_their_keywords_build() -> None:
    result = CriterionResult(
        criterion="x", version="1", score=0.5, status="failed", threshold=0.8, reason="r"
    )
    ref = GoldenTurn(eval_set_id="s", eval_id="c", turn=0)
    inv = invocation_result(ACTUAL, ref, GOLDEN, "scored", None, (result,))
    assert inv == InvocationResult(
        invocation=ACTUAL,
        golden=ref,
        expected=GOLDEN,
        outcome="scored",
        reason=None,
        results=(result,),
    )
    summary = criterion_summary("x", 0.5, "failed", 0.8)
    assert summary == CriterionSummary(criterion="x", score=0.5, status="failed", threshold=0.8)
    case = case_result("s", "c", "failed", (summary,), (inv,))
    assert case == CaseResult(
        eval_set_id="s", eval_id="c", status="failed", criteria=(summary,), invocations=(inv,)
    )
    for record in (inv, summary, case):
        assert scored.__name__ == type(record).__module__
