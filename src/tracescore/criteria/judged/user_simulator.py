"""``per_turn_user_simulator_quality_v1``: the *simulated user* judged against its scenario.

For replays of simulated sessions whose golden case carries a ``conversation_scenario``
(ADK semantics, REFERENCE §4).

* Turn 1 scores 1.0 when the user's text equals the scenario's ``starting_prompt``
  (both stripped), else 0.0 — no judge.
* Every later turn is judged PASS/FAIL against the plan, the persona and the history:
  plan followed, stop condition respected, goal oriented, limited troubleshooting,
  responsive to the agent, corrects the agent when it is wrong, conversational tone.
  Majority over samples; a tie fails.
* On the conversation's last turn the judge is also asked whether ending the
  conversation there (the simulator's ``stop_signal``) was right; if that fails, it
  replaces the last turn's result, as ADK does.
* Case score = passed turns ÷ all turns (a turn without a verdict counts as not passed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from tracescore.conventions.messages import JsonValue
from tracescore.criteria.base import CriterionResult, EvalContext, Score
from tracescore.criteria.judged.base import JudgedCriterion, JudgeSession, Samples, majority
from tracescore.criteria.judged.context import clip, render_history, render_value, section
from tracescore.criteria.registry import register_criterion
from tracescore.goldens.evalset import GoldenScenario

__all__ = ["PerTurnUserSimulatorQualityV1"]


class _TurnVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rationale: str
    verdict: Literal["pass", "fail"]


_SYSTEM = """\
You evaluate a SIMULATED USER (an LLM playing a user) in a conversation with an AI agent.
The simulated user was given a conversation plan and, optionally, a persona. Judge only
the user's latest message (or its decision to end the conversation), not the agent.
It passes when all of these hold:
1. it follows the conversation plan (asks for what the plan says, in its order, without
   inventing new goals);
2. it respects the stop condition: it ends the conversation (by sending the stop
   signal) when the plan is complete or cannot progress, and not before;
3. it stays goal oriented and does not drift;
4. it limits troubleshooting: it does not keep retrying the same failing request;
5. it responds to what the agent just said (answers its questions, acknowledges results);
6. it corrects the agent when the agent misunderstood or made a mistake;
7. it keeps a natural, conversational tone consistent with its persona.
Reply with JSON: a short rationale, then the verdict "pass" or "fail".
"""


@register_criterion()
@dataclass(frozen=True, kw_only=True)
class PerTurnUserSimulatorQualityV1(JudgedCriterion):
    """Quality of a simulated user, turn by turn, against its scenario.

    Attributes:
        stop_signal: The text the simulated user sends to end the conversation.

    """

    name: ClassVar[str] = "per_turn_user_simulator_quality_v1"
    version: ClassVar[str] = "1"
    default_samples: ClassVar[int] = 5

    stop_signal: str = "</finished>"

    async def judge(self, ctx: EvalContext, session: JudgeSession) -> Score:
        """1/0 for this turn (see the module docstring)."""
        scenario = ctx.scenario
        if scenario is None:
            return Score(value=None, reason="no conversation_scenario in the golden case")
        user = ctx.actual.user_content
        if user is None:
            return Score(value=None, reason="user message not captured")
        details: dict[str, JsonValue] = {}
        if not ctx.conversation:
            value: float | None = float(user.strip() == scenario.starting_prompt.strip())
            details["turn"] = "first turn: compared with starting_prompt"
            reason = None if value else "first user message differs from the starting_prompt"
        else:
            samples = await self._ask(session, scenario, ctx.conversation, user)
            value, reason = _verdict(samples, details, key="turn")
        if ctx.last_turn:
            history = (*ctx.conversation, ctx.actual)
            stop = await self._ask(session, scenario, history, self.stop_signal)
            stop_details: dict[str, JsonValue] = {}
            stop_value, stop_reason = _verdict(stop, stop_details, key="stop")
            details.update(stop_details)
            if stop_value == 0.0:
                # ADK: a conversation that did not end correctly fails its last turn.
                return Score(
                    value=0.0,
                    reason=stop_reason or "ending the conversation here was judged wrong",
                    details=details,
                )
        return Score(value=value, reason=reason, details=details)

    async def _ask(
        self,
        session: JudgeSession,
        scenario: GoldenScenario,
        history: Sequence[object],
        message: str,
    ) -> Samples[_TurnVerdict]:
        persona = render_value(scenario.user_persona) if scenario.user_persona is not None else None
        prompt = "\n".join(
            [
                section("Conversation plan", clip(scenario.conversation_plan)),
                section("User persona", persona or "(none given)"),
                f"## Stop signal\n{self.stop_signal}\n",
                render_history(list(history), limit=20),  # type: ignore[arg-type]
                f"## The simulated user's latest message\n{clip(message)}\n",
            ]
        )
        return await session.samples(system=_SYSTEM, prompt=prompt, reply_type=_TurnVerdict)

    def aggregate(self, results: Sequence[CriterionResult]) -> float | None:
        """Passed turns ÷ all turns (ADK counts a turn without a verdict as not passed)."""
        if not results:
            return None
        passed = sum(r.score for r in results if r.status == "passed" and r.score is not None)
        return passed / len(results)


def _verdict(
    samples: Samples[_TurnVerdict], details: dict[str, JsonValue], *, key: str
) -> tuple[float | None, str | None]:
    vote = majority([r.verdict == "pass" for r in samples.replies])
    details[f"{key}_votes"] = [r.verdict for r in samples.replies]
    details[f"{key}_rationales"] = [r.rationale for r in samples.replies]
    if vote is None:
        return None, samples.failure_reason
    return (1.0 if vote else 0.0), None
