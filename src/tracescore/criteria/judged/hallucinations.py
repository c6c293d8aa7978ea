"""``hallucinations_v1``: is every sentence of the agent's text grounded in its context.

Two judge steps per natural-language response (ADK semantics, REFERENCE §4):

1. segmentation: the response split into sentences, verbatim (bullets separate, a table
   stays whole);
2. labelling: each sentence against the context the agent had at that point —
   ``supported``, ``unsupported``, ``contradictory``, ``disputed`` or ``not_applicable``
   (opinions, greetings, questions, plans).

A response scores the share of its labelled sentences that are ``supported`` or
``not_applicable``; the invocation the mean over its evaluated responses; the case the
mean over scored invocations. By default only the final response is checked;
``evaluate_intermediate_nl_responses`` adds every intermediate text, each judged against
what came before it. As in ADK, one call per step (``num_samples`` does not apply).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from tracescore.conventions.messages import JsonValue
from tracescore.criteria.base import EvalContext, Score
from tracescore.criteria.judged.base import JudgedCriterion, JudgeSession
from tracescore.criteria.judged.context import (
    clip,
    render_instructions,
    render_sources,
    render_tool_calls,
    render_tool_definitions,
    render_user,
)
from tracescore.criteria.registry import register_criterion
from tracescore.exceptions import JudgeError
from tracescore.model import AgentText

__all__ = ["HallucinationsV1"]

Label = Literal["supported", "unsupported", "contradictory", "disputed", "not_applicable"]
_GOOD: frozenset[str] = frozenset({"supported", "not_applicable"})


class _Segments(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sentences: list[str]


class _Labelled(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sentence: str
    label: Label
    rationale: str


class _Labels(BaseModel):
    model_config = ConfigDict(extra="forbid")

    labels: list[_Labelled]


_SEGMENT_SYSTEM = """\
Split the text you are given into sentences, copying each one verbatim (same words,
same punctuation; do not fix, translate or summarise). Each bullet or numbered item is
its own sentence; a table stays whole as one item; code blocks stay whole. Skip empty
lines and pure formatting. Reply with JSON: {"sentences": [...]} in the original order.
"""

_LABEL_SYSTEM = """\
You check whether each sentence an AI agent wrote is grounded in the context it had: its
instructions, the user's prompt, its tool definitions, the tool calls and results, the
retrieved documents and the grounding metadata of its searches shown. Label every
sentence:
- "supported": the context states or directly implies it;
- "unsupported": the context neither states nor implies it (an invented fact, number,
  name or outcome);
- "contradictory": the context says otherwise;
- "disputed": the context holds conflicting evidence about it;
- "not_applicable": it makes no factual claim (greetings, opinions, questions to the
  user, plans or offers of further help).
Common knowledge that no reasonable reader would dispute counts as supported; anything
specific to the user's situation must come from the context. Reply with JSON: one entry
per sentence, in order, with the sentence, its label and a short rationale.
"""


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class HallucinationsV1(JudgedCriterion):
    """Share of the agent's sentences that its context supports.

    Attributes:
        evaluate_intermediate_nl_responses: Also check every intermediate text.

    """

    name: ClassVar[str] = "hallucinations_v1"
    #: 2: the labelling prompt names retrieved documents and search grounding as context.
    version: ClassVar[str] = "2"

    evaluate_intermediate_nl_responses: bool = False

    def _steps(self, ctx: EvalContext) -> list[tuple[AgentText, int]]:
        """Texts to check, each with how many tool calls it may rely on."""
        inv = ctx.actual
        steps: list[tuple[AgentText, int]] = []
        if self.evaluate_intermediate_nl_responses:
            # Telemetry does not record where an intermediate text sat between tool calls;
            # each is judged against every call (the generous reading: never a false alarm
            # for a result that arrived before the text).
            steps.extend(
                (t, len(inv.tool_calls)) for t in inv.intermediate_responses if t.text.strip()
            )
        if inv.final_response and inv.final_response.strip():
            steps.append(
                (
                    AgentText(author=inv.agent or "agent", text=inv.final_response),
                    len(inv.tool_calls),
                )
            )
        return steps

    async def judge(self, ctx: EvalContext, session: JudgeSession) -> Score:
        """The mean over the checked responses of their grounded-sentence share."""
        steps = self._steps(ctx)
        if not steps:
            return Score(value=None, reason="no natural-language response to check")
        per_step: list[float] = []
        report: list[JsonValue] = []
        failures: list[str] = []
        for text, calls in steps:
            try:
                score, labels = await self._check(ctx, session, text.text, calls)
            except JudgeError as exc:
                failures.append(exc.reason)
                report.append({"author": text.author, "error": exc.reason})
                continue
            report.append({"author": text.author, "score": score, "sentences": labels})
            if score is not None:
                per_step.append(score)
        details: dict[str, JsonValue] = {"responses": report}
        if not per_step:
            return Score(
                value=None,
                reason=failures[0] if failures else "no sentences to check",
                details=details,
            )
        return Score(value=sum(per_step) / len(per_step), details=details)

    async def _check(
        self, ctx: EvalContext, session: JudgeSession, text: str, calls: int
    ) -> tuple[float | None, list[JsonValue]]:
        segments = await session.ask(
            system=_SEGMENT_SYSTEM, prompt=clip(text), reply_type=_Segments
        )
        sentences = [s for s in segments.sentences if s.strip()]
        if not sentences:
            return None, []
        inv = ctx.actual
        numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(sentences, 1))
        prompt = "\n".join(
            [
                render_instructions(inv),
                render_tool_definitions(inv),
                render_user(inv),
                render_tool_calls(inv.tool_calls[:calls]),
                *render_sources(inv),
                f"## Sentences to label\n{numbered}\n",
            ]
        )
        labelled = await session.ask(system=_LABEL_SYSTEM, prompt=prompt, reply_type=_Labels)
        labels: list[JsonValue] = [
            {"sentence": item.sentence, "label": item.label, "rationale": item.rationale}
            for item in labelled.labels
        ]
        if not labelled.labels:
            return None, labels
        good = sum(1 for item in labelled.labels if item.label in _GOOD)
        return good / len(labelled.labels), labels
