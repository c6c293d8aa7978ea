"""ADK 2.11+'s informational efficiency metrics: reported per turn, never pass or fail.

Each is computed per invocation; the case value is the mean (per-turn average, as ADK
reports it). A ``None`` value means not available, never zero.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracescore.criteria import evaluators
from tracescore.criteria.base import Criterion, EvalContext, Score
from tracescore.criteria.registry import register_criterion

__all__ = ["InferenceCallCount", "InvocationDuration", "TokenUsage", "ToolCallCount"]


@dataclass(frozen=True, kw_only=True)
class _Informational(Criterion):
    informational = True
    needs_model_context = False
    reads_golden_tool_results = False
    threshold: float | None = None


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class ToolCallCount(_Informational):
    """Tool calls made in the turn."""

    name = "tool_call_count_v1"
    evaluator_class = evaluators.ToolCallCount

    def score(self, ctx: EvalContext) -> Score:
        """Count the tool calls."""
        return evaluators.ToolCallCount(self).score(ctx)


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class InferenceCallCount(_Informational):
    """Model calls made in the turn (None when no model call was seen).

    A turn a callback answered without calling the model (an ADK guardrail) made zero
    calls, as ADK counts it: only events with usage or a model version are model calls.
    """

    name = "inference_call_count_v1"
    evaluator_class = evaluators.InferenceCallCount

    def score(self, ctx: EvalContext) -> Score:
        """Count the model calls."""
        return evaluators.InferenceCallCount(self).score(ctx)


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class TokenUsage(_Informational):
    """Input plus output tokens of the turn's model calls (None when none reported)."""

    name = "token_usage_v1"
    evaluator_class = evaluators.TokenUsage

    def score(self, ctx: EvalContext) -> Score:
        """Total tokens, with the split in the details."""
        return evaluators.TokenUsage(self).score(ctx)


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class InvocationDuration(_Informational):
    """Wall-clock seconds of the turn, from its root span."""

    name = "invocation_duration_v1"
    evaluator_class = evaluators.InvocationDuration

    def score(self, ctx: EvalContext) -> Score:
        """Duration of the run's root span."""
        return evaluators.InvocationDuration(self).score(ctx)
