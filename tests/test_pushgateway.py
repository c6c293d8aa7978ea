"""`tracescore replay --pushgateway` against a real Prometheus Pushgateway on 127.0.0.1.

Needs ``/usr/bin/prometheus-pushgateway`` (Debian package ``prometheus-pushgateway``).
Without it the tests skip, unless ``TRACESCORE_REQUIRE_PROMETHEUS`` is set (as in CI),
where a missing binary is a failure.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from bundled_examples import REPLAY_ARGS
from prom_servers import binary, free_port, get, promtool, running
from tracescore.cli import main


@pytest.fixture
def pushgateway(tmp_path: Path) -> Iterator[str]:
    """A Pushgateway on a free loopback port; its base URL. Stopped at teardown."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [
        binary("prometheus-pushgateway"),
        f"--web.listen-address=127.0.0.1:{port}",
        f"--persistence.file={tmp_path / 'pushgateway.data'}",
    ]
    with running(cmd, ready_url=f"{url}/-/ready", log=tmp_path / "pushgateway.log"):
        yield url


def _samples(url: str, name: str) -> dict[frozenset[tuple[str, str]], float]:
    """Samples called ``name`` on the gateway's /metrics, keyed by their label set."""
    text = get(f"{url}/metrics").decode()
    return {
        frozenset(sample.labels.items()): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    }


def _key(**labels: str) -> frozenset[tuple[str, str]]:
    return frozenset(labels.items())


