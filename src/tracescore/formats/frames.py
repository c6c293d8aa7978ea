"""Length-prefixed OTLP protobuf files: one batch per message, damage costing only itself.

The Collector's ``file`` exporter with ``format: proto`` (or ``compression: zstd``) writes
each export request as a 4-byte big-endian length and the message; with
``compression: zstd`` each message is a zstd frame of its own, holding protobuf or (with
``format: json``) one OTLP JSON document. A message is located at ``path:N``, the N-th
message of the file (a damaged stretch counts as one).

Damage costs only what it covers, and reading goes on at the next message:

* a message that does not decode (bad protobuf, bad zstd) is one error, and the message
  its length leads to is read;
* a zero-filled region (:mod:`tracescore.formats.zeros`: a file truncated under its
  writer, data lost in a crash) is one error saying how many bytes it held. Exactly four
  zero bytes where a message starts are an empty request: nothing in it, no error;
* where the lengths no longer lead to messages (a writer killed mid-message and the next
  message appended right after it, a length past the limit, overwritten bytes), the
  bytes up to the next message are one error; a message cut short by the file's end is
  one error, as before.

The next message is recognised by what every message looks like: a length within the
limit; a first byte that every non-empty export request starts with (field 1, a
length-delimited block: ``0x0a``), or a zstd frame; a message that parses down to its
records (protobuf) or decompresses; and after it the file's end, zero bytes, or another
such length and first byte. A run of zero bytes is a place to stop too, when a message
or the end follows it.

A file whose first length is past the limit is damaged at its start only when a message
follows within its first MiB; otherwise it is no such file, one error that says what it
is (text, UTF-16; the console exporter's output is read as such), and nothing more is
read. Damage is searched at ~40 MB/s; an undamaged file costs no search at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Final, Protocol

from tracescore.formats.base import Batch
from tracescore.formats.console import decode_console_text
from tracescore.formats.json_line import json_line
from tracescore.formats.otlp_json import located_error
from tracescore.formats.zeros import zeros_detail
from tracescore.formats.zstd import MAGIC as ZSTD_MAGIC
from tracescore.formats.zstd import ZstdError, decompress_bounded
from tracescore.spans import Origin

__all__ = ["MAX_MESSAGE_BYTES", "read_frames"]

#: The largest message read (a larger length is damage, or no such file).
MAX_MESSAGE_BYTES: Final = 256 * 1024 * 1024
_CHUNK: Final = 1024 * 1024
_ZEROS: Final = b"\0\0\0\0"
#: What marks where a message or a zero run may start: a run of zeros, or the first byte
#: of a request or of a zstd frame four bytes after it. Literals, so the search runs fast
#: over damage (an 8-byte window and a lookahead ran at ~20 MB/s).
_ANCHOR: Final = re.compile(rb"\x00\x00\x00\x00|\x0a|\x28\xb5\x2f\xfd")
_NONZERO: Final = re.compile(rb"[^\x00]")
#: Zero bytes enough to be a zero-filled region whatever follows (a disk block and more).
_LONG_ZEROS: Final = 64 * 1024
#: How far a file whose first length is past the limit is searched for a message: a
#: damaged start, not a file of something else (then one error, as before).
_FIRST_DAMAGE: Final = 1024 * 1024


class _Stream(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


class _Ahead:
    """A stream read forward, with as much lookahead as finding the next message needs.

    ``pos`` is the position in ``buf``; what lies before it was read and may be dropped.
    Offsets given to the methods are relative to ``pos``.
    """

    def __init__(self, stream: _Stream) -> None:
        self._read = stream.read
        self.buf = bytearray()
        self.pos = 0
        self.eof = False

    def ensure(self, n: int) -> int:
        """Read until ``n`` bytes lie past the position, or the end; how many do (<= n)."""
        while len(self.buf) - self.pos < n and not self.eof:
            if self.pos:
                del self.buf[: self.pos]  # bytearray drops its head in O(1)
                self.pos = 0
            chunk = self._read(_CHUNK)
            if chunk:
                self.buf += chunk
            else:
                self.eof = True
        return min(len(self.buf) - self.pos, n)

    def at(self, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``offset`` past the position (fewer at the end)."""
        self.ensure(offset + size)
        start = self.pos + offset
        return bytes(self.buf[start : start + size])

    def skip(self, n: int) -> None:
        self.pos += n

    def read(self, size: int = -1) -> bytes:
        """``stream.read``: the lookahead first, then the stream."""
        if size < 0:
            data = bytes(self.buf[self.pos :]) + self._read()
            self.pos = len(self.buf)
            return data
        self.ensure(size)
        data = bytes(self.buf[self.pos : self.pos + size])
        self.pos += len(data)
        return data

    def zeros(self) -> int:
        """Move past the zero bytes at the position; how many there were.

        They are read through in chunks, never held (a hole can be gigabytes long).
        """
        count = 0
        while self.ensure(1):
            found = _NONZERO.search(self.buf, self.pos)
            end = len(self.buf) if found is None else found.start()
            count += end - self.pos
            self.pos = end
            if found is not None:
                break
        return count

    def unread_zeros(self, n: int) -> None:
        """Put ``n`` zero bytes back before the position (the first bytes of a length)."""
        if self.pos >= n and not any(self.buf[self.pos - n : self.pos]):
            self.pos -= n
        else:  # dropped with the buffer's head, or never in it (skipped by the caller)
            self.buf[self.pos : self.pos] = bytes(n)


