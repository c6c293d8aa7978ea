"""A static checker for OpenTelemetry Collector (contrib) configurations.

No Collector runs in the tests: this module reads a configuration the way the Collector
does as far as the checks need (YAML, then ``${env:NAME:-default}`` expansion on the
parsed values) and reports what would make the Collector refuse it or route data wrong.
Each ``check_*`` function returns a list of problems (empty when the config is fine), so
the negative tests can assert that a broken config is rejected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import yaml

#: ``${env:NAME}`` or ``${env:NAME:-default}`` (the Collector's env provider syntax).
ENV_REF = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

KINDS = ("receivers", "processors", "exporters", "connectors", "extensions")
SIGNALS = frozenset({"traces", "metrics", "logs"})
_PIPELINE_ID = re.compile(r"^(traces|metrics|logs)(/[^/\s]+)?$")
_COMPONENT_ID = re.compile(r"^([a-z][a-z0-9_]*)(/[^/\s]+)?$")

#: Component types of the contrib distribution these configs may use, per kind. Both the
#: classic names and the lower_snake_case names of 2026 releases (deprecated aliases kept).
KNOWN_TYPES: Mapping[str, frozenset[str]] = {
    "receivers": frozenset(
        {"otlp", "otlpjsonfile", "otlp_json_file", "filelog", "hostmetrics", "prometheus"}
    ),
    "processors": frozenset(
        {
            "memory_limiter",
            "batch",
            "tail_sampling",
            "probabilistic_sampler",
            "filter",
            "attributes",
            "resource",
            "resourcedetection",
            "transform",
            "k8sattributes",
            "groupbytrace",
            "redaction",
        }
    ),
    "exporters": frozenset(
        {
            "otlp",
            "otlp_grpc",
            "otlphttp",
            "otlp_http",
            "loadbalancing",
            "load_balancing",
            "file",
            "debug",
            "prometheus",
            "prometheusremotewrite",
        }
    ),
    "connectors": frozenset({"spanmetrics", "span_metrics", "servicegraph", "forward"}),
    "extensions": frozenset({"health_check", "pprof", "zpages", "file_storage"}),
}
LOADBALANCING = frozenset({"loadbalancing", "load_balancing"})
OTLP_GRPC = frozenset({"otlp", "otlp_grpc"})
OTLP_HTTP = frozenset({"otlphttp", "otlp_http"})
#: What the otlphttp exporter appends to its ``endpoint``, per signal.
OTLP_HTTP_PATHS = {"traces": "/v1/traces", "logs": "/v1/logs", "metrics": "/v1/metrics"}

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


# --- reading ------------------------------------------------------------------------------


def env_names(text: str) -> set[str]:
    """Every variable named by an env reference in ``text`` (comments included)."""
    return {match.group(1) for match in ENV_REF.finditer(text)}


def expand_env(value: Any, env: Mapping[str, str]) -> Any:
    """``value`` (parsed YAML) with env references expanded as the Collector does.

    A set variable gives its value (even if empty), an unset one its default, else "".
    A string that is one whole reference is replaced by the value parsed as YAML (so
    ``port: ${env:P:-4317}`` is the integer 4317, and an empty value is null, except an
    explicitly empty default, which stays ""); inside a longer string it is spliced in.
    """
    if isinstance(value, dict):
        return {key: expand_env(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [expand_env(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def resolve(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        return default if default is not None else ""

    whole = ENV_REF.fullmatch(value)
    if whole:
        name, default = whole.group(1), whole.group(2)
        if name not in env and default == "":
            return ""
        return yaml.safe_load(resolve(whole))
    return ENV_REF.sub(resolve, value)


def load_config(text: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Parse a Collector configuration and expand its env references."""
    config = yaml.safe_load(text)
    if not isinstance(config, dict):
        raise ValueError("a Collector configuration is a YAML mapping")
    expanded: dict[str, Any] = expand_env(config, env or {})
    return expanded


