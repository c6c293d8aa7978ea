"""One JSON Lines record, as bytes, into its batch: the unit of every JSON Lines read.

A line that does not decode is one located error (a cut last line and a record cut by
zero bytes are named as such); a line starting with a UTF-8 byte order mark (a file
that had one, appended to another) is read without it; a printed console-exporter
record is read as the console reader reads it; runs of zero bytes in a line
(:mod:`tracescore.formats.zeros`) separate the records around them, and so does the
start of a request appended after a cut one (a writer killed mid-line, then restarted).
A batch with records can be decoded again from the same bytes (``Batch.reread``).
"""

from __future__ import annotations

import re
from functools import partial
from itertools import islice, pairwise
from typing import Final

import orjson

from tracescore.formats.base import Batch
from tracescore.formats.console import decode_console_line
from tracescore.formats.otlp_json import located_error
from tracescore.formats.otlp_json_typed import decode_json_bytes
from tracescore.formats.zeros import ZERO_RUN, ZEROS_CUT, split_at_zeros, zeros_detail
from tracescore.spans import Origin

__all__ = ["BOM", "cut_short", "decode_json_line", "invalid_json", "json_line"]

#: UTF-8's byte order mark, which some Windows tools write at the start of a file.
BOM: Final = b"\xef\xbb\xbf"
_MESSAGE_CHARS: Final = 200
#: More runs of zero bytes than this in one line is binary data (see _around_zeros).
_MAX_ZERO_RUNS: Final = 8
#: The start of a Collector's export request in its JSON spelling.
_RECORD_START: Final = re.compile(rb'\{"resource(?:Spans|Logs)":')
#: More requests glued after cut ones than this in one line is no crash's leftover.
_MAX_GLUED: Final = 8
_GLUED_CUT: Final = (
    "incomplete record, cut short: its writer stopped mid-line (killed?) and the next"
    " record was appended right after it, which is read"
)
_LAST_LINE_CUT: Final = (
    "incomplete last line (no newline at the end of the file: still being written, or cut short)"
)


def invalid_json(origin: Origin | None, exc: orjson.JSONDecodeError, *, cut: str = "") -> Batch:
    """A batch of one error: ``origin``'s JSON does not decode (``cut``: how it was cut)."""
    message = str(exc)
    if len(message) > _MESSAGE_CHARS:
        message = message[: _MESSAGE_CHARS - 3] + "..."
    detail = f"{cut}: {message}" if cut else f"invalid JSON: {message}"
    return Batch(origin=origin, errors=[located_error(origin, detail)])


def cut_short(data: bytes | bytearray, exc: orjson.JSONDecodeError) -> bool:
    """Whether the JSON in ``data`` is fine up to where it stops (a truncated write)."""
    return exc.pos >= len(data.rstrip())


def decode_json_line(line: bytes) -> Batch:
    """The batch of one JSON Lines line, unlocated, as a JSON Lines read decodes it."""
    return json_line(line, None)


def json_line(line: bytes, origin: Origin | None, *, message: bool = False) -> Batch:
    """One JSON Lines record: its batch (which can be read again), or one located error.

    ``message``: ``line`` is a whole length-prefixed message, not a line of a file.
    """
    try:
        batch = decode_json_bytes(line, origin=origin)
    except orjson.JSONDecodeError as exc:
        # A file written with a BOM, appended to another (cat): once, never recursing
        # deeper (a line of a million BOMs is one bad record, not a RecursionError).
        if line.startswith(BOM) and not line.startswith(BOM, len(BOM)):
            return json_line(line[len(BOM) :], origin, message=message)
        console = decode_console_line(line, origin=origin)
        if console is not None:
            return console
        if b"\0" in line:
            batch = _around_zeros(line, origin, message=message)
        elif (starts := _later_records(line)) is not None:
            batch = _glued(line, starts, origin, message=message)
        else:
            # Only a file's last line can lack its newline: one cut there is a file the
            # Collector is still writing (or a copy taken mid-write), not a corrupt record.
            cut = not message and line[-1:] != b"\n" and cut_short(line, exc)
            return invalid_json(origin, exc, cut=_LAST_LINE_CUT if cut else "")
    batch.reread = partial(json_line, line, origin, message=message)
    return batch


def _later_records(line: bytes) -> list[int] | None:
    """Where records start after the first in a line that did not decode; None if nowhere.

    A Collector killed mid-write leaves its file's last line cut; restarted, it appends
    its next request right after it, with no newline between. ``{"resourceSpans":`` (or
    ``resourceLogs``) can start only a request, never sit inside valid OTLP JSON (a
    string holds its quotes escaped), so each one past the line's start is a record
    glued to a cut one. More than a few is no such accident (see _MAX_GLUED).
    """
    starts = [m.start() for m in _RECORD_START.finditer(line, 1)]
    return starts if 0 < len(starts) <= _MAX_GLUED else None


def _glued(line: bytes, starts: list[int], origin: Origin | None, *, message: bool) -> Batch:
    """The records of a line where whole requests follow cut ones (see _later_records)."""
    batch = Batch(origin=origin)
    for begin, end in pairwise([0, *starts, len(line)]):
        cut_by = None if end == len(line) else _GLUED_CUT
        _add(batch, _piece(line[begin:end], origin, cut_by=cut_by, message=message))
    return batch


def _around_zeros(line: bytes, origin: Origin | None, *, message: bool) -> Batch:
    """The records of a line holding runs of zero bytes, each run one error (see zeros).

    A line with more than a few runs is binary data, not records around a zero-filled
    region: one error, not one per run (a megabyte could hold half a million).
    """
    if next(islice(ZERO_RUN.finditer(line), _MAX_ZERO_RUNS, None), None) is not None:
        count = line.count(b"\0")
        detail = f"binary data, no record: {count} zero bytes in more than {_MAX_ZERO_RUNS} runs"
        return Batch(origin=origin, errors=[located_error(origin, detail)])
    batch = Batch(origin=origin)
    for piece, zeros in split_at_zeros(line):
        cut_by = ZEROS_CUT if zeros else None
        _add(batch, _piece(piece, origin, cut_by=cut_by, message=message))
        if zeros:
            batch.errors.append(located_error(origin, zeros_detail(zeros)))
    return batch


def _piece(piece: bytes, origin: Origin | None, *, cut_by: str | None, message: bool) -> Batch:
    """The records of one piece of a damaged line; none for a blank one.

    The last piece (``cut_by`` None) is read as a line is; one that what follows it cut
    is read alone, and an error then says ``cut_by``.
    """
    if not piece or piece.isspace():
        return Batch(origin=origin)
    if cut_by is None:
        return json_line(piece, origin, message=message)
    try:
        return decode_json_bytes(piece, origin=origin)
    except orjson.JSONDecodeError as exc:
        return invalid_json(origin, exc, cut=cut_by if cut_short(piece, exc) else "")


def _add(batch: Batch, part: Batch) -> None:
    batch.spans += part.spans
    batch.logs += part.logs
    batch.errors += part.errors
