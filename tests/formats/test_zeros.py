"""Zero-filled regions in trace files (tracescore.formats.zeros): each one error, no record lost."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from otlp_helpers import length_prefixed, span_doc, spans_to_otlp_json_lines

from tracescore.cli.app import main
from tracescore.exceptions import TraceFormatError
from tracescore.formats.base import Batch
from tracescore.formats.files import read_file
from tracescore.formats.sdk import from_readable_span
from tracescore.formats.zeros import split_at_zeros, zero_start
from tracescore.importer import ImportStats, invocations_from_batches

MIB = 1 << 20


def _lines(sdk_spans: list[ReadableSpan]) -> list[bytes]:
    return [line.encode() + b"\n" for line in spans_to_otlp_json_lines(sdk_spans, batch_size=5)]


def _ids(batches: list[Batch]) -> list[str]:
    return sorted(span.span_id for batch in batches for span in batch.spans)


def _expected(sdk_spans: list[ReadableSpan]) -> list[str]:
    return sorted(from_readable_span(span).span_id for span in sdk_spans)


def _errors(batches: list[Batch]) -> list[tuple[int | None, str]]:
    return [(e.line, e.detail) for batch in batches for e in batch.errors]


def _wrap(head: bytes, stream: io.BytesIO) -> io.BytesIO:
    return io.BytesIO(head + stream.read())


@pytest.mark.parametrize(
    ("zeros", "sparse"),
    [
        *((n, True) for n in (1, 3, 4, 7, 4096, MIB - 5, 3 * MIB + 1)),
        (3 * MIB + 1, False),
    ],
)
def test_a_file_truncated_under_its_writer_is_read_after_its_zeros(
    tmp_path: Path, sdk_spans: list[ReadableSpan], zeros: int, sparse: bool
) -> None:
    """logrotate's copytruncate: the writer's next line lands at its old offset, after a
    hole of zeros. Short runs are decided from the read buffer; longer ones are jumped
    over (a sparse hole) or read through (zeros written as data)."""
    lines = _lines(sdk_spans)
    path = tmp_path / "rotated.jsonl"
    with path.open("wb") as out:
        if sparse:
            out.truncate(zeros)  # a hole, as the file system makes it
            out.seek(zeros)
        else:
            out.write(b"\0" * zeros)
        out.write(b"".join(lines))
    batches = list(read_file(str(path)))
    assert _ids(batches) == _expected(sdk_spans)
    # Line numbers as the file has them: the zeros hold no newline, so they are line 1's.
    assert [b.origin.line for b in batches if b.origin] == [1, 2, 3]
    [(line, detail)] = _errors(batches)
    assert line == 1
    assert detail.startswith(f"{zeros} zero byte(s), no record: a zero-filled region")
    assert "copytruncate" in detail


def test_a_gzipped_file_with_a_zero_filled_start(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    path = tmp_path / "rotated.jsonl.gz"
    path.write_bytes(gzip.compress(b"\0" * 5000 + b"".join(_lines(sdk_spans))))
    batches = list(read_file(str(path)))
    assert _ids(batches) == _expected(sdk_spans)
    assert [line for line, _ in _errors(batches)] == [1]


def test_zeros_inside_lines_end_the_record_before_them(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    """A crash leaves a region of zeros where data never reached the disk, often with
    no newline before the next line written after the restart."""
    one, two, three = _lines(sdk_spans)
    data = (
        one
        + b"\0" * 300  # a line of nothing but zeros
        + b"\n"
        + two[:40]  # a record cut by the region, then the next record on the same line
        + b"\0" * 8192
        + two
        + three
        + b"\0" * 4096  # zeros at the end, no newline
    )
    path = tmp_path / "crashed.jsonl"
    path.write_bytes(data)
    batches = list(read_file(str(path)))
    assert _ids(batches) == _expected(sdk_spans)
    starts = [(line, detail.split(",")[0]) for line, detail in _errors(batches)]
    assert starts == [
        (2, "300 zero byte(s)"),
        (3, "incomplete record"),  # cut short by the zero bytes after it
        (3, "8192 zero byte(s)"),
        (5, "4096 zero byte(s)"),
    ]
    assert "cut short by the zero bytes after it" in _errors(batches)[1][1]


def test_a_record_around_zeros_can_be_decoded_again(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    """Parking decodes a line again (Batch.reread): the records come back equal."""
    one, two, _ = _lines(sdk_spans)
    path = tmp_path / "z.jsonl"
    path.write_bytes(one[:-1] + b"\0\0" + two)
    [batch] = read_file(str(path))
    assert batch.reread is not None
    again = batch.reread()
    assert again.spans == batch.spans and len(again.spans) == 10
    assert [e.detail for e in again.errors] == [e.detail for e in batch.errors]


def test_only_zeros_says_so(tmp_path: Path) -> None:
    for size in (8, 3 * MIB):
        path = tmp_path / f"zeros-{size}.jsonl"
        with path.open("wb") as out:
            out.truncate(size)
        [batch] = read_file(str(path))
        [error] = batch.errors
        assert (error.line, batch.spans) == (1, [])
        assert f"the file holds nothing but {size} zero byte(s)" in error.detail


def test_long_zeros_then_neither_json_nor_protobuf_are_one_error(tmp_path: Path) -> None:
    path = tmp_path / "garbage.bin"
    with path.open("wb") as out:
        out.truncate(2 * MIB)
        out.seek(2 * MIB)
        out.write(b"\x01\x02\x03garbage")
    [batch] = read_file(str(path))
    [error] = batch.errors
    assert error.line == 1
    assert error.detail.startswith("2097152 zero byte(s), no record: a zero-filled region")
    assert error.detail.endswith("then 10 byte(s) that are no message")


def _message_of(size: int, sdk_spans: list[ReadableSpan]) -> bytes:
    """An ExportTraceServiceRequest of exactly ``size`` bytes (a span name padded)."""
    request = encode_spans(sdk_spans[:1])
    span = request.resource_spans[0].scope_spans[0].spans[0]
    request.resource_spans[0].ClearField("resource")
    span.ClearField("attributes")
    span.ClearField("events")
    span.name = ""
    while request.ByteSize() < size:  # one byte more each time (lengths are varints)
        span.name += "x"
    data: bytes = request.SerializeToString()
    assert len(data) == size
    return data


def test_protobuf_whose_first_length_ends_in_a_brace_stays_protobuf(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    """A 123-byte first message: the prefix is 00 00 00 7b, zeros then ``{``."""
    data = length_prefixed([_message_of(123, sdk_spans), _message_of(300, sdk_spans)])
    assert data[:4] == b"\0\0\0{"
    path = tmp_path / "small.binpb"
    path.write_bytes(data)
    batches = list(read_file(str(path)))
    assert [len(b.spans) for b in batches] == [1, 1]
    assert _errors(batches) == []


def test_zero_start_without_peeking() -> None:
    """Streams that cannot peek (BytesIO) are read through the zeros, then put back."""
    json_line = orjson.dumps(span_doc()) + b"\n"
    found = zero_start(io.BytesIO(b"\0" * 10 + json_line), _wrap)
    assert not isinstance(found, str)
    zeros, after, is_json = found
    assert (zeros, after.read(), is_json) == (10, json_line, True)
    proto = b"\0\0\x01\x00" + b"\x0a" * 256
    found = zero_start(io.BytesIO(proto), _wrap)
    assert not isinstance(found, str)
    # The zeros read through are counted; the length they began is sorted out later.
    assert (found[0], found[1].read(), found[2]) == (2, proto[2:], False)
    pretty = b'\0\0 \n{\n  "resourceSpans": []}'
    found = zero_start(io.BytesIO(pretty), _wrap)
    assert not isinstance(found, str) and found[0] == 2 and found[2]


@pytest.mark.parametrize(
    ("line", "pieces"),
    [
        (b"abc", [(b"abc", 0)]),
        (b"\0\0abc", [(b"", 2), (b"abc", 0)]),
        (b"a\0b\0\0\0", [(b"a", 1), (b"b", 3), (b"", 0)]),
    ],
)
def test_split_at_zeros(line: bytes, pieces: list[tuple[bytes, int]]) -> None:
    assert list(split_at_zeros(line)) == pieces


def test_strict_stops_at_the_zeros_and_the_cli_names_them(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    path = tmp_path / "rotated.jsonl"
    path.write_bytes(b"\0" * 64 + b"".join(_lines(sdk_spans)))
    with pytest.raises(TraceFormatError, match="64 zero byte"):
        list(invocations_from_batches(read_file(str(path)), ImportStats(), strict=True))
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(main, ["import", str(path), "--format", "jsonl", "-o", str(out)])
    assert result.exit_code == 1, result.output  # some input was bad; the output is written
    assert f"{path}:1: 64 zero byte(s), no record" in result.output
    assert "Traceback" not in result.output
    assert len(out.read_bytes().splitlines()) == 3  # the three runs


def test_a_zero_filled_start_is_never_split_into_parts(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    """Planning a parallel import reads no line of the hole (2 GiB of zeros, no newline,
    under a 1 GiB address-space limit): the file stays whole, for one process, which
    reads through the hole without holding it."""
    path = tmp_path / "rotated.jsonl"
    with path.open("wb") as out:
        out.truncate(2 << 30)  # sparse: no disk space
        out.seek(2 << 30)
        out.write(b"".join(_lines(sdk_spans)))
    code = f"""
import resource
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from tracescore.formats.files import is_json_lines
from tracescore.parts import plan_parts
assert not is_json_lines({str(path)!r})
parts = plan_parts([{str(path)!r}], jobs=3, idle_records=400, min_part_bytes=100_000)
assert len(parts) == 1 and parts[0].start is None, parts
from tracescore.formats.files import read_file
batches = list(read_file({str(path)!r}))  # the hole read through in chunks, never held
assert sum(len(b.spans) for b in batches) == {len(sdk_spans)}
assert [e.line for b in batches for e in b.errors] == [1]
"""
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_binary_data_is_one_bad_record_not_one_per_run(
    tmp_path: Path, sdk_spans: list[ReadableSpan]
) -> None:
    """Many runs of zeros in one line are binary data (an appended file of another
    kind), not records around a zero-filled region: one error, the other lines read."""
    one, two, three = _lines(sdk_spans)
    path = tmp_path / "appended.jsonl"
    path.write_bytes(one + b"x\0" * 500_000 + b"\n" + two + three)
    batches = list(read_file(str(path)))
    assert _ids(batches) == _expected(sdk_spans)
    [(line, detail)] = _errors(batches)
    assert (line, detail) == (2, "binary data, no record: 500000 zero bytes in more than 8 runs")
    # Eight runs are still a zero-filled region's: each one reported.
    path.write_bytes(one + b"\0x" * 8 + b"\n" + two + three)
    batches = list(read_file(str(path)))
    assert len(_errors(batches)) == 8 + 8  # each run, and the "x" it cut
