"""Paths and loaders shared by the tests of ``deploy/`` (Prometheus rules, Grafana)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PROMETHEUS = DEPLOY / "prometheus"
RULES = PROMETHEUS / "rules"
RECORDING_RULES = RULES / "tracescore-recording.yml"
ALERT_RULES = RULES / "tracescore-alerts.yml"
RULE_TESTS = PROMETHEUS / "tests" / "tracescore-alerts.test.yml"
GRAFANA = DEPLOY / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "tracescore.json"
GRAFANA_ALERTS = GRAFANA / "provisioning" / "alerting" / "tracescore-rules.yaml"
PRODUCTION_DOC = ROOT / "docs" / "production.md"


def load_yaml(path: Path) -> Any:
    """``path`` parsed as YAML."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def rules(path: Path, kind: str) -> list[dict[str, Any]]:
    """Every rule of ``kind`` (``alert`` or ``record``) in the rule file ``path``."""
    return [r for group in load_yaml(path)["groups"] for r in group["rules"] if kind in r]


def alert_rules() -> list[dict[str, Any]]:
    """The alerting rules tracescore ships."""
    return rules(ALERT_RULES, "alert")


def grafana_rules() -> list[dict[str, Any]]:
    """The Grafana-managed alert rules tracescore ships."""
    return [r for group in load_yaml(GRAFANA_ALERTS)["groups"] for r in group["rules"]]


def query(rule: dict[str, Any], ref: str) -> dict[str, Any]:
    """The query (or expression) ``ref`` of a Grafana alert rule."""
    (found,) = [d for d in rule["data"] if d["refId"] == ref]
    return dict(found)


def dashboard() -> dict[str, Any]:
    """The provisioned dashboard, parsed."""
    data: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return data


def panels(board: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel of ``board``, rows' nested panels included, rows themselves excluded."""
    found: list[dict[str, Any]] = []
    for p in board["panels"]:
        if p["type"] == "row":
            found.extend(p.get("panels", []))
        else:
            found.append(p)
    return found


def dashboard_queries(board: dict[str, Any]) -> list[str]:
    """Every PromQL expression of the dashboard's panels (variables not substituted)."""
    return [t["expr"] for p in panels(board) for t in p.get("targets", []) if t.get("expr")]
