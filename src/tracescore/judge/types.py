"""What goes to a judge and what comes back, independent of the provider.

A :class:`JudgeRequest` is one call: instructions, the prompt, and the JSON schema the
reply must follow (every judge reply is requested as structured output). A backend
(:mod:`tracescore.judge.backends`) turns it into a provider call and returns a
:class:`JudgeReply` with the raw JSON text and token usage, or raises one of the
:class:`~tracescore.exceptions.JudgeError` family. Validation of the reply against the
criterion's pydantic model happens in the client, not the backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from tracescore.conventions.messages import JsonValue

__all__ = ["JudgeBackend", "JudgeReply", "JudgeRequest"]


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeRequest:
    """One judge call.

    Attributes:
        model: Model name, e.g. ``gemini-2.5-flash``.
        system: System instructions (the judge's role and rules).
        prompt: The user-turn text (the material to judge), already redacted.
        schema: JSON schema the reply must follow.
        temperature: Sampling temperature, None for the provider's default.
        max_output_tokens: Cap on the reply length, None for the provider's default.
        config: Extra provider generation options (ADK's ``judge_model_config``),
            passed through as given.

    """

    model: str
    system: str
    prompt: str
    schema: Mapping[str, JsonValue]
    temperature: float | None = None
    max_output_tokens: int | None = None
    config: Mapping[str, JsonValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeReply:
    """A provider's reply: the raw JSON text and what it cost in tokens."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    model_version: str | None = None


class JudgeBackend(Protocol):
    """A judge provider (Gemini through google-genai, an OpenAI-compatible server, ...).

    ``generate`` must raise only :class:`~tracescore.exceptions.JudgeError` subclasses
    (translating the provider's errors at this boundary) and must not retry: retries,
    timeouts, limits and the circuit breaker live in the client, so they behave the same
    for every provider.
    """

    #: Short provider name for logs and errors (``gemini``, ``openai``).
    name: str

    async def generate(self, request: JudgeRequest, *, timeout_s: float) -> JudgeReply:
        """One attempt of one call, bounded by ``timeout_s``."""
        ...

    async def aclose(self) -> None:
        """Release connections; the backend is not used afterwards."""
        ...
