"""`tracescore replay` end to end on the bundled examples: report, JSON Lines, JUnit, exit codes."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from bundled_examples import EXAMPLES, REPLAY_ARGS
from fifos import fifo_read
from tracescore import parallel, parts
from tracescore.assembly import TraceAssembler
from tracescore.cli import main
from tracescore.criteria import Criterion, EvalContext, Score, informational_criteria
from tracescore.eval_config import load_eval_config
from tracescore.evalset import conversations_to_evalset
from tracescore.goldens import GoldenSet, load_goldens
from tracescore.importer import ImportStats, import_paths
from tracescore.model import Invocation, group_conversations
from tracescore.replay import ReplayResult, read_runs, replay, score_runs


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_examples_show_passes_and_failures_and_gate_ci(tmp_path: Path) -> None:
    out, junit = tmp_path / "results.jsonl", tmp_path / "report.xml"
    code, stdout, _ = run(*REPLAY_ARGS, "--output", str(out), "--junit", str(junit))
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
    code, stdout, _ = run(*REPLAY_ARGS, "--detailed")
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


def test_nothing_to_score_is_not_a_pass(tmp_path: Path) -> None:
    """A CI gate that scored nothing exits 2 and says why, instead of 0 "no failures"."""
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    code, stdout, err = run("replay", str(empty), "--output", str(tmp_path / "r.jsonl"))
    assert code == 2
    assert "0 scored" in stdout  # the report still comes
    assert "error: empty input: no spans, log records or recorded runs were found" in err
    assert (tmp_path / "r.jsonl").read_bytes() == b""
    # Spans, but no agent among them (e.g. only HTTP spans: agent instrumentation off).
    http = tmp_path / "http.json"
    span = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "GET /health",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
    }
    http.write_bytes(orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    code, _, err = run("replay", str(http), "-q")
    assert code == 2
    assert "no agent invocation in 1 trace(s) (1 span(s)); nothing to score" in err
    # Misplaced input: all its records bad, nothing scored.
    code, _, err = run("replay", str(EXAMPLES / "eval_config.json"), "-q")
    assert code == 2
    assert "ADK eval config (criteria): `tracescore replay` takes it as --config" in err


def test_dash_writes_the_output_to_stdout_and_the_report_to_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "results.jsonl"
    assert run(*REPLAY_ARGS, "--output", str(file), "-q")[0] == 1
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)  # where a file named "-" used to appear
    code, stdout, err = run(*REPLAY_ARGS, "--output", "-")
    assert code == 1  # the examples' verdicts: some criteria fail
    assert stdout == file.read_text()  # exactly the JSON Lines, nothing else
    assert "FAILED" in err and "cases:" in err  # the report, out of the way of the JSON
    code, stdout, err = run(*REPLAY_ARGS, "--junit", "-", "-q")
    assert code == 1
    assert ET.fromstring(stdout).tag == "testsuites"
    code, _, err = run(*REPLAY_ARGS, "--junit", "-", "--output", "-")
    assert code == 2
    assert "--output and --junit cannot both be - (stdout)" in err
    assert list(cwd.iterdir()) == []


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


def test_goldens_are_checked_before_the_import_and_given_to_its_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracescore.cli import replay_cmd

    calls: list[str] = []
    given: list[list[GoldenSet]] = []

    def reading(*args: Any, **kwargs: Any) -> Any:
        calls.append("read_runs")
        given.append(kwargs["goldens"])
        return read_runs(*args, **kwargs)

    def loading(*args: Any, **kwargs: Any) -> Any:
        calls.append("load_goldens")
        return load_goldens(*args, **kwargs)

    monkeypatch.setattr(replay_cmd, "read_runs", reading)
    monkeypatch.setattr(replay_cmd, "load_goldens", loading)
    missing = tmp_path / "missing.evalset.json"
    code, _, err = run("replay", str(EXAMPLES / "traces"), "--goldens", str(missing))
    assert (code, calls) == (2, [])  # a mistyped path fails before any trace is read
    assert "missing.evalset.json: cannot read goldens file" in err
    code, stdout, _ = run(*REPLAY_ARGS)
    # Loaded first: forked import workers score against them (tracescore.prescore).
    assert calls == ["load_goldens", "read_runs"]
    assert [g.eval_set_id for g in given[0]] == ["weather"]
    assert code == 1
    assert "FAILED" in stdout


def test_scoring_runs_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a judge the results are one large acyclic structure, all kept: scored
    with the collector paused (under bulk_gc each young collection would walk them),
    as the goldens are loaded. The import before it runs under bulk_gc."""
    import gc

    from tracescore.cli import replay_cmd

    seen: dict[str, object] = {}

    def reading(*args: Any, **kwargs: Any) -> Any:
        seen["import"] = gc.isenabled()
        return read_runs(*args, **kwargs)

    def scoring(*args: Any, **kwargs: Any) -> Any:
        seen["scoring"] = gc.isenabled()
        seen["judge"] = kwargs.get("judge")
        return score_runs(*args, **kwargs)

    monkeypatch.setattr(replay_cmd, "read_runs", reading)
    monkeypatch.setattr(replay_cmd, "score_runs", scoring)
    code, stdout, _ = run(*REPLAY_ARGS)
    assert (code, "FAILED" in stdout) == (1, True)
    assert seen == {"import": True, "scoring": False, "judge": None}
    assert gc.isenabled()


