from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import orjson
import pytest
import zstandard
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.trace import ReadableSpan
from otlp_helpers import (
    length_prefixed,
    logs_to_otlp_json,
    logs_to_proto_file_bytes,
    spans_to_otlp_json_lines,
    spans_to_proto_file_bytes,
    to_collector_json,
    to_tempo_json,
)

from tracescore.exceptions import InputError
from tracescore.formats.base import Batch
from tracescore.formats.files import is_json_lines, read_file, read_json_lines
from tracescore.formats.sdk import from_readable_span
from tracescore.formats.zstd import ZstdError, ZstdFrames, decompress_bounded
from tracescore.spans import Origin


def _write(path: Path, data: bytes | str) -> str:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return str(path)


def _span_ids(batches: Iterable[Batch]) -> list[str]:
    return sorted(span.span_id for batch in batches for span in batch.spans)


def _expected_ids(sdk_spans: list[ReadableSpan]) -> list[str]:
    return sorted(from_readable_span(span).span_id for span in sdk_spans)


# --- JSON Lines -------------------------------------------------------------------------


def test_json_lines_one_batch_per_line_with_locations(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    lines = spans_to_otlp_json_lines(sdk_spans, batch_size=5)  # traces spread over lines
    path = _write(tmp_path / "traces.jsonl", "\n".join(lines) + "\n")
    batches = list(read_file(path))
    assert [batch.origin for batch in batches] == [Origin(path, n) for n in (1, 2, 3)]
    assert all(span.origin == batch.origin for batch in batches for span in batch.spans)
    assert _span_ids(batches) == _expected_ids(sdk_spans)
    traces_per_line = [{span.trace_id for span in batch.spans} for batch in batches]
    assert traces_per_line[0] & traces_per_line[1]  # one trace is split across lines


def test_a_range_of_json_lines_reports_the_bytes_read_before_each_batch(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    lines = spans_to_otlp_json_lines(sdk_spans, batch_size=5)
    data = ("\n".join(lines) + "\n\n").encode()
    path = _write(tmp_path / "traces.jsonl", data)
    start = len(lines[0]) + 1  # the second line on, blank last line included
    reported: list[int] = []
    seen: list[int] = []
    for batch in read_json_lines(path, start, len(data), 2, progress=reported.append):
        seen.append(len(reported))  # reported before the batch comes out
        assert batch.origin is not None
    assert seen == [1, 2]
    assert reported == [len(lines[1]) + 1, len(lines[1]) + len(lines[2]) + 2, len(data) - start]


@pytest.mark.parametrize("snake", [False, True], ids=["collector", "snake_case"])
def test_each_json_line_can_be_decoded_again_into_equal_records(
    tmp_path: Path, sdk_spans: list[ReadableSpan], sdk_logs: list[ReadableLogRecord], snake: bool
) -> None:
    """What parking (tracescore.assembly) relies on: ``reread`` gives the same records."""
    lines = spans_to_otlp_json_lines(sdk_spans, batch_size=4, snake=snake)
    lines.insert(1, logs_to_otlp_json(sdk_logs, snake=snake))
    data = "\n".join(lines).encode()
    path = _write(tmp_path / "t.jsonl", data)
    second = len(lines[0]) + 1
    for batches in (list(read_file(path)), list(read_json_lines(path, second, len(data), 2))):
        assert batches and all(b.spans or b.logs for b in batches)
        for batch in batches:
            assert batch.reread is not None
            again = batch.reread()
            assert (again.origin, again.spans, again.logs) == (
                batch.origin,
                batch.spans,
                batch.logs,
            )
            assert again.spans is not batch.spans


def test_trace_and_log_lines_mixed_with_blank_lines(
    tmp_path: Path, sdk_spans: list[ReadableSpan], sdk_logs: list[ReadableLogRecord]
) -> None:
    [spans] = spans_to_otlp_json_lines(sdk_spans, batch_size=100)
    text = f"\n{spans}\n\n   \n{logs_to_otlp_json(sdk_logs)}\n\n"
    batches = list(read_file(_write(tmp_path / "mixed.json", text)))
    assert [(b.origin.line, len(b.spans), len(b.logs)) for b in batches] == [  # type: ignore[union-attr]
        (2, len(sdk_spans), 0),
        (5, 0, 3),
    ]


def test_malformed_line_mid_file_is_an_error_and_reading_goes_on(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    first, second, third = spans_to_otlp_json_lines(sdk_spans, batch_size=4)
    path = _write(tmp_path / "t.jsonl", f"{first}\n{second[:-40]}\n{third}\n")
    batches = list(read_file(path))
    assert len(batches) == 3
    [error] = batches[1].errors
    assert (error.path, error.line) == (path, 2)
    assert error.detail.startswith("invalid JSON: ")
    assert "line 1 column" in error.detail
    assert len(error.detail) <= 220
    assert len(batches[0].spans) == len(batches[2].spans) == 4


def test_bad_first_line_then_valid_lines_is_still_json_lines(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    lines = spans_to_otlp_json_lines(sdk_spans, batch_size=6)
    path = _write(tmp_path / "t.jsonl", '{"resourceSpans": [\n' + "\n".join(lines))
    batches = list(read_file(path))
    assert [b.origin.line for b in batches] == [1, 2, 3]  # type: ignore[union-attr]
    assert batches[0].errors[0].line == 1
    assert _span_ids(batches[1:]) == _expected_ids(sdk_spans)


@pytest.mark.parametrize("damaged", [2, 3])
def test_json_lines_whose_first_lines_are_all_damaged_still_come_out(
    tmp_path: Path, sdk_spans: list[ReadableSpan], damaged: int
) -> None:
    """Two damaged lines first made the file read as one JSON document: one error, and
    every valid line after them lost."""
    lines = spans_to_otlp_json_lines(sdk_spans, batch_size=6)
    bad = ['{"resourceSpans": [', '{"broken', "not json"][:damaged]
    path = _write(tmp_path / "t.jsonl", "\n".join([*bad, "", *lines]) + "\n")
    batches = list(read_file(path))
    errors = [error for batch in batches for error in batch.errors]
    assert [(e.path, e.line) for e in errors] == [(path, n) for n in range(1, damaged + 1)]
    assert all(e.detail.startswith("invalid JSON: ") for e in errors)
    assert _span_ids(batches) == _expected_ids(sdk_spans)
    first = damaged + 2  # after the damaged lines and a blank one
    good = [b.origin.line for b in batches if b.spans]  # type: ignore[union-attr]
    assert good == list(range(first, first + len(lines)))
    for batch in batches[damaged:]:  # each line can be decoded again (parking), the same way
        assert batch.reread is not None
        assert batch.reread().spans == batch.spans


def test_bad_span_in_a_line_is_located_at_path_line_and_span(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    doc = to_collector_json(encode_spans(sdk_spans[:3]))
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[0]["traceId"] = "nope"
    ok = json.dumps(to_collector_json(encode_spans(sdk_spans[3:5])))
    path = _write(tmp_path / "t.jsonl", f"{ok}\n{json.dumps(doc)}\n")
    _, batch = read_file(path)
    [error] = batch.errors
    assert str(error).startswith(f"{path}:2: span {spans[0]['spanId']}: ")
    assert len(batch.spans) == 2


def test_two_megabyte_attribute_value(tmp_path: Path) -> None:
    big = "x" * (2 * 1024 * 1024)
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "09acc3d9233945f0",
        "attributes": [{"key": "gen_ai.input.messages", "value": {"stringValue": big}}],
    }]}]}]}  # fmt: skip
    path = _write(tmp_path / "big.jsonl", orjson.dumps(doc) + b"\n" + orjson.dumps(doc))
    batches = list(read_file(path))
    assert [len(b.spans) for b in batches] == [1, 1]
    assert batches[1].spans[0].attributes["gen_ai.input.messages"] == big


