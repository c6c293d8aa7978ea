"""zstd decoding with bounded output: Collector files and request bodies.

The Collector writes zstd in three places tracescore reads:

* the ``file`` exporter with ``compression: zstd`` compresses each export batch on its
  own and writes it length-prefixed (``tracescore.formats.files``);
* with the ``exporter.file.nativeCompression`` feature gate (Collector 0.154+), the whole
  file is a zstd stream of concatenated frames, as ``zstd`` itself writes;
* ``otlphttp`` exporters with ``compression: zstd`` send ``Content-Encoding: zstd``.

zstandard's streaming decoders either return all the output of the input given (a
``decompressobj``) or do not tell a truncated stream from a complete one (readers and
writers). :class:`ZstdFrames` feeds a ``decompressobj`` in slices small enough that one
slice cannot expand past the output asked for by more than a bound, and knows whether
the last frame ended: a crafted 16 KB request that inflates to 500 MB stops near the
limit, and a file cut mid-frame is an error, not silently shorter.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:
    import zstandard

__all__ = ["MAGIC", "ZstdError", "ZstdFrames", "ZstdReader", "decompress_bounded"]

#: The first four bytes of every zstd frame.
MAGIC: Final = b"\x28\xb5\x2f\xfd"
#: Largest output of one input byte: a zstd block yields at most 128 KiB and takes at
#: least 4 bytes (an RLE block), so 32 KiB per byte, whatever the input.
_MAX_RATIO: Final = 1 << 15
_MIN_SLICE: Final = 64


class ZstdError(ValueError):
    """zstd data that is not zstd, is corrupt, is truncated, or decompresses too far."""


class ZstdFrames:
    """Incremental decoding of concatenated zstd frames (skippable frames skipped)."""

    def __init__(self) -> None:
        # Imported here: ~8 ms that a process reading plain JSON never needs.
        import zstandard  # noqa: PLC0415

        self._decompressor: zstandard.ZstdDecompressor = zstandard.ZstdDecompressor()
        self._frame: zstandard.ZstdDecompressionObj = self._decompressor.decompressobj()
        self._error: type[Exception] = zstandard.ZstdError
        self._in_frame = False

    def decompress_into(self, data: bytes, out: bytearray, stop_at: int) -> bytes:
        """Decode the start of ``data`` onto ``out`` until ``out`` holds ``stop_at`` bytes.

        Past ``stop_at``, ``out`` grows by at most one slice's output: slices are
        ``max(64, room // 2**17)`` input bytes for ``room`` bytes left to ``stop_at``, and
        a byte yields at most 32 KiB, so a quarter of the room, or 2 MiB near the end.

        Returns:
            The input not consumed yet (to pass again); empty when all of it was used.

        Raises:
            ZstdError: the data is not zstd, or is corrupt.

        """
        view = memoryview(data)  # slices of a view copy nothing
        position = 0
        while position < len(view) and len(out) < stop_at:
            if self._frame.eof:  # the frame ended; what follows is the next one
                self._frame = self._decompressor.decompressobj()
            step = max(_MIN_SLICE, (stop_at - len(out)) // (_MAX_RATIO * 4))
            piece = view[position : position + step]
            position += len(piece)
            self._in_frame = True
            try:
                out += self._frame.decompress(piece)
            except self._error as exc:
                raise ZstdError(f"invalid zstd data: {exc}") from None
            if self._frame.eof:
                self._in_frame = False
                # The next frame's first bytes, consumed with the end of this one.
                position -= len(self._frame.unused_data)
        return bytes(view[position:])

    def check_complete(self) -> None:
        """After the last input: the last frame must have ended.

        Raises:
            ZstdError: the input stopped inside a frame (a truncated file or body).

        """
        if self._in_frame and not self._frame.eof:
            raise ZstdError("zstd data is truncated (the last frame does not end)")


class _Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...


class ZstdReader(io.RawIOBase):
    """The decompressed bytes of a zstd stream, read in bounded steps (wrap it in a buffer).

    Raises (from ``read``):
        ZstdError: corrupt data, or the stream ends inside a frame.
    """

    def __init__(self, raw: _Readable, chunk: int = 1 << 16) -> None:
        self._raw = raw
        self._chunk = chunk
        self._frames = ZstdFrames()
        self._input = b""
        self._output = bytearray()
        self._offset = 0

    def readable(self) -> bool:
        """Always: a reader."""
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        """Fill ``buffer`` with the next decompressed bytes; 0 at the end of the stream."""
        while len(self._output) <= self._offset:
            self._output.clear()
            self._offset = 0
            if not self._input:
                self._input = self._raw.read(self._chunk)
                if not self._input:
                    self._frames.check_complete()
                    return 0
            self._input = self._frames.decompress_into(self._input, self._output, len(buffer))
        size = min(len(buffer), len(self._output) - self._offset)
        buffer[:size] = self._output[self._offset : self._offset + size]
        self._offset += size
        return size


def decompress_bounded(data: bytes, limit: int) -> bytes:
    """All of ``data`` decompressed (every frame), refusing output over ``limit`` bytes.

    Raises:
        ZstdError: corrupt or truncated data, or more than ``limit`` bytes decompressed.

    """
    frames = ZstdFrames()
    out = bytearray()
    if frames.decompress_into(data, out, limit + 1) or len(out) > limit:
        raise ZstdError(f"decompresses to more than {limit} bytes")
    frames.check_complete()
    return bytes(out)
