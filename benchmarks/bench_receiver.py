"""Receiver benchmark: OTLP/HTTP and OTLP/gRPC throughput against in-process decoding.

One run, in this order:

1. make sure an OTLP JSON Lines file of 10k agent-trace spans exists under
   ``benchmarks/out/`` (``gen_traces.py`` in a child process, reused while current) and
   turn its spans into ``--requests`` pre-serialized ``ExportTraceServiceRequest``
   messages of ``--spans-per-request`` spans each (512, the SDK's
   ``BatchSpanProcessor`` batch; ~1 MB each), resource and scope blocks kept;
2. (a) the baseline, in this process: ``ParseFromString`` + ``decode_trace_request`` of
   every request, one after another: the decoding cost the receiver cannot avoid;
3. (b) OTLP/HTTP: an ``OTLPServer`` in this process (its own event loop, in a thread)
   with a null intake that accepts everything; a client in a *separate process* (so its
   CPU does not compete for this process's GIL) posts every request ``--rounds`` times
   as ``application/x-protobuf`` over ``--concurrency`` keep-alive connections;
4. (c) OTLP/gRPC: the same requests as raw bytes through ``TraceService/Export`` on one
   channel from ``--concurrency`` client threads in a separate process;

best of ``--repeat`` each, as spans/s and MB/s, with (b)/(a) and (c)/(a): how close the
receiver comes to the pure decoding cost; plus the worst delay a 5 ms ticker saw on the
server's event loop during (b) and (c). A sanity check compares the spans the intake
took with the spans sent. There is no pass/fail target; the exit status is 1 when the
sanity check fails.

Usage::

    python benchmarks/bench_receiver.py [--repeat 3] [--rounds 4] [--concurrency 4]
                                        [--spans-per-request 512] [--requests 16]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import multiprocessing
import os
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
SPANS = 10_000
SEED = 7
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


# --- data --------------------------------------------------------------------------------


def ensure_file() -> Path:
    """The generated 10k-span file (reused while the generator version and seed match)."""
    sys.path.insert(0, str(HERE))
    import gen_traces

    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"traces-{SPANS // 1000}k-seed{SEED}.jsonl"
    meta_file = gen_traces.meta_path(path)
    if path.exists() and meta_file.exists():
        meta = orjson.loads(meta_file.read_bytes())
        if meta.get("generator_version") == gen_traces.GENERATOR_VERSION and (
            meta.get("seed") == SEED and meta.get("spans", 0) >= SPANS
        ):
            return path
    command = [sys.executable, str(HERE / "gen_traces.py"), "--spans", str(SPANS)]
    subprocess.run([*command, "--seed", str(SEED), "-o", str(path)], check=True)
    return path


def _b64_ids(span: dict[str, Any]) -> dict[str, Any]:
    """The file's hex ids as protobuf's JSON mapping wants bytes: base64."""
    for key in ("traceId", "spanId", "parentSpanId"):
        if span.get(key):
            span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return span


def build_requests(path: Path, per_request: int, count: int) -> list[bytes]:
    """``count`` serialized requests of ``per_request`` spans, in file order."""
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

    requests: list[bytes] = []
    request = ExportTraceServiceRequest()
    in_request = 0
    with path.open("rb") as fh:
        for line in fh:
            for block in orjson.loads(line)["resourceSpans"]:
                for scope_block in block["scopeSpans"]:
                    spans = scope_block["spans"]
                    while spans:
                        take = spans[: per_request - in_request]
                        spans = spans[len(take) :]
                        piece = {
                            "resource": block["resource"],
                            "scopeSpans": [
                                {
                                    "scope": scope_block["scope"],
                                    "spans": [_b64_ids(span) for span in take],
                                }
                            ],
                        }
                        request.resource_spans.append(ParseDict(piece, ResourceSpans()))
                        in_request += len(take)
                        if in_request == per_request:
                            requests.append(request.SerializeToString())
                            if len(requests) == count:
                                return requests
                            request = ExportTraceServiceRequest()
                            in_request = 0
    raise SystemExit(f"{path} holds fewer than {count} x {per_request} spans")


# --- (a) baseline ------------------------------------------------------------------------


def decode_all(requests: Sequence[bytes]) -> int:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from tracescore.formats.otlp_proto import decode_trace_request
    from tracescore.spans import Origin

    origin = Origin("bench")
    n = 0
    for data in requests:
        message = ExportTraceServiceRequest()
        message.ParseFromString(data)
        n += len(decode_trace_request(message, origin=origin).spans)
    return n


# --- the server (this process) -------------------------------------------------------------


class NullIntake:
    """Takes everything, keeps only a count."""

    def __init__(self) -> None:
        self.spans = 0

    def offer(self, spans: Sequence[object], logs: Sequence[object]) -> bool:
        self.spans += len(spans)
        return True

    def ready(self) -> bool:
        return True

    def drain(self, timeout_s: float) -> bool:
        return True


class Server:
    """An ``OTLPServer`` on its own loop in a thread, on free ports of 127.0.0.1."""

    def __init__(self, intake: NullIntake) -> None:
        self.intake = intake
        self.http_port = self.grpc_port = 0
        self.max_lag_s = 0.0  # worst event-loop lag seen by a 5 ms ticker
        self._started = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    def __enter__(self) -> Server:
        self._thread.start()
        self._started.wait()
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join()

    async def _main(self) -> None:
        from prometheus_client import CollectorRegistry

        from tracescore.server import OTLPServer, ServeOptions

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        options = ServeOptions(host="127.0.0.1", http_port=0, grpc_port=0)
        server = OTLPServer(self.intake, registry=CollectorRegistry(), options=options)
        await server.start()
        assert server.http_port is not None
        assert server.grpc_port is not None
        self.http_port, self.grpc_port = server.http_port, server.grpc_port
        ticker = asyncio.create_task(self._tick())
        self._started.set()
        await self._stop.wait()
        ticker.cancel()
        await server.stop(1.0)

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(0.005)
            self.max_lag_s = max(self.max_lag_s, loop.time() - before - 0.005)


# --- the client (a separate process) --------------------------------------------------------


def _send_http(port: int, requests: Sequence[bytes]) -> None:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/x-protobuf"}
    try:
        for body in requests:
            conn.request("POST", "/v1/traces", body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}")
    finally:
        conn.close()


def client(
    transport: str,
    port: int,
    requests: list[bytes],
    rounds: int,
    concurrency: int,
    repeat: int,
    reply: Connection,
) -> None:
    """Send ``requests`` x ``rounds`` over ``concurrency`` connections (threads), ``repeat``
    times, and report each repetition's wall time through ``reply``."""
    import grpc  # type: ignore[import-untyped]  # no stubs (as in src/tracescore/server/grpc.py)

    channel = grpc.insecure_channel(f"127.0.0.1:{port}") if transport == "grpc" else None

    def send(share: Sequence[bytes]) -> None:
        if channel is None:
            _send_http(port, share)
            return
        export = channel.unary_unary(EXPORT)
        for body in share:
            export(body, timeout=60)

    work = requests * rounds
    shares = [work[i::concurrency] for i in range(concurrency)]
    send(requests[:2])  # warm-up: connections, first-call paths
    times = []
    for _ in range(repeat):
        threads = [threading.Thread(target=send, args=(share,)) for share in shares]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        times.append(time.perf_counter() - started)
    if channel is not None:
        channel.close()
    reply.send(times)


