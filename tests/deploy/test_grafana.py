"""deploy/grafana: provisioning files, the dashboard, and the Grafana-managed alert rules,
checked by parsing and — for the alerts — by running the Prometheus alerts' promtool
unit tests on the Grafana rules translated back to PromQL."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_files import (
    GRAFANA,
    GRAFANA_ALERTS,
    RECORDING_RULES,
    RULE_TESTS,
    alert_rules,
    dashboard,
    dashboard_queries,
    grafana_rules,
    load_yaml,
    panels,
    query,
)

from prom_servers import promtool

PROVISIONING = GRAFANA / "provisioning"
#: Grafana's threshold expression types, as PromQL comparison operators.
OPERATORS = {"gt": ">", "lt": "<", "gte": ">=", "lte": "<=", "eq": "==", "ne": "!="}


def datasources() -> dict[str, dict[str, Any]]:
    data = load_yaml(PROVISIONING / "datasources" / "tracescore.yaml")
    assert data["apiVersion"] == 1
    return {d["uid"]: d for d in data["datasources"]}


# -- data sources and the dashboard provider ---------------------------------------------------


def test_datasources_link_exemplars_to_tempo() -> None:
    sources = datasources()
    assert sources["prometheus"]["type"] == "prometheus"
    assert sources["tempo"]["type"] == "tempo"
    (link,) = sources["prometheus"]["jsonData"]["exemplarTraceIdDestinations"]
    # The exemplar label tracescore_score carries (ScoreMetrics.record) and a real uid.
    assert link == {"name": "trace_id", "datasourceUid": "tempo"}
    # Data-source-managed alerting: Grafana shows the Prometheus rules.
    assert sources["prometheus"]["jsonData"]["manageAlerts"] is True


def test_dashboard_provider_points_at_the_dashboards_mount() -> None:
    data = load_yaml(PROVISIONING / "dashboards" / "tracescore.yaml")
    (provider,) = data["providers"]
    assert provider["type"] == "file"
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards"


# -- the dashboard ------------------------------------------------------------------------------


def test_dashboard_is_well_formed() -> None:
    board = dashboard()
    assert board["uid"] == "tracescore"
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    variables = {v["name"] for v in board["templating"]["list"]}
    cells: set[tuple[int, int]] = set()
    for p in board["panels"]:
        pos = p["gridPos"]
        assert pos["x"] >= 0 and pos["x"] + pos["w"] <= 24, p["title"]
        mine = {(x, y) for x in range(pos["x"], pos["x"] + pos["w"])
                for y in range(pos["y"], pos["y"] + pos["h"])}  # fmt: skip
        assert not cells & mine, f"panel {p['title']!r} overlaps another"
        cells |= mine
    for p in panels(board):
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)), p["title"]
        for t in p["targets"]:
            used = set(re.findall(r"\$\{?(\w+)", t["expr"] + p["title"]))
            assert used - {"__rate_interval", "__range", "__interval"} <= variables, t["expr"]


def test_dashboard_shows_what_an_operator_needs() -> None:
    board = dashboard()
    by_panel = {p["title"]: " ".join(t["expr"] for t in p["targets"]) for p in panels(board)}
    everything = " ".join(by_panel.values())
    # Score per criterion and agent with the threshold line in the same panel.
    assert any(
        "tracescore_score:mean10m" in q and "tracescore_threshold" in q for q in by_panel.values()
    )
    for needle in (
        "tracescore_pass_rate",  # pass rates
        "sum by (outcome) (rate(tracescore_invocations_total",  # outcome breakdown
        "tracescore_not_evaluated_total",  # ... and why
        "tracescore_judge_request_duration_seconds_bucket",  # judge latency
        "tracescore_judge_tokens_total",
        "tracescore_judge_cost_usd_total",
        "tracescore_queue_depth",
        "tracescore_spans_dropped_total",
    ):
        assert needle in everything, needle
    # Exemplars are requested on the score histogram, the series that carries them.
    assert any(
        t.get("exemplar") and "tracescore_score_bucket" in t["expr"]
        for p in panels(board)
        for t in p["targets"]
    )
    # The repeated score panel follows the criterion variable.
    (repeated,) = [p for p in panels(board) if p.get("repeat")]
    assert repeated["repeat"] == "criterion"


def test_dashboard_queries_never_group_by_unbounded_ids() -> None:
    for expr in dashboard_queries(dashboard()):
        assert not re.search(r"\b(trace_id|session|user)\b", expr), expr


# -- Grafana-managed alert rules ------------------------------------------------------------------


def test_grafana_rules_mirror_the_prometheus_alerts() -> None:
    grafana = {r["title"]: r for r in grafana_rules()}
    prometheus = {r["alert"]: r for r in alert_rules()}
    assert grafana.keys() == prometheus.keys()
    uids = [r["uid"] for r in grafana.values()]
    assert len(uids) == len(set(uids)) and all(len(u) <= 40 for u in uids)
    sources = datasources()
    for name, rule in grafana.items():
        mine = prometheus[name]
        assert rule["for"] == mine["for"], name
        assert rule["labels"]["severity"] == mine["labels"]["severity"], name
        assert rule["annotations"]["runbook_url"] == mine["annotations"]["runbook_url"], name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name
        condition = query(rule, rule["condition"])
        assert condition["datasourceUid"] == "__expr__", name
        assert condition["model"]["type"] == "threshold", name
        value = query(rule, condition["model"]["expression"])
        assert value["datasourceUid"] in sources, name
        assert value["model"]["instant"] is True, name
        # Only the labels the query keeps can be templated.
        for label in re.findall(r"\$labels\.(\w+)", str(rule["annotations"])):
            assert label in value["model"]["expr"] or label in {"instance", "job"}, (name, label)


def test_contact_point_and_policy_fit_together() -> None:
    points = load_yaml(PROVISIONING / "alerting" / "contact-points.yaml")
    policies = load_yaml(PROVISIONING / "alerting" / "notification-policies.yaml")
    names = {p["name"] for p in points["contactPoints"]}

    def receivers(route: dict[str, Any]) -> list[str]:
        return [route["receiver"], *(r for sub in route.get("routes", []) for r in receivers(sub))]

    (tree,) = policies["policies"]
    assert set(receivers(tree)) <= names
    # The route matches a label every tracescore rule carries.
    (route,) = tree["routes"]
    key, op, val = route["object_matchers"][0]
    assert op == "=" and all(r["labels"][key] == val for r in grafana_rules())


def translated(rule: dict[str, Any]) -> str:
    """A Grafana rule as the PromQL expression of an equivalent Prometheus alert.

    Query A filtered by the threshold of C; a rule that alerts on no data also fires
    where the query returns nothing (``absent``).
    """
    condition = query(rule, rule["condition"])["model"]
    (evaluator,) = [c["evaluator"] for c in condition["conditions"]]
    (param,) = evaluator["params"]
    value = query(rule, condition["expression"])["model"]["expr"]
    expr = f"({value}) {OPERATORS[evaluator['type']]} {param}"
    if rule["noDataState"] == "Alerting":
        expr = f"{expr} or absent({value})"
    return expr


def _as_prometheus_tests(tmp_path: Path, rules: list[dict[str, Any]]) -> Path:
    """The promtool tests of the Prometheus alerts, run against ``rules`` instead."""
    (tmp_path / "rules").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "rules" / RECORDING_RULES.name).write_text(RECORDING_RULES.read_text())
    alerts = {"groups": [{"name": "grafana", "rules": rules}]}
    (tmp_path / "rules" / "tracescore-alerts.yml").write_text(yaml.safe_dump(alerts))
    tests = load_yaml(RULE_TESTS)
    for case in tests["tests"]:
        for check in case.get("alert_rule_test", []):
            for alert in check["exp_alerts"]:
                alert.pop("exp_annotations", None)  # Grafana templates its own text
    out = tmp_path / "tests" / RULE_TESTS.name
    out.write_text(yaml.safe_dump(tests))
    return out


def test_grafana_rules_fire_exactly_like_the_prometheus_alerts(tmp_path: Path) -> None:
    rules = [
        {
            "alert": r["title"],
            "expr": translated(r),
            "for": r["for"],
            "labels": {"severity": r["labels"]["severity"]},
        }
        for r in grafana_rules()
    ]
    result = promtool("test", "rules", _as_prometheus_tests(tmp_path, rules))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", ["TracescoreScoreBelowThreshold", "TracescoreJudgeSpendNearCap"])
def test_a_drifted_grafana_rule_is_caught(tmp_path: Path, name: str) -> None:
    rules = []
    for r in grafana_rules():
        expr = translated(r)
        if r["title"] == name:  # the threshold moved: the same tests must now fail
            expr = expr.replace(" < 0", " < -0.5").replace(" >= 0.8", " >= 0.95")
        rules.append({"alert": r["title"], "expr": expr, "for": r["for"],
                      "labels": {"severity": r["labels"]["severity"]}})  # fmt: skip
    result = promtool("test", "rules", _as_prometheus_tests(tmp_path, rules))
    assert result.returncode != 0
    assert set(re.findall(r"alertname: (\w+)", result.stdout + result.stderr)) == {name}


def test_every_grafana_file_is_provisioning_v1() -> None:
    for path in sorted(PROVISIONING.rglob("*.yaml")):
        assert load_yaml(path)["apiVersion"] == 1, path
    assert GRAFANA_ALERTS.exists()
