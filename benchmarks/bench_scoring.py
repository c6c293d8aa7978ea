"""Scoring throughput of one replica: spans/s from decoded OTLP to scores and metrics.

``bench_receiver.py`` measures how fast ``tracescore serve`` takes spans in; this one
measures how fast one process *scores* them, which is what sizes a replica. One run:

1. the 10k-span agent-trace file of ``bench_receiver.py`` (generated once under
   ``benchmarks/out/``) as serialized 512-span ``ExportTraceServiceRequest`` messages,
   and goldens for every run in it (``tracescore import`` of the same file, cached), so
   every invocation matches a golden and every reference criterion runs;
2. (a) the baseline: ``ParseFromString`` + ``decode_trace_request`` of every request;
3. (b) the same decoding, then each batch offered to a ``LiveEngine`` (as the receiver
   does) scoring what ``tracescore serve`` scores by default (ADK's default criteria
   ``tool_trajectory_avg_score`` and ``response_match_score``, plus the informational
   counts) against the goldens, with Prometheus metrics, until
   ``force_flush`` returns: every trace assembled, matched, scored and counted;

best of ``--repeat``, as spans/s and traces/s with (a)/(b): the share of a replica's
scoring time that is decoding. A sanity check compares the outcomes with the traces
sent: one outcome per trace, none dropped (exit status 1 otherwise). There is no pass/fail target.

Usage::

    python benchmarks/bench_scoring.py [--repeat 3] [--requests 19]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_receiver import OUT, build_requests, decode_all, ensure_file  # noqa: E402


def goldens_for(traces: Path) -> Path:
    """An evalset of every run in ``traces`` (``tracescore import``), reused while newer."""
    path = OUT / f"{traces.stem}.evalset.json"
    if not path.exists() or path.stat().st_mtime < traces.stat().st_mtime:
        command = [sys.executable, "-m", "tracescore", "import", str(traces), "-o", str(path)]
        subprocess.run([*command, "--quiet"], check=True)
    return path


def score_all(requests: list[bytes], goldens: Path) -> tuple[float, int, int, dict[str, int]]:
    """Seconds to decode and score every request; spans; distinct traces; trace outcomes."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from prometheus_client import CollectorRegistry

    from tracescore.formats.otlp_proto import decode_trace_request
    from tracescore.goldens import load_goldens
    from tracescore.live.config import LiveSettings, live_criteria
    from tracescore.live.engine import LiveEngine
    from tracescore.live.options import LiveOptions
    from tracescore.live.scorer import LiveScorer
    from tracescore.spans import Origin

    criteria = live_criteria(LiveSettings(), source="defaults")  # what `serve` runs by default
    scorer = LiveScorer.build(
        criteria, registry=CollectorRegistry(), goldens=load_goldens([str(goldens)])
    )
    engine = LiveEngine(scorer, options=LiveOptions(idle_s=0.0, max_queue=1_000_000))
    origin = Origin("bench")
    spans = 0
    trace_ids: set[str] = set()
    started = time.perf_counter()
    for data in requests:
        message = ExportTraceServiceRequest()
        message.ParseFromString(data)
        batch = decode_trace_request(message, origin=origin)
        spans += len(batch.spans)
        trace_ids.update(span.trace_id for span in batch.spans)
        while not engine.offer(batch.spans, batch.logs):
            time.sleep(0.001)  # queue full: the receiver would answer 429 and be retried
    if not engine.force_flush(600):
        raise SystemExit("force_flush timed out")
    elapsed = time.perf_counter() - started
    engine.shutdown(10)
    return elapsed, spans, len(trace_ids), dict(scorer.trace_outcomes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--requests", type=int, default=19, help="requests of 512 spans")
    args = parser.parse_args(argv)

    traces = ensure_file()
    goldens = goldens_for(traces)
    requests = build_requests(traces, 512, args.requests)
    baseline = min(_timed(decode_all, requests) for _ in range(args.repeat))
    runs = [score_all(requests, goldens) for _ in range(args.repeat)]
    elapsed, spans, traces_sent, outcomes = min(runs)
    traces_done = sum(outcomes.values())
    print(f"python {sys.version.split()[0]}, best of {args.repeat}: {spans} spans")
    print(f"(a) decode only:          {spans / baseline:10,.0f} spans/s")
    print(
        f"(b) decode + score:       {spans / elapsed:10,.0f} spans/s "
        f"{traces_done / elapsed:8,.0f} traces/s  outcomes {outcomes}"
    )
    print(f"(a)/(b) = {elapsed and baseline / elapsed:.2f} of scoring time is decoding")
    if traces_done != traces_sent or "dropped" in outcomes:
        print(f"sanity check failed: {traces_sent} traces sent, outcomes {outcomes}")
        return 1
    return 0


def _timed(fn: object, requests: list[bytes]) -> float:
    started = time.perf_counter()
    fn(requests)  # type: ignore[operator]
    return time.perf_counter() - started


if __name__ == "__main__":
    raise SystemExit(main())
