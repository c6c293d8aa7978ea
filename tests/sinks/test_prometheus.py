"""ScoreMetrics: exact series values on a fresh registry per test, exemplars, rolling mean."""

from __future__ import annotations

import asyncio
import logging
import random
import threading
from typing import Any

import pytest
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.exposition import generate_latest as text_exposition
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_exposition
from pydantic import BaseModel

from fake_judges import FakeGemini, gemini_error, gemini_json
from tracescore.criteria.base import CriterionResult, EvalStatus
from tracescore.criteria.efficiency import ToolCallCount
from tracescore.criteria.judged import json_schema
from tracescore.criteria.text import ResponseMatchScore
from tracescore.criteria.trajectory import ToolTrajectoryAvgScore
from tracescore.judge.backends import GeminiBackend
from tracescore.judge.client import JudgeClient
from tracescore.judge.costs import PriceTable, SpendLedger
from tracescore.judge.limits import RetryPolicy
from tracescore.judge.outcomes import JudgeCallRecord
from tracescore.judge.types import JudgeRequest
from tracescore.model import Invocation
from tracescore.scoring import InvocationResult, Outcome
from tracescore.sinks.prometheus import SCORE_BUCKETS, ScoreMetrics

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
ALLOWED_LABELS = {"agent", "criterion", "status", "outcome", "model", "reason", "direction", "le"}


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def crit(
    name: str,
    status: EvalStatus,
    score: float | None = None,
    *,
    reason: str | None = None,
    threshold: float | None = 0.5,
) -> CriterionResult:
    return CriterionResult(
        criterion=name,
        version="1",
        score=score,
        status=status,
        threshold=threshold,
        reason=reason,
    )


def result(
    *results: CriterionResult,
    agent: str | None = "weather_agent",
    trace_id: str = TRACE,
    outcome: Outcome = "scored",
) -> InvocationResult:
    inv = Invocation(trace_id=trace_id, invocation_id=f"{trace_id}:root", agent=agent)
    return InvocationResult(
        invocation=inv,
        golden=None,
        expected=None,
        outcome=outcome,
        reason=None,
        results=tuple(results),
    )


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def metrics(registry: CollectorRegistry, clock: Clock) -> ScoreMetrics:
    return ScoreMetrics(registry, clock=clock)


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


# -- invocations, evaluations, not evaluated -------------------------------------------------


def test_record_counts_outcome_each_status_and_sampled_out(
    registry: CollectorRegistry, metrics: ScoreMetrics
) -> None:
    metrics.record(
        result(
            crit("tool_trajectory_avg_score", "passed", 1.0),
            crit("response_match_score", "failed", 0.25),
            crit("rubric_based_final_response_quality_v1", "not_evaluated", reason="no rubrics"),
            crit("tool_call_count", "informational", 3.0, threshold=None),
        ),
        sampled_out=["hallucinations_v1"],
    )
    metrics.record(result(crit("tool_trajectory_avg_score", "passed", 1.0)))
    metrics.record(result(outcome="no_golden"))

    inv = "tracescore_invocations_total"
    assert value(registry, inv, agent="weather_agent", outcome="scored") == 2.0
    assert value(registry, inv, agent="weather_agent", outcome="no_golden") == 1.0
    ev = "tracescore_evaluations_total"
    expected = {
        ("tool_trajectory_avg_score", "passed"): 2.0,
        ("response_match_score", "failed"): 1.0,
        ("rubric_based_final_response_quality_v1", "not_evaluated"): 1.0,
        ("tool_call_count", "informational"): 1.0,
        ("hallucinations_v1", "sampled_out"): 1.0,
    }
    for (name, status), count in expected.items():
        assert value(registry, ev, agent="weather_agent", criterion=name, status=status) == count
    assert (
        value(
            registry,
            "tracescore_not_evaluated_total",
            agent="weather_agent",
            criterion="rubric_based_final_response_quality_v1",
            reason="no rubrics",
        )
        == 1.0
    )
    # Informational values are not scores: no histogram series for them.
    labels = {"agent": "weather_agent", "criterion": "tool_call_count"}
    assert value(registry, "tracescore_score_count", **labels) is None


