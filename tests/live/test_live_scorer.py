"""Live scorer: conversations across traces, trace outcome priority."""

from __future__ import annotations

import json
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

from live_agent import run_agent
from live_fixtures import total
from tracescore.eval_config import criteria_from_config
from tracescore.goldens import load_goldens
from tracescore.live.scorer import _trace_outcome
from tracescore.processor import ScoringSpanProcessor


def turn(user: str, calls: list[tuple[str, dict[str, str]]], answer: str) -> dict[str, object]:
    return {
        "user_content": {"role": "user", "parts": [{"text": user}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]},
        "intermediate_data": {"tool_uses": [{"name": n, "args": a} for n, a in calls]},
    }


def test_turns_of_one_conversation_match_their_golden_turns(tmp_path: Path) -> None:
    """Two traces of one session: the second is matched as turn 2 of the same case."""
    doc = {
        "eval_set_id": "s",
        "eval_cases": [
            {
                "eval_id": "two-turns",
                "conversation": [
                    turn("Weather in Paris?", [("get_weather", {"city": "Paris"})], "21C."),
                    # the same text as turn 1 of another case: only the session decides
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
    (tmp_path / "s.evalset.json").write_text(json.dumps(doc))
    proc = ScoringSpanProcessor(
        criteria_from_config({"criteria": {"tool_trajectory_avg_score": 1.0}}, source="t"),
        goldens=load_goldens([str(tmp_path)]),
        registry=CollectorRegistry(),
    )
    provider = TracerProvider()
    provider.add_span_processor(proc)
    tracer = provider.get_tracer("t")
    try:
        run_agent(
            tracer,
            user="Weather in Paris?",
            tools=[("get_weather", {"city": "Paris"}, "21C")],
            answer="21C.",
            conversation_id="session-1",
        )
        assert proc.force_flush(10_000)  # the first turn is scored before the second ends
        run_agent(
            tracer,
            user="And tomorrow?",
            tools=[("get_forecast", {"city": "Paris"}, "rain")],
            answer="Rain.",
            conversation_id="session-1",
        )
        assert proc.force_flush(10_000)
    finally:
        provider.shutdown()
    ev = total(proc.registry, "tracescore_evaluations_total", "status")
    assert ev == {"passed": 2}  # turn 2 matched "two-turns" (Paris), not "other" (Rome)


def test_trace_outcome_priority() -> None:
    assert _trace_outcome(["sampled_out", "scored"]) == "scored"
    assert _trace_outcome(["no_golden", "judge_error"]) == "judge_error"
    assert _trace_outcome(["not_evaluable", "sampled_out"]) == "not_evaluable"
    assert _trace_outcome([]) == "no_agent"
