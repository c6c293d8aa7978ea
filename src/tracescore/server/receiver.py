"""What both transports share: auth, decoding off the loop, offering to the intake, readiness."""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Final

from tracescore.formats.base import Batch
from tracescore.live.intake import Intake
from tracescore.server.metrics import ReceiverMetrics, Signal, Transport
from tracescore.server.options import ServeOptions

__all__ = ["INLINE_DECODE_MAX_BYTES", "RETRY_AFTER_S", "Receiver"]

logger = logging.getLogger(__name__)

# Where decoding runs, measured with benchmarks/bench_receiver.py (agent traces, 2 CPUs):
# parse + decode costs ~13-15 us per span, ~7 ms for the SDK's usual 512-span batch
# (~1 MB). Handing every such request to a thread cost throughput (0.55-0.6 of the
# in-process decode rate instead of ~0.75 inline) without shortening the worst loop stall
# (30-60 ms with 4 concurrent senders either way): decoding holds the GIL, so the loop
# waits for it in both cases, plus the hand-offs. Bodies up to 1 MiB therefore decode on
# the loop. Bigger ones (up to 8 MiB by default, ~60 ms and more) would stall the loop
# for ~100 ms inline; in one worker thread the worst stall measured ~30 ms at the same
# throughput, as the interpreter hands the GIL back every switch interval. One worker,
# not a pool: more threads add no decoding capacity under the GIL, only contention.
INLINE_DECODE_MAX_BYTES: Final = 1024 * 1024

# What a refused sender is told to wait (HTTP Retry-After, gRPC RetryInfo).
RETRY_AFTER_S: Final = 1


class Receiver:
    """The transport-independent half of the OTLP receiver.

    All methods run on the event loop thread; only the decode callable given to
    :meth:`decode` may run in the one decode worker thread (started on first use, ended
    by :meth:`close`). ``intake.offer`` is always called from the loop thread, once per
    request, after the request has been fully decoded.
    """

    def __init__(self, intake: Intake, *, metrics: ReceiverMetrics, options: ServeOptions) -> None:
        self.intake = intake
        self.metrics = metrics
        self.max_request_bytes = options.max_request_bytes
        self.request_timeout_s = options.request_timeout_s
        self._token = None if options.auth_token is None else options.auth_token.encode()
        self.started = False
        self.draining = False
        self._decoder: ThreadPoolExecutor | None = None

    def authorized(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` value carries the bearer token (or none is needed).

        The comparison takes the same time wherever the values differ
        (:func:`hmac.compare_digest`), so the token cannot be guessed byte by byte.
        """
        if self._token is None:
            return True
        if authorization is None:
            return False
        scheme, _, credentials = authorization.strip().partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(credentials.strip().encode(), self._token)

    def readiness(self) -> str | None:
        """None when ready to take traffic, else why not (for ``/readyz``)."""
        if not self.started:
            return "not started"
        if self.draining:
            return "draining"
        try:
            ready = self.intake.ready()
        except Exception:
            logger.exception("intake.ready() raised")
            return "intake error"
        return None if ready else "intake not ready"

    async def decode(self, size: int, decode: Callable[[], Batch]) -> Batch:
        """Run ``decode()`` for a body of ``size`` bytes.

        Inline when small, in a worker thread when big (see ``INLINE_DECODE_MAX_BYTES``).
        Exceptions propagate unchanged.
        """
        if size <= INLINE_DECODE_MAX_BYTES:
            return decode()
        if self._decoder is None:
            self._decoder = ThreadPoolExecutor(1, thread_name_prefix="tracescore-otlp-decode")
        return await asyncio.get_running_loop().run_in_executor(self._decoder, decode)

    def close(self) -> None:
        """End the decode worker once no request needs it (after the listeners stopped).

        Does not wait: a decode still running finishes on its own and its result is
        dropped; queued ones are cancelled.
        """
        if self._decoder is not None:
            self._decoder.shutdown(wait=False, cancel_futures=True)
            self._decoder = None

    def offer(self, transport: Transport, signal: Signal, batch: Batch) -> bool:
        """Hand the batch's records to the intake; False when it refused them (queue full).

        A batch without records is not offered and counts as taken: there is nothing for
        the sender to retry. Exceptions from ``intake.offer`` propagate.
        """
        count = len(batch.spans) + len(batch.logs)
        self.metrics.records(transport, signal, "invalid", len(batch.errors))
        if not count:
            return True
        if self.intake.offer(batch.spans, batch.logs):
            self.metrics.records(transport, signal, "accepted", count)
            return True
        self.metrics.records(transport, signal, "refused", count)
        return False
