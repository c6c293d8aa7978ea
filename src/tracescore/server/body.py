"""Reading an HTTP request body within a size limit, decompressing as it arrives.

The limit holds on the wire and after decompression. Neither depends on what the client
claims: ``Content-Length`` is checked up front (cheap refusal of an honest client) and the
bytes are counted while they stream in, so an absent or false length changes nothing.
A compressed body is inflated chunk by chunk with ``max_length`` capped at what is left of
the limit, so a gzip bomb (100 MB of zeros in 100 KB) costs at most ``limit`` bytes of
memory before it is refused; zstd (``otlphttp``'s ``compression: zstd``) is fed in
slices that cannot expand far past it (:class:`tracescore.formats.zstd.ZstdFrames`).
The whole body must arrive within a deadline, so a client trickling bytes (slow loris)
cannot hold a request open for ever.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterable
from typing import Final

from tracescore.formats.zstd import ZstdError, ZstdFrames

__all__ = [
    "SUPPORTED_ENCODINGS",
    "BodyError",
    "BodyTimeout",
    "BodyTooLarge",
    "MalformedBody",
    "UnsupportedEncoding",
    "check_content_length",
    "read_body",
]

# Content-Encoding -> zlib wbits. "deflate" in HTTP is the zlib format (RFC 9110 8.4.1.2).
_WBITS: Final = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS,
                 "deflate": zlib.MAX_WBITS}  # fmt: skip
SUPPORTED_ENCODINGS: Final = ("gzip", "deflate", "zstd", "identity")


class BodyError(Exception):
    """The body cannot be used; ``status`` is the HTTP status to answer with."""

    status = 400


class BodyTooLarge(BodyError):
    """More than the limit, on the wire or decompressed (HTTP 413)."""

    status = 413


class BodyTimeout(BodyError):
    """The body did not arrive within the request deadline (HTTP 408)."""

    status = 408


class MalformedBody(BodyError):
    """Corrupt or truncated compressed data, or a bad ``Content-Length`` (HTTP 400)."""


class UnsupportedEncoding(BodyError):
    """A ``Content-Encoding`` other than gzip, deflate, zstd or identity (HTTP 415)."""

    status = 415


def check_content_length(value: str | None, limit: int) -> None:
    """Refuse a declared length over ``limit`` before reading anything.

    Raises:
        BodyTooLarge: the declared length exceeds the limit.
        MalformedBody: the header is not a non-negative integer.

    """
    if value is None:
        return
    text = value.strip()
    if not text.isdigit():  # also refuses signs and spaces inside
        raise MalformedBody(f"invalid Content-Length {value!r}")
    if int(text) > limit:
        raise BodyTooLarge(f"request body of {int(text)} bytes exceeds the limit of {limit}")


async def read_body(
    chunks: AsyncIterable[bytes],
    *,
    content_encoding: str | None,
    limit: int,
    timeout_s: float | None = None,
) -> tuple[bytearray, int]:
    """Read and decompress a request body, holding both sizes to ``limit``.

    Args:
        chunks: The body as it arrives (``starlette.requests.Request.stream()``).
        content_encoding: The ``Content-Encoding`` header; None or ``identity`` for none.
        limit: Largest body accepted, compressed and decompressed.
        timeout_s: Time the whole body may take to arrive; None for no deadline.

    Returns:
        The decoded body and the number of bytes read from the wire.

    Raises:
        UnsupportedEncoding: an encoding other than gzip, deflate, zstd or identity; checked
            before anything is read.
        BodyTooLarge: the limit was exceeded; reading stops right there.
        MalformedBody: the compressed data is corrupt or ends early.
        BodyTimeout: the body was still incomplete after ``timeout_s``.

    """
    reading = _read_body(chunks, content_encoding=content_encoding, limit=limit)
    if timeout_s is None:
        return await reading
    try:
        return await asyncio.wait_for(reading, timeout_s)
    except asyncio.TimeoutError:  # the builtin TimeoutError only from Python 3.11
        raise BodyTimeout(f"request body not received within {timeout_s:g} s") from None


async def _read_body(
    chunks: AsyncIterable[bytes], *, content_encoding: str | None, limit: int
) -> tuple[bytearray, int]:
    encoding = (content_encoding or "identity").strip().lower()
    wbits = _WBITS.get(encoding)
    inflater: _Inflater | _ZstdInflater | None = None
    if wbits is not None:
        inflater = _Inflater(wbits, limit)
    elif encoding == "zstd":
        inflater = _ZstdInflater(limit)
    elif encoding != "identity":
        raise UnsupportedEncoding(
            f"unsupported Content-Encoding {content_encoding!r}; "
            f"use one of {', '.join(SUPPORTED_ENCODINGS)}"
        )
    out = bytearray()
    received = 0
    async for chunk in chunks:
        received += len(chunk)
        if received > limit:
            raise BodyTooLarge(f"request body exceeds the limit of {limit} bytes")
        if inflater is None:
            out += chunk
        else:
            inflater.feed(chunk, out)
    if inflater is not None:
        inflater.finish(out)
    return out, received


class _Inflater:
    """Incremental gzip/zlib decoding into a bounded buffer.

    Concatenated gzip members are read one after another, as ``gzip.decompress`` and
    Go's reader do.
    """

    def __init__(self, wbits: int, limit: int) -> None:
        self._wbits = wbits
        self._limit = limit
        self._inflate = zlib.decompressobj(wbits)
        self._member_started = False

    def feed(self, data: bytes, out: bytearray) -> None:
        try:
            while data:
                if self._inflate.eof:  # another member follows the one just finished
                    self._inflate = zlib.decompressobj(self._wbits)
                self._member_started = True
                # One byte over what is left tells "exactly at the limit" from "over it".
                room = self._limit - len(out) + 1
                out += self._inflate.decompress(data, room)
                if len(out) > self._limit:
                    raise BodyTooLarge(
                        f"decompressed request body exceeds the limit of {self._limit} bytes"
                    )
                # Input held back by max_length, or the start of the next gzip member.
                data = self._inflate.unconsumed_tail or self._inflate.unused_data
        except zlib.error as exc:
            raise MalformedBody(f"invalid compressed body: {exc}") from None

    def finish(self, out: bytearray) -> None:
        try:
            out += self._inflate.flush()
        except zlib.error as exc:  # pragma: no cover - flush after feed has nothing left
            raise MalformedBody(f"invalid compressed body: {exc}") from None
        if len(out) > self._limit:
            raise BodyTooLarge(
                f"decompressed request body exceeds the limit of {self._limit} bytes"
            )
        if self._member_started and not self._inflate.eof:
            raise MalformedBody("compressed body is truncated")


class _ZstdInflater:
    """Incremental zstd decoding into a bounded buffer (frames one after another)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._frames = ZstdFrames()

    def feed(self, data: bytes, out: bytearray) -> None:
        try:
            while data:
                # One byte over the limit tells "exactly at the limit" from "over it".
                data = self._frames.decompress_into(data, out, self._limit + 1)
                if len(out) > self._limit:
                    raise BodyTooLarge(
                        f"decompressed request body exceeds the limit of {self._limit} bytes"
                    )
        except ZstdError as exc:
            raise MalformedBody(f"invalid compressed body: {exc}") from None

    def finish(self, out: bytearray) -> None:
        try:
            self._frames.check_complete()
        except ZstdError as exc:
            raise MalformedBody(f"compressed body is truncated: {exc}") from None
