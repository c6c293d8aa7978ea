"""Length-prefixed protobuf files (tracescore.formats.frames): damage costs only itself."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from otlp_helpers import agent_spans, length_prefixed

from tracescore.formats.base import Batch
from tracescore.formats.files import read_file
from tracescore.formats.sdk import from_readable_span

MIB = 1 << 20
_SPANS = agent_spans(3)  # 12 spans: one message each, so each message has one known id
_MESSAGES = [encode_spans([span]).SerializeToString() for span in _SPANS]
_IDS = [from_readable_span(span).span_id for span in _SPANS]
_ZSTD = zstandard.ZstdCompressor()
_COMPRESSED = [_ZSTD.compress(m) for m in _MESSAGES]  # `compression: zstd`


def _framed(message: bytes) -> bytes:
    return length_prefixed([message])


def _read(tmp_path: Path, data: bytes, name: str = "otlp.binpb") -> list[Batch]:
    path = tmp_path / name
    path.write_bytes(data)
    return list(read_file(str(path)))


def _ids(batches: list[Batch]) -> list[str]:
    return sorted(span.span_id for batch in batches for span in batch.spans)


def _errors(batches: list[Batch]) -> list[tuple[int | None, str]]:
    return [(e.line, e.detail) for batch in batches for e in batch.errors]


def _error_between(tmp_path: Path, at: int, between: bytes) -> tuple[int | None, str]:
    """The one error of the file of every message with ``between`` before message ``at``.

    Every message is read all the same.
    """
    data = length_prefixed(_MESSAGES[:at]) + between + length_prefixed(_MESSAGES[at:])
    batches = _read(tmp_path, data)
    assert _ids(batches) == sorted(_IDS)
    [error] = _errors(batches)
    return error


def _all_but(*indexes: int) -> list[str]:
    return sorted(span_id for i, span_id in enumerate(_IDS) if i not in indexes)


def test_the_messages_are_one_span_each() -> None:
    assert len(set(_IDS)) == len(_MESSAGES) == 12
    assert all(message[:1] == b"\x0a" for message in _MESSAGES)


@pytest.mark.parametrize("zeros", [5, 7, 8, 4095, 4096, 4097, 4098, 4099, 70_000])
def test_a_zero_filled_region_between_messages_is_one_error(tmp_path: Path, zeros: int) -> None:
    """A crash or a truncation under the writer; the lengths after it start with zeros
    too (00 00 xx xx), which the region must not swallow."""
    line, detail = _error_between(tmp_path, 6, bytes(zeros))
    assert line == 7
    assert detail.startswith(f"{zeros} zero byte(s), no record: a zero-filled region")


def test_four_zero_bytes_are_an_empty_request(tmp_path: Path) -> None:
    """Exactly one length of 0: a valid message with nothing in it, no damage."""
    data = length_prefixed([*_MESSAGES[:6], b"", *_MESSAGES[6:]])
    batches = _read(tmp_path, data)
    assert _ids(batches) == sorted(_IDS)
    assert _errors(batches) == []
    assert len(batches) == 13


@pytest.mark.parametrize("zeros", [5, 1000, 3 * MIB])
def test_zeros_at_the_end_are_one_error(tmp_path: Path, zeros: int) -> None:
    """The file's size was updated before a crash, its last data never written."""
    batches = _read(tmp_path, length_prefixed(_MESSAGES) + bytes(zeros))
    assert _ids(batches) == sorted(_IDS)
    [(line, detail)] = _errors(batches)
    assert line == 13
    assert detail.startswith(f"{zeros} zero byte(s), no record")


@pytest.mark.parametrize(("zeros", "sparse"), [(9, False), (3 * MIB, False), (3 * MIB + 2, True)])
def test_a_file_truncated_under_its_writer_is_read_after_its_hole(
    tmp_path: Path, zeros: int, sparse: bool
) -> None:
    """logrotate's copytruncate under a writer not appending: its next message lands after
    a hole as long as what was rotated away."""
    path = tmp_path / "rotated.binpb"
    with path.open("wb") as out:
        if sparse:
            out.truncate(zeros)
            out.seek(zeros)
        else:
            out.write(bytes(zeros))
        out.write(length_prefixed(_MESSAGES))
    batches = list(read_file(str(path)))
    assert _ids(batches) == sorted(_IDS)
    [(line, detail)] = _errors(batches)
    assert line == 1
    assert detail.startswith(f"{zeros} zero byte(s), no record")


@pytest.mark.parametrize("how", ["gzip", "stdin"])
def test_zeros_first_in_a_stream_that_cannot_seek(tmp_path: Path, how: str) -> None:
    data = bytes(2 * MIB + 1) + length_prefixed(_MESSAGES)
    if how == "gzip":
        batches = _read(tmp_path, gzip.compress(data), "rotated.binpb.gz")
    else:
        batches = list(read_file("-", stdin=io.BytesIO(data)))
    assert _ids(batches) == sorted(_IDS)
    assert [line for line, _ in _errors(batches)] == [1]


@pytest.mark.parametrize("zeros", [0, 4])
def test_a_file_starting_with_its_first_length_has_no_region(tmp_path: Path, zeros: int) -> None:
    """A first length of 00 00 xx xx read through (no peeking) is no zero region; four
    zeros before it are an empty first request."""
    data = bytes(zeros) + length_prefixed(_MESSAGES)
    batches = list(read_file("-", stdin=io.BytesIO(data)))
    assert _ids(batches) == sorted(_IDS)
    assert _errors(batches) == []
    assert len(batches) == 12 + zeros // 4


