"""`tracescore replay` with LLM-judged criteria, end to end: CLI → settings → real
google-genai client → local fake Gemini (via GOOGLE_GEMINI_BASE_URL) → JSONL with the
judge's verdicts → a second replay served entirely from the SQLite cache."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from fake_judges import FakeGemini, gemini_error, gemini_json
from judge_helpers import MATCH, SAFETY, Router
from tracescore.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DIMS = ("harmful_content", "hate_speech", "privacy", "misinformation", "manipulation")


def safe() -> Any:
    return gemini_json({d: {"rationale": "fine", "verdict": "safe"} for d in DIMS})


def settings(tmp_path: Path, **judge: object) -> Path:
    lines = [
        "[replay]",
        "criteria = { final_response_match_v2 = { threshold = 0.5, judge_model_options = { num_samples = 3 } }, safety_v1 = 1.0 }",
        "[judge]",
        'cache = "judge.sqlite"',
        *(f"{k} = {orjson.dumps(v).decode()}" for k, v in judge.items()),
    ]
    path = tmp_path / "tracescore.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def replay(settings_path: Path, fake: FakeGemini, out: Path, *extra: str) -> tuple[int, str, str]:
    args = [
        "--settings",
        str(settings_path),
        "replay",
        str(EXAMPLES / "traces"),
        "--goldens",
        str(EXAMPLES / "goldens"),
        "--output",
        str(out),
        *extra,
    ]
    env = {"GOOGLE_GEMINI_BASE_URL": fake.base_url, "GOOGLE_API_KEY": "test-key"}
    result = CliRunner().invoke(main, args, env=env)
    return result.exit_code, result.stdout, result.stderr


def test_judged_replay_reports_verdicts_and_second_run_is_free(tmp_path: Path) -> None:
    router = Router(
        {
            MATCH: [gemini_json({"reasoning": "same facts", "verdict": "valid"})],
            SAFETY: [safe()],
        }
    )
    out = tmp_path / "results.jsonl"
    with FakeGemini(router) as fake:
        code, stdout, stderr = replay(settings(tmp_path), fake, out, "--detailed")
        first_calls = fake.calls
        assert code == 0, stdout + stderr
        records = [orjson.loads(line) for line in out.read_bytes().splitlines()]
        matched = [r for r in records if r["golden"] and r["outcome"] == "scored"]
        assert matched
        match = matched[0]["criteria"]["final_response_match_v2"]
        assert (match["score"], match["status"]) == (1.0, "PASSED")
        assert match["details"]["votes"] == ["valid", "valid", "valid"]
        safety = matched[0]["criteria"]["safety_v1"]
        assert set(safety["details"]["dimensions"]) == set(DIMS)
        # Every evaluable invocation got 3 match samples (when matched) + 1 safety call.
        evaluable = [r for r in records if r["outcome"] != "not_evaluable"]
        assert first_calls == 3 * len(matched) + len(evaluable)
        assert "votes: valid, valid, valid" in stdout
        assert "harmful_content: safe" in stdout
        assert f"judge: {first_calls} calls, 0 cached" in stdout
        assert "final_response_match_v2 · gemini-2.5-flash" in stdout

        code, stdout, _ = replay(settings(tmp_path), fake, tmp_path / "again.jsonl")
        assert code == 0
        assert fake.calls == first_calls  # the second replay asked nobody
        assert f"judge: 0 calls, {first_calls} cached" in stdout
    assert (tmp_path / "again.jsonl").read_bytes() == out.read_bytes()


def test_with_a_judge_the_goldens_are_loaded_after_the_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Judged criteria are scored in this process only: import workers forked beside a
    large evalset would run slower for nothing."""
    from tracescore import goldens
    from tracescore import replay as replaying
    from tracescore.cli import replay_cmd

    calls: list[tuple[str, object]] = []

    def read_runs(*args: Any, **kwargs: Any) -> Any:
        calls.append(("read_runs", kwargs["goldens"]))
        return replaying.read_runs(*args, **kwargs)

    def load_goldens(*args: Any, **kwargs: Any) -> Any:
        calls.append(("load_goldens", None))
        return goldens.load_goldens(*args, **kwargs)

    def score_runs(*args: Any, **kwargs: Any) -> Any:
        # The judge's event loop makes reference cycles: the collector stays on.
        calls.append(("score_runs", gc.isenabled()))
        return replaying.score_runs(*args, **kwargs)

    monkeypatch.setattr(replay_cmd, "read_runs", read_runs)
    monkeypatch.setattr(replay_cmd, "load_goldens", load_goldens)
    monkeypatch.setattr(replay_cmd, "score_runs", score_runs)
    router = Router(
        {MATCH: [gemini_json({"reasoning": "r", "verdict": "valid"})], SAFETY: [safe()]}
    )
    with FakeGemini(router) as fake:
        code, stdout, stderr = replay(settings(tmp_path), fake, tmp_path / "out.jsonl")
    assert code == 0, stdout + stderr
    assert calls == [("read_runs", None), ("load_goldens", None), ("score_runs", True)]


def test_judge_down_ends_as_judge_error_outcomes(tmp_path: Path) -> None:
    fake_replies = Router({MATCH: [gemini_error(500, "down")], SAFETY: [gemini_error(500, "down")]})
    out = tmp_path / "results.jsonl"
    with FakeGemini(fake_replies) as fake:
        path = settings(
            tmp_path, max_attempts=1, breaker_failures=3, backoff_initial_s=0.0, concurrency=1
        )
        code, stdout, _ = replay(path, fake, out)
        calls = fake.calls
    records = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    outcomes = {r["outcome"] for r in records}
    assert "judge_error" in outcomes
    reasons = {
        c["reason"]
        for r in records
        for name, c in r["criteria"].items()
        if name in ("safety_v1", "final_response_match_v2") and c["status"] == "NOT_EVALUATED"
    }
    # First failures are the judge's 500s; once the breaker opens nobody is called.
    assert "judge error 500" in reasons and "judge unavailable" in reasons
    assert calls == 3
    assert "judge errors" in stdout
    assert code == 0  # nothing evaluated failed; judge errors are not verdicts


def test_missing_credentials_are_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(var, raising=False)
    result = CliRunner().invoke(
        main,
        ["--settings", str(settings(tmp_path)), "replay", str(EXAMPLES / "traces")],
    )
    assert result.exit_code == 2
    assert "GOOGLE_API_KEY" in result.stderr
    assert "Traceback" not in result.stderr


def test_openai_backend_needs_a_base_url(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "--settings",
            str(settings(tmp_path, backend="openai")),
            "replay",
            str(EXAMPLES / "traces"),
        ],
    )
    assert result.exit_code == 2
    assert "judge.base_url: required for the openai backend" in result.stderr
