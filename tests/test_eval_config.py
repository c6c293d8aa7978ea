"""ADK eval configs read unchanged; every mistake named with file and key."""

from __future__ import annotations

import json
import math
from pathlib import Path

import orjson
import pytest
from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
from pydantic import ValidationError

from tracescore.criteria.text import ContainsKeywords, ResponseMatchScore
from tracescore.criteria.trajectory import ToolTrajectoryAvgScore
from tracescore.eval_config import criteria_from_config, load_eval_config
from tracescore.exceptions import ConfigError


def write(tmp_path: Path, data: object, name: str = "eval_config.json") -> Path:
    path = tmp_path / name
    path.write_bytes(orjson.dumps(data))
    return path


def test_no_config_means_adk_defaults() -> None:
    crits = load_eval_config(None)
    assert [(c.name, c.threshold) for c in crits] == [
        ("tool_trajectory_avg_score", 1.0),
        ("response_match_score", 0.8),
    ]


@pytest.mark.parametrize(
    "criterion",
    [
        {"threshold": 1.0, "match_type": "IN_ORDER"},
        {"threshold": 1.0, "matchType": "in_order"},
        {"threshold": 1.0, "match_type": 1},
    ],
)
def test_adk_config_forms_are_read_as_adk_reads_them(
    tmp_path: Path, criterion: dict[str, object]
) -> None:
    data = {"criteria": {"tool_trajectory_avg_score": criterion, "response_match_score": 0.7}}
    AdkEvalConfig.model_validate(data)  # ADK itself accepts it
    traj, resp = load_eval_config(write(tmp_path, data))
    assert traj == ToolTrajectoryAvgScore(threshold=1.0, match_type="IN_ORDER")
    assert resp == ResponseMatchScore(threshold=0.7)


def test_agentflow_spellings() -> None:
    crits = criteria_from_config(
        {
            "criteria": {
                "tool_trajectory_avg_score": {"threshold": 0.5, "check_args": False},
                "rouge_match": {"threshold": 0.6, "enabled": False},
                "contains_keywords": {"threshold": 1.0, "keywords": ["Paris", "°C"]},
            }
        },
        source="agentflow.json",
    )
    assert crits == [
        ToolTrajectoryAvgScore(threshold=0.5, ignore_args=True),
        ContainsKeywords(threshold=1.0, keywords=("Paris", "°C")),
    ]


@pytest.mark.parametrize(
    "threshold",
    [
        *(0.8, 1, "0.8", " 0.8 ", "1e-1", ".5", "+.5", "1_0", "inf", "nan", True, False),
        *("", "high", "0x1", None, [0.8], {"value": 1}),  # refused, by ADK too
    ],
)
@pytest.mark.parametrize("form", ["bare", "object"])
def test_thresholds_are_read_as_adk_reads_them(
    tmp_path: Path, threshold: object, form: str
) -> None:
    entry = threshold if form == "bare" else {"threshold": threshold}
    data = {"criteria": {"response_match_score": entry}}
    try:
        adk = AdkEvalConfig.model_validate_json(json.dumps(data)).criteria["response_match_score"]
    except ValidationError:
        with pytest.raises(ConfigError, match=r"criteria\.response_match_score"):
            load_eval_config(write(tmp_path, data, "cfg.json"))
        return
    expected = adk if isinstance(adk, float) else adk.threshold
    [criterion] = load_eval_config(write(tmp_path, data, "cfg.json"))
    assert criterion.threshold is not None and expected is not None
    assert criterion.threshold == expected or (
        math.isnan(expected) and math.isnan(criterion.threshold)
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"criteria": {"tool_trajectory_avg_scor": 1.0}},
            "cfg.json: criteria.tool_trajectory_avg_scor: unknown criterion "
            "'tool_trajectory_avg_scor'. Did you mean 'tool_trajectory_avg_score'?",
        ),
        (
            {"criteria": {"response_match_score": {"threshold": 0.8, "treshold": 1}}},
            "cfg.json: criteria.response_match_score.treshold: unknown key",
        ),
        (
            {"criteria": {"response_match_score": {"threshold": 0.8, "match_type": "EXACT"}}},
            "cfg.json: criteria.response_match_score.match_type: not an option of "
            "response_match_score",
        ),
        (
            {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": "FUZZY"}}},
            "cfg.json: criteria.tool_trajectory_avg_score.match_type:",
        ),
        (
            {"criteria": {"tool_call_count_v1": 1.0}},
            "cfg.json: criteria.tool_call_count_v1: tool_call_count_v1 is informational: "
            "it is reported on every replay; remove it from criteria",
        ),
        (
            {"criteria": {"response_match_score": {"match_type": "EXACT"}}},
            "cfg.json: criteria.response_match_score: a threshold is required",
        ),
        (
            {"criteria": {"response_match_score": "high"}},
            "cfg.json: criteria.response_match_score: expected a threshold number or an object",
        ),
        (
            {
                "criteria": {
                    "tool_trajectory_avg_score": {
                        "threshold": 1,
                        "ignore_args": True,
                        "check_args": True,
                    }
                }
            },
            "give ignore_args or check_args, not both",
        ),
        ({"criterion": {}}, "cfg.json: criterion: unknown key"),
        (
            # An alias and its name are one criterion: results are keyed by name.
            {"criteria": {"rouge_match": 0.8, "response_match_score": 0.5}},
            "cfg.json: criteria.response_match_score: the same criterion as "
            "criteria.rouge_match (response_match_score); give it once",
        ),
    ],
)
def test_mistakes_name_file_and_key(tmp_path: Path, data: object, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_eval_config(write(tmp_path, data, "cfg.json"))
    text = str(err.value).replace(str(tmp_path) + "/", "")
    assert message in text


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            '{"criteria": {}}'.encode("utf-16"),
            "cfg.json: not UTF-8 text but UTF-16: save it as UTF-8",
        ),
        (
            b'{"criteria": {"caf\xe9": 1}}',
            "cfg.json: not UTF-8 text (invalid continuation byte at byte 18)",
        ),
    ],
    ids=["utf-16", "latin-1"],
)
def test_text_that_is_not_utf8_is_named(tmp_path: Path, data: bytes, message: str) -> None:
    # orjson says "str is not valid UTF-8: surrogates not allowed" of both: misleading.
    (tmp_path / "cfg.json").write_bytes(data)
    with pytest.raises(ConfigError) as err:
        load_eval_config(tmp_path / "cfg.json")
    assert str(err.value).replace(str(tmp_path) + "/", "") == message


