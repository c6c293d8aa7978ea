"""The bounds and windows of live scoring (:class:`LiveOptions`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LiveOptions"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveOptions:
    """Bounds and windows of live scoring.

    Attributes:
        max_queue: Records waiting for the worker; beyond it the processor drops the
            oldest span and the receiver refuses batches. Kept small: a queued SDK span
            is a dozen objects that garbage collections walk on the agent's thread too.
        wake_at: Queued records that wake the worker before its tick.
        tick_s: Longest the worker sleeps between looks at the queue and the windows.
        idle_s: Quiet time after which a trace whose root ended is complete.
        orphan_ttl_s: Quiet time after which a rootless trace is released incomplete.
        max_traces: Traces in flight in the assembler.
        max_spans_per_trace: Spans kept per trace.
        max_judged_traces: Traces waiting for the judge before judged criteria are shed.
        shutdown_timeout_s: Default deadline of ``shutdown``.

    """

    max_queue: int = 16_384
    wake_at: int = 512
    tick_s: float = 0.25
    idle_s: float = 2.0
    orphan_ttl_s: float = 120.0
    max_traces: int = 10_000
    max_spans_per_trace: int = 10_000
    max_judged_traces: int = 256
    shutdown_timeout_s: float = 30.0
