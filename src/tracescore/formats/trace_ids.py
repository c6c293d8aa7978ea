"""The trace ids of OTLP JSON Lines, and how many records they hold, without decoding spans.

A parallel import's worker learns which of its traces may cross a cut from the records
next to its part (:mod:`tracescore.part_worker`): about ten thousand on each side, of
which it needs only the trace ids and the record count (spans plus log records). Read
with the full decoder, that took 0.22 s of a ~4 s part of the 200k-span benchmark; this
reads ~28 MB of it in 0.03-0.04 s (msgspec skips every other field without building it).

For a line in the Collector's spelling with canonical ids (32 lowercase hex digits) the
answer is the full reader's. Any other line (another spelling, base64 ids, a malformed
id, JSON that does not parse) is read by the full decoder, so that its ids are the ones
the import will see. One difference is left: the fields skipped here are not checked,
so a span the import rejects as a bad record (a kind out of range, say), or a whole line
it rejects (invalid UTF-8 or a number out of range in a skipped field), is counted
here. That only makes a worker read fewer records than it meant to near its cut; the
cut's join then finds any trace met on both sides of it and the import runs in one
process instead (:mod:`tracescore.cuts`): slower, never different.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from tracescore.formats.json_line import decode_json_line

__all__ = ["add_line_trace_ids"]

_LOWER_HEX: Final = "0123456789abcdef"


# Only the containers refuse unknown keys: another spelling of ``scopeSpans`` must not
# hide its spans. A span or log record may hold anything besides its ``traceId``.
class _SpanId(Struct, gc=False):
    traceId: str


class _LogId(Struct, gc=False):
    traceId: str = ""


class _ScopeSpans(Struct, forbid_unknown_fields=True, gc=False):
    scope: Raw = Raw(b"null")
    spans: list[_SpanId] = []
    schemaUrl: Raw = Raw(b"null")


class _ResourceSpans(Struct, forbid_unknown_fields=True, gc=False):
    resource: Raw = Raw(b"null")
    scopeSpans: list[_ScopeSpans] = []
    schemaUrl: Raw = Raw(b"null")


class _ScopeLogs(Struct, forbid_unknown_fields=True, gc=False):
    scope: Raw = Raw(b"null")
    logRecords: list[_LogId] = []
    schemaUrl: Raw = Raw(b"null")


class _ResourceLogs(Struct, forbid_unknown_fields=True, gc=False):
    resource: Raw = Raw(b"null")
    scopeLogs: list[_ScopeLogs] = []
    schemaUrl: Raw = Raw(b"null")


class _Document(Struct, forbid_unknown_fields=True, gc=False):
    resourceSpans: list[_ResourceSpans] | UnsetType = UNSET
    resourceLogs: list[_ResourceLogs] | UnsetType = UNSET


_DECODER: Final = msgspec.json.Decoder(_Document)


def add_line_trace_ids(line: bytes, ids: set[str]) -> int:
    """Add the trace ids of one JSON Lines line's spans and logs to ``ids``; its records.

    The records are what the import counts for the line: its spans and log records, none
    for a line that is not JSON. Ids are as the import reads them (hex; log records
    without a trace id add none).
    """
    found = _collector_ids(line)
    if found is not None:
        ids.update(found[0])
        return found[1]
    batch = decode_json_line(line)  # as the import reads it: a bad record has none
    ids.update(span.trace_id for span in batch.spans)
    ids.update(log.trace_id for log in batch.logs if log.trace_id)
    return len(batch.spans) + len(batch.logs)


def _collector_ids(line: bytes) -> tuple[Iterable[str], int] | None:
    """The line's trace ids and record count, or None when the full decoder must say."""
    try:
        doc = _DECODER.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return None
    if doc.resourceSpans is UNSET and doc.resourceLogs is UNSET:
        return None  # an empty object, or another spelling
    ids: set[str] = set()
    count = 0
    if doc.resourceSpans is not UNSET:
        for block in doc.resourceSpans:
            for scope in block.scopeSpans:
                count += len(scope.spans)
                ids.update(span.traceId for span in scope.spans)
    if doc.resourceLogs is not UNSET:
        for log_block in doc.resourceLogs:
            for scope_logs in log_block.scopeLogs:
                count += len(scope_logs.logRecords)
                ids.update(log.traceId for log in scope_logs.logRecords if log.traceId)
    for trace_id in ids:
        # Canonical only: the import reads other spellings (base64, upper case) to hex,
        # and an all-zero id of a log record to none.
        if len(trace_id) != 32 or trace_id.strip(_LOWER_HEX) or not trace_id.strip("0"):
            return None
    return ids, count
