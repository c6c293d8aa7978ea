"""Criteria on the final response text: ROUGE-1 against the golden, required keywords."""

from __future__ import annotations

from dataclasses import dataclass

from tracescore.criteria import evaluators
from tracescore.criteria.base import Criterion, EvalContext, Score
from tracescore.criteria.registry import register_criterion

__all__ = ["ContainsKeywords", "ResponseMatchScore"]


@register_criterion(aliases=("rouge_match",))
@dataclass(frozen=True, kw_only=True)
class ResponseMatchScore(Criterion):
    """ROUGE-1 F-measure of the final response against the golden's, as ADK 2.13 computes it.

    A missing response on either side counts as empty text (score 0.0), as in ADK.
    AgentFlow calls this criterion ``rouge_match``.
    """

    name = "response_match_score"
    needs_model_context = False
    reads_golden_tool_results = False
    requires_reference = True
    evaluator_class = evaluators.ResponseMatch

    threshold: float | None = 0.8

    def score(self, ctx: EvalContext) -> Score:
        """ROUGE-1 F of actual (prediction) against golden (target)."""
        return evaluators.ResponseMatch(self).score(ctx)


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class ContainsKeywords(Criterion):
    """Share of the configured keywords found in the final response (AgentFlow).

    Matching is case-insensitive (Unicode casefold) substring search; a run without a
    final response scores 0.0. No keywords configured is NOT_EVALUATED.

    Attributes:
        keywords: The words or phrases the response must contain.

    """

    name = "contains_keywords"
    needs_model_context = False
    reads_golden_tool_results = False
    evaluator_class = evaluators.ContainsKeywords

    threshold: float | None = 1.0
    keywords: tuple[str, ...] = ()

    def score(self, ctx: EvalContext) -> Score:
        """Fraction of keywords present."""
        return evaluators.ContainsKeywords(self).score(ctx)
