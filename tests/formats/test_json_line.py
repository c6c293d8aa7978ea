"""One JSON Lines record into its batch (tracescore.formats.json_line): damaged lines."""

from __future__ import annotations

from pathlib import Path

import orjson
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.trace import ReadableSpan
from otlp_helpers import span_doc, spans_to_otlp_json_lines, to_collector_json

from tracescore.formats.files import read_file
from tracescore.formats.json_line import decode_json_line

GLUED = "incomplete record, cut short: its writer stopped mid-line (killed?)"


def _lines(sdk_spans: list[ReadableSpan]) -> list[bytes]:
    return [line.encode() + b"\n" for line in spans_to_otlp_json_lines(sdk_spans, batch_size=5)]


def test_a_request_appended_after_a_cut_one_is_read(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    """A Collector killed mid-write, then restarted: its next line lands right after the
    cut one, no newline between. The cut record is one bad record; the next is read."""
    one, two, three = _lines(sdk_spans)
    path = tmp_path / "restarted.jsonl"
    path.write_bytes(one + two[: len(two) // 2] + two + three)
    batches = list(read_file(str(path)))
    assert [b.origin.line for b in batches if b.origin] == [1, 2, 3]
    assert sum(len(b.spans) for b in batches) == len(sdk_spans)  # the cut one's come again
    [error] = [e for b in batches for e in b.errors]
    assert error.line == 2 and error.detail.startswith(GLUED)
    again = batches[1].reread
    assert again is not None and again().spans == batches[1].spans


def test_two_crashes_on_one_line_and_logs(
    sdk_spans: list[ReadableSpan], sdk_logs: list[ReadableLogRecord]
) -> None:
    logs = orjson.dumps(to_collector_json(encode_logs(sdk_logs)))
    one, _, _ = _lines(sdk_spans)
    line = one[:30] + logs[:50] + logs + b"\n"
    batch = decode_json_line(line)
    assert (len(batch.spans), len(batch.logs)) == (0, len(sdk_logs))
    assert [e.detail[: len(GLUED)] for e in batch.errors] == [GLUED, GLUED]


def test_whole_requests_glued_together_are_each_read() -> None:
    first, second = (orjson.dumps(span_doc(traceId=f"{i:032x}")) for i in (1, 2))
    batch = decode_json_line(first + second + b"\n")
    assert [s.trace_id for s in batch.spans] == [f"{1:032x}", f"{2:032x}"]
    assert batch.errors == []


def test_a_piece_that_is_garbage_is_invalid_json_and_the_rest_is_read() -> None:
    record = orjson.dumps(span_doc())
    batch = decode_json_line(b"not json at all" + record + b"\n")
    assert len(batch.spans) == 1
    [error] = batch.errors
    assert error.detail.startswith("invalid JSON")


def test_more_than_a_few_starts_is_not_a_crash_s_leftover() -> None:
    record = orjson.dumps(span_doc())
    batch = decode_json_line(record[:-1] * 9 + record + b"\n")  # nine cut, one whole
    assert batch.spans == []
    [error] = batch.errors
    assert error.detail.startswith("invalid JSON")
    eight = decode_json_line(record[:-1] * 8 + record + b"\n")
    assert len(eight.spans) == 1 and len(eight.errors) == 8
