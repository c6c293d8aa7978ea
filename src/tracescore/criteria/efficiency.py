"""ADK 2.11+'s informational efficiency metrics: reported per turn, never pass or fail.

Each is computed per invocation; the case value is the mean (per-turn average, as ADK
reports it). A ``None`` value means not available, never zero.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracescore.criteria.base import Criterion, EvalContext, Score
from tracescore.criteria.registry import register_criterion

__all__ = ["InferenceCallCount", "InvocationDuration", "TokenUsage", "ToolCallCount"]


@dataclass(frozen=True, kw_only=True)
class _Informational(Criterion):
    informational = True
    needs_model_context = False
    threshold: float | None = None


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class ToolCallCount(_Informational):
    """Tool calls made in the turn."""

    name = "tool_call_count_v1"

    def score(self, ctx: EvalContext) -> Score:
        """Count the tool calls."""
        return Score(value=float(len(ctx.actual.tool_calls)))


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class InferenceCallCount(_Informational):
    """Model calls made in the turn (None when no model call was seen).

    A turn a callback answered without calling the model (an ADK guardrail) made zero
    calls, as ADK counts it: only events with usage or a model version are model calls.
    """

    name = "inference_call_count_v1"

    def score(self, ctx: EvalContext) -> Score:
        """Count the model calls."""
        calls = ctx.actual.inference_calls
        known = calls or ctx.actual.framework_replies
        return Score(value=float(calls) if known else None)


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class TokenUsage(_Informational):
    """Input plus output tokens of the turn's model calls (None when none reported)."""

    name = "token_usage_v1"

    def score(self, ctx: EvalContext) -> Score:
        """Total tokens, with the split in the details."""
        usage = ctx.actual.usage
        if not usage.total_tokens:
            return Score(value=None, reason="no token usage reported")
        details = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
        return Score(value=float(usage.total_tokens), details=details)


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class InvocationDuration(_Informational):
    """Wall-clock seconds of the turn, from its root span."""

    name = "invocation_duration_v1"

    def score(self, ctx: EvalContext) -> Score:
        """Duration of the run's root span."""
        inv = ctx.actual
        if inv.end_ns <= 0 or inv.end_ns < inv.start_ns:
            return Score(value=None, reason="no timing on the root span")
        return Score(value=inv.duration_s)
