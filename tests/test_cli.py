"""The import command end to end: bundled examples, output formats, bad input, exit codes."""

from __future__ import annotations

import gzip
import os
import stat
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from google.adk.evaluation.eval_set import EvalSet
from google.genai import types as genai_types

from fifos import fifo_read
from tracescore.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "traces"


def run(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def _first_text(content: genai_types.Content) -> str | None:
    """The text of a content's first part (every content here has parts)."""
    assert content.parts
    return content.parts[0].text


def test_examples_become_an_adk_evalset(tmp_path: Path) -> None:
    out = tmp_path / "prod.evalset.json"
    code, _, err = run("import", str(EXAMPLES), "-o", str(out))
    assert code == 0, err
    evalset = EvalSet.model_validate_json(out.read_bytes())
    assert evalset.eval_set_id == "prod"
    by_id = {c.eval_id: c for c in evalset.eval_cases}
    turns = by_id["two_turn_session-session"].conversation
    assert turns is not None
    assert [_first_text(t.user_content) for t in turns] == ["Weather in Paris?", "And in Rome?"]
    assert "no_tools-session" not in by_id  # recorded without content: not a golden
    assert "not evaluable 1: content_not_captured 1" in err
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY" in err
    assert "bad records 0" in err


@pytest.mark.parametrize("fmt", ["evalset", "jsonl"])
def test_values_nested_deeper_than_orjson_writes_are_written_as_text(
    tmp_path: Path, fmt: str
) -> None:
    """A tool result nested 300 deep (the readers take 1024 levels, orjson writes 255):
    from 200 levels down it is written as its JSON text. The evalset export failed
    with a traceback."""
    traces = tmp_path / "deep.jsonl"
    traces.write_bytes(_with_first("gen_ai.tool.call.result", "[" * 300 + "]" * 300))
    out = tmp_path / f"out.{fmt}"
    code, _, err = run("import", str(traces), "--format", fmt, "-o", str(out))
    assert code == 0, err
    data = out.read_bytes()
    docs = (
        [orjson.loads(data)] if fmt == "evalset" else [orjson.loads(x) for x in data.splitlines()]
    )
    if fmt == "evalset":
        EvalSet.model_validate_json(data)
    texts = [t for doc in docs for t in _strings(doc) if t.startswith("[[[")]
    assert len(texts) == 1
    assert orjson.loads(texts[0])  # the levels below, as JSON text


def _with_first(key: str, text: str) -> bytes:
    """The schema-2 example traces with the first ``key`` attribute set to ``text``."""
    lines = (EXAMPLES / "adk-schema2-span-content.jsonl").read_bytes().splitlines()
    for n, line in enumerate(lines):
        doc = orjson.loads(line)
        for block in doc["resourceSpans"]:
            for scope in block["scopeSpans"]:
                for span in scope["spans"]:
                    for kv in span.get("attributes", []):
                        if kv["key"] == key:
                            kv["value"] = {"stringValue": text}
                            lines[n] = orjson.dumps(doc)
                            return b"\n".join(lines) + b"\n"
    raise AssertionError(f"no {key} in the example")


def _strings(value: object) -> list[str]:
    """Every string in a JSON value, at any depth (without recursion)."""
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def test_jsonl_to_stdout_has_the_documented_fields() -> None:
    code, out, _ = run("import", str(EXAMPLES / "adk-schema2-span-content.jsonl"))
    assert code == 0
    records = [orjson.loads(line) for line in out.splitlines()]
    assert len(records) == 5
    first = next(r for r in records if r["user_content"].startswith("What is the weather"))
    for key in (
        "trace_id",
        "conversation_id",
        "invocation_id",
        "agent",
        "user_content",
        "tool_calls",
        "intermediate_responses",
        "final_response",
        "status",
        "reason",
    ):
        assert key in first
    assert [c["name"] for c in first["tool_calls"]] == ["get_weather", "convert_temperature"]
    assert first["tool_calls"][0]["args"] == {"city": "Paris"}
    assert first["tool_calls"][0]["result"]["condition"] == "sunny"
    assert first["status"] == "ok"


MODEL_CONTEXT = ("system_instructions", "tool_definitions", "retrieved", "grounding")


def test_the_model_context_is_written_when_asked_for() -> None:
    """``--model-context`` adds what the model was given, as the trace recorded it (ADK
    schema 1: the request's config); without it, neither the keys nor their provenance."""
    path = str(EXAMPLES / "adk-schema1-legacy.jsonl")
    code, out, _ = run("import", path, "--model-context", "-q")
    assert code == 0
    records = [orjson.loads(line) for line in out.splitlines()]
    # The first model call's: a pipeline's is its first sub-agent's.
    assert [(r["agent"], r["system_instructions"].split("\n")[0]) for r in records] == [
        ("weather_agent", "Answer weather questions. Use the tools."),
        ("pipeline", "Collect the facts with the tools."),
    ]
    for r in records:
        [tool] = r["tool_definitions"]
        assert [d["name"] for d in tool["function_declarations"]] == ["get_weather"]
        assert (r["retrieved"], r["grounding"]) == ([], [])
        assert r["provenance"]["system_instructions"] == "gcp.vertex.agent.llm_request.config"
    code, out, _ = run("import", path, "-q")
    bare = [orjson.loads(line) for line in out.splitlines()]
    # The provenance differs too: it names where the context was read.
    assert [r["provenance"] for r in records] != [r["provenance"] for r in bare]
    for r in bare:
        assert not set(MODEL_CONTEXT) & (r.keys() | r["provenance"].keys())
    # Everything else is what the plain import writes.
    for r in records:
        for key in MODEL_CONTEXT:
            del r[key]
            r["provenance"].pop(key, None)
    assert records == bare


def test_the_model_context_is_not_written_into_an_evalset(tmp_path: Path) -> None:
    out = tmp_path / "x.evalset.json"
    code, _, err = run("import", str(EXAMPLES), "--model-context", "-o", str(out))
    assert code == 2
    assert "--model-context is written by --format jsonl only" in err
    assert "Traceback" not in err
    assert not out.exists()


def test_bad_line_is_located_skipped_and_exit_1(tmp_path: Path) -> None:
    good = (EXAMPLES / "adk-schema1-legacy.jsonl").read_text().splitlines()
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join([good[0], '{"resourceSpans": [oops', *good[1:]]) + "\n")
    code, out, err = run("import", str(path), "--format", "jsonl")
    assert code == 1
    assert f"bad record: {path}:2:" in err
    assert len(out.splitlines()) == 2  # both runs still came out
    assert "bad records 1" in err


