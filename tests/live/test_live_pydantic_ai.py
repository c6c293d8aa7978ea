"""Real pydantic-ai agents scored live by ScoringSpanProcessor, as a replay scores them.

The scenarios of ``pydantic_ai_harness.py`` are recorded once and imported into goldens
(``tracescore import -o`` does the same); then the same agents run again with the
processor on their tracer provider. Every run must be scored against its golden with the
verdicts the replay of the recorded traces gives: the deterministic criteria pass where
the agent answered, and a run that ended in an exception fails ``response_match_score``
(it has no answer), as ADK fails an eval case whose agent raised.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from pydantic_ai import Agent
from pydantic_ai.models.instrumented import InstrumentationSettings

from live_fixtures import total
from pydantic_ai_harness import SCENARIOS, recorded_runs
from recording import Recorder
from tracescore.eval_config import load_eval_config
from tracescore.evalset import conversations_to_evalset
from tracescore.goldens import load_goldens
from tracescore.importer import ImportStats, import_paths
from tracescore.model import group_conversations
from tracescore.processor import ScoringSpanProcessor
from tracescore.replay import replay

#: Runs that end in an exception: scored, with no answer.
RAISED = ("tool_raises", "model_error")
#: Turns the scenarios play: one per scenario, two in ``two_turns``.
TURNS = len(SCENARIOS) + 1


@pytest.fixture
def goldens(tmp_path: Path) -> Path:
    """Goldens made of a first recording of every scenario (one eval case per conversation)."""
    traces = tmp_path / "traces"
    traces.mkdir()
    recorded_runs(traces, 5, include_content=True)
    invocations = list(import_paths([str(traces)], ImportStats()))
    doc, kept, left_out = conversations_to_evalset(
        group_conversations(invocations), eval_set_id="pydantic-ai"
    )
    # An agent run inside a tool is part of its caller's turn, not a golden of its own.
    nested = sum(i.parent_tool_span_id is not None for i in invocations)
    assert (kept, left_out, nested) == (len(invocations) - 1, 1, 1)
    path = tmp_path / "pydantic-ai.evalset.json"
    path.write_text(json.dumps(doc))
    return path


def test_live_scores_equal_the_replay_of_the_recorded_traces(goldens: Path, tmp_path: Path) -> None:
    config = load_eval_config(None)  # ADK's defaults: trajectory EXACT and ROUGE-1
    processor = ScoringSpanProcessor(
        config, goldens=load_goldens([str(goldens)]), registry=CollectorRegistry()
    )
    recorder = Recorder(processor)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        settings = InstrumentationSettings(tracer_provider=recorder.provider, version=5)
    Agent.instrument_all(settings)
    try:
        for scenario in SCENARIOS.values():
            scenario()
        assert processor.force_flush(20_000)
    finally:
        Agent.instrument_all(False)
        processor.shutdown()
    registry = processor.registry
    # One turn per run; an agent run inside a tool is scored as part of its caller's turn.
    turns = TURNS
    assert total(registry, "tracescore_invocations_total", "outcome") == {"scored": turns}
    assert total(registry, "tracescore_traces_total", "outcome") == {"scored": turns}
    # The processor adds the informational criteria; replay() scores only those given.
    evaluations = total(registry, "tracescore_evaluations_total", "status")
    assert evaluations.pop("informational") > 0

    # The replay of the recorded goldens' own traces, in one process, for the same verdicts.
    traces = tmp_path / "traces"
    replayed = replay([str(traces)], config, goldens=load_goldens([str(goldens)]))
    assert [r.outcome for r in replayed.invocations] == ["scored"] * turns
    statuses: dict[str, float] = {}
    for invocation in replayed.invocations:
        for result in invocation.results:
            statuses[result.status] = statuses.get(result.status, 0) + 1
    assert evaluations == statuses
    # Every run was matched and agrees with itself but for the two that raised.
    assert statuses == {"passed": 2 * turns - len(RAISED), "failed": len(RAISED)}
