"""A command never overwrites a file it reads, and never reads its own earlier output."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from bundled_examples import EXAMPLES
from tracescore.cli import main
from tracescore.cli.overwrite import drop_outputs


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """Copies of the bundled traces, goldens and config, free to be (not) overwritten."""
    for name in ("traces", "goldens"):
        shutil.copytree(EXAMPLES / name, tmp_path / name)
    shutil.copy(EXAMPLES / "eval_config.json", tmp_path / "eval_config.json")
    return tmp_path


def replay_args(work: Path) -> list[str | Path]:
    return [
        "replay",
        work / "traces",
        "--goldens",
        work / "goldens",
        "--config",
        work / "eval_config.json",
    ]


def test_import_refuses_to_write_over_its_own_input(work: Path) -> None:
    trace = work / "traces" / "adk-schema1-legacy.jsonl"
    before = digest(trace)
    # It used to read the traces, then rename the invocations over them.
    result = run("import", trace, "-o", trace)
    assert result.exit_code == 2
    assert f"--output {trace} is also one of the inputs" in result.stderr
    assert "Traceback" not in result.stderr
    assert digest(trace) == before


def test_the_same_file_by_another_name_is_refused_too(work: Path) -> None:
    trace = work / "traces" / "adk-schema1-legacy.jsonl"
    link = work / "link.jsonl"
    os.link(trace, link)  # a hard link: another path, the same file
    before = digest(trace)
    result = run("import", trace, "-o", link)
    assert result.exit_code == 2
    assert "is also one of the inputs" in result.stderr
    assert digest(trace) == before


@pytest.mark.parametrize(
    ("option", "target", "role"),
    [
        ("--output", "goldens/weather.evalset.json", "a goldens file"),
        ("--junit", "eval_config.json", "the eval config (--config)"),
        # Found by walking the traces directory, not named: a trace file all the same.
        ("--output", "traces/adk-schema1-legacy.jsonl", "one of the inputs"),
    ],
)
def test_replay_refuses_outputs_over_what_it_reads(
    work: Path, option: str, target: str, role: str
) -> None:
    path = work / target
    before = digest(path)
    result = run(*replay_args(work), option, path, "-q")
    assert result.exit_code == 2
    assert f"{option} {path} is also {role}: it would be overwritten" in result.stderr
    assert digest(path) == before


def test_an_evalset_among_the_inputs_is_never_taken_for_a_disposable_output(
    work: Path,
) -> None:
    # An imported evalset is meant to be curated into goldens: never replaced unasked.
    curated = work / "traces" / "curated.evalset.json"
    shutil.copy(work / "goldens" / "weather.evalset.json", curated)
    before = digest(curated)
    result = run("import", work / "traces", "-o", curated)
    assert result.exit_code == 2
    assert "is also one of the inputs" in result.stderr
    assert digest(curated) == before


def test_output_and_junit_cannot_be_one_file(work: Path) -> None:
    result = run(*replay_args(work), "--output", work / "r.xml", "--junit", f"{work}/./r.xml")
    assert result.exit_code == 2
    assert "--output and --junit are the same file" in result.stderr
    assert not (work / "r.xml").exists()


def test_an_earlier_replay_output_in_the_traces_directory_is_left_out(work: Path) -> None:
    results = work / "traces" / "results.jsonl"
    first = run(*replay_args(work), "--output", results, "-q")
    assert first.exit_code == 1 and results.exists()
    again = run(*replay_args(work), "--output", results)
    # It used to be read as ten bad records ("an ADK eval config") before being replaced.
    assert again.exit_code == 1
    assert f"note: {results} left out of the inputs: it is this run's --output" in again.stderr
    assert "bad record" not in again.stderr
    assert results.read_bytes().count(b"\n") == 10
    quiet = run(*replay_args(work), "--output", results, "-q")
    assert "note:" not in quiet.stderr
    # Named, as a shell glob names it (traces/*): left out all the same.
    named = [*replay_args(work)[:1], *sorted((work / "traces").iterdir()), *replay_args(work)[2:]]
    again = run(*named, "--output", results, "--junit", work / "traces" / "report.xml")
    assert again.exit_code == 1
    assert "left out of the inputs: it is this run's --output" in again.stderr
    report = work / "traces" / "report.xml"
    assert report.exists()
    named = [*replay_args(work)[:1], *sorted((work / "traces").iterdir()), *replay_args(work)[2:]]
    assert Path(report) in named
    junit = run(*named, "--junit", report)
    assert junit.exit_code == 1
    assert f"note: {report} left out of the inputs: it is this run's --junit" in junit.stderr
    # results.jsonl is not this run's output now: read, and named for what it is.
    assert f"bad record: {results}:1: not an OTLP document but a line of " in junit.stderr


def test_an_earlier_import_output_in_the_traces_directory_is_left_out(work: Path) -> None:
    out = work / "traces" / "invocations.jsonl"
    first = run("import", work / "traces", "-o", out, "--format", "jsonl")
    assert first.exit_code == 0
    lines = out.read_bytes().splitlines()
    again = run("import", work / "traces", "-o", out, "--format", "jsonl")
    assert again.exit_code == 0, again.stderr
    assert "left out of the inputs" in again.stderr
    assert "bad records 0" in again.stderr
    assert sorted(out.read_bytes().splitlines()) == sorted(lines)
    assert {orjson.loads(line)["trace_id"] for line in lines}


def test_drop_outputs_keeps_everything_when_no_output_exists(tmp_path: Path) -> None:
    files = [str(tmp_path / "a"), "-"]
    assert drop_outputs(files, {"--output": None, "--junit": "-"}) == (files, [])
    assert drop_outputs(files, {"--output": str(tmp_path / "new.jsonl")}) == (files, [])


@pytest.mark.parametrize("target_exists", [True, False])
def test_an_output_named_through_a_link_writes_the_link_target(
    work: Path, target_exists: bool
) -> None:
    """As a shell's ``>`` does: the link stays, its target gets the output (it was renamed
    over the link, which became a regular file, its target left as it was)."""
    (work / "runs").mkdir()
    targets = {name: work / "runs" / f"{name}.out" for name in ("import", "results", "junit")}
    links = {name: work / f"{name}.link" for name in targets}
    for name, link in links.items():
        if target_exists:
            targets[name].write_text("old\n")
        link.symlink_to(Path("runs") / targets[name].name)
    imported = run("import", work / "traces", "--format", "jsonl", "-o", links["import"])
    assert imported.exit_code == 0, imported.stderr
    args: list[str | Path] = ["--output", links["results"], "--junit", links["junit"], "-q"]
    assert run(*replay_args(work), *args).exit_code == 1  # the examples' failures
    for name, link in links.items():
        assert link.is_symlink()
        assert targets[name].read_bytes() != b"old\n"
    assert targets["import"].read_bytes().count(b"\n") == 11
    assert targets["results"].read_bytes().count(b"\n") == 10
    assert targets["junit"].read_bytes().startswith(b"<?xml")
    assert sorted(p.name for p in (work / "runs").iterdir()) == [
        "import.out",
        "junit.out",
        "results.out",
    ]  # no temporary file left beside them
