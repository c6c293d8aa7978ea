"""Soak: a million spans or more through live scoring; memory flat, every count exact.

Two modes:

* ``--mode processor``: a real SDK ``TracerProvider`` with ``ScoringSpanProcessor``
  (deterministic criteria, goldens matching half of the runs, an injected
  ``CollectorRegistry``) and, unless ``--no-batch``, a ``BatchSpanProcessor`` exporting to
  a null exporter next to it, driven by ``--threads`` app threads running simulated
  agent runs (``invoke_agent`` › ``chat`` › 1–3 ``execute_tool`` › ``chat``: 4–6 spans,
  GenAI semconv attributes) at ``--rate`` spans/s in total (0: as fast as they can). RSS
  is this process's.
* ``--mode serve``: ``tracescore --settings F serve --grpc-port 0 --http-port 0
  --ready-file R --goldens G`` as a subprocess, fed by ``--senders`` sender processes,
  each a ``TracerProvider`` + ``BatchSpanProcessor`` + the real OTLP exporter
  (``--protocol http`` or ``grpc``) running the same agent runs at its share of
  ``--rate``. RSS is the service's; the gauges come from its ``/metrics``.

Every ``--interval`` seconds one row of the curve: time, spans sent, RSS, traces in
flight, queue depth, spans received, traces done, CPU of the measured process, load
average. At the end (processor: ``force_flush``; serve: wait until the service is idle,
then SIGTERM and its drain must exit 0) the checks:

* counts exact: ``tracescore_spans_received_total`` == spans sent; the sum of
  ``tracescore_traces_total`` over its outcomes == agent runs sent (outcomes printed,
  ``dropped`` included); the sum of ``tracescore_invocations_total`` == runs sent (one
  invocation per run); serve mode also: every span ended by the senders was exported;
* RSS flat after warm-up: RSS at 20% of the spans sent vs at the end of the load
  (growth above ``--rss-threshold``, 10% by default, fails), and max - min over the last
  80%;
* traces in flight not growing: max over the last 80% vs max over the first 20%
  (reported; not an exit condition: it follows the load's pace).

Exit status 1 when a count check or the RSS check fails.

Usage::

    python benchmarks/soak.py --mode processor [--spans 1000000] [--rate 5000] [--threads 2]
    python benchmarks/soak.py --mode processor --rate 0            # full speed: sheds
    python benchmarks/soak.py --mode serve [--rate 4000] [--senders 2] [--protocol http]
    ... [--interval 5] [--json OUT] [--tracemalloc]                 # (processor only)
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Tracer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from live_agent import run_agent

HERE = Path(__file__).resolve().parent
MiB = 2**20

#: Cities the agent is asked about; goldens exist for the first half.
CITIES = (
    ("Paris", "21C"),
    ("London", "14C"),
    ("Tokyo", "25C"),
    ("Lima", "18C"),
    ("Oslo", "3C"),
    ("Cairo", "33C"),
)
GOLDEN_CITIES = CITIES[:3]
EXTRA_TOOLS = (("get_time", "12:00"), ("get_forecast", "sunny"))
CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5}
SERVE_SETTINGS = "[live]\ncriteria = {{ {criteria} }}\n"


# --- the agent ------------------------------------------------------------------------------


def question(city: str) -> str:
    return f"What is the weather in {city}?"


def answer(city: str, temp: str) -> str:
    return f"It is {temp} in {city}."


def agent_run(tracer: Tracer, n: int, *, agent: str = "weather_agent") -> int:
    """Agent run number ``n`` (deterministic); returns the spans it ended (4 to 6).

    ``invoke_agent`` › ``chat`` (tool calls) › 1–3 ``execute_tool`` › ``chat`` (answer),
    as the test suite's simulated agent writes them (``tests/live_agent.py``), varied:
    every 4th run belongs to a 3-turn conversation, every 50th ends in an error.
    """
    city, temp = CITIES[n % len(CITIES)]
    tools = [("get_weather", {"city": city}, temp)]
    tools += [(name, {"city": city}, res) for name, res in EXTRA_TOOLS[: (n // 6) % 3]]
    run_agent(
        tracer,
        agent=agent,
        user=question(city),
        tools=tools,
        answer=answer(city, temp),
        conversation_id=f"conv-{n // 12}" if n % 4 == 0 else None,
        error=n % 50 == 49,
    )
    return 3 + len(tools)


def drive(
    tracer: Tracer,
    *,
    first: int,
    step: int,
    spans: int,
    rate: float,
    counts: Any,
    slot: int,
) -> None:
    """Run agent runs ``first, first + step, ...`` until ``spans`` spans have ended.

    Paced by the clock at ``rate`` spans/s (0: no pacing), a load generator's schedule:
    late runs are not skipped, the schedule catches up. ``counts[slot]`` (spans) and
    ``counts[slot + 1]`` (runs) are updated after every run for the sampler to read; a
    second call goes on from where they are (``spans`` counts from the first call).
    """
    sent, runs = counts[slot], counts[slot + 1]
    n = first + step * runs
    next_at = time.perf_counter()
    while sent < spans:
        if rate:
            now = time.perf_counter()
            if now < next_at:
                time.sleep(next_at - now)  # the load schedule
        ended = agent_run(tracer, n)
        sent += ended
        runs += 1
        n += step
        counts[slot] = sent
        counts[slot + 1] = runs
        if rate:
            next_at += ended / rate


# --- goldens and metrics --------------------------------------------------------------------


def write_goldens(directory: Path) -> Path:
    """An ADK evalset with one single-turn case per golden city (``get_weather`` + answer)."""
    cases = [
        {
            "eval_id": f"weather_{city.lower()}",
            "conversation": [
                {
                    "user_content": {"role": "user", "parts": [{"text": question(city)}]},
                    "final_response": {"role": "model", "parts": [{"text": answer(city, temp)}]},
                    "intermediate_data": {
                        "tool_uses": [{"name": "get_weather", "args": {"city": city}}],
                        "tool_responses": [],
                        "intermediate_responses": [],
                    },
                }
            ],
        }
        for city, temp in GOLDEN_CITIES
    ]
    path = directory / "soak.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "soak", "eval_cases": cases}))
    return path


Sample = tuple[str, dict[str, str], float]


@dataclass(slots=True)
class Metrics:
    """What the checks and the curve read from tracescore's metrics."""

    spans_received: float = 0.0
    in_flight: float = 0.0
    queue: float = 0.0
    traces: dict[str, float] = field(default_factory=dict)
    invocations: dict[str, float] = field(default_factory=dict)
    dropped_spans: dict[str, float] = field(default_factory=dict)
    refused_spans: float = 0.0  # serve: spans the receiver refused (the sender retried)

    @classmethod
    def parse(cls, samples: Iterable[Sample]) -> Metrics:
        m = cls()
        for name, labels, value in samples:
            if name == "tracescore_spans_received_total":
                m.spans_received += value
            elif name == "tracescore_traces_in_flight":
                m.in_flight = value
            elif name == "tracescore_queue_depth":
                m.queue = value
            elif name == "tracescore_traces_total":
                key = labels["outcome"]
                m.traces[key] = m.traces.get(key, 0.0) + value
            elif name == "tracescore_invocations_total":
                key = labels["outcome"]
                m.invocations[key] = m.invocations.get(key, 0.0) + value
            elif name == "tracescore_spans_dropped_total":
                key = labels["reason"]
                m.dropped_spans[key] = m.dropped_spans.get(key, 0.0) + value
            elif name == "tracescore_receiver_records_total" and (
                labels.get("signal") == "traces" and labels.get("outcome") == "refused"
            ):
                m.refused_spans += value
        return m


