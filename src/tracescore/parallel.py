"""Import large inputs on several processes, each worker encoding its own output.

Plain JSON Lines files are cut at line boundaries into parts; other inputs (gzip,
protobuf, single documents) are one part each (:mod:`tracescore.parts`). A worker
assembles traces, rebuilds invocations and *encodes its output* (JSON Lines records)
for its part exactly as a sequential import would, except for the few traces that
cross a cut:

* a trace first seen in the first ``2 × idle_records`` records of a part (its *head*)
  may have begun in the part before, but only if it shows up in that part's last
  ``2 × idle_records + idle_records // 8`` records: a sequential import would have
  released it otherwise. The worker reads those records' trace ids (decoding them, not
  assembling them) and *holds* only the head traces among them;
* a trace still in flight at the end of a part continues in the next one only if its id
  is among those of the next part's head, which the worker reads the same way.

Where a part meets another file instead (a compressed file, say), all its head traces are
held and all its traces in flight at the end continue.

Workers send held and continued traces back raw; the parent merges them by trace id in
part order and rebuilds them; a held trace the previous part had already released
counts as late records, as in a sequential import. Reading the neighbours' edges costs
each worker a decode of about two head windows; without it every head trace and every
trace in flight at a cut travelled back raw and was rebuilt by the parent alone, a
serial share that grew with the head window. For ``import``, workers encode their
output (JSON Lines) rather than send invocation objects for the same reason: the parent
only writes it, where unpickling thousands of dataclasses would cost it more than a
worker's whole share of the work. Each worker writes its lines to a spool file of its
own, which the parent appends to the output in part order with ``sendfile`` (a copy
inside the kernel): sent back through the result pipe, a half of the 200k-span
benchmark (18 MB) took ~45 ms to arrive and ~30 ms more to be written, all of it
after the workers were done. ``replay`` needs the objects (it scores them in the
parent), so there workers send them pickled (:func:`import_parallel`).

Results are taken in part order, with at most ``jobs + 1`` parts in flight, so memory
is bounded by the part size, not the input size.
"""

from __future__ import annotations

import base64
import logging
import multiprocessing
import os
import pickle
import shutil
import stat
import sys
import tempfile
import threading
from collections import Counter, deque
from collections.abc import Callable, Container, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, wait
from contextlib import closing, nullcontext
from dataclasses import dataclass, field, fields
from functools import partial
from typing import IO, Any, Final, Literal

import orjson

from tracescore.assembly import AssembledTrace, TraceAssembler
from tracescore.cuts import CutJoiner, Diverged, PartEdges
from tracescore.exceptions import TraceFormatError
from tracescore.export import invocation_record
from tracescore.formats.base import Batch
from tracescore.formats.files import read_file, read_json_lines
from tracescore.importer import ImportStats, bulk_gc, invocations_from_batches, trace_invocations
from tracescore.model import Invocation
from tracescore.parts import SCAN_BYTES, Part, line_start, located, plan_parts
from tracescore.spans import LogRecord, Origin, SpanEvent, SpanRecord

__all__ = [
    "Part",
    "import_parallel",
    "parallel_parts",
    "plan_parts",
    "resolve_jobs",
    "write_jsonl_parallel",
]

logger = logging.getLogger(__name__)

#: Bytes read at once when reading a neighbour's edge backwards (grows as needed).
_SCAN: Final = SCAN_BYTES
_COPY_BUFFER: Final = 1024 * 1024


@dataclass(slots=True)
class _PartResult:
    #: Encoded invocations; empty when they went to the part's spool file.
    output: bytes
    #: The boundary traces, as JSON (see :func:`_shipped`).
    boundary: bytes
    #: :class:`tracescore.cuts.PartEdges` but the boundary traces.
    edges: dict[str, Any]
    stats: ImportStats = field(default_factory=ImportStats)


def _jsonl(invocations: Iterable[Invocation]) -> bytes:
    return b"".join(_lines(invocations))


