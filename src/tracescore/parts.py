"""Cut the input of a parallel import into parts, one worker's share each.

Plain JSON Lines files are cut at line starts into byte ranges; any other input (gzip,
protobuf, single documents) is one part. Line numbers before a cut are not counted up
front: a worker numbers its part's lines from 1, and only when it reports bad records
are their lines shifted (:func:`located`).
"""

from __future__ import annotations

import math
import mmap
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import BinaryIO, Final

from tracescore.exceptions import TraceFormatError
from tracescore.formats.files import is_json_lines

__all__ = ["SCAN_BYTES", "Part", "line_start", "located", "mostly_small_files", "plan_parts"]

#: Bytes read at once when sampling a file or counting its lines.
SCAN_BYTES: Final = 1024 * 1024
_MIN_PART_BYTES: Final = 8 * 1024 * 1024
_MAX_PART_BYTES: Final = 256 * 1024 * 1024
#: A part holds at least this many head windows: a worker decodes about two windows
#: of its neighbours' records to find the traces that cross its cuts.
_WINDOWS_PER_PART: Final = 2
#: Newlines looked up one at a time in a block before the rest of it is counted whole.
_FINDS_PER_BLOCK: Final = 64


@dataclass(frozen=True, slots=True)
class Part:
    """One worker's share of the input.

    Attributes:
        path: The file.
        start: First byte (a line start); None to read the whole file in its own format.
        end: Byte offset the part stops before; None with ``start``.
        first_line: 1-based number of the line at ``start``; None when not counted yet.
            A worker then numbers the part's lines from 1, and the parent shifts the
            lines of the errors it reports (:func:`located`). Counting the lines before
            a cut means scanning every byte up to it: ~0.03 s per 250 MB before any
            worker could start, for a number that only errors need.
        first: Nothing comes before this part.
        last: Nothing comes after it.

    """

    path: str
    start: int | None = None
    end: int | None = None
    first_line: int | None = 1
    first: bool = False
    last: bool = False


def plan_parts(
    files: Sequence[str], *, jobs: int, idle_records: int, min_part_bytes: int | None = None
) -> list[Part]:
    """Cut ``files`` (in order) into parts; plain JSON Lines files are split by size.

    A file is split into at most ``max(jobs, size / 256 MiB)`` parts of at least
    ``min_part_bytes``; by default that is two head windows (``2 × idle_records``
    records, sized from the file's first lines), and never under 8 MiB.
    """
    parts: list[Part] = []
    for path in files:
        per_record = _bytes_per_record(path) if is_json_lines(path) else None
        if per_record is None:
            parts.append(Part(path))
            continue
        size = os.path.getsize(path)
        window = 2 * idle_records * per_record
        min_part = min_part_bytes or max(_MIN_PART_BYTES, int(_WINDOWS_PER_PART * window))
        n = min(max(jobs, math.ceil(size / _MAX_PART_BYTES)), size // min_part)
        parts.extend(_split(path, size, n) if n >= 2 else [Part(path)])
    if parts:
        parts[0] = replace(parts[0], first=True)
        parts[-1] = replace(parts[-1], last=True)
    return parts


def mostly_small_files(parts: Sequence[Part]) -> bool:
    """True when most of the input's bytes are in whole files under the minimum part size.

    A worker holds the traces first seen in the head of its part and sends back those
    still open at its end when the next part is another file (:mod:`tracescore.part_worker`).
    A file smaller than a few head windows is nearly all head and tail, so its traces
    travel back raw and the parent rebuilds them alone: on 20 plain files of 6 MB, a
    parallel import took 3.97 s where one process took 2.08 s. An input made mostly of
    such files is better imported in one process. (Compressed files are judged by their
    size on disk: one of 8 MiB holds a few head windows already.)
    """
    small = whole = 0
    for part in parts:
        if part.start is not None and part.end is not None:
            whole += part.end - part.start
            continue
        try:
            size = os.path.getsize(part.path)
        except OSError:  # the worker reports it
            continue
        whole += size
        if size < _MIN_PART_BYTES:
            small += size
    return 2 * small > whole


def _bytes_per_record(path: str) -> float | None:
    """Average bytes per span or log record over the first MiB of a JSON Lines file."""
    size = records = 0
    with open(path, "rb") as stream:
        for line in stream:
            size += len(line)
            records += line.count(b'"spanId"') + line.count(b'"timeUnixNano"')
            if size >= SCAN_BYTES:
                break
    return size / records if records else None


def _split(path: str, size: int, n: int) -> list[Part]:
    """``n`` byte ranges of ``path`` cut at line starts (their line numbers not counted)."""
    starts = [0]
    with open(path, "rb") as stream:
        for k in range(1, n):
            cut = line_start(stream, k * size // n)
            if starts[-1] < cut < size:
                starts.append(cut)
    ends = [*starts[1:], size]
    return [Part(path, s, e, 1 if s == 0 else None) for s, e in zip(starts, ends, strict=True)]


def located(part: Part, errors: list[TraceFormatError]) -> list[TraceFormatError]:
    """``errors`` of ``part`` with their lines counted from the start of its file."""
    if part.first_line is not None or part.start is None or not errors:
        return errors
    with open(part.path, "rb") as stream:
        before = _count_newlines(stream, 0, part.start)
    return [
        TraceFormatError(e.detail, path=e.path, line=e.line + before, span_id=e.span_id)
        if e.line is not None and e.path == part.path
        else e
        for e in errors
    ]


def _count_newlines(stream: BinaryIO, start: int, end: int) -> int:
    """Newlines in bytes ``start`` to ``end`` of the regular file open as ``stream``.

    The file is mapped, not read: Collector lines are hundreds of KB long, and hopping
    from newline to newline scans the bytes without copying them (reading half of a
    500 MB file to count its lines cost ~0.15 s before any worker could start). A block
    of many short lines is copied and counted in one call instead.
    """
    if end <= start:
        return 0
    count = 0
    position = start
    with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        while position < end:
            block_end = min(position + SCAN_BYTES, end)
            for _ in range(_FINDS_PER_BLOCK):
                found = mapped.find(b"\n", position, block_end)
                if found < 0:
                    position = block_end
                    break
                count += 1
                position = found + 1
            else:
                count += mapped[position:block_end].count(b"\n")
                position = block_end
    return count


def line_start(stream: BinaryIO, position: int) -> int:
    """The first line start at or after ``position``."""
    if position == 0:
        return 0
    stream.seek(position - 1)
    stream.readline()
    return stream.tell()