def test_record_outcome_and_traces(registry: CollectorRegistry, metrics: ScoreMetrics) -> None:
    metrics.record_outcome(agent="weather_agent", outcome="dropped", count=3)
    metrics.record_outcome(agent=None, outcome="sampled_out")
    metrics.record_outcome(agent="", outcome="sampled_out")
    metrics.record_trace("scored")
    metrics.record_trace("no_agent")
    metrics.record_trace("no_agent")

    inv = "tracescore_invocations_total"
    assert value(registry, inv, agent="weather_agent", outcome="dropped") == 3.0
    assert value(registry, inv, agent="unknown", outcome="sampled_out") == 2.0
    assert value(registry, "tracescore_traces_total", outcome="scored") == 1.0
    assert value(registry, "tracescore_traces_total", outcome="no_agent") == 2.0
    with pytest.raises(ValueError, match="non-negative"):
        metrics.record_outcome(agent="a", outcome="dropped", count=-1)


def test_missing_agent_is_unknown(registry: CollectorRegistry, metrics: ScoreMetrics) -> None:
    metrics.record(result(crit("c", "passed", 0.9), agent=None))
    labels = {"agent": "unknown", "outcome": "scored"}
    assert value(registry, "tracescore_invocations_total", **labels) == 1.0
    assert value(registry, "tracescore_score_sum", agent="unknown", criterion="c") == 0.9


def test_intake_counters_and_scrape_time_gauges(
    registry: CollectorRegistry, metrics: ScoreMetrics
) -> None:
    metrics.spans_received(10)
    metrics.spans_received(5)
    metrics.logs_received(4)
    metrics.spans_dropped("queue_full", 7)
    metrics.spans_dropped("too_large", 1)
    metrics.worker_paused(0.25)
    metrics.worker_paused(0.5)
    depth = [3.0]
    metrics.track(queue_depth=lambda: depth[0], traces_in_flight=lambda: 2.0)

    assert value(registry, "tracescore_spans_received_total") == 15.0
    assert value(registry, "tracescore_logs_received_total") == 4.0
    assert value(registry, "tracescore_spans_dropped_total", reason="queue_full") == 7.0
    assert value(registry, "tracescore_spans_dropped_total", reason="too_large") == 1.0
    assert value(registry, "tracescore_worker_paused_seconds_total") == 0.75
    assert value(registry, "tracescore_queue_depth") == 3.0
    depth[0] = 42.0  # read at scrape time, not at track()
    assert value(registry, "tracescore_queue_depth") == 42.0
    assert value(registry, "tracescore_traces_in_flight") == 2.0


# -- scores ------------------------------------------------------------------------------------


def test_score_buckets_cover_unit_scale_and_one_to_five(
    registry: CollectorRegistry, metrics: ScoreMetrics
) -> None:
    scores = [0.0, 0.05, 0.5, 0.93, 1.0, 4.0]  # 4.0: response_evaluation_score (1–5)
    for score in scores:
        metrics.record(result(crit("c", "failed" if score < 0.5 else "passed", score)))
    labels = {"agent": "weather_agent", "criterion": "c"}
    buckets = {
        sample.labels["le"]: sample.value
        for family in registry.collect()
        if family.name == "tracescore_score"
        for sample in family.samples
        if sample.name == "tracescore_score_bucket"
    }
    cumulative = [1, 2, 2, 2, 2, 3, 3, 3, 3, 3, 4, 5, 5, 5, 6, 6, 6]  # last one: +Inf
    assert list(buckets.values()) == cumulative
    assert [float(le) for le in buckets][:-1] == list(SCORE_BUCKETS)
    assert value(registry, "tracescore_score_count", **labels) == 6.0
    assert value(registry, "tracescore_score_sum", **labels) == pytest.approx(sum(scores))


def test_only_passed_and_failed_scores_are_observed(
    registry: CollectorRegistry, metrics: ScoreMetrics
) -> None:
    metrics.record(
        result(
            crit("c", "not_evaluated", None, reason="no golden"),
            crit("c", "informational", 0.7, threshold=None),
            crit("c", "failed", float("nan")),  # never poisons the sum
            crit("c", "passed", 0.8),
        )
    )
    labels = {"agent": "weather_agent", "criterion": "c"}
    assert value(registry, "tracescore_score_count", **labels) == 1.0
    assert value(registry, "tracescore_score_sum", **labels) == 0.8
    assert value(registry, "tracescore_score_mean", **labels) == 0.8


