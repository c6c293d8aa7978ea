"""Live scoring with a judge: real judge client on a fake Gemini, slow and hanging judges."""

from __future__ import annotations

import threading
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

from fake_judges import FakeGemini, FakeReply, gemini_json
from judge_helpers import SAFETY, Router, make_judge
from live_agent import run_agent
from live_fixtures import total, value
from tracescore.criteria import informational_criteria
from tracescore.eval_config import criteria_from_config
from tracescore.live.options import LiveOptions
from tracescore.live.scorer import BACKLOG_FULL
from tracescore.processor import ScoringSpanProcessor
from tracescore.sampling import SamplingPolicy
from tracescore.sinks.otel_events import EvaluationEventSink

DIMS = ("harmful_content", "hate_speech", "privacy", "misinformation", "manipulation")
SAFE = gemini_json({d: {"rationale": "fine", "verdict": "safe"} for d in DIMS})
CRITERIA = criteria_from_config(
    {"criteria": {"safety_v1": 1.0, "tool_trajectory_avg_score": 1.0}}, source="test"
)
ALL_JUDGED = SamplingPolicy(judged_rate=1.0)


def build(judge: Any, **kw: Any) -> tuple[Any, ScoringSpanProcessor, TracerProvider]:
    criteria = kw.pop("criteria", CRITERIA)
    proc = ScoringSpanProcessor(
        criteria, judge=judge, registry=CollectorRegistry(), sampling=ALL_JUDGED, **kw
    )
    provider = TracerProvider()
    provider.add_span_processor(proc)
    return provider.get_tracer("t"), proc, provider


def test_judged_scores_and_judge_metrics() -> None:
    with FakeGemini(Router({SAFETY: [SAFE]})) as fake:
        tracer, proc, provider = build(make_judge(fake.base_url))
        try:
            for _ in range(3):
                run_agent(tracer)
            assert proc.force_flush(20_000)
            reg = proc.registry
            labels = {"agent": "weather_agent", "criterion": "safety_v1"}
            assert value(reg, "tracescore_evaluations_total", **labels, status="passed") == 3
            assert value(reg, "tracescore_score_sum", **labels) == 3.0
            assert (
                value(
                    reg, "tracescore_judge_requests_total", model="gemini-2.5-flash", outcome="ok"
                )
                == fake.calls
                == 3
            )
            assert (
                value(
                    reg,
                    "tracescore_judge_tokens_total",
                    model="gemini-2.5-flash",
                    direction="input",
                )
                > 0
            )
            assert (
                value(
                    reg, "tracescore_judge_request_duration_seconds_count", model="gemini-2.5-flash"
                )
                == 3
            )
            # the reference criterion found no golden: the outcome names that first
            assert total(reg, "tracescore_invocations_total", "outcome") == {"no_golden": 3}
        finally:
            provider.shutdown()


def test_hanging_judge_flush_honours_timeout_and_shutdown_counts_the_rest() -> None:
    with FakeGemini(Router({SAFETY: [FakeReply(hang=True)]})) as fake:
        judge = make_judge(fake.base_url, timeout_s=60.0)
        tracer, proc, provider = build(judge, options=LiveOptions(shutdown_timeout_s=0.5))
        run_agent(tracer)
        run_agent(tracer)
        ok = proc.force_flush(200)
        assert ok is False  # the judge hangs: the flush says so within its timeout
        provider.shutdown()  # bounded: gives up on the judge after 0.5 s
        assert proc.engine._thread is not None
        assert not proc.engine._thread.is_alive()
        outcomes = total(proc.registry, "tracescore_invocations_total", "outcome")
        assert outcomes == {"dropped": 2}
        assert sum(total(proc.registry, "tracescore_traces_total", "outcome").values()) == 2


