"""An httpx transport that spreads the judge's calls over small connection pools.

Why: httpcore's pool (httpx's default transport) walks every connection it holds each
time a request is queued or released: an idle check, a keep-alive check that costs two
system calls per idle connection, and, for each idle connection, a count of all of them.
Its CPU per call therefore grows faster than the pool. Measured with
``benchmarks/bench_judge.py`` (fake judge answering after 200 ms, 2 cores): one pool of
32 connections cost ~5 ms of CPU per call, and with 64 calls in flight the event loop
saturated a core at ~45 calls/s where 320 were possible.

:class:`ShardedTransport` keeps pools of at most :data:`SHARD_CONNECTIONS` connections
and sends each request to the first pool with a free connection, opening another pool
only when every pool is full. The judge client's concurrency cap bounds the calls in
flight, and so the number of pools; a pool never queues a request or closes a
connection to make room, so connections are reused. All pools share one TLS context
(building one costs ~20 ms).

Threading: one event loop; the busy counts are touched only by that loop's thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Final

import httpx

__all__ = ["SHARD_CONNECTIONS", "ShardedTransport"]

#: Connections per pool. Small enough that a pool's scans stay cheap, large enough that
#: a modest concurrency cap (default 16) needs two pools.
SHARD_CONNECTIONS: Final = 8


class _Shard:
    __slots__ = ("busy", "transport")

    def __init__(self, transport: httpx.AsyncHTTPTransport) -> None:
        self.transport = transport
        self.busy = 0  # requests sent and whose response is not closed yet


class _ReleasingStream(httpx.AsyncByteStream):
    """A response body that gives its shard's slot back when it is closed (once)."""

    def __init__(self, stream: httpx.AsyncByteStream, shard: _Shard) -> None:
        self._stream = stream
        self._shard: _Shard | None = shard

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            shard, self._shard = self._shard, None
            if shard is not None:
                shard.busy -= 1


class ShardedTransport(httpx.AsyncBaseTransport):
    """HTTP over pools of at most ``shard_connections`` connections each, opened on demand.

    A request holds its pool's slot until its response is closed (httpx closes it once
    the body is read, or when the call fails or is cancelled).

    Args:
        shard_connections: Connections per pool.
        verify: TLS verification, as for ``httpx.AsyncHTTPTransport``; True builds one
            context from the environment (``SSL_CERT_FILE``, ``SSL_CERT_DIR``) shared by
            every pool.
        keepalive_expiry: Seconds an idle connection is kept.

    """

    def __init__(
        self,
        *,
        shard_connections: int = SHARD_CONNECTIONS,
        verify: bool | str = True,
        keepalive_expiry: float = 5.0,
    ) -> None:
        if shard_connections < 1:
            raise ValueError("shard_connections must be at least 1")
        self._size = shard_connections
        self._ssl = httpx.create_ssl_context(verify=verify, trust_env=True)
        self._limits = httpx.Limits(
            max_connections=shard_connections,
            max_keepalive_connections=shard_connections,
            keepalive_expiry=keepalive_expiry,
        )
        self._shards: list[_Shard] = []

    @property
    def pools(self) -> int:
        """How many pools are open."""
        return len(self._shards)

    @property
    def in_flight(self) -> int:
        """Requests sent whose response is not closed yet."""
        return sum(shard.busy for shard in self._shards)

    def _free_shard(self) -> _Shard:
        for shard in self._shards:
            if shard.busy < self._size:
                return shard
        shard = _Shard(httpx.AsyncHTTPTransport(verify=self._ssl, limits=self._limits))
        self._shards.append(shard)
        return shard

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` on the first pool with a free connection."""
        shard = self._free_shard()
        shard.busy += 1
        try:
            response = await shard.transport.handle_async_request(request)
        except BaseException:
            shard.busy -= 1
            raise
        if isinstance(response.stream, httpx.AsyncByteStream):  # always, from this transport
            response.stream = _ReleasingStream(response.stream, shard)
        else:
            shard.busy -= 1
        return response

    async def aclose(self) -> None:
        """Close every pool."""
        shards, self._shards = self._shards, []
        for shard in shards:
            await shard.transport.aclose()
