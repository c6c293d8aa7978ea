"""Load: app threads end >= 10k spans/s for 30 s into the processor while the judge is slow.

Asserts what the issue asks: span-end latency on the app threads is not hurt (compared
with the same paced load without the processor, measured first in this test), memory
stays bounded (RSS and the queue/in-flight gauges, sampled every second), drops are
counted, and every agent run ends in exactly one outcome:
received = scored + sampled_out + no_golden + not_evaluable + judge_error + dropped.

Pacing the app threads uses the clock (a load generator's schedule), not sleeps waiting
for our threads; the end of the run is awaited with ``force_flush``. The checks of the
pace (the rate reached, ``span.end()`` p50) are measured once more when they miss: slow
spells of the VM miss them with or without the processor.
"""

from __future__ import annotations

import gc
import os
import statistics
import threading
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.trace import Span, Tracer, set_span_in_context
from prometheus_client import CollectorRegistry

from fake_judges import FakeGemini, FakeReply, gemini_json
from judge_helpers import SAFETY, Router, make_judge
from live_fixtures import total, value
from tracescore.criteria import informational_criteria
from tracescore.eval_config import criteria_from_config
from tracescore.live.assembly import _RECENT_MAX
from tracescore.live.options import LiveOptions
from tracescore.processor import ScoringSpanProcessor
from tracescore.sampling import SamplingPolicy

THREADS = 2
SPANS_PER_RUN = 4
TARGET_SPANS_S = 11_000  # a margin over the 10k/s
DURATION_S = float(os.environ.get("TRACESCORE_LOAD_SECONDS", "30"))
BASELINE_S = 4.0
_ROOT_ATTRS = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "load_agent"}
#: Bytes per trace id the assembler remembers after release (so late records are known).
_RECENT_ID_BYTES = 200
DIMS = ("harmful_content", "hate_speech", "privacy", "misinformation", "manipulation")


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


_USER = '[{"role":"user","parts":[{"type":"text","content":"hi"}]}]'
_CALL = '[{"role":"assistant","parts":[{"type":"tool_call","id":"c","name":"t","arguments":{}}]}]'
_ANSWER = '[{"role":"assistant","parts":[{"type":"text","content":"hello"}]}]'


def agent_run(tracer: Tracer) -> Span:
    """One agent run: three child spans ended; returns the root, not ended yet."""
    root = tracer.start_span("invoke_agent load_agent", attributes=_ROOT_ATTRS)
    ctx = set_span_in_context(root)
    for name, attributes in (
        ("chat m", {"gen_ai.input.messages": _USER, "gen_ai.output.messages": _CALL}),
        ("execute_tool t", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}),
        ("chat m", {"gen_ai.input.messages": _USER, "gen_ai.output.messages": _ANSWER}),
    ):
        attributes.setdefault("gen_ai.operation.name", "chat")
        tracer.start_span(name, context=ctx, attributes=attributes).end()
    return root


def app_thread(tracer: Tracer, stop_at: float, runs_per_s: float, out: dict[str, Any]) -> None:
    """One app thread: paced agent runs; times every ``span.end()`` of the root span."""
    latencies: list[float] = []
    runs = 0
    interval = 1.0 / runs_per_s
    next_at = time.perf_counter()
    while True:
        now = time.perf_counter()
        if now >= stop_at:
            break
        if now < next_at:
            time.sleep(next_at - now)  # the load schedule, not a wait for our threads
        next_at += interval
        root = agent_run(tracer)
        t0 = time.perf_counter()
        root.end()
        latencies.append(time.perf_counter() - t0)
        runs += 1
    out["runs"] = runs
    out["latencies"] = latencies


class _Keep(SpanProcessor):
    def __init__(self) -> None:
        self.kept: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.kept.append(span)


def queued_span_bytes(runs: int = 500) -> float:
    """Bytes one ended span of this load holds while queued (measured, tracemalloc)."""
    keep = _Keep()
    provider = TracerProvider()
    provider.add_span_processor(keep)
    tracer = provider.get_tracer("calibration")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(runs):
            agent_run(tracer).end()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(keep.kept) == runs * SPANS_PER_RUN
    return held / len(keep.kept)


def run_load(provider: TracerProvider, seconds: float) -> tuple[int, list[float], float]:
    tracer = provider.get_tracer("load")
    per_thread = TARGET_SPANS_S / SPANS_PER_RUN / THREADS
    stop_at = time.perf_counter() + seconds
    outs: list[dict[str, Any]] = [{} for _ in range(THREADS)]
    threads = [
        threading.Thread(target=app_thread, args=(tracer, stop_at, per_thread, out)) for out in outs
    ]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    runs = sum(o["runs"] for o in outs)
    latencies = [x for o in outs for x in o["latencies"]]
    return runs, latencies, elapsed


