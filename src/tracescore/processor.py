"""``ScoringSpanProcessor``: score a live agent from inside its own process.

Attach it to the agent's ``TracerProvider`` next to the usual exporters::

    processor = ScoringSpanProcessor(criteria, goldens=golden_sets, metrics_port=9464)
    provider.add_span_processor(processor)
    logger_provider.add_log_record_processor(processor.log_processor)  # content in logs

Contract with the host application:

* ``on_end`` runs on the agent's thread and costs an append to a bounded deque: no
  parsing, no logging, no lock held, never raises, never blocks. Everything else happens
  on one worker thread (:class:`~tracescore.live.engine.LiveEngine`).
* Memory is bounded (queue, traces in flight, spans per trace); what does not fit is
  dropped and counted (``tracescore_spans_dropped_total{reason}``): a span that finds
  the queue full, as with the SDK's ``BatchSpanProcessor``.
* CPU is bounded too: the worker uses at most ``max_cpu_share`` of a CPU (default
  :data:`~tracescore.live.options.PROCESSOR_CPU_SHARE`, a quarter) and pauses beyond
  it, so under overload the queue sheds more instead of the agent slowing down.
* ``force_flush(timeout_millis)`` returns within its timeout, True when everything
  received so far was scored; ``shutdown()`` is idempotent and bounded.
* Judge calls and event export run with instrumentation suppressed, and spans ended on
  the worker thread are ignored: tracescore never scores itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from opentelemetry.context import Context
from opentelemetry.sdk._logs import LogRecordProcessor, ReadWriteLogRecord
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from prometheus_client import CollectorRegistry, start_http_server

from tracescore.arguments import (
    CriteriaArg,
    GoldensArg,
    criteria_argument,
    expect_type,
    goldens_argument,
    port_argument,
    with_informational,
)
from tracescore.criteria.base import golden_tool_results_needed
from tracescore.live.engine import LiveEngine
from tracescore.live.options import PROCESSOR_CPU_SHARE, LiveOptions
from tracescore.live.scorer import LiveScorer
from tracescore.sampling import SamplingPolicy

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from tracescore.judge.client import JudgeClient
    from tracescore.sinks.otel_events import EvaluationEventSink

__all__ = ["ScoringLogProcessor", "ScoringSpanProcessor"]

logger = logging.getLogger(__name__)


class ScoringSpanProcessor(SpanProcessor):
    """Scores the agent runs of the provider it is attached to.

    Args:
        criteria: Criterion objects, a ``{name: threshold}`` mapping as in an eval
            config's ``criteria``, or the path of an eval config (default: ADK's
            defaults, as with no eval config). Informational criteria not among them
            are added, as every replay reports them.
        goldens: Golden sets, or goldens paths (files or directories) to read.
        sampling: Which invocations and criteria to score.
        judge: Judge client for LLM-judged criteria.
        registry: Where the metrics go (default: a new registry, never the global one).
        metrics_port: Serve ``/metrics`` on this port (0: any free port). A port that
            cannot be bound is logged as an error and the processor runs without the
            endpoint (:attr:`metrics_port` is then None): it never stops the agent.
        metrics_host: Address for ``metrics_port``.
        events: Evaluation events sink (results back to the tracing backend).
        options: Queue bounds, windows and the worker's CPU share (when its
            ``max_cpu_share`` is None, :data:`~tracescore.live.options.PROCESSOR_CPU_SHARE`).
        window_s: Rolling window of ``tracescore_score_mean``.
        clock: Monotonic seconds (tests drive the windows with a fake clock).

    Raises:
        TypeError: an argument is of none of the types it takes (the message names it).
        ValueError: two criteria have the same name, or a port or window is out of range.
        ConfigError: an eval config or goldens path is unreadable or invalid.

    """

    def __init__(
        self,
        criteria: CriteriaArg | None = None,
        *,
        goldens: GoldensArg = (),
        sampling: SamplingPolicy | None = None,
        judge: JudgeClient | None = None,
        registry: CollectorRegistry | None = None,
        metrics_port: int | None = None,
        metrics_host: str = "127.0.0.1",
        events: EvaluationEventSink | None = None,
        options: LiveOptions | None = None,
        window_s: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # Checked here, at the call that got them, not as AttributeErrors from within.
        chosen = with_informational(criteria_argument(criteria))
        golden_sets = goldens_argument(goldens, tool_results=golden_tool_results_needed(chosen))
        if sampling is not None:
            expect_type(sampling, SamplingPolicy, "sampling")
        if options is not None:
            expect_type(options, LiveOptions, "options")
        options = options or LiveOptions()
        if options.max_cpu_share is None:
            options = replace(options, max_cpu_share=PROCESSOR_CPU_SHARE)
        if registry is not None:
            expect_type(registry, CollectorRegistry, "registry")
        if judge is not None:
            from tracescore.judge.client import JudgeClient  # noqa: PLC0415 - given, so loaded

            expect_type(judge, JudgeClient, "judge")
        metrics_port = port_argument(metrics_port, "metrics_port")
        self.registry = registry if registry is not None else CollectorRegistry()
        self.scorer = LiveScorer.build(
            chosen,
            registry=self.registry,
            goldens=golden_sets,
            sampling=sampling,
            judge=judge,
            events=events,
            window_s=window_s,
            max_judged_traces=options.max_judged_traces,
            clock=clock,
        )
        assert self.scorer.metrics is not None
        self.metrics = self.scorer.metrics
        self._http: WSGIServer | None = None
        self.metrics_port: int | None = None
        if metrics_port is not None:
            try:
                server, _ = start_http_server(
                    metrics_port, addr=metrics_host, registry=self.registry
                )
            except OSError as exc:
                # Never break the agent: e.g. a second worker process of the same app
                # finds the port taken. It scores on; the registry still holds the
                # metrics, only this endpoint is missing (metrics_port stays None).
                logger.error(
                    "cannot serve /metrics on %s:%s (%s); scoring goes on without that endpoint",
                    metrics_host,
                    metrics_port,
                    exc.strerror or exc,
                )
            else:
                self._http = server
                self.metrics_port = server.server_port
        self.engine = LiveEngine(self.scorer, options=options, clock=clock)
        # The hot path: SynchronousMultiSpanProcessor calls ``on_end`` for every span;
        # binding the engine's method here saves a Python frame per span.
        self.on_end = self.engine.push_span  # type: ignore[method-assign]
        self.log_processor = ScoringLogProcessor(self.engine)

    @classmethod
    def from_settings(
        cls,
        path: str | Path,
        *,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> ScoringSpanProcessor:
        """A processor configured by a settings file (``[live]``, ``[sampling]``, ...).

        Raises:
            ConfigError: the file, its criteria, goldens or judge settings are invalid.

        """
        from tracescore.live.config import build_live  # noqa: PLC0415 - avoids a cycle

        live = build_live(path)
        return cls(
            live.criteria,
            goldens=live.goldens,
            sampling=live.sampling,
            judge=live.judge,
            registry=registry,
            metrics_port=live.metrics_port,
            metrics_host=live.metrics_host,
            events=live.events,
            options=live.options,
            window_s=live.window_s,
            clock=clock,
        )

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do when a span starts."""

    def on_end(self, span: ReadableSpan) -> None:
        """Queue a finished span (replaced per instance by the engine's hot path)."""
        self.engine.push_span(span)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Score everything received so far; False when ``timeout_millis`` passed first."""
        return self.engine.force_flush(timeout_millis / 1000)

    def shutdown(self) -> None:
        """Score what is pending (within ``options.shutdown_timeout_s``), then stop.

        Idempotent. Stops the metrics server this processor started.
        """
        self.engine.shutdown()
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None


class ScoringLogProcessor(LogRecordProcessor):
    """Feeds log records (GenAI content events) to a processor's engine.

    Get it from :attr:`ScoringSpanProcessor.log_processor`; same hot-path contract.
    """

    def __init__(self, engine: LiveEngine) -> None:
        self._engine = engine

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        """Queue a log record. O(1); never raises."""
        self._engine.push_log(log_record)

    def shutdown(self) -> None:
        """Nothing of its own: the span processor owns the engine."""

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Flush the shared engine."""
        return self._engine.force_flush(timeout_millis / 1000)
