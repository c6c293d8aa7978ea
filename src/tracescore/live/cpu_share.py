"""A cap on the CPU time the live worker takes from its process (:class:`CpuShare`).

In the agent's own process (the span processor), the worker thread and the agent's
threads share one GIL. A worker that runs flat out, which it does whenever spans come in
faster than it scores them, takes the GIL for a large part of every second. Measured on
a 2-core VM, two agent threads creating spans flat out kept 0.35-0.38 of their
throughput without the processor; with a share of 0.25 and the lock-free drop of
:mod:`tracescore.live.drops`, 0.62-0.65. Past a point more scoring only means fewer
drops, while the agent pays for it; so the worker gets a share of CPU time and pauses
(the event loop keeps serving judge replies meanwhile) when it has used it up. Spans that
arrive meanwhile queue, and a full queue sheds them as always: an overloaded worker
drops more, counted, instead of slowing the agent.

The share is enforced as a token bucket over the worker thread's own CPU time
(``time.thread_time``: time spent waiting for the GIL is not counted against it): each
wall-clock second earns ``share`` seconds, at most ``burst_s`` of them are banked, so a
short burst after a quiet spell runs at full speed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["CpuShare"]


class CpuShare:
    """How long the calling thread must pause to stay within a share of CPU time.

    Not thread-safe: one instance per worker, called from that worker's thread only (the
    CPU clock measures the calling thread).

    Args:
        share: CPU seconds the thread may use per wall-clock second, in (0, 1]; 1 means
            no cap (:meth:`pause_s` is then always 0 and reads no clock).
        burst_s: CPU seconds that may be banked while the thread is idle.
        cpu_clock: The calling thread's CPU time in seconds.
        wall_clock: Monotonic wall time in seconds.

    Raises:
        ValueError: ``share`` is not in (0, 1], or ``burst_s`` is negative.

    """

    def __init__(
        self,
        share: float,
        *,
        burst_s: float = 0.05,
        cpu_clock: Callable[[], float] = time.thread_time,
        wall_clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < share <= 1:
            raise ValueError(f"the worker's CPU share must be in (0, 1], got {share!r}")
        if burst_s < 0:
            raise ValueError(f"burst_s must not be negative, got {burst_s!r}")
        self.share = share
        self.limited = share < 1
        self._burst = burst_s
        self._cpu_clock = cpu_clock
        self._wall_clock = wall_clock
        self._balance = burst_s
        self._last: tuple[float, float] | None = None  # (cpu, wall) at the previous call

    def pause_s(self) -> float:
        """Seconds to pause now so that CPU time stays within the share (0 when it does).

        The first call only starts the clocks. The pause is the time the bucket needs to
        be back at zero; the caller may pause less and ask again.
        """
        if not self.limited:
            return 0.0
        cpu, wall = self._cpu_clock(), self._wall_clock()
        last, self._last = self._last, (cpu, wall)
        if last is None:
            return 0.0
        # Earned and spent over the same interval: the bucket fills while the thread works.
        earned, spent = (wall - last[1]) * self.share, cpu - last[0]
        self._balance = min(self._burst, self._balance + earned - spent)
        if self._balance >= 0:
            return 0.0
        return -self._balance / self.share