def test_utf8_bom_is_skipped(tmp_path: Path, sdk_spans: list[ReadableSpan]) -> None:
    [line] = spans_to_otlp_json_lines(sdk_spans, batch_size=100)
    batches = list(read_file(_write(tmp_path / "bom.json", b"\xef\xbb\xbf" + line.encode())))
    assert _span_ids(batches) == _expected_ids(sdk_spans)


# --- single documents -------------------------------------------------------------------


def test_pretty_printed_document_is_read_whole(
    tmp_path: Path, sdk_spans: list[ReadableSpan], sdk_logs: list[ReadableLogRecord]
) -> None:
    doc = to_collector_json(encode_spans(sdk_spans))
    path = _write(tmp_path / "trace.json", json.dumps(doc, indent=2))
    [batch] = read_file(path)
    assert batch.origin == Origin(path)
    assert _span_ids([batch]) == _expected_ids(sdk_spans)


@pytest.mark.parametrize("wrap", ["tempo", "jaeger"])
def test_pretty_printed_tempo_and_jaeger_downloads(
    tmp_path: Path, sdk_spans: list[ReadableSpan], wrap: str
) -> None:
    request = encode_spans(sdk_spans)
    doc = to_tempo_json(request) if wrap == "tempo" else {"result": to_collector_json(request)}
    [batch] = read_file(_write(tmp_path / "download.json", json.dumps(doc, indent=4)))
    assert batch.errors == []
    assert _span_ids([batch]) == _expected_ids(sdk_spans)