def commented_block(text: str, begin: str, end: str) -> str:
    """The lines between two marker comments, with their leading ``# `` removed."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if begin in line)
    stop = next(i for i, line in enumerate(lines) if end in line and i > start)
    block = []
    for line in lines[start + 1 : stop]:
        stripped = line.lstrip()
        if not stripped.startswith("#"):
            raise ValueError(f"not a comment inside the block: {line!r}")
        block.append(stripped[2:] if stripped.startswith("# ") else stripped[1:])
    return "\n".join(block) + "\n"


def component_type(component_id: str) -> str:
    """``type`` of a component id ``type[/name]``."""
    return component_id.split("/", 1)[0]


def duration_s(value: Any) -> float:
    """A Go duration (``1s``, ``1m30s``, ``250ms``) in seconds."""
    text = str(value)
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration: {value!r}")
    return sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts)


def byte_size(value: Any) -> int:
    """A stanza byte size (``1048576``, ``64MiB``, ``1MB``) in bytes."""
    if isinstance(value, int):
        return value
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kKmMgG]i?[bB])?", str(value))
    if not match:
        raise ValueError(f"not a byte size: {value!r}")
    unit = (match.group(2) or "").lower()
    base = 1024 if unit.endswith("ib") else 1000
    power = {"": 0, "k": 1, "m": 2, "g": 3}[unit[:1]]
    return int(float(match.group(1)) * base**power)


def rotated_name(path: str, stamp: str = "2026-11-21T10-00-00.000", reason: str = "") -> str:
    """The name the file exporter gives ``path`` when rotating it: the timestamp goes
    before the extension (timberjack-based releases may append ``-<reason>``)."""
    pure = PurePosixPath(path)
    suffix = f"-{stamp}" + (f"-{reason}" if reason else "")
    return pure.stem + suffix + pure.suffix


# --- checks -------------------------------------------------------------------------------


def pipelines(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    service = config.get("service") or {}
    return dict(service.get("pipelines") or {})


def components(config: Mapping[str, Any], kind: str) -> dict[str, Any]:
    return dict(config.get(kind) or {})


def of_type(config: Mapping[str, Any], kind: str, types: Iterable[str]) -> dict[str, Any]:
    wanted = set(types)
    return {
        cid: cfg or {}
        for cid, cfg in components(config, kind).items()
        if component_type(cid) in wanted
    }


def check_structure(
    config: Mapping[str, Any], *, allow_unused: Mapping[str, str] | None = None
) -> list[str]:
    """Pipelines exist and reference only defined components; every defined one is used.

    ``allow_unused`` maps component ids that may stay unused to the reason why.
    """
    problems: list[str] = []
    allow_unused = allow_unused or {}
    defined = {kind: components(config, kind) for kind in KINDS}
    for kind, comps in defined.items():
        for cid in comps:
            match = _COMPONENT_ID.match(str(cid))
            if not match:
                problems.append(f"{kind}: bad component id {cid!r}")
            elif match.group(1) not in KNOWN_TYPES[kind]:
                problems.append(f"{kind}: {cid!r} is not a known contrib {kind[:-1]} type")
    unknown_sections = set(config) - {*KINDS, "service"}
    if unknown_sections:
        problems.append(f"unknown top-level keys: {sorted(unknown_sections)}")

    service = config.get("service")
    if not isinstance(service, dict):
        return [*problems, "no service section"]
    pipes = pipelines(config)
    if not pipes:
        problems.append("service.pipelines is empty")

    used: dict[str, set[str]] = {kind: set() for kind in KINDS}
    connector_as_exporter: set[str] = set()
    connector_as_receiver: set[str] = set()
    for name, maybe_pipe in pipes.items():
        if not _PIPELINE_ID.match(str(name)):
            problems.append(f"pipeline {name!r}: id must be traces|metrics|logs[/name]")
        pipe = maybe_pipe or {}
        unknown = set(pipe) - {"receivers", "processors", "exporters"}
        if unknown:
            problems.append(f"pipeline {name!r}: unknown keys {sorted(unknown)}")
        if not pipe.get("receivers"):
            problems.append(f"pipeline {name!r}: no receivers")
        if not pipe.get("exporters"):
            problems.append(f"pipeline {name!r}: no exporters")
        # A connector may stand where a receiver or an exporter does; processors cannot.
        roles = (
            ("receivers", connector_as_receiver),
            ("processors", None),
            ("exporters", connector_as_exporter),
        )
        for kind, as_connector in roles:
            for cid in pipe.get(kind) or []:
                if as_connector is not None and cid in defined["connectors"]:
                    as_connector.add(cid)
                    used["connectors"].add(cid)
                elif cid in defined[kind]:
                    used[kind].add(cid)
                else:
                    problems.append(f"pipeline {name!r}: {kind[:-1]} {cid!r} is not defined")
        for kind in ("receivers", "processors", "exporters"):
            ids = pipe.get(kind) or []
            if len(ids) != len(set(ids)):
                problems.append(f"pipeline {name!r}: duplicate {kind}")

    for cid in service.get("extensions") or []:
        if cid in defined["extensions"]:
            used["extensions"].add(cid)
        else:
            problems.append(f"service.extensions: {cid!r} is not defined")
    for cid in defined["connectors"]:
        if cid in used["connectors"] and not (
            cid in connector_as_exporter and cid in connector_as_receiver
        ):
            problems.append(
                f"connector {cid!r} must be an exporter in one pipeline and a receiver in another"
            )
    for kind, comps in defined.items():
        for cid in comps:
            if cid not in used[kind] and cid not in allow_unused:
                problems.append(f"{kind}: {cid!r} is defined but not used")
    return problems


def check_processor_order(config: Mapping[str, Any]) -> list[str]:
    """``memory_limiter`` first in every pipeline; ``batch`` last where present."""
    problems = []
    for name, pipe in pipelines(config).items():
        types = [component_type(cid) for cid in (pipe or {}).get("processors") or []]
        if not types or types[0] != "memory_limiter":
            problems.append(f"pipeline {name!r}: memory_limiter must be the first processor")
        if "memory_limiter" in types[1:]:
            problems.append(f"pipeline {name!r}: memory_limiter appears after another processor")
        if "batch" in types and types[-1] != "batch":
            problems.append(f"pipeline {name!r}: batch must be the last processor")
    for cid, cfg in of_type(config, "processors", ["memory_limiter"]).items():
        if duration_s(cfg.get("check_interval", "0s")) <= 0:
            problems.append(f"{cid}: check_interval must be set (1s)")
        if not (cfg.get("limit_percentage") or cfg.get("limit_mib")):
            problems.append(f"{cid}: no memory limit")
    return problems


def check_receivers_listen(config: Mapping[str, Any]) -> list[str]:
    """OTLP receivers bind all interfaces (the Collector's default is localhost)."""
    problems = []
    for cid, cfg in of_type(config, "receivers", ["otlp"]).items():
        protocols = cfg.get("protocols") or {}
        if not protocols:
            problems.append(f"{cid}: no protocols")
        for proto, settings in protocols.items():
            endpoint = str((settings or {}).get("endpoint", ""))
            if not endpoint.startswith("0.0.0.0:"):
                problems.append(f"{cid}.{proto}: endpoint {endpoint!r} is not 0.0.0.0:<port>")
    return problems


def _port(hostport: str) -> int | None:
    host, sep, port = hostport.rpartition(":")
    return int(port) if sep and host and port.isdigit() else None


def check_loadbalancing(config: Mapping[str, Any], *, grpc_port: int) -> list[str]:
    """Every loadbalancing exporter routes by trace id to ``grpc_port``."""
    problems = []
    for cid, cfg in of_type(config, "exporters", LOADBALANCING).items():
        if cfg.get("routing_key") != "traceID":
            problems.append(f"{cid}: routing_key must be traceID")
        otlp = (cfg.get("protocol") or {}).get("otlp")
        if not isinstance(otlp, dict):
            problems.append(f"{cid}: protocol.otlp is missing")
        elif "endpoint" in otlp:
            problems.append(f"{cid}: protocol.otlp.endpoint is overridden by the resolver")
        resolver = cfg.get("resolver") or {}
        kinds = set(resolver) & {"static", "dns", "k8s", "aws_cloud_map"}
        if len(kinds) != 1 or set(resolver) - kinds:
            problems.append(f"{cid}: resolver must have exactly one of static, dns, k8s")
            continue
        (kind,) = kinds
        settings = resolver[kind] or {}
        if kind == "dns":
            if not settings.get("hostname"):
                problems.append(f"{cid}: dns.hostname is empty")
            ports = [settings.get("port")]
        elif kind == "k8s":
            if not settings.get("service"):
                problems.append(f"{cid}: k8s.service is empty")
            ports = list(settings.get("ports") or [None])
        elif kind == "static":
            ports = [_port(str(host)) for host in settings.get("hostnames") or [None]]
        else:
            ports = [settings.get("port")]
        for port in ports:
            if port is None or int(port) != grpc_port:
                problems.append(
                    f"{cid}: {kind} port {port!r} is not tracescore's --grpc-port {grpc_port}"
                )
    return problems


def _towards_tracescore(cid: str, endpoint: str) -> bool:
    return "tracescore" in cid or "tracescore" in endpoint


def check_tracescore_exporters(
    config: Mapping[str, Any], *, grpc_port: int, http_port: int, http_paths: Iterable[str]
) -> list[str]:
    """OTLP exporters aimed at tracescore use its ports, and paths its HTTP app serves."""
    problems = []
    served = set(http_paths)
    for cid, cfg in of_type(config, "exporters", OTLP_GRPC).items():
        endpoint = str(cfg.get("endpoint", ""))
        hostport = endpoint.rpartition("://")[2]
        if _towards_tracescore(cid, endpoint) and _port(hostport) != grpc_port:
            problems.append(f"{cid}: {endpoint!r} is not tracescore's gRPC port {grpc_port}")
    for cid, cfg in of_type(config, "exporters", OTLP_HTTP).items():
        endpoint = str(cfg.get("endpoint", ""))
        if not _towards_tracescore(cid, endpoint):
            continue
        urls = {}
        if endpoint:
            base = urlsplit(endpoint)
            if base.port != http_port:
                problems.append(f"{cid}: {endpoint!r} is not tracescore's HTTP port {http_port}")
            prefix = base.path.rstrip("/")
            urls = {signal: prefix + path for signal, path in OTLP_HTTP_PATHS.items()}
        for signal in OTLP_HTTP_PATHS:
            explicit = cfg.get(f"{signal}_endpoint")
            if explicit:
                parts = urlsplit(str(explicit))
                if parts.port != http_port:
                    problems.append(f"{cid}: {signal}_endpoint is not on port {http_port}")
                urls[signal] = parts.path
        for signal, pipe in pipelines(config).items():
            if cid in ((pipe or {}).get("exporters") or []):
                path = urls.get(component_type(signal))
                if path not in served:
                    problems.append(f"{cid}: {signal} would be sent to {path!r}, not served")
    return problems


def check_extensions(config: Mapping[str, Any], *, required: Iterable[str]) -> list[str]:
    enabled = {component_type(cid) for cid in (config.get("service") or {}).get("extensions") or []}
    return [f"extension {name} is not enabled" for name in required if name not in enabled]


def check_tail_sampling(config: Mapping[str, Any]) -> list[str]:
    """Errors, slow runs and a share of agent runs are kept; decision_wait is set."""
    samplers = of_type(config, "processors", ["tail_sampling"])
    if len(samplers) != 1:
        return [f"expected one tail_sampling processor, found {len(samplers)}"]
    ((cid, cfg),) = samplers.items()
    problems = []
    if "decision_wait" not in cfg:
        problems.append(f"{cid}: decision_wait is not set")
    elif duration_s(cfg["decision_wait"]) < 30:
        problems.append(f"{cid}: decision_wait shorter than an agent run (< 30s)")
    for key in ("num_traces", "expected_new_traces_per_sec"):
        if not isinstance(cfg.get(key), int) or cfg[key] <= 0:
            problems.append(f"{cid}: {key} must be a positive integer")

    def walk(policies: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
        names = [p.get("name") for p in policies]
        if len(names) != len(set(names)) or not all(names):
            problems.append(f"{where}: policy names must be present and unique")
        flat = []
        for policy in policies:
            ptype: Any = policy.get("type")  # may be missing: then its block is too
            if ptype not in ("always_sample",) and not isinstance(policy.get(ptype), dict):
                problems.append(f"{where}: policy {policy.get('name')!r} lacks its {ptype!r} block")
                continue
            flat.append(policy)
        return flat

    top = walk(cfg.get("policies") or [], cid)
    by_type = {p["type"]: p for p in top}
    status = by_type.get("status_code", {}).get("status_code", {})
    if "ERROR" not in (status.get("status_codes") or []):
        problems.append(f"{cid}: no status_code policy keeping ERROR")
    if not by_type.get("latency", {}).get("latency", {}).get("threshold_ms"):
        problems.append(f"{cid}: no latency policy with threshold_ms")
    agent_share = False
    for policy in top:
        if policy["type"] != "and":
            continue
        subs = walk(policy["and"].get("and_sub_policy") or [], f"{cid}.{policy['name']}")
        types = {sub["type"]: sub for sub in subs}
        attr = types.get("string_attribute", {}).get("string_attribute", {})
        ottl = types.get("ottl_condition", {}).get("ottl_condition", {})
        filters = attr.get("key") == "gen_ai.operation.name" and "invoke_agent" in (
            attr.get("values") or []
        )
        filters = filters or any("invoke_agent" in cond for cond in ottl.get("span") or [])
        share = types.get("probabilistic", {}).get("probabilistic", {})
        percentage = share.get("sampling_percentage")
        if filters and isinstance(percentage, int | float) and 0 < percentage <= 100:
            agent_share = True
    if not agent_share:
        problems.append(
            f"{cid}: no `and` policy of an invoke_agent filter with a probabilistic share"
        )
    return problems


def check_file_archive(config: Mapping[str, Any]) -> list[str]:
    """File exporters write OTLP JSON Lines (json, uncompressed), rotated, for replay."""
    files = of_type(config, "exporters", ["file"])
    if not files:
        return ["no file exporter"]
    problems = []
    for cid, cfg in files.items():
        if cfg.get("format", "json") != "json":
            problems.append(f"{cid}: format must be json (JSON Lines)")
        if cfg.get("compression"):
            problems.append(
                f"{cid}: compression turns JSON Lines into length-prefixed frames"
                " (read on one process, not split across CPUs)"
            )
        if not str(cfg.get("path", "")).endswith(".jsonl"):
            problems.append(f"{cid}: path should end in .jsonl")
        rotation = cfg.get("rotation")
        if not isinstance(rotation, dict) or not {
            "max_megabytes",
            "max_days",
            "max_backups",
        } <= set(rotation):
            problems.append(f"{cid}: rotation needs max_megabytes, max_days and max_backups")
        if cfg.get("append") and rotation is not None:
            problems.append(f"{cid}: append cannot be combined with rotation")
        if duration_s(cfg.get("flush_interval", "0s")) <= 0:
            problems.append(f"{cid}: flush_interval is not set")
    return problems