def test_strict_stops_at_first_bad_record(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"resourceSpans": [oops\n')
    out = tmp_path / "o.jsonl"
    code, _, err = run("import", str(path), "--strict", "-o", str(out))
    assert code == 1
    assert f"{path}:1" in err
    assert not out.exists()  # nothing half-written
    assert "Traceback" not in err


def test_missing_path_is_a_usage_error_without_traceback(tmp_path: Path) -> None:
    code, _, err = run("import", str(tmp_path / "nope.jsonl"))
    assert code == 2
    assert "nope.jsonl" in err
    assert "Traceback" not in err


def test_empty_input_says_so(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    code, out, err = run("import", str(path))
    assert code == 0
    assert out == ""
    assert "empty input" in err


def test_stdin_and_gzip(tmp_path: Path) -> None:
    data = (EXAMPLES / "adk-schema1-legacy.jsonl").read_bytes()
    code, out, _ = run("import", "-", stdin=data)
    assert code == 0
    assert len(out.splitlines()) == 2
    gz = tmp_path / "t.jsonl.gz"
    gz.write_bytes(gzip.compress(data))
    code, out2, _ = run("import", str(gz))
    assert code == 0
    assert out2 == out


@pytest.mark.parametrize("quiet", [True, False])
def test_quiet_suppresses_summary(quiet: bool) -> None:
    args = ["import", str(EXAMPLES / "adk-schema1-legacy.jsonl")] + (["-q"] if quiet else [])
    _, _, err = run(*args)
    assert ("invocations" in err) is not quiet


def test_idle_window_is_settable_and_late_records_are_reported(tmp_path: Path) -> None:
    lines = (EXAMPLES / "adk-schema2-span-content.jsonl").read_text().splitlines()
    # Move the first batch to the end: with a tiny window its trace is already complete
    # when the batch arrives, so its spans are late.
    path = tmp_path / "late.jsonl"
    path.write_text("\n".join([*lines[1:], lines[0]]) + "\n")
    code, _, err = run("import", str(path), "--idle-records", "1", "--format", "jsonl")
    assert code == 0
    assert "late_record" in err
    code, _, err = run("import", str(path), "--format", "jsonl")
    assert code == 0
    assert "late_record" not in err


def test_options_from_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"resourceSpans": [oops\n')
    result = CliRunner().invoke(main, ["import", str(path)], env={"TRACESCORE_IMPORT_STRICT": "1"})
    assert result.exit_code == 1
    assert "--strict" in result.stderr


def test_import_starts_without_the_other_commands_modules(tmp_path: Path) -> None:
    """Each command imports what it uses when it runs: a small ``tracescore import`` does
    not pay ~0.45 s for the judge, the settings models and the servers, nor ~0.3 s for
    the criteria and goldens that replay's import workers score with."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from tracescore.cli import main\n"
        f"main(['import', {str(EXAMPLES)!r}, '-q', '-o', {str(tmp_path / 'out.jsonl')!r}],"
        " standalone_mode=False)\n"
        "heavy = ['tracescore.judge.config', 'tracescore.settings', 'tracescore.server',"
        " 'tracescore.cli.serve_cmd', 'tracescore.cli.replay_cmd', 'google.genai',"
        " 'tracescore.prescore', 'tracescore.criteria', 'tracescore.goldens', 'pydantic']\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
    assert (tmp_path / "out.jsonl").read_bytes().count(b"\n") > 0
    _, listing, _ = run("--help")
    assert all(name in listing for name in ("import", "replay", "serve"))


def test_output_files_get_the_mode_open_would_give_them(tmp_path: Path) -> None:
    """Not mkstemp's private 0600: the umask's mode for a new file, an old file's own."""
    import stat

    previous = os.umask(0o027)
    try:
        fresh = tmp_path / "fresh.evalset.json"
        kept = tmp_path / "kept.jsonl"
        kept.write_bytes(b"")
        kept.chmod(0o604)
        for out in (fresh, kept):
            code, _, err = run("import", str(EXAMPLES), "-o", str(out), "-q")
            assert code == 0, err
    finally:
        os.umask(previous)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o640
    assert stat.S_IMODE(kept.stat().st_mode) == 0o604
    assert kept.stat().st_size > 0


def test_an_output_that_cannot_be_created_is_named_not_its_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import tempfile

    code, _, err = run("import", str(EXAMPLES), "-o", str(tmp_path))
    assert code == 2
    assert f"error: cannot write {tmp_path}: it is a directory" in err

    def read_only(*args: object, **kwargs: object) -> tuple[int, str]:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(tmp_path / ".x.tmp"))

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    out = tmp_path / "x.jsonl"
    code, _, err = run("import", str(EXAMPLES), "-o", str(out))
    assert code == 2
    assert f"error: cannot write {out}: Read-only file system" in err
    assert "Traceback" not in err and ".x.tmp" not in err


@pytest.mark.parametrize("fmt", ["jsonl", "evalset"])
def test_a_pipe_as_the_output_is_written_in_place(tmp_path: Path, fmt: str) -> None:
    """``-o >(gzip > x.gz)`` or a named pipe: written to a temporary file renamed over it,
    a FIFO became a regular file (its reader got nothing) and ``/dev/fd/N`` failed."""
    (tmp_path / "file").mkdir()
    expected = tmp_path / "file" / "prod.out"
    assert run("import", str(EXAMPLES), "--format", fmt, "-o", str(expected))[0] == 0
    pipe = tmp_path / "prod.out"
    with fifo_read(pipe) as got:
        code, _, err = run("import", str(EXAMPLES), "--format", fmt, "-o", str(pipe))
    assert code == 0, err
    assert got == [expected.read_bytes()]
    assert stat.S_ISFIFO(pipe.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "prod.out"]  # no temp left
