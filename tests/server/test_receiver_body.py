"""Bounded body reading: limits on the wire and after decompression, gzip members, bombs."""

from __future__ import annotations

import asyncio
import gzip
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Callable, Iterable

import pytest
import zstandard

from tracescore.server.body import (
    BodyTooLarge,
    MalformedBody,
    UnsupportedEncoding,
    check_content_length,
    read_body,
)

LIMIT = 1000


class Chunks:
    """An async body that counts how many chunks were pulled from it."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self.pulled = 0

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        try:
            chunk = next(self._chunks)
        except StopIteration:
            raise StopAsyncIteration from None
        self.pulled += 1
        return chunk


def read(
    data: bytes | Chunks, encoding: str | None = None, limit: int = LIMIT, size: int = 7
) -> tuple[bytes, int]:
    chunks = data if isinstance(data, Chunks) else Chunks(_split(data, size))
    body, wire = asyncio.run(read_body(chunks, content_encoding=encoding, limit=limit))
    return bytes(body), wire


def _split(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_identity_body_up_to_the_limit() -> None:
    assert read(b"x" * LIMIT) == (b"x" * LIMIT, LIMIT)
    assert read(b"abc", "identity") == (b"abc", 3)
    assert read(b"") == (b"", 0)
    with pytest.raises(BodyTooLarge):
        read(b"x" * (LIMIT + 1))


def test_reading_stops_at_the_first_chunk_over_the_limit() -> None:
    chunks = Chunks([b"x" * 400] * 100)
    with pytest.raises(BodyTooLarge):
        read(chunks)
    assert chunks.pulled == 3


@pytest.mark.parametrize("encoding", ["gzip", "GZIP", "x-gzip"])
def test_gzip_is_held_to_the_limit_after_decompression(encoding: str) -> None:
    assert read(gzip.compress(b"y" * LIMIT), encoding)[0] == b"y" * LIMIT
    packed = gzip.compress(b"y" * (LIMIT + 1))
    assert len(packed) < LIMIT
    with pytest.raises(BodyTooLarge, match="decompressed"):
        read(packed, encoding)


def test_deflate_is_the_zlib_format() -> None:
    assert read(zlib.compress(b"hello" * 10), "deflate")[0] == b"hello" * 10


def test_concatenated_gzip_members_are_all_read() -> None:
    body = gzip.compress(b"first ") + gzip.compress(b"second")
    assert read(body, "gzip", size=5)[0] == b"first second"
    assert read(body, "gzip", size=len(body))[0] == b"first second"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"plain text", "invalid compressed body"),
        (gzip.compress(b"z" * 100)[:-5], "truncated"),
        (gzip.compress(b"z") + b"trailing junk", "invalid compressed body"),
    ],
    ids=["not-gzip", "truncated", "trailing-junk"],
)
def test_bad_gzip_is_malformed(body: bytes, message: str) -> None:
    with pytest.raises(MalformedBody, match=message):
        read(body, "gzip")


def test_unsupported_encoding_is_refused_before_reading() -> None:
    chunks = Chunks([b"data"])
    with pytest.raises(UnsupportedEncoding, match="'br'"):
        read(chunks, "br")
    assert chunks.pulled == 0


def test_content_length_check() -> None:
    check_content_length(None, LIMIT)
    check_content_length(str(LIMIT), LIMIT)
    check_content_length(" 12 ", LIMIT)
    with pytest.raises(BodyTooLarge, match="1001 bytes"):
        check_content_length(str(LIMIT + 1), LIMIT)
    for bad in ("-1", "12a", "", "1 2", "+5"):
        with pytest.raises(MalformedBody):
            check_content_length(bad, LIMIT)


def _gzip_bomb() -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1024 * 1024)
    return b"".join([*(packer.compress(block) for _ in range(200)), packer.flush()])


def _zstd_bomb() -> bytes:
    return zstandard.ZstdCompressor(level=19).compress(bytes(500 * 1024 * 1024))


@pytest.mark.parametrize(
    ("encoding", "make", "chunk"), [("gzip", _gzip_bomb, 64 * 1024), ("zstd", _zstd_bomb, 1024)]
)
def test_a_bomb_costs_at_most_about_the_limit_in_memory(
    encoding: str, make: Callable[[], bytes], chunk: int
) -> None:
    limit = 4 * 1024 * 1024
    bomb = make()  # 200 MB (gzip, ~200 KB) or 500 MB (zstd, ~16 KB) of zeros
    chunks = Chunks(_split(bomb, chunk))
    tracemalloc.start()
    try:
        with pytest.raises(BodyTooLarge):
            read(chunks, encoding, limit=limit)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * limit + 1024 * 1024, f"peak {peak / 1e6:.1f} MB"
    assert chunks.pulled < len(_split(bomb, chunk))  # stopped before the end


# --- zstd (otlphttp's `compression: zstd`) ----------------------------------------------


def test_zstd_is_held_to_the_limit_after_decompression() -> None:
    compress = zstandard.ZstdCompressor().compress
    assert read(compress(b"y" * LIMIT), "zstd")[0] == b"y" * LIMIT
    assert read(compress(b"first ") + compress(b"second"), "zstd", size=5)[0] == b"first second"
    assert read(b"", "zstd") == (b"", 0)
    packed = compress(b"y" * (LIMIT + 1))
    assert len(packed) < LIMIT
    with pytest.raises(BodyTooLarge, match="decompressed"):
        read(packed, "zstd")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"plain text", "invalid compressed body"),
        (zstandard.ZstdCompressor().compress(b"z" * 100)[:-3], "truncated"),
        (b"\x28\xb5\x2f\xfd" + b"\xff" * 32, "invalid compressed body"),
    ],
    ids=["not-zstd", "truncated", "bad-frame-header"],
)
def test_bad_zstd_is_malformed(body: bytes, message: str) -> None:
    with pytest.raises(MalformedBody, match=message):
        read(body, "zstd")
