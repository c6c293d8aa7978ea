"""The trace-id scan of a parallel import's edges (``tracescore.formats.trace_ids``).

Agreement with the full reader on generated and mutated documents is a property of
``test_otlp_json_properties.py``. Here: real exporter output, the spellings that must go
to the full reader, what a line that is not a document counts, and that the scan really
skips the full decoder for the Collector's spelling.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.trace import ReadableSpan
from otlp_helpers import span_doc, to_collector_json, to_tempo_json

from tracescore.formats import trace_ids
from tracescore.formats.base import Batch
from tracescore.formats.files import json_lines_between, read_json_lines
from tracescore.formats.json_line import decode_json_line
from tracescore.formats.otlp_json_typed import decode_json_bytes
from tracescore.formats.trace_ids import add_line_trace_ids

TRACE = "5b8efff798038103d269b633813fc60c"


def _scan(line: bytes) -> tuple[set[str], int]:
    ids: set[str] = set()
    return ids, add_line_trace_ids(line, ids)


def _full(line: bytes) -> tuple[set[str], int]:
    """What the import reads from the line: its trace ids and records."""
    batch = decode_json_bytes(line, origin=None)
    ids = {s.trace_id for s in batch.spans} | {g.trace_id for g in batch.logs if g.trace_id}
    return ids, len(batch.spans) + len(batch.logs)


@pytest.fixture
def full_reads(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Lines the scan handed to the full decoder (it still decodes them)."""
    seen: list[bytes] = []

    def spy(data: bytes) -> Batch:
        seen.append(data)
        return decode_json_line(data)

    monkeypatch.setattr(trace_ids, "decode_json_line", spy)
    return seen


def test_collector_output_is_scanned_without_decoding_spans(
    sdk_spans: list[ReadableSpan], sdk_logs: list[ReadableLogRecord], full_reads: list[bytes]
) -> None:
    doc = {**to_collector_json(encode_spans(sdk_spans)), **to_collector_json(encode_logs(sdk_logs))}
    line = orjson.dumps(doc)
    ids, records = _scan(line)
    assert full_reads == []
    assert (ids, records) == _full(line)
    assert {f"{s.context.trace_id:032x}" for s in sdk_spans if s.context} < ids  # and a log's
    assert records == len(sdk_spans) + 3


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(span_doc(traceId=TRACE.upper()), id="upper-case hex"),
        pytest.param(
            span_doc(traceId=base64.b64encode(bytes.fromhex(TRACE)).decode()), id="base64 id"
        ),
        pytest.param(
            {"resource_spans": [{"scope_spans": [{"spans": [{"trace_id": TRACE}]}]}]},
            id="snake_case",
        ),
        pytest.param(
            {"resourceSpans": [{"scope_spans": span_doc()["resourceSpans"][0]["scopeSpans"]}]},
            id="snake_case container",
        ),
        pytest.param(span_doc(traceId="0" * 32), id="all-zero span id: a bad record"),
        pytest.param(span_doc(traceId="zz"), id="malformed id"),
        pytest.param(
            {"resourceLogs": [{"scopeLogs": [{"logRecords": [{"traceId": "0" * 32}]}]}]},
            id="all-zero log trace id: none",
        ),
        pytest.param({"resourceSpans": None}, id="null where a list belongs"),
        pytest.param({}, id="empty object"),
        pytest.param({"result": span_doc()}, id="Jaeger wrapper"),
    ],
)
def test_other_spellings_are_read_by_the_full_decoder(
    doc: dict[str, Any], full_reads: list[bytes]
) -> None:
    line = orjson.dumps(doc)
    assert _scan(line) == _full(line)
    assert full_reads == [line]


def test_tempo_output_gives_the_ids_the_import_reads(sdk_spans: list[ReadableSpan]) -> None:
    line = orjson.dumps(to_tempo_json(encode_spans(sdk_spans)))
    ids, records = _scan(line)
    assert (ids, records) == _full(line)
    assert records == len(sdk_spans) and all(len(i) == 32 and i.islower() for i in ids)


def test_logs_without_a_trace_id_count_but_add_no_id(full_reads: list[bytes]) -> None:
    logs = [{"body": {"stringValue": "x"}}, {"traceId": ""}, {"traceId": TRACE}]
    line = orjson.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": logs}]}]})
    assert _scan(line) == ({TRACE}, 3) == _full(line)
    assert full_reads == []


@pytest.mark.parametrize(
    "line",
    [b"not json\n", b'{"resourceSpans": [\n', b"[[1, 2]]\n", b'"text"\n'],
)
def test_a_line_that_is_not_a_document_counts_no_record(line: bytes, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(line)
    [batch] = read_json_lines(str(path), 0, len(line), 1)
    assert (batch.spans, batch.logs) == ([], []) and len(batch.errors) == 1  # bad, located
    assert _scan(line) == (set(), 0)


def test_a_range_gives_the_lines_the_import_reads(tmp_path: Path) -> None:
    """Blank lines skipped, the line holding ``end - 1`` the last, CRLF and a last line
    without its newline kept whole, ids as the import reads them."""
    lines = [
        orjson.dumps(span_doc(traceId=f"{i + 1:032x}")) + (b"\r\n" if i % 2 else b"\n")
        for i in range(6)
    ]
    data = lines[0] + b"\n  \n" + b"".join(lines[1:])
    data = data[:-1]  # the last line cut before its newline
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    start = len(lines[0]) + 4
    end = start + len(lines[1]) + 1  # one byte into the third line: it is read too
    got = list(json_lines_between(str(path), start, end))
    assert got == lines[1:3]
    whole = list(json_lines_between(str(path), 0, len(data)))
    assert [line.strip() for line in whole] == [line.strip() for line in lines]
    for batch, line in zip(read_json_lines(str(path), 0, len(data), 1), whole, strict=True):
        assert _scan(line) == ({s.trace_id for s in batch.spans}, len(batch.spans))


def test_records_around_zero_bytes_are_counted_as_the_import_reads_them(
    full_reads: list[bytes], tmp_path: Path
) -> None:
    """A zero-filled region in a line (see tracescore.formats.zeros) ends the record
    before it: the records on either side are read, the zeros are none."""
    first, second = (orjson.dumps(span_doc(traceId=f"{i:032x}")) for i in (1, 2))
    line = b"\0" * 9 + first + b"\0" * 3 + second[:20] + b"\0" + second + b"\n"
    ids, records = _scan(line)
    assert full_reads == [line]
    assert (ids, records) == ({f"{1:032x}", f"{2:032x}"}, 2)
    path = tmp_path / "zeros.jsonl"
    path.write_bytes(line)
    [batch] = read_json_lines(str(path), 0, len(line), 1)
    assert ({s.trace_id for s in batch.spans}, len(batch.spans)) == (ids, records)
    assert len(batch.errors) == 4  # three runs of zeros, the record they cut
