"""Reference criteria on what the agent did: tool trajectory, tool names, node order.

Scores are ADK 2.13's (see :mod:`.trajectory_match` for the exact semantics and the
tests that hold them equal to ADK's ``TrajectoryEvaluator``).
"""

from __future__ import annotations

from dataclasses import dataclass

from tracescore.criteria import evaluators
from tracescore.criteria.base import Criterion, EvalContext, Score
from tracescore.criteria.registry import register_criterion
from tracescore.criteria.trajectory_match import MatchType

__all__ = ["NodeOrderMatchScore", "ToolNameMatchScore", "ToolTrajectoryAvgScore"]


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class ToolTrajectoryAvgScore(Criterion):
    """1.0 when the tool calls match the golden's (name and args), else 0.0; case = mean.

    Attributes:
        match_type: EXACT (same calls, same order), IN_ORDER (golden calls appear in
            order, extra calls allowed) or ANY_ORDER (golden calls appear, any order).
        ignore_args: Compare tool names only (AgentFlow's ``check_args: false``).

    """

    name = "tool_trajectory_avg_score"
    needs_model_context = False
    reads_golden_tool_results = False
    requires_reference = True
    evaluator_class = evaluators.ToolTrajectory

    threshold: float | None = 1.0
    match_type: MatchType = "EXACT"
    ignore_args: bool = False

    def score(self, ctx: EvalContext) -> Score:
        """Compare the actual and golden call lists."""
        return evaluators.ToolTrajectory(self).score(ctx)


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class ToolNameMatchScore(Criterion):
    """F1 of the sets of called and expected tool names (AgentFlow); order ignored."""

    name = "tool_name_match_score"
    needs_model_context = False
    reads_golden_tool_results = False
    requires_reference = True
    evaluator_class = evaluators.ToolNameMatch

    threshold: float | None = 1.0

    def score(self, ctx: EvalContext) -> Score:
        """Compare the sets of tool names."""
        return evaluators.ToolNameMatch(self).score(ctx)


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class NodeOrderMatchScore(Criterion):
    """1.0 when the agents visited match the golden's order (AgentFlow), else 0.0.

    The golden's order comes from its ``agents``; a golden that records none (an ADK
    evalset written without agent authors) is NOT_EVALUATED rather than guessed.
    """

    name = "node_order_match_score"
    needs_model_context = False
    reads_golden_tool_results = False
    requires_reference = True
    evaluator_class = evaluators.NodeOrderMatch

    threshold: float | None = 1.0
    match_type: MatchType = "EXACT"

    def score(self, ctx: EvalContext) -> Score:
        """Compare the sequences of visited agents."""
        return evaluators.NodeOrderMatch(self).score(ctx)
