"""The built-in criteria's ratings, compiled: :meth:`Criterion.evaluate` without its glue.

Why: a replay evaluates every criterion on every invocation, 100k+ calls for 13k turns.
Interpreted, the glue around the rating itself (``evaluate`` calls ``score``, which builds
a :class:`Score`, which ``_result`` checks and turns into a :class:`CriterionResult`
through ``status_for``) costs ~2.5 µs a call: more than the rating of every built-in but
ROUGE-1. Here each built-in's rating is an :class:`Evaluator` subclass that mypyc
compiles (``hatch_build.py``); the built-in criterion's ``score`` calls the same
:meth:`Compiled.measure`, so each rule is written once.

Contract:

* ``criterion.evaluator().evaluate(ctx)`` equals ``criterion.evaluate(ctx)`` field for
  field, and ``not_evaluable(reason)`` equals ``evaluate_not_evaluable(reason)``
  (``tests/criteria/test_evaluators.py`` holds every built-in to it);
* a criterion without a compiled rating (a user's own, a judged one, a built-in whose
  subclass rates differently) gets a :class:`Delegating` evaluator, which calls its
  methods: the scoring loop needs no second path;
* an evaluator is made once per criterion and run, from the criterion's settings then
  (criteria are frozen).
"""

from __future__ import annotations

from typing import Any, Final

from tracescore.conventions.messages import JsonValue
from tracescore.criteria.results import NO_GOLDEN, CriterionResult, EvalContext, EvalStatus, Score
from tracescore.criteria.rouge import rouge1_f
from tracescore.criteria.trajectory_match import (
    MatchType,
    sequence_match,
    tool_name_match,
    tool_trajectory_score,
)

__all__ = [
    "Compiled",
    "ContainsKeywords",
    "Delegating",
    "Evaluator",
    "InferenceCallCount",
    "InvocationDuration",
    "NodeOrderMatch",
    "ResponseMatch",
    "TokenUsage",
    "ToolCallCount",
    "ToolNameMatch",
    "ToolTrajectory",
    "float_status",
]

#: What :meth:`Compiled.measure` returns: the score's value, reason and details.
Measured = tuple[float | None, str | None, dict[str, JsonValue]]

_new: Final = object.__new__


def float_status(value: float | None, threshold: float | None, informational: bool) -> EvalStatus:
    """:func:`tracescore.criteria.aggregation.status_for` on floats, compiled.

    The interpreted rule takes any number Python compares (a user's Decimal); here both
    are floats already (a criterion's threshold is one when it is made, a result's score
    when it is checked).
    """
    if informational:
        return "informational"
    if value is None or threshold is None:
        return "not_evaluated"
    return "passed" if value >= threshold else "failed"


class Evaluator:
    """Evaluates one criterion on one invocation at a time (what the scoring loop calls).

    Attributes:
        name: The criterion's name.

    """

    def __init__(self, criterion: Any) -> None:
        self.name: str = criterion.name

    def evaluate(self, ctx: EvalContext) -> CriterionResult:
        """What ``Criterion.evaluate(ctx)`` returns; never raises."""
        raise NotImplementedError

    def not_evaluable(self, reason: str) -> CriterionResult:
        """What ``Criterion.evaluate_not_evaluable(reason)`` returns."""
        raise NotImplementedError


class Delegating(Evaluator):
    """The evaluator of a criterion without a compiled rating: calls the criterion."""

    def __init__(self, criterion: Any) -> None:
        super().__init__(criterion)
        self.criterion: Any = criterion

    def evaluate(self, ctx: EvalContext) -> CriterionResult:
        """``criterion.evaluate(ctx)``."""
        result: CriterionResult = self.criterion.evaluate(ctx)
        return result

    def not_evaluable(self, reason: str) -> CriterionResult:
        """``criterion.evaluate_not_evaluable(reason)``."""
        result: CriterionResult = self.criterion.evaluate_not_evaluable(reason)
        return result


class Compiled(Evaluator):
    """A built-in's rating (:meth:`measure`) with ``Criterion.evaluate``'s rules around it.

    ``criterion`` is the built-in, read once: its version, threshold (a float or None)
    and whether it is informational or needs a golden.
    """

    def __init__(self, criterion: Any) -> None:
        super().__init__(criterion)
        self.version: str = criterion.version
        self.threshold: float | None = criterion.threshold
        self.informational: bool = criterion.informational
        self.requires_reference: bool = criterion.requires_reference

    def measure(self, ctx: EvalContext) -> Measured:
        """Rate ``ctx``: value, reason, details (``expected`` is set if a golden is needed)."""
        raise NotImplementedError

    def score(self, ctx: EvalContext) -> Score:
        """:meth:`measure` as the :class:`Score` the built-in's ``score`` returns."""
        value, reason, details = self.measure(ctx)
        return Score(value=value, reason=reason, details=details)

    def evaluate(self, ctx: EvalContext) -> CriterionResult:
        """``Criterion.evaluate``: no golden, an error, or the measured score."""
        if self.requires_reference and ctx.expected is None:
            return self.result(None, NO_GOLDEN, {})
        try:
            value, reason, details = self.measure(ctx)
        except Exception as exc:  # as Criterion.evaluate: a broken rating costs nobody else
            from tracescore.criteria.base import criterion_error  # noqa: PLC0415 - a cycle

            return self.result(None, criterion_error(self.name, exc).reason, {})
        return self.result(value, reason, details)

    def not_evaluable(self, reason: str) -> CriterionResult:
        """``Criterion.evaluate_not_evaluable``."""
        return self.result(None, reason, {})

    def result(
        self, value: float | None, reason: str | None, details: dict[str, JsonValue]
    ) -> CriterionResult:
        """The result record, every field stored (as ``Criterion._result`` stores them)."""
        result: CriterionResult = _new(CriterionResult)
        result.criterion = self.name
        result.version = self.version
        result.score = value
        result.status = float_status(value, self.threshold, self.informational)
        result.threshold = self.threshold
        result.reason = reason
        result.details = details
        return result