def _head_ok(head: bytes) -> bool:
    """A length within the limit, then the first byte of a request or of a zstd frame."""
    size = int.from_bytes(head[:4], "big")
    return (
        len(head) >= 5
        and 0 < size <= MAX_MESSAGE_BYTES
        and (head[4:5] == b"\x0a" or head[4:8] == ZSTD_MAGIC)
    )


def _starts(src: _Ahead, offset: int) -> bool:
    """Whether a message may start at ``offset``: the end, zero bytes, or a plausible head."""
    head = src.at(offset, 8)
    return not head or head[:4] == _ZEROS or _head_ok(head)


def _decodes(data: bytes) -> bool:
    """Whether ``data`` is an export request down to its records, or a zstd frame of one."""
    if data[:4] == ZSTD_MAGIC:
        try:
            data = decompress_bounded(data, MAX_MESSAGE_BYTES)
        except ZstdError:
            return False
        if data.lstrip()[:1] == b"{":
            return True
    # protobuf takes ~20 ms to import, which a process reading only JSON never needs
    from tracescore.formats.otlp_proto import detect_signal  # noqa: PLC0415

    try:
        return detect_signal(data) is not None
    except ValueError:
        return False


def _message(src: _Ahead, offset: int, lead: int = 0) -> bool:
    """Whether a whole message that decodes starts at ``offset``, a message may follow it.

    ``lead``: the message's length starts with that many zero bytes just before
    ``offset``, no longer in ``src`` (the end of a zero run the caller moved past).
    """
    head = bytes(lead) + src.at(offset, 8 - lead)
    if not _head_ok(head):
        return False
    size = int.from_bytes(head[:4], "big")
    body = offset + 4 - lead
    if src.ensure(body + size) < body + size:
        return False
    # protobuf takes ~20 ms to import, which a process reading only JSON never needs
    from tracescore.formats.otlp_proto import well_formed  # noqa: PLC0415

    if head[4:8] != ZSTD_MAGIC and not well_formed(src.buf, src.pos + body, src.pos + body + size):
        return False  # most false starts, without copying what their length covers
    if _starts(src, body + size):  # a false start seldom leads to another
        return _decodes(src.at(body, size))
    # Damage right after it: taken only when it decodes whole, with records and no error
    # (an untouched message between two damaged stretches).
    batch = _decode(src.at(body, size), None)
    return not batch.errors and bool(batch.spans or batch.logs)


def _after_zeros(src: _Ahead, count: int) -> int | None:
    """How many of the ``count`` zero bytes just passed begin the next message's length.

    A whole message there decides; else a length and first byte that look like one (a
    message cut short: its own error follows). None when nothing starts there with any
    of 0-3 of them.
    """
    leads = range(min(3, count) + 1)
    found = next((k for k in leads if _message(src, 0, k)), None)
    if found is None:
        found = next((k for k in leads if _head_ok(bytes(k) + src.at(0, 8 - k))), None)
    return found


def _zeros_stop(src: _Ahead) -> int | None:
    """Where to stop in the run of zero bytes at the position, as an offset; None: not in it.

    At its start when it is long, ends the file, or holds four zeros or more before the
    message after it (a zero-filled region, read as such next); at that message when
    fewer zeros come before it (the end of the damage, and the first bytes of its
    length). Nothing is consumed.
    """
    src.ensure(_LONG_ZEROS + 8)
    found = _NONZERO.search(src.buf, src.pos, src.pos + _LONG_ZEROS)
    if found is None:
        return 0  # long, or zeros to the end
    run = found.start() - src.pos
    start = next((run - k for k in range(min(3, run) + 1) if _message(src, run - k)), None)
    return None if start is None else 0 if start >= 4 else start


