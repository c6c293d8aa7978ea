"""``tracescore serve`` on real frameworks' traces gives the verdicts ``replay`` gives.

pydantic-ai's scenarios (``pydantic_ai_harness.py``) and agno's (``agno_harness.py``, in
a child process) are recorded as the Collector's ``file`` exporter writes OTLP JSON;
their turns become the goldens. Each file is then sent as one OTLP/HTTP JSON request to
a running service, and its per-criterion counts on ``/metrics`` must equal what
``replay()`` scores on the same files: the same turns matched, the same passes and
failures, nested runs (an agent run inside a tool, a team member's run) not scored as
turns of their own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from pydantic_ai_harness import recorded_runs
from serve_process import start_service
from tracescore.evalset import conversations_to_evalset
from tracescore.goldens import load_goldens
from tracescore.importer import ImportStats, import_paths
from tracescore.model import group_conversations
from tracescore.replay import replay

AGNO_HARNESS = Path(__file__).resolve().parent / "agno_harness.py"
CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5}


def test_serve_scores_real_agents_traces_as_replay_does(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    (traces / "agno").mkdir(parents=True)
    recorded_runs(traces, 5, include_content=True)
    subprocess.run(
        [sys.executable, str(AGNO_HARNESS), str(traces / "agno")],
        cwd=AGNO_HARNESS.parent,
        check=True,
        capture_output=True,
    )
    files = sorted(traces.rglob("*.jsonl"))
    invocations = list(import_paths([str(f) for f in files], ImportStats()))
    doc, kept, _ = conversations_to_evalset(group_conversations(invocations), eval_set_id="real")
    goldens = tmp_path / "real.evalset.json"
    goldens.write_text(json.dumps(doc))

    replayed = replay([str(f) for f in files], CRITERIA, goldens=load_goldens([str(goldens)]))
    assert [r.outcome for r in replayed.invocations] == ["scored"] * kept
    expected: dict[tuple[str, str], int] = {}
    for result in replayed.invocations:
        for score in result.results:
            expected[score.criterion, score.status] = (
                expected.get((score.criterion, score.status), 0) + 1
            )
    traces_scored = len({r.invocation.trace_id for r in replayed.invocations})

    service = start_service(tmp_path, "--goldens", str(goldens))
    try:
        for file in files:
            reply = httpx.post(
                f"http://127.0.0.1:{service.http_port}/v1/traces",
                content=file.read_bytes(),
                headers={"Content-Type": "application/json"},
            )
            assert reply.status_code == 200, reply.text
        scored = ("tracescore_traces_total", (("outcome", "scored"),))
        metrics = service.wait_for(scored, traces_scored)
    finally:
        service.stop()
    assert metrics[scored] == traces_scored
    outcomes = {
        dict(labels)["outcome"]: value
        for (name, labels), value in metrics.items()
        if name == "tracescore_traces_total"
    }
    assert outcomes == {"scored": traces_scored}
    live: dict[tuple[str, str], int] = {}
    for (name, labels), value in metrics.items():
        found = dict(labels)
        if name == "tracescore_evaluations_total" and found["criterion"] in CRITERIA:
            series = (found["criterion"], found["status"])
            live[series] = live.get(series, 0) + int(value)
    assert live == expected
    # The runs that raised fail their answer; everything else agrees with its golden.
    assert expected[("response_match_score", "failed")] == 2
    assert expected[("tool_trajectory_avg_score", "passed")] == kept
