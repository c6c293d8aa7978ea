"""CutJoiner replays the assembler's rules for the traces that cross a cut.

Each case is checked against the thing it stands in for: one TraceAssembler reading the
whole input. ``_split`` feeds the same batches to one assembler per part, as the workers
do, and the joiner must release the same traces with the same records and drops, or
raise Diverged when the edges cannot settle it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import pairwise
from typing import TypedDict

import pytest
from typing_extensions import Unpack

from tracescore.assembly import AssembledTrace, TraceAssembler
from tracescore.cuts import CutJoiner, Diverged, PartEdges
from tracescore.spans import SpanRecord

IDLE = 10
#: A batch: (trace id, is root) per span.
Batch = list[tuple[str, bool]]
Released = list[tuple[str, tuple[str, ...]]]


class _Limits(TypedDict, total=False):
    max_traces: int
    max_spans_per_trace: int
    recent_records: int


def _span(trace: str, n: int, root: bool) -> SpanRecord:
    return SpanRecord(
        trace_id=trace,
        span_id=f"{n:016x}",
        parent_span_id=None if root else "f" * 16,
        name="s",
        start_ns=n,
        end_ns=n + 1,
    )


def _spans(batches: Sequence[Batch]) -> list[list[SpanRecord]]:
    out, n = [], 0
    for batch in batches:
        spans = []
        for trace, root in batch:
            n += 1
            spans.append(_span(trace, n, root))
        out.append(spans)
    return out


def _key(trace: AssembledTrace) -> tuple[str, tuple[str, ...]]:
    return trace.trace_id, tuple(s.span_id for s in trace.spans)


def _whole(batches: Sequence[Batch], **kw: Unpack[_Limits]) -> tuple[Released, Counter[str]]:
    asm = TraceAssembler(idle_records=IDLE, **kw)
    done = [t for spans in _spans(batches) for t in asm.add(spans)] + asm.flush()
    return sorted(map(_key, done)), Counter(asm.dropped)


def _split(
    batches: Sequence[Batch], cuts: Sequence[int], **kw: Unpack[_Limits]
) -> tuple[Released, Counter[str]]:
    """The batches cut before each index in ``cuts``, one assembler per part holding
    every head trace and continuing every trace (the workers' most cautious setting)."""
    spans = _spans(batches)
    bounds = [0, *cuts, len(spans)]
    like = TraceAssembler(idle_records=IDLE, **kw)
    joiner = CutJoiner(
        idle_records=IDLE,
        recent_records=like.recent_records,
        max_traces=like.max_traces,
        max_spans_per_trace=like.max_spans_per_trace,
    )
    done: list[AssembledTrace] = []
    dropped: Counter[str] = Counter()
    for i, (lo, hi) in enumerate(pairwise(bounds)):
        asm = TraceAssembler(
            idle_records=IDLE, hold_head=0 if i == 0 else 2 * IDLE, track_ids=True, **kw
        )
        for part_spans in spans[lo:hi]:
            done += asm.add(part_spans)
        complete, boundary = asm.drain(continued=frozenset(asm._pending))
        done += complete
        dropped.update(asm.dropped)
        done += joiner.add(
            PartEdges(
                records=asm.records,
                trace_ids=asm.trace_ids,
                boundary=boundary,
                released_tail=asm.released_since(2 * IDLE),
                peak_in_flight=asm.peak_in_flight,
                evictions=asm.evictions,
                largest_batch=asm.largest_batch,
            )
        )
    done += joiner.finish()
    dropped.update(joiner.dropped)
    return sorted(map(_key, done)), +dropped


def _filler(n: int, tag: str) -> list[Batch]:
    """``n`` batches of one root span each, every one its own trace."""
    return [[(f"{tag}{i}", True)] for i in range(n)]


def test_a_trace_paused_less_than_the_window_across_a_cut_is_merged() -> None:
    batches = [[("t", False)], *_filler(5, "a"), [("t", True)], *_filler(3, "b")]
    whole = _whole(batches)
    assert whole == _split(batches, [3])
    assert not whole[1]  # nothing late: one trace t with both spans
    assert ("t", ("0000000000000001", "0000000000000007")) in whole[0]


@pytest.mark.parametrize("root_first", [True, False])
def test_a_record_after_the_window_is_late_rooted_or_twice_the_window_if_not(
    root_first: bool,
) -> None:
    # t's second record comes 15 records later: past the window once its root came
    # (late), within twice the window before that (merged).
    batches = [[("t", root_first)], *_filler(15, "a"), [("t", not root_first)]]
    whole = _whole(batches)
    assert (whole[1]["late_record"] == 1) is root_first
    assert whole == _split(batches, [8])


def test_a_held_trace_that_pauses_too_long_in_its_part_cannot_be_settled() -> None:
    # t crosses the cut, then pauses 15 records inside the next part (which held it).
    batches = [*_filler(3, "a"), [("t", True)], [("t", False)], *_filler(15, "b"), [("t", False)]]
    whole = _whole(batches)
    assert whole[1]["late_record"] == 1
    with pytest.raises(Diverged, match="pauses longer"):
        _split(batches, [4])


def test_a_trace_released_near_the_end_of_a_part_makes_its_next_records_late() -> None:
    batches = [[("t", True)], *_filler(12, "a"), [("t", False), ("t", False)], *_filler(3, "b")]
    whole = _whole(batches)
    assert whole[1]["late_record"] == 2
    assert whole == _split(batches, [13])


def test_a_trace_two_parts_both_finished_cannot_be_settled() -> None:
    # Released early in part one (before its tail), comes back in the next part.
    batches = [[("t", True)], *_filler(40, "a"), [("t", False)], *_filler(3, "b")]
    assert _whole(batches)[1]["late_record"] == 1
    with pytest.raises(Diverged, match="two parts"):
        _split(batches, [35])


def test_a_trace_released_in_the_tail_of_a_part_and_back_in_the_next_is_late() -> None:
    batches = [[("t", True)], *_filler(40, "a"), [("t", False)], *_filler(3, "b")]
    assert _whole(batches) == _split(batches, [20])


def test_a_release_long_forgotten_starts_a_new_trace_on_both_sides() -> None:
    batches = [[("t", True)], *_filler(60, "a"), [("t", True)], *_filler(3, "b")]
    whole = _whole(batches, recent_records=5)
    assert not whole[1]  # forgotten after 5 records: a second trace t
    assert [k for k, _ in whole[0]].count("t") == 2
    assert whole == _split(batches, [20], recent_records=5)


def test_a_carried_trace_waits_through_a_part_shorter_than_the_window() -> None:
    batches = [[("t", False)], *_filler(2, "a"), *_filler(3, "b"), [("t", True)], *_filler(20, "c")]
    whole = _whole(batches)
    assert not whole[1]
    assert whole == _split(batches, [2, 5])


def test_merged_pieces_keep_the_span_cap_of_one_trace() -> None:
    batches = [[("t", False)] * 3, *_filler(2, "a"), [("t", True)] * 3, *_filler(12, "b")]
    whole = _whole(batches, max_spans_per_trace=4)
    assert whole[1] == Counter(trace_too_large=2)
    assert whole == _split(batches, [2], max_spans_per_trace=4)


def test_evictions_cannot_be_settled() -> None:
    batches = [[(f"t{i}", False) for i in range(5)], *_filler(3, "a")]
    with pytest.raises(Diverged, match="max_traces"):
        _split(batches, [1], max_traces=3)


@pytest.mark.parametrize(("fillers", "late"), [(9, False), (10, True)])
@pytest.mark.parametrize("cut", [4, 9])
def test_the_window_is_exact_at_a_cut(fillers: int, late: bool, cut: int) -> None:
    # t's root is record 1; its next record's batch starts after 1 + fillers records:
    # late once that reaches 1 + the window, whether or not a cut lies between.
    batches = [[("t", True)], *_filler(fillers, "a"), [("t", False)], *_filler(12, "b")]
    whole = _whole(batches)
    assert (whole[1]["late_record"] == 1) is late
    assert whole == _split(batches, [cut])
