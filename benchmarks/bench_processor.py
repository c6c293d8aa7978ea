"""Hot-path cost of ScoringSpanProcessor next to the SDK's BatchSpanProcessor.

Issue targets:

1. ``on_end`` cost of ``ScoringSpanProcessor`` vs ``BatchSpanProcessor.on_end`` in the same
   run: <= 1.5x. Both get the same pre-ended real SDK spans; each processor has its worker
   running (ours scores the runs for real with the default criteria, the SDK's exports to
   an exporter that discards), queues large enough that neither drops.
2. A simulated agent loop (``invoke_agent`` > ``chat`` > ``execute_tool`` > ``chat`` with
   GenAI attributes, as instrumentations write them) with BatchSpanProcessor + ours vs
   BatchSpanProcessor alone: <= 10% extra CPU on the app thread (``time.thread_time`` of
   the thread running the loop; the workers' CPU is on their own threads). Ours runs
   with its shipped bounds and a 0.5 s idle window; the loop ends runs faster than one
   worker scores them, so its queue fills and sheds, as it would under overload.

Rounds alternate between the configurations. For the agent loop they are paired (ABBA
order) and the median of the per-pair ratios is held to the target: on the shared VM this
runs on, CPU speed drifts by tens of percent within seconds, and a ratio of two
neighbouring rounds cancels most of it. Start-up objects are frozen (``gc.freeze()``) before
the agent loop, as a long-running agent should; ``--no-freeze`` shows the other case, in
which a single full collection of the start-up heap (~0.8 s here) lands in some rounds
and, more often, in rounds with the scorer.

Usage::

    python benchmarks/bench_processor.py [--spans 100000] [--runs 5000] [--rounds 10]
                                         [--steady-runs 20000] [--steady-rounds 4]
                                         [--paced-runs 10000] [--paced-rounds 4]

Information (no target): longer loops, paired the same way, with the scorer's default
2 s idle window, as a long-running agent has it, and the app thread's time in each
generation's garbage collections; and a loop paced below the worker's capacity, its
app-thread CPU and wall time (a thread waking from a sleep waits for the GIL while the
worker holds it, up to ``sys.getswitchinterval()``).

Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from live_agent import run_agent
from tracescore.live.options import LiveOptions
from tracescore.processor import ScoringSpanProcessor


class NullExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


class Collect(SpanProcessor):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def ended_spans(runs: int) -> list[ReadableSpan]:
    provider = TracerProvider()
    collect = Collect()
    provider.add_span_processor(collect)
    tracer = provider.get_tracer("bench")
    for _ in range(runs):
        run_agent(tracer)
    return collect.spans


def bsp(queue: int) -> BatchSpanProcessor:
    return BatchSpanProcessor(NullExporter(), max_queue_size=queue, schedule_delay_millis=200)


def ours(queue: int | None = None) -> ScoringSpanProcessor:
    """Ours with a 0.5 s idle window; the shipped queue bound unless ``queue`` is given."""
    if queue is None:
        return ScoringSpanProcessor(options=LiveOptions(idle_s=0.5))
    return ScoringSpanProcessor(options=LiveOptions(max_queue=queue, idle_s=0.5))


def time_on_end(processor: SpanProcessor, spans: list[ReadableSpan]) -> float:
    on_end = processor.on_end
    start = time.perf_counter()
    for span in spans:
        on_end(span)
    elapsed = time.perf_counter() - start
    processor.force_flush(60_000)
    processor.shutdown()
    return elapsed / len(spans)


def agent_cpu(processors: list[SpanProcessor], runs: int) -> float:
    provider = TracerProvider()
    for p in processors:
        provider.add_span_processor(p)
    tracer = provider.get_tracer("bench")
    start = time.thread_time()
    for _ in range(runs):
        run_agent(tracer)
    cpu = time.thread_time() - start
    provider.force_flush(60_000)
    provider.shutdown()
    return cpu


def steady_gc(processors: list[SpanProcessor], runs: int) -> tuple[float, list[float]]:
    """App-thread CPU and garbage-collection seconds per generation, one long agent loop.

    The scorer keeps its default ``idle_s`` (2 s), so completed traces stay in flight as
    they do in a long-running agent, and the collector walks what it holds.
    """
    provider = TracerProvider()
    for p in processors:
        provider.add_span_processor(p)
    tracer = provider.get_tracer("bench")
    app = threading.get_ident()
    spent = [0.0, 0.0, 0.0]
    started = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if threading.get_ident() != app:
            return
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            spent[info["generation"]] += time.perf_counter() - started[0]

    gc.callbacks.append(on_gc)
    try:
        start = time.thread_time()
        for _ in range(runs):
            run_agent(tracer)
        cpu = time.thread_time() - start
    finally:
        gc.callbacks.remove(on_gc)
    provider.force_flush(60_000)
    provider.shutdown()
    return cpu, spent


def paced(processors: list[SpanProcessor], runs: int, pause_s: float) -> tuple[float, float]:
    """App-thread CPU and wall seconds of an agent loop that sleeps ``pause_s`` every 10 runs.

    Below the worker's capacity, as a real agent waiting on its model is: the wall time
    shows what the worker's hold on the GIL costs a thread waking from I/O.
    """
    provider = TracerProvider()
    for p in processors:
        provider.add_span_processor(p)
    tracer = provider.get_tracer("bench")
    cpu, wall = time.thread_time(), time.perf_counter()
    for i in range(runs):
        run_agent(tracer)
        if i % 10 == 9:
            time.sleep(pause_s)
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    provider.force_flush(60_000)
    provider.shutdown()
    return cpu, wall


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steady-runs", type=int, default=20_000)
    parser.add_argument("--steady-rounds", type=int, default=4)
    parser.add_argument("--paced-runs", type=int, default=10_000)
    parser.add_argument("--paced-rounds", type=int, default=4)
    parser.add_argument("--no-freeze", action="store_true", help="do not gc.freeze() start-up")
    args = parser.parse_args()

    spans = ended_spans(args.spans // 4)
    queue = len(spans) + 1
    sdk_cost, our_cost = [], []
    for _ in range(args.rounds):
        sdk_cost.append(time_on_end(bsp(queue), spans))
        our_cost.append(time_on_end(ours(queue), spans))
    sdk_us = statistics.median(sdk_cost) * 1e6
    our_us = statistics.median(our_cost) * 1e6
    ratio = our_us / sdk_us
    print(f"on_end: BatchSpanProcessor {sdk_us:.3f} us/span, ScoringSpanProcessor {our_us:.3f}")
    print(f"  ratio {ratio:.2f} (target <= 1.5)  {'PASS' if ratio <= 1.5 else 'FAIL'}")

    # The agent loop starts from a clean heap, with the start-up objects frozen as a
    # long-running agent should (``gc.freeze()``; ``tracescore serve`` does it too).
    # Unfrozen, one full collection of this process's ~0.5M start-up objects costs the
    # app thread ~0.8 s; whichever round it lands in dominates the comparison (it lands
    # more often with a scorer, whose medium-lived records promote objects to gen 2).
    del spans, sdk_cost, our_cost
    gc.collect()
    if not args.no_freeze:
        gc.freeze()
    # Paired rounds, in ABBA order (alone, ours, ours, alone, ...): on a shared VM the
    # CPU speed drifts by tens of percent within seconds, so each ratio compares two
    # neighbouring rounds and the median of the ratios is held to the target.
    alone, both, ratios = [], [], []
    for k in range(args.rounds):
        if k % 2 == 0:
            a = agent_cpu([bsp(65_536)], args.runs)
            b = agent_cpu([bsp(65_536), ours()], args.runs)
        else:
            b = agent_cpu([bsp(65_536), ours()], args.runs)
            a = agent_cpu([bsp(65_536)], args.runs)
        alone.append(a)
        both.append(b)
        ratios.append(b / a)
    base, with_ours = statistics.median(alone), statistics.median(both)
    extra = statistics.median(ratios) - 1
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratios[0]] * 3
    per_run = base / args.runs * 1e6
    print(
        f"agent loop ({args.runs} runs x 4 spans, {args.rounds} paired rounds): app-thread CPU "
        f"median {base:.3f}s alone ({per_run:.0f} us/run), {with_ours:.3f}s with ours"
    )
    print(
        f"  extra, median of paired ratios {extra:+.1%} (quartiles {q[0] - 1:+.1%} .. "
        f"{q[2] - 1:+.1%}; target <= +10%)  {'PASS' if extra <= 0.10 else 'FAIL'}"
    )

    # Information: longer loops at steady state, with the default 2 s idle window, paired
    # as above, and where the app thread's CPU goes to the garbage collector (the
    # scorer's records in flight are what full collections walk).
    rows: dict[str, list[tuple[float, list[float]]]] = {"alone": [], "with ours": []}
    for k in range(args.steady_rounds):
        order = ["alone", "with ours"] if k % 2 == 0 else ["with ours", "alone"]
        for label in order:
            procs: list[SpanProcessor] = [bsp(65_536)]
            if label == "with ours":
                procs.append(ScoringSpanProcessor())
            rows[label].append(steady_gc(procs, args.steady_runs))
    for label, measured in rows.items():
        if not measured:
            continue
        cpu = statistics.median(m[0] for m in measured)
        gen = [statistics.median(m[1][g] for m in measured) for g in range(3)]
        print(
            f"steady state ({args.steady_runs} runs, idle_s 2 s, median of "
            f"{len(measured)}), {label}: app-thread CPU {cpu:.2f}s, of it in GC: "
            f"gen0 {gen[0]:.3f}s, gen1 {gen[1]:.3f}s, gen2 {gen[2]:.3f}s"
        )
    if rows["alone"]:
        pairs = [b[0] / a[0] for a, b in zip(rows["alone"], rows["with ours"], strict=True)]
        print(f"  steady-state extra, median of paired ratios {statistics.median(pairs) - 1:+.1%}")

    # Information: a loop paced below the worker's capacity (a 5 ms sleep every 10 runs,
    # ~1,600 runs/s here), default options; CPU and wall time of the app thread.
    cpu_ratios, wall_ratios = [], []
    for k in range(args.paced_rounds):
        sides = [False, True] if k % 2 == 0 else [True, False]
        got: dict[bool, tuple[float, float]] = {}
        for scored in sides:
            paced_procs: list[SpanProcessor] = [bsp(65_536)]
            if scored:
                paced_procs.append(ScoringSpanProcessor())
            got[scored] = paced(paced_procs, args.paced_runs, 0.005)
        cpu_ratios.append(got[True][0] / got[False][0])
        wall_ratios.append(got[True][1] / got[False][1])
    if cpu_ratios:
        print(
            f"paced ({args.paced_runs} runs, 5 ms sleep every 10, median of "
            f"{len(cpu_ratios)} pairs): app-thread CPU {statistics.median(cpu_ratios) - 1:+.1%}, "
            f"wall {statistics.median(wall_ratios) - 1:+.1%} (switch interval "
            f"{sys.getswitchinterval() * 1000:g} ms)"
        )
    return 0 if ratio <= 1.5 and extra <= 0.10 else 1


if __name__ == "__main__":
    sys.exit(main())
