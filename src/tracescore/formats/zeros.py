"""Zero-filled regions in JSON trace files: skipped, reported, never costing a record.

Two common accidents leave runs of NUL bytes in a file the Collector appends to:

* the file is truncated under its writer (logrotate's ``copytruncate``): a writer that
  did not open it for appending writes its next line at its old offset, so the file
  starts with a hole as long as everything rotated away, read back as zero bytes
  (gigabytes, for a busy exporter);
* part of it never reached the disk before a crash: the file's size was updated, its
  data was not, and the region reads as zeros, often with no newline before the next
  line written after the restart.

A NUL byte can never be part of JSON (not even escaped inside a string), so a run of
them ends whatever came before it, as a newline would. Each run is reported as one bad
record, located by line, saying how many bytes it held; the records around it are read
as usual (one cut by the run is an incomplete record, said so; a line with more than
a few runs is binary data, one bad record). A file that starts with
zeros is JSON when what follows them is the start of a JSON object; its leading zeros
are jumped over where the file system knows where data starts (``SEEK_DATA``) and
otherwise read through in chunks, never held; the file is read in one process. Anything
else starting with zero bytes stays length-prefixed protobuf, whose first length prefix
starts with them; a file of nothing but zeros is one error that says so. The same
accidents in length-prefixed protobuf files are read by :mod:`tracescore.formats.frames`.
"""

from __future__ import annotations

import errno
import io
import os
import re
from collections.abc import Callable, Iterator
from typing import Final, Protocol, TypeVar

__all__ = ["ZERO_RUN", "ZEROS_CUT", "split_at_zeros", "zero_start", "zeros_detail"]

#: One run of zero bytes.
ZERO_RUN: Final = re.compile(rb"\x00+")
#: How a record cut short by the zeros after it is described.
ZEROS_CUT: Final = "incomplete record, cut short by the zero bytes after it"
#: The start of a JSON object after zero bytes: ``{`` and a first key. Stricter than
#: ``{`` alone: a protobuf file's first length prefix may end in the byte ``{`` (0x7b, a
#: 123-byte message), but the message after it starts with a field tag (0x0a, 0x12 or
#: 0x1a), never with a quote and three letters.
_JSON_AFTER_ZEROS: Final = re.compile(rb'[ \t\r\n]*\{[ \t\r\n]*"[A-Za-z_]{3,}"[ \t\r\n]*:')
#: Bytes after the zeros enough to tell JSON (whitespace, ``{``, a key) from protobuf.
_SNIFF: Final = 256
#: Chunks in which leading zeros are read through.
_CHUNK: Final = 1 << 20


class _Stream(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


S = TypeVar("S", bound=_Stream)


def zeros_detail(count: int) -> str:
    """The error of one run of ``count`` zero bytes."""
    return (
        f"{count} zero byte(s), no record: a zero-filled region (the file was truncated"
        " under its writer, as logrotate's copytruncate does, or part of it never reached"
        " the disk before a crash); the records around it are read"
    )


def split_at_zeros(line: bytes) -> Iterator[tuple[bytes, int]]:
    """The pieces of ``line`` between its runs of zero bytes, each with the run after it.

    The last piece has 0 after it (the line's own end). Pieces may be empty.
    """
    start = 0
    for run in ZERO_RUN.finditer(line):
        yield line[start : run.start()], run.end() - run.start()
        start = run.end()
    yield line[start:], 0


def zero_start(stream: S, wrap: Callable[[bytes, S], S]) -> tuple[int, S, bool] | str:
    """Read a stream that starts with a zero byte: JSON after zeros, or protobuf.

    Args:
        stream: The stream, at its start; its first byte is zero.
        wrap: ``wrap(head, stream)`` is a stream of ``head`` then the rest of ``stream``.

    Returns:
        ``(zeros, after, json)``: ``after`` reads what follows the first ``zeros`` zero
        bytes, and ``json`` says whether that is JSON (else length-prefixed protobuf,
        whose first length may start with some of those zeros:
        :func:`tracescore.formats.frames.read_frames` sorts them out). A string: the
        error of a stream that holds nothing but zeros.

    """
    peek = getattr(stream, "peek", None)
    if peek is not None:
        buffered: bytes = peek(_CHUNK)
        after = buffered.lstrip(b"\0")
        if len(after) >= _SNIFF:  # decided from the buffer, nothing read yet
            if _JSON_AFTER_ZEROS.match(after) is None:
                return 0, stream, False
            zeros = len(buffered) - len(after)
            stream.read(zeros)
            return zeros, stream, True
    # The zeros go on past what is buffered (a hole left by copytruncate can be
    # gigabytes long), or the stream ends soon after them: read through them, after
    # jumping over the hole where the file system knows where data starts.
    skipped = _hole(stream)
    if skipped is None:
        return _only_zeros(_size(stream))
    zeros = skipped
    after = b""
    while chunk := stream.read(_CHUNK):
        after = chunk.lstrip(b"\0")
        zeros += len(chunk) - len(after)
        if after:
            break
    if not after:
        return _only_zeros(zeros)
    while len(after) < _SNIFF and (more := stream.read(_SNIFF)):
        after += more
    return zeros, wrap(after, stream), _JSON_AFTER_ZEROS.match(after) is not None


def _only_zeros(count: int) -> str:
    return (
        f"the file holds nothing but {count} zero byte(s): zero-filled (its data never"
        " reached the disk, or it was truncated under its writer)"
    )


def _hole(stream: object) -> int | None:
    """Skip the hole a sparse plain file starts with; the bytes skipped (0 if none).

    ``lseek(SEEK_DATA)`` finds where data starts without reading the zeros (a file
    truncated under its writer has a real hole: its zeros take no disk space, and can be
    hundreds of gigabytes after months of rotations). None when the whole file is a
    hole. Streams that are not a plain file at its start, and file systems without
    ``SEEK_DATA``, skip nothing: their zeros are read.
    """
    if not isinstance(stream, io.BufferedReader) or not isinstance(stream.raw, io.FileIO):
        return 0
    try:
        if not stream.seekable() or stream.tell() != 0:
            return 0
        fd = stream.raw.fileno()
        # The buffered stream's own offset must not move behind its back: put it back.
        raw_position = os.lseek(fd, 0, os.SEEK_CUR)
        try:
            data = os.lseek(fd, 0, os.SEEK_DATA)
        finally:
            os.lseek(fd, raw_position, os.SEEK_SET)
    except OSError as exc:
        return None if exc.errno == errno.ENXIO else 0  # ENXIO: no data after offset 0
    stream.seek(data)  # what lies before is a hole, read as zeros
    return data


def _size(stream: object) -> int:
    assert isinstance(stream, io.BufferedReader)  # only _hole's plain files end up here
    return os.fstat(stream.raw.fileno()).st_size