def test_backlog_full_sheds_judged_criteria_but_keeps_the_others() -> None:
    release = threading.Event()

    def slow(request: dict[str, Any], n: int) -> FakeReply:
        release.wait(30)
        return SAFE

    with FakeGemini(slow) as fake:
        tracer, proc, provider = build(
            make_judge(fake.base_url),
            options=LiveOptions(max_judged_traces=2, idle_s=0),
            criteria=[CRITERIA[0], *informational_criteria()],
        )
        try:
            shed = threading.Event()
            record = proc.metrics.record

            def spy(result: Any, **kw: Any) -> None:
                record(result, **kw)
                if result.outcome == "judge_error":
                    shed.set()

            proc.metrics.record = spy  # type: ignore[method-assign]
            for _ in range(5):
                run_agent(tracer)
            proc.engine._wake()
            assert shed.wait(10)
            release.set()
            assert proc.force_flush(20_000)
            reg = proc.registry
            outcomes = total(reg, "tracescore_invocations_total", "outcome")
            assert sum(outcomes.values()) == 5
            assert outcomes["judge_error"] >= 1
            reasons = total(reg, "tracescore_not_evaluated_total", "reason")
            assert reasons[BACKLOG_FULL] == outcomes["judge_error"]
            # the deterministic criterion ran for every invocation, shed or not
            ev = total(reg, "tracescore_evaluations_total", "criterion")
            assert ev["tool_call_count_v1"] == 5
        finally:
            release.set()
            provider.shutdown()


def test_evaluation_events_are_tied_to_the_root_span() -> None:
    exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]  # SDK: unannotated __init__
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    events = EvaluationEventSink(logger_provider)
    router = Router({SAFETY: [SAFE]})
    with FakeGemini(router) as fake:
        tracer, proc, provider = build(make_judge(fake.base_url), events=events)
        try:
            trace_id = run_agent(tracer, user="My card is 4111 1111 1111 1111, weather?")
            assert proc.force_flush(20_000)
        finally:
            provider.shutdown()
    records = [r.log_record for r in exporter.get_finished_logs()]
    names = sorted(str(r.attributes["gen_ai.evaluation.name"]) for r in records)  # type: ignore[index]
    # The informational criteria are added to those given, as every replay reports them.
    assert names == [
        "inference_call_count_v1",
        "invocation_duration_v1",
        "safety_v1",
        "token_usage_v1",
        "tool_call_count_v1",
        "tool_trajectory_avg_score",
    ]
    assert {f"{r.trace_id:032x}" for r in records} == {trace_id}
    assert all(r.event_name == "gen_ai.evaluation.result" for r in records)
    # No content by default. (Not a bare "4111": a duration score or an id may hold it.)
    assert not any("4111 1111" in str(r.attributes) for r in records)
    assert not any("tracescore.user_content" in (r.attributes or {}) for r in records)
    # the prompt that left the process was redacted, too
    [prompt] = router.prompts[SAFETY]
    assert "weather?" in prompt and "4111" not in prompt


def test_judge_calls_are_not_traced_by_an_instrumented_http_client() -> None:
    """The judge's HTTP calls run with instrumentation suppressed: an httpx instrumentation
    on the agent's provider records none of them, so tracescore never scores its own spans
    (the control request from the test's thread is recorded)."""
    import asyncio

    import httpx
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    def http_spans() -> list[Any]:
        return [
            s
            for s in exported.get_finished_spans()
            if any(k.startswith("http.") for k in s.attributes or {})
        ]

    exported = InMemorySpanExporter()
    provider = TracerProvider()
    instrumentor = HTTPXClientInstrumentor()
    instrumentor.instrument(tracer_provider=provider)  # before the judge builds its client
    try:
        with FakeGemini(Router({SAFETY: [SAFE]})) as fake:
            proc = ScoringSpanProcessor(
                CRITERIA,
                judge=make_judge(fake.base_url),
                registry=CollectorRegistry(),
                sampling=ALL_JUDGED,
            )
            provider.add_span_processor(proc)
            provider.add_span_processor(SimpleSpanProcessor(exported))
            tracer = provider.get_tracer("t")
            for _ in range(3):
                run_agent(tracer)
            assert proc.force_flush(20_000)
            assert fake.calls == 3
            assert http_spans() == []
            reg = proc.registry
            assert total(reg, "tracescore_invocations_total", "outcome") == {"no_golden": 3}

            async def control() -> None:
                async with httpx.AsyncClient() as client:
                    await client.get(fake.base_url + "/control")

            asyncio.run(control())
            assert len(http_spans()) == 1
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