@pytest.fixture
def heap_of_this_test_only() -> Iterator[None]:
    """Keep the collector off the objects earlier tests left in this process.

    In a full run the process holds hundreds of megabytes of them, which each full
    collection walks on whichever thread triggers it, an app thread as likely as ours:
    the app's rate then measured the suite's history (9.1k spans/s in one full run,
    10.8-11k alone). Frozen, they are out of the collector's reach for this test.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.mark.usefixtures("heap_of_this_test_only")
def test_load_with_a_slow_judge() -> None:
    """The load once; once more if only its pace missed (see :func:`one_load`).

    On the 2-core VM this runs on, some minutes are slow for every process: 4 runs of 28
    on 2026-11-28 paced only 7.3-9.7k spans/s, with the processor's CPU cap and without
    it alike, where the others reached 10-11k. A processor that slows the agent misses
    both times.
    """
    missed = one_load()
    if missed is not None:
        print(f"pace missed, measuring again: {missed}")
        gc.collect()  # the first load's garbage, off the app threads' collections
        again = one_load()
        assert again is None, f"{missed}; again: {again}"


def one_load() -> str | None:
    """Run the load; assert what does not depend on the machine's pace.

    Returns:
        What missed among the pace checks (the rate reached, the baseline's and the
        processor's; ``span.end()`` p50 against the baseline's), or None.

    """
    # Baseline: the same paced load, no processor.
    base_runs, base_lat, base_s = run_load(TracerProvider(), BASELINE_S)
    base_rate = base_runs * SPANS_PER_RUN / base_s
    span_bytes = queued_span_bytes()

    criteria = criteria_from_config({"criteria": {"safety_v1": 1.0}}, source="load")
    safe = gemini_json({d: {"rationale": "ok", "verdict": "safe"} for d in DIMS})
    slow = FakeReply(status=200, body=safe.body, delay_s=0.2)
    options = LiveOptions(max_queue=20_000, max_traces=5_000, max_judged_traces=64, idle_s=0.5)
    with FakeGemini(Router({SAFETY: [slow]})) as fake:
        judge = make_judge(fake.base_url, concurrency=8)
        proc = ScoringSpanProcessor(
            [*criteria, *informational_criteria()],
            judge=judge,
            registry=CollectorRegistry(),
            sampling=SamplingPolicy(judged_rate=0.05),
            options=options,
        )
        provider = TracerProvider()
        provider.add_span_processor(proc)
        samples: list[tuple[float, float, float]] = []
        done = threading.Event()

        def sampler() -> None:
            while not done.wait(1.0):
                samples.append(
                    (rss_mb(), proc.engine.queue_depth(), proc.engine.traces_in_flight())
                )

        watcher = threading.Thread(target=sampler)
        rss_start = rss_mb()
        watcher.start()
        try:
            runs, lat, elapsed = run_load(provider, DURATION_S)
        finally:
            done.set()
            watcher.join()
        assert proc.force_flush(120_000)
        provider.shutdown()

    rate = runs * SPANS_PER_RUN / elapsed
    reg = proc.registry
    outcomes = total(reg, "tracescore_invocations_total", "outcome")
    dropped_spans = total(reg, "tracescore_spans_dropped_total", "reason")
    p50, p99 = (statistics.quantiles(lat, n=100)[i] for i in (49, 98))
    b50, b99 = (statistics.quantiles(base_lat, n=100)[i] for i in (49, 98))
    rss = [s[0] for s in samples]
    # What the bounds allow: the queue and the traces in flight full of this load's spans
    # (held packed, smaller: an upper bound), the ids remembered after release, and room
    # for the judge's tasks and the allocator; a leak grows with the ~300k spans sent.
    budget_mb = (
        span_bytes * (options.max_queue + options.max_traces * SPANS_PER_RUN)
        + _RECENT_MAX * _RECENT_ID_BYTES
    ) / 2**20 + 64
    report = (
        f"rate {rate:.0f} spans/s, runs {runs}, outcomes {outcomes}, dropped spans "
        f"{dropped_spans}, end() p50 {p50 * 1e6:.1f}us (baseline {b50 * 1e6:.1f}) p99 "
        f"{p99 * 1e6:.1f}us (baseline {b99 * 1e6:.1f}), rss {rss_start:.0f}->{max(rss):.0f}MB "
        f"(budget +{budget_mb:.0f}MB, {span_bytes:.0f}B/span), "
        f"max queue {max(s[1] for s in samples):.0f}, max in flight {max(s[2] for s in samples):.0f}, "
        f"judge calls {fake.calls}"
    )
    print(report)
    # every run ends in exactly one outcome
    assert sum(outcomes.values()) == runs, report
    assert value(reg, "tracescore_spans_received_total") == runs * SPANS_PER_RUN, report
    assert outcomes.get("judge_error", 0) > 0, report  # the slow judge made it shed
    # memory bounded: queue and traces in flight within their limits, RSS flat
    assert max(s[1] for s in samples) <= options.max_queue + THREADS, report
    assert max(s[2] for s in samples) <= options.max_traces, report
    assert max(rss) - rss_start < budget_mb, report
    if not dropped_spans:
        # The worker kept up, so the buffers stayed far from their bounds (on a slow
        # machine they fill late in the run, which is growth within the budget): RSS
        # is flat after warm-up, growth would be a leak.
        half = len(rss) // 2
        assert max(rss[half:]) - max(rss[:half]) < 64, report
    missed = []
    if base_rate < 10_000:
        missed.append(f"baseline {base_rate:.0f} spans/s")
    if rate < 10_000:
        missed.append(f"{rate:.0f} spans/s")
    # span end on the app threads: the processor adds an append, not a wait. The worker
    # thread competes for the GIL meanwhile: on a slow 2-core VM that alone took the p50
    # to 1.5-2.2x the baseline's (runs of this test on 2026-11-26, the engine of the
    # previous session as much as this one's); a wait (a lock held, I/O) is 10x and more.
    if p50 > b50 * 2.5 + 2e-6:
        missed.append(f"end() p50 {p50 * 1e6:.1f}us against {b50 * 1e6:.1f}us")
    return f"{', '.join(missed)} ({report})" if missed else None
