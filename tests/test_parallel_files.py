"""A parallel import over several files: the cuts between files are read across, as one
process reads the files one after the other, and inputs of small files stay in one process."""

from __future__ import annotations

import gzip
import io
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tracescore import parts
from tracescore.assembly import TraceAssembler
from tracescore.export import write_jsonl
from tracescore.formats.base import Batch
from tracescore.formats.files import read_file
from tracescore.importer import ImportStats, invocations_from_batches
from tracescore.parallel import parallel_parts, write_jsonl_parallel
from tracescore.part_worker import (
    NEIGHBOURS,
    Neighbours,
    PartResult,
    edge_after,
    edge_before,
    neighbours,
    run_part,
)
from tracescore.parts import Part, plan_parts
from tracescore.shipping import decode_boundary

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import gen_traces

IDLE = 400


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    path = tmp_path_factory.mktemp("files") / "traffic.jsonl"
    gen_traces.generate(4000, path, seed=5)
    return path.read_bytes().splitlines(keepends=True)


def _write(path: Path, chunk: list[bytes]) -> Path:
    data = b"".join(chunk)
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


def _cut(lines: list[bytes], tmp_path: Path, names: list[str], shares: list[int]) -> list[Path]:
    """The lines, in order, spread over files named ``names`` by relative ``shares``."""
    total, at, files = sum(shares), 0, []
    for name, share in zip(names, shares, strict=True):
        n = len(lines) * share // total if name != names[-1] else len(lines) - at
        files.append(_write(tmp_path / name, lines[at : at + n]))
        at += n
    return files


def _batches(paths: list[Path]) -> Iterator[Batch]:
    for path in paths:
        yield from read_file(str(path))


def _ids(paths: list[Path]) -> list[set[str]]:
    return [{s.trace_id for b in read_file(str(p)) for s in b.spans} for p in paths]


def _sequential(paths: list[Path]) -> list[bytes]:
    out = io.BytesIO()
    found = invocations_from_batches(
        _batches(paths),
        ImportStats(),
        assembler=TraceAssembler(idle_records=IDLE),
        model_context=False,  # as write_jsonl_parallel (and tracescore import) by default
    )
    write_jsonl(found, out)
    return sorted(out.getvalue().splitlines())


def _parallel(plan: list[Part]) -> list[bytes]:
    out = io.BytesIO()
    write_jsonl_parallel(plan, out, ImportStats(), jobs=3, idle_records=IDLE)
    return sorted(out.getvalue().splitlines())


def _sent(result: PartResult) -> set[str]:
    return {t.trace_id for t in decode_boundary(result.boundary)}


def test_files_of_every_kind_import_in_parallel_as_in_one_process(
    lines: list[bytes], tmp_path: Path
) -> None:
    """Plain, gzip and tiny files in a row, traces crossing every cut between them."""
    names = ["a.jsonl", "b.jsonl.gz", "c.jsonl", "d.jsonl", "e.jsonl.gz", "f.jsonl"]
    assert len(lines) > 30
    files = _cut(lines, tmp_path, names, [8, 4, 8, 1, 2, 6])
    ids = _ids(files)
    assert all(ids[k] & ids[k + 1] for k in range(len(ids) - 1))  # every cut is crossed
    plan = plan_parts([str(f) for f in files], jobs=3, idle_records=IDLE, min_part_bytes=1_000_000)
    assert len(plan) > len(files)  # the large plain files are split too
    assert _parallel(plan) == _sequential(files)


def test_at_a_cut_between_files_only_the_traces_crossing_it_travel_back(
    lines: list[bytes], tmp_path: Path
) -> None:
    a, b = _cut(lines, tmp_path, ["a.jsonl", "b.jsonl"], [1, 1])
    crossing = set.intersection(*_ids([a, b]))
    assert crossing
    plan = [Part(str(a), first=True), Part(str(b), last=True)]
    # Without its neighbours a worker sends back every trace in flight at its end, and
    # holds every trace first seen in its head.
    blind_tail, blind_head = run_part(plan[0], IDLE), run_part(plan[1], IDLE)
    tail = run_part(plan[0], IDLE, around=neighbours(plan, 0))
    head = run_part(plan[1], IDLE, around=neighbours(plan, 1))
    assert _sent(tail) <= crossing and _sent(head) <= crossing
    assert len(_sent(tail)) < len(_sent(blind_tail)) / 2
    assert len(_sent(head)) < len(_sent(blind_head)) / 2
    assert _parallel(plan) == _sequential([a, b])


