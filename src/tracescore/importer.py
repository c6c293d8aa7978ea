"""Trace files → invocations: the pipeline behind ``tracescore import`` and ``replay``.

Reads every path, decodes batches, assembles traces and rebuilds invocations as soon as
each trace is complete, so memory follows the traces in flight, not the input size.
Every record ends up counted in :class:`ImportStats`: turned into an invocation, in a
trace with no agent activity, bad (with its location), or dropped by reason.
"""

from __future__ import annotations

import gc
import logging
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import BinaryIO, Final

from tracescore.assembly import AssembledTrace, TraceAssembler
from tracescore.exceptions import TraceFormatError
from tracescore.formats.base import Batch
from tracescore.formats.files import read_file
from tracescore.model import Invocation
from tracescore.path_args import Paths, expand_paths
from tracescore.trajectory import build_invocations

__all__ = [
    "ImportStats",
    "bulk_gc",
    "paused_gc",
    "import_paths",
    "invocations_from_batches",
    "trace_invocations",
]

logger = logging.getLogger(__name__)

_KEEP_ERRORS: Final = 50


@dataclass(slots=True, kw_only=True)
class ImportStats:
    """What an import read and what became of it."""

    files: int = 0
    records: int = 0
    spans: int = 0
    logs: int = 0
    traces: int = 0
    traces_without_agent: int = 0
    invocations: int = 0
    not_evaluable: Counter[str] = field(default_factory=Counter)
    #: The first explanation seen for each not-evaluable reason (names the fix).
    reasons: dict[str, str] = field(default_factory=dict)
    bad_records: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    errors: list[TraceFormatError] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """True when the input held no span or log record at all."""
        return self.spans == 0 and self.logs == 0 and self.bad_records == 0

    def merge(self, other: ImportStats) -> None:
        """Add the counts of ``other`` (the import of another part of the input)."""
        for name in ("records", "spans", "logs", "traces", "traces_without_agent"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.invocations += other.invocations
        self.bad_records += other.bad_records
        self.not_evaluable.update(other.not_evaluable)
        self.dropped.update(other.dropped)
        for code, reason in other.reasons.items():
            self.reasons.setdefault(code, reason)
        self.errors.extend(other.errors[: max(0, _KEEP_ERRORS - len(self.errors))])

    def note_error(self, error: TraceFormatError) -> None:
        """Count a bad record; keep the first few for the summary."""
        self.bad_records += 1
        if len(self.errors) < _KEEP_ERRORS:
            self.errors.append(error)


@contextmanager
def bulk_gc(threshold: int = 100_000, *, freeze_survivors: bool = True) -> Iterator[None]:
    """Tune the cyclic garbage collector for a bulk import; restore it on exit.

    Decoding allocates thousands of short-lived containers per batch; with CPython's
    default gen-0 threshold (700) the collector runs many times per batch and keeps
    re-walking the traces in flight: a third or more of an import's time. Nothing the
    pipeline builds holds reference cycles that need prompt collection.

    This changes a process-wide setting: the CLI wraps its commands in it; a program
    embedding tracescore decides for itself.

    Args:
        threshold: The gen-0 threshold inside the block (never lowered below the current
            one).
        freeze_survivors: After each young collection, freeze what survived it, so the
            collector walks every object at most once. Otherwise every eleventh
            collection is an older-generation one that walks every survivor again (the
            whole import so far: ~0.4 s once 200k spans' invocations are kept), whenever
            the count happens to reach it. The price: a reference cycle among the
            survivors is only collected after the block (on exit everything frozen goes
            back to the oldest generation). An import makes none (a test checks it on
            clean and damaged input). Keep it for bulk work; switch it off for a
            long-running block that creates cycles (a judged replay's event loop).

    """
    old = gc.get_threshold()
    gc.freeze()  # what exists already (modules, config) is never garbage: skip it
    gc.set_threshold(max(old[0], threshold), old[1], old[2])
    if freeze_survivors:
        gc.callbacks.append(_freeze_after_young_collection)
    try:
        yield
    finally:
        if freeze_survivors:
            gc.callbacks.remove(_freeze_after_young_collection)
        gc.set_threshold(*old)
        gc.unfreeze()


def _freeze_after_young_collection(phase: str, info: dict[str, int]) -> None:
    # A garbage-collector callback runs once the collection is over, so freezing here is
    # safe. The older generations are left empty: when an older collection comes due, it
    # walks only what survived since the last freeze.
    if phase == "stop" and info["generation"] == 0:
        gc.freeze()


@contextmanager
def paused_gc(*, freeze: bool = False) -> Iterator[None]:
    """Switch the cyclic garbage collector off for a bounded parse; restore it on exit.

    For building one large acyclic structure (an evalset's goldens: millions of objects,
    all kept): any collection would only walk them again (~20% of the load time).
    Reference counting still frees everything else. Process-wide, as :func:`bulk_gc`.

    Args:
        freeze: On exit, first move every object that exists into the permanent
            generation (``gc.freeze()``; :func:`bulk_gc` unfreezes on its exit). Without
            it, the first allocation after the pause runs a young collection that walks
            everything built during the pause (~90 ms for 33 MB of goldens).

    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was_enabled:
            gc.enable()


def invocations_from_batches(
    batches: Iterator[Batch],
    stats: ImportStats,
    *,
    strict: bool = False,
    assembler: TraceAssembler | None = None,
    on_error: Callable[[TraceFormatError], None] | None = None,
    finish: bool = True,
    model_context: bool = True,
) -> Iterator[Invocation]:
    """Turn decoded batches into invocations, yielding each as its trace completes.

    Args:
        batches: Decoded batches, in input order.
        stats: Counters to update.
        strict: Raise the first bad record instead of counting it.
        assembler: The trace assembler to use (a default one when None).
        on_error: Called with each bad record as it is met.
        finish: At the end, release the traces still in flight and count the
            assembler's drops. False leaves both to the caller (one part of a larger
            input, see :mod:`tracescore.parallel`).
        model_context: Extract system instructions and tool declarations (see
            :func:`~tracescore.trajectory.build_invocations`).

    Raises:
        TraceFormatError: the first bad record, when ``strict``.

    """
    asm = assembler or TraceAssembler()
    for batch in batches:
        stats.records += 1
        for error in batch.errors:
            if strict:
                raise error
            stats.note_error(error)
            if on_error is not None:
                on_error(error)
        stats.spans += len(batch.spans)
        stats.logs += len(batch.logs)
        if batch.spans or batch.logs:
            for trace in asm.add(batch.spans, batch.logs, batch.reread):
                yield from trace_invocations(trace, stats, model_context=model_context)
            # Rebuilt now, while its records are fresh in memory, then dropped: see
            # parking in tracescore.assembly.
            for trace in asm.parkable():
                built = build_invocations(trace.spans, trace.logs, model_context=model_context)
                asm.park(trace, built)
    if finish:
        for trace in asm.flush():
            yield from trace_invocations(trace, stats, model_context=model_context)
        stats.dropped.update(asm.dropped)


def trace_invocations(
    trace: AssembledTrace, stats: ImportStats, *, model_context: bool = True
) -> Iterator[Invocation]:
    """The invocations of one assembled trace, counted in ``stats``."""
    stats.traces += 1
    if trace.parked:  # rebuilt from the same records when it was parked
        invocations: list[Invocation] = trace.prebuilt
    elif not trace.spans:
        stats.dropped["logs_without_spans"] += len(trace.logs)
        return
    else:
        invocations = build_invocations(trace.spans, trace.logs, model_context=model_context)
    if not invocations:
        stats.traces_without_agent += 1
    for inv in invocations:
        stats.invocations += 1
        if inv.reason_code is not None:
            stats.not_evaluable[inv.reason_code] += 1
            stats.reasons.setdefault(inv.reason_code, inv.reason or inv.reason_code)
        yield inv


def import_paths(
    paths: Paths,
    stats: ImportStats,
    *,
    strict: bool = False,
    stdin: BinaryIO | None = None,
    assembler: TraceAssembler | None = None,
    on_error: Callable[[TraceFormatError], None] | None = None,
    model_context: bool = True,
) -> Iterator[Invocation]:
    """Read trace files (files, directories, globs, ``-``) and yield their invocations.

    ``paths`` is one path or an iterable of them (``str`` or :class:`os.PathLike`).

    ``model_context`` as in :func:`invocations_from_batches`.

    Raises:
        InputError: a path matches nothing or cannot be read.
        TraceFormatError: the first bad record, when ``strict``.
        TypeError: ``paths`` is not a path or an iterable of paths.

    """
    files = expand_paths(paths)
    stats.files = len(files)

    def batches() -> Iterator[Batch]:
        for path in files:
            logger.debug("reading %s", path)
            yield from read_file(path, stdin=stdin)

    return invocations_from_batches(
        batches(),
        stats,
        strict=strict,
        assembler=assembler,
        on_error=on_error,
        model_context=model_context,
    )
