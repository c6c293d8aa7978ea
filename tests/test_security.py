"""Security review, as tests: secrets in agent traffic never reach the judge unredacted,
nor tracescore's logs or metrics; the bearer token is never printed; listeners bind to
loopback unless told otherwise."""

from __future__ import annotations

import logging
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics

from fake_judges import FakeGemini, FakeReply, gemini_error, gemini_json
from judge_helpers import make_judge, prompt_text
from live_agent import run_agent
from live_fixtures import write_goldens
from serve_process import start_service
from tracescore.cli.serve_cmd import serve_command
from tracescore.eval_config import criteria_from_config
from tracescore.goldens import load_goldens
from tracescore.live.config import MetricsSettings
from tracescore.processor import ScoringSpanProcessor
from tracescore.sampling import SamplingPolicy
from tracescore.server import ServeOptions

EMAIL = "jane.doe@example.com"
CARD = "4111 1111 1111 1111"
API_KEY = "sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"
SECRETS = (EMAIL, CARD, API_KEY, BEARER.split()[1])
USER = f"My card is {CARD}, mail {EMAIL}. What is the weather in Paris?"
DIMS = ("harmful_content", "hate_speech", "privacy", "misinformation", "manipulation")
SAFE = gemini_json({d: {"rationale": "fine", "verdict": "safe"} for d in DIMS})


def test_secrets_reach_neither_the_judge_nor_logs_nor_metrics(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    prompts: list[str] = []

    def echoing_judge(request: dict[str, Any], n: int) -> FakeReply:
        prompts.append(prompt_text(request))
        if n == 1:  # a provider error echoing what it received, into reasons and logs
            return gemini_error(400, f"cannot process: {prompts[-1][:300]}")
        return SAFE

    write_goldens(tmp_path, {"paris": (USER, [("get_weather", {"city": "Paris"})], "21C.")})
    criteria = criteria_from_config(
        {"criteria": {"safety_v1": 1.0, "response_match_score": 0.5}}, source="test"
    )
    caplog.set_level(logging.DEBUG)
    registry = CollectorRegistry()
    with FakeGemini(echoing_judge) as fake:
        proc = ScoringSpanProcessor(
            criteria,
            goldens=load_goldens([str(tmp_path / "live.evalset.json")]),
            judge=make_judge(fake.base_url, max_attempts=1),
            registry=registry,
            sampling=SamplingPolicy(judged_rate=1.0),
        )
        provider = TracerProvider()
        provider.add_span_processor(proc)
        tracer = provider.get_tracer("agent")
        try:
            for _ in range(3):
                run_agent(
                    tracer,
                    user=USER,
                    tools=[("get_weather", {"city": "Paris", "api_key": API_KEY}, BEARER)],
                    answer=f"Done, I mailed {EMAIL}.",
                )
            assert proc.force_flush(30_000)
        finally:
            provider.shutdown()
    assert len(prompts) == 3
    # What left the process was redacted (on by default) ...
    for prompt in prompts:
        assert "[REDACTED:email]" in prompt and "[REDACTED:card]" in prompt
        for secret in SECRETS:
            assert secret not in prompt
    # ... and nothing tracescore logged or exported carries a secret.
    logged = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records) + caplog.text
    exposed = generate_latest(registry).decode() + openmetrics(registry).decode()  # type: ignore[no-untyped-call]  # prometheus_client: unannotated
    # The failed call is counted by its status; the provider's message is no label.
    assert 'reason="judge error 400"' in exposed and "cannot process" not in exposed
    for secret in SECRETS:
        assert secret not in logged
        assert secret not in exposed


def test_the_bearer_token_is_never_printed(tmp_path: Path) -> None:
    token = "tok-8c1f0a7e9b2d4c6f"
    service = start_service(tmp_path, "--auth-token", token, env={"TRACESCORE_LOG_LEVEL": "debug"})
    try:
        base = f"http://127.0.0.1:{service.http_port}"
        wrong = httpx.post(
            f"{base}/v1/traces",
            content=b"",
            headers={"Content-Type": "application/x-protobuf", "Authorization": "Bearer nope"},
        )
        assert wrong.status_code == 401
        assert token not in wrong.text
        metrics = httpx.get(f"{base}/metrics").text
        service.proc.send_signal(signal.SIGTERM)
        _, stderr = service.proc.communicate(timeout=30)
    finally:
        service.stop()
    assert "tracescore serve: OTLP/HTTP" in stderr.decode()  # it did log
    assert token not in stderr.decode() and token not in metrics


def test_listeners_bind_to_loopback_by_default() -> None:
    assert ServeOptions().host == "127.0.0.1"
    host = next(p for p in serve_command.params if p.name == "host")
    assert host.default == "127.0.0.1"
    assert MetricsSettings().host == "127.0.0.1"  # the processor's /metrics port