def test_replay_pushes_outcomes_scores_and_thresholds(pushgateway: str, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    result = CliRunner().invoke(
        main,
        [
            *REPLAY_ARGS,
            "--output",
            str(out),
            "--pushgateway",
            pushgateway,
            "--pushgateway-job",
            "nightly",
            "-q",
        ],
    )
    assert result.exit_code == 1, result.output  # the examples include failures (CI gate)
    records = [orjson.loads(line) for line in out.read_bytes().splitlines()]

    # Expectations from the same replay's JSON Lines output.
    outcomes = Counter((r["agent"] or "unknown", r["outcome"]) for r in records)
    scores: dict[tuple[str, str], list[float]] = {}
    for r in records:
        for name, c in r["criteria"].items():
            if c["status"] in ("PASSED", "FAILED") and c["score"] is not None:
                scores.setdefault((r["agent"] or "unknown", name), []).append(c["score"])
    thresholds = {
        name: c["threshold"]
        for r in records
        for name, c in r["criteria"].items()
        if c["threshold"] is not None
    }
    assert outcomes and scores  # the examples do score something

    job = {"job": "nightly", "instance": ""}
    pushed = _samples(pushgateway, "tracescore_invocations_total")
    assert pushed == {
        _key(**job, agent=agent, outcome=outcome): float(n)
        for (agent, outcome), n in outcomes.items()
    }
    counts = _samples(pushgateway, "tracescore_score_count")
    sums = _samples(pushgateway, "tracescore_score_sum")
    means = _samples(pushgateway, "tracescore_score_mean")
    assert set(counts) == {_key(**job, agent=a, criterion=c) for a, c in scores}
    for (agent, criterion), values in scores.items():
        key = _key(**job, agent=agent, criterion=criterion)
        assert counts[key] == len(values)
        assert math.isclose(sums[key], sum(values), abs_tol=1e-9)
        assert math.isclose(means[key], sum(values) / len(values), abs_tol=1e-9)
    assert _samples(pushgateway, "tracescore_threshold") == {
        _key(**job, criterion=name): t for name, t in thresholds.items()
    }
    # Only what a replay knows: no receiver series pushed as zeros.
    assert not _samples(pushgateway, "tracescore_spans_received_total")
    assert not _samples(pushgateway, "tracescore_queue_depth")


def test_a_second_push_replaces_the_first(pushgateway: str, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    for _ in range(2):
        args = [*REPLAY_ARGS, "-q", "--pushgateway", pushgateway, "--output", str(out)]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1, result.output
    total = len(out.read_bytes().splitlines())
    pushed = _samples(pushgateway, "tracescore_invocations_total")
    assert {dict(k)["job"] for k in pushed} == {"tracescore"}  # the default job
    assert sum(pushed.values()) == total  # replaced, not added up


def test_unreachable_pushgateway_is_one_line_and_exit_2() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    result = CliRunner().invoke(main, [*REPLAY_ARGS, "-q", "--pushgateway", url])
    assert result.exit_code == 2
    assert isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: cannot push metrics to the Pushgateway at {url}: ")
    assert "refused" in lines[0].lower()
    assert "Traceback" not in result.output


def test_a_push_that_fails_loses_neither_the_report_nor_the_outputs(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    out = tmp_path / "results.jsonl"
    result = CliRunner().invoke(main, [*REPLAY_ARGS, "--output", str(out), "--pushgateway", url])
    assert result.exit_code == 2
    assert "FAILED" in result.stdout and "PASSED" in result.stdout  # the report came first
    assert len(out.read_bytes().splitlines()) == 10  # one line per example invocation
    assert result.stderr.strip().startswith("error: cannot push metrics to the Pushgateway")


def test_malformed_pushgateway_url_is_a_config_error() -> None:
    result = CliRunner().invoke(main, [*REPLAY_ARGS, "-q", "--pushgateway", "ftp://example.org"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: pushgateway URL 'ftp://example.org': expected http(s)://host[:port]"
    )


def test_push_refused_by_the_gateway_names_the_status(pushgateway: str) -> None:
    url = f"{pushgateway}/no/such/prefix"  # the gateway answers 404 under this path
    result = CliRunner().invoke(main, [*REPLAY_ARGS, "-q", "--pushgateway", url])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: cannot push metrics to the Pushgateway at {url}: HTTP 404")


# -- a replay that fails before scoring ---------------------------------------------------

SUCCESS = "tracescore_replay_last_success_timestamp_seconds"
FAILURE = "tracescore_replay_last_failure_timestamp_seconds"


def _nothing_to_score(tmp_path: Path) -> list[str]:
    """A replay whose traces hold nothing to score (an export that came out empty)."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    return ["replay", str(empty), *REPLAY_ARGS[2:], "-q"]


def test_a_replay_that_scores_pushes_when_it_ended(pushgateway: str) -> None:
    before = time.time()
    result = CliRunner().invoke(main, [*REPLAY_ARGS, "-q", "--pushgateway", pushgateway])
    assert result.exit_code == 1, result.output  # a criterion failed: still a replay that scored
    [(labels, ended)] = _samples(pushgateway, SUCCESS).items()
    assert dict(labels)["job"] == "tracescore"
    assert before <= ended <= time.time()
    assert not _samples(pushgateway, FAILURE)


def test_a_failed_replay_marks_the_last_scores_as_no_longer_current(
    pushgateway: str, tmp_path: Path
) -> None:
    args = ["--pushgateway", pushgateway, "--pushgateway-job", "nightly"]
    assert CliRunner().invoke(main, [*REPLAY_ARGS, "-q", *args]).exit_code == 1
    scores = _samples(pushgateway, "tracescore_invocations_total")
    [succeeded] = _samples(pushgateway, SUCCESS).values()

    failed = CliRunner().invoke(main, [*_nothing_to_score(tmp_path), *args])
    assert failed.exit_code == 2
    assert failed.stderr.startswith("error: empty input: ")
    assert "Pushgateway" not in failed.stderr  # the failure itself was pushed
    # The last scores and when they were made stay; the failure is newer.
    assert _samples(pushgateway, "tracescore_invocations_total") == scores
    assert list(_samples(pushgateway, SUCCESS).values()) == [succeeded]
    [(labels, failed_at)] = _samples(pushgateway, FAILURE).items()
    assert dict(labels)["job"] == "nightly"
    assert failed_at >= succeeded

    # A config that cannot be read is a failure too (exit 2), pushed the same way.
    broken = tmp_path / "eval_config.json"
    broken.write_text("{")
    config = [*REPLAY_ARGS[:-1], str(broken), "-q", *args]
    assert CliRunner().invoke(main, config).exit_code == 2
    [failed_again] = _samples(pushgateway, FAILURE).values()
    assert failed_again >= failed_at

    # The next replay that scores replaces the whole group: no failure left.
    assert CliRunner().invoke(main, [*REPLAY_ARGS, "-q", *args]).exit_code == 1
    assert not _samples(pushgateway, FAILURE)
    [succeeded_again] = _samples(pushgateway, SUCCESS).values()
    assert succeeded_again >= succeeded


def test_a_failure_that_cannot_be_pushed_is_said_after_the_replays_own(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    result = CliRunner().invoke(main, [*_nothing_to_score(tmp_path), "--pushgateway", url])
    assert result.exit_code == 2
    first, second = result.stderr.strip().splitlines()
    assert first.startswith("error: empty input: ")
    assert second.startswith(f"error: cannot push metrics to the Pushgateway at {url}: ")


def test_a_malformed_pushgateway_url_fails_before_the_work(tmp_path: Path) -> None:
    """Checked first: neither a ten-minute replay nor its failure is wasted on it."""
    result = CliRunner().invoke(
        main, [*_nothing_to_score(tmp_path), "--pushgateway", "ftp://example.org"]
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: pushgateway URL 'ftp://example.org': expected http(s)://host[:port]"
    )


README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_readmes_replay_alerts_fire_when_they_should(tmp_path: Path) -> None:
    """The example rules of the README, as written there, through ``promtool test rules``."""
    blocks = re.findall(r"```yaml\n(.*?)```", README.read_text(), flags=re.S)
    [rules] = [block for block in blocks if "TracescoreReplayFailed" in block]
    (tmp_path / "rules.yml").write_text(rules)
    failed = (
        "The latest replay of nightly failed before scoring: its scores are from an earlier run"
    )
    nightly = {"severity": "warning", "job": "nightly"}
    tests = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1h",
                "input_series": [
                    # nightly scored at time 0; its run of hour 25 failed before scoring.
                    {"series": f'{SUCCESS}{{job="nightly",instance=""}}', "values": "0x30"},
                    {"series": f'{FAILURE}{{job="nightly",instance=""}}', "values": "_x25 90000x5"},
                    # hourly scores every hour and never fails.
                    {"series": f'{SUCCESS}{{job="hourly",instance=""}}', "values": "0+3600x30"},
                ],
                "alert_rule_test": [
                    {"eval_time": "24h", "alertname": "TracescoreReplayFailed", "exp_alerts": []},
                    {
                        "eval_time": "26h",
                        "alertname": "TracescoreReplayFailed",
                        "exp_alerts": [
                            {"exp_labels": nightly, "exp_annotations": {"summary": failed}}
                        ],
                    },
                    {"eval_time": "25h", "alertname": "TracescoreReplayStale", "exp_alerts": []},
                    {
                        "eval_time": "27h",
                        "alertname": "TracescoreReplayStale",
                        "exp_alerts": [
                            {
                                "exp_labels": nightly,
                                "exp_annotations": {
                                    "summary": "No replay of nightly has scored for 26 hours"
                                },
                            }
                        ],
                    },
                ],
            }
        ],
    }
    (tmp_path / "tests.yml").write_text(orjson.dumps(tests).decode())  # JSON is YAML
    done = promtool("test", "rules", tmp_path / "tests.yml")
    assert done.returncode == 0, done.stdout + done.stderr