def test_informational_criteria_are_reported_on_every_replay_not_configured() -> None:
    from tracescore.criteria import informational_criteria

    names = [c.name for c in informational_criteria()]
    assert names == [
        "inference_call_count_v1",
        "invocation_duration_v1",
        "token_usage_v1",
        "tool_call_count_v1",
    ]
    with pytest.raises(ConfigError, match="remove it from criteria"):
        criteria_from_config({"criteria": {"token_usage_v1": {}}}, source="x")


def test_the_example_config_is_a_valid_adk_config() -> None:
    path = Path(__file__).resolve().parent.parent / "examples" / "eval_config.json"
    AdkEvalConfig.model_validate_json(path.read_bytes())
    assert [c.name for c in load_eval_config(path)] == [
        "tool_trajectory_avg_score",
        "response_match_score",
    ]


def test_unreadable_and_invalid_json(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_eval_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"criteria": ')
    with pytest.raises(ConfigError, match=r"bad\.json: invalid JSON"):
        load_eval_config(bad)


def test_a_users_own_criterion_is_named_in_the_config_like_a_builtin() -> None:
    from dataclasses import dataclass

    from tracescore.criteria import Criterion, EvalContext, Score, register_criterion

    @register_criterion()
    @dataclass(frozen=True, kw_only=True)
    class Politeness(Criterion):
        name = "politeness_for_config_test"
        threshold: float | None = 1.0
        keywords: tuple[str, ...] = ("please",)

        def score(self, ctx: EvalContext) -> Score:
            text = (ctx.actual.final_response or "").lower()
            return Score(value=float(any(k in text for k in self.keywords)))

    [crit] = criteria_from_config(
        {"criteria": {"politeness_for_config_test": {"threshold": 0.5, "keywords": ["thanks"]}}},
        source="x.json",
    )
    assert crit == Politeness(threshold=0.5, keywords=("thanks",))


def test_agentflow_response_match_score_is_ambiguous_and_says_why() -> None:
    config = {
        "criteria": {
            "tool_trajectory_avg_score": {"threshold": 1.0, "check_args": True},
            "response_match_score": {"threshold": 0.7},
        },
        "max_concurrency": 4,
    }
    with pytest.raises(ConfigError) as err:
        criteria_from_config(config, source="agentflow.json")
    text = str(err.value)
    assert "agentflow.json: criteria.response_match_score: ambiguous" in text
    assert "final_response_match_v2" in text
    assert "rouge_match" in text
    # In an ADK config the same name is ROUGE-1, as in ADK.
    [crit] = criteria_from_config({"criteria": {"response_match_score": 0.7}}, source="adk.json")
    assert crit.name == "response_match_score"
