"""``run``: serve until SIGTERM/SIGINT, then shut down in order within a deadline.

Shutdown order (the receiver side of ``tracescore serve``):

1. readiness turns false (``/readyz`` 503), so a load balancer stops routing here;
2. both listeners stop accepting; requests in flight get a short grace period;
3. ``intake.drain`` scores what was queued, in a worker thread since it blocks;
4. the exit status: 0 when the drain finished in time, 1 otherwise.

``options.drain_timeout_s`` bounds steps 2-3 together: the drain is given what is left of
it. An intake that ignores its timeout is waited for one second more and then abandoned
(it runs in a daemon thread, so it cannot hold the process open).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable
from typing import Final

from prometheus_client import CollectorRegistry

from tracescore.live.intake import Intake
from tracescore.server.options import ServeOptions
from tracescore.server.service import OTLPServer

__all__ = ["run"]

logger = logging.getLogger(__name__)

# OTLP requests do not wait on scoring (offer never blocks), so the few in flight at
# shutdown finish in milliseconds; this caps their share of the drain budget.
_REQUEST_GRACE_S: Final = 5.0
# How long past its own timeout an intake's drain is waited for before giving up.
_DRAIN_SLACK_S: Final = 1.0
_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)


def run(
    intake: Intake,
    *,
    registry: CollectorRegistry,
    options: ServeOptions,
    on_started: Callable[[OTLPServer], None] | None = None,
) -> int:
    """Serve OTLP into ``intake`` until SIGTERM or SIGINT; block until shut down.

    Runs its own asyncio event loop (both listeners share it) and must be called from
    the main thread, which is where signals are delivered. A second signal during
    shutdown stops waiting for the drain (exit status 1).

    Args:
        intake: Where decoded records go; ``drain`` is called once, at shutdown.
        registry: Where the receiver's metrics go; served on ``/metrics``.
        options: Listeners, auth, limits and the shutdown deadline.
        on_started: Called on the loop thread once both listeners are bound (ports are
            set on the server it gets); an exception from it stops the server and
            propagates.

    Returns:
        0 after a clean shutdown, 1 when the intake did not finish draining in time
        (or its drain raised); either way this is logged.

    Raises:
        ConfigError: a listener cannot be bound.
        RuntimeError: not called from the main thread.

    """
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("tracescore.server.run() must be called from the main thread")
    return asyncio.run(_serve(intake, registry, options, on_started))


async def _serve(
    intake: Intake,
    registry: CollectorRegistry,
    options: ServeOptions,
    on_started: Callable[[OTLPServer], None] | None,
) -> int:
    loop = asyncio.get_running_loop()
    signals = asyncio.Queue[int]()
    for sig in _SIGNALS:
        loop.add_signal_handler(sig, signals.put_nowait, sig)
    try:
        server = OTLPServer(intake, registry=registry, options=options)
        await server.start()
        try:
            if on_started is not None:
                on_started(server)
            received = await signals.get()
        except BaseException:
            await server.stop(0.0)
            raise
        logger.info("received %s: shutting down", signal.Signals(received).name)
        deadline = time.monotonic() + options.drain_timeout_s
        await server.stop(min(_REQUEST_GRACE_S, options.drain_timeout_s))
        drained = await _drain(intake, max(0.0, deadline - time.monotonic()), signals)
    finally:
        for sig in _SIGNALS:
            loop.remove_signal_handler(sig)
    return 0 if drained else 1


async def _drain(intake: Intake, timeout_s: float, signals: asyncio.Queue[int]) -> bool:
    """Run ``intake.drain(timeout_s)`` in a daemon thread; True when it returned True in time.

    Not ``asyncio.to_thread``: ``asyncio.run`` joins the default executor on the way out,
    so a drain that hangs would hang the process with it.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[bool] = loop.create_future()

    def drain() -> None:
        result: bool | None = None
        error: BaseException | None = None
        try:
            result = bool(intake.drain(timeout_s))
        except BaseException as exc:  # reported on the loop; the thread just ends
            error = exc
        # After an abandoned drain the loop may be gone; nobody is waiting then.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, done, result, error)

    threading.Thread(target=drain, name="tracescore-drain", daemon=True).start()
    interrupted = loop.create_task(signals.get())
    try:
        finished, _ = await asyncio.wait(
            (done, interrupted),
            timeout=timeout_s + _DRAIN_SLACK_S,
            return_when=asyncio.FIRST_COMPLETED,
        )
    finally:
        interrupted.cancel()
    if done not in finished:
        done.cancel()  # a late result is then dropped by _settle
        why = "a second signal arrived" if interrupted in finished else "it did not return"
        logger.error("drain abandoned after %.1fs: %s", timeout_s, why)
        return False
    if done.exception() is not None:
        logger.error("intake.drain raised", exc_info=done.exception())
        return False
    if not done.result():
        logger.error("drain did not finish within %.1fs; records still queued are lost", timeout_s)
        return False
    logger.info("drained; shutdown complete")
    return True


def _settle(future: asyncio.Future[bool], result: bool | None, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(bool(result))
