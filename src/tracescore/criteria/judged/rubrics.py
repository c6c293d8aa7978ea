"""Rubric-based criteria, with ADK's semantics (REFERENCE §4).

The criteria are ``rubric_based_final_response_quality_v1`` and
``rubric_based_tool_use_quality_v1``.

The judge answers yes/no per rubric (yes = fulfilled, or not applicable). Per rubric, the
majority over ``num_samples`` samples decides (a tie is no; a rubric no sample rated has
no verdict). The invocation score is the mean of its rubric verdicts — weighted by the
optional AgentFlow ``weight`` — and the case score pools every verdict of every
invocation (not a mean of means), as ADK's summarizer does.

Rubrics = the criterion's own (config) + the matched case's and turn's rubrics of the
criterion's type (``FINAL_RESPONSE_QUALITY`` / ``TOOL_USE_QUALITY``). A rubric id given
twice is an error (as in ADK); no rubric at all → NOT_EVALUATED ``no rubrics``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from tracescore.conventions.messages import JsonValue
from tracescore.criteria.base import CriterionResult, EvalContext, Score
from tracescore.criteria.judged.base import JudgedCriterion, JudgeSession, majority
from tracescore.criteria.judged.context import (
    render_final,
    render_instructions,
    render_intermediate,
    render_sources,
    render_tool_calls,
    render_tool_definitions,
    render_user,
)
from tracescore.criteria.registry import register_criterion

__all__ = ["RubricBasedFinalResponseQualityV1", "RubricBasedToolUseQualityV1", "RubricSpec"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RubricSpec:
    """One rubric: id, the property it checks, its type, and its weight (AgentFlow)."""

    rubric_id: str
    text: str
    type: str | None = None
    weight: float = 1.0

    @classmethod
    def parse(cls, raw: Any, index: int) -> RubricSpec:
        """Parse one config entry.

        Accepted: ADK's ``{rubric_id, rubric_content: {text_property}, type?}`` (snake or
        camel case), AgentFlow's ``{..., weight}``, or a bare string (id
        ``rubric_<index>``).

        Raises:
            ValueError: the entry has no text, or a bad weight.

        """
        if isinstance(raw, str):
            return cls(rubric_id=f"rubric_{index}", text=raw)
        if not isinstance(raw, Mapping):
            raise ValueError(f"rubrics[{index}]: expected an object or a string")
        content = raw.get("rubric_content", raw.get("rubricContent"))
        text = (
            content.get("text_property", content.get("textProperty"))
            if isinstance(content, Mapping)
            else raw.get("text")
        )
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"rubrics[{index}]: rubric_content.text_property is required")
        rubric_id = raw.get("rubric_id", raw.get("rubricId", f"rubric_{index}"))
        weight = raw.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
            raise ValueError(f"rubrics[{index}].weight: expected a non-negative number")
        kind = raw.get("type")
        return cls(
            rubric_id=str(rubric_id),
            text=text,
            type=str(kind) if kind is not None else None,
            weight=float(weight),
        )


class _RubricVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rubric_id: str
    rationale: str
    verdict: Literal["yes", "no"]


class _RubricReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdicts: list[_RubricVerdict]


_RULES = """\
For EACH rubric, decide whether the agent's behaviour fulfils it:
- "yes" when the property holds, or when the rubric does not apply to this interaction
  (say so in the rationale);
