"""Trace files: the export batches inside each one.

The format of a file is told from its content, never its name (REFERENCE.md section 6):

* gzip (magic bytes ``1f 8b``) or zstd (``28 b5 2f fd``; what ``zstd`` writes, and the
  Collector ``file`` exporter with its ``exporter.file.nativeCompression`` gate):
  decompressed while streaming, then any format below;
* JSON Lines, as the Collector ``file`` exporter writes with ``format: json``: one OTLP
  export request per line, trace and log lines mixed, blank lines ignored. Read line by
  line in binary mode, so memory is bounded by the longest line. Each line is one batch
  located at ``path:line``; a malformed line is a batch with one error and reading goes on;
* one JSON document spread over many lines (a Tempo or Jaeger download, a hand-written
  OTLP file): recognised when the first non-blank line is not valid JSON on its own and
  the next non-blank line is not an OTLP document on its own either (else the file is
  JSON Lines with a bad first line). Such a file is read whole, so its size bounds memory.
  Should it not parse as a document while some line is a document on its own, it is
  JSON Lines whose first lines are damaged: read line by line after all, each damaged
  line one error;
* 4-byte big-endian length-prefixed OTLP protobuf messages (``format: proto``, or any
  format with ``compression: zstd``): one batch per message, located at ``path:N`` for
  the N-th message; a damaged message, zero-filled region or stretch of other bytes is
  one error and reading goes on at the next message (:mod:`tracescore.formats.frames`).

A file starting (after whitespace or a UTF-8 BOM) with ``{`` or ``[`` is JSON; anything
else is length-prefixed protobuf (its first byte is the high byte of a message length,
so ``0x00`` for any message under 16 MiB), unless zero bytes are followed by the start
of a JSON object: zero-filled regions (:mod:`tracescore.formats.zeros`), at the start
of a JSON file or anywhere in a line, are each one error and cost no record.
"""

from __future__ import annotations

import gzip
import io
import logging
import sys
import zlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from functools import partial
from typing import BinaryIO, Final, Protocol

import orjson

from tracescore import json_text
from tracescore.exceptions import InputError
from tracescore.formats.base import Batch
from tracescore.formats.console import decode_console_stream
from tracescore.formats.frames import read_frames
from tracescore.formats.json_line import BOM, cut_short, invalid_json, json_line
from tracescore.formats.otlp_json import decode_json_document, located_error, looks_like_document
from tracescore.formats.otlp_json_typed import decode_json_bytes
from tracescore.formats.zeros import zero_start, zeros_detail
from tracescore.formats.zstd import MAGIC as ZSTD_MAGIC
from tracescore.formats.zstd import ZstdError, ZstdReader
from tracescore.spans import Origin

__all__ = [
    "READ_BUFFER",
    "is_json_lines",
    "json_lines_between",
    "read_file",
    "read_json_lines",
]

logger = logging.getLogger(__name__)

_GZIP_MAGIC: Final = b"\x1f\x8b"
#: First two bytes of a zstd frame (28 b5 2f fd); as a protobuf length prefix they would
#: announce a 680 MB message, so nothing valid is mistaken for it.
_ZSTD_HEAD: Final = ZSTD_MAGIC[:2]
_JSON_FIRST_BYTES: Final = frozenset(b" \t\r\n{[\xef")
_CHUNK: Final = 1024 * 1024
#: Read buffer of input files. Collector lines are hundreds of KB long; with the default
#: 8 KiB buffer, reading them line by line takes about twice as long (0.28-0.39 s against
#: 0.13-0.18 s for 487 MB, 3% of a one-process import).
READ_BUFFER: Final = 1 << 20

# What a corrupt or truncated gzip or zstd stream raises while being read.
_STREAM_ERRORS: Final = (EOFError, zlib.error, gzip.BadGzipFile, ZstdError)


def read_file(path: str, *, stdin: BinaryIO | None = None) -> Iterator[Batch]:
    """The export batches in one file (or stdin for ``"-"``), in file order.

    Args:
        path: A file path, or ``"-"`` for standard input.
        stdin: The binary stream to read for ``"-"``; ``sys.stdin.buffer`` when None.

    Yields:
        One batch per JSON line, JSON document or protobuf message; an empty file
        yields nothing. Bad records and malformed lines are errors inside batches.

    Raises:
        InputError: the file cannot be opened or read (raised on the first ``next()``).

    """
    if path == "-":
        yield from _read_stream(stdin if stdin is not None else sys.stdin.buffer, path)
        return
    try:
        stream = open(path, "rb", buffering=READ_BUFFER)  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror or exc}") from exc
    with stream:
        yield from _read_stream(stream, path)


