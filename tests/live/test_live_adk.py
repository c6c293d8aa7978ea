"""A real google-adk agent (scripted model) with ScoringSpanProcessor attached, end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from adk_harness import _state, install_telemetry, run_scenario
from live_fixtures import total, value
from tracescore.eval_config import load_eval_config
from tracescore.goldens import load_goldens
from tracescore.processor import ScoringSpanProcessor

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("schema", "content"),
    [("v1", "default"), ("v2", "SPAN_ONLY"), ("v2", "EVENT_ONLY")],
)
def test_adk_agent_scored_live(schema: str, content: str) -> None:
    """Content in spans (v1, v2) or only in log records (v2 EVENT_ONLY) is scored alike."""
    install_telemetry()
    capture = _state.capture
    assert capture is not None
    proc = ScoringSpanProcessor(
        load_eval_config(str(EXAMPLES / "eval_config.json")),
        goldens=load_goldens([str(EXAMPLES / "goldens")]),
        registry=CollectorRegistry(),
    )
    capture.tracer_provider.add_span_processor(proc)
    capture.logger_provider.add_log_record_processor(proc.log_processor)
    try:
        run = run_scenario("two_sequential_tools", schema=schema, content=content)  # type: ignore[arg-type]
        assert run.error is None
        assert proc.force_flush(20_000)
    finally:
        proc.shutdown()  # the global providers keep it, but it takes nothing more
    reg = proc.registry
    assert total(reg, "tracescore_invocations_total", "outcome") == {"scored": 1}
    assert total(reg, "tracescore_traces_total", "outcome") == {"scored": 1}
    [agent] = {
        s.labels["agent"]
        for m in reg.collect()
        for s in m.samples
        if s.name == "tracescore_invocations_total"
    }
    # The bundled golden expects other tool arguments (the README's example fails it on
    # purpose); live scoring must give the verdicts ``tracescore replay`` gives.
    labels = {"agent": agent, "criterion": "tool_trajectory_avg_score"}
    assert value(reg, "tracescore_evaluations_total", **labels, status="failed") == 1
    rouge = {"agent": agent, "criterion": "response_match_score"}
    assert value(reg, "tracescore_evaluations_total", **rouge, status="passed") == 1
    assert value(reg, "tracescore_spans_received_total") == len(run.spans)
    if content == "EVENT_ONLY":
        assert value(reg, "tracescore_logs_received_total") > 0