def test_a_compressed_file_before_a_part_means_its_whole_head_is_held(
    lines: list[bytes], tmp_path: Path
) -> None:
    """A gzip file cannot be read backwards: the head is held, the tail still read."""
    a, b = _cut(lines, tmp_path, ["a.jsonl.gz", "b.jsonl"], [1, 1])
    plan = [Part(str(a), first=True), Part(str(b), last=True)]
    window = 2 * IDLE + IDLE // 8
    assert edge_before(plan[1], neighbours(plan, 1), window) is None
    after = edge_after(plan[0], neighbours(plan, 0), 2 * IDLE)
    assert isinstance(after, frozenset) and after <= _ids([b])[0]
    assert _parallel(plan) == _sequential([a, b])


def test_edges_unknown_beyond_the_neighbours_told_are_taken_whole(
    lines: list[bytes], tmp_path: Path
) -> None:
    tiny = _cut(lines[:6], tmp_path, ["t1.jsonl", "t2.jsonl", "t3.jsonl"], [1, 1, 1])
    plan = [Part(str(p)) for p in tiny]
    records = 10 * IDLE  # more than the three tiny files hold
    every = set().union(*_ids(tiny[1:]))
    # The input ends after them: what they hold is all there is.
    assert edge_after(plan[0], Neighbours(after=tuple(plan[1:]), all_after=True), records) == every
    # More parts follow, not told: any trace may continue.
    unknown = edge_after(plan[0], Neighbours(after=tuple(plan[1:])), records)
    assert "any-id" in unknown
    before = Neighbours(before=tuple(plan[:2]))
    assert edge_before(plan[2], before, records) is None
    known = edge_before(plan[2], Neighbours(before=tuple(plan[:2]), all_before=True), records)
    assert known is not None and set(known) == set().union(*_ids(tiny[:2]))
    missing = Part(str(tmp_path / "gone.jsonl"))
    assert "any-id" in edge_after(plan[0], Neighbours(after=(missing,), all_after=True), 5)
    assert edge_before(plan[0], Neighbours(before=(missing,), all_before=True), 5) is None


def test_neighbours_are_bounded_on_each_side() -> None:
    plan = [Part(f"p{k}.jsonl") for k in range(40)]
    middle = neighbours(plan, 20)
    assert middle.before == tuple(plan[20 - NEIGHBOURS : 20])
    assert middle.after == tuple(plan[21 : 21 + NEIGHBOURS])
    assert not middle.all_before and not middle.all_after
    first, last = neighbours(plan, 0), neighbours(plan, 39)
    assert first.before == () and first.all_before
    assert last.after == () and last.all_after


