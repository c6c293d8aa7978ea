"""The ``[judge]`` settings section, and the judge client built from it.

Example (``tracescore.toml``)::

    [judge]
    backend = "gemini"                 # or "openai" (any OpenAI-compatible server)
    model = "gemini-2.5-flash"
    temperature = 0.0
    concurrency = 16
    timeout_s = 60
    max_attempts = 5
    cache = ".tracescore/judge-cache.sqlite"
    daily_budget_usd = 20.0

    [judge.limits."gemini-2.5-flash"]
    rpm = 1000
    tpm = 1000000

    [judge.prices."my-vllm-model"]
    input_per_mtok = 0.0
    output_per_mtok = 0.0

    [judge.redaction]
    enabled = true
    patterns = { employee_id = "EMP-[0-9]{6}" }

Gemini credentials come from the environment as google-genai reads them
(``GOOGLE_API_KEY`` / ``GEMINI_API_KEY``, or Vertex AI's ``GOOGLE_GENAI_USE_VERTEXAI``,
``GOOGLE_CLOUD_PROJECT``, ``GOOGLE_CLOUD_LOCATION``; ``GOOGLE_GEMINI_BASE_URL`` /
``GOOGLE_VERTEX_BASE_URL`` are honoured). The OpenAI-compatible backend needs
``base_url``; its key is read from the environment variable named by ``api_key_env``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tracescore.exceptions import ConfigError
from tracescore.judge.cache import JudgeCache
from tracescore.judge.client import JudgeClient, ModelLimits
from tracescore.judge.costs import ModelPrice, PriceTable, SpendLedger
from tracescore.judge.limits import CircuitBreaker, RetryPolicy
from tracescore.judge.outcomes import JudgeCallRecord
from tracescore.judge.redaction import Redactor
from tracescore.judge.types import JudgeBackend

__all__ = ["JudgeSettings", "build_judge"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LimitSettings(_Strict):
    """Per-model rate limits."""

    rpm: float | None = Field(default=None, gt=0)
    tpm: float | None = Field(default=None, gt=0)


class PriceSettings(_Strict):
    """USD per million tokens."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


class RedactionSettings(_Strict):
    """What is redacted before a prompt leaves the process (on by default)."""

    enabled: bool = True
    builtins: list[str] | None = None
    patterns: dict[str, str] = Field(default_factory=dict)


class JudgeSettings(_Strict):
    """The ``[judge]`` section."""

    backend: Literal["gemini", "openai"] = "gemini"
    model: str = "gemini-2.5-flash"
    temperature: float | None = Field(default=None, ge=0, le=2)
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = Field(default=16, ge=1, le=1024)
    timeout_s: float = Field(default=60.0, gt=0)
    max_attempts: int = Field(default=5, ge=1, le=20)
    backoff_initial_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    breaker_failures: int = Field(default=5, ge=1)
    breaker_reset_s: float = Field(default=30.0, gt=0)
    rpm: float | None = Field(default=None, gt=0)
    tpm: float | None = Field(default=None, gt=0)
    limits: dict[str, LimitSettings] = Field(default_factory=dict)
    cache: str | None = None
    prices: dict[str, PriceSettings] = Field(default_factory=dict)
    daily_budget_usd: float | None = Field(default=None, gt=0)
    redaction: RedactionSettings = Field(default_factory=RedactionSettings)


def _backend(settings: JudgeSettings) -> JudgeBackend:
    # Imported here: google-genai is heavy and only needed when a judge is used.
    from tracescore.judge.backends import GeminiBackend, OpenAIBackend  # noqa: PLC0415

    if settings.backend == "openai":
        if not settings.base_url:
            raise ConfigError("judge.base_url: required for the openai backend")
        return OpenAIBackend(
            base_url=settings.base_url, api_key=os.environ.get(settings.api_key_env)
        )
    return GeminiBackend(base_url=settings.base_url)


def build_judge(
    settings: JudgeSettings,
    *,
    observer: Callable[[JudgeCallRecord], None] | None = None,
    backend: JudgeBackend | None = None,
) -> JudgeClient:
    """The judge client the settings describe.

    Raises:
        ConfigError: missing credentials, a bad redaction pattern, a missing base URL.

    """
    redactor = Redactor(
        enabled=settings.redaction.enabled,
        builtins=settings.redaction.builtins,
        patterns=settings.redaction.patterns,
    )
    prices = PriceTable(
        {
            name: ModelPrice(input_per_mtok=p.input_per_mtok, output_per_mtok=p.output_per_mtok)
            for name, p in settings.prices.items()
        }
    )
    return JudgeClient(
        backend or _backend(settings),
        default_model=settings.model,
        temperature=settings.temperature,
        concurrency=settings.concurrency,
        timeout_s=settings.timeout_s,
        limits={m: ModelLimits(rpm=lim.rpm, tpm=lim.tpm) for m, lim in settings.limits.items()},
        default_limits=ModelLimits(rpm=settings.rpm, tpm=settings.tpm),
        retry=RetryPolicy(
            max_attempts=settings.max_attempts,
            initial_s=settings.backoff_initial_s,
            max_s=settings.backoff_max_s,
        ),
        breaker=CircuitBreaker(
            failure_threshold=settings.breaker_failures, reset_after_s=settings.breaker_reset_s
        ),
        cache=JudgeCache(settings.cache or None),  # None: memory only
        ledger=SpendLedger(prices, daily_cap_usd=settings.daily_budget_usd),
        redactor=redactor,
        observer=observer,
    )
