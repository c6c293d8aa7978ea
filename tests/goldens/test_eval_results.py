"""ADK eval results (``adk eval`` history) replayed as recorded runs.

The result files are written by google-adk's own ``LocalEvalSetResultsManager``, from
the invocations ADK's ``EvaluationGenerator`` derived from real agent runs (scripted
model); the goldens are an ADK ``EvalSet`` of the same turns, one answer changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from google.adk.evaluation.eval_case import EvalCase, Invocation
from google.adk.evaluation.eval_metrics import EvalMetricResultPerInvocation
from google.adk.evaluation.eval_result import EvalCaseResult
from google.adk.evaluation.eval_set import EvalSet
from google.adk.evaluation.evaluator import EvalStatus
from google.adk.evaluation.local_eval_set_results_manager import LocalEvalSetResultsManager
from google.genai import types

from adk_harness import AdkRun, run_scenario
from tracescore.cli import main
from tracescore.exceptions import ConfigError
from tracescore.goldens.eval_results import is_eval_result, recorded_runs_evalset

SCENARIOS = ("two_sequential_tools", "two_turn_session")
CONFIG = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}


@pytest.fixture(scope="module")
def runs() -> dict[str, AdkRun]:
    return {name: run_scenario(name, schema="v1", content="default") for name in SCENARIOS}


def save_result(agents_dir: Path, runs: dict[str, AdkRun], *, rerun: str = "") -> Path:
    """One `adk eval` run's history file, written by ADK's results manager.

    ``rerun`` marks the sessions of another `adk eval` run (each run makes new sessions).
    """
    cases = [
        EvalCaseResult(
            eval_set_id="weather_set",
            eval_id=name,
            final_eval_status=EvalStatus.PASSED,
            overall_eval_metric_results=[],
            eval_metric_result_per_invocation=[
                EvalMetricResultPerInvocation(actual_invocation=inv) for inv in run.adk_invocations
            ],
            session_id=run.session_id + rerun,
        )
        for name, run in runs.items()
    ]
    manager = LocalEvalSetResultsManager(agents_dir=str(agents_dir))
    manager.save_eval_set_result("weather_app", "weather_set", cases)
    [path] = (agents_dir / "weather_app" / ".adk" / "eval_history").glob("*.evalset_result.json")
    return path


def write_goldens(path: Path, runs: dict[str, AdkRun], *, changed: str) -> None:
    """The evalset the runs were scored against; ``changed``'s last answer differs."""
    cases = []
    for name, run in runs.items():
        turns = [inv.model_copy(deep=True) for inv in run.adk_invocations]
        if name == changed:
            answer = types.Content(role="model", parts=[types.Part(text="Bring an umbrella.")])
            turns[-1] = Invocation.model_validate(
                {**turns[-1].model_dump(), "final_response": answer}
            )
        cases.append(EvalCase(eval_id=name, conversation=turns))
    evalset = EvalSet(eval_set_id="weather_set", eval_cases=cases)
    path.write_text(evalset.model_dump_json())


def replay(*args: str | Path) -> tuple[int, str, list[dict[str, Any]]]:
    result = CliRunner().invoke(main, ["replay", *map(str, args), "--output", "-", "-q"])
    lines = [orjson.loads(line) for line in result.stdout.splitlines()]
    return result.exit_code, result.stderr, lines


def test_an_adk_eval_result_is_scored_again_against_its_goldens(
    tmp_path: Path, runs: dict[str, AdkRun]
) -> None:
    result_file = save_result(tmp_path / "agents", runs)
    goldens = tmp_path / "weather_set.evalset.json"
    write_goldens(goldens, runs, changed="two_turn_session")
    config = tmp_path / "eval_config.json"
    config.write_bytes(orjson.dumps(CONFIG))

    code, err, lines = replay(result_file, "--goldens", goldens, "--config", config)

    assert code == 1, err  # the changed answer fails response_match_score
    turns = sum(len(run.adk_invocations) for run in runs.values())
    assert len(lines) == turns == 3
    assert all(line["outcome"] == "scored" for line in lines)
    by_case: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        by_case.setdefault(line["golden"]["eval_id"], []).append(line)
    assert [line["golden"]["turn"] for line in by_case["two_turn_session"]] == [0, 1]
    # Each run is a conversation of its own, named by its eval id and ADK session.
    assert {line["conversation_id"] for line in by_case["two_sequential_tools"]} == {
        f"two_sequential_tools/{runs['two_sequential_tools'].session_id}"
    }
    status = {
        case: [line["criteria"]["response_match_score"]["status"] for line in rows]
        for case, rows in by_case.items()
    }
    assert status == {"two_sequential_tools": ["PASSED"], "two_turn_session": ["PASSED", "FAILED"]}
    trajectory = {line["criteria"]["tool_trajectory_avg_score"]["status"] for line in lines}
    assert trajectory == {"PASSED"}