class _ByteStream(Protocol):
    """What the readers use of a binary stream (``seek`` only because GzipFile asks for it)."""

    def read(self, size: int = ..., /) -> bytes: ...

    def seek(self, offset: int, whence: int = ..., /) -> int: ...

    def readline(self, size: int = ..., /) -> bytes: ...


@dataclass(slots=True)
class _Cursor:
    """How far a reader got, to locate a read error raised from under it."""

    line: int | None = None


def _read_stream(raw: _ByteStream, path: str) -> Iterator[Batch]:
    cursor = _Cursor()
    try:
        head, stream = _peek(raw)
        if head == _GZIP_MAGIC:
            logger.debug("%s: gzip-compressed", path)
            head, stream = _peek(gzip.GzipFile(fileobj=stream, mode="rb"))
        if head == _ZSTD_HEAD:
            logger.debug("%s: zstd-compressed", path)
            head, stream = _peek(io.BufferedReader(ZstdReader(stream), READ_BUFFER))
        if not head:
            return
        located = partial(setattr, cursor, "line")
        if head[0] == 0:  # protobuf's first length prefix, or a zero-filled start
            found = zero_start(stream, _prepended)
            if isinstance(found, str):
                origin = Origin(path, 1)
                yield Batch(origin=origin, errors=[located_error(origin, found)])
                return
            zeros, after, is_json = found
            if is_json:
                yield from _after_zeros(zeros, _json_batches(after, path, cursor), path)
            else:
                yield from read_frames(after, path, located, leading_zeros=zeros)
        elif head[0] in _JSON_FIRST_BYTES:
            yield from _json_batches(stream, path, cursor)
        else:
            yield from read_frames(stream, path, located)
    except _STREAM_ERRORS as exc:
        origin = Origin(path, cursor.line)
        detail = f"compressed data is corrupt or truncated: {exc}"
        yield Batch(origin=origin, errors=[located_error(origin, detail)])
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc


class _Prepend(io.RawIOBase):
    """``head`` followed by the rest of ``stream``: puts back bytes read to sniff a format."""

    def __init__(self, head: bytes, stream: _ByteStream) -> None:
        self._head = head
        # read1 returns what is available instead of waiting for a full buffer (pipes)
        self._read = getattr(stream, "read1", stream.read)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self._head or self._read(len(buffer))
        size = min(len(data), len(buffer))
        buffer[:size] = data[:size]
        self._head = data[size:] if self._head else b""
        return size


def _after_zeros(zeros: int, batches: Iterator[Batch], path: str) -> Iterator[Batch]:
    """``batches``, the first holding the error of the ``zeros`` bytes before it (line 1)."""
    first = next(batches, None)
    if first is None:
        first = Batch(origin=Origin(path, 1))
    first.errors.insert(0, located_error(Origin(path, 1), zeros_detail(zeros)))
    yield first
    yield from batches


def _prepended(head: bytes, stream: _ByteStream) -> _ByteStream:
    return io.BufferedReader(_Prepend(head, stream), READ_BUFFER)


def _peek(stream: _ByteStream) -> tuple[bytes, _ByteStream]:
    """The first two bytes of ``stream`` (fewer at its end), and a stream still holding them."""
    peek = getattr(stream, "peek", None)
    if peek is not None:
        head: bytes = peek(2)
        if len(head) >= 2:
            return head[:2], stream
    head = stream.read(2)
    return head, _prepended(head, stream)


_DOCUMENT_CUT: Final = "the JSON document ends early (the file is cut short or still being written)"


def _json_batches(stream: _ByteStream, path: str, cursor: _Cursor) -> Iterator[Batch]:
    lines = enumerate(iter(stream.readline, b""), 1)
    read: list[bytes] = []  # raw lines until the layout is known, to reread them whole
    first = _next_content_line(lines, read, cursor)
    if first is None:
        return
    if first[0] == 1 and first[1].startswith(BOM):
        first = (1, first[1][3:])
        read[0] = first[1]
    try:
        doc = json_text.loads(first[1])
    except orjson.JSONDecodeError as exc:
        if b"\0" in first[1]:  # zero-filled regions happen to appended files: JSON Lines
            yield json_line(first[1], Origin(path, first[0]))
        else:
            second = _next_content_line(lines, read, cursor)
            second_doc = _document_or_none(second[1]) if second is not None else None
            if second is None or second_doc is None:
                logger.debug("%s: not JSON Lines, reading it as one JSON document", path)
                data = bytearray().join(read)
                del read[:]
                while chunk := stream.read(_CHUNK):  # no second full-size copy, as read() makes
                    data += chunk
                yield from _whole_document(data, path)
                return
            yield invalid_json(Origin(path, first[0]), exc)
            origin = Origin(path, second[0])
            yield decode_json_document(second_doc, origin=origin)
    else:
        origin = Origin(path, first[0])
        batch = decode_json_document(doc, origin=origin)
        batch.reread = partial(json_line, first[1], origin)  # decodes it the same way
        yield batch
    del read
    for lineno, line in lines:
        cursor.line = lineno
        if not line.isspace():
            yield json_line(line, Origin(path, lineno))


