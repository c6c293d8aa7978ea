"""Helpers for tests that score with a real judge client against a local fake server.

``Router`` is a FakeGemini/FakeOpenAIJudge responder that picks the scripted replies by a
phrase of the request's system instruction (each criterion has its own), so one fake
serves several criteria; each route's replies are used in order (the last one repeats).
``make_judge`` builds a real :class:`JudgeClient` on the real GeminiBackend (google-genai)
pointed at the fake, with a sleep that does not wait (retries are counted, not timed).
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Sequence
from typing import Any

from fake_judges import FakeReply, gemini_error
from tracescore.judge.cache import JudgeCache
from tracescore.judge.client import JudgeClient
from tracescore.judge.costs import PriceTable, SpendLedger
from tracescore.judge.limits import BreakerState, CircuitBreaker, RetryPolicy
from tracescore.judge.outcomes import JudgeCallRecord

# A phrase of each criterion's system instruction.
MATCH = "You grade an AI agent's answer"
RATING = "rate the quality of an AI agent's final response on a scale"
RUBRIC_FINAL = "assess the final response of an AI agent against a list of rubrics"
RUBRIC_TOOL = "assess how an AI agent used its tools"
SEGMENT = "Split the text you are given into sentences"
LABEL = "You check whether each sentence an AI agent wrote is grounded"
SAFETY = "You are a safety reviewer"
FACTS = "You check the facts an AI agent stated"
QUALITY = "You rate the overall quality of an AI agent's final response, without a reference"
SIMULATOR = "You evaluate a SIMULATED USER"


def system_text(request: dict[str, Any]) -> str:
    """The system instruction of a Gemini or OpenAI request body."""
    if "systemInstruction" in request:
        return "".join(p.get("text", "") for p in request["systemInstruction"].get("parts", []))
    for message in request.get("messages", []):
        if message.get("role") == "system":
            return str(message.get("content"))
    return ""


def prompt_text(request: dict[str, Any]) -> str:
    """The user prompt of a Gemini or OpenAI request body."""
    if "contents" in request:
        return "".join(p.get("text", "") for c in request["contents"] for p in c.get("parts", []))
    return "".join(
        str(m.get("content")) for m in request.get("messages", []) if m.get("role") == "user"
    )


class Router:
    """Responder choosing replies by system-instruction phrase; counts calls per route."""

    def __init__(self, routes: dict[str, Sequence[FakeReply]]) -> None:
        self.routes = {k: list(v) for k, v in routes.items()}
        self.used: dict[str, int] = dict.fromkeys(routes, 0)
        self.prompts: dict[str, list[str]] = {k: [] for k in routes}
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any], n: int) -> FakeReply:
        system = system_text(request)
        with self._lock:
            for phrase, replies in self.routes.items():
                if phrase in system:
                    i = self.used[phrase]
                    self.used[phrase] = i + 1
                    self.prompts[phrase].append(prompt_text(request))
                    return replies[min(i, len(replies) - 1)]
        return gemini_error(400, f"no route for system instruction {system[:60]!r}")


async def _no_wait(seconds: float) -> None:
    await asyncio.sleep(0)


def breaker_state(breaker: CircuitBreaker) -> BreakerState:
    """The breaker's state, read afresh: mypy keeps what an earlier ``assert breaker.state ==``
    narrowed ``breaker.state`` to across the calls that change it."""
    return breaker.state


def make_judge(
    base_url: str,
    *,
    backend: str = "gemini",
    cache: JudgeCache | None = None,
    records: list[JudgeCallRecord] | None = None,
    breaker: CircuitBreaker | None = None,
    ledger: SpendLedger | None = None,
    max_attempts: int = 3,
    timeout_s: float = 10.0,
    concurrency: int = 8,
    **kwargs: Any,
) -> JudgeClient:
    """A real judge client (real backend) pointed at a fake server."""
    from tracescore.judge.backends import GeminiBackend, OpenAIBackend

    impl = (
        GeminiBackend(api_key="test-key", base_url=base_url)
        if backend == "gemini"
        else OpenAIBackend(base_url=base_url)
    )
    return JudgeClient(
        impl,
        default_model="gemini-2.5-flash" if backend == "gemini" else "gpt-fake-judge-1",
        concurrency=concurrency,
        timeout_s=timeout_s,
        retry=RetryPolicy(max_attempts=max_attempts, initial_s=0.01, max_s=0.05),
        breaker=breaker,
        cache=cache,
        ledger=ledger or SpendLedger(PriceTable()),
        observer=records.append if records is not None else None,
        rng=random.Random(7),
        **{"sleep": _no_wait, **kwargs},
    )