def test_hand_wrapped_document_whose_second_line_is_an_object(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    doc = to_collector_json(encode_spans(sdk_spans))
    [block] = doc["resourceSpans"]
    text = '{"resourceSpans": [\n' + json.dumps(block) + "\n]}\n"
    [batch] = read_file(_write(tmp_path / "wrapped.json", text))
    assert batch.errors == []
    assert _span_ids([batch]) == _expected_ids(sdk_spans)


def test_a_last_line_cut_mid_write_says_so(tmp_path: Path, sdk_spans: list[ReadableSpan]) -> None:
    # A file the Collector is still writing: its last line stops mid-JSON, no newline.
    first, second = spans_to_otlp_json_lines(sdk_spans, batch_size=4)[:2]
    data = f"{first}\n{second[:-40]}".encode()
    path = _write(tmp_path / "t.jsonl", data)
    start = data.index(b"\n") + 1
    for batches in (list(read_file(path)), list(read_json_lines(path, start, len(data), 2))):
        [error] = batches[-1].errors
        assert (error.path, error.line) == (path, 2)
        assert error.detail.startswith(
            "incomplete last line (no newline at the end of the file: still being written, "
            "or cut short): unexpected end of data"
        )
    assert len(next(iter(read_file(path))).spans) == 4


@pytest.mark.parametrize(
    ("last", "detail"),
    [
        ("{second}", None),  # complete, only the newline missing: read
        ('{second}"', "invalid JSON: "),  # wrong, not cut: no guess about why
        ("{cut}\n", "invalid JSON: "),  # cut, but a newline follows: a broken record
    ],
)
def test_only_a_cut_unterminated_last_line_gets_the_hint(
    tmp_path: Path, sdk_spans: list[ReadableSpan], last: str, detail: str | None
) -> None:
    first, second = spans_to_otlp_json_lines(sdk_spans, batch_size=4)[:2]
    text = f"{first}\n" + last.format(second=second, cut=second[:-40])
    batches = list(read_file(_write(tmp_path / "t.jsonl", text)))
    errors = [error.detail for batch in batches for error in batch.errors]
    if detail is None:
        assert errors == [] and len(batches) == 2
    else:
        [error] = errors
        assert error.startswith(detail)


def test_a_pretty_document_cut_short_says_so(tmp_path: Path, sdk_spans: list[ReadableSpan]) -> None:
    text = json.dumps(to_collector_json(encode_spans(sdk_spans[:1])), indent=2)
    [batch] = read_file(_write(tmp_path / "trace.json", text[: len(text) // 2]))
    [error] = batch.errors
    assert error.detail.startswith("the JSON document ends early (the file is cut short")


def test_pretty_printed_document_with_a_syntax_error_points_at_its_line(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    text = json.dumps(to_collector_json(encode_spans(sdk_spans[:1])), indent=2)
    lines = text.splitlines()
    lines[5] = lines[5] + " oops"
    path = _write(tmp_path / "trace.json", "\n".join(lines))
    [batch] = read_file(path)
    [error] = batch.errors
    assert (error.path, error.line) == (path, 6)
    assert "invalid JSON" in error.detail


def test_empty_and_blank_files_yield_nothing(tmp_path: Path) -> None:
    assert list(read_file(_write(tmp_path / "empty.jsonl", b""))) == []
    assert list(read_file(_write(tmp_path / "blank.jsonl", b"\n \n\t\n"))) == []
    assert list(read_file(_write(tmp_path / "empty.gz", gzip.compress(b"")))) == []


# --- gzip and protobuf ------------------------------------------------------------------


def test_gzip_json_lines(tmp_path: Path, sdk_spans: list[ReadableSpan]) -> None:
    lines = spans_to_otlp_json_lines(sdk_spans, batch_size=5)
    data = gzip.compress(("\n".join(lines) + "\n").encode())
    batches = list(read_file(_write(tmp_path / "traces.jsonl.gz", data)))
    assert [b.origin.line for b in batches] == [1, 2, 3]  # type: ignore[union-attr]
    assert _span_ids(batches) == _expected_ids(sdk_spans)


def test_truncated_gzip_is_a_located_error(tmp_path: Path, sdk_spans: list[ReadableSpan]) -> None:
    lines = spans_to_otlp_json_lines(sdk_spans, batch_size=1)
    data = gzip.compress(("\n".join(lines) + "\n").encode())
    batches = list(read_file(_write(tmp_path / "cut.gz", data[: len(data) // 2])))
    *good, last = batches
    assert good
    assert all(not b.errors for b in good)
    [error] = last.errors
    assert "compressed data is corrupt or truncated" in error.detail
    assert error.path == str(tmp_path / "cut.gz")


def test_length_prefixed_protobuf_traces_and_logs(
    tmp_path: Path, sdk_spans: list[ReadableSpan], sdk_logs: list[ReadableLogRecord]
) -> None:
    data = spans_to_proto_file_bytes(sdk_spans, batch_size=5) + logs_to_proto_file_bytes(sdk_logs)
    path = _write(tmp_path / "otlp.binpb", data)
    batches = list(read_file(path))
    assert [b.origin for b in batches] == [Origin(path, n) for n in (1, 2, 3, 4)]
    assert _span_ids(batches) == _expected_ids(sdk_spans)
    assert [len(b.logs) for b in batches] == [0, 0, 0, 3]


def test_protobuf_with_invalid_utf8_strings_is_read(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    # The Collector's file exporter writes what it received: strings need not be UTF-8.
    data = spans_to_proto_file_bytes(sdk_spans, batch_size=5).replace(
        b"get_weather", b"get\xffweather"
    )
    batches = list(read_file(_write(tmp_path / "otlp.binpb", data)))
    assert [b.errors for b in batches] == [[]] * len(batches)
    assert _span_ids(batches) == _expected_ids(sdk_spans)
    names = {span.name for batch in batches for span in batch.spans}
    assert "execute_tool get\ufffdweather_0" in names


def test_gzipped_protobuf(tmp_path: Path, sdk_spans: list[ReadableSpan]) -> None:
    data = gzip.compress(spans_to_proto_file_bytes(sdk_spans, batch_size=5))
    assert _span_ids(read_file(_write(tmp_path / "p.gz", data))) == _expected_ids(sdk_spans)


@pytest.mark.parametrize("cut", [2, 30])
def test_truncated_protobuf_tail_is_an_error_and_ends_the_file(
    tmp_path: Path, sdk_spans: list[ReadableSpan], cut: int
) -> None:
    data = spans_to_proto_file_bytes(sdk_spans, batch_size=6)
    path = _write(tmp_path / "cut.binpb", data[:-cut] if cut == 30 else data + b"\x00\x00")
    first, *rest = read_file(path)
    assert len(first.spans) == 6
    last = rest[-1]
    [error] = last.errors
    assert error.path == path
    assert error.line == (2 if cut == 30 else 3)
    assert "truncated" in error.detail


def test_absurd_length_prefix_is_rejected(tmp_path: Path) -> None:
    [batch] = read_file(_write(tmp_path / "x.bin", b"\x7f\xff\xff\xff" + b"\x01" * 10))
    [error] = batch.errors
    assert error.detail == (
        "message length 2147483647 exceeds 268435456 bytes: not a length-prefixed OTLP"
        " protobuf file, or a corrupt one"
    )


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_utf16_json_is_named_as_such(tmp_path: Path, encoding: str) -> None:
    data = '{"resourceSpans": []}'.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    [batch] = read_file(_write(tmp_path / "saved-on-windows.json", data))
    [error] = batch.errors
    assert (error.line, error.detail) == (
        1,
        "not a trace file: UTF-16 text (tracescore reads UTF-8: convert it)",
    )


@pytest.mark.parametrize("text", [b'"""A demo agent."""\n', b"# notes\n", b"hello world"])
def test_a_text_file_that_is_not_json_is_named_as_such(tmp_path: Path, text: bytes) -> None:
    """Read as protobuf, its first four bytes were an absurd length; now the error says
    what the file is and what tracescore reads (a directory of exports with a README)."""
    [batch] = read_file(_write(tmp_path / "README", text))
    [error] = batch.errors
    assert error.line == 1
    assert f"not a trace file: text starting {text[:4].decode()!r}" in error.detail
    assert "OTLP JSON, JSON Lines and length-prefixed OTLP protobuf" in error.detail


# --- stdin and paths --------------------------------------------------------------------


def test_stdin_streams_with_and_without_peek(sdk_spans: list[ReadableSpan]) -> None:
    lines = spans_to_otlp_json_lines(sdk_spans, batch_size=5)
    data = ("\n".join(lines) + "\n").encode()
    for stream in (io.BytesIO(data), io.BufferedReader(io.BytesIO(data))):
        batches = list(read_file("-", stdin=stream))
        assert [b.origin for b in batches] == [Origin("-", n) for n in (1, 2, 3)]
    gz = io.BytesIO(gzip.compress(spans_to_proto_file_bytes(sdk_spans)))
    assert _span_ids(read_file("-", stdin=gz)) == _expected_ids(sdk_spans)


def test_unreadable_paths_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing\.jsonl: cannot open"):
        list(read_file(str(tmp_path / "missing.jsonl")))
    with pytest.raises(InputError, match="cannot open"):
        list(read_file(str(tmp_path)))


# --- zstd: whole files and the file exporter's per-message compression ------------------


def _zstd_frames(data: bytes, frame: int) -> bytes:
    """``data`` as concatenated zstd frames of ``frame`` bytes each, as the Collector's
    native compression writes with rotation (one frame per write)."""
    compressor = zstandard.ZstdCompressor()
    return b"".join(compressor.compress(data[i : i + frame]) for i in range(0, len(data), frame))


def test_zstd_json_lines_in_one_or_many_frames(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    lines = spans_to_otlp_json_lines(sdk_spans, batch_size=5)
    plain = ("\n".join(lines) + "\n").encode()
    for frame in (len(plain), 100):  # 100: frames end mid-line
        path = _write(tmp_path / f"traces-{frame}.jsonl.zst", _zstd_frames(plain, frame))
        batches = list(read_file(path))
        assert [b.origin for b in batches] == [Origin(path, n) for n in (1, 2, 3)]
        assert _span_ids(batches) == _expected_ids(sdk_spans)
    stream = zstandard.ZstdCompressor().compressobj()  # a streamed frame, size unknown
    streamed = stream.compress(plain) + stream.flush()
    assert _span_ids(read_file("-", stdin=io.BytesIO(streamed))) == _expected_ids(sdk_spans)


def test_zstd_length_prefixed_protobuf(tmp_path: Path, sdk_spans: list[ReadableSpan]) -> None:
    data = zstandard.ZstdCompressor().compress(spans_to_proto_file_bytes(sdk_spans, batch_size=5))
    assert _span_ids(read_file(_write(tmp_path / "p.zst", data))) == _expected_ids(sdk_spans)


def test_truncated_zstd_is_a_located_error(tmp_path: Path, sdk_spans: list[ReadableSpan]) -> None:
    lines = spans_to_otlp_json_lines(sdk_spans, batch_size=1)
    data = _zstd_frames(("\n".join(lines) + "\n").encode(), 2000)
    batches = list(read_file(_write(tmp_path / "cut.zst", data[: len(data) // 2])))
    *good, last = batches
    assert good
    assert all(not b.errors for b in good)
    [error] = last.errors
    assert "compressed data is corrupt or truncated" in error.detail
    assert "truncated" in error.detail
    assert error.path == str(tmp_path / "cut.zst")


def test_corrupt_zstd_is_a_located_error(tmp_path: Path) -> None:
    [batch] = read_file(_write(tmp_path / "bad.zst", b"\x28\xb5\x2f\xfd" + b"\xff" * 32))
    [error] = batch.errors
    assert "compressed data is corrupt or truncated: invalid zstd data" in error.detail


def test_per_message_zstd_of_protobuf_and_json(
    tmp_path: Path, sdk_spans: list[ReadableSpan], sdk_logs: list[ReadableLogRecord]
) -> None:
    # The file exporter with `compression: zstd`: each message compressed on its own,
    # length-prefixed; `format: proto` gives protobuf, `format: json` OTLP JSON.
    compress = zstandard.ZstdCompressor().compress
    proto = [
        encode_spans(sdk_spans[:5]).SerializeToString(),
        encode_spans(sdk_spans[5:]).SerializeToString(),
    ]
    path = _write(tmp_path / "proto.zst.bin", length_prefixed(compress(m) for m in proto))
    batches = list(read_file(path))
    assert [b.origin for b in batches] == [Origin(path, 1), Origin(path, 2)]
    assert _span_ids(batches) == _expected_ids(sdk_spans)
    json_messages = [
        *spans_to_otlp_json_lines(sdk_spans, batch_size=5),
        logs_to_otlp_json(sdk_logs),
    ]
    path = _write(
        tmp_path / "json.zst.bin", length_prefixed(compress(m.encode()) for m in json_messages)
    )
    batches = list(read_file(path))
    assert [b.origin for b in batches] == [Origin(path, n) for n in (1, 2, 3, 4)]
    assert _span_ids(batches) == _expected_ids(sdk_spans)
    assert [len(b.logs) for b in batches] == [0, 0, 0, 3]


def test_a_corrupt_zstd_message_is_one_error_and_the_next_is_read(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    compress = zstandard.ZstdCompressor().compress
    good = compress(encode_spans(sdk_spans[:3]).SerializeToString())
    cut = good[: len(good) // 2]
    path = _write(
        tmp_path / "m.bin", length_prefixed([good, cut, b"\x28\xb5\x2f\xfd" + b"\xff" * 32, good])
    )
    batches = list(read_file(path))
    assert [len(b.spans) for b in batches] == [3, 0, 0, 3]
    assert [b.errors[0].line for b in batches[1:3]] == [2, 3]
    assert "truncated" in batches[1].errors[0].detail
    assert "invalid zstd data" in batches[2].errors[0].detail


def test_zstd_output_is_bounded() -> None:
    # 16 KB that inflate to 500 MB: refused near the limit, not after inflating it all.
    bomb = zstandard.ZstdCompressor().compress(b"\x00" * (500 << 20))
    assert len(bomb) < 32 << 10
    with pytest.raises(ZstdError, match="more than 1048576 bytes"):
        decompress_bounded(bomb, 1 << 20)
    out = bytearray()
    rest = ZstdFrames().decompress_into(bomb, out, 1 << 20)
    assert 1 << 20 <= len(out) <= (1 << 20) + (64 << 15)  # one 64-byte slice over at most
    assert rest
    assert decompress_bounded(zstandard.ZstdCompressor().compress(b"x" * 100), 100) == b"x" * 100


def test_reading_json_never_imports_protobuf(tmp_path: Path) -> None:
    # `tracescore import` of Collector JSON files forks its workers from a process that
    # imported only what JSON needs; protobuf comes in with the first protobuf input.
    path = tmp_path / "t.jsonl"
    span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "s"}
    span |= {"startTimeUnixNano": "1", "endTimeUnixNano": "2"}
    line = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    path.write_bytes(orjson.dumps(line) + b"\n")
    pb = tmp_path / "t.pb"
    code = f"""
import sys
import tracescore.cli.app, tracescore.cli.import_cmd
from tracescore.formats.files import read_file
spans = [s for b in read_file({str(path)!r}) for s in b.spans]
assert len(spans) == 1, spans
assert "google.protobuf" not in sys.modules, "protobuf imported for JSON"
assert "zstandard" not in sys.modules, "zstandard imported for JSON"
list(read_file({str(pb)!r}))
assert "google.protobuf" in sys.modules
"""
    pb.write_bytes(b"\x00\x00\x00\x02\x0a\x00")  # one message: an empty resource_spans
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_byte_order_mark_on_a_later_line_is_skipped_too(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    """``cat a.jsonl b.jsonl`` where b.jsonl was written with a BOM (Windows tools)."""
    lines = spans_to_otlp_json_lines(sdk_spans, batch_size=5)
    data = "\n".join(lines[:2]).encode() + b"\n\xef\xbb\xbf" + lines[2].encode() + b"\n"
    path = _write(tmp_path / "joined.jsonl", data)
    batches = list(read_file(path))
    assert [b.errors for b in batches] == [[], [], []]
    assert _span_ids(batches) == _expected_ids(sdk_spans)
    [third] = read_json_lines(path, data.index(b"\xef"), len(data), 3)  # a worker's part
    assert third.errors == [] and len(third.spans) == len(batches[2].spans)
    assert third.reread is not None and third.reread().spans == third.spans


def test_a_file_starting_with_a_byte_order_mark_can_be_split(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    lines = spans_to_otlp_json_lines(sdk_spans, batch_size=5)
    path = _write(tmp_path / "bom.jsonl", b"\xef\xbb\xbf" + "\n".join(lines).encode() + b"\n")
    assert is_json_lines(path)
    assert _span_ids(read_json_lines(path, 0, Path(path).stat().st_size, 1)) == _expected_ids(
        sdk_spans
    )


def test_a_line_of_byte_order_marks_is_one_bad_record(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    [good] = spans_to_otlp_json_lines(sdk_spans, batch_size=100)
    data = good.encode() + b"\n" + b"\xef\xbb\xbf" * 100_000 + good.encode() + b"\n"
    first, second = read_file(_write(tmp_path / "boms.jsonl", data))
    assert len(first.spans) == len(sdk_spans) and first.errors == []
    [error] = second.errors
    assert "invalid JSON" in error.detail and error.line == 2