@pytest.mark.parametrize("flag", ["--output", "--junit"])
def test_outputs_that_cannot_be_written_fail_before_the_import(
    flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracescore.cli import replay_cmd

    def reading(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the import started")

    monkeypatch.setattr(replay_cmd, "read_runs", reading)
    missing = tmp_path / "no-such-dir" / "out"
    code, _, err = run(*REPLAY_ARGS, flag, str(missing))
    assert code == 2
    assert f"error: {missing}: directory {missing.parent} does not exist" in err
    code, _, err = run(*REPLAY_ARGS, flag, str(tmp_path))
    assert code == 2
    assert f"error: cannot write {tmp_path}: it is a directory" in err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # the probe left nothing behind


def test_a_failed_write_names_the_output_and_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    out = tmp_path / "results.jsonl"
    out.write_bytes(b"previous run\n")

    def full_disk(src: str, dst: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), src)

    monkeypatch.setattr(os, "replace", full_disk)
    code, _, err = run(*REPLAY_ARGS, "--output", str(out))
    assert code == 2
    assert f"error: cannot write {out}: No space left on device" in err
    assert "Traceback" not in err
    assert [p.name for p in tmp_path.iterdir()] == ["results.jsonl"]  # no temp file
    assert out.read_bytes() == b"previous run\n"


@pytest.fixture(scope="module")
def traffic_and_goldens(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Generated agent traffic and an evalset of its own turns (a golden for each)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import gen_traces

    base = tmp_path_factory.mktemp("replay_jobs")
    traffic = base / "traffic.jsonl"
    gen_traces.generate(4000, traffic, seed=11)
    turns = [
        i
        for i in import_paths(
            [str(traffic)], ImportStats(), assembler=TraceAssembler(idle_records=400)
        )
        if i.parent_tool_span_id is None
    ]
    doc, written, _ = conversations_to_evalset(group_conversations(turns), eval_set_id="own")
    assert written > 50
    goldens = base / "own.evalset.json"
    goldens.write_bytes(orjson.dumps(doc))
    return traffic, goldens


def test_parallel_replay_scores_exactly_as_one_process(
    traffic_and_goldens: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    traffic, golden_path = traffic_and_goldens
    # The 4k-span file is ~10 MB: lower the floor so it splits.
    monkeypatch.setattr(parts, "_MIN_PART_BYTES", 1_000_000)
    calls: list[int] = []
    original = parallel.import_parallel

    def spy(*args: Any, **kwargs: Any) -> list[Invocation]:
        calls.append(len(args[0]))
        return original(*args, **kwargs)

    monkeypatch.setattr("tracescore.replay.import_parallel", spy)
    criteria = [*load_eval_config(None), *informational_criteria()]
    goldens = load_goldens([str(golden_path)])
    one = replay([str(traffic)], criteria, goldens=goldens, idle_records=400)
    assert calls == []
    two = replay([str(traffic)], criteria, goldens=goldens, idle_records=400, jobs=2)
    assert calls and calls[0] >= 2  # the parallel import ran

    def rows(result: ReplayResult) -> list[tuple[object, ...]]:
        # In the same order too: conversations and turns are ordered by start, whatever
        # order the import delivered them in.
        return [
            (r.invocation.trace_id, r.invocation.root_span_id, r.golden, r.outcome, r.results)
            for r in result.invocations
        ]

    assert rows(two) == rows(one)
    assert sum(r.outcome == "scored" for r in one.invocations) > 50
    cases = [(c.eval_set_id, c.eval_id, c.status, c.criteria) for c in one.cases]
    assert [(c.eval_set_id, c.eval_id, c.status, c.criteria) for c in two.cases] == cases
    assert (two.stats.records, two.stats.invocations) == (
        one.stats.records,
        one.stats.invocations,
    )


def test_cli_replay_jobs_write_the_same_results(
    traffic_and_goldens: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traffic, goldens = traffic_and_goldens
    monkeypatch.setattr(parts, "_MIN_PART_BYTES", 1_000_000)
    outs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"results{jobs}.jsonl"
        args = ["replay", str(traffic), "--goldens", str(goldens), "--idle-records", "400"]
        code, stdout, err = run(*args, "-j", jobs, "--output", str(out))
        assert code == 0, err
        outs.append((out.read_bytes().splitlines(), stdout.splitlines()))  # same order too
    assert outs[0] == outs[1]
    assert len(outs[0][0]) > 50


@dataclass(frozen=True, kw_only=True)
class _SeesInstructions(Criterion):
    """Informational: 1.0 when the invocation carries its system instructions."""

    name = "sees_instructions"
    informational = True

    def score(self, ctx: EvalContext) -> Score:
        return Score(value=float(ctx.actual.system_instructions is not None))


@dataclass(frozen=True, kw_only=True)
class _Blind(_SeesInstructions):
    name = "blind"
    needs_model_context = False


@pytest.mark.parametrize("jobs", [1, 2])
def test_invocations_carry_the_model_context_only_when_a_criterion_reads_it(
    traffic_and_goldens: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """Built-in deterministic criteria skip it; a user's criterion sees it by default."""
    traffic, golden_path = traffic_and_goldens
    monkeypatch.setattr(parts, "_MIN_PART_BYTES", 1_000_000)
    split = parallel.parallel_parts([str(traffic)], jobs=jobs, idle_records=400, strict=False)
    assert (split is not None) == (jobs == 2)  # jobs=2: the workers rebuild the invocations
    goldens = load_goldens([str(golden_path)])
    builtin = [*load_eval_config(None), *informational_criteria()]
    assert not any(c.needs_model_context for c in builtin)

    def run_with(extra: Criterion) -> ReplayResult:
        return replay(
            [str(traffic)], [*builtin, extra], goldens=goldens, idle_records=400, jobs=jobs
        )

    lean, full = run_with(_Blind()), run_with(_SeesInstructions())
    # The traffic has instructions, and they came through.
    assert any(r.results[-1].score == 1.0 for r in full.invocations)
    assert all(r.invocation.system_instructions is None for r in lean.invocations)
    assert all(r.invocation.tool_definitions is None for r in lean.invocations)
    assert {r.results[-1].score for r in lean.invocations if r.outcome == "scored"} == {0.0}
    # The other criteria never read it: the same scores either way.
    assert [r.results[:-1] for r in lean.invocations] == [r.results[:-1] for r in full.invocations]


@dataclass(frozen=True, kw_only=True)
class ReturnsNaN(Criterion):
    """A user's criterion with a bug: a NaN score, which would fail every threshold."""

    name = "returns_nan_for_test"
    needs_model_context = False

    def score(self, ctx: EvalContext) -> Score:
        return Score(value=float("nan"))


def test_a_criterion_returning_nan_is_not_evaluated_and_the_rest_scores() -> None:
    goldens = load_goldens([str(EXAMPLES / "goldens")])
    plain = replay([str(EXAMPLES / "traces")], load_eval_config(None), goldens=goldens)
    with_bug = replay(
        [str(EXAMPLES / "traces")],
        [*load_eval_config(None), ReturnsNaN(threshold=0.5)],
        goldens=goldens,
    )
    reasons = {
        r.reason
        for res in with_bug.invocations
        for r in res.results
        if r.criterion == "returns_nan_for_test"
    }
    # Not-evaluable invocations keep their own reason; every scored one names the bug.
    assert "criterion error: score nan is not a finite number" in reasons
    assert all(
        r is not None and ("content not captured" in r or "criterion error" in r) for r in reasons
    )
    assert [c.status for c in with_bug.cases] == [c.status for c in plain.cases]


def test_pipes_as_outputs_are_written_in_place(tmp_path: Path) -> None:
    """``--output >(jq …)`` and a named pipe for ``--junit``: each was written to a
    temporary file renamed over it (the FIFO became a file, ``/dev/fd/N`` failed)."""
    import stat

    results, junit = tmp_path / "results", tmp_path / "junit"
    with fifo_read(results) as got_results, fifo_read(junit) as got_junit:
        code, _, err = run(*REPLAY_ARGS, "--output", str(results), "--junit", str(junit), "-q")
    assert code == 1, err  # the examples' failures, as ever
    [lines], [report] = got_results, got_junit
    assert len(lines.splitlines()) == 10  # every turn
    assert ET.fromstring(report).tag == "testsuites"
    assert stat.S_ISFIFO(results.stat().st_mode) and stat.S_ISFIFO(junit.stat().st_mode)


@dataclass(frozen=True, kw_only=True)
class _ReadsGoldenResults(Criterion):
    """A user's criterion on the golden's tool results (True by default: it reads them)."""

    name = "reads_golden_results_for_test"
    needs_model_context = False
    requires_reference = True

    def score(self, ctx: EvalContext) -> Score:
        assert ctx.expected is not None
        return Score(value=float(any(c.result for c in ctx.expected.tool_calls)))


def test_golden_tool_results_are_loaded_only_when_a_criterion_reads_them() -> None:
    builtin = [*load_eval_config(None), *informational_criteria()]
    assert not any(c.reads_golden_tool_results for c in builtin)
    assert _ReadsGoldenResults().reads_golden_tool_results
    goldens = str(EXAMPLES / "goldens")
    lean = replay([str(EXAMPLES / "traces")], builtin, goldens=goldens)
    full = replay([str(EXAMPLES / "traces")], [*builtin, _ReadsGoldenResults()], goldens=goldens)

    def golden_calls(result: ReplayResult) -> list[Any]:
        return [c for r in result.invocations if r.expected for c in r.expected.tool_calls]

    assert golden_calls(lean) and all(c.result is None for c in golden_calls(lean))
    assert any(c.result is not None for c in golden_calls(full))
    assert {r.results[-1].score for r in full.invocations if r.expected} == {1.0}
    # Nothing else reads them: the same scores either way.
    assert [r.results for r in lean.invocations] == [r.results[:-1] for r in full.invocations]
