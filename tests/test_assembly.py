from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanbuilder import TraceBuilder
from tracescore.assembly import MAX_SOURCES, AssembledTrace, TraceAssembler
from tracescore.formats.base import Batch
from tracescore.spans import LogRecord, SpanRecord


def _trace(n_children: int = 2) -> TraceBuilder:
    tb = TraceBuilder()
    root = tb.span("root")
    for i in range(n_children):
        tb.span(f"child{i}", root)
    return tb


def test_trace_released_after_idle_window_once_root_seen() -> None:
    asm = TraceAssembler(idle_records=4)
    a = _trace()
    done = asm.add(a.spans)
    assert done == []
    assert asm.in_flight == 1
    released = []
    for _ in range(3):
        released += asm.add(_trace().spans)
    assert [t.trace_id for t in released][:1] == [a.trace_id]
    assert released[0].root_seen
    assert len(released[0].spans) == 3


def test_interleaved_traces_are_kept_apart() -> None:
    asm = TraceAssembler(idle_records=1000)
    a, b = _trace(3), _trace(3)
    for sa, sb in zip(a.spans, b.spans):
        asm.add([sa, sb])
    out = {t.trace_id: len(t.spans) for t in asm.flush()}
    assert out == {a.trace_id: 4, b.trace_id: 4}
    assert asm.in_flight == 0


def test_rootless_trace_waits_twice_as_long() -> None:
    asm = TraceAssembler(idle_records=4)
    tb = TraceBuilder()
    root = tb.span("root")
    child = tb.span("child", root)
    asm.add([child])  # root never arrives (remote parent)
    released: list[AssembledTrace] = []
    steps = 0
    while not released:
        released = [t for t in asm.add(_trace(0).spans) if t.trace_id == tb.trace_id]
        steps += 1
    assert steps >= 8
    assert not released[0].root_seen


def test_late_records_after_release_are_counted_not_reassembled() -> None:
    asm = TraceAssembler(idle_records=2)
    tb = TraceBuilder()
    root = tb.span("root")
    asm.add([root])
    for _ in range(4):
        asm.add(_trace(0).spans)
    late = tb.span("late", root)
    asm.add([late])
    assert asm.dropped["late_record"] == 1
    assert all(t.trace_id != tb.trace_id for t in asm.flush())


def test_bounds_are_enforced_and_counted() -> None:
    asm = TraceAssembler(idle_records=10_000, max_traces=2, max_spans_per_trace=2)
    big = _trace(5)
    asm.add(big.spans)
    assert asm.dropped["trace_too_large"] == 4
    evicted = asm.add(_trace().spans) + asm.add(_trace().spans)
    assert [t.trace_id for t in evicted] == [big.trace_id]
    assert evicted[0].evicted
    assert asm.in_flight == 2


def test_logs_join_their_trace_and_idless_logs_are_counted() -> None:
    asm = TraceAssembler()
    tb = _trace(1)
    asm.add(tb.spans, [LogRecord(trace_id=tb.trace_id, span_id=tb.spans[0].span_id)])
    asm.add([], [LogRecord(trace_id=None, span_id=None)])
    [t] = asm.flush()
    assert len(t.logs) == 1
    assert asm.dropped["no_trace_id"] == 1


def test_bulk_gc_tunes_and_restores_the_collector() -> None:
    import gc

    from tracescore.importer import bulk_gc

    before = gc.get_threshold()
    with bulk_gc(threshold=123_456):
        assert gc.get_threshold()[0] == max(before[0], 123_456)
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def _in_collector_sight(obj: object) -> bool:
    import gc

    return any(o is obj for o in gc.get_objects())  # every generation but the frozen one


@pytest.mark.parametrize("freeze_survivors", [True, False])
def test_bulk_gc_freezes_what_survives_a_young_collection(freeze_survivors: bool) -> None:
    """Survivors of a young collection are frozen (walked once, never again), and given
    back to the collector on exit; without the option they stay in sight."""
    import gc

    from tracescore.importer import bulk_gc

    callbacks = list(gc.callbacks)
    with bulk_gc(freeze_survivors=freeze_survivors):
        kept = [[i] for i in range(10)]
        assert _in_collector_sight(kept)
        gc.collect(0)
        assert _in_collector_sight(kept) is not freeze_survivors
        gc.collect(1)  # an older collection is not followed by a freeze
        later = [[1]]
        gc.collect(0)
        assert _in_collector_sight(later) is not freeze_survivors
    assert _in_collector_sight(kept)
    assert gc.get_freeze_count() == 0
    assert gc.callbacks == callbacks