- "no" when it does not hold, or when the material needed to confirm it is missing.
Judge only from the material shown; do not assume anything happened that is not shown.
Reply with JSON: one entry per rubric, with its rubric_id exactly as given, a short
rationale, and the verdict "yes" or "no".
"""

_FINAL_SYSTEM = (
    "You assess the final response of an AI agent against a list of rubrics (properties a"
    " good response must have). You are shown the agent's instructions, its tools, the"
    " user's prompt, the tool calls it made with their results, and its final response.\n" + _RULES
)

_TOOL_SYSTEM = (
    "You assess how an AI agent used its tools against a list of rubrics (properties good"
    " tool use must have: the right tools, the right arguments, a sensible order, results"
    " used correctly). You are shown the agent's instructions, its tools, the user's"
    " prompt and the tool calls it made with their results; the final answer is not"
    " part of this assessment.\n" + _RULES
)


def _normalize(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split()).strip(" *_`#>-•\"'").casefold()


@dataclass(frozen=True, kw_only=True)
class _RubricCriterion(JudgedCriterion):
    """Shared machinery of the rubric criteria."""

    rubric_type: ClassVar[str]
    system: ClassVar[str]
    default_samples: ClassVar[int] = 5

    rubrics: tuple[RubricSpec, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        super().__post_init__()
        # Config hands rubrics over as ADK's JSON objects; accept both forms.
        parsed = tuple(
            r if isinstance(r, RubricSpec) else RubricSpec.parse(r, i)
            for i, r in enumerate(self.rubrics)
        )
        object.__setattr__(self, "rubrics", parsed)
        _check_unique(parsed, scope="criterion")

    def effective_rubrics(self, ctx: EvalContext) -> list[RubricSpec]:
        """Criterion rubrics + the golden's rubrics of this criterion's type.

        Raises:
            ValueError: a rubric id is defined twice.

        """
        golden = [
            RubricSpec(rubric_id=r.rubric_id, text=r.text or "", type=r.type)
            for r in ctx.rubrics
            if r.type == self.rubric_type and r.text
        ]
        out = [*self.rubrics, *golden]
        _check_unique(out, scope="criterion and golden")
        return out

    def material(self, ctx: EvalContext) -> list[str]:
        """The prompt sections the judge sees (before the rubric list)."""
        inv = ctx.actual
        return [
            render_instructions(inv),
            render_tool_definitions(inv),
            render_user(inv),
            render_tool_calls(inv.tool_calls),
            *render_sources(inv),
        ]

    async def judge(self, ctx: EvalContext, session: JudgeSession) -> Score:
        """Per-rubric majority verdicts; the (weighted) mean of yes = 1, no = 0."""
        rubrics = self.effective_rubrics(ctx)
        if not rubrics:
            return Score(value=None, reason="no rubrics")
        listing = "\n".join(f"- rubric_id: {r.rubric_id}\n  property: {r.text}" for r in rubrics)
        prompt = "\n".join([*self.material(ctx), f"## Rubrics\n{listing}\n"])
        samples = await session.samples(system=self.system, prompt=prompt, reply_type=_RubricReply)
        by_id = {r.rubric_id: r for r in rubrics}
        by_text = {_normalize(r.text): r for r in rubrics}
        votes: dict[str, list[bool]] = {r.rubric_id: [] for r in rubrics}
        rationales: dict[str, list[str]] = {r.rubric_id: [] for r in rubrics}
        for reply in samples.replies:
            seen: set[str] = set()
            for v in reply.verdicts:
                rubric = by_id.get(v.rubric_id) or by_text.get(_normalize(v.rubric_id))
                if rubric is None or rubric.rubric_id in seen:
                    continue  # an id the judge made up, or a repeat within one sample
                seen.add(rubric.rubric_id)
                votes[rubric.rubric_id].append(v.verdict == "yes")
                rationales[rubric.rubric_id].append(v.rationale)
        verdicts: list[JsonValue] = []
        for r in rubrics:
            vote = majority(votes[r.rubric_id])
            verdicts.append(
                {
                    "rubric_id": r.rubric_id,
                    "verdict": vote,
                    "weight": r.weight,
                    "votes": [("yes" if v else "no") for v in votes[r.rubric_id]],
                    "rationale": rationales[r.rubric_id][0] if rationales[r.rubric_id] else None,
                }
            )
        details: dict[str, JsonValue] = {
            "rubrics": verdicts,
            "failed_samples": len(samples.failures),
        }
        score = _weighted_mean(verdicts)
        if score is None:
            reason = samples.failure_reason if samples.failures else "no rubric verdicts"
            return Score(value=None, reason=reason, details=details)
        return Score(value=score, details=details)

    def aggregate(self, results: Sequence[CriterionResult]) -> float | None:
        """Pool every rubric verdict of every invocation (ADK's mean summarizer)."""
        pooled: list[JsonValue] = []
        for res in results:
            rubrics = res.details.get("rubrics")
            if isinstance(rubrics, list):
                pooled.extend(rubrics)
        return _weighted_mean(pooled)


def _weighted_mean(verdicts: Sequence[JsonValue]) -> float | None:
    total = 0.0
    weight_sum = 0.0
    for v in verdicts:
        if not isinstance(v, dict) or v.get("verdict") is None:
            continue
        raw = v.get("weight", 1.0)
        weight = float(raw) if isinstance(raw, (int, float)) else 1.0
        total += weight * (1.0 if v["verdict"] else 0.0)
        weight_sum += weight
    return total / weight_sum if weight_sum > 0 else None


def _check_unique(rubrics: Sequence[RubricSpec], *, scope: str) -> None:
    seen: set[str] = set()
    for r in rubrics:
        if r.rubric_id in seen:
            raise ValueError(f"rubric id {r.rubric_id!r} is defined twice ({scope} rubrics)")
        seen.add(r.rubric_id)


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class RubricBasedFinalResponseQualityV1(_RubricCriterion):
    """Whether the final response has the properties the rubrics ask for."""

    name: ClassVar[str] = "rubric_based_final_response_quality_v1"
    version: ClassVar[str] = "1"
    rubric_type: ClassVar[str] = "FINAL_RESPONSE_QUALITY"
    system: ClassVar[str] = _FINAL_SYSTEM

    def material(self, ctx: EvalContext) -> list[str]:
        """Instructions, tools, prompt, tool calls, intermediate text and the final answer."""
        return [
            *super().material(ctx),
            render_intermediate(ctx.actual),
            render_final(
                ctx.actual, include_intermediate=self.include_intermediate_responses_in_final
            ),
        ]


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class RubricBasedToolUseQualityV1(_RubricCriterion):
    """Whether the agent used its tools the way the rubrics ask."""

    name: ClassVar[str] = "rubric_based_tool_use_quality_v1"
    version: ClassVar[str] = "1"
    rubric_type: ClassVar[str] = "TOOL_USE_QUALITY"
    system: ClassVar[str] = _TOOL_SYSTEM