def test_exemplar_carries_the_trace_id_in_openmetrics_only(
    registry: CollectorRegistry, metrics: ScoreMetrics
) -> None:
    metrics.record(result(crit("response_match_score", "passed", 0.75)))
    metrics.record(result(crit("response_match_score", "passed", 0.2), trace_id=""))

    openmetrics = openmetrics_exposition(registry).decode()  # type: ignore[no-untyped-call]  # prometheus_client: unannotated
    [line] = [ln for ln in openmetrics.splitlines() if "# {" in ln]
    assert line.startswith(
        'tracescore_score_bucket{agent="weather_agent",criterion="response_match_score",le="0.8"}'
    )
    assert f'# {{trace_id="{TRACE}"}} 0.75' in line
    # The classic text format has no exemplars, and the id is never a label.
    assert TRACE not in text_exposition(registry).decode()


def test_label_names_are_bounded(registry: CollectorRegistry, metrics: ScoreMetrics) -> None:
    metrics.record(result(crit("c", "passed", 1.0), crit("d", "not_evaluated", reason="x")))
    metrics.observe_judge(JudgeCallRecord(criterion="c", model="m", outcome="ok", duration_s=1))
    metrics.set_thresholds([ResponseMatchScore(threshold=0.5)])
    names = {label for family in registry.collect() for s in family.samples for label in s.labels}
    assert names <= ALLOWED_LABELS


# -- rolling mean ------------------------------------------------------------------------------


def test_rolling_mean_follows_the_window(
    registry: CollectorRegistry, metrics: ScoreMetrics, clock: Clock
) -> None:
    # Default window 300 s in 30 slots of 10 s.
    labels = {"agent": "weather_agent", "criterion": "c"}
    assert value(registry, "tracescore_score_mean", **labels) is None  # nothing yet

    clock.now = 1000.0  # slot 100
    metrics.record(result(crit("c", "failed", 0.2), crit("c", "passed", 0.4)))
    assert value(registry, "tracescore_score_mean", **labels) == pytest.approx(0.3)

    clock.now = 1150.0  # slot 115
    metrics.record(result(crit("c", "passed", 1.0)))
    assert value(registry, "tracescore_score_mean", **labels) == pytest.approx(1.6 / 3)

    clock.now = 1299.9  # slot 129: slot 100 is still one of the last 30
    assert value(registry, "tracescore_score_mean", **labels) == pytest.approx(1.6 / 3)
    clock.now = 1300.0  # slot 130: the first two scores left the window
    assert value(registry, "tracescore_score_mean", **labels) == pytest.approx(1.0)

    clock.now = 1450.0  # slot 145: nothing in the window, the series is not exported
    assert value(registry, "tracescore_score_mean", **labels) is None
    assert "tracescore_score_mean{" not in text_exposition(registry).decode()
    # The histogram keeps counting: only the mean is windowed.
    assert value(registry, "tracescore_score_count", **labels) == 3.0

    clock.now = 1460.0  # a new window starts from scratch, reusing ring positions
    metrics.record(result(crit("c", "passed", 0.6)))
    assert value(registry, "tracescore_score_mean", **labels) == pytest.approx(0.6)


def test_rolling_mean_is_per_agent_and_criterion_with_a_custom_window(
    registry: CollectorRegistry, clock: Clock
) -> None:
    metrics = ScoreMetrics(registry, window_s=60.0, clock=clock)  # slots of 2 s
    metrics.record(result(crit("a", "passed", 1.0), crit("b", "failed", 0.0)))
    metrics.record(result(crit("a", "failed", 0.5), agent="other_agent"))
    metrics.record(result(crit("z", "not_evaluated", reason="no golden")))

    def mean(agent: str, criterion: str) -> float | None:
        return value(registry, "tracescore_score_mean", agent=agent, criterion=criterion)

    assert (mean("weather_agent", "a"), mean("weather_agent", "b")) == (1.0, 0.0)
    assert mean("other_agent", "a") == 0.5
    assert mean("weather_agent", "z") is None  # never scored: no series
    clock.now += 60.0
    assert mean("weather_agent", "a") is None