def test_files_read_whole_are_grouped_into_parts_of_a_worthwhile_size(
    lines: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A part of one small file is nearly all edges: its worker would decode more of its
    neighbours than of its own, and send most of its traces back raw."""
    chunk = lines[: len(lines) // 6]
    same = [str(_write(tmp_path / f"same{k}.jsonl", chunk)) for k in range(6)]  # equal sizes
    size = Path(same[0]).stat().st_size
    assert 6 * size < 8 * 1024 * 1024  # under one 8 MiB part: one group, one process
    one = plan_parts(same, jobs=2, idle_records=IDLE)
    assert [p.paths for p in one] == [tuple(same)]
    assert one[0].first and one[0].last and one[0].start is None
    assert parallel_parts(same, jobs=2, idle_records=IDLE, strict=False) is None
    # About total / jobs each, never under the minimum part.
    halves = plan_parts(same, jobs=2, idle_records=IDLE, min_part_bytes=2 * size)
    assert [p.paths for p in halves] == [tuple(same[:3]), tuple(same[3:])]
    assert [p.path for p in halves] == [same[0], same[3]]
    thirds = plan_parts(same, jobs=1, idle_records=IDLE, min_part_bytes=2 * size)
    assert [len(p.paths) for p in thirds] == [6]  # one job: one part of everything
    # Never over the largest part (256 MiB; lowered here); a small remainder joins the
    # part before it.
    monkeypatch.setattr(parts, "_MAX_PART_BYTES", 2 * size)
    capped = plan_parts(same, jobs=1, idle_records=IDLE, min_part_bytes=1)
    assert [len(p.paths) for p in capped] == [2, 2, 2]
    monkeypatch.setattr(parts, "_MAX_PART_BYTES", 4 * size)
    joined = plan_parts(same[:5], jobs=1, idle_records=IDLE, min_part_bytes=1)
    assert [len(p.paths) for p in joined] == [5]  # 4, then 1 under half of 4: joined


def test_runs_of_whole_files_beside_a_split_file_keep_the_input_order(
    lines: list[bytes], tmp_path: Path
) -> None:
    half = len(lines) // 2
    small = _cut(lines[:half], tmp_path, [f"s{k}.jsonl" for k in range(5)], [1] * 5)
    total = sum(p.stat().st_size for p in small)
    big = _write(tmp_path / "big.jsonl", lines[half:])
    assert big.stat().st_size >= total
    order = [*small[:2], big, *small[2:]]
    plan = plan_parts([str(p) for p in order], jobs=2, idle_records=IDLE, min_part_bytes=total // 2)
    ranges = [k for k, p in enumerate(plan) if p.start is not None]
    assert len(ranges) >= 2 and {plan[k].path for k in ranges} == {str(big)}  # big is split
    before = [path for p in plan[: ranges[0]] for path in p.paths]
    after = [path for p in plan[ranges[-1] + 1 :] for path in p.paths]
    assert (before, after) == ([str(p) for p in small[:2]], [str(p) for p in small[2:]])
    assert len(plan) <= len(ranges) + 4  # the small files in few parts
    assert _parallel(plan) == _sequential(order)


def test_edges_are_read_through_the_files_of_a_group(lines: list[bytes], tmp_path: Path) -> None:
    files = _cut(lines, tmp_path, ["a.jsonl", "b.jsonl", "c.jsonl", "d.jsonl"], [1, 1, 1, 1])
    names = [str(f) for f in files]
    plan = [
        Part(names[0], more=(names[1],), first=True),
        Part(names[2], more=(names[3],), last=True),
    ]
    ids = _ids(files)
    every = 10 * len(lines) * 200  # more records than the files hold: each read whole
    assert edge_after(plan[0], neighbours(plan, 0), every) == ids[2] | ids[3]
    before = edge_before(plan[1], neighbours(plan, 1), every)
    assert before is not None and set(before) == ids[0] | ids[1]
    crossing = (ids[0] | ids[1]) & (ids[2] | ids[3])
    assert _sent(run_part(plan[1], IDLE, around=neighbours(plan, 1))) <= crossing
    assert _parallel(plan) == _sequential(files)
    gz = [names[0], str(_write(tmp_path / "b2.jsonl.gz", lines[len(lines) // 4 : len(lines) // 2]))]
    after_gz = [Part(gz[0], more=(gz[1],), first=True), plan[1]]
    assert edge_before(after_gz[1], neighbours(after_gz, 1), every) is None  # gzip: not backwards


def test_a_fallback_to_one_process_reads_every_file_of_every_group(
    lines: list[bytes], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same records in two groups (a retried export): the cuts cannot settle it."""
    chunk = lines[: len(lines) // 4]
    same = [_write(tmp_path / f"same{k}.jsonl", chunk) for k in range(4)]
    size = same[0].stat().st_size
    plan = plan_parts([str(p) for p in same], jobs=2, idle_records=IDLE, min_part_bytes=2 * size)
    assert [len(p.paths) for p in plan] == [2, 2]
    with caplog.at_level("WARNING", logger="tracescore.parallel"):
        got = _parallel(plan)
    assert "importing in one process" in caplog.text
    assert got == _sequential(same)
