"""Import large inputs on several processes, each worker encoding its own output.

Plain JSON Lines files are cut at line boundaries into parts; other inputs (gzip,
protobuf, single documents) are one part each (:mod:`tracescore.parts`). Each worker
imports its part as a sequential import would and sends back raw the few traces that may
cross a cut (:mod:`tracescore.part_worker`); this module runs the workers, joins those
traces part after part as one process would (:mod:`tracescore.cuts`) and puts the output
together. Should the cuts not settle that, the input is imported again in this process.

For ``import``, workers encode their output (JSON Lines) rather than send invocation
objects: the parent only writes it, where unpickling thousands of dataclasses would cost
it more than a worker's whole share of the work. Each worker writes its lines to a spool
file of its own, which the parent appends to the output in part order with ``sendfile``
(a copy inside the kernel): sent back through the result pipe, a half of the 200k-span
benchmark (18 MB) took ~45 ms to arrive and ~30 ms more to be written, all of it after
the workers were done. ``replay`` needs the objects, so there workers send them
pickled (:func:`import_parallel`), with the verdicts of the turns they scored when
forked with the replay's criteria and goldens (:mod:`tracescore.prescore`).

Results are taken in part order, with at most ``jobs + 1`` parts in flight, so memory
is bounded by the part size, not the input size.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import stat
import tempfile
import threading
from collections import Counter, deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, wait
from contextlib import closing
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Final

from tracescore.assembly import AssembledTrace, TraceAssembler
from tracescore.cuts import CutJoiner, Diverged, PartEdges
from tracescore.exceptions import TraceFormatError
from tracescore.formats.files import read_file
from tracescore.importer import ImportStats, invocations_from_batches, trace_invocations
from tracescore.model import Invocation
from tracescore.part_worker import (
    COPY_BUFFER,
    Encoding,
    PartResult,
    init_worker,
    jsonl,
    jsonl_lines,
    neighbours,
    run_part,
)
from tracescore.parts import Part, file_size, located, plan_parts
from tracescore.shipping import decode_boundary, loads_deep

if TYPE_CHECKING:  # replay's; import_parallel is only given them by replay
    from tracescore.prescore import Prescored, Prescoring, Verdict

__all__ = [
    "Part",
    "import_parallel",
    "parallel_parts",
    "plan_parts",
    "resolve_jobs",
    "write_jsonl_parallel",
]

logger = logging.getLogger(__name__)


def resolve_jobs(jobs: int) -> int:
    """``jobs``, or one per CPU for 0."""
    return jobs or os.cpu_count() or 1


def parallel_parts(
    files: Sequence[str], *, jobs: int, idle_records: int, strict: bool
) -> list[Part] | None:
    """The parts of a parallel import of ``files``, or None when it runs in one process.

    In one process when: one job (``jobs`` 0 means one per CPU), ``strict`` (the first
    bad record stops everything), stdin or another stream among the inputs (a pipe such as
    ``/dev/stdin`` or ``<(zcat …)``: planning and the workers' edges would read it first,
    and what they read would be gone), or nothing to split.
    """
    jobs = resolve_jobs(jobs)
    if jobs < 2 or strict or not all(_regular(path) for path in files):
        return None
    parts = plan_parts(files, jobs=jobs, idle_records=idle_records)
    return parts if len(parts) > 1 else None


def _regular(path: str) -> bool:
    """True for a regular file (or one that cannot be read: its worker reports that)."""
    if path == "-":
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True


def write_jsonl_parallel(
    parts: Sequence[Part],
    out: IO[bytes],
    stats: ImportStats,
    *,
    jobs: int,
    idle_records: int,
    on_error: Callable[[TraceFormatError], None] | None = None,
    model_context: bool = False,
    spool_dir: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Import ``parts`` on ``jobs`` processes and write JSON Lines to ``out``.

    With ``model_context``, the model's context is read
    (:func:`tracescore.importer.invocations_from_batches`) and written
    (:func:`tracescore.export.invocation_record`), as ``tracescore import
    --model-context`` does; without, neither.
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
                    ready = (
                        chunk
                        if isinstance(chunk, bytes | _Spooled)
                        else jsonl(chunk, model_context=model_context)
                    )
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
    again = _one_process(parts, stats, idle_records, errors, model_context)
    out.writelines(jsonl_lines(again, model_context=model_context))
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
    paths = list(dict.fromkeys(path for part in parts for path in part.paths))
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
            shutil.copyfileobj(src, out, COPY_BUFFER)
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
            shutil.copyfileobj(src, out, COPY_BUFFER)
            out.flush()


def import_parallel(
    parts: Sequence[Part],
    stats: ImportStats,
    *,
    jobs: int,
    idle_records: int,
    on_error: Callable[[TraceFormatError], None] | None = None,
    model_context: bool = True,
    prescored: Prescored | None = None,
) -> list[Invocation]:
    """Import ``parts`` on ``jobs`` processes; the invocations, as a one-process import.

    The same invocations as :func:`tracescore.importer.invocations_from_batches` (with
    the same ``model_context``) over the parts in order; those of traces near a cut may
    come in another order. Should the parts' edges not settle that
    (:mod:`tracescore.cuts`), the input is imported again in this process.

    With ``prescored``, workers that are forked also match and score their turns with
    its scoring, and their verdicts are added to it (:mod:`tracescore.prescore`); it gets
    none from spawned workers, or after a fallback to one process.
    """
    invocations: list[Invocation] = []
    errors = _CountedErrors(on_error)
    found = ImportStats()
    scoring = None if prescored is None else prescored.scoring
    chunks = _import_chunks(
        parts, found, "pickle", jobs, idle_records, errors, model_context, scoring=scoring
    )
    verdicts: list[tuple[int, list[Invocation], list[Verdict | None]]] = []
    try:
        for chunk in chunks:
            assert not isinstance(chunk, _Spooled)  # nothing spooled without a directory
            if not isinstance(chunk, bytes):  # traces near a cut, rebuilt here
                invocations.extend(chunk)
                continue
            payload = loads_deep(chunk)
            if isinstance(payload, tuple):  # a forked worker's invocations and verdicts
                payload, scored = payload
                verdicts.append((len(verdicts), payload, scored))
            invocations.extend(payload)
    except Diverged as why:
        _log_fallback(why)
        invocations.clear()  # not kept beside the ones that replace them
        return list(_one_process(parts, stats, idle_records, errors, model_context))
    if prescored is not None:
        for part, kept, scored in verdicts:
            prescored.add(part, kept, scored)
    stats.merge(found)
    return invocations


def _import_chunks(
    parts: Sequence[Part],
    stats: ImportStats,
    encoding: Encoding,
    jobs: int,
    idle_records: int,
    on_error: Callable[[TraceFormatError], None] | None,
    model_context: bool = True,
    spool: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    scoring: Prescoring | None = None,
) -> Generator[bytes | _Spooled | list[Invocation], None, None]:
    """Workers' encoded output and the parent's rebuilt boundary traces, in part order.

    With ``spool`` (a directory; JSON Lines only) each worker writes its output to a
    file of its own there, and what comes back is that file. ``progress`` as in
    :func:`write_jsonl_parallel`. With ``scoring`` (pickled output only), forked
    workers send the verdicts of their turns too (:mod:`tracescore.prescore`).

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
    if scoring is not None and context.get_start_method() == "fork":
        encoding = "scored"
    else:  # a spawned worker would need the criteria and every golden pickled to it
        scoring = None
    # Bytes read per part: written by the workers, summed here (only to show progress).
    shared: Any = None if progress is None else context.RawArray("q", len(parts))
    sizes = [_part_bytes(part) for part in parts] if progress is not None else []
    total = sum(sizes)

    def rebuilt(traces: Iterable[AssembledTrace]) -> list[Invocation]:
        return [i for t in traces for i in trace_invocations(t, stats, model_context=model_context)]

    with ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=context,
        initializer=init_worker,
        initargs=(shared, scoring),
    ) as pool:
        numbered = enumerate(parts)

        def submit(index: int, part: Part) -> _Pending:
            path = None if spool is None else os.path.join(spool, f"{index}.jsonl")
            slot = None if shared is None else index
            around = neighbours(parts, index)
            future = pool.submit(
                run_part, part, idle_records, encoding, model_context, path, slot, around
            )
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
            boundary = decode_boundary(result.boundary)
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
_Pending = tuple[int, Part, str | None, "Future[PartResult]"]
#: Seconds between progress reports while a part is awaited.
_PROGRESS_EVERY: Final = 0.2


def _part_bytes(part: Part) -> int:
    if part.start is not None and part.end is not None:
        return part.end - part.start
    return sum(file_size(path) for path in part.paths)


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
