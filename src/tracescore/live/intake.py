"""The contract between a receiver and the live scoring engine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from tracescore.spans import LogRecord, SpanRecord

__all__ = ["Intake"]


class Intake(Protocol):
    """Accepts decoded records from a receiver (``tracescore serve``).

    ``offer`` never blocks: it either takes the whole batch or refuses it, so the receiver
    can answer HTTP 429 / gRPC ``RESOURCE_EXHAUSTED`` (both retryable in OTLP) and the
    sender retries later; nothing is dropped silently.
    """

    def offer(self, spans: Sequence[SpanRecord], logs: Sequence[LogRecord]) -> bool:
        """Queue the records; False when the queue is full (nothing was taken)."""
        ...

    def ready(self) -> bool:
        """True when the engine runs and its queue has room (``/readyz``)."""
        ...

    def drain(self, timeout_s: float) -> bool:
        """Score everything queued and in flight; True when done within ``timeout_s``."""
        ...
