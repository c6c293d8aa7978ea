"""The bounds and windows of live scoring (:class:`LiveOptions`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["PROCESSOR_CPU_SHARE", "LiveOptions"]

#: The span processor's default ``max_cpu_share``: in the agent's process, the worker
#: never takes more than a quarter of a CPU (of the GIL) from the agent.
PROCESSOR_CPU_SHARE: Final = 0.25


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveOptions:
    """Bounds and windows of live scoring.

    Attributes:
        max_queue: Records waiting for the worker; beyond it the processor drops the
            spans that arrive and the receiver refuses batches. Kept small: a queued SDK span
            is a dozen objects that garbage collections walk on the agent's thread too.
        wake_at: Queued records that wake the worker before its tick.
        tick_s: Longest the worker sleeps between looks at the queue and the windows.
        idle_s: Quiet time after which a trace whose root ended is complete.
        orphan_ttl_s: Quiet time after which a rootless trace is released incomplete.
        max_traces: Traces in flight in the assembler.
        max_spans_per_trace: Spans kept per trace.
        max_judged_traces: Traces waiting for the judge before judged criteria are shed.
        shutdown_timeout_s: Default deadline of ``shutdown``.
        max_cpu_share: CPU seconds the worker may use per second, in (0, 1]; beyond it
            it pauses and an overloaded queue sheds more (see
            :mod:`tracescore.live.cpu_share`). None: the owner's default, which is
            :data:`PROCESSOR_CPU_SHARE` in the span processor (the agent's process) and
            no cap in ``tracescore serve`` (the worker is the process's job).

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
    max_cpu_share: float | None = None

    def __post_init__(self) -> None:
        share = self.max_cpu_share
        if share is not None and not 0 < share <= 1:
            raise ValueError(f"max_cpu_share must be in (0, 1] or None, got {share!r}")
