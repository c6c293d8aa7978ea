"""Memory per trace in flight: what sizing a ``tracescore serve`` replica needs.

A replica holds each trace from its first span until its root ended ``idle_s`` ago
(longer for rootless traces: ``orphan_ttl_s``), so its memory is roughly
``traces in flight x bytes per trace``. One run:

1. the 10k-span agent-trace file of ``bench_receiver.py`` (generated once under
   ``benchmarks/out/``), as serialized ``ExportTraceServiceRequest`` messages of 512 spans;
2. (a) the baseline: the protobuf bytes of those spans on the wire;
3. (b) the same requests decoded as the receiver does (``decode_trace_request``) and held
   in a ``LiveAssembler`` with an idle window nothing reaches, measured with
   ``tracemalloc`` (Python allocations of the records and the assembler's bookkeeping);

printed as bytes per trace and per span, and (b)/(a): how much a trace in flight costs
against its size on the wire. There is no pass/fail target.

Usage::

    python benchmarks/bench_memory.py [--requests 19]
"""

from __future__ import annotations

import argparse
import gc
import sys
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_receiver import build_requests, ensure_file  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=19, help="requests of 512 spans")
    args = parser.parse_args(argv)

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from tracescore.formats.otlp_proto import decode_trace_request
    from tracescore.live.assembly import LiveAssembler
    from tracescore.spans import Origin

    requests = build_requests(ensure_file(), 512, args.requests)
    wire = sum(len(r) for r in requests)

    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    assembler = LiveAssembler(
        idle_s=3600, orphan_ttl_s=3600, max_traces=1_000_000, clock=lambda: 0.0
    )
    origin = Origin("bench")
    spans = 0
    for data in requests:
        message = ExportTraceServiceRequest()
        message.ParseFromString(data)
        batch = decode_trace_request(message, origin=origin)
        del message  # the receiver drops the request once decoded
        spans += len(batch.spans)
        assembler.add(batch.spans, batch.logs)
    gc.collect()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    traces = assembler.in_flight
    used = held - before

    print(f"python {sys.version.split()[0]}: {spans} spans in {traces} traces in flight")
    for label, size in (
        ("(a) on the wire (OTLP protobuf):", wire),
        ("(b) held in the assembler:", used),
    ):
        print(f"{label:33} {size / traces:10,.0f} B/trace {size / spans:8,.0f} B/span")
    print(f"(b)/(a) = {used / wire:.2f}")
    mib = used / traces * 10_000 / 2**20
    print(f"=> 10,000 traces in flight (the max_traces default) ~ {mib:,.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