def _candidate(src: _Ahead, offset: int, end: int | None = None) -> int | None:
    """The first offset from ``offset`` (before ``end``) where a message or zeros may start.

    Only what is read so far is searched.
    """
    at = src.pos + offset
    limit = len(src.buf) if end is None else min(len(src.buf), src.pos + end + 4)
    while (found := _ANCHOR.search(src.buf, at, limit)) is not None:
        start = found.start()
        candidate = start if src.buf[start] == 0 else start - 4
        if candidate >= src.pos + offset and (end is None or candidate < src.pos + end):
            return candidate - src.pos
        at = start + 1
    return None


def _message_within(src: _Ahead, end: int) -> int | None:
    """The offset of the first message starting after the position and before ``end``."""
    src.ensure(end + 8)
    offset = 1
    while (found := _candidate(src, offset, end)) is not None:
        if src.at(found, 4) != _ZEROS and _message(src, found):
            return found
        offset = found + 1
    return None


def _skip_damage(src: _Ahead) -> int:
    """Move to the next message, zero run that stops, or the end; the bytes passed.

    The byte at the position is passed first: no message starts there.
    """
    passed = 1
    src.skip(1)
    while src.ensure(8) >= 5:  # fewer bytes are no message
        found = _candidate(src, 0)
        if found is None:
            if src.eof:
                break
            step = len(src.buf) - src.pos - 7  # a start may straddle the next chunk
        elif found:
            step = found
        else:
            stop = _zeros_stop(src) if src.at(0, 4) == _ZEROS else 0 if _message(src, 0) else None
            if stop is not None:
                src.skip(stop)
                return passed + stop
            step = 1
        passed += step
        src.skip(step)
    rest = len(src.buf) - src.pos
    src.skip(rest)
    return passed + rest


def read_frames(
    stream: _Stream,
    path: str,
    located: Callable[[int], None],
    *,
    leading_zeros: int = 0,
) -> Iterator[Batch]:
    """The batches of a length-prefixed file, one per message (see the module docstring).

    Args:
        stream: The file's bytes from its first length on.
        path: The file's name, for origins.
        located: Called with each message's number as it is read (to locate a read
            error raised from under this reader).
        leading_zeros: Zero bytes that came before ``stream`` and were skipped already.

    """
    src = _Ahead(stream)
    index = 0
    while src.ensure(1):
        index += 1
        located(index)
        origin = Origin(path, index)
        prefix = src.at(0, 4)
        if leading_zeros or prefix == _ZEROS:
            count = leading_zeros + src.zeros()
            leading_zeros = 0
            batch = _zero_region(src, count, origin)
            if batch is None:  # the zeros skipped before this reader began the first length
                index -= 1
            else:
                yield batch
            continue
        size = int.from_bytes(prefix, "big")
        if len(prefix) < 4:
            detail = f"truncated: {len(prefix)} byte(s) where a 4-byte length was expected"
            yield Batch(origin=origin, errors=[located_error(origin, detail)])
            return
        if size > MAX_MESSAGE_BYTES and index == 1:
            # No such file, or one whose start was damaged: a message soon tells.
            first = None if _not_traces(prefix) else _message_within(src, _FIRST_DAMAGE)
            if first is None:
                yield from _not_length_prefixed(src, prefix, origin)
                return
            src.skip(first)
            detail = f"{first} byte(s) at the start are no message (a damaged start), skipped"
            yield Batch(origin=origin, errors=[located_error(origin, detail)])
            continue
        yield _frame(src, size, origin)


def _zero_region(src: _Ahead, count: int, origin: Origin) -> Batch | None:
    """The batch of ``count`` zero bytes just passed: an empty request, or one error.

    None when they were all the next message's length's own first bytes.
    """
    lead = _after_zeros(src, count) if src.ensure(1) else 0
    if lead is None:
        passed = _skip_damage(src)
        detail = f"{zeros_detail(count)}; then {passed} byte(s) that are no message"
        return Batch(origin=origin, errors=[located_error(origin, detail)])
    src.unread_zeros(lead)
    zeros = count - lead
    if not zeros:
        return None
    if zeros == 4:  # one empty request: a valid message, with nothing in it
        return Batch(origin=origin)
    return Batch(origin=origin, errors=[located_error(origin, zeros_detail(zeros))])


