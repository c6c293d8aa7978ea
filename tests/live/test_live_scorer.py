"""Live scorer: conversations across traces, trace outcome priority."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

from live_agent import run_agent
from live_fixtures import total
from tracescore.criteria import Criterion, EvalContext, Score
from tracescore.eval_config import criteria_from_config
from tracescore.goldens import load_goldens
from tracescore.live.scorer import _trace_outcome
from tracescore.processor import ScoringSpanProcessor
from tracescore.sampling import SamplingPolicy, sample_key


def turn(user: str, calls: list[tuple[str, dict[str, str]]], answer: str) -> dict[str, object]:
    return {
        "user_content": {"role": "user", "parts": [{"text": user}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]},
        "intermediate_data": {"tool_uses": [{"name": n, "args": a} for n, a in calls]},
    }


def _two_turns_after(first: dict[str, object]) -> dict[str, object]:
    """Goldens: ``first`` then "And tomorrow?" about Paris, beside a case whose only turn
    has the same text about Rome (so only the conversation decides which one matches)."""
    return {
        "eval_set_id": "s",
        "eval_cases": [
            {
                "eval_id": "two-turns",
                "conversation": [
                    first,
                    turn("And tomorrow?", [("get_forecast", {"city": "Paris"})], "Rain."),
                ],
            },
            {
                "eval_id": "other",
                "conversation": [
                    turn("And tomorrow?", [("get_forecast", {"city": "Rome"})], "Sun.")
                ],
            },
        ],
    }


def _scored_turns(
    tmp_path: Path, goldens: dict[str, object], *turns: dict[str, Any]
) -> dict[str, float]:
    """Run ``turns`` (``run_agent`` arguments) one after another, each scored before the
    next starts, against ``goldens``; the evaluations counted by status."""
    (tmp_path / "s.evalset.json").write_text(json.dumps(goldens))
    proc = ScoringSpanProcessor(
        criteria_from_config({"criteria": {"tool_trajectory_avg_score": 1.0}}, source="t"),
        goldens=load_goldens([str(tmp_path)]),
        registry=CollectorRegistry(),
    )
    provider = TracerProvider()
    provider.add_span_processor(proc)
    try:
        for kwargs in turns:
            run_agent(provider.get_tracer("t"), **kwargs)
            assert proc.force_flush(10_000)
    finally:
        provider.shutdown()
    return total(proc.registry, "tracescore_evaluations_total", "status")


def test_turns_of_one_conversation_match_their_golden_turns(tmp_path: Path) -> None:
    """Two traces of one session: the second is matched as turn 2 of the same case."""
    goldens = _two_turns_after(
        turn("Weather in Paris?", [("get_weather", {"city": "Paris"})], "21C.")
    )
    ev = _scored_turns(
        tmp_path,
        goldens,
        {
            "user": "Weather in Paris?",
            "tools": [("get_weather", {"city": "Paris"}, "21C")],
            "answer": "21C.",
            "conversation_id": "session-1",
        },
        {
            "user": "And tomorrow?",
            "tools": [("get_forecast", {"city": "Paris"}, "rain")],
            "answer": "Rain.",
            "conversation_id": "session-1",
        },
    )
    # Turn 2 matched "two-turns" (Paris), not "other" (Rome); 4 informational per turn.
    assert ev == {"passed": 2, "informational": 8}


def test_a_turn_continuing_an_earlier_turns_response_is_its_next_turn(tmp_path: Path) -> None:
    """Responses API chains (Agent Framework): no session id, each turn names the response
    it continues. The first turn made one call (no pointer at all): it is found by its
    response id, and the second is matched as turn 2 of its case."""
    ev = _scored_turns(
        tmp_path,
        _two_turns_after(turn("Hi", [], "Hello!")),
        {"user": "Hi", "tools": (), "answer": "Hello!", "response_id": "resp_a1"},
        {
            "user": "And tomorrow?",
            "tools": [("get_forecast", {"city": "Paris"}, "rain")],
            "answer": "Rain.",
            "conversation_id": "resp_a1",
            "response_id": "resp_a2",
        },
    )
    assert ev == {"passed": 2, "informational": 8}


def _chain_ids(first_kept: bool) -> tuple[str, str]:
    """Two response ids at rate 0.5 ``by = "conversation"``: the first kept or not as
    asked, the second the other way round."""
    bound = 1 << 63
    kept = (
        f"resp_{n:04x}"
        for n in range(1000)
        if sample_key("", f"resp_{n:04x}", by="conversation") < bound
    )
    dropped = (
        f"resp_{n:04x}"
        for n in range(1000)
        if sample_key("", f"resp_{n:04x}", by="conversation") >= bound
    )
    return (next(kept), next(dropped)) if first_kept else (next(dropped), next(kept))


@pytest.mark.parametrize("first_kept", [True, False])
def test_a_response_chain_is_sampled_as_one_conversation(first_kept: bool) -> None:
    """A three-turn Responses API chain at rate 0.5 ``by = "conversation"``: turn 3
    names turn 2's response, which alone would hash the other way; all three turns get
    the answer of the chain's first response."""
    first, second = _chain_ids(first_kept)
    proc = ScoringSpanProcessor(
        criteria_from_config({"criteria": {"tool_trajectory_avg_score": 1.0}}, source="t"),
        sampling=SamplingPolicy(rate=0.5, by="conversation"),
        registry=CollectorRegistry(),
    )
    provider = TracerProvider()
    provider.add_span_processor(proc)
    try:
        tracer = provider.get_tracer("t")
        for conversation_id, response_id in ((None, first), (first, second), (second, "resp_z")):
            run_agent(tracer, tools=(), conversation_id=conversation_id, response_id=response_id)
            assert proc.force_flush(10_000)
    finally:
        provider.shutdown()
    outcomes = total(proc.registry, "tracescore_invocations_total", "outcome")
    assert outcomes == ({"no_golden": 3} if first_kept else {"sampled_out": 3})


def test_trace_outcome_priority() -> None:
    assert _trace_outcome(["sampled_out", "scored"]) == "scored"
    assert _trace_outcome(["no_golden", "judge_error"]) == "judge_error"
    assert _trace_outcome(["not_evaluable", "sampled_out"]) == "not_evaluable"
    assert _trace_outcome([]) == "no_agent"


@dataclass(frozen=True, kw_only=True)
class _Reads(Criterion):
    """Informational: records the system instructions each scored invocation carried."""

    name = "reads_instructions"
    informational = True
    seen: list[str | None] = field(default_factory=list, compare=False)

    def score(self, ctx: EvalContext) -> Score:
        self.seen.append(ctx.actual.system_instructions)
        return Score(value=1.0)


@dataclass(frozen=True, kw_only=True)
class _Blind(_Reads):
    name = "blind"
    needs_model_context = False


@pytest.mark.parametrize(("criterion", "expected"), [(_Reads(), "Be brief."), (_Blind(), None)])
def test_model_context_is_rebuilt_only_for_criteria_that_read_it(
    criterion: _Reads, expected: str | None
) -> None:
    proc = ScoringSpanProcessor([criterion], registry=CollectorRegistry())
    provider = TracerProvider()
    provider.add_span_processor(proc)
    try:
        run_agent(provider.get_tracer("t"), instructions="Be brief.")
        assert proc.force_flush(10_000)
    finally:
        provider.shutdown()
    assert criterion.seen == [expected]