def test_two_adk_eval_runs_pool_under_their_golden_cases(
    tmp_path: Path, runs: dict[str, AdkRun]
) -> None:
    first = save_result(tmp_path / "a", runs)
    second = save_result(tmp_path / "b", runs, rerun="-2")
    goldens = tmp_path / "weather_set.evalset.json"
    write_goldens(goldens, runs, changed="none")
    result = CliRunner().invoke(
        main, ["replay", str(first), str(second), "--goldens", str(goldens)]
    )
    assert result.exit_code == 0, result.stderr
    # Two golden cases, each scored over both runs (ADK's pooling of repeated runs).
    assert "cases: 2 passed, 0 failed, 0 not evaluated" in result.stdout
    assert "invocations: 6 scored" in result.stdout


def test_camel_case_results_as_adk_web_serves_them() -> None:
    doc = {
        "evalSetResultId": "r1",
        "evalSetId": "s",
        "evalCaseResults": [
            {
                "evalId": "c",
                "sessionId": "sess",
                "evalMetricResultPerInvocation": [{"actualInvocation": {"userContent": {}}}],
            }
        ],
    }
    assert is_eval_result(doc)
    assert recorded_runs_evalset(doc, "r.json") == {
        "eval_set_id": "s",
        "eval_cases": [{"eval_id": "c/sess", "conversation": [{"userContent": {}}]}],
    }


def test_a_result_without_ids_still_gives_one_conversation_per_case() -> None:
    actual: dict[str, Any] = {"eval_metric_result_per_invocation": [{"actual_invocation": {}}]}
    doc = {"eval_set_result_id": "r", "eval_case_results": [actual, actual]}
    cases = recorded_runs_evalset(doc, "r.json")["eval_cases"]
    assert [case["eval_id"] for case in cases] == ["case0#0", "case1#1"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"eval_case_results": {}}, "r.json: eval_case_results must be a list"),
        ({"eval_case_results": [3]}, "r.json: eval_case_results[0]: expected an object"),
        (
            {"eval_case_results": [{"eval_metric_result_per_invocation": [{"x": 1}]}]},
            "r.json: eval_case_results[0].eval_metric_result_per_invocation[0]: no actual_invocation",
        ),
        (
            {"eval_set_result_id": "r", "eval_case_results": [{"eval_id": "c"}]},
            "r.json: an ADK eval result without any recorded invocation",
        ),
    ],
)
def test_malformed_results_are_located_errors(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        recorded_runs_evalset(doc, "r.json")
    assert str(err.value).startswith(message)


def test_an_eval_result_elsewhere_is_named_for_what_it_is(
    tmp_path: Path, runs: dict[str, AdkRun]
) -> None:
    result_file = save_result(tmp_path, runs)
    as_goldens = CliRunner().invoke(
        main, ["replay", str(result_file), "--goldens", str(result_file)]
    )
    assert as_goldens.exit_code == 2
    assert "not an evalset but an ADK eval result (adk eval history)" in as_goldens.stderr
    imported = CliRunner().invoke(main, ["import", str(result_file)])
    assert imported.exit_code == 1
    assert "not an OTLP document but an ADK eval result" in imported.stderr


def test_a_result_with_a_tool_response_nested_1000_deep_is_replayed(
    tmp_path: Path, runs: dict[str, AdkRun]
) -> None:
    """Recorded runs went back through ``orjson.dumps``, which writes 255 levels: a
    traceback. Now they are read from the parsed document."""
    result_file = save_result(tmp_path / "agents", runs)
    doc = orjson.loads(result_file.read_bytes())
    placed = 0
    stack: list[Any] = [doc]
    while stack:  # each function response's payload (ADK keeps them in invocation_events)
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("function_response"), dict):
                item["function_response"]["response"] = {"rows": "__DEEP__"}
                placed += 1
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    assert placed
    deep = "[" * 1000 + "]" * 1000
    result_file.write_bytes(orjson.dumps(doc).replace(b'"__DEEP__"', deep.encode()))
    goldens = tmp_path / "weather_set.evalset.json"
    write_goldens(goldens, runs, changed="")
    config = tmp_path / "eval_config.json"
    config.write_bytes(orjson.dumps(CONFIG))

    code, err, lines = replay(result_file, "--goldens", goldens, "--config", config)

    assert code == 0, err
    assert "Traceback" not in err
    assert len(lines) == 3 and all(line["outcome"] == "scored" for line in lines)