class ResponseMatch(Compiled):
    """``response_match_score``: ROUGE-1 F of the final response against the golden's."""

    def measure(self, ctx: EvalContext) -> Measured:
        """A missing response on either side is empty text (0.0), as in ADK."""
        expected = ctx.expected
        assert expected is not None
        return rouge1_f(ctx.actual.final_response or "", expected.final_response or ""), None, {}


class ContainsKeywords(Compiled):
    """``contains_keywords``: the share of the keywords in the final response."""

    def __init__(self, criterion: Any) -> None:
        super().__init__(criterion)
        self.keywords: tuple[str, ...] = tuple(criterion.keywords)  # a list, given in Python
        self.folded: list[str] = [keyword.casefold() for keyword in self.keywords]

    def measure(self, ctx: EvalContext) -> Measured:
        """Case-insensitive substring search; no keywords is not evaluated."""
        if not self.keywords:
            return None, "no keywords configured", {}
        text = (ctx.actual.final_response or "").casefold()
        missing: list[JsonValue] = [
            keyword for keyword, folded in zip(self.keywords, self.folded) if folded not in text
        ]
        return 1.0 - len(missing) / len(self.keywords), None, {"missing": missing}


class ToolTrajectory(Compiled):
    """``tool_trajectory_avg_score``: the calls (name and args) against the golden's."""

    def __init__(self, criterion: Any) -> None:
        super().__init__(criterion)
        self.match_type: MatchType = criterion.match_type
        self.ignore_args: bool = bool(criterion.ignore_args)  # as ``ignore_args or ...`` reads it

    def measure(self, ctx: EvalContext) -> Measured:
        """1.0 when the calls match under the match type, else 0.0."""
        expected = ctx.expected
        assert expected is not None
        value = tool_trajectory_score(
            [(call.name, call.args) for call in ctx.actual.tool_calls],
            [(call.name, call.args) for call in expected.tool_calls],
            match_type=self.match_type,
            ignore_args=self.ignore_args,
        )
        return value, None, {}


class ToolNameMatch(Compiled):
    """``tool_name_match_score``: F1 of the called and the expected tool names."""

    def measure(self, ctx: EvalContext) -> Measured:
        """Order and repetitions ignored."""
        expected = ctx.expected
        assert expected is not None
        value = tool_name_match(
            [call.name for call in ctx.actual.tool_calls],
            [call.name for call in expected.tool_calls],
        )
        return value, None, {}


class NodeOrderMatch(Compiled):
    """``node_order_match_score``: the agents visited against the golden's order."""

    def __init__(self, criterion: Any) -> None:
        super().__init__(criterion)
        self.match_type: MatchType = criterion.match_type

    def measure(self, ctx: EvalContext) -> Measured:
        """A golden without agents is not evaluated rather than guessed."""
        expected = ctx.expected
        assert expected is not None
        if not expected.agents:
            return None, "the golden records no agent order", {}
        value = sequence_match(
            list(ctx.actual.agents), list(expected.agents), match_type=self.match_type
        )
        return value, None, {}


class ToolCallCount(Compiled):
    """``tool_call_count_v1``: the tool calls of the turn."""

    def measure(self, ctx: EvalContext) -> Measured:
        """Their number."""
        return float(len(ctx.actual.tool_calls)), None, {}


class InferenceCallCount(Compiled):
    """``inference_call_count_v1``: the model calls of the turn."""

    def measure(self, ctx: EvalContext) -> Measured:
        """None when no model call was seen and the framework gave no reply either."""
        actual = ctx.actual
        calls = actual.inference_calls
        if calls or actual.framework_replies:
            return float(calls), None, {}
        return None, None, {}


class TokenUsage(Compiled):
    """``token_usage_v1``: input plus output tokens, the split in the details."""

    def measure(self, ctx: EvalContext) -> Measured:
        """None with a reason when no model call reported usage."""
        usage = ctx.actual.usage
        # usage.total_tokens, without the call into the interpreted property.
        input_tokens, output_tokens = usage.input_tokens, usage.output_tokens
        total = input_tokens + output_tokens
        if not total:
            return None, "no token usage reported", {}
        details: dict[str, JsonValue] = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
        }
        return float(total), None, details


class InvocationDuration(Compiled):
    """``invocation_duration_v1``: wall-clock seconds of the run's root span."""

    def measure(self, ctx: EvalContext) -> Measured:
        """None with a reason when the root span has no usable timing."""
        actual = ctx.actual
        start, end = actual.start_ns, actual.end_ns
        if end <= 0 or end < start:
            return None, "no timing on the root span", {}
        return (end - start) / 1e9, None, {}  # Invocation.duration_s, end >= start here
