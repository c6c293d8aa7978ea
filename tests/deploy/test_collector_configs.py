"""The Collector configurations in collector_configs/ are valid and agree with tracescore.

No Collector binary runs here (none is installed, CI never executes the configs): the
files are read the way the Collector reads them (YAML, then env expansion) and checked
statically by ``collector_check``; the archive format is checked for real by reading a
sample in the file exporter's exact shape back with ``tracescore import``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from otlp_helpers import agent_logs, agent_spans, logs_to_otlp_json, spans_to_otlp_json_lines
from prometheus_client import CollectorRegistry

from tracescore.cli import main
from tracescore.cli.serve_cmd import serve_command
from tracescore.formats.sdk import from_readable_span
from tracescore.server.http import build_http_app
from tracescore.server.metrics import ReceiverMetrics
from tracescore.server.options import ServeOptions
from tracescore.server.receiver import Receiver

sys.path.insert(0, str(Path(__file__).parent))

import collector_check as cc

CONFIG_DIR = Path(__file__).resolve().parents[2] / "collector_configs"
README = CONFIG_DIR / "README.md"
CONFIGS = sorted(path.name for path in CONFIG_DIR.glob("*.yaml"))
EXPECTED = {"gateway.yaml", "gateway-k8s.yaml", "tail_sampling.yaml", "archive.yaml", "logs.yaml"}
#: Configs whose tracescore-bound exporter must be a trace-id-routed loadbalancing one.
LOADBALANCED = {"gateway.yaml", "gateway-k8s.yaml", "tail_sampling.yaml", "logs.yaml"}
REPLAY_BEGIN, REPLAY_END = "--- BEGIN replay.yaml ---", "--- END replay.yaml ---"
K8S_SERVICE = "tracescore-headless.tracescore"


def _serve_default(name: str) -> int:
    """A default of ``tracescore serve``, from the click command itself."""
    for param in serve_command.params:
        if param.name == name:
            return int(param.default)  # type: ignore[arg-type]
    raise LookupError(name)


GRPC_PORT = _serve_default("grpc_port")
HTTP_PORT = _serve_default("http_port")


@pytest.fixture(scope="module")
def served_paths() -> set[str]:
    """The POST routes of the app behind ``tracescore serve``'s HTTP port."""
    receiver = Receiver(
        object(),  # type: ignore[arg-type]  # never called: only the routes are read
        metrics=ReceiverMetrics(CollectorRegistry()),
        options=ServeOptions(),
    )
    app = build_http_app(receiver, CollectorRegistry())
    return {route.path for route in app.routes if "POST" in (route.methods or ())}  # type: ignore[attr-defined]


def _text(name: str) -> str:
    return (CONFIG_DIR / name).read_text(encoding="utf-8")


