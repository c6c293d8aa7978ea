"""Fault injection on the judge path of live scoring (real judge client, fake Gemini).

A healthy judge, then a storm — 429s, 500s, connection resets, half-written replies,
calls that hang — then the judge back. The scorer must keep going, hold its bounds,
give every run exactly one outcome, and judge again by itself once the judge is back.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

from fake_judges import FakeGemini, FakeReply, gemini_error, gemini_json
from judge_helpers import make_judge
from live_agent import run_agent
from live_fixtures import total, value
from tracescore.criteria import informational_criteria
from tracescore.eval_config import criteria_from_config
from tracescore.judge.limits import CircuitBreaker
from tracescore.live.options import LiveOptions
from tracescore.processor import ScoringSpanProcessor
from tracescore.sampling import SamplingPolicy

DIMS = ("harmful_content", "hate_speech", "privacy", "misinformation", "manipulation")
SAFE = gemini_json({d: {"rationale": "fine", "verdict": "safe"} for d in DIMS})
STORM = (
    gemini_error(429, headers={"Retry-After": "0"}),
    gemini_error(500),
    gemini_error(503),
    FakeReply(reset=True),
    FakeReply(truncate=True, body={"candidates": []}),
    FakeReply(hang=True),
)
CRITERIA = [
    *criteria_from_config({"criteria": {"safety_v1": 1.0}}, source="test"),
    *informational_criteria(),
]
LABELS = {"agent": "weather_agent", "criterion": "safety_v1"}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Judge:
    """A responder whose behaviour the test switches between phases."""

    def __init__(self) -> None:
        self.storm = False
        self._faults = itertools.cycle(STORM)
        self._lock = threading.Lock()
        self.faults_served = 0

    def __call__(self, request: dict[str, Any], n: int) -> FakeReply:
        with self._lock:
            if not self.storm:
                return SAFE
            self.faults_served += 1
            return next(self._faults)


def test_judge_storm_costs_verdicts_not_runs_and_recovery_is_automatic() -> None:
    responder = Judge()
    breaker_clock = Clock()
    with FakeGemini(responder) as fake:
        judge = make_judge(
            fake.base_url,
            timeout_s=0.3,  # the hanging calls end as timeouts
            max_attempts=2,
            breaker=CircuitBreaker(failure_threshold=3, reset_after_s=30, clock=breaker_clock),
        )
        proc = ScoringSpanProcessor(
            CRITERIA,
            judge=judge,
            registry=CollectorRegistry(),
            sampling=SamplingPolicy(judged_rate=1.0),
            options=LiveOptions(idle_s=0, max_judged_traces=8),
        )
        provider = TracerProvider()
        provider.add_span_processor(proc)
        tracer = provider.get_tracer("agent")
        reg = proc.registry
        try:
            # 1. healthy
            for _ in range(4):
                run_agent(tracer)
            assert proc.force_flush(30_000)
            assert value(reg, "tracescore_evaluations_total", **LABELS, status="passed") == 4

            # 2. the storm: every run still ends, as a judge error, never lost
            responder.storm = True
            for _ in range(24):
                run_agent(tracer)
            assert proc.force_flush(60_000)
            outcomes = total(reg, "tracescore_invocations_total", "outcome")
            assert outcomes == {"scored": 4, "judge_error": 24}
            reasons = total(reg, "tracescore_not_evaluated_total", "reason")
            assert sum(reasons.values()) == 24
            assert any(r.startswith("judge unavailable") for r in reasons)  # breaker opened
            calls = total(reg, "tracescore_judge_requests_total", "outcome")
            assert calls["unavailable"] > 0 and calls["ok"] == 4
            # The breaker spared the judge: far fewer calls than runs x attempts.
            assert responder.faults_served < 24 * 2
            # Bounds: nothing left in flight, no judge task pending.
            assert proc.engine.traces_in_flight() == 0 and proc.engine.queue_depth() == 0
            assert proc.scorer.pending == 0

            # 3. the judge is back: after the breaker's reset time the next call is the
            # probe; it succeeds, the breaker closes and judging resumes, with no restart
            # and no operator action. (Calls made while the probe is out are refused as
            # "judge unavailable", hence one run first.)
            responder.storm = False
            breaker_clock.now += 31
            run_agent(tracer)
            assert proc.force_flush(30_000)
            for _ in range(4):
                run_agent(tracer)
            assert proc.force_flush(30_000)
            outcomes = total(reg, "tracescore_invocations_total", "outcome")
            assert outcomes == {"scored": 9, "judge_error": 24}
            assert value(reg, "tracescore_evaluations_total", **LABELS, status="passed") == 9
            traces = total(reg, "tracescore_traces_total", "outcome")
            assert sum(traces.values()) == 33  # one outcome per trace, none lost
        finally:
            provider.shutdown()