def run_client(
    transport: str, port: int, requests: list[bytes], args: argparse.Namespace
) -> list[float]:
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(
        target=client,
        args=(transport, port, requests, args.rounds, args.concurrency, args.repeat, send),
    )
    process.start()
    times: list[float] = receive.recv()
    process.join()
    if process.exitcode != 0:
        raise SystemExit(f"{transport} client failed ({process.exitcode})")
    return times


# --- main ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--rounds", type=int, default=4, help="times each request is sent per run")
    p.add_argument("--concurrency", type=int, default=4, help="client connections/threads")
    p.add_argument("--spans-per-request", type=int, default=512)
    p.add_argument("--requests", type=int, default=16)
    args = p.parse_args(argv)

    import grpc
    import uvicorn

    print(
        f"python {platform.python_version()}, grpcio {grpc.__version__}, "
        f"uvicorn {uvicorn.__version__}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"best of {args.repeat}",
        flush=True,
    )
    requests = build_requests(ensure_file(), args.spans_per_request, args.requests)
    size = sum(len(r) for r in requests)
    per_run = len(requests) * args.spans_per_request
    print(
        f"{len(requests)} requests x {args.spans_per_request} spans, "
        f"{size / len(requests) / 1e6:.2f} MB each; client: {args.concurrency} connections, "
        f"each request sent {args.rounds}x per run, in a separate process",
        flush=True,
    )

    baseline = float("inf")
    for _ in range(args.repeat):
        started = time.perf_counter()
        decoded = decode_all(requests)
        baseline = min(baseline, time.perf_counter() - started)
    assert decoded == per_run, (decoded, per_run)
    rows = [("(a) decode in-process", per_run, size, baseline)]

    failed = False
    lags: list[float] = [0.0]
    intake = NullIntake()
    with Server(intake) as server:
        for label, transport, port in (
            ("(b) OTLP/HTTP protobuf", "http", server.http_port),
            ("(c) OTLP/gRPC", "grpc", server.grpc_port),
        ):
            before = intake.spans
            server.max_lag_s = 0.0
            times = run_client(transport, port, requests, args)
            lags.append(server.max_lag_s)
            sent = per_run * args.rounds
            expected = sent * args.repeat + 2 * args.spans_per_request  # + warm-up
            if intake.spans - before != expected:
                print(f"SANITY: {label}: intake took {intake.spans - before}, sent {expected}")
                failed = True
            rows.append((label, sent, size * args.rounds, min(times)))

    print()
    print(
        f"{'step':<26}{'spans':>8}{'s':>8}{'spans/s':>11}{'MB/s':>8}{'vs (a)':>8}"
        f"{'loop lag ms':>13}"
    )
    base_rate = per_run / baseline
    for (label, spans, nbytes, seconds), lag in zip(rows, lags):
        rate = spans / seconds
        print(
            f"{label:<26}{spans:>8}{seconds:>8.2f}{rate:>11,.0f}{nbytes / seconds / 1e6:>8.1f}"
            f"{rate / base_rate:>8.2f}{f'{lag * 1e3:.1f}' if lag else '-':>13}"
        )
    from tracescore.server import receiver

    inline_kb = receiver.INLINE_DECODE_MAX_BYTES // 1024
    print(f"(receiver decodes bodies over {inline_kb} KB in worker threads; loop lag: worst")
    print(" delay of a 5 ms ticker on the server's event loop during the run)")
    print("sanity: every span sent was taken by the intake" if not failed else "sanity: FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