@pytest.mark.parametrize("compressed", [False, True])
def test_a_message_cut_short_and_the_next_appended_after_it(
    tmp_path: Path, compressed: bool
) -> None:
    """A writer killed mid-message, restarted: its next message follows the cut one."""
    messages = _COMPRESSED if compressed else _MESSAGES
    cut = messages[4]
    data = (
        length_prefixed(messages[:4])
        + len(cut).to_bytes(4, "big")
        + cut[: len(cut) // 2]
        + length_prefixed(messages[5:])
    )
    batches = _read(tmp_path, data)
    assert _ids(batches) == _all_but(4)
    [(line, detail)] = _errors(batches)
    assert line == 5
    assert detail.startswith(f"incomplete or damaged message (its length says {len(cut)} bytes;")
    assert detail.endswith("byte(s) skipped up to the next message")


def test_a_damaged_length_costs_its_message_only(tmp_path: Path) -> None:
    framed = [_framed(m) for m in _MESSAGES]
    framed[5] = b"\xff\xff\xff\xff" + framed[5][4:]
    batches = _read(tmp_path, b"".join(framed))
    assert _ids(batches) == _all_but(5)
    [(line, detail)] = _errors(batches)
    assert line == 6
    assert detail.startswith("message length 4294967295 exceeds 268435456 bytes: a damaged")


def test_other_bytes_between_messages_are_one_error(tmp_path: Path) -> None:
    junk = b"2026-11-28T17:00:00Z agent printed this\n" * 50 + bytes(range(256)) * 4
    line, detail = _error_between(tmp_path, 3, junk)
    assert line == 4
    assert detail.endswith(f": {len(junk)} byte(s) skipped up to the next message")


def test_a_message_between_two_damaged_stretches_is_read(tmp_path: Path) -> None:
    """Damage right after a message: it is still taken, as it decodes whole and clean."""
    junk = b"\x01\x02\x03 not a message \xff" * 3
    data = _framed(_MESSAGES[0]) + junk + _framed(_MESSAGES[1]) + junk + _framed(_MESSAGES[2])
    batches = _read(tmp_path, data)
    assert _ids(batches) == sorted(_IDS[:3])
    assert [line for line, _ in _errors(batches)] == [2, 4]


def test_a_message_that_does_not_parse_keeps_its_framing(tmp_path: Path) -> None:
    """A damaged body, its length intact: one error, and its length leads to the next."""
    framed = [_framed(m) for m in _MESSAGES]
    framed[2] = framed[2][:4] + b"\x0a\xff\xff\xff\xff" + framed[2][9:]
    batches = _read(tmp_path, b"".join(framed))
    assert _ids(batches) == _all_but(2)
    [(line, detail)] = _errors(batches)
    assert line == 3
    assert detail.startswith("bad protobuf")


def test_nothing_but_damage_is_one_error_for_all_of_it(tmp_path: Path) -> None:
    data = b"\x00\x00\x00\x10" + bytes(range(1, 256)) * 100
    batches = _read(tmp_path, data)
    assert _ids(batches) == []
    [(line, detail)] = _errors(batches)
    assert line == 1
    assert detail.endswith(f": {len(data)} byte(s) skipped to the end of the file")


@pytest.mark.parametrize("start", [b"\xff\xff\xff\xff\x01\x02", b"\x03\x00\x00"])
def test_a_damaged_start_costs_only_itself(tmp_path: Path, start: bytes) -> None:
    """Binary bytes first (not text, which is no such file): read on to the first message."""
    batches = _read(tmp_path, start + length_prefixed(_MESSAGES))
    assert _ids(batches) == sorted(_IDS)
    [(line, detail)] = _errors(batches)
    assert line == 1
    assert f"{len(start)} byte(s)" in detail


# Damage a file of 12 messages (protobuf, or zstd frames) at random: each message kept,
# cut short (the next appended after it) or overwritten in part, with zeros or other
# bytes between messages. Every message left whole is read, wherever the damage lies.
_DAMAGE = st.sampled_from(["kept", "kept", "kept", "cut", "overwritten"])
_ZEROS = st.integers(1, 9000).map(bytes)
_BETWEEN = st.one_of(st.just(b""), _ZEROS, st.binary(min_size=1, max_size=300))
#: Before the first message: what tells the format (a first byte of JSON, gzip's magic)
#: is not damage to read past, and is tested on its own.
_FIRST = st.one_of(st.just(b""), _ZEROS, st.binary(min_size=1, max_size=300).map(b"\x03".__add__))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    damage=st.lists(_DAMAGE, min_size=12, max_size=12),
    first=_FIRST,
    between=st.lists(_BETWEEN, min_size=12, max_size=12),
    where=st.lists(st.floats(0.0, 1.0), min_size=12, max_size=12),
    junk=st.binary(min_size=1, max_size=64),
    compressed=st.booleans(),
)
def test_every_untouched_message_is_read(
    tmp_path_factory: pytest.TempPathFactory,
    damage: list[str],
    first: bytes,
    between: list[bytes],
    where: list[float],
    junk: bytes,
    compressed: bool,
) -> None:
    data = bytearray(first)
    for i, message in enumerate(_COMPRESSED if compressed else _MESSAGES):
        framed = bytearray(_framed(message))
        at = 4 + int(where[i] * (len(message) - 1))
        if damage[i] == "cut":
            framed = framed[:at]
        elif damage[i] == "overwritten":
            framed[at : at + len(junk)] = junk
        data += framed + between[i]
    path = tmp_path_factory.mktemp("frames") / "damaged.binpb"
    path.write_bytes(bytes(data))
    batches = list(read_file(str(path)))
    kept = {_IDS[i] for i, how in enumerate(damage) if how == "kept"}
    assert kept <= set(_ids(batches))
    lines = [line for line, _ in _errors(batches)]
    assert all(line is not None and 1 <= line <= len(batches) for line in lines)
