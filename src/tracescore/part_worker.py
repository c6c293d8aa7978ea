"""One worker's share of a parallel import: its part, its neighbours' edges, what it sends.

:func:`run_part` imports one part of the input (:mod:`tracescore.parts`) as a sequential
import would, except for the traces that may cross a cut:

* a trace first seen in the first ``2 × idle_records`` records of a part (its *head*)
  may have begun in the part before, but only if it shows up in that part's last
  ``2 × idle_records + idle_records // 8`` records: a sequential import would have
  released it otherwise. The worker reads those records' trace ids (:func:`edge_before`:
  only the ids, see :mod:`tracescore.formats.trace_ids`; whole files of other formats
  are decoded) and *holds* only the head traces among them;
* a trace still in flight at the end of a part continues in the next one only if its id
  is among those of the next part's head, read the same way (:func:`edge_after`).

Where a part meets another file, the records before and after it are read across files
as a one-process import reads them, file after file (:class:`Neighbours`,
:func:`edge_before`, :func:`edge_after`): after a part, the next files' first records,
whatever their format (a compressed file is decompressed only as far as needed); before
it, the previous files' last records, read backwards when they are plain JSON Lines. A
previous file that cannot be read backwards (compressed, protobuf, a single document)
means every head trace is held. (A worker not told its neighbours reads the edges in its
own file only; where that is not enough, at a cut between files say, it holds every head
trace and sends back every trace in flight at its end.) A part may also be several whole
files, read one after the other (:mod:`tracescore.parts` groups small ones). Held and
continued traces go back raw (:func:`tracescore.shipping.encode_boundary`), with what
the parent needs to join them as one process would (:class:`tracescore.cuts.PartEdges`).
Reading the neighbours' edges costs each worker a scan of about two head windows
(0.06 s a side at the 200k-span benchmark's cut; 0.22 s when decoded); without it every
head trace and every trace in flight at a cut travelled back raw and was rebuilt by the
parent alone, a serial share that grew with the head window. (At a cut between files it
was so until this reading across files: the 50k-span benchmark file followed by four
small files took 3.60 s to import on two processes against 1.94 s alone, as its last
part sent back all of its ~400 traces in flight.)
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Container, Generator, Iterable, Iterator, Sequence
from contextlib import closing, nullcontext
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Final, Literal

from tracescore.assembly import TraceAssembler
from tracescore.exceptions import InputError
from tracescore.export import invocation_json
from tracescore.formats.base import Batch
from tracescore.formats.files import (
    is_json_lines,
    json_lines_between,
    read_file,
    read_json_lines,
)
from tracescore.formats.trace_ids import add_line_trace_ids
from tracescore.importer import ImportStats, bulk_gc, invocations_from_batches, trace_invocations
from tracescore.model import Invocation
from tracescore.parts import SCAN_BYTES, Part, line_start
from tracescore.shipping import dumps_deep, encode_boundary

if TYPE_CHECKING:
    # Scoring is for replay only: ``tracescore import`` never loads the criteria (their
    # imports, pydantic and the goldens' schema among them, took ~0.3 s of its start-up).
    from tracescore.prescore import Prescoring, Verdict

__all__ = [
    "COPY_BUFFER",
    "SCAN",
    "Encoding",
    "PartResult",
    "ids_before",
    "Neighbours",
    "edge_after",
    "edge_before",
    "init_worker",
    "jsonl",
    "jsonl_lines",
    "neighbours",
    "run_part",
]

logger = logging.getLogger(__name__)

#: Bytes read at once when reading a neighbour's edge backwards (grows as needed).
SCAN: Final = SCAN_BYTES
#: Buffer of a spool file (and of the parent's copy of it, see tracescore.parallel).
COPY_BUFFER: Final = 1024 * 1024


@dataclass(slots=True)
class PartResult:
    """What a worker returns for its part."""

    #: Encoded invocations; empty when they went to the part's spool file.
    output: bytes
    #: The boundary traces (:func:`encode_boundary`).
    boundary: bytes
    #: :class:`tracescore.cuts.PartEdges` but the boundary traces.
    edges: dict[str, Any]
    stats: ImportStats = field(default_factory=ImportStats)


def jsonl(invocations: Iterable[Invocation], *, model_context: bool = False) -> bytes:
    """Invocations as JSON Lines records, as ``tracescore import`` writes them.

    ``model_context`` as in :func:`tracescore.export.invocation_record`.
    """
    return b"".join(jsonl_lines(invocations, model_context=model_context))


def jsonl_lines(
    invocations: Iterable[Invocation], *, model_context: bool = False
) -> Iterator[bytes]:
    """:func:`jsonl`, one line at a time.

    Values nested deeper than orjson writes are written as text, as
    :func:`tracescore.export.write_jsonl` writes them.
    """
    return (invocation_json(i, model_context=model_context) + b"\n" for i in invocations)


#: How a worker sends its invocations back: as JSON Lines records (what ``import``
#: writes), or pickled (what ``replay`` scores: unpickling 6.7k invocations costs the
#: parent ~0.08 s with :func:`tracescore.records.quick_init`'s state methods, rebuilding
#: them from their records would cost more), or pickled with the verdicts of the turns
#: the worker scored (``scored``: :mod:`tracescore.prescore`; plain ``pickle`` when the
#: worker was started without a scoring).
Encoding = Literal["jsonl", "pickle", "scored"]


@dataclass(frozen=True, slots=True)
class Neighbours:
    """The parts around a worker's part, for reading the records across its cuts.

    Attributes:
        before: The parts before it, in input order (the nearest last).
        after: The parts after it, in input order (the nearest first).
        all_before: ``before`` starts at the beginning of the input.
        all_after: ``after`` ends at the end of the input.

    """

    before: tuple[Part, ...] = ()
    after: tuple[Part, ...] = ()
    all_before: bool = False
    all_after: bool = False


#: No neighbours told: only the part's own file is read for its edges.
_ALONE: Final = Neighbours()

#: Parts a worker is told about on each side of its own: enough to cover the edge windows
#: unless files are tiny, when what they do not cover is taken as unknown.
NEIGHBOURS: Final = 16


def neighbours(parts: Sequence[Part], index: int) -> Neighbours:
    """The :class:`Neighbours` of ``parts[index]``."""
    low = max(0, index - NEIGHBOURS)
    high = index + 1 + NEIGHBOURS
    return Neighbours(
        before=tuple(parts[low:index]),
        after=tuple(parts[index + 1 : high]),
        all_before=low == 0,
        all_after=high >= len(parts),
    )


def run_part(
    part: Part,
    idle_records: int,
    encoding: Encoding = "jsonl",
    model_context: bool = True,
    spool: str | None = None,
    slot: int | None = None,
    around: Neighbours = _ALONE,
) -> PartResult:
    """Worker: import one part; return its encoded invocations and its boundary traces.

    With ``spool`` (JSON Lines only), the invocations are written to that new file as
    they come instead of returned. With ``slot``, the bytes of the part read so far are
    kept in that slot of the progress array the worker was started with. ``around``
    tells the parts next to it, whose edges are then read across files too.
    """
    stats = ImportStats()
    head = 2 * idle_records
    with bulk_gc():
        # The records before the part are read to learn which of its head traces may
        # have begun earlier (the others are built here).
        window = head + max(1, idle_records // 8)
        # (Nothing before the first part: it holds no head, whatever this says.)
        hold_only = None if part.first else edge_before(part, around, window)
        asm = TraceAssembler(
            idle_records=idle_records,
            hold_head=0 if part.first else head,
            hold_only=hold_only,
            track_ids=True,
        )
        if part.start is None or part.end is None:
            batches = _read_files(part.paths)
        else:
            shared = _worker_progress
            report = None if slot is None or shared is None else partial(shared.__setitem__, slot)
            batches = read_json_lines(
                part.path, part.start, part.end, part.first_line or 1, progress=report
            )
        found = invocations_from_batches(
            batches, stats, assembler=asm, finish=False, model_context=model_context
        )
        opened = open(spool, "xb", buffering=COPY_BUFFER) if spool else None  # noqa: SIM115
        with opened or _NO_FILE as spooled:
            # Encoded as they come (JSON Lines) or kept; either way consumed before the
            # drain.
            encoded, kept = b"", []
            if spooled is not None:
                spooled.writelines(jsonl_lines(found, model_context=model_context))
            elif encoding == "jsonl":
                encoded = jsonl(found, model_context=model_context)
            else:
                kept = list(found)
            continued = frozenset() if part.last else edge_after(part, around, head)
            complete, boundary = asm.drain(continued=continued)
            kept.extend(
                i
                for t in complete
                for i in trace_invocations(t, stats, model_context=model_context)
            )
            if spooled is not None:
                spooled.writelines(jsonl_lines(kept, model_context=model_context))
                output = b""
            elif encoding == "jsonl":
                output = encoded + jsonl(kept, model_context=model_context)
            else:  # our own worker's objects, read back only by the parent that started it
                payload = kept if encoding != "scored" else _with_verdicts(kept)
                output = dumps_deep(payload)
        stats.dropped.update(asm.dropped)
        raw = encode_boundary(boundary)
        edges = {
            "records": asm.records,
            "trace_ids": asm.trace_ids,
            "released_tail": asm.released_since(head),
            "peak_in_flight": asm.peak_in_flight,
            "evictions": asm.evictions,
            "largest_batch": asm.largest_batch,
        }
    return PartResult(output, raw, edges, stats)


def _with_verdicts(
    kept: list[Invocation],
) -> list[Invocation] | tuple[list[Invocation], list[Verdict | None]]:
    """``kept`` and the verdicts of its turns, or ``kept`` alone if it cannot be scored.

    Built-in criteria never raise, but a user's ``evaluate`` may: then the parent scores
    these turns itself, and meets (and reports) the error as a one-process replay does.
    """
    if _worker_scoring is None:
        return kept
    from tracescore.prescore import prescore  # noqa: PLC0415 - loaded: replay set the scoring

    try:
        return kept, prescore(kept, _worker_scoring)
    except Exception:  # any error: the parent scores these turns and reports it
        logger.debug("scoring in the worker failed; the parent scores its part", exc_info=True)
        return kept


_NO_FILE: Final = nullcontext()
#: In a worker started for a progress display: bytes read per part (shared memory).
_worker_progress: Any = None
#: In a worker forked to score as well: the criteria and goldens (tracescore.prescore).
_worker_scoring: Prescoring | None = None


def init_worker(progress: Any, scoring: Prescoring | None = None) -> None:
    """Start-up of a worker process: the shared progress array and the scoring (or None)."""
    global _worker_progress, _worker_scoring  # noqa: PLW0603 - set once per worker process
    _worker_progress = progress
    _worker_scoring = scoring


class _All:
    """Contains every trace id."""

    def __contains__(self, item: object) -> bool:
        return True


_ALL: Final = _All()


def edge_after(part: Part, around: Neighbours, records: int) -> Container[str]:
    """Trace ids of (at least) the first ``records`` records of the input after ``part``.

    The rest of the part's file comes first, then the files of ``around.after`` in order,
    each read from its start in its own format (only as far as needed). When those end
    before ``records`` without reaching the end of the input, or a file cannot be read,
    every id (a trace in flight at the end of the part then goes back raw).
    """
    ids: set[str] = set()
    seen = 0
    covered: set[str] = set()
    try:
        if part.end is not None:
            covered.add(part.path)
            seen = _take(_range_ids(part.path, part.end, sys.maxsize, ids), records)
        for later in around.after:
            if seen >= records:
                break
            if later.path in covered:  # read already, to its end
                continue
            covered.update(later.paths)
            counts = (
                _batch_ids(_read_files(later.paths), ids)
                if later.start is None
                else _range_ids(later.path, later.start, sys.maxsize, ids)
            )
            seen += _take(counts, records - seen)
    except (InputError, OSError):  # that file's own worker reports it
        return _ALL
    return frozenset(ids) if seen >= records or around.all_after else _ALL


def _read_files(paths: Sequence[str]) -> Generator[Batch, None, None]:
    """The batches of whole files, one after the other (as a one-process import)."""
    for path in paths:
        yield from read_file(path)


def _take(counts: Generator[int, None, None], records: int) -> int:
    """Run ``counts`` (the records of each line or batch read) until ``records``; the total.

    The reader is closed as soon as enough is read (its file with it).
    """
    seen = 0
    with closing(counts):
        for count in counts:
            seen += count
            if seen >= records:
                break
    return seen


def _range_ids(path: str, start: int, end: int, ids: set[str]) -> Generator[int, None, None]:
    """Add the trace ids of the JSON Lines from ``start`` to ``ids``, line by line.

    Each step yields the line's record count. Only the ids are read (much faster than
    decoding the spans, see :mod:`tracescore.formats.trace_ids`).
    """
    with closing(json_lines_between(path, start, end)) as lines:
        for line in lines:
            yield add_line_trace_ids(line, ids)


def _batch_ids(batches: Generator[Batch, None, None], ids: set[str]) -> Generator[int, None, None]:
    """Add the trace ids of ``batches`` to ``ids``; each step yields a batch's records."""
    with closing(batches):
        for batch in batches:
            yield _add_trace_ids(batch, ids)