def _lines(invocations: Iterable[Invocation]) -> Iterator[bytes]:
    dumps = orjson.dumps
    return (dumps(invocation_record(i), default=str) + b"\n" for i in invocations)


#: How a worker sends its invocations back: as JSON Lines records (what ``import``
#: writes), or pickled (what ``replay`` scores: unpickling 6.7k invocations costs the
#: parent ~0.2 s, rebuilding them from their records would cost more).
_Encoding = Literal["jsonl", "pickle"]


def _run_part(
    part: Part,
    idle_records: int,
    encoding: _Encoding = "jsonl",
    model_context: bool = True,
    spool: str | None = None,
    slot: int | None = None,
) -> _PartResult:
    """Worker: import one part; return its encoded invocations and its boundary traces.

    With ``spool`` (JSON Lines only), the invocations are written to that new file as
    they come instead of returned. With ``slot``, the bytes of the part read so far are
    kept in that slot of the progress array the worker was started with.
    """
    stats = ImportStats()
    head = 2 * idle_records
    with bulk_gc():
        # Next to another range of the same file, the neighbour's edge is read to learn
        # which traces cross the cut; next to another file, every head trace is held and
        # the whole tail sent back, as that file may be compressed or a single document.
        hold_only = None
        if part.start:
            hold_only = _ids_before(part.path, part.start, head + max(1, idle_records // 8))
        asm = TraceAssembler(
            idle_records=idle_records,
            hold_head=0 if part.first else head,
            hold_only=hold_only,
            track_ids=True,
        )
        if part.start is None or part.end is None:
            batches = read_file(part.path)
        else:
            shared = _worker_progress
            report = None if slot is None or shared is None else partial(shared.__setitem__, slot)
            batches = read_json_lines(
                part.path, part.start, part.end, part.first_line or 1, progress=report
            )
        found = invocations_from_batches(
            batches, stats, assembler=asm, finish=False, model_context=model_context
        )
        opened = open(spool, "xb", buffering=_COPY_BUFFER) if spool else None  # noqa: SIM115
        with opened or _NO_FILE as spooled:
            # Encoded as they come (JSON Lines) or kept; either way consumed before the
            # drain.
            encoded, kept = b"", []
            if spooled is not None:
                spooled.writelines(_lines(found))
            elif encoding == "jsonl":
                encoded = _jsonl(found)
            else:
                kept = list(found)
            continued: Container[str] = _ALL
            if part.last:
                continued = frozenset()
            elif part.end is not None and part.end < os.path.getsize(part.path):
                continued = _ids_after(part, head)
            complete, boundary = asm.drain(continued=continued)
            kept.extend(
                i
                for t in complete
                for i in trace_invocations(t, stats, model_context=model_context)
            )
            if spooled is not None:
                spooled.writelines(_lines(kept))
                output = b""
            elif encoding == "jsonl":
                output = encoded + _jsonl(kept)
            else:  # our own worker's objects, read back only by the parent that started it
                output = pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL)
        stats.dropped.update(asm.dropped)
        raw = orjson.dumps([_shipped(t) for t in boundary], default=_bytes_default)
        edges = {
            "records": asm.records,
            "trace_ids": asm.trace_ids,
            "released_tail": asm.released_since(head),
            "peak_in_flight": asm.peak_in_flight,
            "evictions": asm.evictions,
            "largest_batch": asm.largest_batch,
        }
    return _PartResult(output, raw, edges, stats)


_NO_FILE: Final = nullcontext()
#: In a worker started for a progress display: bytes read per part (shared memory).
_worker_progress: Any = None


def _init_worker(progress: Any) -> None:
    global _worker_progress  # noqa: PLW0603 - one per worker process, set once at start
    _worker_progress = progress


class _All:
    """Contains every trace id."""

    def __contains__(self, item: object) -> bool:
        return True


_ALL: Final = _All()


def _ids_after(part: Part, records: int) -> frozenset[str]:
    """Trace ids of the first ``records`` records after ``part`` (the next part's head).

    Whole lines are read, so a few more records may be covered: a larger set only sends
    more traces back raw, never fewer.
    """
    assert part.end is not None
    ids: set[str] = set()
    seen = 0
    with closing(read_json_lines(part.path, part.end, sys.maxsize, 0)) as batches:
        for batch in batches:
            seen += _add_trace_ids(batch, ids)
            if seen >= records:
                break
    return frozenset(ids)


def _ids_before(path: str, end: int, records: int) -> frozenset[str]:
    """Trace ids of (at least) the last ``records`` records before byte ``end``.

    ``end`` is a line start. The file is read backwards in blocks of whole lines, each
    block sized from the bytes per record seen so far.
    """
    ids: set[str] = set()
    seen = 0
    hi, step = end, _SCAN
    with open(path, "rb") as stream:
        while seen < records and hi > 0:
            lo = line_start(stream, max(0, hi - step))
            if lo >= hi:  # one line longer than the block
                step *= 2
                continue
            for batch in read_json_lines(path, lo, hi, 0):
                seen += _add_trace_ids(batch, ids)
            if seen:
                step = max(_SCAN, int((records - seen) * (end - lo) / seen * 1.1))
            else:
                step *= 2
            hi = lo
    return frozenset(ids)


def _add_trace_ids(batch: Batch, ids: set[str]) -> int:
    """Add the batch's trace ids to ``ids``; return its record count (the assembler's)."""
    ids.update(span.trace_id for span in batch.spans)
    ids.update(log.trace_id for log in batch.logs if log.trace_id)
    return len(batch.spans) + len(batch.logs)


def resolve_jobs(jobs: int) -> int:
    """``jobs``, or one per CPU for 0."""
    return jobs or os.cpu_count() or 1


def parallel_parts(
    files: Sequence[str], *, jobs: int, idle_records: int, strict: bool
) -> list[Part] | None:
    """The parts of a parallel import of ``files``, or None when it runs in one process.

    In one process when: one job (``jobs`` 0 means one per CPU), ``strict`` (the first
    bad record stops everything), stdin among the inputs, or nothing to split.
    """
    jobs = resolve_jobs(jobs)
    if jobs < 2 or strict or "-" in files:
        return None
    parts = plan_parts(files, jobs=jobs, idle_records=idle_records)
    return parts if len(parts) > 1 else None


def write_jsonl_parallel(
    parts: Sequence[Part],
    out: IO[bytes],
    stats: ImportStats,
    *,
    jobs: int,
    idle_records: int,
    on_error: Callable[[TraceFormatError], None] | None = None,
    model_context: bool = True,
    spool_dir: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Import ``parts`` on ``jobs`` processes and write JSON Lines to ``out``.

    ``model_context`` as in :func:`tracescore.importer.invocations_from_batches`.
    Workers write their lines to spool files in a new directory under ``spool_dir``
    (default: the system's temporary directory), removed before returning. They hold
    the output on its way to ``out``, each deleted once appended, so that directory
    needs room for up to the output's size again. Writing a file, pass its directory.

    Should the parts' edges not settle what a one-process import would write
    (:mod:`tracescore.cuts`), the input is imported again in this process, and that is
    what ``out`` gets: a regular file is written as parts come and cut back to where it
    was; any other ``out`` gets nothing before every part is done.

    ``progress``, when given, is called in this thread with the input bytes read so far
    and the input's size: every ~0.2 s while the workers run (reading a range of a file,
    a worker reports as it goes; a whole file counts when it is done), and after each
    part. It starts no thread, so workers are still forked where that is safe.

    Returns:
        How many invocations were written.

    """
    written = stats.invocations
    errors = _CountedErrors(on_error)
    found = ImportStats()
    # Into a regular file, parts are written as they come (and cut off again if the
    # parts diverge); anywhere else, once every part is done.
    rewind = _position(out)
    held: list[bytes | _Spooled] = []
    # The chunks are closed before the directory goes: closing waits for the workers.
    with tempfile.TemporaryDirectory(prefix=".tracescore-", dir=spool_dir) as spool:
        chunks = _import_chunks(
            parts, found, "jsonl", jobs, idle_records, errors, model_context, spool, progress
        )
        try:
            with closing(chunks):
                for chunk in chunks:
                    ready = chunk if isinstance(chunk, bytes | _Spooled) else _jsonl(chunk)
                    if rewind is None:
                        held.append(ready)
                    else:
                        _write(ready, out)
            for ready in held:
                _write(ready, out)
            stats.merge(found)
            return stats.invocations - written
        except Diverged as why:
            _log_fallback(why)
    if rewind is not None:
        out.seek(rewind)
        out.truncate()
    out.writelines(_lines(_one_process(parts, stats, idle_records, errors, model_context)))
    return stats.invocations - written


def _position(out: IO[bytes]) -> int | None:
    """Where ``out`` is, if it is a regular file it can go back to; else None."""
    try:
        if not out.seekable() or not stat.S_ISREG(os.fstat(out.fileno()).st_mode):
            return None
        out.flush()
        return out.tell()
    except (AttributeError, OSError, ValueError):  # no descriptor (io.BytesIO), closed
        return None


def _write(chunk: bytes | _Spooled, out: IO[bytes]) -> None:
    if isinstance(chunk, _Spooled):
        _append(chunk.path, out)
        os.unlink(chunk.path)
    else:
        out.write(chunk)


class _CountedErrors:
    """Passes bad records on; after a fallback, only those not passed on before.

    Workers report up to a few dozen bad records per part as parts finish; the
    one-process import that may follow meets them all again, in input order.
    """

    def __init__(self, on_error: Callable[[TraceFormatError], None] | None) -> None:
        self._on_error = on_error
        #: Bad records passed on, by location and detail (two may share both).
        self._reported: Counter[str] = Counter()
        self._again = False

    def __call__(self, error: TraceFormatError) -> None:
        key = error.located()
        if self._again and self._reported[key]:
            self._reported[key] -= 1
            return
        if not self._again:
            self._reported[key] += 1
        if self._on_error is not None:
            self._on_error(error)

    def again(self) -> None:
        """The input is read again from the start: skip what was already reported."""
        self._again = True


def _log_fallback(why: Diverged) -> None:
    logger.warning("importing in one process for the same outcome: %s", why)


def _one_process(
    parts: Sequence[Part],
    stats: ImportStats,
    idle_records: int,
    errors: _CountedErrors,
    model_context: bool,
) -> Iterator[Invocation]:
    """The invocations of the files ``parts`` cover, imported in this process."""
    errors.again()
    paths = list(dict.fromkeys(part.path for part in parts))
    return invocations_from_batches(
        (batch for path in paths for batch in read_file(path)),
        stats,
        assembler=TraceAssembler(idle_records=idle_records),
        on_error=errors,
        model_context=model_context,
    )


@dataclass(frozen=True, slots=True)
class _Spooled:
    """A worker's output, in the spool file at ``path``."""

    path: str


def _append(path: str, out: IO[bytes]) -> None:
    """Append the file at ``path`` to ``out``: by ``sendfile`` when ``out`` has a descriptor."""
    with open(path, "rb") as src:
        try:
            fd = out.fileno()
        except (AttributeError, OSError):  # e.g. an io.BytesIO (io.UnsupportedOperation)
            shutil.copyfileobj(src, out, _COPY_BUFFER)
            return
        out.flush()  # what ``out`` buffered goes first
        size = os.fstat(src.fileno()).st_size
        offset = 0
        try:
            while offset < size:
                sent = os.sendfile(fd, src.fileno(), offset, size - offset)
                if not sent:
                    break
                offset += sent
        except (AttributeError, OSError) as exc:
            # No sendfile (not Linux), or not to this descriptor (O_APPEND on older
            # kernels): copy the rest through user space; a real write error recurs there.
            logger.debug("sendfile to the output failed (%s): copying", exc)
            src.seek(offset)
            shutil.copyfileobj(src, out, _COPY_BUFFER)
            out.flush()


def import_parallel(
    parts: Sequence[Part],
    stats: ImportStats,
    *,
    jobs: int,
    idle_records: int,
    on_error: Callable[[TraceFormatError], None] | None = None,
    model_context: bool = True,
) -> list[Invocation]:
    """Import ``parts`` on ``jobs`` processes; the invocations, as a one-process import.

    The same invocations as :func:`tracescore.importer.invocations_from_batches` (with
    the same ``model_context``) over the parts in order; those of traces near a cut may
    come in another order. Should the parts' edges not settle that
    (:mod:`tracescore.cuts`), the input is imported again in this process.
    """
    invocations: list[Invocation] = []
    errors = _CountedErrors(on_error)
    found = ImportStats()
    chunks = _import_chunks(parts, found, "pickle", jobs, idle_records, errors, model_context)
    try:
        for chunk in chunks:
            assert not isinstance(chunk, _Spooled)  # nothing spooled without a directory
            invocations.extend(pickle.loads(chunk) if isinstance(chunk, bytes) else chunk)
    except Diverged as why:
        _log_fallback(why)
        invocations.clear()  # not kept beside the ones that replace them
        return list(_one_process(parts, stats, idle_records, errors, model_context))
    stats.merge(found)
    return invocations


def _import_chunks(
    parts: Sequence[Part],
    stats: ImportStats,
    encoding: _Encoding,
    jobs: int,
    idle_records: int,
    on_error: Callable[[TraceFormatError], None] | None,
    model_context: bool = True,
    spool: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Generator[bytes | _Spooled | list[Invocation], None, None]:
    """Workers' encoded output and the parent's rebuilt boundary traces, in part order.

    With ``spool`` (a directory; JSON Lines only) each worker writes its output to a
    file of its own there, and what comes back is that file. ``progress`` as in
    :func:`write_jsonl_parallel`.

    Raises:
        Diverged: A part's outcome may differ from a one-process import's (see
            :mod:`tracescore.cuts`); the workers still running are stopped first.

    """
    like = TraceAssembler(idle_records=idle_records)  # the workers' settings
    joiner = CutJoiner(
        idle_records=idle_records,
        recent_records=like.recent_records,
        max_traces=like.max_traces,
        max_spans_per_trace=like.max_spans_per_trace,
    )
    context = _mp_context()
    # Bytes read per part: written by the workers, summed here (only to show progress).
    shared: Any = None if progress is None else context.RawArray("q", len(parts))
    sizes = [_part_bytes(part) for part in parts] if progress is not None else []
    total = sum(sizes)

    def rebuilt(traces: Iterable[AssembledTrace]) -> list[Invocation]:
        return [i for t in traces for i in trace_invocations(t, stats, model_context=model_context)]

    with ProcessPoolExecutor(
        max_workers=jobs, mp_context=context, initializer=_init_worker, initargs=(shared,)
    ) as pool:
        numbered = enumerate(parts)

        def submit(index: int, part: Part) -> _Pending:
            path = None if spool is None else os.path.join(spool, f"{index}.jsonl")
            slot = None if shared is None else index
            future = pool.submit(_run_part, part, idle_records, encoding, model_context, path, slot)
            return index, part, path, future

        pending: deque[_Pending] = deque()
        for index, part in numbered:
            pending.append(submit(index, part))
            if len(pending) > jobs:
                break
        while pending:
            index, done_part, spooled, future = pending.popleft()
            if progress is not None:
                while not wait([future], timeout=_PROGRESS_EVERY).done:
                    progress(sum(shared), total)
                shared[index] = sizes[index]  # all of it, read by a whole-file part too
                progress(sum(shared), total)
            result = future.result()
            result.stats.errors = located(done_part, result.stats.errors)
            nxt = next(numbered, None)
            if nxt is not None:
                pending.append(submit(*nxt))
            stats.merge(result.stats)
            if on_error is not None:
                for error in result.stats.errors:
                    on_error(error)
            yield result.output if spooled is None else _Spooled(spooled)
            boundary = [_trace(d) for d in orjson.loads(result.boundary)]
            try:
                complete = joiner.add(PartEdges(boundary=boundary, **result.edges))
            except Diverged:
                pool.shutdown(wait=True, cancel_futures=True)
                raise
            yield rebuilt(complete)
    yield rebuilt(joiner.finish())
    stats.dropped.update(joiner.dropped)
    for reason in [r for r, n in stats.dropped.items() if not n]:
        del stats.dropped[reason]


#: A part submitted: its index, the part, its spool file (or None), its result to come.
_Pending = tuple[int, Part, str | None, "Future[_PartResult]"]
#: Seconds between progress reports while a part is awaited.
_PROGRESS_EVERY: Final = 0.2


def _part_bytes(part: Part) -> int:
    if part.start is not None and part.end is not None:
        return part.end - part.start
    try:
        return os.path.getsize(part.path)
    except OSError:  # the worker reports it
        return 0


def _mp_context() -> multiprocessing.context.BaseContext:
    """``fork`` when it is safe, else ``spawn``.

    A forked worker starts with every module already imported, where a spawned one pays
    the interpreter and package start-up (~0.3-0.5 s) before its first line. Forking a
    process that runs other threads can copy a lock held by one of them, so it is used
    only when this thread is the only one (the CLI's case; a progress bar's refresh
    thread or an embedding application's threads mean ``spawn``).
    """
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


#: What stays in the worker: how to decode a trace's batches again, and parking state
#: (a boundary trace is never parked when shipped: ``drain`` restores it).
_WORKER_ONLY: Final = frozenset({"sources", "parked", "prebuilt"})
_SHIPPED: Final = tuple(f.name for f in fields(AssembledTrace) if f.name not in _WORKER_ONLY)


def _shipped(trace: AssembledTrace) -> dict[str, object]:
    """What the parent needs of a boundary trace: every field but the worker-only ones."""
    return {name: getattr(trace, name) for name in _SHIPPED}


# Boundary traces travel as orjson (dataclasses serialise natively); bytes values are
# tagged so they come back as bytes.
def _bytes_default(value: object) -> object:
    if isinstance(value, bytes):
        return {"__bytes__": base64.b64encode(value).decode()}
    raise TypeError(type(value).__name__)


def _restore(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and "__bytes__" in value:
            return base64.b64decode(value["__bytes__"])
        return {k: _restore(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore(v) for v in value]
    return value


def _trace(d: dict[str, Any]) -> AssembledTrace:
    spans, logs = d.pop("spans"), d.pop("logs")
    trace = AssembledTrace(**d)
    trace.spans = [_span(s) for s in spans]
    trace.logs = [_log(r) for r in logs]
    return trace


def _span(d: dict[str, Any]) -> SpanRecord:
    d["attributes"] = _restore(d["attributes"])
    d["resource"] = _restore(d["resource"])
    d["events"] = [
        SpanEvent(name=e["name"], time_ns=e["time_ns"], attributes=_restore(e["attributes"]))
        for e in d["events"]
    ]
    d["origin"] = Origin(**d["origin"]) if d["origin"] is not None else None
    return SpanRecord(**d)


def _log(d: dict[str, Any]) -> LogRecord:
    d["attributes"] = _restore(d["attributes"])
    d["body"] = _restore(d["body"])
    d["origin"] = Origin(**d["origin"]) if d["origin"] is not None else None
    return LogRecord(**d)