_CYCLE_CHECK = """
import gc, sys
from collections import Counter
from tracescore.importer import ImportStats, import_paths

gc.collect()
gc.disable()
gc.set_debug(gc.DEBUG_SAVEALL)
bad = []
for path in sys.argv[1:]:
    stats = ImportStats()
    assert list(import_paths([path], stats))
    bad.append(stats.bad_records)
    del stats  # with all it kept: only garbage remains
    gc.collect()
    kinds = Counter(type(o).__qualname__ for o in gc.garbage)
    print(path, len(gc.garbage), sorted(kinds.items(), key=lambda kv: -kv[1])[:8])
    gc.garbage.clear()
print("bad", *bad)
"""


def test_an_import_makes_no_reference_cycles(tmp_path: Path) -> None:
    """What bulk_gc's freeze_survivors relies on: importing, clean or damaged input, leaves
    no cyclic garbage (frozen, it would stay until the block ends).

    In a child interpreter: in the test process, threads other tests left running (an SDK
    exporter's worker, a server) make garbage of their own while the collector is off.
    """
    import subprocess
    import sys

    examples = Path(__file__).parents[1] / "examples" / "traces"
    lines = [ln for f in sorted(examples.glob("*.jsonl")) for ln in f.read_bytes().splitlines()]
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(
        b"\n".join(
            [
                *lines,
                lines[0][: len(lines[0]) // 2],  # cut short
                lines[0].replace(b'"spanId":"', b'"spanId":"zz'),  # bad ids
                lines[0].replace(b'"startTimeUnixNano":"', b'"startTimeUnixNano":"x'),
                b"[1, 2]",
            ]
        )
    )
    child = subprocess.run(
        [sys.executable, "-c", _CYCLE_CHECK, str(examples), str(damaged)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    *per_path, bad_line = child.stdout.splitlines()
    assert [row.split(" ", 2)[1] for row in per_path] == ["0", "0"], child.stdout
    bad = [int(n) for n in bad_line.split()[1:]]
    assert bad[0] == 0
    assert bad[1] >= 3


def test_paused_gc_restores_the_collector_as_it_was() -> None:
    import gc

    from tracescore.importer import paused_gc

    def failed_load() -> None:
        with paused_gc():
            assert not gc.isenabled()
            raise RuntimeError("a failed load still restores it")

    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="still restores"):
        failed_load()
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()  # it was off: stays off
    finally:
        gc.enable()


def test_paused_gc_can_freeze_what_it_built() -> None:
    """Frozen on exit, what the pause built is out of the collector's sight, and no young
    collection is due (one would walk all of it)."""
    import gc

    from tracescore.importer import paused_gc

    before = gc.get_freeze_count()
    try:
        with paused_gc(freeze=True):
            kept = [[i] for i in range(5_000)]
        assert gc.isenabled()
        assert gc.get_freeze_count() >= before + len(kept)
        assert gc.get_count()[0] < 100
        young = {id(o) for o in gc.get_objects(generation=0)}
        assert not any(id(x) in young for x in kept)
    finally:
        gc.unfreeze()


def test_head_traces_are_held_and_drained_apart() -> None:
    asm = TraceAssembler(idle_records=2, hold_head=3)
    head = _trace(2)  # 3 records, all within the head window
    later = _trace(0)
    asm.add(head.spans)
    released = []
    for _ in range(6):
        released += asm.add(_trace(0).spans)
    asm.add(later.spans)
    assert head.trace_id not in {t.trace_id for t in released}  # held despite being idle
    complete, boundary = asm.drain()
    assert [t.trace_id for t in boundary] == [head.trace_id]
    assert boundary[0].held
    assert later.trace_id in {t.trace_id for t in complete}
    assert asm.in_flight == 0


def test_drain_keeps_the_continued_tail_and_reports_recent_releases() -> None:
    asm = TraceAssembler(idle_records=2)
    first = _trace(0)
    asm.add(first.spans)
    for _ in range(4):
        asm.add(_trace(0).spans)
    assert first.trace_id in asm.released_since(100)
    assert first.trace_id not in asm.released_since(1)
    going_on, ending = _trace(0), _trace(0)
    asm.add([*going_on.spans, *ending.spans])
    complete, boundary = asm.drain(continued={going_on.trace_id, "f" * 32})
    assert [t.trace_id for t in boundary] == [going_on.trace_id]
    assert ending.trace_id in {t.trace_id for t in complete}
    assert ending.trace_id in asm.released_since(1)  # released at the end of the part
    assert asm.in_flight == 0


def test_only_head_traces_named_in_hold_only_are_held() -> None:
    known, new = _trace(0), _trace(0)
    asm = TraceAssembler(idle_records=1, hold_head=2, hold_only={known.trace_id})
    asm.add([*known.spans, *new.spans])
    released = []
    for _ in range(4):
        released += asm.add(_trace(0).spans)
    assert new.trace_id in {t.trace_id for t in released}  # an ordinary trace
    assert known.trace_id not in {t.trace_id for t in released}
    _, boundary = asm.drain()
    assert [(t.trace_id, t.held) for t in boundary] == [(known.trace_id, True)]


# --- parking: a trace's records dropped once its root arrived, its result kept instead ---


def _source(spans: Sequence[SpanRecord], logs: Sequence[LogRecord] = ()) -> Callable[[], Batch]:
    """Decodes "again": equal records, new objects, as a reader's ``reread`` gives them."""
    return lambda: Batch(
        spans=[dataclasses.replace(s) for s in spans], logs=[dataclasses.replace(r) for r in logs]
    )


def _add(
    asm: TraceAssembler, spans: Sequence[SpanRecord], logs: Sequence[LogRecord] = ()
) -> list[AssembledTrace]:
    return asm.add(spans, logs, _source(spans, logs))


def _park_all(asm: TraceAssembler) -> list[str]:
    parked = []
    for trace in asm.parkable():
        asm.park(trace, (list(trace.spans), list(trace.logs)))
        parked.append(trace.trace_id)
    return parked


def test_a_trace_is_parkable_once_its_root_arrived_and_parked_keeps_only_the_result() -> None:
    asm = TraceAssembler(idle_records=4)
    tb = TraceBuilder()
    root = tb.span("root")
    child = tb.span("child", root)
    log = tb.log(child, "gen_ai.choice")
    _add(asm, [child], [log])
    assert asm.parkable() == []  # no root yet
    _add(asm, [root])
    (trace,) = asm.parkable()
    assert trace.trace_id == tb.trace_id
    asm.park(trace, "result")
    assert trace.parked and trace.spans == [] and trace.logs == []
    assert asm.parkable() == []  # asked once per add, and parked already
    released = []
    for _ in range(8):
        released += _add(asm, _trace(0).spans)
    (done,) = [t for t in released if t.trace_id == tb.trace_id]
    assert done.parked and done.prebuilt == "result"
    assert (asm.parks, asm.restores) == (1, 0)


def test_a_record_after_parking_brings_back_the_records_in_their_order() -> None:
    tb = TraceBuilder()
    root = tb.span("root")
    a, b = tb.span("a", root), tb.span("b", root)
    la, lb = tb.log(a, "x"), tb.log(b, "y")
    batches = [([a], [la]), ([root], []), ([b], [lb])]  # a child after the root
    reference = TraceAssembler()
    parking = TraceAssembler()
    for spans, logs in batches:
        reference.add(spans, logs)
        _add(parking, spans, logs)
        _park_all(parking)
    assert (parking.parks, parking.restores) == (1, 1)
    (want,) = reference.flush()
    (got,) = parking.flush()
    assert not got.parked and got.prebuilt is None
    assert got.spans == want.spans == [a, root, b]
    assert got.logs == want.logs == [la, lb]


def test_restoring_keeps_the_span_cap_and_counts_drops_once() -> None:
    tb = TraceBuilder()
    root = tb.span("root")
    kids = [tb.span(f"k{i}", root) for i in range(3)]
    reference = TraceAssembler(max_spans_per_trace=2)
    parking = TraceAssembler(max_spans_per_trace=2)
    for spans in ([kids[0], root, kids[1]], [kids[2]]):  # the third span is over the cap
        reference.add(spans)
        _add(parking, spans)
        _park_all(parking)
    assert parking.restores == 1
    assert [s.span_id for s in parking.flush()[0].spans] == [kids[0].span_id, root.span_id]
    assert parking.dropped == reference.dropped == {"trace_too_large": 2}


def test_held_traces_and_records_without_a_source_are_never_parked() -> None:
    asm = TraceAssembler(idle_records=4, hold_head=1)
    held = _trace(0)
    _add(asm, held.spans)
    assert asm.parkable() == []  # a head trace may continue in the part before
    for sourced in (False, True):  # a record without a source first, or later on
        tb = TraceBuilder()
        root = tb.span("root")
        first, second = tb.span("child", root), tb.span("child", root)
        if sourced:
            _add(asm, [first])
        asm.add([second] if sourced else [first])  # no source: could not be decoded again
        _add(asm, [root] if sourced else [second, root])
        assert asm.parkable() == []
    with pytest.raises(ValueError, match="cannot be parked"):
        asm.park(asm.drain()[0][0], None)


def test_a_trace_spread_over_too_many_batches_lets_them_go_and_is_not_parked() -> None:
    asm = TraceAssembler()
    tb = TraceBuilder()
    root = tb.span("root")
    for i in range(MAX_SOURCES):
        _add(asm, [tb.span(f"s{i}", root)])
    (trace,) = asm.flush()
    assert trace.sources is not None and len(trace.sources) == MAX_SOURCES
    asm = TraceAssembler()
    for span in tb.spans[1:]:
        _add(asm, [span])
    _add(asm, [root])  # one batch more
    assert asm.parkable() == []
    (trace,) = asm.flush()
    assert trace.sources is None  # the batches are not kept in memory for nothing


def test_drain_hands_over_parked_boundary_traces_with_their_records() -> None:
    asm = TraceAssembler(idle_records=100)
    going_on = _trace(1)
    _add(asm, going_on.spans[1:])
    _add(asm, going_on.spans[:1])
    assert _park_all(asm) == [going_on.trace_id]
    complete, boundary = asm.drain(continued={going_on.trace_id})
    assert complete == []
    assert [s.span_id for s in boundary[0].spans] == [s.span_id for s in reversed(going_on.spans)]
    assert not boundary[0].parked and boundary[0].prebuilt is None


def test_parking_stops_when_parked_traces_keep_getting_records() -> None:
    # Written parents first: every parked trace gets its children after its root.
    asm = TraceAssembler(idle_records=10_000)
    offered = []
    for _ in range(200):
        tb = _trace(1)
        _add(asm, tb.spans[:1])
        offered.append(len(_park_all(asm)))
        _add(asm, tb.spans[1:])
    assert offered[:64] == [1] * 64
    assert sum(offered) < 80  # stopped soon after it was judged not to pay
    assert asm.restores == asm.parks


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_parking_never_changes_what_is_released(data: st.DataObject) -> None:
    """Against an assembler that never parks: the same traces, records, order and drops."""
    traces = []
    for _ in range(data.draw(st.integers(1, 5))):
        tb = TraceBuilder()
        root = tb.span("root")
        records: list[SpanRecord | LogRecord] = [tb.span(f"s{i}", root) for i in range(3)]
        records += [tb.log(root, "e") for _ in range(data.draw(st.integers(0, 2)))]
        if data.draw(st.booleans()):
            records.append(tb.span("second root"))  # a second parentless span
        records.insert(data.draw(st.integers(0, len(records))), root)
        traces.append(records)
    # Interleave the traces' records (each keeps its order), then cut into batches.
    stream: list[SpanRecord | LogRecord] = []
    cursors = [0] * len(traces)
    while any(c < len(t) for c, t in zip(cursors, traces)):
        live = [i for i, t in enumerate(traces) if cursors[i] < len(t)]
        i = data.draw(st.sampled_from(live))
        stream.append(traces[i][cursors[i]])
        cursors[i] += 1
    batches = []
    while stream:
        size = data.draw(st.integers(1, 4))
        chunk, stream = stream[:size], stream[size:]
        batches.append(
            (
                [r for r in chunk if isinstance(r, SpanRecord)],
                [r for r in chunk if isinstance(r, LogRecord)],
            )
        )
    idle, cap, most = (data.draw(st.integers(low, 6)) for low in (1, 2, 2))
    reference, parking = (
        TraceAssembler(idle_records=idle, max_spans_per_trace=cap, max_traces=most)
        for _ in range(2)
    )
    want: list[tuple[str, object]] = []
    got: list[tuple[str, object]] = []
    for spans, logs in batches:
        want += [(t.trace_id, (t.spans, t.logs)) for t in reference.add(spans, logs)]
        got += [
            (t.trace_id, t.prebuilt if t.parked else (t.spans, t.logs))
            for t in _add(parking, spans, logs)
        ]
        _park_all(parking)
    want += [(t.trace_id, (t.spans, t.logs)) for t in reference.flush()]
    got += [(t.trace_id, t.prebuilt if t.parked else (t.spans, t.logs)) for t in parking.flush()]
    assert got == want
    assert parking.dropped == reference.dropped


def test_released_ids_are_remembered_for_recent_records_only() -> None:
    """Memory: the ids kept to spot late records are those released within the last
    ``recent_records`` records, however many traces pass."""
    asm = TraceAssembler(idle_records=10, recent_records=50)
    first = TraceBuilder()
    first.span("root")
    asm.add(first.spans)
    for _ in range(1000):
        asm.add(_trace(0).spans)
    assert 0 < len(asm._recent) <= 51
    # A record of a trace released long ago starts a new trace; a recent one is late.
    recent = next(reversed(asm._recent))
    asm.add(first.spans)
    assert not asm.dropped and first.trace_id in asm._pending
    asm.add([dataclasses.replace(first.spans[0], trace_id=recent)])
    assert asm.dropped["late_record"] == 1
