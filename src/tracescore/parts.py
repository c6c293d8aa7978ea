"""Cut the input of a parallel import into parts, one worker's share each.

Plain JSON Lines files are cut at line starts into byte ranges; any other file (gzip,
protobuf, single documents), or a plain one too small to cut, is read whole, and
consecutive files read whole are grouped into parts of a worthwhile size: a worker
decodes about two head windows of its neighbours' records besides its own (see
:mod:`tracescore.part_worker`), which a part of one small file does not pay for (48
plain files of 10 MB took 13.9 s to import on two processes, 7.3-9.6 s in one, before
they were grouped; 4.7 s since). Line numbers before a cut are not counted up front: a
worker numbers its part's lines from 1, and only when it reports bad records are their
lines shifted (:func:`located`).
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

__all__ = [
    "SCAN_BYTES",
    "Part",
    "file_size",
    "line_start",
    "located",
    "plan_parts",
]

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
        more: Files read whole after ``path`` (in this order), when ``start`` is None.

    """

    path: str
    start: int | None = None
    end: int | None = None
    first_line: int | None = 1
    first: bool = False
    last: bool = False
    more: tuple[str, ...] = ()

    @property
    def paths(self) -> tuple[str, ...]:
        """Every file the part reads from, in order."""
        return (self.path, *self.more)


def plan_parts(
    files: Sequence[str], *, jobs: int, idle_records: int, min_part_bytes: int | None = None
) -> list[Part]:
    """Cut ``files`` (in order) into parts; plain JSON Lines files are split by size.

    A file is split into at most ``max(jobs, size / 256 MiB)`` parts of at least
    ``min_part_bytes``; by default that is two head windows (``2 × idle_records``
    records, sized from the file's first lines), and never under 8 MiB. Files read whole
    in a row are grouped into parts of about their total size over ``jobs``, at least
    that minimum and at most 256 MiB (on disk: a compressed file counts its size there).
    """
    parts: list[Part] = []
    whole: list[tuple[str, int]] = []  # files read whole, not grouped yet: (path, size)
    # The largest minimum part of the plain files so far: no group is smaller.
    least = min_part_bytes or _MIN_PART_BYTES
    for path in files:
        per_record = _bytes_per_record(path) if is_json_lines(path) else None
        size = file_size(path)
        if per_record is not None:
            window = 2 * idle_records * per_record
            min_part = min_part_bytes or max(_MIN_PART_BYTES, int(_WINDOWS_PER_PART * window))
            least = max(least, min_part)
            n = min(max(jobs, math.ceil(size / _MAX_PART_BYTES)), size // min_part)
            if n >= 2:
                parts.extend(_grouped(whole, jobs=jobs, least=least))
                whole.clear()
                parts.extend(_split(path, size, n))
                continue
        whole.append((path, size))
    parts.extend(_grouped(whole, jobs=jobs, least=least))
    if parts:
        parts[0] = replace(parts[0], first=True)
        parts[-1] = replace(parts[-1], last=True)
    return parts


def file_size(path: str) -> int:
    """The size of ``path``; 0 when it cannot be read (its worker reports that)."""
    try:
        return os.path.getsize(path)
    except OSError:  # the worker reports it
        return 0


def _grouped(files: Sequence[tuple[str, int]], *, jobs: int, least: int) -> list[Part]:
    """Consecutive files read whole, as parts of about ``total / jobs`` bytes each.

    Each part is at least ``least`` bytes (but the only one) and at most 256 MiB (but a
    single larger file); a remainder under half the target joins the part before it.
    """
    if not files:
        return []
    total = sum(size for _, size in files)
    target = min(_MAX_PART_BYTES, max(least, math.ceil(total / max(1, jobs))))
    groups: list[list[str]] = [[]]
    sizes = [0]
    for path, size in files:
        if groups[-1] and sizes[-1] + size > target and sizes[-1] >= target // 2:
            groups.append([])
            sizes.append(0)
        groups[-1].append(path)
        sizes[-1] += size
    if len(groups) > 1 and sizes[-1] < target // 2:
        groups[-2].extend(groups.pop())
    return [Part(group[0], more=tuple(group[1:])) for group in groups]


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
