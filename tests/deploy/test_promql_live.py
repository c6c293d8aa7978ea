"""Every PromQL expression tracescore ships runs on a real Prometheus, on real data.

A real ``prometheus`` (Debian package) scrapes a running ``tracescore serve`` every
second with the shipped scrape config and evaluates the shipped recording and alert
rules, while a simulated agent on the real OTel SDK sends traces over OTLP/HTTP and a
local fake Gemini judges them. Then every expression — recording rules, alert rules, the
Grafana-managed alert queries, the dashboard's panels and variables — is queried: each
must succeed, and the key ones must return the series this traffic implies.
"""

from __future__ import annotations

import re
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from deploy_files import (
    ALERT_RULES,
    PROMETHEUS,
    RECORDING_RULES,
    dashboard,
    dashboard_queries,
    grafana_rules,
    query,
    rules,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from fake_judges import FakeGemini, gemini_json
from judge_helpers import MATCH, Router
from live_agent import run_agent
from live_fixtures import PARIS, write_goldens
from prom_servers import binary, free_port, get, running
from serve_process import Service, start_service

AGENT = "weather_agent"
SETTINGS = """
[live]
idle_s = 0.2
tick_s = 0.05
criteria = { tool_trajectory_avg_score = 1.0, response_match_score = 0.5, final_response_match_v2 = { threshold = 0.5, judge_model_options = { num_samples = 1 } } }
[sampling]
judged_rate = 1.0
[judge]
daily_budget_usd = 5.0
"""
#: Grafana's variables as a user with "All" selected would send them.
VARIABLES = {
    "$__rate_interval": "30s",
    "$__range": "10m",
    "$__interval": "1s",
    "$agent": ".*",
    "$criterion": ".*",
}
DEADLINE_S = 60.0


@dataclass
class Stack:
    prometheus: str
    service: Service
    trace_ids: set[str]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant-query result of ``expr``; fails the test on a query error."""
        url = f"{self.prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        reply = orjson.loads(get(url))
        assert reply["status"] == "success", (expr, reply)
        result: list[dict[str, Any]] = reply["data"]["result"]
        return result

    def labels(self, expr: str, *names: str) -> set[tuple[str, ...]]:
        """The ``names`` label values of each series ``expr`` returns."""
        return {tuple(s["metric"].get(n, "") for n in names) for s in self.query(expr)}

    def wait(self, expr: str, what: str) -> list[dict[str, Any]]:
        """Poll until ``expr`` returns a series (Prometheus scrapes and evaluates on its own)."""
        deadline = time.monotonic() + DEADLINE_S
        while not (result := self.query(expr)):
            if time.monotonic() > deadline:
                pytest.fail(f"Prometheus never showed {what}: {expr}")
            time.sleep(0.2)  # waiting on another process's scrape cycle
        return result


def _prometheus_config(tmp: Path, target: str) -> Path:
    """The shipped scrape config, aimed at ``target`` and sped up to 1 s."""
    config: dict[str, Any] = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    config["global"].update(scrape_interval="1s", evaluation_interval="1s")
    config["rule_files"] = [str(RECORDING_RULES), str(ALERT_RULES)]
    (job,) = config["scrape_configs"]
    job.update(scrape_interval="1s", scrape_timeout="1s", static_configs=[{"targets": [target]}])
    path = tmp / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    return path


def _send(service: Service, trace_ids: set[str], *, passing: int, failing: int) -> None:
    """One batch of agent runs over OTLP/HTTP: passing, failing and one without golden."""
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{service.http_port}/v1/traces")
    provider = TracerProvider(resource=Resource.create({"service.name": "agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    for _ in range(passing):
        trace_ids.add(run_agent(tracer))
    for _ in range(failing):
        trace_ids.add(
            run_agent(
                tracer,
                tools=[("get_weather", {"city": "Rome"}, "25C")],
                answer="Sorry, no idea.",
            )
        )
    trace_ids.add(run_agent(tracer, user="Tell me a joke"))
    provider.shutdown()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("promql")
    write_goldens(
        tmp, {"paris": (PARIS, [("get_weather", {"city": "Paris"})], "It is 21C in Paris.")}
    )
    router = Router({MATCH: [gemini_json({"reasoning": "same facts", "verdict": "valid"})]})
    with ExitStack() as stack:
        fake = stack.enter_context(FakeGemini(router))
        env = {"GOOGLE_GEMINI_BASE_URL": fake.base_url, "GOOGLE_API_KEY": "test-key"}
        service = start_service(
            tmp, "--goldens", str(tmp / "live.evalset.json"), settings=SETTINGS, env=env
        )
        stack.callback(service.stop)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        cmd = [
            binary("prometheus"),
            f"--config.file={_prometheus_config(tmp, f'127.0.0.1:{service.http_port}')}",
            f"--storage.tsdb.path={tmp / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--enable-feature=exemplar-storage",
        ]
        stack.enter_context(running(cmd, ready_url=f"{url}/-/ready", log=tmp / "prometheus.log"))
        ready = Stack(prometheus=url, service=service, trace_ids=set())
        # Two batches, each scraped: counters must grow between scrapes for rate() to
        # see traffic (a counter's first sample is no increase).
        scored = ("tracescore_invocations_total", (("agent", AGENT), ("outcome", "scored")))
        for batch in (1, 2):
            _send(service, ready.trace_ids, passing=2, failing=4)
            service.wait_for(scored, 6 * batch)
            ready.wait(
                f'tracescore_invocations_total{{outcome="scored"}} == {6 * batch}',
                f"batch {batch} scraped",
            )
        # Then one rule evaluation after the last scrape.
        ready.wait("agent_criterion:tracescore_pass_rate:ratio_rate5m > 0", "recorded pass rates")
        yield ready


def _substituted(expr: str) -> str:
    for name, value in sorted(VARIABLES.items(), key=lambda kv: -len(kv[0])):
        expr = expr.replace(name, value)
    assert "$" not in expr, expr
    return expr


def test_every_rule_expression_runs(stack: Stack) -> None:
    for path in (RECORDING_RULES, ALERT_RULES):
        for rule in rules(path, "expr"):
            stack.query(rule["expr"])


def test_recording_rules_return_the_expected_series(stack: Stack) -> None:
    criteria = {"tool_trajectory_avg_score", "response_match_score", "final_response_match_v2"}
    for window in ("5m", "1h", "1d"):
        got = stack.labels(
            f"agent_criterion:tracescore_pass_rate:ratio_rate{window}", "agent", "criterion"
        )
        assert got == {(AGENT, c) for c in criteria}, window
    means = {
        s["metric"]["criterion"]: float(s["value"][1])
        for s in stack.query("agent_criterion:tracescore_score:mean10m")
    }
    # 4 of 12 runs right: trajectory and ROUGE means a third; the judge said "valid".
    assert means["tool_trajectory_avg_score"] == pytest.approx(1 / 3)
    assert means["response_match_score"] == pytest.approx(1 / 3)
    assert means["final_response_match_v2"] == pytest.approx(1.0)
    assert stack.labels("criterion:tracescore_threshold:max", "criterion") == {
        (c,) for c in criteria
    }
    outcomes = stack.labels("agent_outcome:tracescore_invocations:rate5m", "outcome")
    assert {("scored",), ("no_golden",)} <= outcomes
    assert stack.labels("model:tracescore_judge_errors:ratio_rate5m", "model") == {
        ("gemini-2.5-flash",)
    }
    (ratio,) = stack.query("instance:tracescore_judge_spend:ratio")
    assert 0 < float(ratio["value"][1]) < 0.8  # priced calls, far under the $5 cap
    assert stack.labels("job:tracescore_spans_received:rate5m", "job") == {("tracescore",)}


def test_alerts_see_the_low_scores_and_a_healthy_pipeline(stack: Stack) -> None:
    pending = stack.wait(
        'ALERTS{alertname="TracescoreScoreBelowThreshold", criterion="response_match_score"}',
        "the score alert pending",
    )
    assert {s["metric"]["alertstate"] for s in pending} == {"pending"}  # for: 15m
    fired = stack.labels("ALERTS", "alertname")
    assert fired == {("TracescoreScoreBelowThreshold",)}  # the pipeline itself is healthy


def test_grafana_alert_queries_run_and_agree(stack: Stack) -> None:
    for rule in grafana_rules():
        value = query(rule, "A")["model"]["expr"]
        stack.query(value)
    grafana = {r["title"]: query(r, "A")["model"]["expr"] for r in grafana_rules()}
    below = stack.labels(f"({grafana['TracescoreScoreBelowThreshold']}) < 0", "criterion")
    assert ("response_match_score",) in below and ("final_response_match_v2",) not in below
    assert stack.labels(grafana["TracescoreDown"], "job") == {("tracescore",)}


def test_every_dashboard_query_runs_and_the_key_panels_have_data(stack: Stack) -> None:
    board = dashboard()
    for expr in dashboard_queries(board):
        stack.query(_substituted(expr))
    by_title = {
        p["title"]: [_substituted(t["expr"]) for t in p["targets"]]
        for p in board["panels"]
        if p["type"] != "row"
    }
    nonempty = [
        "Score: $criterion",
        "Median and 10th-percentile score (exemplars link to traces)",
        "Pass rate (5m)",
        "Pass rate: last hour against last day",
        "Invocations by outcome",
        "Not evaluated, by criterion and reason (time range)",
        "Evaluations by status",
        "Judge latency",
        "Judge requests by outcome",
        "Judge tokens",
        "Judge spend (time range)",
        "Judge spend today against the daily cap",
        "Spans and log records received",
        "Queue depth and traces in flight",
        "Replicas up",
    ]
    for title in nonempty:
        for expr in by_title[title]:
            assert stack.query(expr), f"{title!r}: {expr} returned nothing"
    outcomes = stack.labels(by_title["Invocations by outcome"][0], "outcome")
    assert {("scored",), ("no_golden",)} <= outcomes
    reasons = stack.labels(
        by_title["Not evaluated, by criterion and reason (time range)"][0], "reason"
    )
    assert ("no golden case has this user text",) in reasons


def test_dashboard_variables_list_agents_and_criteria(stack: Stack) -> None:
    for variable in dashboard()["templating"]["list"]:
        if variable["type"] != "query":
            continue
        found = re.fullmatch(r"label_values\((\w+), (\w+)\)", variable["definition"])
        assert found, variable["definition"]
        metric, label = found.groups()
        values = {v for (v,) in stack.labels(metric, label)}
        want = {"agent": {AGENT}, "criterion": {"response_match_score", "final_response_match_v2"}}
        assert want[variable["name"]] <= values


def test_exemplars_link_scores_to_the_traces_sent(stack: Stack) -> None:
    now = time.time()
    params = urllib.parse.urlencode(
        {"query": "tracescore_score_bucket", "start": now - 600, "end": now + 60}
    )
    reply = orjson.loads(get(f"{stack.prometheus}/api/v1/query_exemplars?{params}"))
    assert reply["status"] == "success"
    linked = {e["labels"]["trace_id"] for series in reply["data"] for e in series["exemplars"]}
    assert linked and linked <= stack.trace_ids