def _frame(src: _Ahead, size: int, origin: Origin) -> Batch:
    """The batch of the message whose length ``size`` is at the position, or one error.

    Taken as its length says when a message may follow it; otherwise it may be a whole
    message with damage after it, or one cut short with the next starting inside what
    its length covers, which a message found inside tells apart.
    """
    whole = size <= MAX_MESSAGE_BYTES and src.ensure(4 + size) == 4 + size
    leads_on = whole and _starts(src, 4 + size)
    inner = None
    if whole and (leads_on or _decodes(src.at(4, size))):
        batch = _decode(src.at(4, size), origin)
        failed = batch.errors and not batch.spans and not batch.logs
        # A message failing whole may be a cut one whose length happens to lead to a
        # message, or to damage: one starting inside it is the reading that loses less.
        inner = _message_within(src, 4 + size) if failed or not leads_on else None
        if inner is None:
            src.skip(4 + size)
            return batch
    available = src.ensure(4 + size) - 4 if size <= MAX_MESSAGE_BYTES else 0
    if inner is not None:
        src.skip(inner)
        passed = inner
    else:
        passed = _skip_damage(src)
    at_end = not src.ensure(1)
    if at_end and not whole and passed == 4 + available:
        detail = f"truncated: message declares {size} bytes, only {available} remain"
    else:
        what = (
            f"message length {size} exceeds {MAX_MESSAGE_BYTES} bytes: a damaged length"
            if size > MAX_MESSAGE_BYTES
            else f"incomplete or damaged message (its length says {size} bytes; a writer"
            " killed mid-message, then the next appended right after it?)"
        )
        where = "to the end of the file" if at_end else "up to the next message"
        detail = f"{what}: {passed} byte(s) skipped {where}"
    return Batch(origin=origin, errors=[located_error(origin, detail)])


def _decode(data: bytes, origin: Origin | None) -> Batch:
    if data[:4] == ZSTD_MAGIC:
        # The file exporter's `compression: zstd`: each message compressed on its own,
        # protobuf or (with `format: json`) one OTLP JSON document.
        try:
            data = decompress_bounded(data, MAX_MESSAGE_BYTES)
        except ZstdError as exc:
            return Batch(origin=origin, errors=[located_error(origin, str(exc))])
        if data.lstrip()[:1] == b"{":
            return json_line(data, origin, message=True)
    # Imported here: protobuf and the OTLP message classes take ~20 ms to import, which a
    # process reading JSON (each `tracescore import` of Collector files) never needs.
    from tracescore.formats.otlp_proto import decode_proto_message  # noqa: PLC0415

    return decode_proto_message(data, origin=origin)


def _not_length_prefixed(src: _Ahead, prefix: bytes, origin: Origin) -> Iterator[Batch]:
    """A first length past the limit, no message soon after: no such file, one error.

    The error says what the file is (text, UTF-16), unless it is the console
    exporter's output, which is read.
    """
    src.skip(4)
    if _is_text(prefix):  # console exporter output after the agent's prints?
        console = decode_console_text(prefix, src.read, origin.path)
        if console is not None:
            yield console
            return
    detail = _not_traces(prefix) or (
        f"message length {int.from_bytes(prefix, 'big')} exceeds {MAX_MESSAGE_BYTES} bytes:"
        " not a length-prefixed OTLP protobuf file, or a corrupt one"
    )
    yield Batch(origin=origin, errors=[located_error(origin, detail)])


def _is_text(head: bytes) -> bool:
    """Printable ASCII: the start of a text file (a length prefix this long is not)."""
    return all(32 <= byte < 127 or byte in b"\t\r\n" for byte in head)


def _not_traces(head: bytes) -> str | None:
    """What a file starting with ``head`` is, when it is text and not protobuf."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "not a trace file: UTF-16 text (tracescore reads UTF-8: convert it)"
    if not _is_text(head):
        return None
    return (
        f"not a trace file: text starting {head.decode('ascii')!r}, not JSON (OTLP JSON"
        " starts with { or [); tracescore reads OTLP JSON, JSON Lines and length-prefixed"
        " OTLP protobuf, plain or gzip/zstd-compressed, and the OTel SDK's console exporter"
        " output"
    )
