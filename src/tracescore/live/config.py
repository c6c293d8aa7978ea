"""Settings of live scoring (processor and ``serve``) and how they become objects.

Sections of the settings file (all optional)::

    [live]                       # what to score, and the worker's bounds
    goldens = ["goldens/"]
    eval_config = "eval_config.json"   # or: criteria = { response_match_score = 0.8 }
    idle_s = 2.0
    max_queue = 16384

    [sampling]
    rate = 1.0
    by = "trace"                 # or "conversation"
    judged_rate = 0.1
    criteria = { safety_v1 = 0.5 }
    agents = ["support-*"]
    always_score_errors = true

    [metrics]
    window_s = 300
    port = 9464                  # processor only; serve has /metrics on its HTTP port

    [events]
    endpoint = "http://collector:4318/v1/logs"
    protocol = "http"
    include_content = false

    [serve]
    host = "127.0.0.1"
    grpc_port = 4317
    http_port = 4318
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tracescore.config_fields import OneOrMany
from tracescore.criteria import Criterion, informational_criteria
from tracescore.criteria.base import golden_tool_results_needed
from tracescore.eval_config import criteria_from_config, load_eval_config
from tracescore.goldens import GoldenSet, load_goldens
from tracescore.live.options import LiveOptions
from tracescore.sampling import SamplingPolicy

if TYPE_CHECKING:
    from tracescore.judge.client import JudgeClient
    from tracescore.judge.config import JudgeSettings
    from tracescore.sinks.otel_events import EvaluationEventSink

__all__ = [
    "EventsSettings",
    "LiveBuild",
    "LiveSettings",
    "MetricsSettings",
    "SamplingSettings",
    "ServeSettings",
    "build_live",
]


_ENGINE = LiveOptions()


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LiveSettings(_Section):
    """``[live]``: criteria and goldens of live scoring, and the worker's bounds."""

    goldens: OneOrMany | None = None
    eval_config: str | None = None
    criteria: dict[str, Any] | None = None
    # Defaults are the engine's own (one place to change them); the file adds the checks.
    max_queue: int = Field(default=_ENGINE.max_queue, ge=1)
    wake_at: int = Field(default=_ENGINE.wake_at, ge=1)
    tick_s: float = Field(default=_ENGINE.tick_s, gt=0)
    idle_s: float = Field(default=_ENGINE.idle_s, ge=0)
    orphan_ttl_s: float = Field(default=_ENGINE.orphan_ttl_s, ge=0)
    max_traces: int = Field(default=_ENGINE.max_traces, ge=1)
    max_spans_per_trace: int = Field(default=_ENGINE.max_spans_per_trace, ge=1)
    max_judged_traces: int = Field(default=_ENGINE.max_judged_traces, ge=1)
    shutdown_timeout_s: float = Field(default=_ENGINE.shutdown_timeout_s, ge=0)
    # None: a quarter in the span processor, no cap in serve (LiveOptions says why).
    max_cpu_share: float | None = Field(default=_ENGINE.max_cpu_share, gt=0, le=1)

    def options(self) -> LiveOptions:
        """The engine options these settings describe."""
        return LiveOptions(
            **self.model_dump(exclude={"goldens", "eval_config", "criteria"}),
        )


class SamplingSettings(_Section):
    """``[sampling]``: see :class:`~tracescore.sampling.SamplingPolicy`."""

    rate: float = Field(default=1.0, ge=0, le=1)
    by: Literal["trace", "conversation"] = "trace"
    judged_rate: float = Field(default=0.1, ge=0, le=1)
    deterministic_rate: float = Field(default=1.0, ge=0, le=1)
    criteria: dict[str, float] = Field(default_factory=dict)
    agents: OneOrMany = Field(default_factory=list)
    exclude_agents: OneOrMany = Field(default_factory=list)
    attributes: dict[str, str] = Field(default_factory=dict)
    always_score_errors: bool = False

    def policy(self) -> SamplingPolicy:
        """The sampling policy these settings describe."""
        data = self.model_dump()
        data["agents"] = tuple(data["agents"])
        data["exclude_agents"] = tuple(data["exclude_agents"])
        return SamplingPolicy(**data)


