"""The multi-process import writes exactly what the sequential import writes."""

from __future__ import annotations

import base64
import gzip
import io
import itertools
import logging
import os
import random
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tracescore import part_worker
from tracescore.assembly import TraceAssembler
from tracescore.exceptions import InputError, TraceFormatError
from tracescore.export import invocation_json, invocation_record, write_jsonl
from tracescore.formats.base import Batch
from tracescore.formats.files import read_file
from tracescore.importer import ImportStats, invocations_from_batches
from tracescore.model import Invocation
from tracescore.parallel import import_parallel, parallel_parts, write_jsonl_parallel
from tracescore.parts import _count_newlines, plan_parts
from tracescore.shipping import decode_boundary

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import gen_traces

from fifos import fifo_read


@pytest.fixture(scope="module")
def traffic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("parallel") / "traffic.jsonl"
    gen_traces.generate(4000, path, seed=3)
    return path


@pytest.fixture(scope="module")
def small_traffic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("parallel") / "small.jsonl"
    gen_traces.generate(1500, path, seed=11)
    return path


def _sequential(
    path: Path, idle: int, *, model_context: bool = False
) -> tuple[list[bytes], ImportStats]:
    stats = ImportStats()
    out = io.BytesIO()
    invocations = invocations_from_batches(
        read_file(str(path)),
        stats,
        assembler=TraceAssembler(idle_records=idle),
        model_context=model_context,
    )
    write_jsonl(invocations, out, model_context=model_context)
    return sorted(out.getvalue().splitlines()), stats


def _parallel(
    path: Path, idle: int, part_bytes: int, *, model_context: bool = False
) -> tuple[list[bytes], ImportStats, int]:
    parts = plan_parts([str(path)], jobs=3, idle_records=idle, min_part_bytes=part_bytes)
    stats = ImportStats()
    out = io.BytesIO()
    written = write_jsonl_parallel(
        parts, out, stats, jobs=3, idle_records=idle, model_context=model_context
    )
    assert written == stats.invocations
    return sorted(out.getvalue().splitlines()), stats, len(parts)


@pytest.mark.parametrize(("idle", "part_bytes"), [(400, 1_500_000), (5_000, 2_000_000)])
def test_parallel_output_equals_sequential(traffic: Path, idle: int, part_bytes: int) -> None:
    expected, seq = _sequential(traffic, idle)
    assert not seq.dropped  # no late records: the parity the design promises
    got, par, n_parts = _parallel(traffic, idle, part_bytes)
    assert n_parts >= 3
    assert got == expected
    for name in ("spans", "logs", "traces", "invocations", "traces_without_agent"):
        assert getattr(par, name) == getattr(seq, name), name
    assert par.records == seq.records


def test_parallel_output_with_the_model_context_equals_sequential(traffic: Path) -> None:
    """``tracescore import --model-context``: workers read and write it as one process
    does; without it, neither the keys nor the provenance of what was not read."""
    expected, _ = _sequential(traffic, 400, model_context=True)
    got, _, n_parts = _parallel(traffic, 400, 1_500_000, model_context=True)
    assert n_parts >= 3
    assert got == expected
    records = [orjson.loads(line) for line in got]
    context = ("system_instructions", "tool_definitions", "retrieved", "grounding")
    assert all(set(context) <= r.keys() for r in records)
    # The generated agents state instructions and offer tools (ADK and GenAI runs).
    instructed = [r for r in records if r["system_instructions"]]
    assert len(instructed) > len(records) // 2
    assert all("system_instructions" in r["provenance"] for r in instructed)
    assert any(r["tool_definitions"] for r in records)
    plain, _, _ = _parallel(traffic, 400, 1_500_000)
    bare = [orjson.loads(line) for line in plain]
    assert len(bare) == len(records)
    assert not any(set(context) & (r.keys() | r["provenance"].keys()) for r in bare)


@pytest.mark.parametrize(("idle", "part_bytes"), [(400, 1_500_000), (5_000, 2_000_000)])
def test_parallel_invocations_equal_sequential(traffic: Path, idle: int, part_bytes: int) -> None:
    """What ``replay`` scores: the invocation objects themselves, every field."""
    seq = ImportStats()
    expected = list(
        invocations_from_batches(
            read_file(str(traffic)), seq, assembler=TraceAssembler(idle_records=idle)
        )
    )
    parts = plan_parts([str(traffic)], jobs=3, idle_records=idle, min_part_bytes=part_bytes)
    assert len(parts) >= 3
    par = ImportStats()
    got = import_parallel(parts, par, jobs=3, idle_records=idle)

    def key(inv: Invocation) -> tuple[str, str]:
        return inv.trace_id, inv.root_span_id or ""

    assert sorted(got, key=key) == sorted(expected, key=key)
    assert len(got) == par.invocations == seq.invocations
    assert (par.records, par.traces) == (seq.records, seq.traces)