def edge_before(part: Part, around: Neighbours, records: int) -> frozenset[str] | None:
    """Trace ids of (at least) the last ``records`` records of the input before ``part``.

    The part's own file before it comes first (read backwards), then the files of
    ``around.before``, the nearest first, each read backwards from its end. None (every
    head trace held) when one of those needed is not plain JSON Lines (it cannot be read
    backwards) or cannot be read, or the parts known end before ``records`` without
    reaching the start of the input.
    """
    ids: set[str] = set()
    seen = 0
    covered: set[str] = set()
    if part.start is not None:  # a range: its own file first, back to its start
        covered.add(part.path)
        if part.start:
            try:
                found, seen = ids_before(part.path, part.start, records)
            except (InputError, OSError):
                return None
            ids |= found
    for earlier in reversed(around.before):
        if earlier.path in covered:  # read already, back to its start
            continue
        covered.add(earlier.path)
        ranges = (
            [(earlier.path, earlier.end)]
            if earlier.end is not None
            else [(path, None) for path in reversed(earlier.paths)]
        )
        for path, end in ranges:
            if seen >= records:
                return frozenset(ids)
            try:
                if end is None and not is_json_lines(path):
                    return None
                found, count = ids_before(
                    path, os.path.getsize(path) if end is None else end, records - seen
                )
            except (InputError, OSError):
                return None
            ids |= found
            seen += count
    return frozenset(ids) if seen >= records or around.all_before else None


def ids_before(path: str, end: int, records: int) -> tuple[frozenset[str], int]:
    """Trace ids of (at least) the last ``records`` records before byte ``end``; the count.

    The count is of the records read: fewer than asked when the file starts sooner.
    ``end`` is a line start. The file is read backwards in blocks of whole lines, each
    block sized from the bytes per record seen so far.
    """
    ids: set[str] = set()
    seen = 0
    hi, step = end, SCAN
    with open(path, "rb") as stream:
        while seen < records and hi > 0:
            lo = line_start(stream, max(0, hi - step))
            if lo >= hi:  # one line longer than the block
                step *= 2
                continue
            seen += sum(_range_ids(path, lo, hi, ids))
            if seen:
                step = max(SCAN, int((records - seen) * (end - lo) / seen * 1.1))
            else:
                step *= 2
            hi = lo
    return frozenset(ids), seen


def _add_trace_ids(batch: Batch, ids: set[str]) -> int:
    """Add the batch's trace ids to ``ids``; return its record count (the assembler's)."""
    ids.update(span.trace_id for span in batch.spans)
    ids.update(log.trace_id for log in batch.logs if log.trace_id)
    return len(batch.spans) + len(batch.logs)