def _config(name: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    return cc.load_config(_text(name), env)


def _replay_config() -> dict[str, Any]:
    return cc.load_config(cc.commented_block(_text("archive.yaml"), REPLAY_BEGIN, REPLAY_END))


# --- every file -------------------------------------------------------------------------


def test_the_expected_configs_exist_and_serve_defaults_are_read() -> None:
    assert set(CONFIGS) == EXPECTED
    assert (GRPC_PORT, HTTP_PORT) == (4317, 4318)


@pytest.mark.parametrize("name", CONFIGS)
def test_yaml_parses_and_every_env_var_is_documented(name: str) -> None:
    text = _text(name)
    unset = _config(name)  # every variable unset: defaults apply, "" otherwise
    assert unset["service"]["pipelines"]
    names = cc.env_names(text)  # comments included: commented blocks are meant to be used
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", README.read_text(encoding="utf-8")))
    assert names <= documented, f"{name}: undocumented env vars {sorted(names - documented)}"
    assert "${env:" not in json.dumps(unset)
    _config(name, dict.fromkeys(names, "set-value"))  # and with every variable set


def test_env_expansion_follows_the_collector() -> None:
    text = "a: ${env:P:-4317}\nb: x-${env:H:-tempo}:1\nc: ${env:NOPE}\nd: ${env:E:-dflt}\n"
    text += "e: Bearer ${env:NOPE}\nf: ${env:NOPE:-}\n"
    # Set (even empty) wins over the default; unset without default is empty (null when
    # it is the whole value, as the Collector's env provider returns nothing to parse).
    assert cc.load_config(text, {"E": ""}) == {
        "a": 4317, "b": "x-tempo:1", "c": None, "d": None, "e": "Bearer ", "f": "",
    }  # fmt: skip
    assert cc.load_config(text, {"P": "9", "H": "h"}) == {
        "a": 9, "b": "x-h:1", "c": None, "d": "dflt", "e": "Bearer ", "f": "",
    }  # fmt: skip


@pytest.mark.parametrize("name", CONFIGS)
def test_pipelines_reference_defined_components_and_all_are_used(name: str) -> None:
    config = _config(name)
    assert cc.check_structure(config) == []
    assert cc.check_extensions(config, required=["health_check"]) == []


@pytest.mark.parametrize("name", CONFIGS)
def test_memory_limiter_first_and_batch_last(name: str) -> None:
    assert cc.check_processor_order(_config(name)) == []


@pytest.mark.parametrize("name", CONFIGS)
def test_otlp_receivers_listen_on_all_interfaces(name: str) -> None:
    assert cc.check_receivers_listen(_config(name)) == []


@pytest.mark.parametrize("name", CONFIGS)
def test_loadbalancing_routes_by_trace_id_to_the_serve_grpc_port(name: str) -> None:
    config = _config(name)
    assert cc.check_loadbalancing(config, grpc_port=GRPC_PORT) == []
    balanced = cc.of_type(config, "exporters", cc.LOADBALANCING)
    assert bool(balanced) == (name in LOADBALANCED)


@pytest.mark.parametrize("name", [*CONFIGS, "archive.yaml#replay"])
def test_exporters_towards_tracescore_use_its_ports_and_paths(
    name: str, served_paths: set[str]
) -> None:
    assert {"/v1/traces", "/v1/logs"} <= served_paths
    config = _replay_config() if name.endswith("#replay") else _config(name)
    problems = cc.check_tracescore_exporters(
        config, grpc_port=GRPC_PORT, http_port=HTTP_PORT, http_paths=served_paths
    )
    assert problems == []


# --- per file ----------------------------------------------------------------------------


def test_k8s_gateway_resolves_the_headless_service_and_its_comments_agree() -> None:
    config = _config("gateway-k8s.yaml")
    ((_, exporter),) = cc.of_type(config, "exporters", cc.LOADBALANCING).items()
    k8s = exporter["resolver"]["k8s"]
    assert k8s == {"service": K8S_SERVICE, "ports": [GRPC_PORT]}
    text = _text("gateway-k8s.yaml")
    assert f"hostname: {K8S_SERVICE}.svc.cluster.local" in text  # the dns alternative
    # Every mention of the Service names the same namespace.
    assert set(re.findall(r"tracescore-headless\.([a-z0-9-]+)", text)) == {"tracescore"}
    for name in ("otlp-grpc", "otlp-http", "endpointslices", "endpoints", "get, list, watch"):
        assert name in text
    assert re.search(r"namespace:\s*tracescore\b", text)
    # The non-k8s gateway is the same pipeline with the dns resolver.
    gateway = _config("gateway.yaml")
    assert gateway["service"] == config["service"]
    assert set(gateway["exporters"]) == set(config["exporters"])


def test_tail_sampling_keeps_errors_slow_runs_and_a_share_of_agent_runs() -> None:
    config = _config("tail_sampling.yaml")
    assert cc.check_tail_sampling(config) == []
    sampler = config["processors"]["tail_sampling"]
    assert cc.duration_s(sampler["decision_wait"]) >= 30
    (pipeline,) = config["service"]["pipelines"].values()
    assert pipeline["processors"] == ["memory_limiter", "tail_sampling", "batch"]
    text = _text("tail_sampling.yaml")
    for topic in ("TraceIdRatioBased", "late", "num_traces", "decision_wait"):
        assert topic in text


def test_archive_writes_rotated_json_lines_for_both_signals() -> None:
    config = _config("archive.yaml")
    assert cc.check_file_archive(config) == []
    (file_id,) = cc.of_type(config, "exporters", ["file"])
    pipes = config["service"]["pipelines"]
    assert {name for name, pipe in pipes.items() if file_id in pipe["exporters"]} == {
        "traces",
        "logs",
    }
    text = _text("archive.yaml")
    assert (
        "tracescore replay /var/lib/otelcol/archive/ --goldens goldens/ --config eval_config.json"
        in text
    )
    assert "traces-2026-11-21T10-00-00.000.jsonl" in text


def test_archive_replay_block_is_a_valid_otlpjsonfile_config() -> None:
    config = _replay_config()
    assert cc.check_structure(config) == []
    assert cc.check_processor_order(config) == []
    ((_, receiver),) = cc.of_type(config, "receivers", ["otlpjsonfile"]).items()
    assert receiver["start_at"] == "beginning"
    assert cc.byte_size(receiver["max_log_size"]) > 1024 * 1024  # above the 1 MiB default
    archive = _config("archive.yaml")
    (exporter,) = cc.of_type(archive, "exporters", ["file"]).values()
    directory = str(Path(exporter["path"]).parent)
    assert all(pattern.startswith(directory + "/") for pattern in receiver["include"])
    assert cc.of_type(config, "exporters", cc.OTLP_HTTP)


def test_archived_json_lines_under_rotated_names_read_back_with_tracescore(tmp_path: Path) -> None:
    """The strong check: the file exporter's output shape, under its rotated names."""
    (exporter,) = cc.of_type(_config("archive.yaml"), "exporters", ["file"]).values()
    live = Path(exporter["path"]).name
    spans = agent_spans(3)  # real SDK spans, 3 runs of 4 spans
    lines = spans_to_otlp_json_lines(spans, batch_size=5)  # runs split across lines
    first = json.loads(lines[0])
    span = first["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert re.fullmatch(r"[0-9a-f]{32}", span["traceId"])  # hex ids, camelCase keys
    assert {"spanId", "startTimeUnixNano"} <= set(span)
    archive = tmp_path / "archive"
    archive.mkdir()
    (archive / cc.rotated_name(live)).write_text(lines[0] + "\n")
    (archive / cc.rotated_name(live, "2026-11-21T11-00-00.000", "size")).write_text(lines[1] + "\n")
    (archive / live).write_text("\n".join([*lines[2:], logs_to_otlp_json(agent_logs())]) + "\n")
    assert sorted(p.name for p in archive.iterdir())[-1] == live  # rotated ones sort first

    out = tmp_path / "runs.jsonl"
    result = CliRunner().invoke(
        main, ["import", str(archive), "-o", str(out), "--format", "jsonl", "-q"]
    )
    assert result.exit_code == 0, result.output
    runs = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(run["trace_id"] for run in runs) == sorted(
        {from_readable_span(s).trace_id for s in spans}
    )
    assert {run["agent"] for run in runs} == {"weather_agent"}


def test_logs_config_sends_traces_and_logs_through_one_trace_id_balancer() -> None:
    config = _config("logs.yaml")
    (balancer,) = cc.of_type(config, "exporters", cc.LOADBALANCING)
    assert config["exporters"][balancer]["routing_key"] == "traceID"
    pipes = config["service"]["pipelines"]
    assert {name for name, pipe in pipes.items() if balancer in pipe["exporters"]} == {
        "traces",
        "logs",
    }


# --- the checker rejects broken configs ---------------------------------------------------

BROKEN_BASE = """
extensions: {health_check: {}}
receivers: {otlp: {protocols: {grpc: {endpoint: "0.0.0.0:4317"}}}}
processors:
  memory_limiter: {check_interval: 1s, limit_percentage: 80, spike_limit_percentage: 20}
  batch: {}
exporters:
  loadbalancing:
    routing_key: traceID
    protocol: {otlp: {tls: {insecure: true}}}
    resolver: {dns: {hostname: tracescore, port: 4317}}
service:
  extensions: [health_check]
  pipelines:
    traces: {receivers: [otlp], processors: [memory_limiter, batch], exporters: [loadbalancing]}
"""


def _broken(old: str, new: str) -> dict[str, Any]:
    assert old in BROKEN_BASE
    return cc.load_config(BROKEN_BASE.replace(old, new))


def test_the_base_of_the_negative_tests_passes() -> None:
    config = cc.load_config(BROKEN_BASE)
    assert cc.check_structure(config) == []
    assert cc.check_processor_order(config) == []
    assert cc.check_loadbalancing(config, grpc_port=GRPC_PORT) == []


def test_rejects_an_undefined_pipeline_component() -> None:
    config = _broken("exporters: [loadbalancing]", "exporters: [loadbalancing, otlp/tempo]")
    assert cc.check_structure(config) == ["pipeline 'traces': exporter 'otlp/tempo' is not defined"]
    config = _broken("extensions: [health_check]", "extensions: [health_check, pprof]")
    assert cc.check_structure(config) == ["service.extensions: 'pprof' is not defined"]


def test_rejects_memory_limiter_not_first_and_batch_not_last() -> None:
    config = _broken("[memory_limiter, batch]", "[batch, memory_limiter]")
    assert cc.check_processor_order(config) == [
        "pipeline 'traces': memory_limiter must be the first processor",
        "pipeline 'traces': memory_limiter appears after another processor",
        "pipeline 'traces': batch must be the last processor",
    ]
    assert cc.check_processor_order(_broken("[memory_limiter, batch]", "[batch]"))


def test_rejects_unused_unknown_and_misused_components() -> None:
    unused = _broken("  batch: {}\n", "  batch: {}\n  tail_sampling: {}\n")
    assert cc.check_structure(unused) == ["processors: 'tail_sampling' is defined but not used"]
    assert cc.check_structure(unused, allow_unused={"tail_sampling": "documented only"}) == []
    unknown = _broken("  batch: {}\n", "  batch: {}\n  magic: {}\n")
    assert "processors: 'magic' is not a known contrib processor type" in cc.check_structure(
        unknown
    )
    connector = _broken(
        "exporters: [loadbalancing]}",
        "exporters: [loadbalancing, spanmetrics]}\nconnectors: {spanmetrics: {}}",
    )
    assert cc.check_structure(connector) == [
        "connector 'spanmetrics' must be an exporter in one pipeline and a receiver in another"
    ]
    bad_pipeline = _broken("    traces: {", "    spans: {")
    assert "pipeline 'spans': id must be traces|metrics|logs[/name]" in cc.check_structure(
        bad_pipeline
    )


def test_rejects_loadbalancing_off_trace_id_or_off_the_grpc_port() -> None:
    assert cc.check_loadbalancing(
        _broken("routing_key: traceID", "routing_key: service"), grpc_port=GRPC_PORT
    ) == ["loadbalancing: routing_key must be traceID"]
    assert cc.check_loadbalancing(_broken("port: 4317", "port: 4318"), grpc_port=GRPC_PORT) == [
        "loadbalancing: dns port 4318 is not tracescore's --grpc-port 4317"
    ]
    k8s = _broken(
        "{dns: {hostname: tracescore, port: 4317}}", "{k8s: {service: x.tracescore, ports: [4318]}}"
    )
    assert cc.check_loadbalancing(k8s, grpc_port=GRPC_PORT)


def test_rejects_otlphttp_to_tracescore_on_a_wrong_port_or_path(served_paths: set[str]) -> None:
    def problems(endpoint: str, extra: str = "") -> list[str]:
        config = _broken(
            "exporters: [loadbalancing]}",
            "exporters: [loadbalancing, otlphttp/tracescore]}",
        )
        config["exporters"]["otlphttp/tracescore"] = {"endpoint": endpoint}
        if extra:
            config["exporters"]["otlphttp/tracescore"]["traces_endpoint"] = extra
        return cc.check_tracescore_exporters(
            config, grpc_port=GRPC_PORT, http_port=HTTP_PORT, http_paths=served_paths
        )

    assert problems("http://tracescore:4318") == []
    assert problems("http://tracescore:4317")
    assert problems("http://tracescore:4318/otlp")  # -> /otlp/v1/traces, not served
    assert problems("http://tracescore:4318", extra="http://tracescore:4318/traces")


def test_rejects_undocumented_env_vars_and_bad_tail_sampling() -> None:
    text = "exporters: {otlp: {endpoint: '${env:NOT_IN_README:-x:4317}'}}\n"
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", README.read_text(encoding="utf-8")))
    assert cc.env_names(text) - documented == {"NOT_IN_README"}
    config = _config("tail_sampling.yaml")
    del config["processors"]["tail_sampling"]["decision_wait"]
    config["processors"]["tail_sampling"]["policies"] = [
        p for p in config["processors"]["tail_sampling"]["policies"] if p["type"] != "and"
    ]
    assert cc.check_tail_sampling(config) == [
        "tail_sampling: decision_wait is not set",
        "tail_sampling: no `and` policy of an invoke_agent filter with a probabilistic share",
    ]
    archive = _config("archive.yaml")
    archive["exporters"]["file/archive"]["compression"] = "zstd"
    assert cc.check_file_archive(archive) == [
        "file/archive: compression turns JSON Lines into length-prefixed frames"
        " (read on one process, not split across CPUs)"
    ]
