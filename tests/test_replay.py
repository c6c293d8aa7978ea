"""`tracescore replay` end to end on the bundled examples: report, JSON Lines, JUnit, exit codes."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
from click.testing import CliRunner

from tracescore.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ARGS = [
    "replay",
    str(EXAMPLES / "traces"),
    "--goldens",
    str(EXAMPLES / "goldens"),
    "--config",
    str(EXAMPLES / "eval_config.json"),
]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_examples_show_passes_and_failures_and_gate_ci(tmp_path: Path) -> None:
    out, junit = tmp_path / "results.jsonl", tmp_path / "report.xml"
    code, stdout, _ = run(*ARGS, "--output", str(out), "--junit", str(junit))
    assert code == 1  # some criterion failed
    assert "weather/parallel_calls-session: FAILED" in stdout
    assert "weather/two_turn_session-session: PASSED" in stdout
    assert "cases: 5 passed, 3 failed, 1 not evaluated" in stdout

    records = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert len(records) == 10
    by_case = {(r["golden"] or {}).get("eval_id"): r for r in records if r["golden"]}
    parallel = by_case["parallel_calls-session"]
    assert parallel["outcome"] == "scored"
    assert parallel["criteria"]["tool_trajectory_avg_score"] == {
        "score": 0.0,
        "status": "FAILED",
        "threshold": 1.0,
        "reason": None,
        "version": "1",
    }
    text = by_case["text_and_call-session"]["criteria"]["response_match_score"]
    assert text["status"] == "FAILED"
    assert 0 < text["score"] < 0.5
    turns = sorted(
        r["golden"]["turn"]
        for r in records
        if r["golden"] and r["golden"]["eval_id"] == "two_turn_session-session"
    )
    assert turns == [0, 1]
    [not_evaluable] = [r for r in records if r["outcome"] == "not_evaluable"]
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in not_evaluable["reason"]
    assert not_evaluable["criteria"]["tool_trajectory_avg_score"]["status"] == "NOT_EVALUATED"

    suite = ET.parse(junit).getroot().find("testsuite[@name='weather']")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("8", "3")
    failure = suite.find("testcase[@name='parallel_calls-session']/failure")
    assert failure is not None
    assert failure.get("message") == (
        "tool_trajectory_avg_score for weather_agent Failed. Expected 1.0, but got 0.0."
    )


def test_detailed_rows() -> None:
    code, stdout, _ = run(*ARGS, "--detailed")
    assert code == 1
    assert "prompt:   'Is it raining in Berlin?'" in stdout
    assert "expected: 'Expect rain in Berlin, around 15 degrees.'" in stdout


def test_recorded_runs_against_themselves_pass(tmp_path: Path) -> None:
    recorded = tmp_path / "recorded.evalset.json"
    assert run("import", str(EXAMPLES / "traces"), "-o", str(recorded), "-q")[0] == 0
    code, stdout, _ = run("replay", str(recorded), "--goldens", str(recorded))
    assert code == 0, stdout
    assert "0 failed" in stdout


def test_without_goldens_reference_criteria_are_not_evaluated() -> None:
    code, stdout, _ = run("replay", str(EXAMPLES / "traces"))
    assert code == 0
    assert "0 scored" in stdout
    assert "FAILED" not in stdout


def test_config_and_golden_mistakes_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "eval_config.json"
    bad.write_text('{"criteria": {"respons_match_score": 0.8}}')
    code, _, err = run("replay", str(EXAMPLES / "traces"), "--config", str(bad))
    assert code == 2
    assert "Did you mean 'response_match_score'" in err
    assert "Traceback" not in err
    broken = tmp_path / "g.evalset.json"
    broken.write_text('{"eval_set_id": "x", "eval_cases": [{"eval_id": 1}]}')
    code, _, err = run("replay", str(EXAMPLES / "traces"), "--goldens", str(broken))
    assert code == 2
    assert "g.evalset.json" in err
