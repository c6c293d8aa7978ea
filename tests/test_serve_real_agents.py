"""``tracescore serve`` on real frameworks' traces gives the verdicts ``replay`` gives.

pydantic-ai's scenarios (``pydantic_ai_harness.py``) and agno's (``agno_harness.py``, in
a child process) are recorded as the Collector's ``file`` exporter writes OTLP JSON;
their turns become the goldens. Each file is then sent as one OTLP/HTTP JSON request to
a running service, and its per-criterion counts on ``/metrics`` must equal what
``replay()`` scores on the same files: the same turns matched, the same passes and
failures, nested runs (an agent run inside a tool, a team member's run) not scored as
turns of their own. Real ADK runs under OpenInference's instrumentor (schema 2, content
in log records only) go the same way, each file's log records and spans as separate
requests.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import httpx

import adk_openinference_harness as adk_oi
from pydantic_ai_harness import recorded_runs
from serve_process import SeriesKey, start_service
from tracescore.evalset import conversations_to_evalset
from tracescore.goldens import load_goldens
from tracescore.importer import ImportStats, import_paths
from tracescore.model import group_conversations
from tracescore.replay import ReplayResult, replay

AGNO_HARNESS = Path(__file__).resolve().parent / "agno_harness.py"
CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5}


def _replayed_counts(replayed: ReplayResult) -> dict[tuple[str, str], int]:
    """How many verdicts replay gave, by criterion and status."""
    counts: Counter[tuple[str, str]] = Counter()
    for result in replayed.invocations:
        for score in result.results:
            counts[score.criterion, str(score.status)] += 1
    return dict(counts)


def _served(
    tmp_path: Path, goldens: Path, posts: list[tuple[str, bytes]], traces_scored: int
) -> dict[SeriesKey, float]:
    """``/metrics`` of a service given ``goldens`` once it scored ``traces_scored`` traces.

    Each of ``posts`` is an OTLP/HTTP JSON request (path, body), sent in order.
    """
    service = start_service(tmp_path, "--goldens", str(goldens))
    try:
        for path, body in posts:
            reply = httpx.post(
                f"http://127.0.0.1:{service.http_port}{path}",
                content=body,
                headers={"Content-Type": "application/json"},
            )
            assert reply.status_code == 200, reply.text
        scored = ("tracescore_traces_total", (("outcome", "scored"),))
        return service.wait_for(scored, traces_scored)
    finally:
        service.stop()


def _outcomes(metrics: dict[SeriesKey, float]) -> dict[str, float]:
    """Completed traces by outcome."""
    return {
        dict(labels)["outcome"]: value
        for (name, labels), value in metrics.items()
        if name == "tracescore_traces_total"
    }


def _live_counts(metrics: dict[SeriesKey, float]) -> dict[tuple[str, str], int]:
    """How many verdicts the service counted on ``/metrics``, by criterion and status."""
    counts: Counter[tuple[str, str]] = Counter()
    for (name, labels), value in metrics.items():
        found = dict(labels)
        if name == "tracescore_evaluations_total" and found["criterion"] in CRITERIA:
            counts[found["criterion"], found["status"]] += int(value)
    return dict(counts)


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
    expected = _replayed_counts(replayed)
    traces_scored = len({r.invocation.trace_id for r in replayed.invocations})

    posts = [("/v1/traces", file.read_bytes()) for file in files]
    metrics = _served(tmp_path, goldens, posts, traces_scored)
    assert _outcomes(metrics) == {"scored": traces_scored}
    assert _live_counts(metrics) == expected
    # The runs that raised fail their answer; everything else agrees with its golden.
    assert expected[("response_match_score", "failed")] == 2
    assert expected[("tool_trajectory_avg_score", "passed")] == kept


ADK_OI_HARNESS = Path(__file__).resolve().parent / "adk_openinference_harness.py"
#: The mode whose recordings are served: ADK's content in log records only, and
#: OpenInference's one span per agent over schema 2. (One mode: the modes' runs of a
#: scenario share its session id, so together they would be one conversation.) The
#: harness's runs that pause for a person are left out: this test counts the others.
ADK_MODE = ("v2", "EVENT_ONLY")


def test_serve_scores_adk_traces_under_openinference_as_replay_does(tmp_path: Path) -> None:
    """Real ADK runs under OpenInference's instrumentor, spans and log records apart.

    Each file's log line goes to ``/v1/logs`` before its trace line goes to ``/v1/traces``
    (the Collector exports them on separate pipelines, in either order; this one does not
    depend on the idle window). The MCP SDK's session set-up traces have no agent.
    """
    recorded = tmp_path / "adk"
    subprocess.run(
        [sys.executable, str(ADK_OI_HARNESS), "adk", str(recorded)],
        cwd=ADK_OI_HARNESS.parent,
        check=True,
        capture_output=True,
    )
    files = sorted(
        recorded / adk_oi.record_name(*run) for run in adk_oi.RUNS if run[:2] == ADK_MODE
    )
    stats = ImportStats()
    invocations = list(import_paths([str(f) for f in files], stats))
    turns = [i for i in invocations if i.parent_tool_span_id is None]
    doc, kept, _ = conversations_to_evalset(group_conversations(turns), eval_set_id="adk")
    goldens = tmp_path / "adk.evalset.json"
    goldens.write_text(json.dumps(doc))

    replayed = replay([str(f) for f in files], CRITERIA, goldens=load_goldens([str(goldens)]))
    # Two scenarios ask the same first question: replay says so rather than guess, and
    # the service must too.
    outcomes_by_trace = {r.invocation.trace_id: r.outcome for r in replayed.invocations}
    assert sorted(Counter(outcomes_by_trace.values()).items()) == [
        ("no_golden", 2),
        ("scored", kept - 2),
    ]
    expected = _replayed_counts(replayed)
    traces_scored = kept - 2

    posts = [
        ("/v1/traces" if '"resourceSpans"' in line else "/v1/logs", line.encode())
        for file in files
        for line in sorted(file.read_text().splitlines(), key=lambda ln: "resourceSpans" in ln)
    ]
    metrics = _served(tmp_path, goldens, posts, traces_scored)
    assert _outcomes(metrics) == {
        "scored": traces_scored,
        "no_golden": 2,
        "no_agent": stats.traces_without_agent,
    }
    assert _live_counts(metrics) == expected
    # Every turn with a golden agrees with it (itself).
    assert expected[("tool_trajectory_avg_score", "passed")] == traces_scored
