"""CpuShare: the token bucket that keeps the live worker within its share of CPU time."""

from __future__ import annotations

import pytest

from tracescore.live.cpu_share import CpuShare


class Clocks:
    """A CPU clock and a wall clock the test moves by hand."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.wall = 100.0
        self.reads = 0

    def cpu_clock(self) -> float:
        self.reads += 1
        return self.cpu

    def wall_clock(self) -> float:
        return self.wall

    def work(self, cpu_s: float, wall_s: float | None = None) -> None:
        self.cpu += cpu_s
        self.wall += cpu_s if wall_s is None else wall_s


def share(value: float, clocks: Clocks, burst_s: float = 0.05) -> CpuShare:
    return CpuShare(
        value, burst_s=burst_s, cpu_clock=clocks.cpu_clock, wall_clock=clocks.wall_clock
    )


def test_the_first_look_only_starts_the_clocks() -> None:
    clocks = Clocks()
    clocks.cpu = 50.0  # whatever the thread used before does not count
    cap = share(0.25, clocks)
    assert cap.pause_s() == 0.0
    clocks.work(0.04)  # within the 0.05 s burst
    assert cap.pause_s() == 0.0


def test_over_the_share_it_pauses_until_the_bucket_is_back_at_zero() -> None:
    clocks = Clocks()
    cap = share(0.25, clocks)
    cap.pause_s()
    clocks.work(0.15)  # busy flat out: 0.05 banked, 0.0375 earned meanwhile, 0.15 used
    pause = cap.pause_s()
    assert pause == pytest.approx((0.15 - 0.05 - 0.0375) / 0.25)
    clocks.work(0.0, wall_s=pause)  # paused that long: back at zero
    assert cap.pause_s() == 0.0
    clocks.work(0.01)  # nothing banked any more: any work over the share pauses again
    assert cap.pause_s() == pytest.approx((0.01 - 0.0025) / 0.25)


def test_idle_time_banks_at_most_the_burst() -> None:
    clocks = Clocks()
    cap = share(0.5, clocks, burst_s=0.1)
    cap.pause_s()
    clocks.work(0.0, wall_s=3600.0)  # an hour idle banks 0.1 s, not 1800 s
    assert cap.pause_s() == 0.0
    clocks.work(0.3, wall_s=0.3)  # 0.1 banked, 0.15 earned meanwhile, 0.3 used
    assert cap.pause_s() == pytest.approx((0.3 - 0.1 - 0.15) / 0.5)


def test_a_steady_load_within_the_share_never_pauses() -> None:
    clocks = Clocks()
    cap = share(0.25, clocks, burst_s=0.0)
    cap.pause_s()
    for _ in range(1000):
        clocks.work(0.02, wall_s=0.1)  # 20% of the wall time
        assert cap.pause_s() == 0.0


def test_a_share_of_one_is_no_cap_and_reads_no_clock() -> None:
    clocks = Clocks()
    cap = share(1.0, clocks)
    clocks.work(10.0, wall_s=0.0)
    assert (cap.pause_s(), cap.pause_s(), cap.limited, clocks.reads) == (0.0, 0.0, False, 0)


@pytest.mark.parametrize("value", [0.0, -0.1, 1.01, float("nan")])
def test_a_share_outside_zero_to_one_is_refused(value: float) -> None:
    with pytest.raises(ValueError, match="CPU share must be in"):
        CpuShare(value)


def test_a_negative_burst_is_refused() -> None:
    with pytest.raises(ValueError, match="burst_s"):
        CpuShare(0.5, burst_s=-1.0)