def registry_samples(registry: Any) -> list[Sample]:
    return [(s.name, s.labels, s.value) for m in registry.collect() for s in m.samples]


def scrape(port: int) -> list[Sample]:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return [
        (s.name, s.labels, s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


# --- process figures ------------------------------------------------------------------------


def rss_mib(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def cpu_s(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load1() -> float:
    with open("/proc/loadavg") as fh:
        return float(fh.read().split()[0])


@dataclass(slots=True)
class Row:
    t: float
    spans_sent: int
    runs_sent: int
    rss_mib: float
    in_flight: float
    queue: float
    spans_received: float
    traces_done: float
    cpu: float  # cores used by the measured process since the previous row
    load1: float


class Sampler:
    """Takes a row every ``interval`` seconds on the calling thread until ``done()``."""

    def __init__(
        self,
        *,
        pid: int | str,
        sent: Callable[[], tuple[int, int]],
        metrics: Callable[[], Metrics],
        interval: float,
    ) -> None:
        self.pid, self.sent, self.metrics, self.interval = pid, sent, metrics, interval
        self.rows: list[Row] = []
        self.start = time.monotonic()
        self._cpu = (self.start, cpu_s(pid))

    def take(self, *, show: bool = True) -> Row:
        spans, runs = self.sent()
        m = self.metrics()
        now, cpu = time.monotonic(), cpu_s(self.pid)
        used = (cpu - self._cpu[1]) / max(now - self._cpu[0], 1e-9)
        self._cpu = (now, cpu)
        row = Row(
            t=now - self.start,
            spans_sent=spans,
            runs_sent=runs,
            rss_mib=rss_mib(self.pid),
            in_flight=m.in_flight,
            queue=m.queue,
            spans_received=m.spans_received,
            traces_done=sum(m.traces.values()),
            cpu=used,
            load1=load1(),
        )
        self.rows.append(row)
        if show:
            print_row(row)
        return row

    def run(self, done: Callable[[], bool]) -> None:
        next_at = time.monotonic() + self.interval
        while not done():
            time.sleep(max(0.0, min(0.2, next_at - time.monotonic())))
            if time.monotonic() >= next_at:
                self.take()
                next_at += self.interval
        self.take()


HEADER = (
    f"{'t s':>7}{'spans sent':>12}{'RSS MiB':>9}{'in flight':>10}{'queue':>8}"
    f"{'received':>11}{'traces done':>12}{'cpu':>6}{'load':>6}"
)


def print_row(r: Row) -> None:
    print(
        f"{r.t:>7.1f}{r.spans_sent:>12,}{r.rss_mib:>9.1f}{r.in_flight:>10,.0f}{r.queue:>8,.0f}"
        f"{r.spans_received:>11,.0f}{r.traces_done:>12,.0f}{r.cpu:>6.2f}{r.load1:>6.2f}",
        flush=True,
    )


# --- checks ---------------------------------------------------------------------------------


def flatness(rows: Sequence[Row], total: int) -> dict[str, Any]:
    """RSS and in-flight figures over the load phase (``rows``: the curve, load only)."""
    cut = next(i for i, r in enumerate(rows) if r.spans_sent >= 0.2 * total)
    half = next(i for i, r in enumerate(rows) if r.spans_sent >= 0.5 * total)
    head, tail = rows[: cut + 1], rows[cut:]
    at20, end = rows[cut], rows[-1]
    return {
        "rss_start_mib": rows[0].rss_mib,
        "rss_at_20pct_mib": at20.rss_mib,
        "rss_at_20pct_t": at20.t,
        "rss_end_mib": end.rss_mib,
        "rss_growth": end.rss_mib / at20.rss_mib - 1,
        "rss_at_50pct_mib": rows[half].rss_mib,
        "rss_growth_last50": end.rss_mib / rows[half].rss_mib - 1,
        "rss_max_last80_mib": max(r.rss_mib for r in tail),
        "rss_min_last80_mib": min(r.rss_mib for r in tail),
        "rss_spread_last80_mib": max(r.rss_mib for r in tail) - min(r.rss_mib for r in tail),
        "in_flight_max_first20": max(r.in_flight for r in head),
        "in_flight_max_last80": max(r.in_flight for r in tail),
        "queue_max_first20": max(r.queue for r in head),
        "queue_max_last80": max(r.queue for r in tail),
    }


def count_checks(m: Metrics, spans: int, runs: int) -> list[tuple[str, bool, str]]:
    traces = sum(m.traces.values())
    invocations = sum(m.invocations.values())
    return [
        (
            "spans received == spans sent",
            m.spans_received == spans,
            f"{m.spans_received:,.0f} vs {spans:,}",
        ),
        (
            "traces: one outcome per run",
            traces == runs,
            f"{traces:,.0f} vs {runs:,} runs; {fmt_counts(m.traces)}",
        ),
        (
            "invocations: one outcome per run",
            invocations == runs,
            f"{invocations:,.0f} vs {runs:,} runs; {fmt_counts(m.invocations)}",
        ),
    ]


def fmt_counts(counts: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:,.0f}" for k, v in sorted(counts.items())) or "none"


def report(
    args: argparse.Namespace,
    rows: list[Row],
    final: Metrics,
    checks: list[tuple[str, bool, str]],
    extra: dict[str, Any],
) -> int:
    load_rows = [r for r in rows if r.spans_sent < args.spans] + [
        next(r for r in rows if r.spans_sent >= args.spans)
    ]
    spans = rows[-1].spans_sent
    flat = flatness(load_rows, spans)
    duration = load_rows[-1].t
    rate = spans / duration if duration else 0.0
    growth_ok = flat["rss_growth"] <= args.rss_threshold
    print()
    print(f"load: {spans:,} spans, {rows[-1].runs_sent:,} runs in {duration:.1f}s: {rate:,.0f}/s")
    print(
        f"RSS: {flat['rss_start_mib']:.1f} MiB at start, {flat['rss_at_20pct_mib']:.1f} at 20% "
        f"(t={flat['rss_at_20pct_t']:.0f}s), {flat['rss_end_mib']:.1f} at the end: "
        f"{flat['rss_growth']:+.1%} (threshold +{args.rss_threshold:.0%})  "
        f"{'PASS' if growth_ok else 'FAIL'}"
    )
    print(
        f"     last 80%: {flat['rss_min_last80_mib']:.1f}..{flat['rss_max_last80_mib']:.1f} MiB "
        f"(max - min {flat['rss_spread_last80_mib']:.1f} MiB); {flat['rss_at_50pct_mib']:.1f} "
        f"at 50%: {flat['rss_growth_last50']:+.1%} over the last 50%"
    )
    print(
        f"in flight: max {flat['in_flight_max_first20']:,.0f} over the first 20%, "
        f"{flat['in_flight_max_last80']:,.0f} over the last 80%; queue max "
        f"{flat['queue_max_first20']:,.0f} / {flat['queue_max_last80']:,.0f}"
    )
    print(f"dropped spans: {fmt_counts(final.dropped_spans)}")
    for key, value in extra.items():
        print(f"{key}: {value}")
    for name, ok, detail in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")
    failed = not growth_ok or not all(ok for _, ok, _ in checks)
    if args.json:
        doc = {
            "mode": args.mode,
            "args": vars(args),
            "spans": spans,
            "runs": rows[-1].runs_sent,
            "duration_s": duration,
            "rate_spans_s": rate,
            "flatness": flat,
            "final": asdict(final),
            "checks": [{"name": n, "ok": ok, "detail": d} for n, ok, d in checks],
            "extra": extra,
            "curve": [asdict(r) for r in rows],
            "failed": failed,
        }
        Path(args.json).write_text(json.dumps(doc, indent=1))
    print("soak: FAILED" if failed else "soak: PASSED")
    return 1 if failed else 0


# --- processor mode -------------------------------------------------------------------------


class NullExporter(SpanExporter):
    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def run_processor(args: argparse.Namespace) -> int:
    import tracemalloc

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from prometheus_client import CollectorRegistry

    from tracescore.criteria import informational_criteria
    from tracescore.eval_config import criteria_from_config
    from tracescore.goldens import load_goldens
    from tracescore.live.options import LiveOptions
    from tracescore.processor import ScoringSpanProcessor

    if args.recent_max:
        # Diagnosis: the assembler remembers the ids of the last 100,000 released traces
        # (late records are dropped, not scored twice); a smaller bound fills sooner.
        from tracescore.live import assembly

        assembly._RECENT_MAX = args.recent_max  # type: ignore[misc]
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        goldens = load_goldens([str(write_goldens(Path(tmp)))])
    criteria = [
        *criteria_from_config({"criteria": CRITERIA}, source="soak"),
        *informational_criteria(),
    ]
    registry = CollectorRegistry()
    proc = ScoringSpanProcessor(
        criteria,
        goldens=goldens,
        registry=registry,
        options=LiveOptions(idle_s=args.idle_s),
    )
    provider = TracerProvider()
    exporter = NullExporter()
    if not args.no_batch:
        provider.add_span_processor(
            BatchSpanProcessor(exporter, max_queue_size=65_536, schedule_delay_millis=1000)
        )
    provider.add_span_processor(proc)
    tracer = provider.get_tracer("soak")
    # Warm the code paths up before the curve starts; subtracted from the counts.
    warm = sum(agent_run(tracer, 1_000_000_000 + n) for n in range(120))
    provider.force_flush(30_000)
    base = Metrics.parse(registry_samples(registry))
    gc.collect()
    if not args.no_freeze:
        gc.freeze()  # as a long-running agent should after start-up (bench_processor.py)
    if args.tracemalloc:
        tracemalloc.start(args.tracemalloc)

    threads_n = args.threads
    counts = [0] * (2 * threads_n)
    per_thread = -(-args.spans // threads_n)
    rate = args.rate / threads_n
    # With --tracemalloc the load stops at 20% for a snapshot of a flushed engine (nothing
    # queued or in flight), and again at the end: their difference is what stays.
    stages = (0.2, 1.0) if args.tracemalloc else (1.0,)
    snaps: list[Any] = []

    def load() -> None:
        for stage in stages:
            threads = [
                threading.Thread(
                    target=drive,
                    kwargs={
                        "tracer": tracer,
                        "first": k,
                        "step": threads_n,
                        "spans": int(per_thread * stage),
                        "rate": rate,
                        "counts": counts,
                        "slot": 2 * k,
                    },
                    name=f"app-{k}",
                )
                for k in range(threads_n)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if args.tracemalloc:
                proc.force_flush(300_000)
                provider.force_flush(60_000)
                gc.collect()
                snaps.append(tracemalloc.take_snapshot())

    def sent() -> tuple[int, int]:
        return sum(counts[0::2]), sum(counts[1::2])

    def metrics() -> Metrics:
        return minus(Metrics.parse(registry_samples(registry)), base)

    sampler = Sampler(pid="self", sent=sent, metrics=metrics, interval=args.interval)
    print(
        f"processor mode: {args.spans:,} spans, {threads_n} app threads, rate "
        f"{args.rate or 'full speed'} spans/s, BatchSpanProcessor "
        f"{'off' if args.no_batch else 'on (null exporter)'}, idle_s {args.idle_s}, "
        f"criteria {', '.join(CRITERIA)} + informational, {len(GOLDEN_CITIES)} goldens"
        f"{', tracemalloc on (slow)' if args.tracemalloc else ''}"
        f"{f', recent ids bounded to {args.recent_max:,}' if args.recent_max else ''}",
        flush=True,
    )
    print(HEADER)
    sampler.take()
    loader = threading.Thread(target=load, name="load")
    loader.start()
    sampler.run(lambda: not loader.is_alive())
    load_end = time.monotonic()
    flushed = proc.force_flush(300_000)
    provider.force_flush(60_000)
    flush_s = time.monotonic() - load_end
    final = metrics()
    sampler.take()
    spans, runs = sent()
    provider.shutdown()
    checks = count_checks(final, spans, runs)
    checks.append(("force_flush returned True", flushed, f"in {flush_s:.1f}s"))
    scorer = proc.scorer.trace_outcomes
    base_total = sum(base.traces.values())
    checks.append(
        (
            "scorer's own trace outcomes agree",
            sum(scorer.values()) - base_total == sum(final.traces.values()),
            f"{int(sum(scorer.values()) - base_total):,} (warm-up excluded)",
        )
    )
    if not args.no_batch:
        checks.append(
            (
                "BatchSpanProcessor exported every span",
                exporter.spans - warm == spans,
                f"{exporter.spans - warm:,} (warm-up excluded)",
            )
        )
    extra: dict[str, Any] = {
        "flush after load": f"{flush_s:.1f}s",
        "gc collections (gen0, gen1, gen2)": [s["collections"] for s in gc.get_stats()],
    }
    if len(snaps) == 2:
        print("\ntracemalloc: what stayed, flushed at 20% vs flushed at the end (top 15)")
        for stat in snaps[1].compare_to(snaps[0], "traceback")[:15]:
            print(f"  {stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+8d} objects")
            for line in stat.traceback.format()[-2 * args.tracemalloc :]:
                print(f"      {line}")
    return report(args, sampler.rows, final, checks, extra)


def minus(m: Metrics, base: Metrics) -> Metrics:
    """Counters of ``m`` less those of ``base`` (the warm-up runs); gauges as they are."""

    def sub(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
        return {k: v - b.get(k, 0.0) for k, v in a.items() if v - b.get(k, 0.0)}

    return Metrics(
        spans_received=m.spans_received - base.spans_received,
        in_flight=m.in_flight,
        queue=m.queue,
        traces=sub(m.traces, base.traces),
        invocations=sub(m.invocations, base.invocations),
        dropped_spans=sub(m.dropped_spans, base.dropped_spans),
        refused_spans=m.refused_spans - base.refused_spans,
    )


# --- serve mode -----------------------------------------------------------------------------


class CountingExporter(SpanExporter):
    """Counts the spans the wrapped exporter reported as exported (and those it failed)."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.ok = 0
        self.failed = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.ok += len(spans)
        else:
            self.failed += len(spans)
        return result

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self.inner.shutdown()


def sender(
    index: int,
    senders: int,
    protocol: str,
    port: int,
    spans: int,
    rate: float,
    counts: Any,
    reply: Connection,
) -> None:
    """One sender process: agent runs through BatchSpanProcessor and the OTLP exporter."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        inner: SpanExporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{port}", insecure=True)
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HTTPExporter,
        )

        inner = HTTPExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces")
    exporter = CountingExporter(inner)
    provider = TracerProvider(resource=Resource.create({"service.name": f"soak-{index}"}))
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_queue_size=65_536, schedule_delay_millis=1000)
    )
    tracer = provider.get_tracer("soak")
    slot = 3 * index
    drive(tracer, first=index, step=senders, spans=spans, rate=rate, counts=counts, slot=slot)
    flushed = provider.force_flush(120_000)
    provider.shutdown()
    counts[3 * index + 2] = exporter.ok
    reply.send(
        {
            "spans": counts[slot],
            "runs": counts[slot + 1],
            "exported": exporter.ok,
            "failed": exporter.failed,
            "flushed": flushed,
        }
    )


def run_serve(args: argparse.Namespace) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="soak-serve-"))
    goldens = write_goldens(tmp)
    settings = tmp / "tracescore.toml"
    criteria = ", ".join(f"{k} = {v}" for k, v in CRITERIA.items())
    settings.write_text(
        SERVE_SETTINGS.format(criteria=criteria) + f"idle_s = {args.idle_s}\n",
    )
    ready = tmp / "ready.json"
    log = (tmp / "serve.log").open("wb")  # a file, not a pipe nobody reads during hours
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACESCORE_", "OTEL_"))}
    cmd = [
        sys.executable, "-m", "tracescore", "--settings", str(settings), "serve",
        "--grpc-port", "0", "--http-port", "0", "--ready-file", str(ready),
        "--goldens", str(goldens), "--drain-timeout", "60",
    ]  # fmt: skip
    service = subprocess.Popen(cmd, stdout=log, stderr=log, env=env, cwd=tmp)
    try:
        return _serve_soak(args, service, ready, tmp)
    finally:
        if service.poll() is None:
            service.kill()
            service.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _serve_soak(
    args: argparse.Namespace, service: subprocess.Popen[bytes], ready: Path, tmp: Path
) -> int:
    deadline = time.monotonic() + 60
    while not ready.exists():  # the service's start-up
        if service.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"serve did not start:\n{(tmp / 'serve.log').read_text()}")
        time.sleep(0.05)
    ports = json.loads(ready.read_text())
    http_port = ports["http_port"]
    port = ports["grpc_port"] if args.protocol == "grpc" else http_port

    context = multiprocessing.get_context("spawn")
    counts = context.RawArray("q", 3 * args.senders)
    share = -(-args.spans // args.senders)
    rate = args.rate / args.senders
    pipes, procs = [], []
    for k in range(args.senders):
        receive, send = context.Pipe(duplex=False)
        p = context.Process(
            target=sender,
            args=(k, args.senders, args.protocol, port, share, rate, counts, send),
        )
        pipes.append(receive)
        procs.append(p)

    def sent() -> tuple[int, int]:
        return sum(counts[0::3]), sum(counts[1::3])

    def metrics() -> Metrics:
        return Metrics.parse(scrape(http_port))

    print(
        f"serve mode: {args.spans:,} spans, {args.senders} sender process(es) over OTLP/"
        f"{args.protocol} (BatchSpanProcessor, 512-span batches), rate "
        f"{args.rate or 'full speed'} spans/s, idle_s {args.idle_s}, service pid {service.pid}",
        flush=True,
    )
    print(HEADER)
    sampler = Sampler(pid=service.pid, sent=sent, metrics=metrics, interval=args.interval)
    sampler.take()
    for p in procs:
        p.start()
    sampler.run(
        lambda: (
            not any(p.is_alive() for p in procs)
            or all(counts[3 * k] >= share for k in range(args.senders))
        )
    )
    results = []
    for k, pipe in enumerate(pipes):
        try:
            results.append(pipe.recv())
        except EOFError:
            raise SystemExit(f"sender {k} failed (exit status {procs[k].exitcode})") from None
    for p in procs:
        p.join()
    load_end = time.monotonic()
    spans = sum(r["spans"] for r in results)
    runs = sum(r["runs"] for r in results)
    exported = sum(r["exported"] for r in results)
    failed = sum(r["failed"] for r in results)
    # Wait until the service has taken every span and scored every trace, then read the
    # final counts; SIGTERM then drains an empty service. The in-flight gauge alone is
    # not enough: it drops to 0 when traces are released, before they are scored.
    wait_until = time.monotonic() + 120 + args.idle_s
    previous, stable = None, 0
    while True:
        final = metrics()
        done = sum(final.traces.values())
        idle = final.queue == 0 and final.in_flight == 0 and final.spans_received >= exported
        stable = stable + 1 if idle and done == previous else 0
        previous = done
        if (idle and done >= runs) or stable >= 8 or time.monotonic() > wait_until:
            break
        time.sleep(0.25)  # polling another process
    settle_s = time.monotonic() - load_end
    sampler.take()
    service.send_signal(signal.SIGTERM)
    try:
        code = service.wait(90)
    except subprocess.TimeoutExpired:
        code = None
    checks = count_checks(final, spans, runs)
    checks.insert(
        0,
        (
            "senders exported every span they ended",
            exported == spans and failed == 0 and all(r["flushed"] for r in results),
            f"{exported:,} exported, {failed:,} failed, of {spans:,}",
        ),
    )
    checks.append(("SIGTERM drain exited 0", code == 0, f"exit status {code}"))
    log_text = (tmp / "serve.log").read_text(errors="replace")
    extra: dict[str, Any] = {
        "settle after load": f"{settle_s:.1f}s (until queue and in flight were 0)",
        "spans refused by the receiver (retried by the exporter)": f"{final.refused_spans:,.0f}",
        "service log lines": len(log_text.splitlines()),
    }
    tail = [ln for ln in log_text.splitlines() if "WARN" in ln or "ERROR" in ln or "Trace" in ln]
    if tail:
        extra["service log warnings/errors (first 5)"] = tail[:5]
    return report(args, sampler.rows, final, checks, extra)


# --- main -----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=("processor", "serve"), default="processor")
    p.add_argument("--spans", type=int, default=1_000_000, help="spans to send in all")
    p.add_argument(
        "--rate",
        type=float,
        default=None,
        help="spans/s in all (0: as fast as possible; default 5000 processor, 4000 serve)",
    )
    p.add_argument("--interval", type=float, default=5.0, help="seconds between samples")
    p.add_argument("--threads", type=int, default=2, help="processor: app threads")
    p.add_argument("--no-batch", action="store_true", help="processor: no BatchSpanProcessor")
    p.add_argument("--no-freeze", action="store_true", help="processor: no gc.freeze()")
    p.add_argument("--senders", type=int, default=2, help="serve: sender processes")
    p.add_argument("--protocol", choices=("http", "grpc"), default="http", help="serve: OTLP")
    p.add_argument("--idle-s", type=float, default=2.0, help="[live] idle_s (default as shipped)")
    p.add_argument("--rss-threshold", type=float, default=0.10, help="max RSS growth, 20%%→end")
    p.add_argument(
        "--tracemalloc",
        type=int,
        nargs="?",
        const=1,
        default=0,
        metavar="FRAMES",
        help="processor: diff tracemalloc snapshots at 20%% and at the end (slow)",
    )
    p.add_argument(
        "--recent-max",
        type=int,
        default=0,
        metavar="N",
        help="processor, diagnosis: bound the assembler's recently released ids to N",
    )
    p.add_argument("--json", default=None, metavar="OUT", help="write the curve and figures")
    args = p.parse_args(argv)
    if args.rate is None:
        args.rate = 5000.0 if args.mode == "processor" else 4000.0
    with open("/proc/loadavg") as fh:
        print(f"{os.cpu_count()} CPUs, load average {fh.read().split()[:3]}", flush=True)
    return run_processor(args) if args.mode == "processor" else run_serve(args)


if __name__ == "__main__":
    sys.exit(main())
