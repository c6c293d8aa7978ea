"""deploy/prometheus: the scrape config and the rules pass ``promtool``, every alert is
unit-tested firing and not firing, documented, and a broken alert fails its tests."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_files import (
    ALERT_RULES,
    PRODUCTION_DOC,
    PROMETHEUS,
    RECORDING_RULES,
    RULE_TESTS,
    alert_rules,
    load_yaml,
    rules,
)

from prom_servers import promtool

RUNBOOK = "https://github.com/tracescore/tracescore/blob/main/docs/production.md#"


def test_scrape_config_and_rules_pass_promtool_check() -> None:
    config = promtool("check", "config", PROMETHEUS / "prometheus.yml")
    assert config.returncode == 0, config.stdout + config.stderr
    checked = promtool("check", "rules", RECORDING_RULES, ALERT_RULES)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_scrape_config_scrapes_tracescore_metrics() -> None:
    config = load_yaml(PROMETHEUS / "prometheus.yml")
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "tracescore"]
    assert job["metrics_path"] == "/metrics"
    # The rules name the job: a renamed job would silently disarm TracescoreDown.
    assert all('job="tracescore"' in r["expr"] for r in alert_rules() if "up{" in r["expr"])
    assert {Path(p).name for p in config["rule_files"]} == {
        RECORDING_RULES.name,
        ALERT_RULES.name,
    }


def test_alert_unit_tests_pass() -> None:
    result = promtool("test", "rules", RULE_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_is_tested_firing_and_not_firing() -> None:
    firing: set[str] = set()
    quiet: set[str] = set()
    for case in load_yaml(RULE_TESTS)["tests"]:
        for check in case.get("alert_rule_test", []):
            (firing if check["exp_alerts"] else quiet).add(check["alertname"])
    names = {r["alert"] for r in alert_rules()}
    assert names <= firing, f"never tested firing: {names - firing}"
    assert names <= quiet, f"never tested quiet: {names - quiet}"


def test_the_required_alerts_exist() -> None:
    names = {r["alert"] for r in alert_rules()}
    assert {
        "TracescoreScoreBelowThreshold",
        "TracescorePassRateDrop",
        "TracescoreJudgeErrorRateHigh",
        "TracescoreJudgeSpendNearCap",
        "TracescoreNoTracesReceived",
        "TracescoreSpansDropped",
        "TracescoreDown",
    } <= names


def test_recording_rules_cover_pass_rate_and_rolling_score() -> None:
    recorded = {r["record"] for r in rules(RECORDING_RULES, "record")}
    assert "agent_criterion:tracescore_score:mean10m" in recorded
    assert {
        f"agent_criterion:tracescore_pass_rate:ratio_rate{w}" for w in ("5m", "1h", "1d")
    } <= recorded
    for name in recorded:  # level:metric:operations
        assert re.fullmatch(r"[a-z_]+:tracescore_[a-z_]+:[a-z0-9_]+", name), name


def test_every_alert_has_summary_description_severity_and_a_runbook_section() -> None:
    doc = PRODUCTION_DOC.read_text(encoding="utf-8")
    headings = {m.lower() for m in re.findall(r"^#{2,4} (\w+)\s*$", doc, re.MULTILINE)}
    for rule in alert_rules():
        name = rule["alert"]
        assert rule["labels"]["severity"] in {"warning", "critical"}, name
        notes = rule["annotations"]
        assert notes["summary"] and notes["description"], name
        assert notes["runbook_url"] == RUNBOOK + name.lower(), name
        assert name.lower() in headings, f"docs/production.md has no section for {name}"
        # No unbounded label reaches an alert.
        assert "trace_id" not in rule["expr"] and "session" not in rule["expr"], name


def _mutated(tmp_path: Path, expr: str) -> Path:
    """A copy of the rules and their tests where every alert's expression is ``expr``."""
    (tmp_path / "rules").mkdir()
    (tmp_path / "tests").mkdir()
    shutil.copy(RECORDING_RULES, tmp_path / "rules" / RECORDING_RULES.name)
    shutil.copy(RULE_TESTS, tmp_path / "tests" / RULE_TESTS.name)
    data: Any = load_yaml(ALERT_RULES)
    for group in data["groups"]:
        for rule in group["rules"]:
            rule["expr"] = expr
    (tmp_path / "rules" / ALERT_RULES.name).write_text(yaml.safe_dump(data))
    return tmp_path / "tests" / RULE_TESTS.name


@pytest.mark.parametrize(
    ("expr", "what"),
    [("vector(1) < 0", "never fires"), ('label_replace(vector(1), "x", "y", "", "")', "always")],
)
def test_a_broken_alert_fails_its_unit_tests(tmp_path: Path, expr: str, what: str) -> None:
    result = promtool("test", "rules", _mutated(tmp_path, expr))
    assert result.returncode != 0, f"an alert that {what} passed its tests"
    failed = set(re.findall(r"alertname: (\w+)", result.stdout + result.stderr))
    assert failed == {r["alert"] for r in alert_rules()}
