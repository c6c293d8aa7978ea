"""Judged ratings of the final response against the reference.

The criteria are ``final_response_match_v2`` and ``response_evaluation_score``.

``final_response_match_v2`` (ADK): is the agent's answer a valid answer given the
reference? Format-tolerant, extra correct information is fine, numbers and units must
agree. ``num_samples`` (default 5) identical requests, majority vote, a tie is invalid,
unparsable samples are ignored; no verdict at all → NOT_EVALUATED. Case score = valid
invocations / scored invocations (the mean of the 1.0/0.0 scores).

``response_evaluation_score``: a 1–5 rating of the answer's quality (coherence, relevance,
correctness against the reference when there is one), the mean over samples. It needs no
reference; when a golden is matched, the reference is shown to the judge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from tracescore.conventions.messages import JsonValue
from tracescore.criteria.base import EvalContext, Score
from tracescore.criteria.judged.base import JudgedCriterion, JudgeSession, majority
from tracescore.criteria.judged.context import (
    render_final,
    render_user,
    response_text,
    section,
)
from tracescore.criteria.registry import register_criterion

__all__ = ["FinalResponseMatchV2", "ResponseEvaluationScore"]


class _MatchVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reasoning: str = Field(description="Why the response is or is not a valid answer.")
    verdict: Literal["valid", "invalid"]


_MATCH_SYSTEM = """\
You grade an AI agent's answer against a reference answer written by a person who knows
the correct result.

Decide whether the agent's response is a VALID answer to the user's prompt, using the
reference as the ground truth:
- It is valid when it conveys the same facts, decisions and conclusions as the reference.
  Wording, order, formatting (lists, tables, Markdown) and politeness do not matter.
- Additional information is acceptable when it is correct and does not contradict the
  reference.
- Be strict about anything checkable: numbers, quantities, units, dates, names,
  identifiers and yes/no outcomes must agree with the reference (converted units are fine
  when the value is equivalent).
- It is invalid when it omits something the reference says the user needed, states
  something the reference contradicts, or answers a different question.
Reply with JSON: a short reasoning, then the verdict "valid" or "invalid".
"""


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class FinalResponseMatchV2(JudgedCriterion):
    """ADK's judged semantic match of the final response against the reference."""

    name: ClassVar[str] = "final_response_match_v2"
    version: ClassVar[str] = "1"
    requires_reference: ClassVar[bool] = True
    default_samples: ClassVar[int] = 5

    async def judge(self, ctx: EvalContext, session: JudgeSession) -> Score:
        """Majority of valid/invalid verdicts: 1.0 valid, 0.0 invalid (a tie is invalid)."""
        expected = ctx.expected
        assert expected is not None  # guarded by requires_reference
        both = self.include_intermediate_responses_in_final
        if response_text(ctx.actual, include_intermediate=both) is None:
            return Score(value=0.0, reason="the agent produced no final response")
        prompt = "\n".join(
            [
                render_user(ctx.actual),
                render_final(expected, title="Reference response", include_intermediate=both),
                render_final(ctx.actual, title="Agent response", include_intermediate=both),
            ]
        )
        samples = await session.samples(
            system=_MATCH_SYSTEM, prompt=prompt, reply_type=_MatchVerdict
        )
        vote = majority([r.verdict == "valid" for r in samples.replies])
        details: dict[str, JsonValue] = {
            "votes": [r.verdict for r in samples.replies],
            "rationales": [r.reasoning for r in samples.replies],
            "failed_samples": len(samples.failures),
        }
        if vote is None:
            return Score(value=None, reason=samples.failure_reason, details=details)
        return Score(value=1.0 if vote else 0.0, details=details)


class _Rating(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rationale: str
    score: int = Field(ge=1, le=5, description="1 = very poor … 5 = excellent")


_RATING_SYSTEM = """\
You rate the quality of an AI agent's final response on a scale of 1 to 5.

Consider, in this order of importance:
1. Correctness: is what it says right? When a reference response is given, treat it as
   the ground truth; otherwise judge from the prompt and general knowledge, and do not
   reward confident claims you cannot check.
2. Relevance and completeness: does it answer what the user asked, all of it?
3. Coherence and clarity: is it well organised, consistent and easy to follow?

Scale: 5 excellent (correct, complete, clear); 4 good (minor omissions or style issues);
3 acceptable (partly correct or partly complete); 2 poor (mostly wrong or unhelpful);
1 very poor (wrong, off-topic, incoherent or empty).
Reply with JSON: a short rationale, then the integer score.
"""


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class ResponseEvaluationScore(JudgedCriterion):
    """A 1–5 quality rating of the final response, averaged over samples."""

    name: ClassVar[str] = "response_evaluation_score"
    version: ClassVar[str] = "1"
    default_samples: ClassVar[int] = 3

    async def judge(self, ctx: EvalContext, session: JudgeSession) -> Score:
        """The mean 1–5 rating of the samples that parsed."""
        if ctx.actual.final_response is None:
            return Score(value=1.0, reason="the agent produced no final response")
        reference = (
            render_final(ctx.expected, title="Reference response")
            if ctx.expected is not None
            else section("Reference response", "(no reference: judge on its own merits)")
        )
        prompt = "\n".join(
            [render_user(ctx.actual), reference, render_final(ctx.actual, title="Agent response")]
        )
        samples = await session.samples(system=_RATING_SYSTEM, prompt=prompt, reply_type=_Rating)
        details: dict[str, JsonValue] = {
            "ratings": [r.score for r in samples.replies],
            "rationales": [r.rationale for r in samples.replies],
            "failed_samples": len(samples.failures),
        }
        if not samples.replies:
            return Score(value=None, reason=samples.failure_reason, details=details)
        return Score(
            value=sum(r.score for r in samples.replies) / len(samples.replies), details=details
        )