class MetricsSettings(_Section):
    """``[metrics]``: the rolling window, and the processor's own ``/metrics`` port."""

    window_s: float = Field(default=300.0, gt=0)
    port: int | None = Field(default=None, ge=0, le=65535)
    host: str = "127.0.0.1"


class EventsSettings(_Section):
    """``[events]``: evaluation results back to the tracing backend (off without endpoint)."""

    endpoint: str | None = None
    protocol: Literal["http", "grpc"] = "http"
    headers: dict[str, str] = Field(default_factory=dict)
    include_content: bool = False


class ServeSettings(_Section):
    """``[serve]``: the receiver's listeners and limits (``tracescore serve`` flags)."""

    host: str | None = None
    grpc_port: int | None = Field(default=None, ge=0, le=65535)
    http_port: int | None = Field(default=None, ge=0, le=65535)
    auth_token: str | None = None
    max_request_bytes: int | None = Field(default=None, ge=1024)
    drain_timeout_s: float | None = Field(default=None, ge=0)
    request_timeout_s: float | None = Field(default=None, gt=0)
    max_connections: int | None = Field(default=None, ge=1)


@dataclass(slots=True, kw_only=True)
class LiveBuild:
    """Everything a processor or ``serve`` needs, built from settings."""

    criteria: list[Criterion]
    goldens: list[GoldenSet]
    sampling: SamplingPolicy
    options: LiveOptions
    window_s: float
    judge: JudgeClient | None = None
    events: EvaluationEventSink | None = None
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"


def live_criteria(live: LiveSettings, *, source: str) -> list[Criterion]:
    """``[live]``'s criteria: embedded, else its ``eval_config``, else ADK's defaults."""
    if live.criteria is not None:
        base = criteria_from_config({"criteria": live.criteria}, source=f"{source}: live")
    else:
        base = load_eval_config(live.eval_config)
    return [*base, *informational_criteria()]


def build_live(
    path: str | Path | None,
    *,
    eval_config: str | None = None,
    goldens: list[str] | None = None,
    judge_settings: JudgeSettings | None = None,
) -> LiveBuild:
    """Build the live pipeline's parts from a settings file (None: all defaults).

    ``eval_config``, ``goldens`` and ``judge_settings`` override the file's (command-line
    flags).

    Raises:
        ConfigError: invalid settings, criteria, goldens or judge settings.

    """
    from tracescore.judge.config import build_judge  # noqa: PLC0415 - heavy, judged only
    from tracescore.settings import Settings, load_settings  # noqa: PLC0415 - cycle
    from tracescore.sinks.otel_events import EvaluationEventSink  # noqa: PLC0415

    settings = load_settings(path) if path is not None else Settings()
    live = settings.live
    if eval_config is not None:
        live = live.model_copy(update={"eval_config": eval_config, "criteria": None})
    criteria = live_criteria(live, source=str(path))
    golden_paths = goldens if goldens is not None else live.goldens
    sampling = settings.sampling.policy()
    sampling.check_criteria(criteria)
    judged = any(c.judged for c in criteria)
    judge = build_judge(judge_settings or settings.judge) if judged else None
    events = None
    if settings.events.endpoint:
        events = EvaluationEventSink.to_otlp(
            settings.events.endpoint,
            protocol=settings.events.protocol,
            headers=settings.events.headers,
            include_content=settings.events.include_content,
        )
    return LiveBuild(
        criteria=criteria,
        goldens=(
            load_goldens(golden_paths, tool_results=golden_tool_results_needed(criteria))
            if golden_paths
            else []
        ),
        sampling=sampling,
        options=live.options(),
        window_s=settings.metrics.window_s,
        judge=judge,
        events=events,
        metrics_port=settings.metrics.port,
        metrics_host=settings.metrics.host,
    )
