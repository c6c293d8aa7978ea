"""uvicorn's h11 protocol with a deadline on request headers: the slow-loris defence.

uvicorn arms no timer while a request's headers are arriving: its keep-alive timeout
covers idle connections only, and any byte received cancels it. A client sending one
header byte every few seconds therefore holds a connection (a file descriptor and a
parser) for ever, and a few thousand of them exhaust the process. The protocol below
gives every request ``header_timeout_s`` from the moment the connection may carry one
(connection made, or the previous response sent) until its headers are complete, and
closes the connection when they are not. The body has its own deadline
(:func:`tracescore.server.body.read_body`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["guarded_h11"]


def guarded_h11(header_timeout_s: float) -> type[H11Protocol]:
    """An ``H11Protocol`` subclass closing connections whose headers take too long.

    Args:
        header_timeout_s: Time from connection (or from the previous response) until a
            request's headers must be complete; must be positive.

    """

    class GuardedH11Protocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _seen_cycle: Any = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not None and self.cycle is not self._seen_cycle:
                self._seen_cycle = self.cycle  # a request's headers are complete
                self._disarm()

        def on_response_complete(self) -> None:
            # Armed before uvicorn runs any pipelined request, whose start disarms it.
            if not self.transport.is_closing():
                self._arm()
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(header_timeout_s, self._too_slow)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                self.transport.close()

    return GuardedH11Protocol
