"""examples/demo_agent.py against a real ``tracescore serve``, set up as the container is.

The service runs as a subprocess with deploy/tracescore/tracescore.toml laid out as in the
container (next to eval_config.json and goldens/), on free ports of 127.0.0.1; the demo
agent runs as another subprocess exporting over OTLP/gRPC (its real SDK exporter), and
/metrics must show its runs scored against the example goldens.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from types import ModuleType

import pytest

from serve_process import SeriesKey, Service, start_service

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo_agent.py"
GOLDENS = ROOT / "examples" / "goldens" / "weather.evalset.json"
SEED = 3
COUNT = 6

Metrics = dict[SeriesKey, float]


def load_demo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("demo_agent", DEMO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["demo_agent"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


demo = load_demo()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    # The container's layout: /etc/tracescore/{tracescore.toml, eval_config.json, goldens/}.
    etc = tmp_path / "etc"
    (etc / "goldens").mkdir(parents=True)
    shutil.copy(ROOT / "deploy" / "tracescore" / "tracescore.toml", etc / "tracescore.toml")
    shutil.copy(ROOT / "examples" / "eval_config.json", etc / "eval_config.json")
    shutil.copy(GOLDENS, etc / "goldens" / GOLDENS.name)
    svc = start_service(tmp_path, "--host", "127.0.0.1", settings=etc / "tracescore.toml")
    yield svc
    svc.stop()


def test_scenarios_replay_the_weather_agent_goldens() -> None:
    """Each scenario is its golden case's conversation: same questions, tools, answers."""
    cases = {c["eval_id"]: c for c in json.loads(GOLDENS.read_text(encoding="utf-8"))["eval_cases"]}
    for scenario in demo.SCENARIOS:
        case = cases[scenario.eval_id]
        assert case["session_input"]["app_name"] == demo.AGENT
        assert len(scenario.turns) == len(case["conversation"])
        for turn, golden in zip(scenario.turns, case["conversation"], strict=True):
            assert turn.user == golden["user_content"]["parts"][0]["text"]
            assert turn.answer == golden["final_response"]["parts"][0]["text"]
            uses = golden["intermediate_data"]["tool_uses"]
            calls = [c for step in turn.steps for c in step]
            assert [(c.name, c.arguments) for c in calls] == [(u["name"], u["args"]) for u in uses]
            results = {
                json.dumps(r["response"]) for r in golden["intermediate_data"]["tool_responses"]
            }
            assert {json.dumps(demo.call_tool(c)) for c in calls} == results
            wrong = demo.deviated(turn)
            assert [c.arguments for s in wrong.steps for c in s] != [c.arguments for c in calls]


def test_plan_is_seeded() -> None:
    first = [(r.scenario.eval_id, r.deviate) for r in islice(demo.plan(SEED, 0.25), 20)]
    again = [(r.scenario.eval_id, r.deviate) for r in islice(demo.plan(SEED, 0.25), 20)]
    assert first == again
    assert {name for name, _ in first[:5]} == {s.eval_id for s in demo.SCENARIOS}
    assert not any(r.deviate for r in islice(demo.plan(SEED, 0.0), 20))


def wait_for_scored(svc: Service, want: float) -> Metrics:
    """Scrape until ``want`` invocations are counted (scoring is asynchronous)."""
    deadline = time.monotonic() + 20
    while True:
        metrics = svc.metrics()
        counted = sum(
            v for (name, _), v in metrics.items() if name == "tracescore_invocations_total"
        )
        if counted >= want or time.monotonic() > deadline:
            return metrics
        time.sleep(0.1)


def test_demo_agent_runs_are_scored_against_the_example_goldens(service: Service) -> None:
    runs = list(islice(demo.plan(SEED, 0.25), COUNT))
    invocations = sum(len(r.scenario.turns) for r in runs)
    deviating = sum(r.deviate for r in runs)
    assert 0 < deviating < COUNT, "pick a seed with some deviating runs"

    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{service.grpc_port}"
    agent = subprocess.run(
        [sys.executable, str(DEMO), "--count", str(COUNT), "--interval", "0", "--seed", str(SEED)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert agent.returncode == 0, agent.stderr
    assert agent.stdout.count("run ") == COUNT
    assert f"played {COUNT} conversation(s), {deviating} deviating" in agent.stderr

    metrics = wait_for_scored(service, invocations)
    agent_label = ("agent", "weather_agent")
    inv = "tracescore_invocations_total"
    outcomes = {dict(k)["outcome"]: v for (name, k), v in metrics.items() if name == inv}
    assert outcomes == {"scored": invocations}  # every turn matched a golden and was scored
    trajectory = (agent_label, ("criterion", "tool_trajectory_avg_score"))
    evaluations = "tracescore_evaluations_total"
    assert metrics[(evaluations, (*trajectory, ("status", "failed")))] == deviating
    assert metrics[(evaluations, (*trajectory, ("status", "passed")))] == invocations - deviating
    assert metrics[("tracescore_traces_total", (("outcome", "scored"),))] == invocations

    # SIGTERM drains and exits 0, as in a container stop.
    service.proc.send_signal(signal.SIGTERM)
    assert service.proc.wait(timeout=20) == 0