def test_values_nested_as_deep_as_the_readers_take_come_out_as_in_one_process(
    traffic: Path, tmp_path: Path
) -> None:
    """Tool results nested 1000 deep (the readers take 1024 levels; orjson writes 255,
    pickle stops near 1000): the lines and the invocation objects of a parallel import
    are those of one process. Both failed in the workers."""
    deep = "[" * 1000 + "]" * 1000
    lines = traffic.read_bytes().splitlines(keepends=True)
    edited = 0
    for n, line in enumerate(lines):
        if b'"gen_ai.tool.call.result"' in line and edited < 3:
            doc = orjson.loads(line)
            for block in doc["resourceSpans"]:
                for scope in block["scopeSpans"]:
                    for span in scope["spans"]:
                        for kv in span.get("attributes", []):
                            if kv["key"] == "gen_ai.tool.call.result":
                                kv["value"] = {"stringValue": f'{{"q": {deep}}}'}
                                edited += 1
            lines[n] = orjson.dumps(doc) + b"\n"
    assert edited >= 3
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b"".join(lines))
    expected, _ = _sequential(path, 400)
    got, _, n_parts = _parallel(path, 400, 1_500_000)
    assert n_parts >= 3
    assert got == expected
    assert sum(b'[[[["' in line for line in got) >= 3  # text from 200 levels down
    parts = plan_parts([str(path)], jobs=3, idle_records=400, min_part_bytes=1_500_000)
    invocations = import_parallel(
        parts, ImportStats(), jobs=3, idle_records=400, model_context=False
    )
    # As JSON Lines: == on the objects would recurse 1000 levels.
    assert sorted(invocation_json(inv) for inv in invocations) == expected


