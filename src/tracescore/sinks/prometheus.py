"""Every tracescore metric, on a Prometheus registry the caller owns (REFERENCE §8).

:class:`ScoreMetrics` declares all series on an injected
:class:`~prometheus_client.CollectorRegistry` (never the process-wide default), so a
test, a replay push and the live service each get their own. Labels are bounded: agent,
criterion, status, outcome, model, reason, direction. Trace ids never become labels;
they travel as exemplars on ``tracescore_score`` (visible in OpenMetrics exposition
only), which links a bad score to its trace.

Cardinality is capped where values come from telemetry: at most ``max_agents`` agent
names (later ones are ``other``) and at most 50 not-evaluated reasons (each cut to 60
characters; later ones are ``other``). Criterion, model and outcome values come from
tracescore's own configuration and code, hence bounded already.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from tracescore.criteria.base import Criterion
from tracescore.json_text import clean_text
from tracescore.judge.costs import SpendLedger
from tracescore.judge.outcomes import JudgeCallRecord
from tracescore.scoring import InvocationResult

__all__ = ["SCORE_BUCKETS", "ScoreMetrics"]

logger = logging.getLogger(__name__)

#: Buckets of ``tracescore_score``: fine steps over ADK's 0–1 scores, and whole steps
#: above 1 for ``response_evaluation_score``, whose scale is 1–5.
_UNIT_SCALE: Final = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
SCORE_BUCKETS: Final = (*_UNIT_SCALE, 2.0, 3.0, 4.0, 5.0)
#: Judge calls take from a fraction of a second to the per-call timeout (60 s default).
_JUDGE_BUCKETS: Final = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0)
#: Judge outcomes that did not reach the provider: no request duration to observe.
_NOT_CALLED: Final = frozenset({"cached", "unavailable", "budget_exhausted"})

_UNKNOWN: Final = "unknown"
_OTHER: Final = "other"
_MAX_REASONS: Final = 50
_REASON_CHARS: Final = 60
#: Time slots of the rolling mean's ring: memory per series stays constant.
_SLOTS: Final = 30
#: OpenMetrics caps an exemplar's label names and values at 128 characters together.
_MAX_EXEMPLAR_VALUE: Final = 128 - len("trace_id")


class _Ring:
    """Sum and count of scores per time slot, for the last ``_SLOTS`` slots.

    Slot ``i`` covers ``[i * width, (i + 1) * width)`` on the clock; it lives at position
    ``i % _SLOTS`` until a later slot reuses that position.
    """

    __slots__ = ("counts", "slots", "sums")

    def __init__(self) -> None:
        self.slots: list[int | None] = [None] * _SLOTS
        self.sums: list[float] = [0.0] * _SLOTS
        self.counts: list[int] = [0] * _SLOTS

    def add(self, slot: int, value: float) -> None:
        pos = slot % _SLOTS
        if self.slots[pos] != slot:
            self.slots[pos], self.sums[pos], self.counts[pos] = slot, 0.0, 0
        self.sums[pos] += value
        self.counts[pos] += 1

    def mean(self, current: int) -> float | None:
        """Mean over slots ``current - _SLOTS + 1 .. current``; None without any."""
        total, count = 0.0, 0
        for slot, s, n in zip(self.slots, self.sums, self.counts):
            if slot is not None and current - _SLOTS < slot <= current:
                total += s
                count += n
        return total / count if count else None


class _RollingMean:
    """``tracescore_score_mean``: a collector computing each series' mean at scrape time.

    One :class:`_Ring` per (agent, criterion); ``add`` runs on the recording thread and
    ``collect`` on the scraping one, both under one lock.
    """

    name: Final = "tracescore_score_mean"
    documentation: Final = (
        "Mean tracescore_score per agent and criterion over the rolling window; "
        "absent when nothing was scored in the window."
    )

    def __init__(self, *, window_s: float, clock: Callable[[], float]) -> None:
        self._slot_width = window_s / _SLOTS
        self._clock = clock
        self._lock = threading.Lock()
        self._rings: dict[tuple[str, str], _Ring] = {}

    def add(self, agent: str, criterion: str, score: float) -> None:
        with self._lock:
            # Clock read under the lock: slots reach each ring in order, so a late
            # writer can never reset a newer slot sharing its ring position.
            slot = self._slot()
            ring = self._rings.get((agent, criterion))
            if ring is None:
                ring = self._rings[(agent, criterion)] = _Ring()
            ring.add(slot, score)

    def describe(self) -> list[Metric]:
        # Declares the name so the registry rejects a clashing registration.
        return [self._family()]

    def collect(self) -> list[Metric]:
        current = self._slot()
        with self._lock:
            means = [(key, ring.mean(current)) for key, ring in self._rings.items()]
        family = self._family()
        for (agent, criterion), mean in means:
            if mean is not None:
                family.add_metric([agent, criterion], mean)
        return [family]

    def _family(self) -> GaugeMetricFamily:
        return GaugeMetricFamily(self.name, self.documentation, labels=["agent", "criterion"])

    def _slot(self) -> int:
        return math.floor(self._clock() / self._slot_width)


class _JudgeBudget:
    """``tracescore_judge_budget_usd`` and ``tracescore_judge_spend_today_usd`` at scrape time.

    Read from a :class:`SpendLedger` snapshot: the cap only when one is set, so an alert
    comparing spend to the cap has nothing to compare without one.
    """

    def __init__(self, ledger: SpendLedger) -> None:
        self._ledger = ledger

    def describe(self) -> list[Metric]:
        return list(self._families())

    def collect(self) -> list[Metric]:
        cap, spent = self._ledger.snapshot()
        budget, spend = self._families()
        if cap is not None:
            budget.add_metric([], cap)
        spend.add_metric([], spent)
        return [budget, spend]

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily(
                "tracescore_judge_budget_usd",
                "Daily judge spend cap of this process in US dollars (absent without a cap).",
            ),
            GaugeMetricFamily(
                "tracescore_judge_spend_today_usd",
                "Estimated judge spend of this process since 00:00 UTC, in US dollars.",
            ),
        )


class ScoreMetrics:
    """tracescore's Prometheus metrics, declared on ``registry`` at construction.

    Threading: the ``record*``, ``observe_judge``, ``spans_*`` and ``logs_received``
    methods may be called from any thread (in the service: the scoring worker and the
    judge's event loop) while the registry is scraped from another. The series
    themselves are thread-safe in prometheus_client; the label caps and the rolling
    mean's rings are guarded by one lock, held only for a few dictionary operations.

    The rolling mean (``tracescore_score_mean``) covers the last ``window_s`` seconds at
    a granularity of ``window_s / 30``: the window is the current time slot plus the 29
    before it, i.e. between 29/30 of ``window_s`` and ``window_s``. A series with no
    score in the window is not exported at all (rather than as NaN), so "no recent
    scores" reads as absent data in dashboards and alerts, never as a number.

    Args:
        registry: Where every series is registered. Creating two ``ScoreMetrics`` on
            one registry raises ``ValueError`` (duplicated time series).
        window_s: Length of the rolling mean's window; must be positive.
        max_agents: Distinct ``agent`` label values kept; later agents are ``other``
            (a warning is logged once).
        clock: Monotonic seconds for the rolling mean (injectable for tests).

    Raises:
        ValueError: ``window_s`` is not positive or ``max_agents`` is below 1.

    """

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        window_s: float = 300.0,
        max_agents: int = 200,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not window_s > 0:
            raise ValueError("window_s must be positive")
        if max_agents < 1:
            raise ValueError("max_agents must be at least 1")
        self._max_agents = max_agents
        self._lock = threading.Lock()
        self._agents: set[str] = set()
        self._reasons: set[str] = set()
        self._warned_agents = False
        self._warned_reasons = False
        self._thresholds: set[str] = set()
        # labels() validates and hashes its arguments under a lock on every call; the
        # worker records ~10 series per invocation, so children are looked up here first.
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}

        def counter(name: str, doc: str, labels: Sequence[str] = ()) -> Counter:
            # prometheus_client appends ``_total`` to counter names itself.
            return Counter(name, doc, labelnames=labels, registry=registry)

        self._invocations = counter(
            "tracescore_invocations",
            "Invocations by what became of them (scored, sampled_out, no_golden, "
            "not_evaluable, judge_error, dropped).",
            ("agent", "outcome"),
        )
        self._traces = counter(
            "tracescore_traces",
            "Completed traces by outcome; no_agent: the trace had no agent activity.",
            ("outcome",),
        )
        self._evaluations = counter(
            "tracescore_evaluations",
            "Criterion evaluations by status (passed, failed, not_evaluated, "
            "informational, sampled_out).",
            ("agent", "criterion", "status"),
        )
        self._not_evaluated = counter(
            "tracescore_not_evaluated",
            "NOT_EVALUATED criterion results by reason (at most 50 reasons, cut to 60 "
            "characters; then other).",
            ("agent", "criterion", "reason"),
        )
        self._score = Histogram(
            "tracescore_score",
            "Scores of passed and failed evaluations; exemplars carry the trace_id.",
            labelnames=("agent", "criterion"),
            buckets=SCORE_BUCKETS,
            registry=registry,
        )
        self._threshold = Gauge(
            "tracescore_threshold",
            "Pass mark of each configured criterion (score >= threshold passes).",
            labelnames=("criterion",),
            registry=registry,
        )
        self._judge_requests = counter(
            "tracescore_judge_requests",
            "Judge attempts by outcome (ok, cached, timeout, http_<status>, ...).",
            ("model", "outcome"),
        )
        self._judge_duration = Histogram(
            "tracescore_judge_request_duration_seconds",
            "Wall time of judge calls that reached the provider.",
            labelnames=("model",),
            buckets=_JUDGE_BUCKETS,
            registry=registry,
        )
        self._judge_tokens = counter(
            "tracescore_judge_tokens",
            "Judge tokens billed, by direction (input, output).",
            ("model", "direction"),
        )
        self._judge_cost = counter(
            "tracescore_judge_cost_usd",
            "Estimated judge spend in US dollars (models with a known price only).",
            ("model",),
        )
        self._spans_received = counter(
            "tracescore_spans_received", "Spans taken in by the processor or the receiver."
        )
        self._logs_received = counter(
            "tracescore_logs_received", "Log records taken in by the processor or the receiver."
        )
        self._spans_dropped = counter(
            "tracescore_spans_dropped", "Spans dropped before scoring, by reason.", ("reason",)
        )
        self._worker_paused = counter(
            "tracescore_worker_paused_seconds",
            "Seconds the scoring worker paused to stay within its CPU share (live.max_cpu_share).",
        )
        self._queue_depth = Gauge(
            "tracescore_queue_depth", "Records waiting for the scoring worker.", registry=registry
        )
        self._traces_in_flight = Gauge(
            "tracescore_traces_in_flight",
            "Traces being assembled.",
            registry=registry,
        )
        self._mean = _RollingMean(window_s=window_s, clock=clock)
        registry.register(self._mean)
        self._registry = registry
        self._budget: _JudgeBudget | None = None

    # -- configuration ------------------------------------------------------------------

    def set_thresholds(self, criteria: Sequence[Criterion]) -> None:
        """Export ``tracescore_threshold{criterion}`` for ``criteria``.

        Criteria without a threshold (informational ones) get no series. Series of
        criteria no longer in ``criteria`` are removed, so calling this again after a
        configuration change leaves exactly the new set.
        """
        wanted = {c.name: c.threshold for c in criteria if c.threshold is not None}
        with self._lock:
            for name, threshold in wanted.items():
                self._threshold.labels(criterion=name).set(threshold)
            for stale in self._thresholds - wanted.keys():
                self._threshold.remove(stale)
            self._thresholds = set(wanted)

    def track(
        self, *, queue_depth: Callable[[], float], traces_in_flight: Callable[[], float]
    ) -> None:
        """Read ``tracescore_queue_depth`` and ``tracescore_traces_in_flight`` at scrape time.

        Both callables run on the scraping thread; they must be cheap, thread-safe and
        must not raise. Calling again replaces them.
        """
        self._queue_depth.set_function(queue_depth)
        self._traces_in_flight.set_function(traces_in_flight)

    def track_budget(self, ledger: SpendLedger) -> None:
        """Export the judge's daily cap and today's spend, read from ``ledger`` at scrape time.

        ``tracescore_judge_budget_usd`` (only when the ledger has a cap) and
        ``tracescore_judge_spend_today_usd``. Calling again replaces the ledger.
        """
        if self._budget is not None:
            self._registry.unregister(self._budget)
        self._budget = _JudgeBudget(ledger)
        self._registry.register(self._budget)

    # -- scoring ------------------------------------------------------------------------

    def record(self, result: InvocationResult, *, sampled_out: Sequence[str] = ()) -> None:
        """Count one scored invocation: its outcome, each criterion's status and score.

        Increments ``tracescore_invocations_total{outcome=result.outcome}``, one
        ``tracescore_evaluations_total`` per criterion result (its status) and per name
        in ``sampled_out`` (status ``sampled_out``: criteria the sampler skipped for
        this invocation), ``tracescore_not_evaluated_total`` per NOT_EVALUATED result,
        and observes each passed or failed score (not None, finite) in
        ``tracescore_score``, with the trace id as exemplar, and in the rolling mean.
        The histogram's buckets step by 0.1 over ADK's 0–1 scores and by 1 above, for
        ``response_evaluation_score``'s 1–5 scale. Informational scores (counts, token
        totals) are counted as evaluations but not observed: they are not scores.
        """
        inv = result.invocation
        agent = self._agent(inv.agent)
        self._child(self._invocations, agent, result.outcome).inc()
        exemplar = (
            {"trace_id": inv.trace_id}
            if inv.trace_id and len(inv.trace_id) <= _MAX_EXEMPLAR_VALUE
            else None
        )
        for res in result.results:
            self._child(self._evaluations, agent, res.criterion, res.status).inc()
            if res.status == "not_evaluated":
                reason = self._reason(res.reason)
                self._child(self._not_evaluated, agent, res.criterion, reason).inc()
            elif res.status in ("passed", "failed") and res.score is not None:
                if not math.isfinite(res.score):
                    continue  # NaN or inf would poison the sum and the mean
                self._child(self._score, agent, res.criterion).observe(res.score, exemplar=exemplar)
                self._mean.add(agent, res.criterion, res.score)
        for name in sampled_out:
            self._child(self._evaluations, agent, name, "sampled_out").inc()

    def record_outcome(self, *, agent: str | None, outcome: str, count: int = 1) -> None:
        """Count invocations that have no :class:`InvocationResult` (dropped, sampled_out).

        Args:
            agent: The invocation's agent (None or empty: ``unknown``).
            outcome: One of the :data:`tracescore.scoring.Outcome` values.
            count: How many; must not be negative (``ValueError``).

        """
        self._child(self._invocations, self._agent(agent), outcome).inc(count)

    def record_trace(self, outcome: str) -> None:
        """Count one completed trace: an invocation outcome, or ``no_agent``."""
        self._child(self._traces, outcome).inc()

    # -- judge --------------------------------------------------------------------------

    def observe_judge(self, record: JudgeCallRecord) -> None:
        """Count one judge attempt; pass as ``JudgeClient(observer=metrics.observe_judge)``.

        Every record counts in ``tracescore_judge_requests_total``. The duration is
        observed only for attempts that reached the provider and carry a duration:
        outcomes other than ``cached``, ``unavailable`` and ``budget_exhausted``, with
        ``duration_s > 0`` (an ``error`` from a backend bug reports none). Tokens are
        added as billed (zero included, so the series exist from the first call); the
        cost only when known (not None).
        """
        model = record.model
        self._judge_requests.labels(model=model, outcome=record.outcome).inc()
        if record.outcome not in _NOT_CALLED and record.duration_s > 0:
            self._judge_duration.labels(model=model).observe(record.duration_s)
        self._judge_tokens.labels(model=model, direction="input").inc(record.input_tokens)
        self._judge_tokens.labels(model=model, direction="output").inc(record.output_tokens)
        if record.cost_usd is not None:
            self._judge_cost.labels(model=model).inc(record.cost_usd)

    # -- intake -------------------------------------------------------------------------

    def spans_received(self, count: int) -> None:
        """Add ``count`` (not negative) accepted spans."""
        self._spans_received.inc(count)

    def spans_dropped(self, reason: str, count: int) -> None:
        """Add ``count`` (not negative) dropped spans; ``reason`` must be a bounded code."""
        self._child(self._spans_dropped, reason).inc(count)

    def logs_received(self, count: int) -> None:
        """Add ``count`` (not negative) accepted log records."""
        self._logs_received.inc(count)

    def worker_paused(self, seconds: float) -> None:
        """Add ``seconds`` (not negative) the worker paused to keep to its CPU share."""
        self._worker_paused.inc(seconds)

    # -- bounded labels -----------------------------------------------------------------

    def _child(self, metric: Any, *values: str) -> Any:
        """``metric.labels(*values)``, cached (label values are bounded, so is the cache)."""
        key = (id(metric), values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def _agent(self, agent: str | None) -> str:
        # Label values must encode as UTF-8, or every scrape fails: agent names and reasons
        # come from the agent's code (a custom criterion's reason, say), never assumed clean.
        name = clean_text(agent or _UNKNOWN)
        with self._lock:
            if name in self._agents:
                return name
            if len(self._agents) < self._max_agents:
                self._agents.add(name)
                return name
            warn = not self._warned_agents
            self._warned_agents = True
        if warn:
            logger.warning(
                "more than %d distinct agents: further agents are labelled %r in metrics",
                self._max_agents,
                _OTHER,
            )
        return _OTHER

    def _reason(self, reason: str | None) -> str:
        # Whitespace collapsed so multi-line error texts make one readable label value.
        text = clean_text(" ".join((reason or _UNKNOWN).split())[:_REASON_CHARS]) or _UNKNOWN
        with self._lock:
            if text in self._reasons:
                return text
            if len(self._reasons) < _MAX_REASONS:
                self._reasons.add(text)
                return text
            warn = not self._warned_reasons
            self._warned_reasons = True
        if warn:
            logger.warning(
                "more than %d distinct not-evaluated reasons: further ones are labelled %r",
                _MAX_REASONS,
                _OTHER,
            )
        return _OTHER