def test_invalid_settings_are_rejected(registry: CollectorRegistry) -> None:
    with pytest.raises(ValueError, match="window_s"):
        ScoreMetrics(registry, window_s=0)
    with pytest.raises(ValueError, match="max_agents"):
        ScoreMetrics(registry, max_agents=0)


# -- thresholds ----------------------------------------------------------------------------------


def test_thresholds_skip_none_and_follow_the_configuration(
    registry: CollectorRegistry, metrics: ScoreMetrics
) -> None:
    metrics.set_thresholds(
        [ToolTrajectoryAvgScore(threshold=1.0), ResponseMatchScore(threshold=0.7), ToolCallCount()]
    )
    name = "tracescore_threshold"
    assert value(registry, name, criterion="tool_trajectory_avg_score") == 1.0
    assert value(registry, name, criterion="response_match_score") == 0.7
    assert value(registry, name, criterion="tool_call_count") is None  # informational

    metrics.set_thresholds([ResponseMatchScore(threshold=0.5)])
    assert value(registry, name, criterion="tool_trajectory_avg_score") is None
    assert value(registry, name, criterion="response_match_score") == 0.5


# -- bounded labels ------------------------------------------------------------------------------


def test_agents_beyond_the_cap_become_other_with_one_warning(
    registry: CollectorRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    metrics = ScoreMetrics(registry, max_agents=3)
    with caplog.at_level(logging.WARNING, logger="tracescore.sinks.prometheus"):
        for agent in ["a1", "a2", None, "a4", "a5", "a1"]:
            metrics.record(result(crit("c", "passed", 1.0), agent=agent))
    inv = "tracescore_invocations_total"
    assert value(registry, inv, agent="a1", outcome="scored") == 2.0
    assert value(registry, inv, agent="a2", outcome="scored") == 1.0
    assert value(registry, inv, agent="unknown", outcome="scored") == 1.0
    assert value(registry, inv, agent="other", outcome="scored") == 2.0
    assert value(registry, inv, agent="a4", outcome="scored") is None
    assert value(registry, "tracescore_score_mean", agent="other", criterion="c") == 1.0
    assert len(caplog.records) == 1
    assert "more than 3 distinct agents" in caplog.records[0].getMessage()


def test_reasons_are_truncated_and_capped(
    registry: CollectorRegistry, metrics: ScoreMetrics, caplog: pytest.LogCaptureFixture
) -> None:
    long_reason = "criterion error: ValueError:\n" + "x" * 200
    with caplog.at_level(logging.WARNING, logger="tracescore.sinks.prometheus"):
        metrics.record(result(crit("c", "not_evaluated", reason=long_reason)))
        metrics.record(result(crit("c", "not_evaluated", reason=None)))
        for i in range(60):
            metrics.record(result(crit("c", "not_evaluated", reason=f"reason {i}")))

    def reasons() -> dict[str, float]:
        return {
            s.labels["reason"]: s.value
            for family in registry.collect()
            if family.name == "tracescore_not_evaluated"
            for s in family.samples
            if s.name == "tracescore_not_evaluated_total"
        }

    counted = reasons()
    cut = ("criterion error: ValueError: " + "x" * 200)[:60]
    assert counted[cut] == 1.0
    assert counted["unknown"] == 1.0
    # 50 distinct values: the two above and "reason 0".."reason 47"; the rest are other.
    assert len(counted) == 51
    assert counted["reason 47"] == 1.0
    assert "reason 48" not in counted
    assert counted["other"] == 12.0
    assert sum(counted.values()) == 62.0
    assert len(caplog.records) == 1


def test_lone_surrogates_in_agents_and_reasons_do_not_break_the_scrape(
    registry: CollectorRegistry, metrics: ScoreMetrics
) -> None:
    # A custom criterion's reason (or a caller's agent name) may hold half an emoji; one
    # such label value made every scrape raise UnicodeEncodeError.
    metrics.record(result(crit("c", "not_evaluated", reason="cut \ud83d"), agent="a \udc00"))
    text = text_exposition(registry).decode()
    assert 'agent="a \ufffd",criterion="c",reason="cut \ufffd"} 1.0' in text
    assert value(registry, "tracescore_invocations_total", agent="a \ufffd", outcome="scored") == 1


# -- judge -------------------------------------------------------------------------------------


def test_observe_judge_counts_attempts_durations_tokens_and_cost(
    registry: CollectorRegistry, metrics: ScoreMetrics
) -> None:
    def call(
        outcome: str, duration: float = 0.0, *, model: str = "m1", **kw: Any
    ) -> JudgeCallRecord:
        return JudgeCallRecord(
            criterion="c", model=model, outcome=outcome, duration_s=duration, **kw
        )

    records = [
        call("ok", 1.5, input_tokens=1000, output_tokens=200, cost_usd=0.002),
        call("ok", 0.5, input_tokens=500, output_tokens=100, cost_usd=0.001),
        call("cached"),
        call("timeout", 60.0),
        call("http_429", 0.2),
        call("budget_exhausted"),
        call("unavailable"),
        call("error"),  # a backend bug: reported without a duration
        call("ok", 3.0, model="m2", input_tokens=7, cost_usd=None),
    ]
    for record in records:
        metrics.observe_judge(record)

    req = "tracescore_judge_requests_total"
    assert value(registry, req, model="m1", outcome="ok") == 2.0
    for outcome in ("cached", "timeout", "http_429", "budget_exhausted", "unavailable", "error"):
        assert value(registry, req, model="m1", outcome=outcome) == 1.0
    assert value(registry, req, model="m2", outcome="ok") == 1.0

    dur = "tracescore_judge_request_duration_seconds"
    assert value(registry, f"{dur}_count", model="m1") == 4.0  # ok, ok, timeout, http_429
    assert value(registry, f"{dur}_sum", model="m1") == pytest.approx(62.2)
    assert value(registry, f"{dur}_bucket", model="m1", le="1.0") == 2.0
    assert value(registry, f"{dur}_count", model="m2") == 1.0

    tok = "tracescore_judge_tokens_total"
    assert value(registry, tok, model="m1", direction="input") == 1500.0
    assert value(registry, tok, model="m1", direction="output") == 300.0
    assert value(registry, tok, model="m2", direction="input") == 7.0
    assert value(registry, "tracescore_judge_cost_usd_total", model="m1") == pytest.approx(0.003)
    assert value(registry, "tracescore_judge_cost_usd_total", model="m2") is None


class _Verdict(BaseModel):
    verdict: str


def test_observer_of_a_real_judge_client(
    registry: CollectorRegistry, metrics: ScoreMetrics
) -> None:
    model = "gemini-2.5-flash"
    with FakeGemini(
        [gemini_error(500), gemini_json({"verdict": "ok"}, input_tokens=1000, output_tokens=200)]
    ) as fake:
        client = JudgeClient(
            GeminiBackend(api_key="test-key", base_url=fake.base_url),
            default_model=model,
            retry=RetryPolicy(max_attempts=3, initial_s=0.01, max_s=0.05),
            ledger=SpendLedger(PriceTable()),
            rng=random.Random(7),
            observer=metrics.observe_judge,
        )
        request = JudgeRequest(
            model=model, system="Grade.", prompt="2+2=4?", schema=json_schema(_Verdict)
        )

        async def scenario() -> _Verdict:
            try:
                return await client.ask(request, _Verdict, criterion="c", version="1")
            finally:
                await client.aclose()

        assert asyncio.run(scenario()) == _Verdict(verdict="ok")

    req = "tracescore_judge_requests_total"
    assert value(registry, req, model=model, outcome="http_500") == 1.0
    assert value(registry, req, model=model, outcome="ok") == 1.0
    assert value(registry, "tracescore_judge_request_duration_seconds_count", model=model) == 2.0
    assert value(registry, "tracescore_judge_tokens_total", model=model, direction="input") == 1000
    cost = value(registry, "tracescore_judge_cost_usd_total", model=model)
    assert cost == pytest.approx(client.ledger.spent_today)
    assert cost is not None and cost > 0


# -- registry and threads ----------------------------------------------------------------------


def test_metrics_live_on_the_injected_registry_only(registry: CollectorRegistry) -> None:
    first = ScoreMetrics(registry)
    other = CollectorRegistry()
    second = ScoreMetrics(other)
    first.record(result(crit("c", "passed", 1.0)))
    second.record(result(crit("c", "passed", 1.0)))
    second.record(result(crit("c", "passed", 1.0)))
    labels = {"agent": "weather_agent", "outcome": "scored"}
    assert value(registry, "tracescore_invocations_total", **labels) == 1.0
    assert value(other, "tracescore_invocations_total", **labels) == 2.0
    assert REGISTRY.get_sample_value("tracescore_invocations_total", labels) is None
    assert "tracescore_" not in text_exposition(REGISTRY).decode()
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        ScoreMetrics(registry)


def test_recording_while_scraping_from_another_thread(
    registry: CollectorRegistry, metrics: ScoreMetrics
) -> None:
    rounds = 2000
    halfway, scraped = threading.Event(), threading.Event()

    def worker() -> None:
        for i in range(rounds):
            if i == rounds // 2:
                # Guarantees at least one scrape between two recordings; the loop below
                # keeps scraping for as long as this thread records.
                halfway.set()
                scraped.wait(timeout=10)
            metrics.record(
                result(
                    crit("c", "passed", 1.0),
                    crit("d", "not_evaluated", reason=f"r{i % 5}"),
                    agent=f"agent{i % 7}",
                ),
                sampled_out=["e"],
            )
            metrics.observe_judge(
                JudgeCallRecord(criterion="c", model="m", outcome="ok", duration_s=0.1)
            )

    thread = threading.Thread(target=worker)
    thread.start()
    assert halfway.wait(timeout=10)
    middle = openmetrics_exposition(registry).decode()  # type: ignore[no-untyped-call]  # prometheus_client: unannotated
    scraped.set()
    while thread.is_alive():  # scrape concurrently for as long as the worker records
        openmetrics_exposition(registry)  # type: ignore[no-untyped-call]  # prometheus_client: unannotated
    thread.join()

    assert 'tracescore_score_mean{agent="agent0",criterion="c"} 1.0' in middle
    total = 0.0
    for family in registry.collect():
        if family.name == "tracescore_invocations":
            total = sum(s.value for s in family.samples if s.name.endswith("_total"))
    assert total == rounds
    assert value(registry, "tracescore_judge_requests_total", model="m", outcome="ok") == rounds
    for agent in range(7):
        n = len(range(agent, rounds, 7))
        labels = {"agent": f"agent{agent}", "criterion": "c"}
        assert value(registry, "tracescore_score_count", **labels) == n
        assert value(registry, "tracescore_score_mean", **labels) == 1.0
        ev = "tracescore_evaluations_total"
        assert value(registry, ev, **labels, status="sampled_out") is None  # criterion e, not c
        assert value(registry, ev, agent=f"agent{agent}", criterion="e", status="sampled_out") == n


# -- judge budget ------------------------------------------------------------------------------


def test_budget_gauges_follow_the_ledger_and_its_utc_day(
    registry: CollectorRegistry, metrics: ScoreMetrics
) -> None:
    wall = Clock(1_700_000_000.0)  # 2023-11-14 22:13 UTC
    ledger = SpendLedger(PriceTable(), daily_cap_usd=2.0, clock=wall)
    metrics.track_budget(ledger)
    assert value(registry, "tracescore_judge_budget_usd") == 2.0
    assert value(registry, "tracescore_judge_spend_today_usd") == 0.0
    ledger.record(
        criterion="safety_v1", model="gemini-2.5-flash", input_tokens=1_000_000, output_tokens=0
    )
    spent = value(registry, "tracescore_judge_spend_today_usd")
    assert spent is not None and spent > 0
    assert spent == pytest.approx(ledger.spent_today)
    wall.now += 2 * 3600  # past 00:00 UTC: yesterday's spend no longer counts
    assert value(registry, "tracescore_judge_spend_today_usd") == 0.0
    assert value(registry, "tracescore_judge_budget_usd") == 2.0


def test_budget_without_cap_exports_spend_only_and_can_be_replaced(
    registry: CollectorRegistry, metrics: ScoreMetrics
) -> None:
    metrics.track_budget(SpendLedger(PriceTable(), daily_cap_usd=5.0))
    metrics.track_budget(SpendLedger(PriceTable()))  # replaces, no duplicate registration
    assert value(registry, "tracescore_judge_budget_usd") is None
    assert value(registry, "tracescore_judge_spend_today_usd") == 0.0