def test_bad_lines_keep_their_line_numbers(traffic: Path, tmp_path: Path) -> None:
    # Workers number their part's lines from 1 (the lines before a cut are not counted
    # up front); the errors reported carry the file's line numbers all the same.
    lines = traffic.read_bytes().splitlines()
    bad_span = orjson.loads(lines[1])
    bad_span["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = "not-hex"
    bad_at = [1, len(lines) // 2, len(lines) - 3]  # first part, a middle one, the last one
    for at in reversed(bad_at):
        lines.insert(at, b'{"resourceSpans": [oops')
    span_at = len(lines) - 1
    lines.insert(span_at, orjson.dumps(bad_span))
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    parts = plan_parts([str(path)], jobs=3, idle_records=400, min_part_bytes=1_500_000)
    assert len(parts) >= 3
    assert [p.first_line for p in parts] == [1] + [None] * (len(parts) - 1)
    reported: list[TraceFormatError] = []
    stats = ImportStats()
    write_jsonl_parallel(
        parts, io.BytesIO(), stats, jobs=3, idle_records=400, on_error=reported.append
    )
    expected = [at + 1 + i for i, at in enumerate(bad_at)] + [span_at + 1]
    for errors in (stats.errors, reported):
        assert [(e.path, e.line) for e in errors] == [(str(path), n) for n in expected]
    assert f"bad.jsonl:{span_at + 1}: span " in str(stats.errors[-1])
    assert stats.bad_records == 4


def test_small_or_unsplittable_inputs_stay_whole(traffic: Path, tmp_path: Path) -> None:
    assert len(plan_parts([str(traffic)], jobs=2, idle_records=5_000)) == 1  # < 2 head windows
    gz = tmp_path / "t.jsonl.gz"
    gz.write_bytes(gzip.compress(traffic.read_bytes()))
    [part] = plan_parts([str(gz)], jobs=2, idle_records=10, min_part_bytes=1)
    assert part.start is None
    assert (part.first, part.last) == (True, True)


def test_parts_cover_the_file_at_line_starts(traffic: Path) -> None:
    parts = plan_parts([str(traffic)], jobs=2, idle_records=400, min_part_bytes=1_000_000)
    data = traffic.read_bytes()
    assert parts[0].start == 0
    assert parts[-1].end == len(data)
    for a, b in itertools.pairwise(parts):
        assert a.end == b.start
        assert b.start is not None
        assert data[b.start - 1 : b.start] == b"\n"
        assert b.first_line is None  # counted only when an error needs it
    assert [p.first for p in parts] == [True] + [False] * (len(parts) - 1)
    assert orjson.loads(data[parts[1].start : data.index(b"\n", parts[1].start)])


@pytest.mark.parametrize(
    "line_bytes",
    [1, 40, 5_000, 300_000, 3_000_000],
    ids=["empty-lines", "short", "medium", "collector-batch", "longer-than-a-block"],
)
def test_newline_count_is_exact_for_any_line_length(tmp_path: Path, line_bytes: int) -> None:
    # Short lines take the count-the-block branch, long ones the newline-to-newline one.
    line = b"x" * (line_bytes - 1) + b"\n"
    data = line * max(3, 4_000_000 // line_bytes) + b"tail without newline"
    path = tmp_path / "lines.jsonl"
    path.write_bytes(data)
    with path.open("rb") as stream:
        for start, end in [(0, len(data)), (7, len(data) - 5), (len(data) // 3, len(data) // 2)]:
            assert _count_newlines(stream, start, end) == data[start:end].count(b"\n")
        assert _count_newlines(stream, 9, 9) == 0


def test_cli_jobs_split_a_large_file_and_write_the_same_lines(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Also once a line from the start comes again at the end (a retried export): the
    two workers both built its traces, so the command imports again in one process and
    says so; the output is still what ``-j 1`` writes (with ``--model-context`` too)."""
    from click.testing import CliRunner

    from tracescore.cli import main

    big = tmp_path / "big.jsonl"
    gen_traces.generate(20_000, big, seed=5)  # ~47 MB: two parts of >= 8 MiB
    assert len(plan_parts([str(big)], jobs=2, idle_records=100)) == 2

    def outputs(*more: str) -> list[list[bytes]]:
        outs = []
        for jobs in ("1", "2"):
            out = tmp_path / f"out{jobs}.jsonl"
            args = ["import", str(big), "--format", "jsonl", "--idle-records", "100", "-j", jobs]
            result = CliRunner().invoke(main, [*args, *more, "-o", str(out)])
            assert result.exit_code == 0, result.stderr
            outs.append(sorted(out.read_bytes().splitlines()))
        return outs

    with caplog.at_level(logging.WARNING, logger="tracescore.parallel"):
        one, two = outputs()
        assert one == two and len(one) > 1000
        assert "importing in one process" not in caplog.text
        with big.open("ab") as fh:
            fh.write(big.read_bytes().splitlines(keepends=True)[3])
        one, two = outputs()
        assert one == two
        assert "importing in one process" in caplog.text
        caplog.clear()
        one, two = outputs("--model-context")
        assert one == two
        assert "importing in one process" in caplog.text
        assert all(b'"retrieved":[' in line for line in two)


def _plan_into(planned: list[object], paths: list[str]) -> None:
    planned.append(parallel_parts(paths, jobs=2, idle_records=400, strict=False))


def test_a_pipe_among_the_inputs_is_read_once_in_one_process(
    traffic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tracescore import /dev/stdin`` or ``<(zcat …)``: planning the parts read the pipe's
    first lines and the workers' edges read on, and those records were gone: the
    import found no input at all. A stream is now imported in one process."""
    import threading

    from click.testing import CliRunner

    from tracescore.cli import main

    monkeypatch.setattr("tracescore.parts._MIN_PART_BYTES", 1_000_000)
    args = ["--format", "jsonl", "--idle-records", "400", "-j", "2", "-q", "-o"]
    expected = tmp_path / "expected.jsonl"
    assert parallel_parts([str(traffic)], jobs=2, idle_records=400, strict=False)  # it splits
    assert CliRunner().invoke(main, ["import", str(traffic), *args, str(expected)]).exit_code == 0
    small = tmp_path / "small.jsonl"
    small.write_bytes(b"".join(traffic.read_bytes().splitlines(keepends=True)[:40]))
    for inputs in (["{fifo}"], [str(small), "{fifo}"], ["{fifo}", str(small)]):
        fifo = tmp_path / "pipe"
        os.mkfifo(fifo)
        paths = [p.format(fifo=fifo) for p in inputs]
        # No writer yet: a planner that opened the pipe would wait for one (so: a thread).
        planned: list[object] = []
        planner = threading.Thread(target=_plan_into, args=(planned, paths), daemon=True)
        planner.start()
        planner.join(timeout=10)
        assert planned == [None]
        writer = threading.Thread(target=fifo.write_bytes, args=(traffic.read_bytes(),))
        writer.start()
        got = tmp_path / "got.jsonl"
        result = CliRunner().invoke(main, ["import", *paths, *args, str(got)])
        writer.join()
        fifo.unlink()
        assert result.exit_code == 0, result.stderr
        lines = sorted(got.read_bytes().splitlines())
        if len(paths) == 1:
            assert lines == sorted(expected.read_bytes().splitlines())
        assert set(expected.read_bytes().splitlines()) <= set(lines)


def test_a_parallel_import_into_a_pipe_writes_it_in_place(
    traffic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Into a pipe the parts are held until all are done (it cannot be cut back), and the
    workers spool in the system's temporary directory, not beside a ``/dev/fd/N``."""
    from click.testing import CliRunner

    from tracescore.cli import main

    monkeypatch.setattr("tracescore.parts._MIN_PART_BYTES", 1_000_000)
    args = ["--format", "jsonl", "--idle-records", "400", "-q", "-o"]
    expected = tmp_path / "expected.jsonl"
    one = CliRunner().invoke(main, ["import", str(traffic), "-j", "1", *args, str(expected)])
    assert one.exit_code == 0
    pipe = tmp_path / "pipe"
    with fifo_read(pipe) as got:
        two = CliRunner().invoke(main, ["import", str(traffic), "-j", "2", *args, str(pipe)])
    assert two.exit_code == 0, two.stderr
    assert len(got) == 1
    assert sorted(got[0].splitlines()) == sorted(expected.read_bytes().splitlines())


def test_workers_are_forked_only_while_no_other_thread_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Forked workers skip the interpreter and package start-up; forking beside another
    thread could copy a lock it holds, so then they are spawned."""
    import threading

    from tracescore import parallel

    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert parallel._mp_context().get_start_method() == "spawn"
    finally:
        stop.set()
        other.join()
    # the suite itself may run daemon threads (earlier tests' workers): pretend it does not
    monkeypatch.setattr("tracescore.parallel.threading.active_count", lambda: 1)
    assert parallel._mp_context().get_start_method() == "fork"


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_forked_and_spawned_workers_write_the_same(
    traffic: Path, method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import multiprocessing

    from tracescore import parallel

    monkeypatch.setattr(parallel, "_mp_context", lambda: multiprocessing.get_context(method))
    expected, _ = _sequential(traffic, 400)
    got, _, n_parts = _parallel(traffic, 400, 1_500_000)
    assert n_parts >= 3
    assert got == expected


def _trace_ids(path: Path, start: int, end: int) -> list[set[str]]:
    """Trace ids per record (span or log) between two line starts, in file order."""
    from tracescore.formats.files import read_json_lines

    records: list[set[str]] = []
    for batch in read_json_lines(str(path), start, end, 1):
        records += [{s.trace_id} for s in batch.spans]
        records += [{r.trace_id} if r.trace_id else set() for r in batch.logs]
    return records


def test_only_traces_crossing_a_cut_travel_back_raw(traffic: Path) -> None:

    idle = 400
    parts = plan_parts([str(traffic)], jobs=3, idle_records=idle, min_part_bytes=1_500_000)
    assert len(parts) >= 3
    middle = parts[1]
    assert middle.start is not None and middle.end is not None
    size = traffic.stat().st_size
    inside = set().union(*_trace_ids(traffic, middle.start, middle.end))
    outside = set().union(
        *_trace_ids(traffic, 0, middle.start), *_trace_ids(traffic, middle.end, size)
    )
    crossing = inside & outside
    assert crossing  # the fixture does cross its cuts

    result = part_worker.run_part(middle, idle)
    sent = {t.trace_id for t in decode_boundary(result.boundary)}
    assert sent  # the traces alive across either cut
    assert sent <= crossing  # and nothing else: the rest was built in the worker
    assert len(sent) < len(inside) / 4
    built = {orjson.loads(line)["trace_id"] for line in result.output.splitlines()}
    assert not built & sent


@pytest.mark.parametrize("block", [200, 5_000, 1 << 20])
def test_edge_ids_cover_the_records_a_neighbour_may_share(
    traffic: Path, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read backwards in blocks (some shorter than one line) or forwards, the edge sets
    hold the trace ids of at least the records asked for, and not the whole file's."""

    monkeypatch.setattr(part_worker, "SCAN", block)
    [first, second, *_] = plan_parts(
        [str(traffic)], jobs=3, idle_records=400, min_part_bytes=1_500_000
    )
    assert second.start is not None
    want = 900
    before = _trace_ids(traffic, 0, second.start)
    after = _trace_ids(traffic, second.start, traffic.stat().st_size)
    got_before, read = part_worker.ids_before(str(traffic), second.start, want)
    assert read >= want
    got_after = part_worker.edge_after(first, part_worker.Neighbours(), want)
    assert isinstance(got_after, frozenset)
    assert set().union(*before[-want:]) <= got_before
    assert set().union(*after[:want]) <= got_after
    assert got_before < set().union(*before)
    assert got_after < set().union(*after)


def test_traces_crossing_from_one_file_into_another_are_merged(
    traffic: Path, tmp_path: Path
) -> None:
    """A split file followed by a gzip file: the worker before the cut reads the gzip
    file's first records (tests/test_parallel_files.py has more of these cuts)."""
    lines = traffic.read_bytes().splitlines(keepends=True)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz"
    a.write_bytes(b"".join(lines[: len(lines) * 2 // 3]))
    b.write_bytes(gzip.compress(b"".join(lines[len(lines) * 2 // 3 :])))
    ids_a = set().union(*_trace_ids(a, 0, a.stat().st_size))
    ids_b = {s.trace_id for batch in read_file(str(b)) for s in batch.spans}
    assert ids_a & ids_b  # some traces do cross from one file into the other

    stats = ImportStats()
    expected = io.BytesIO()
    found = invocations_from_batches(_both(a, b), stats, assembler=_asm(400), model_context=False)
    write_jsonl(found, expected)
    parts = plan_parts([str(a), str(b)], jobs=3, idle_records=400, min_part_bytes=1_500_000)
    assert len(parts) >= 3 and parts[-1].start is None
    got = io.BytesIO()
    write_jsonl_parallel(parts, got, ImportStats(), jobs=3, idle_records=400)
    assert sorted(got.getvalue().splitlines()) == sorted(expected.getvalue().splitlines())


def _both(*paths: Path) -> Iterator[Batch]:
    for path in paths:
        yield from read_file(str(path))


def _asm(idle: int) -> TraceAssembler:
    return TraceAssembler(idle_records=idle)


def test_spooled_output_reaches_a_file_after_what_it_buffered(
    traffic: Path, tmp_path: Path
) -> None:
    """Workers write their lines to spool files, appended to a real output file in part
    order, after anything the output still buffered; the spool files are removed."""
    parts = plan_parts([str(traffic)], jobs=3, idle_records=400, min_part_bytes=1_500_000)
    assert len(parts) >= 3
    in_memory = io.BytesIO()  # no descriptor: the spool files are copied through Python
    write_jsonl_parallel(parts, in_memory, ImportStats(), jobs=3, idle_records=400)
    spool = tmp_path / "spool"
    spool.mkdir()
    target = tmp_path / "out.jsonl"
    with target.open("wb") as out:
        out.write(b"first\n")  # still in the writer's buffer when the first part comes
        write_jsonl_parallel(
            parts, out, ImportStats(), jobs=3, idle_records=400, spool_dir=str(spool)
        )
        out.write(b"last\n")
    assert target.read_bytes() == b"first\n" + in_memory.getvalue() + b"last\n"
    assert sorted(in_memory.getvalue().splitlines()) == _sequential(traffic, 400)[0]
    assert list(spool.iterdir()) == []


@pytest.mark.parametrize("sent_first", [0, 1000])
def test_without_sendfile_the_spool_is_copied(
    traffic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sent_first: int
) -> None:
    """sendfile refused (no support, an O_APPEND descriptor on older kernels) at once
    or after a first chunk: the rest is copied, nothing lost or written twice."""
    import errno
    import os

    parts = plan_parts([str(traffic)], jobs=3, idle_records=400, min_part_bytes=1_500_000)
    expected = io.BytesIO()
    write_jsonl_parallel(parts, expected, ImportStats(), jobs=3, idle_records=400)
    real = os.sendfile
    calls: list[int] = []

    def refusing(out_fd: int, in_fd: int, offset: int | None, count: int) -> int:
        calls.append(count)
        if sent_first and len(calls) == 1:
            return real(out_fd, in_fd, offset, sent_first)
        raise OSError(errno.EINVAL, "refused")

    monkeypatch.setattr(os, "sendfile", refusing)
    target = tmp_path / "out.jsonl"
    with target.open("wb") as out:
        write_jsonl_parallel(
            parts, out, ImportStats(), jobs=3, idle_records=400, spool_dir=str(tmp_path)
        )
    assert calls  # the descriptor path was taken
    assert target.read_bytes() == expected.getvalue()
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_a_failing_worker_leaves_no_spool_file(traffic: Path, tmp_path: Path) -> None:
    gone = tmp_path / "gone.jsonl"
    gone.write_bytes(traffic.read_bytes())
    parts = plan_parts([str(gone)], jobs=3, idle_records=400, min_part_bytes=1_500_000)
    gone.unlink()  # every worker fails, after the first one created its spool file
    spool = tmp_path / "spool"
    spool.mkdir()
    with (tmp_path / "out.jsonl").open("wb") as out, pytest.raises(InputError, match="gone"):
        write_jsonl_parallel(
            parts, out, ImportStats(), jobs=3, idle_records=400, spool_dir=str(spool)
        )
    assert list(spool.iterdir()) == []


def test_progress_counts_every_byte_of_the_input_once(traffic: Path) -> None:
    parts = plan_parts([str(traffic)], jobs=3, idle_records=400, min_part_bytes=1_500_000)
    reports: list[tuple[int, int]] = []
    out = io.BytesIO()
    write_jsonl_parallel(
        parts,
        out,
        ImportStats(),
        jobs=3,
        idle_records=400,
        progress=lambda done, total: reports.append((done, total)),
    )
    size = traffic.stat().st_size
    assert len(reports) >= len(parts)  # at least once per part
    assert {total for _, total in reports} == {size}
    done = [d for d, _ in reports]
    assert done == sorted(done)
    assert done[-1] == size
    assert sorted(out.getvalue().splitlines()) == _sequential(traffic, 400)[0]


def test_a_worker_keeps_its_bytes_read_in_its_progress_slot(traffic: Path) -> None:
    import multiprocessing

    parts = plan_parts([str(traffic)], jobs=3, idle_records=400, min_part_bytes=1_500_000)
    middle = parts[1]
    assert middle.start is not None and middle.end is not None
    shared = multiprocessing.get_context("fork").RawArray("q", len(parts))
    part_worker.init_worker(shared)
    try:
        part_worker.run_part(middle, 400, slot=1)
    finally:
        part_worker.init_worker(None)
    assert list(shared) == [0, middle.end - middle.start, *[0] * (len(parts) - 2)]


def test_cli_shows_a_progress_bar_while_workers_import(
    traffic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a terminal, a parallel import shows its progress too (without a refresh
    thread, so the workers are still forked)."""
    import threading
    from multiprocessing.context import BaseContext

    from click.testing import CliRunner
    from rich.console import Console

    from tracescore import parallel
    from tracescore.cli import import_cmd, main
    from tracescore.cli.app import Diagnostics

    monkeypatch.setattr("tracescore.parts._MIN_PART_BYTES", 1_000_000)
    monkeypatch.setattr(import_cmd, "_PROGRESS_MIN_BYTES", 1)
    screen = io.StringIO()

    class OnScreen(Diagnostics):  # stderr is a terminal that writes to ``screen``
        def terminal(self) -> Console:
            return Console(file=screen, force_terminal=True, width=100)

    monkeypatch.setattr(import_cmd, "stderr", OnScreen)
    threads: list[int] = []
    real_context = parallel._mp_context

    def context() -> BaseContext:
        threads.append(threading.active_count())
        return real_context()

    monkeypatch.setattr(parallel, "_mp_context", context)
    outs = []
    for jobs in ("2", "1"):
        out = tmp_path / f"out{jobs}.jsonl"
        args = ["import", str(traffic), "--idle-records", "400", "-j", jobs, "-o", str(out)]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.stderr
        outs.append(sorted(out.read_bytes().splitlines()))
        if jobs == "2":
            shown = screen.getvalue()
    assert outs[0] == outs[1]
    assert len(threads) == 1  # -j 2 ran in parallel
    # the progress display added no thread of its own (the suite's may run others)
    assert threads[0] == threading.active_count()
    assert "importing" in shown
    assert "100%" in shown


def test_cli_reports_a_spool_it_cannot_write_without_a_traceback(
    traffic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written to stdout, the workers spool in the temporary directory: when that is
    gone, the import says so and exits 2."""
    import tempfile

    from click.testing import CliRunner

    from tracescore.cli import main

    monkeypatch.setattr("tracescore.parts._MIN_PART_BYTES", 1_000_000)
    missing = tmp_path / "no-such-dir"
    monkeypatch.setattr(tempfile, "tempdir", str(missing))
    args = ["import", str(traffic), "--idle-records", "400", "-j", "2", "-o", "-"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert f"error: cannot write {missing}" in result.stderr
    assert "No such file or directory" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def _rebatched(path: Path, rng: random.Random, largest: int, logs: bool = False) -> list[bytes]:
    """The file's spans in order, regrouped into lines of 1 to ``largest`` spans; with
    ``logs``, a line's spans are followed now and then by a log line: an event log
    record for some of them, and one without a trace id."""
    items = []
    for line in path.read_bytes().splitlines():
        for rs in orjson.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                items += [(rs["resource"], ss["scope"], span) for span in ss["spans"]]
    lines = []
    while items:
        size = rng.randint(1, largest)
        chunk, items = items[:size], items[size:]
        groups: dict[str, Any] = {}
        for resource, scope, span in chunk:
            key = orjson.dumps([resource, scope]).decode()
            groups.setdefault(key, []).append(span)
        doc = {
            "resourceSpans": [
                {"resource": r, "scopeSpans": [{"scope": s, "spans": spans}]}
                for (r, s), spans in ((orjson.loads(k), v) for k, v in groups.items())
            ]
        }
        lines.append(orjson.dumps(doc) + b"\n")
        if logs and rng.random() < 0.3:
            lines.append(_log_line([span for _, _, span in chunk], rng))
    return lines


def _log_line(spans: list[dict[str, Any]], rng: random.Random) -> bytes:
    records: list[dict[str, Any]] = [
        {
            "timeUnixNano": span["endTimeUnixNano"],
            "traceId": span["traceId"],
            "spanId": span["spanId"],
            "eventName": "gen_ai.choice",
            "body": {"stringValue": "logged"},
        }
        for span in spans
        if rng.random() < 0.5
    ]
    records.append({"timeUnixNano": "1", "body": {"stringValue": "no trace"}})
    doc = {"resourceLogs": [{"resource": {}, "scopeLogs": [{"logRecords": records}]}]}
    return orjson.dumps(doc) + b"\n"


def _retried(lines: list[bytes], rng: random.Random, retries: int, reach: int) -> list[bytes]:
    """``lines`` with ``retries`` of them sent again up to ``reach`` lines later, and
    as many sent late instead (moved up to ``reach`` lines on)."""
    out = list(lines)
    for _ in range(retries):
        i = rng.randrange(len(out))
        out.insert(min(len(out), i + rng.randint(1, reach)), out[i])
        j = rng.randrange(len(out))
        out.insert(min(len(out), j + rng.randint(1, reach)), out.pop(j))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_retried_and_late_lines_give_the_sequential_outcome(
    small_traffic: Path, tmp_path: Path, seed: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Records that come again or late, near a cut or far from it (with log records in
    odd seeds): the parallel import settles them at the cuts as one process would, or
    imports in one process; either way the same lines and the same counts (drops
    included)."""
    rng = random.Random(seed)
    lines = _rebatched(small_traffic, rng, largest=rng.choice([5, 20, 60]), logs=seed % 2 == 1)
    path = tmp_path / "retried.jsonl"
    path.write_bytes(b"".join(_retried(lines, rng, rng.randint(1, 12), rng.choice([3, 30]))))
    idle = rng.choice([40, 150, 600])
    expected, seq = _sequential(path, idle)
    parts = plan_parts(
        [str(path)], jobs=3, idle_records=idle, min_part_bytes=path.stat().st_size // 5
    )
    assert len(parts) >= 3
    stats = ImportStats()
    out = io.BytesIO()
    with caplog.at_level(logging.WARNING, logger="tracescore.parallel"):
        written = write_jsonl_parallel(parts, out, stats, jobs=3, idle_records=idle)
    assert sorted(out.getvalue().splitlines()) == expected
    assert written == stats.invocations == seq.invocations
    assert stats.dropped == seq.dropped
    for name in ("records", "spans", "logs", "traces", "traces_without_agent", "not_evaluable"):
        assert getattr(stats, name) == getattr(seq, name), name
    if seed % 2:
        assert seq.logs and seq.dropped["no_trace_id"]
    par = ImportStats()
    got = import_parallel(parts, par, jobs=3, idle_records=idle, model_context=False)
    assert sorted(orjson.dumps(invocation_record(i), default=str) for i in got) == expected
    assert par.dropped == seq.dropped


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", lambda m: "_" + m.group(1).lower(), key)


def _respelled(value: Any) -> Any:
    """An OTLP JSON value in the other spelling the readers take: snake_case keys,
    base64 ids (as a Tempo download or the protobuf JSON mapping writes them)."""
    if isinstance(value, list):
        return [_respelled(item) for item in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        is_id = key in ("traceId", "spanId", "parentSpanId") and item
        out[_snake(key)] = (
            base64.b64encode(bytes.fromhex(item)).decode() if is_id else _respelled(item)
        )
    return out


def _damaged(lines: list[bytes], rng: random.Random) -> list[bytes]:
    """Some lines respelled, some holding a bad span, a NaN attribute, garbage, zeros, or
    glued after a cut copy of themselves."""
    out = []
    for line in lines:
        roll = rng.random()
        if roll < 0.15:
            out.append(orjson.dumps(_respelled(orjson.loads(line))) + b"\n")
            continue
        if roll < 0.2:
            doc = orjson.loads(line)
            span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
            span["kind"] = 9  # no such kind: this span is a bad record, the others stay
            out.append(orjson.dumps(doc) + b"\n")
            continue
        if roll < 0.25:
            doc = orjson.loads(line)
            span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
            nan = {"key": "ratio", "value": {"doubleValue": "NaN"}}
            span["attributes"] = [*span.get("attributes", []), nan]
            out.append(orjson.dumps(doc) + b"\n")
            continue
        if roll < 0.27:
            out.append(b'{"resourceSpans": [{"scopeSpans": [\n')  # cut short
        elif roll < 0.29:  # a zero-filled region, no newline before the line after it
            out.append(b"\0" * rng.randint(1, 5000))
        elif roll < 0.31:  # a copy of the line cut short by a zero-filled region
            out.append(line[: rng.randrange(1, len(line) - 1)] + b"\0" * rng.randint(1, 50))
        elif roll < 0.33:  # a copy cut by a killed writer, the line appended right after
            out.append(line[: rng.randrange(1, len(line) - 1)])
        out.append(line)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_respelled_and_damaged_lines_give_the_sequential_outcome(
    small_traffic: Path, tmp_path: Path, seed: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Edges are read for their trace ids only where a line is in the Collector's
    spelling with canonical ids; other spellings, bad spans and garbage near the cuts
    still give what one process writes, bad records and counts included."""
    rng = random.Random(seed)
    lines = _damaged(_rebatched(small_traffic, rng, largest=rng.choice([5, 20])), rng)
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(b"".join(lines))
    idle = 400  # traces of this traffic pause for less (with 40, some are cut in two)
    expected, seq = _sequential(path, idle)
    assert seq.bad_records
    with caplog.at_level(logging.WARNING, logger="tracescore.parallel"):
        got, stats, n_parts = _parallel(path, idle, path.stat().st_size // 5)
    assert n_parts >= 3
    assert "importing in one process" not in caplog.text  # settled at the cuts
    assert got == expected
    for name in ("invocations", "records", "spans", "logs", "traces", "bad_records", "dropped"):
        assert getattr(stats, name) == getattr(seq, name), name


def _cut_lines(path: Path, lines: list[bytes], idle: int) -> tuple[list[Any], int]:
    """The parts of ``lines`` written to ``path`` (3 jobs), and the line the 2nd starts at."""
    path.write_bytes(b"".join(lines))
    parts = plan_parts(
        [str(path)], jobs=3, idle_records=idle, min_part_bytes=path.stat().st_size // 4
    )
    assert len(parts) >= 3
    starts = list(itertools.accumulate(len(line) for line in lines))
    assert parts[1].start is not None
    return parts, starts.index(parts[1].start) + 1


@pytest.mark.parametrize(("back", "settled"), [(2, True), (40, True), (None, False)])
def test_a_line_sent_again_across_a_cut(
    small_traffic: Path,
    tmp_path: Path,
    back: int | None,
    settled: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A line sent again just after a cut, ``back`` lines after the first time, is settled
    at the cut (its traces merged or their records late, as in one process); the file's
    4th line sent again there means traces two workers both finished: imported in one
    process. Same outcome either way."""
    idle = 150
    lines = _rebatched(small_traffic, random.Random(5), largest=10)
    path = tmp_path / "again.jsonl"
    _, cut = _cut_lines(path, lines, idle)
    lines.insert(cut + 1, lines[3 if back is None else cut - back])
    parts, _ = _cut_lines(path, lines, idle)
    expected, seq = _sequential(path, idle)
    assert seq.dropped["late_record"] or back == 2  # the copy does come late
    stats = ImportStats()
    out = io.BytesIO()
    with caplog.at_level(logging.WARNING, logger="tracescore.parallel"):
        write_jsonl_parallel(parts, out, stats, jobs=3, idle_records=idle)
    assert sorted(out.getvalue().splitlines()) == expected
    assert stats.dropped == seq.dropped
    assert ("importing in one process" in caplog.text) is not settled


def test_a_file_written_as_parts_come_is_cut_back_when_they_diverge(
    small_traffic: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Into a regular file, parts are written as they finish; when a later part shows
    that they diverge, the file goes back to where the import began (what was there
    before stays) and gets the one-process import."""
    idle = 150
    lines = _rebatched(small_traffic, random.Random(5), largest=10)
    path = tmp_path / "again.jsonl"
    lines.append(lines[3])  # in the last part: known only once every other is written
    parts, _ = _cut_lines(path, lines, idle)
    expected, seq = _sequential(path, idle)
    target = tmp_path / "out.jsonl"
    with target.open("w+b") as out:
        # After the import's start, bytes it must not leave behind when it goes back.
        out.write(b"kept\n" + b"x" * 2 * path.stat().st_size)
        out.seek(5)
        stats = ImportStats()
        with caplog.at_level(logging.WARNING, logger="tracescore.parallel"):
            written = write_jsonl_parallel(parts, out, stats, jobs=3, idle_records=idle)
    assert "importing in one process" in caplog.text
    head, *rest = target.read_bytes().splitlines()
    assert head == b"kept"
    assert sorted(rest) == expected
    assert written == len(rest) == seq.invocations
    assert stats.dropped == seq.dropped and stats.dropped["late_record"]


def test_after_a_fallback_each_bad_record_is_reported_once(
    small_traffic: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Bad records the workers reported are not reported again by the one-process import
    that follows, and none is lost."""
    idle = 150
    lines = _rebatched(small_traffic, random.Random(5), largest=10)
    bad = orjson.loads(lines[7])
    bad["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = "not-hex"
    lines[7] = orjson.dumps(bad) + b"\n"
    for at in (len(lines) // 2, len(lines) - 2):
        lines.insert(at, b'{"resourceSpans": [oops\n')
    lines.append(lines[3])  # a retry: the parts diverge
    parts, _ = _cut_lines(tmp_path / "bad.jsonl", lines, idle)
    path = parts[0].path

    def located(errors: list[TraceFormatError]) -> list[str]:
        return [e.located() for e in errors]

    expected: list[TraceFormatError] = []
    seq = ImportStats()
    list(
        invocations_from_batches(
            read_file(path),
            seq,
            assembler=TraceAssembler(idle_records=idle),
            on_error=expected.append,
        )
    )
    assert len(expected) == seq.bad_records == 3
    for run in (write_jsonl_parallel, import_parallel):
        reported: list[TraceFormatError] = []
        stats = ImportStats()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="tracescore.parallel"):
            if run is write_jsonl_parallel:
                write_jsonl_parallel(
                    parts, io.BytesIO(), stats, jobs=3, idle_records=idle, on_error=reported.append
                )
            else:
                import_parallel(parts, stats, jobs=3, idle_records=idle, on_error=reported.append)
        assert "importing in one process" in caplog.text
        assert sorted(located(reported)) == sorted(located(expected))
        assert stats.bad_records == seq.bad_records