def is_json_lines(path: str) -> bool:
    """True when ``path`` is a plain (uncompressed) JSON Lines file of OTLP documents.

    Only such files can be split at line boundaries and read in parallel
    (:func:`read_json_lines`). Decided from the first non-blank line; a file starting
    with zero bytes (:mod:`tracescore.formats.zeros`) is read whole, in one process.
    """
    try:
        with open(path, "rb") as stream:
            if stream.read(1) == b"\0":  # a zero-filled start, maybe gigabytes with no newline
                return False
            stream.seek(0)
            for line in stream:
                if line.isspace():
                    continue
                record = line[len(BOM) :] if line.startswith(BOM) else line
                if record[:1] != b"{":
                    return False
                try:
                    return looks_like_document(json_text.loads(record))
                except orjson.JSONDecodeError:
                    return False
    except OSError:
        return False
    return False


def read_json_lines(
    path: str,
    start: int,
    end: int,
    first_line: int,
    progress: Callable[[int], None] | None = None,
) -> Generator[Batch, None, None]:
    """The batches of the JSON Lines between byte offsets ``start`` and ``end``.

    ``start`` must be the start of a line; the line containing ``end - 1`` is the last
    one read. ``first_line`` is the 1-based number of the line at ``start``, so errors
    are located as in a whole-file read. ``progress``, when given, is called with the
    bytes read from ``start`` so far as each line is read (before its batch is yielded).

    Raises:
        InputError: the file cannot be opened or read.

    """
    lineno = first_line
    for position, line in _lines(path, start, end):
        if progress is not None:
            progress(position - start)
        if not line.isspace():
            yield json_line(line, Origin(path, lineno))
        lineno += 1


def json_lines_between(path: str, start: int, end: int) -> Generator[bytes, None, None]:
    """The non-blank lines :func:`read_json_lines` would decode, as bytes.

    Raises:
        InputError: the file cannot be opened or read.

    """
    for _, line in _lines(path, start, end):
        if not line.isspace():
            yield line


def _lines(path: str, start: int, end: int) -> Generator[tuple[int, bytes], None, None]:
    """Each line from ``start`` (a line start) on, through the one containing ``end - 1``.

    With the position after it. The file is closed when the generator is.
    """
    try:
        stream = open(path, "rb", buffering=READ_BUFFER)  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror or exc}") from exc
    with stream:
        stream.seek(start)
        position = start
        for line in stream:
            if position >= end:
                return
            position += len(line)
            yield position, line


def _next_content_line(
    lines: Iterator[tuple[int, bytes]], read: list[bytes], cursor: _Cursor
) -> tuple[int, bytes] | None:
    for lineno, line in lines:
        cursor.line = lineno
        read.append(line)
        if not line.isspace():
            return lineno, line
    return None


def _document_or_none(line: bytes) -> object:
    """The line's OTLP document, or None when it is not one on its own."""
    try:
        doc = json_text.loads(line)
    except orjson.JSONDecodeError:
        return None
    return doc if looks_like_document(doc) else None


def _whole_document(data: bytearray, path: str) -> Iterator[Batch]:
    """The batches of a file whose first two content lines are no documents on their own.

    Usually one document spread over lines (pretty-printed, or the console exporter's
    records). Failing that, JSON Lines whose first lines are damaged: when any line is a
    document on its own, every line is read as a JSON Lines read reads it, so the others
    still come out and each damaged line is reported where it is. Otherwise one error.
    """
    try:
        batch = decode_json_bytes(data, origin=Origin(path))
    except orjson.JSONDecodeError as exc:
        error = exc
    else:
        yield batch
        return
    console = decode_console_stream(data, path)  # many records, each pretty-printed
    if console is not None:
        yield console
        return
    lines = io.BytesIO(data).readlines()  # split as readline splits: at b"\n" only
    if any(_document_or_none(line) is not None for line in lines):
        for lineno, line in enumerate(lines, 1):
            if not line.isspace():
                yield json_line(line, Origin(path, lineno))
        return
    cut = _DOCUMENT_CUT if cut_short(data, error) else ""
    yield invalid_json(Origin(path, error.lineno), error, cut=cut)
