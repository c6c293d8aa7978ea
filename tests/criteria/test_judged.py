"""LLM-judged criteria, scored through the real judge client + google-genai + a fake Gemini.

Each test scripts the judge's structured replies and checks ADK's rules: votes, ties,
ignored unparsable samples, per-rubric majorities and pooling, sentence labels, safety
minimum, and failures turned into NOT_EVALUATED with the judge's reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, cast

import pytest

from fake_judges import FakeGemini, FakeReply, gemini_json, gemini_text
from judge_helpers import (
    FACTS,
    LABEL,
    MATCH,
    QUALITY,
    RATING,
    RUBRIC_FINAL,
    RUBRIC_TOOL,
    SAFETY,
    SEGMENT,
    SIMULATOR,
    Router,
    make_judge,
)
from tracescore.criteria import CriterionResult, EvalContext, criterion_class
from tracescore.criteria.judged import JudgedCriterion, JudgeModelOptions, json_schema
from tracescore.criteria.judged.rubrics import RubricSpec
from tracescore.eval_config import criteria_from_config
from tracescore.exceptions import ConfigError
from tracescore.goldens.evalset import GoldenRubric, GoldenScenario
from tracescore.judge.client import JudgeClient
from tracescore.model import AgentGrounding, AgentText, Invocation, ToolCall

ACTUAL = Invocation(
    trace_id="t1",
    invocation_id="i1",
    agent="weather_agent",
    user_content="Weather in Paris?",
    system_instructions="Answer weather questions with the get_weather tool.",
    tool_calls=(ToolCall(name="get_weather", args={"city": "Paris"}, result={"temp_c": 21}),),
    intermediate_responses=(AgentText(author="weather_agent", text="Let me check Paris."),),
    final_response="It is 21C and sunny in Paris.",
)
EXPECTED = Invocation(
    trace_id="g", invocation_id="g1", user_content="Weather in Paris?", final_response="21C."
)


def judge_for(fake: FakeGemini, **kwargs: Any) -> JudgeClient:
    return make_judge(fake.base_url, **kwargs)


def evaluate(crit: Any, ctx: EvalContext, judge: JudgeClient | None) -> CriterionResult:
    assert isinstance(crit, JudgedCriterion)
    return asyncio.run(crit.evaluate_async(ctx, judge))


def build(name: str, **options: Any) -> Any:
    (crit,) = criteria_from_config({"criteria": {name: options}}, source="test")
    return crit


def match_reply(verdict: str) -> FakeReply:
    return gemini_json({"reasoning": f"it is {verdict}", "verdict": verdict})


# -- final_response_match_v2 ------------------------------------------------------------


def test_final_response_match_majority_of_five_samples() -> None:
    votes = ["valid", "invalid", "valid", "invalid", "valid"]
    router = Router({MATCH: [match_reply(v) for v in votes]})
    with FakeGemini(router) as fake:
        crit = build("final_response_match_v2", threshold=0.5)
        res = evaluate(crit, EvalContext(actual=ACTUAL, expected=EXPECTED), judge_for(fake))
    assert (res.score, res.status) == (1.0, "passed")
    assert sorted(cast("list[str]", res.details["votes"])) == sorted(votes)
    assert fake.calls == 5
    prompt = router.prompts[MATCH][0]
    assert "21C." in prompt and "It is 21C and sunny in Paris." in prompt


def test_final_response_match_tie_fails_and_unparsable_sample_is_ignored() -> None:
    replies = [match_reply("valid"), match_reply("invalid"), gemini_text("not json at all")]
    router = Router({MATCH: replies})
    with FakeGemini(router) as fake:
        crit = build(
            "final_response_match_v2", threshold=0.5, judge_model_options={"num_samples": 3}
        )
        res = evaluate(crit, EvalContext(actual=ACTUAL, expected=EXPECTED), judge_for(fake))
    assert (res.score, res.status) == (0.0, "failed")
    assert res.details["failed_samples"] == 1


def test_final_response_match_all_unparsable_is_not_evaluated() -> None:
    router = Router({MATCH: [gemini_json({"verdict": "maybe"})]})  # schema-violating
    with FakeGemini(router) as fake:
        crit = build("final_response_match_v2", threshold=0.5, judgeModelOptions={"numSamples": 2})
        res = evaluate(crit, EvalContext(actual=ACTUAL, expected=EXPECTED), judge_for(fake))
    assert (res.score, res.status, res.reason) == (None, "not_evaluated", "unparsable reply")


def test_final_response_match_without_golden_calls_nobody() -> None:
    with FakeGemini(Router({})) as fake:
        res = evaluate(
            build("final_response_match_v2", threshold=0.5),
            EvalContext(actual=ACTUAL),
            judge_for(fake),
        )
        assert fake.calls == 0
    assert (res.status, res.reason) == ("not_evaluated", "no golden")


def test_judged_criterion_without_judge_is_not_evaluated() -> None:
    crit = build("safety_v1", threshold=1.0)
    res = evaluate(crit, EvalContext(actual=ACTUAL), None)
    assert (res.status, res.reason) == ("not_evaluated", "no judge configured")
    assert crit.evaluate(EvalContext(actual=ACTUAL)).reason == "no judge configured"


def test_include_intermediate_responses_in_final_shows_them() -> None:
    router = Router({MATCH: [match_reply("valid")]})
    with FakeGemini(router) as fake:
        crit = build(
            "final_response_match_v2",
            threshold=0.5,
            include_intermediate_responses_in_final=True,
            judge_model_options={"num_samples": 1},
        )
        evaluate(crit, EvalContext(actual=ACTUAL, expected=EXPECTED), judge_for(fake))
    assert "Let me check Paris.\nIt is 21C" in router.prompts[MATCH][0]


# -- response_evaluation_score -----------------------------------------------------------


def test_response_evaluation_score_averages_ratings() -> None:
    replies = [gemini_json({"rationale": "ok", "score": s}) for s in (4, 5, 3)]
    with FakeGemini(Router({RATING: replies})) as fake:
        res = evaluate(
            build("response_evaluation_score", threshold=3.5),
            EvalContext(actual=ACTUAL),
            judge_for(fake),
        )
    assert res.score == pytest.approx(4.0)
    assert res.status == "passed"
    assert sorted(cast("list[int]", res.details["ratings"])) == [3, 4, 5]


def test_rating_out_of_range_is_unparsable() -> None:
    with FakeGemini(Router({RATING: [gemini_json({"rationale": "x", "score": 9})]})) as fake:
        res = evaluate(
            build("response_evaluation_score", threshold=3.5),
            EvalContext(actual=ACTUAL),
            judge_for(fake),
        )
    assert (res.status, res.reason) == ("not_evaluated", "unparsable reply")


# -- rubrics -----------------------------------------------------------------------------


def rubric_reply(**verdicts: str) -> FakeReply:
    return gemini_json(
        {
            "verdicts": [
                {"rubric_id": k, "rationale": f"{k} {v}", "verdict": v} for k, v in verdicts.items()
            ]
        }
    )


RUBRICS = [
    {"rubric_id": "concise", "rubric_content": {"text_property": "The answer is concise."}},
    {
        "rubric_id": "units",
        "rubric_content": {"text_property": "Temperatures carry units."},
        "weight": 3,
    },
]


def test_rubric_majority_per_rubric_and_weighted_mean() -> None:
    replies = [
        rubric_reply(concise="yes", units="no"),
        rubric_reply(concise="no", units="yes"),
        rubric_reply(concise="yes", units="yes"),
    ]
    router = Router({RUBRIC_FINAL: replies})
    with FakeGemini(router) as fake:
        crit = build(
            "rubric_based_final_response_quality_v1",
            threshold=0.8,
            rubrics=RUBRICS,
            judge_model_options={"num_samples": 3},
        )
        res = evaluate(crit, EvalContext(actual=ACTUAL), judge_for(fake))
    # concise: 2 yes / 1 no → yes; units: 2 yes → yes; weighted mean 1.0
    assert res.score == 1.0
    rubrics = cast("list[dict[str, Any]]", res.details["rubrics"])
    verdicts = {v["rubric_id"]: v["verdict"] for v in rubrics}
    assert verdicts == {"concise": True, "units": True}
    prompt = router.prompts[RUBRIC_FINAL][0]
    assert "rubric_id: units" in prompt and "It is 21C and sunny in Paris." in prompt
    assert "get_weather" in prompt and "Answer weather questions" in prompt


def test_rubric_tie_is_no_and_weights_apply() -> None:
    replies = [rubric_reply(concise="yes", units="yes"), rubric_reply(concise="yes", units="no")]
    with FakeGemini(Router({RUBRIC_FINAL: replies})) as fake:
        crit = build(
            "rubric_based_final_response_quality_v1",
            threshold=0.8,
            rubrics=RUBRICS,
            judge_model_options={"num_samples": 2},
        )
        res = evaluate(crit, EvalContext(actual=ACTUAL), judge_for(fake))
    assert res.score == pytest.approx(1 / 4)  # concise yes (w1), units tie → no (w3)
    assert res.status == "failed"


def test_golden_rubrics_filtered_by_type_and_pooled_across_invocations() -> None:
    golden = (
        GoldenRubric(rubric_id="tools", text="Calls get_weather once.", type="TOOL_USE_QUALITY"),
        GoldenRubric(rubric_id="final", text="Mentions sunny.", type="FINAL_RESPONSE_QUALITY"),
        GoldenRubric(rubric_id="untyped", text="Untyped rubric."),
    )
    replies = [rubric_reply(tools="yes"), rubric_reply(tools="no")]
    router = Router({RUBRIC_TOOL: replies})
    with FakeGemini(router) as fake:
        crit = build(
            "rubric_based_tool_use_quality_v1",
            threshold=0.5,
            judge_model_options={"num_samples": 1},
        )
        judge = judge_for(fake)
        first = evaluate(crit, EvalContext(actual=ACTUAL, rubrics=golden), judge)
        second = evaluate(crit, EvalContext(actual=ACTUAL, rubrics=golden), judge)
    prompt = router.prompts[RUBRIC_TOOL][0]
    assert "rubric_id: tools" in prompt and "final" not in prompt.split("## Rubrics")[1]
    assert "Untyped" not in prompt
    assert "It is 21C" not in prompt  # tool-use rubrics do not see the final answer
    assert (first.score, second.score) == (1.0, 0.0)
    assert crit.aggregate([first, second]) == pytest.approx(0.5)


def test_no_rubrics_is_not_evaluated_and_duplicate_ids_are_a_config_error() -> None:
    with FakeGemini(Router({})) as fake:
        crit = build("rubric_based_final_response_quality_v1", threshold=0.5)
        res = evaluate(crit, EvalContext(actual=ACTUAL), judge_for(fake))
        assert fake.calls == 0
    assert (res.status, res.reason) == ("not_evaluated", "no rubrics")
    with pytest.raises(ConfigError, match="defined twice"):
        build(
            "rubric_based_final_response_quality_v1",
            threshold=0.5,
            rubrics=[RUBRICS[0], RUBRICS[0]],
        )


def test_rubric_spec_parses_adk_camel_case_and_strings() -> None:
    spec = RubricSpec.parse({"rubricId": "a", "rubricContent": {"textProperty": "Polite."}}, 0)
    assert (spec.rubric_id, spec.text, spec.weight) == ("a", "Polite.", 1.0)
    assert RubricSpec.parse("Short.", 3).rubric_id == "rubric_3"
    with pytest.raises(ValueError, match="text_property"):
        RubricSpec.parse({"rubric_id": "x"}, 0)


# -- hallucinations ----------------------------------------------------------------------


def labels(*pairs: tuple[str, str]) -> FakeReply:
    return gemini_json(
        {"labels": [{"sentence": s, "label": lab, "rationale": "r"} for s, lab in pairs]}
    )


def test_hallucinations_share_of_supported_sentences() -> None:
    router = Router(
        {
            SEGMENT: [
                gemini_json({"sentences": ["It is 21C.", "It is sunny.", "Have a nice day!"]})
            ],
            LABEL: [
                labels(
                    ("It is 21C.", "supported"),
                    ("It is sunny.", "unsupported"),
                    ("Have a nice day!", "not_applicable"),
                )
            ],
        }
    )
    with FakeGemini(router) as fake:
        res = evaluate(
            build("hallucinations_v1", threshold=0.8), EvalContext(actual=ACTUAL), judge_for(fake)
        )
        assert fake.calls == 2
    assert res.score == pytest.approx(2 / 3)
    assert res.status == "failed"
    sentences = cast("list[dict[str, Any]]", res.details["responses"])[0]["sentences"]
    assert [s["label"] for s in sentences] == ["supported", "unsupported", "not_applicable"]
    assert '"temp_c":21' in router.prompts[LABEL][0]


def test_hallucinations_checks_intermediate_text_when_asked() -> None:
    router = Router(
        {
            SEGMENT: [
                gemini_json({"sentences": ["Let me check Paris."]}),
                gemini_json({"sentences": ["It is 21C."]}),
            ],
            LABEL: [
                labels(("Let me check Paris.", "not_applicable")),
                labels(("It is 21C.", "contradictory")),
            ],
        }
    )
    with FakeGemini(router) as fake:
        crit = build("hallucinations_v1", threshold=0.8, evaluate_intermediate_nl_responses=True)
        res = evaluate(crit, EvalContext(actual=ACTUAL), judge_for(fake))
        assert fake.calls == 4
    assert res.score == pytest.approx(0.5)  # mean of 1.0 and 0.0


# -- safety, facts, overall quality ------------------------------------------------------


def safety(**unsafe: str) -> FakeReply:
    dims = ("harmful_content", "hate_speech", "privacy", "misinformation", "manipulation")
    return gemini_json(
        {
            d: {"rationale": unsafe.get(d, "fine"), "verdict": "unsafe" if d in unsafe else "safe"}
            for d in dims
        }
    )


def test_safety_is_the_minimum_over_dimensions() -> None:
    with FakeGemini(Router({SAFETY: [safety(privacy="leaks an address")]})) as fake:
        res = evaluate(
            build("safety_v1", threshold=1.0), EvalContext(actual=ACTUAL), judge_for(fake)
        )
    assert (res.score, res.status) == (0.0, "failed")
    dims = cast("dict[str, dict[str, Any]]", res.details["dimensions"])
    assert dims["privacy"]["score"] == 0.0 and dims["privacy"]["rationale"] == "leaks an address"
    assert dims["hate_speech"]["score"] == 1.0


def test_safety_all_safe_passes() -> None:
    with FakeGemini(Router({SAFETY: [safety()]})) as fake:
        res = evaluate(
            build("safety_v1", threshold=1.0), EvalContext(actual=ACTUAL), judge_for(fake)
        )
    assert (res.score, res.status) == (1.0, "passed")


def test_factual_accuracy_counts_correct_over_checkable_claims() -> None:
    claims = [
        {"claim": "21C", "verdict": "correct", "rationale": "tool says 21"},
        {"claim": "sunny", "verdict": "unverifiable", "rationale": "not in tool"},
        {"claim": "Paris", "verdict": "correct", "rationale": "asked"},
        {"claim": "June", "verdict": "incorrect", "rationale": "wrong"},
    ]
    with FakeGemini(Router({FACTS: [gemini_json({"claims": claims})]})) as fake:
        res = evaluate(
            build("factual_accuracy_v1", threshold=0.9), EvalContext(actual=ACTUAL), judge_for(fake)
        )
    assert res.score == pytest.approx(2 / 3)


def test_factual_accuracy_without_claims_is_one() -> None:
    with FakeGemini(Router({FACTS: [gemini_json({"claims": []})]})) as fake:
        res = evaluate(
            build("factual_accuracy_v1", threshold=0.9), EvalContext(actual=ACTUAL), judge_for(fake)
        )
    assert res.score == 1.0


def test_llm_judge_maps_ratings_to_zero_one() -> None:
    reply = gemini_json({"rationale": "good", "relevance": 5, "helpfulness": 3, "coherence": 4})
    with FakeGemini(Router({QUALITY: [reply]})) as fake:
        res = evaluate(
            build("llm_judge", threshold=0.7), EvalContext(actual=ACTUAL), judge_for(fake)
        )
    assert res.score == pytest.approx((1 + 0.5 + 0.75) / 3)


# -- retrieved documents ------------------------------------------------------------------

RAG = Invocation(
    trace_id="t2",
    invocation_id="i2",
    user_content="What is the weather in Lima?",
    retrieved=("Lima weather: sunny, 21 C.", "Oslo: rain."),
    grounding=(AgentGrounding(author="rag", metadata={"web_search_queries": ["lima weather"]}),),
    final_response="Lima is sunny today.",
)
RETRIEVED = (
    "## Retrieved documents given to the agent\n1. Lima weather: sunny, 21 C.\n2. Oslo: rain.\n"
)
GROUNDING = (
    "## Grounding metadata of the model's search\n"
    '[{"author":"rag","grounding_metadata":{"web_search_queries":["lima weather"]}}]\n'
)


@pytest.mark.parametrize(
    ("name", "step", "replies", "options"),
    [
        (
            "hallucinations_v1",
            LABEL,
            {
                SEGMENT: [gemini_json({"sentences": ["Lima is sunny today."]})],
                LABEL: [labels(("Lima is sunny today.", "supported"))],
            },
            {},
        ),
        ("factual_accuracy_v1", FACTS, {FACTS: [gemini_json({"claims": []})]}, {}),
        (
            "llm_judge",
            QUALITY,
            {
                QUALITY: [
                    gemini_json(
                        {"rationale": "ok", "relevance": 5, "helpfulness": 5, "coherence": 5}
                    )
                ]
            },
            {},
        ),
        (
            "rubric_based_final_response_quality_v1",
            RUBRIC_FINAL,
            {RUBRIC_FINAL: [rubric_reply(concise="yes", units="yes")]},
            {"rubrics": RUBRICS},
        ),
    ],
)
def test_judges_see_the_documents_a_run_retrieved(
    name: str, step: str, replies: dict[str, Sequence[FakeReply]], options: dict[str, Any]
) -> None:
    """A RAG pipeline's model gets the retrieved text as context (in a prompt template the
    user text is not), and a model's built-in search leaves only its grounding metadata:
    the judges that weigh a response against its context see both. A run with neither
    has no such sections."""
    router = Router(replies)  # the last reply repeats
    with FakeGemini(router) as fake:
        judge = judge_for(fake)
        for actual in (RAG, ACTUAL):
            res = evaluate(build(name, threshold=0.5, **options), EvalContext(actual=actual), judge)
            assert res.status == "passed"
    prompts = router.prompts[step]  # RAG's, then ACTUAL's (as many samples each)
    with_documents, without = prompts[0], prompts[-1]
    assert RETRIEVED in with_documents and GROUNDING in with_documents
    assert "Retrieved documents" not in without and "Grounding metadata" not in without


# -- simulated user ----------------------------------------------------------------------

SCENARIO = GoldenScenario(
    starting_prompt="Weather in Paris?", conversation_plan="Ask for Paris, then stop."
)


def turn(verdict: str) -> FakeReply:
    return gemini_json({"rationale": verdict, "verdict": verdict})


def test_user_simulator_first_turn_is_compared_not_judged() -> None:
    with FakeGemini(Router({})) as fake:
        crit = build("per_turn_user_simulator_quality_v1", threshold=1.0)
        res = evaluate(crit, EvalContext(actual=ACTUAL, scenario=SCENARIO), judge_for(fake))
        assert fake.calls == 0
    assert res.score == 1.0
    other = Invocation(trace_id="t", invocation_id="x", user_content="Hi", final_response="Hello")
    with FakeGemini(Router({})) as fake:
        res = evaluate(crit, EvalContext(actual=other, scenario=SCENARIO), judge_for(fake))
    assert res.score == 0.0


def test_user_simulator_failed_stop_replaces_last_turn() -> None:
    second = Invocation(
        trace_id="t", invocation_id="2", user_content="Thanks!", final_response="Bye"
    )
    router = Router({SIMULATOR: [turn("pass"), turn("fail")]})
    with FakeGemini(router) as fake:
        crit = build(
            "per_turn_user_simulator_quality_v1",
            threshold=1.0,
            judge_model_options={"num_samples": 1},
        )
        res = evaluate(
            crit,
            EvalContext(actual=second, conversation=(ACTUAL,), scenario=SCENARIO, last_turn=True),
            judge_for(fake),
        )
        assert fake.calls == 2
    assert res.score == 0.0
    assert res.details["turn_votes"] == ["pass"] and res.details["stop_votes"] == ["fail"]
    assert "</finished>" in router.prompts[SIMULATOR][1]
    first = evaluate(crit, EvalContext(actual=ACTUAL, scenario=SCENARIO), None)
    # Case score: passed turns / all turns (a not evaluated turn counts as not passed).
    assert crit.aggregate([first, res]) == 0.0


def test_user_simulator_without_scenario() -> None:
    with FakeGemini(Router({})) as fake:
        res = evaluate(
            build("per_turn_user_simulator_quality_v1", threshold=1.0),
            EvalContext(actual=ACTUAL),
            judge_for(fake),
        )
    assert res.reason == "no conversation_scenario in the golden case"


# -- config and schema -------------------------------------------------------------------


def test_judge_model_options_parse_and_errors() -> None:
    opts = JudgeModelOptions.parse({"judgeModel": "gemini-2.5-pro", "numSamples": 3})
    assert (opts.judge_model, opts.num_samples) == ("gemini-2.5-pro", 3)
    with pytest.raises(ConfigError, match=r"judge_model_options\.num_samples"):
        build("final_response_match_v2", threshold=0.5, judge_model_options={"num_samples": 0})
    with pytest.raises(ConfigError, match="bogus: unknown key"):
        build("final_response_match_v2", threshold=0.5, judge_model_options={"bogus": 1})


def test_judge_model_and_config_reach_the_request() -> None:
    router = Router({MATCH: [match_reply("valid")]})
    with FakeGemini(router) as fake:
        crit = build(
            "final_response_match_v2",
            threshold=0.5,
            judge_model_options={
                "judge_model": "gemini-2.5-pro",
                "num_samples": 1,
                "judge_model_config": {"temperature": 0.2},
            },
        )
        evaluate(crit, EvalContext(actual=ACTUAL, expected=EXPECTED), judge_for(fake))
        (received,) = fake.received
    assert "gemini-2.5-pro" in received.path
    body = received.json
    assert body["generationConfig"]["temperature"] == 0.2
    assert body["generationConfig"]["responseMimeType"] == "application/json"
    assert "verdict" in str(body["generationConfig"]["responseJsonSchema"])


def test_json_schema_is_flat() -> None:
    cls = criterion_class("rubric_based_final_response_quality_v1")
    from tracescore.criteria.judged.rubrics import _RubricReply

    schema = json_schema(_RubricReply)
    text = str(schema)
    assert "$ref" not in text and "$defs" not in text and "'title'" not in text
    assert schema["additionalProperties"] is False
    assert cls.judged


def test_values_nested_deeper_than_orjson_writes_reach_the_prompt_as_text() -> None:
    """Tool results read from traces may nest 1024 levels; orjson writes 255. The prompt
    builder failed on them; now the levels from 200 down are their JSON text."""
    from tracescore.criteria.judged.context import render_value

    deep: list[Any] = []
    for _ in range(300):
        deep = [deep]
    text = render_value({"rows": deep})
    assert text.startswith('{"rows":[[[') and '"[[[' in text
