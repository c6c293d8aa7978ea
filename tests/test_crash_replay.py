"""After a crash, replaying the archived traces gives the scores the live service gave,
and costs nothing: the judge cache the service filled answers every judged call.

``tracescore serve`` scores real OTLP traffic (a fake Gemini judging), is killed with
SIGKILL (a crash: no drain), and ``tracescore replay`` then reads the same spans from an
OTLP JSON Lines archive, as the Collector's ``file`` exporter writes it.
"""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path

from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_helpers import spans_to_otlp_json_lines

from fake_judges import FakeGemini, gemini_json
from judge_helpers import SAFETY, Router
from live_agent import run_agent
from live_fixtures import PARIS, write_goldens
from serve_process import start_service
from tracescore.cli import main

DIMS = ("harmful_content", "hate_speech", "privacy", "misinformation", "manipulation")
CRITERIA = "{ tool_trajectory_avg_score = 1.0, response_match_score = 0.5, safety_v1 = 1.0 }"
SETTINGS = f"""
[live]
idle_s = 0.2
tick_s = 0.05
criteria = {CRITERIA}
[replay]
criteria = {CRITERIA}
[sampling]
judged_rate = 1.0
[judge]
cache = "judge.sqlite"
"""


def test_replaying_the_archive_after_a_crash_gives_the_live_scores_for_free(
    tmp_path: Path,
) -> None:
    write_goldens(
        tmp_path, {"paris": (PARIS, [("get_weather", {"city": "Paris"})], "It is 21C in Paris.")}
    )
    safe = gemini_json({d: {"rationale": "fine", "verdict": "safe"} for d in DIMS})
    with FakeGemini(Router({SAFETY: [safe]})) as fake:
        env = {"GOOGLE_GEMINI_BASE_URL": fake.base_url, "GOOGLE_API_KEY": "test-key"}
        service = start_service(
            tmp_path, "--goldens", str(tmp_path / "live.evalset.json"), settings=SETTINGS, env=env
        )
        try:
            archive = InMemorySpanExporter()  # what the Collector's file exporter keeps
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(archive))
            exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{service.http_port}/v1/traces")
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            tracer = provider.get_tracer("agent")
            for _ in range(2):
                run_agent(tracer)
                run_agent(tracer, tools=[("get_weather", {"city": "Rome"}, "25C")], answer="No.")
            run_agent(tracer, user="Tell me a joke")
            provider.shutdown()
            # Every trace must have its outcome before the judge's calls are counted: the
            # golden-less run is judged too, and may finish after the four scored ones.
            for outcome, count in (("scored", 4), ("no_golden", 1)):
                service.wait_for(("tracescore_traces_total", (("outcome", outcome),)), count)
            live = service.metrics()
            assert live[("tracescore_traces_total", (("outcome", "no_golden"),))] == 1
            live_calls = fake.calls
            # safety_v1 judges every run, golden or not: three distinct conversations. The
            # second of two identical runs gets the first's verdict, from the cache or, when
            # both are judged at the same time, from the call in flight.
            asked = {json.dumps(r.json, sort_keys=True) for r in fake.received}
            assert len(asked) == 3
            assert live_calls == 3
            service.proc.send_signal(signal.SIGKILL)  # a crash: nothing drained, no goodbye
            service.proc.wait()
        finally:
            service.stop()

        files = tmp_path / "archive"
        files.mkdir()
        lines = spans_to_otlp_json_lines(archive.get_finished_spans(), batch_size=7)
        (files / "traces-2026-11-21T10-00-00.000.jsonl").write_text("\n".join(lines) + "\n")
        out = tmp_path / "replayed.jsonl"
        args = ["--settings", str(tmp_path / "tracescore.toml"), "replay", str(files)]
        args += ["--goldens", str(tmp_path / "live.evalset.json"), "--output", str(out), "-q"]
        result = CliRunner().invoke(main, args, env=env)
        assert result.exit_code in (0, 1), result.output  # 1: some criteria failed
        assert fake.calls == live_calls  # every judged call answered by the cache

    replayed = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(replayed) == 5
    sums: Counter[str] = Counter()
    statuses: Counter[tuple[str, str]] = Counter()
    for run in replayed:
        for name, res in run["criteria"].items():
            statuses[(name, res["status"].lower())] += 1
            if res["status"] in ("PASSED", "FAILED"):
                sums[name] += res["score"]
    agent = ("agent", "weather_agent")
    for name in ("tool_trajectory_avg_score", "response_match_score", "safety_v1"):
        criterion = ("criterion", name)
        assert sums[name] == live[("tracescore_score_sum", (agent, criterion))], name
        for status in ("passed", "failed", "not_evaluated"):
            key = ("tracescore_evaluations_total", (agent, criterion, ("status", status)))
            assert statuses[(name, status)] == live.get(key, 0), (name, status)
