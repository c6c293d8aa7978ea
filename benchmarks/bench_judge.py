"""Judge throughput benchmark: judged criteria through the real client against a slow fake.

Issue target: against a fake Gemini server answering each call after 200 ms, score 500
invocations × 2 judged criteria × 3 samples (3,000 calls). Throughput must be >= 90% of
the ideal (concurrency ÷ latency) with the event loop never blocked, and a second replay
of the same input must make zero judge calls (SQLite cache).

What runs: the real scoring engine (``score_conversations_async``) with
``final_response_match_v2`` and ``response_evaluation_score`` (``num_samples`` 3 each) on
synthetic invocations with golden references, the real ``JudgeClient`` (redaction, cache,
limits, retries, breaker, ledger) on the real ``GeminiBackend`` (google-genai + httpx),
and the fake server from the test suite (a thread per connection, 127.0.0.1) in a child
process, so its threads do not compete with the scorer for the GIL.

Baselines, measured in the same run:

* ideal = concurrency ÷ latency, with latency the configured 200 ms (the issue's
  definition) and, second, the round-trip time of single sequential calls measured
  through the same client (which adds HTTP and client overhead to the 200 ms);
* event-loop lag: a ticker task asks to wake every 5 ms during the run; the worst delay
  beyond that is reported (a blocked loop shows up here as tens of milliseconds).

Usage::

    python benchmarks/bench_judge.py [--invocations 500] [--concurrency 16] [--latency 0.2]

Exit status 1 when throughput is below 90% of the ideal, the loop lagged more than 50 ms,
or the second replay made any call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fake_judges import FakeGemini, FakeReply, gemini_json
from tracescore.criteria.judged.base import JudgeModelOptions
from tracescore.criteria.judged.response_match import (
    FinalResponseMatchV2,
    ResponseEvaluationScore,
)
from tracescore.importer import bulk_gc
from tracescore.judge.backends import GeminiBackend
from tracescore.judge.cache import JudgeCache
from tracescore.judge.client import JudgeClient
from tracescore.judge.types import JudgeRequest
from tracescore.model import Conversation, Invocation
from tracescore.scoring import GoldenTurn, score_conversations_async


def responder(latency: float) -> Any:
    match = gemini_json({"reasoning": "same facts", "verdict": "valid"})
    rating = gemini_json({"rationale": "clear", "score": 4})

    def reply(request: dict[str, Any], n: int) -> FakeReply:
        system = request["systemInstruction"]["parts"][0]["text"]
        base = match if "reference answer" in system else rating
        return FakeReply(body=base.body, delay_s=latency)

    return reply


def workload(n: int) -> tuple[list[Conversation], dict[str, Invocation]]:
    conversations, golden = [], {}
    for i in range(n):
        inv = Invocation(
            trace_id=f"{i:032x}",
            invocation_id=f"inv-{i}",
            conversation_id=f"conv-{i}",
            agent="bench_agent",
            user_content=f"What is the weather in city number {i}?",
            final_response=f"It is {i % 35} degrees and sunny in city {i}.",
            start_ns=i,
        )
        golden[inv.invocation_id] = Invocation(
            trace_id="golden",
            invocation_id=f"g-{i}",
            user_content=inv.user_content,
            final_response=f"{i % 35}C, sunny.",
        )
        conversations.append(
            Conversation(conversation_id=inv.conversation_id or "", invocations=(inv,))
        )
    return conversations, golden


def client(base_url: str, cache: Path, concurrency: int) -> JudgeClient:
    return JudgeClient(
        GeminiBackend(api_key="bench", base_url=base_url),
        concurrency=concurrency,
        timeout_s=30,
        cache=JudgeCache(cache),
    )


async def run_once(
    base_url: str, cache: Path, concurrency: int, n: int
) -> tuple[float, int, float, int]:
    """(seconds, judge calls, worst loop lag in s, scored invocations)."""
    conversations, golden = workload(n)
    options = JudgeModelOptions(num_samples=3)
    criteria = [
        FinalResponseMatchV2(threshold=0.5, judge_model_options=options),
        ResponseEvaluationScore(threshold=3.5, judge_model_options=options),
    ]

    def match(inv: Invocation, conv: Any) -> tuple[GoldenTurn, Invocation, None]:
        return (
            GoldenTurn(eval_set_id="bench", eval_id=inv.invocation_id, turn=0),
            golden[inv.invocation_id],
            None,
        )

    judge = client(base_url, cache, concurrency)
    lag = 0.0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal lag
        while not stop.is_set():
            asked = time.perf_counter()
            await asyncio.sleep(0.005)
            late = time.perf_counter() - asked - 0.005
            if late > 0.02:
                print(f"  lag {late * 1000:.0f} ms at t={asked - start:.2f}s", file=sys.stderr)
            lag = max(lag, late)

    start = time.perf_counter()
    tick = asyncio.create_task(ticker())
    results = await score_conversations_async(conversations, criteria, match=match, judge=judge)
    elapsed = time.perf_counter() - start
    stop.set()
    await tick
    await judge.aclose()
    scored = sum(1 for r in results if all(c.status == "passed" for c in r.results))
    return elapsed, judge.stats.calls, lag, scored


async def round_trip(base_url: str, samples: int = 20) -> float:
    """Median seconds of one sequential call through the same client (cache off)."""
    judge = JudgeClient(GeminiBackend(api_key="bench", base_url=base_url), concurrency=1)
    times = []
    from pydantic import BaseModel

    class Rating(BaseModel):
        rationale: str
        score: int

    for i in range(samples):
        request = JudgeRequest(
            model="gemini-2.5-flash", system="rate", prompt=f"probe {i}", schema={"type": "object"}
        )
        start = time.perf_counter()
        await judge.ask(request, Rating, criterion="probe", version="1", sample=i)
        times.append(time.perf_counter() - start)
    await judge.aclose()
    return sorted(times)[len(times) // 2]


#: As a judged `tracescore replay` runs: start-up objects frozen, default gen-0 threshold.
GC_THRESHOLD = 700


def _serve(latency: float, conn: Any, stop: Any) -> None:
    """Child process: run the fake judge (so its threads do not share our GIL)."""
    with FakeGemini(responder(latency)) as fake:
        conn.send(fake.base_url)
        stop.wait()
        conn.send(fake.calls)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--invocations", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    ours, theirs = multiprocessing.Pipe()
    stop = multiprocessing.Event()
    server = multiprocessing.Process(target=_serve, args=(args.latency, theirs, stop), daemon=True)
    server.start()
    base_url = ours.recv()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp) / "judge.sqlite"
            rtt = asyncio.run(round_trip(base_url))
            with bulk_gc(threshold=GC_THRESHOLD):
                elapsed, calls, lag, scored = asyncio.run(
                    run_once(base_url, cache, args.concurrency, args.invocations)
                )
            with bulk_gc(threshold=GC_THRESHOLD):
                again, calls_again, lag_again, _ = asyncio.run(
                    run_once(base_url, cache, args.concurrency, args.invocations)
                )
    finally:
        stop.set()
        server.join(timeout=10)
    expected_calls = args.invocations * 2 * 3
    ideal = args.concurrency / args.latency
    ideal_rtt = args.concurrency / rtt
    rate = calls / elapsed
    report = {
        "invocations": args.invocations,
        "judge_calls": calls,
        "expected_calls": expected_calls,
        "concurrency": args.concurrency,
        "latency_s": args.latency,
        "round_trip_s": round(rtt, 4),
        "seconds": round(elapsed, 2),
        "calls_per_s": round(rate, 1),
        "ideal_calls_per_s": round(ideal, 1),
        "ratio_to_ideal": round(rate / ideal, 3),
        "ratio_to_measured_round_trip": round(rate / ideal_rtt, 3),
        "max_loop_lag_ms": round(lag * 1000, 1),
        "invocations_passing_both": scored,
        "second_run_seconds": round(again, 3),
        "second_run_calls": calls_again,
        "second_run_max_loop_lag_ms": round(lag_again * 1000, 1),
    }
    print(json.dumps(report, indent=2))
    ok = (
        calls == expected_calls
        and rate / ideal >= 0.9
        and lag < 0.05
        and calls_again == 0
        and scored == args.invocations
    )
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
