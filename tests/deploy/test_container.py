"""The container and deployment files, checked by parsing (no Docker or Kubernetes here).

deploy/Dockerfile, .dockerignore, deploy/docker-compose.yml (+ tempo and tracescore
settings), deploy/k8s/*.yaml. Facts are read from the code rather than repeated: serve's
default ports and drain timeout from the click command, the HTTP routes from the Starlette
app, the console script from pyproject.toml, settings through ``load_settings``. Each
checker returns a list of problems, so the negative tests can show it catches a break.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import re
import shlex
import sys
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import click
import pytest
import yaml
from prometheus_client import CollectorRegistry
from starlette.routing import Route

from tracescore.cli import main as cli_main
from tracescore.cli.serve_cmd import serve_command
from tracescore.server.http import build_http_app
from tracescore.settings import Settings, load_settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
DOCKERFILE = DEPLOY / "Dockerfile"
COMPOSE = DEPLOY / "docker-compose.yml"
GATEWAY = ROOT / "collector_configs" / "gateway.yaml"
PROMETHEUS_YML = DEPLOY / "prometheus" / "prometheus.yml"

SERVE_DEFAULTS: dict[str, Any] = {p.name: p.default for p in serve_command.params if p.name}
HTTP_PORT: int = SERVE_DEFAULTS["http_port"]
GRPC_PORT: int = SERVE_DEFAULTS["grpc_port"]
NAME_LABEL = {"app.kubernetes.io/name": "tracescore"}
COMPOSE_SERVICES = {"agent", "otel-collector", "tracescore", "prometheus", "grafana", "tempo"}


def _routes() -> dict[str, set[str]]:
    app = build_http_app(None, CollectorRegistry())  # type: ignore[arg-type]  # routes only
    return {r.path: set(r.methods or ()) for r in app.routes if isinstance(r, Route)}


ROUTES = _routes()


# -- shared helpers -----------------------------------------------------------------------


def parse_cli(args: list[str]) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """Parse a ``tracescore`` argv like click would (nothing runs, nothing is read).

    Returns the group's options, the command name and the command's parameters. Raises
    click's UsageError for unknown options, e.g. ``--settings`` after the command.
    """
    ctx = click.Context(cli_main, info_name="tracescore")
    opts, rest, _ = cli_main.make_parser(ctx).parse_args(args=list(args))
    name, command, sub_args = cli_main.resolve_command(ctx, rest)
    assert name is not None and command is not None
    sub = command.make_context(name, sub_args, parent=ctx)
    return opts, name, sub.params


def effective_drain_timeout(args: list[str], settings: Settings | None) -> float:
    """--drain-timeout as serve would use it: argv, else the settings file, else the default."""
    _, _, params = parse_cli(args)
    if "--drain-timeout" in args or any(a.startswith("--drain-timeout=") for a in args):
        return float(params["drain_timeout"])
    if settings is not None and settings.serve.drain_timeout_s is not None:
        return settings.serve.drain_timeout_s
    return float(SERVE_DEFAULTS["drain_timeout"])


def labels_match(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def port_of(endpoint: str) -> int:
    match = re.search(r":(\d+)/?$", endpoint)
    assert match, f"no port in {endpoint!r}"
    return int(match.group(1))


# -- Dockerfile ---------------------------------------------------------------------------


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs: comments dropped, continuation lines joined."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):  # a comment inside a continued instruction
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        keyword, _, rest = full.partition(" ")
        out.append((keyword.upper(), rest.strip()))
    return out


def dockerfile_stages(text: str) -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for keyword, rest in dockerfile_instructions(text):
        if keyword == "FROM":
            stages.append([])
        assert stages, "instruction before the first FROM"
        stages[-1].append((keyword, rest))
    return stages


def exec_form(rest: str) -> list[str]:
    assert rest.startswith("["), f"not exec (JSON) form: {rest}"
    value = json.loads(rest)
    assert isinstance(value, list)
    return value


def split_flags(rest: str) -> tuple[dict[str, str], list[str]]:
    """``--from=builder a b c`` -> ({"from": "builder"}, ["a", "b", "c"])."""
    flags: dict[str, str] = {}
    words = shlex.split(rest)
    while words and words[0].startswith("--"):
        key, _, value = words.pop(0)[2:].partition("=")
        flags[key] = value
    return flags, words


def dockerignore_patterns() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]


def ignored(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore drops ``path`` (or one of its parents); no ``!`` patterns."""
    parts = PurePosixPath(path).parts
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        assert not pattern.startswith("!"), "negated patterns are not handled here"
        pat = pattern.strip("/")
        for cand in candidates:
            if fnmatch.fnmatch(cand, pat):
                return True
            if pat.startswith("**/") and any(
                fnmatch.fnmatch(part, pat[3:]) for part in PurePosixPath(cand).parts[-1:]
            ):
                return True
    return False


def dockerfile_problems(text: str) -> list[str]:
    problems: list[str] = []
    stages = dockerfile_stages(text)
    if len(stages) < 2:
        problems.append(f"not multi-stage: {len(stages)} FROM")
        return problems
    final = stages[-1]
    first = dict(stages[0][:1])
    if not first["FROM"].startswith("python:3.11-slim"):
        problems.append(f"builder is not python:3.11-slim: {first['FROM']}")
    if not any(k == "RUN" and "pip wheel --no-deps" in r for k, r in stages[0]):
        problems.append("builder does not run `pip wheel --no-deps`")
    if not final[0][1].startswith("python:3.11-slim"):
        problems.append(f"runtime is not python:3.11-slim: {final[0][1]}")
    users = [r for k, r in final if k == "USER"]
    if not users:
        problems.append("final stage has no USER")
    else:
        uid = users[-1].split(":")[0]
        if not uid.isdigit() or int(uid) == 0:
            problems.append(f"final USER is not a numeric non-root uid: {users[-1]}")
    runs = " ".join(r for k, r in final if k == "RUN")
    for tool in ("gcc", "build-essential", "apt-get install", "curl"):
        if tool in runs:
            problems.append(f"runtime stage installs {tool}")
    env = " ".join(r for k, r in final if k == "ENV")
    for var in ("PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"):
        if var not in env:
            problems.append(f"runtime ENV lacks {var}")
    exposed = {int(p.split("/")[0]) for k, r in final if k == "EXPOSE" for p in r.split()}
    if exposed != {GRPC_PORT, HTTP_PORT}:
        problems.append(f"EXPOSE {sorted(exposed)} != serve's default ports")
    checks = [r for k, r in final if k == "HEALTHCHECK"]
    if len(checks) != 1:
        problems.append("final stage needs exactly one HEALTHCHECK")
    else:
        url = re.search(r"http://127\.0\.0\.1:(\d+)(/[\w/]*)", checks[0])
        if not url or int(url.group(1)) != HTTP_PORT or url.group(2) != "/healthz":
            problems.append(f"HEALTHCHECK does not probe 127.0.0.1:{HTTP_PORT}/healthz")
        elif "urllib" not in checks[0]:
            problems.append("HEALTHCHECK should use python's urllib (no curl in slim)")
    stop = [r for k, r in final if k == "STOPSIGNAL"]
    if stop != ["SIGTERM"]:
        problems.append(f"STOPSIGNAL {stop}")
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    entry = [r for k, r in final if k == "ENTRYPOINT"]
    if not entry or exec_form(entry[-1]) != ["tracescore"] or "tracescore" not in scripts:
        problems.append(f"ENTRYPOINT {entry} is not the console script {sorted(scripts)}")
    cmd = [r for k, r in final if k == "CMD"]
    if not cmd or exec_form(cmd[-1]) != ["serve", "--host", "0.0.0.0"]:
        problems.append(f"CMD {cmd}")
    stage_names = {r.split()[-1] for k, r in (s[0] for s in stages) if " AS " in r.upper()}
    patterns = dockerignore_patterns()
    for stage in stages:
        for keyword, rest in stage:
            if keyword not in ("COPY", "ADD"):
                continue
            flags, words = split_flags(rest)
            if "from" in flags:
                if flags["from"] not in stage_names:
                    problems.append(f"COPY --from={flags['from']}: no such stage")
                continue
            for source in words[:-1]:
                if not list(ROOT.glob(source.rstrip("/") or ".")):
                    problems.append(f"COPY source {source} does not exist in the repo")
                elif ignored(source.rstrip("/"), patterns):
                    problems.append(f"COPY source {source} is excluded by .dockerignore")
    return problems


def test_dockerfile() -> None:
    assert dockerfile_problems(DOCKERFILE.read_text()) == []


def test_dockerfile_cmd_parses_with_the_cli() -> None:
    final = dockerfile_stages(DOCKERFILE.read_text())[-1]
    cmd = exec_form(next(r for k, r in reversed(final) if k == "CMD"))
    _, name, params = parse_cli(cmd)
    assert name == "serve"
    assert params["host"] == "0.0.0.0"


def test_dockerignore_keeps_caches_and_venvs_out() -> None:
    patterns = dockerignore_patterns()
    for path in (".git", ".venv", ".pytest_cache", ".mypy_cache", "src/tracescore/__pycache__"):
        assert ignored(path, patterns), path
    for path in ("pyproject.toml", "README.md", "src/tracescore/cli/app.py"):
        assert not ignored(path, patterns), path


def test_console_script_is_the_cli() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["tracescore"] == "tracescore.cli:run"


# -- docker compose -----------------------------------------------------------------------


def load_compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def env_of(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


def bind_mounts(service: dict[str, Any]) -> list[tuple[str, str]]:
    """(host path relative to the compose file, container path) of each bind mount."""
    mounts: list[tuple[str, str]] = []
    for volume in service.get("volumes") or []:
        if isinstance(volume, dict):
            if volume.get("type") == "bind":
                mounts.append((volume["source"], volume["target"]))
            continue
        source, target = volume.split(":")[:2]
        if source.startswith((".", "/", "~")):
            mounts.append((source, target))
    return mounts


def host_path(service: dict[str, Any], container_path: str) -> Path | None:
    """The host file behind a container path, through the service's bind mounts."""
    wanted = PurePosixPath(container_path)
    for source, target in bind_mounts(service):
        try:
            rel = wanted.relative_to(target)
        except ValueError:
            continue
        return (COMPOSE.parent / source / rel).resolve()
    return None


def depends_on(service: dict[str, Any]) -> dict[str, str]:
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return dict.fromkeys(deps, "service_started")
    return {name: (spec or {}).get("condition", "service_started") for name, spec in deps.items()}


def builds_our_dockerfile(service: dict[str, Any]) -> bool:
    build = service.get("build")
    if not isinstance(build, dict):
        return False
    context: Path = (COMPOSE.parent / build.get("context", ".")).resolve()
    dockerfile: Path = (context / build.get("dockerfile", "Dockerfile")).resolve()
    return dockerfile == DOCKERFILE


def compose_problems(compose: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    services: dict[str, Any] = compose["services"]
    if set(services) != COMPOSE_SERVICES:
        problems.append(f"services {sorted(services)} != {sorted(COMPOSE_SERVICES)}")
    host_ports: list[str] = []
    for name, svc in services.items():
        image = svc.get("image", "")
        repo, _, tag = image.rpartition(":")
        if not repo or "/" in tag or not tag or tag == "latest":
            problems.append(f"{name}: image {image!r} is not pinned to a tag")
        elif "build" not in svc and not re.search(r"\d", tag):
            problems.append(f"{name}: pulled image {image!r} has no version tag")
        if "build" in svc and not builds_our_dockerfile(svc):
            problems.append(f"{name}: builds something other than deploy/Dockerfile")
        for port in svc.get("ports") or []:
            if isinstance(port, dict):
                ok = port.get("host_ip") == "127.0.0.1"
                host_ports.append(str(port.get("published")))
            else:
                parts = str(port).split(":")
                ok = len(parts) == 3 and parts[0] == "127.0.0.1"
                host_ports.append(parts[-2] if len(parts) >= 2 else "")
            if not ok:
                problems.append(f"{name}: port {port!r} is not published on 127.0.0.1 only")
        for dep, condition in depends_on(svc).items():
            if dep not in services:
                problems.append(f"{name}: depends_on {dep!r}, which is not a service")
                continue
            if condition not in (
                "service_started",
                "service_healthy",
                "service_completed_successfully",
            ):
                problems.append(f"{name}: depends_on {dep}: condition {condition!r}")
            target = services[dep]
            healthcheck = target.get("healthcheck") or {}
            has_check = (healthcheck and not healthcheck.get("disable")) or (
                not healthcheck and builds_our_dockerfile(target)
            )
            if condition == "service_healthy" and not has_check:
                problems.append(f"{name}: waits for {dep} healthy, which has no healthcheck")
    duplicates = {p for p in host_ports if host_ports.count(p) > 1}
    if duplicates:
        problems.append(f"host ports published twice: {sorted(duplicates)}")
    return problems


def test_compose() -> None:
    assert compose_problems(load_compose()) == []


def _all_bind_mounts() -> list[tuple[str, str]]:
    compose = load_compose()
    return [
        (name, source)
        for name, svc in compose["services"].items()
        for source, _ in bind_mounts(svc)
    ]


@pytest.mark.parametrize(("service", "source"), _all_bind_mounts())
def test_compose_bind_mount_exists(service: str, source: str) -> None:
    path = (COMPOSE.parent / source).resolve()
    assert path.exists(), f"{service}: bind-mounted host path {source} ({path}) is missing"


def test_compose_build_context_is_the_repo_root() -> None:
    for name in ("tracescore", "agent"):
        build = load_compose()["services"][name]["build"]
        assert (COMPOSE.parent / build["context"]).resolve() == ROOT, name


def test_compose_tracescore_settings_resolve_to_mounted_files(tmp_path: Path) -> None:
    svc = load_compose()["services"]["tracescore"]
    opts, name, params = parse_cli(svc["command"])
    assert name == "serve"
    assert params["host"] == "0.0.0.0"
    settings_file = host_path(svc, opts["settings_path"])
    assert settings_file == DEPLOY / "tracescore" / "tracescore.toml"
    # Load the file where the container sees it, then map its paths back to the host.
    container = tmp_path / opts["settings_path"].lstrip("/")
    container.parent.mkdir(parents=True)
    container.write_text(settings_file.read_text())
    settings = load_settings(container)
    assert settings.serve.host == "0.0.0.0"
    assert settings.judge == Settings().judge  # no judge configured: no key needed
    inside = [settings.live.eval_config, *(settings.live.goldens or [])]
    assert all(inside), "the settings name an eval config and goldens"
    for path in inside:
        assert path is not None
        mounted = host_path(svc, "/" + str(Path(path).relative_to(tmp_path)))
        assert mounted is not None and mounted.exists(), path
    assert host_path(svc, "/etc/tracescore/eval_config.json") == ROOT / "examples/eval_config.json"
    goldens = host_path(svc, "/etc/tracescore/goldens")
    assert goldens is not None
    assert goldens / "weather.evalset.json" == ROOT / "examples/goldens/weather.evalset.json"


def test_compose_agent_runs_the_demo_and_sends_to_the_collector() -> None:
    services = load_compose()["services"]
    agent = services["agent"]
    argv = [*agent["entrypoint"], *(agent.get("command") or [])]
    script = PurePosixPath(agent["working_dir"]) / argv[1]
    assert argv[0] == "python"
    assert host_path(agent, str(script)) == ROOT / "examples" / "demo_agent.py"
    endpoint = urlsplit(env_of(agent)["OTEL_EXPORTER_OTLP_ENDPOINT"])
    assert endpoint.scheme == "http"  # plaintext gRPC inside the compose network
    assert endpoint.hostname == "otel-collector"
    assert endpoint.hostname in services
    if not GATEWAY.exists():
        pytest.skip(f"{GATEWAY.relative_to(ROOT)} is missing: cannot check its receiver port")
    gateway = yaml.safe_load(GATEWAY.read_text())
    grpc_ports = {
        port_of((protocols.get("grpc") or {}).get("endpoint") or f":{GRPC_PORT}")
        for key, receiver in gateway["receivers"].items()
        if key == "otlp" or key.startswith("otlp/")
        for protocols in [(receiver or {}).get("protocols") or {}]
        if "grpc" in protocols
    }
    assert endpoint.port in grpc_ports


def test_compose_collector_config_and_targets() -> None:
    services = load_compose()["services"]
    collector = services["otel-collector"]
    config = next(a.split("=", 1)[1] for a in collector["command"] if a.startswith("--config="))
    assert host_path(collector, config) == GATEWAY
    env = env_of(collector)
    # The names gateway.yaml's ${env:...} defaults point at, set explicitly here.
    assert env["TRACESCORE_HOSTNAME"] in services
    backend_host, _, backend_port = env["TRACING_BACKEND_ENDPOINT"].partition(":")
    assert backend_host == "tempo"
    tempo = yaml.safe_load((DEPLOY / "tempo" / "tempo.yaml").read_text())
    grpc = tempo["distributor"]["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"]
    assert grpc.startswith("0.0.0.0:")  # reachable from the Collector's container
    assert int(backend_port) == port_of(grpc)


def test_compose_tempo_mounts_its_config() -> None:
    tempo = load_compose()["services"]["tempo"]
    flag = next(a for a in tempo["command"] if a.startswith("-config.file="))
    assert host_path(tempo, flag.split("=", 1)[1]) == DEPLOY / "tempo" / "tempo.yaml"
    config = yaml.safe_load((DEPLOY / "tempo" / "tempo.yaml").read_text())
    assert config["storage"]["trace"]["backend"] == "local"


def test_compose_prometheus_and_grafana() -> None:
    services = load_compose()["services"]
    prom = services["prometheus"]
    assert "--enable-feature=exemplar-storage" in prom["command"]
    config = next(a for a in prom["command"] if a.startswith("--config.file="))
    assert host_path(prom, config.split("=", 1)[1]) == PROMETHEUS_YML
    grafana = services["grafana"]
    assert host_path(grafana, "/etc/grafana/provisioning") == DEPLOY / "grafana" / "provisioning"
    assert host_path(grafana, "/var/lib/grafana/dashboards") == DEPLOY / "grafana" / "dashboards"


def test_prometheus_scrapes_tracescore_in_compose() -> None:
    if not PROMETHEUS_YML.exists():
        pytest.skip(f"{PROMETHEUS_YML.relative_to(ROOT)} is missing")
    config = yaml.safe_load(PROMETHEUS_YML.read_text())
    targets = {
        target
        for job in config["scrape_configs"]
        if job["job_name"] == "tracescore"
        for static in job.get("static_configs") or []
        for target in static["targets"]
    }
    assert f"tracescore:{HTTP_PORT}" in targets
    assert "tracescore" in load_compose()["services"]


def test_grafana_datasources_point_at_compose_services() -> None:
    folder = DEPLOY / "grafana" / "provisioning" / "datasources"
    files = sorted(folder.glob("*.y*ml")) if folder.exists() else []
    if not files:
        pytest.skip(f"no data source files in {folder.relative_to(ROOT)}")
    services = load_compose()["services"]
    tempo_port = yaml.safe_load((DEPLOY / "tempo" / "tempo.yaml").read_text())["server"][
        "http_listen_port"
    ]
    for file in files:
        for source in yaml.safe_load(file.read_text()).get("datasources") or []:
            url = urlsplit(source["url"])
            assert url.hostname in services, (file.name, source["url"])
            if url.hostname == "tempo":
                assert url.port == tempo_port, source["url"]


# -- Kubernetes ---------------------------------------------------------------------------

EXPECTED_KINDS = {
    "namespace.yaml": [("v1", "Namespace", "tracescore")],
    "configmap.yaml": [("v1", "ConfigMap", "tracescore-config")],
    "deployment.yaml": [("apps/v1", "Deployment", "tracescore")],
    "service.yaml": [("v1", "Service", "tracescore-headless"), ("v1", "Service", "tracescore")],
    "hpa.yaml": [("autoscaling/v2", "HorizontalPodAutoscaler", "tracescore")],
    "pdb.yaml": [("policy/v1", "PodDisruptionBudget", "tracescore")],
    "servicemonitor.yaml": [("monitoring.coreos.com/v1", "ServiceMonitor", "tracescore")],
}


def k8s_docs(name: str) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all((K8S / name).read_text()) if d is not None]
    assert all(isinstance(d, dict) for d in docs), name
    return docs


def k8s_one(name: str) -> dict[str, Any]:
    (doc,) = k8s_docs(name)
    return doc


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    main: dict[str, Any]
    (main,) = deployment["spec"]["template"]["spec"]["containers"]
    return main


def service_problems(services: list[dict[str, Any]], deployment: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    ports = container(deployment)["ports"]
    names = {p["name"] for p in ports}
    numbers = {p["containerPort"] for p in ports}
    for svc in services:
        name = svc["metadata"]["name"]
        if not labels_match(svc["spec"].get("selector") or {}, pod_labels):
            problems.append(f"Service {name}: selector does not select the pods")
        for port in svc["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            if isinstance(target, str) and target not in names:
                problems.append(f"Service {name}: targetPort {target!r} names no container port")
            if isinstance(target, int) and target not in numbers:
                problems.append(f"Service {name}: targetPort {target} is no container port")
    return problems


def probe_problems(deployment: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    main = container(deployment)
    ports = {p["name"]: p["containerPort"] for p in main["ports"]}
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = (main.get(probe) or {}).get("httpGet") or {}
        if get.get("path") != path:
            problems.append(f"{probe}: path {get.get('path')!r} != {path}")
        if get.get("path") not in ROUTES or "GET" not in ROUTES[get.get("path", "")]:
            problems.append(f"{probe}: the server has no GET {get.get('path')!r}")
        port = get.get("port")
        if not isinstance(port, str) or port not in ports:
            problems.append(f"{probe}: port {port!r} is not a named container port")
        elif ports[port] != HTTP_PORT:
            problems.append(f"{probe}: port {port} is {ports[port]}, serve's HTTP is {HTTP_PORT}")
    return problems


def grace_problems(deployment: dict[str, Any], settings: Settings | None) -> list[str]:
    spec = deployment["spec"]["template"]["spec"]
    grace = spec.get("terminationGracePeriodSeconds", 30)  # Kubernetes' default
    drain = effective_drain_timeout(container(deployment)["args"], settings)
    if not grace > drain:
        return [f"terminationGracePeriodSeconds {grace} <= drain timeout {drain}"]
    return []


def configmap_settings(tmp_path: Path) -> Settings:
    data = k8s_one("configmap.yaml")["data"]
    file = tmp_path / "tracescore.toml"
    file.write_text(data["tracescore.toml"])
    return load_settings(file)


@pytest.mark.parametrize("name", sorted(EXPECTED_KINDS))
def test_k8s_kinds_and_names(name: str) -> None:
    docs = k8s_docs(name)
    assert [(d["apiVersion"], d["kind"], d["metadata"]["name"]) for d in docs] == (
        EXPECTED_KINDS[name]
    )
    for doc in docs:
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "tracescore"
        assert labels_match(NAME_LABEL, doc["metadata"].get("labels") or {}), name


def test_kustomization_lists_exactly_the_manifests() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert kustomization["namespace"] == "tracescore"
    resources = kustomization["resources"]
    on_disk = {p.name for p in K8S.glob("*.y*ml")} - {"kustomization.yaml"}
    assert len(resources) == len(set(resources))
    assert set(resources) == on_disk == set(EXPECTED_KINDS)


def test_deployment(tmp_path: Path) -> None:
    deployment = k8s_one("deployment.yaml")
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    assert spec["replicas"] == 2
    assert labels_match(spec["selector"]["matchLabels"], spec["template"]["metadata"]["labels"])
    assert labels_match(NAME_LABEL, spec["selector"]["matchLabels"])
    main = container(deployment)
    assert {p["name"]: p["containerPort"] for p in main["ports"]} == {
        "otlp-grpc": GRPC_PORT,
        "otlp-http": HTTP_PORT,
    }
    # The uid baked into the image is the one Kubernetes runs (and checks non-root).
    final = dockerfile_stages(DOCKERFILE.read_text())[-1]
    image_uid = int(next(r for k, r in reversed(final) if k == "USER").split(":")[0])
    assert pod["securityContext"]["runAsNonRoot"] is True
    # Service links would put TRACESCORE_* variables (from the Service `tracescore`) into
    # the environment of a CLI whose flags read TRACESCORE_*.
    assert pod["enableServiceLinks"] is False
    assert pod["securityContext"]["runAsUser"] == image_uid == 10001
    security = main["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(main["resources"][kind]), kind
    assert probe_problems(deployment) == []
    assert grace_problems(deployment, configmap_settings(tmp_path)) == []


def test_deployment_args_and_mounted_config(tmp_path: Path) -> None:
    deployment = k8s_one("deployment.yaml")
    main = container(deployment)
    opts, name, params = parse_cli(main["args"])  # --settings must precede `serve`
    assert name == "serve"
    assert params["host"] == "0.0.0.0"
    pod = deployment["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: volumes[m["name"]] for m in main["volumeMounts"]}
    settings_path = PurePosixPath(opts["settings_path"])
    volume = mounts[str(settings_path.parent)]
    configmap = k8s_one("configmap.yaml")
    assert volume["configMap"]["name"] == configmap["metadata"]["name"]
    projected = {item["path"]: item["key"] for item in volume["configMap"]["items"]}
    assert set(projected.values()) <= set(configmap["data"])
    assert projected[settings_path.name] == "tracescore.toml"
    # The settings' relative paths, resolved next to the mounted file, hit projected files.
    settings = configmap_settings(tmp_path)
    assert settings.live.eval_config is not None and settings.live.goldens
    eval_config = Path(settings.live.eval_config).relative_to(tmp_path).as_posix()
    assert projected[eval_config] == "eval_config.json"
    for golden in settings.live.goldens:
        folder = Path(golden).relative_to(tmp_path).as_posix()
        assert any(p.startswith(folder + "/") and p.endswith(".evalset.json") for p in projected)
    assert "/tmp" in mounts  # the only writable place with readOnlyRootFilesystem
    assert "emptyDir" in mounts["/tmp"]


def test_grace_period_relation_reads_args_then_settings(tmp_path: Path) -> None:
    deployment = copy.deepcopy(k8s_one("deployment.yaml"))
    main = container(deployment)
    settings = configmap_settings(tmp_path)
    assert effective_drain_timeout(main["args"], settings) == 30
    main["args"] = ["--settings", "/etc/tracescore/tracescore.toml", "serve"]
    assert effective_drain_timeout(main["args"], settings) == settings.serve.drain_timeout_s
    assert effective_drain_timeout(main["args"], None) == SERVE_DEFAULTS["drain_timeout"]


def test_services() -> None:
    services = k8s_docs("service.yaml")
    deployment = k8s_one("deployment.yaml")
    assert service_problems(services, deployment) == []
    by_name = {s["metadata"]["name"]: s for s in services}
    assert by_name["tracescore-headless"]["spec"]["clusterIP"] == "None"
    assert by_name["tracescore"]["spec"].get("clusterIP") in (None, "")
    for svc in services:
        ports = {p["name"]: p["port"] for p in svc["spec"]["ports"]}
        assert ports["otlp-grpc"] == GRPC_PORT
        assert ports["otlp-http"] == HTTP_PORT


def test_gateway_k8s_resolves_the_headless_service() -> None:
    gateway_k8s = ROOT / "collector_configs" / "gateway-k8s.yaml"
    if not gateway_k8s.exists():
        pytest.skip(f"{gateway_k8s.relative_to(ROOT)} is missing")
    exporters = yaml.safe_load(gateway_k8s.read_text())["exporters"]
    balancers = [
        v for k, v in exporters.items() if k.split("/")[0] in ("loadbalancing", "load_balancing")
    ]
    assert balancers, "no loadbalancing exporter"
    headless = next(
        s for s in k8s_docs("service.yaml") if s["metadata"]["name"] == "tracescore-headless"
    )
    grpc_ports = {p["port"] for p in headless["spec"]["ports"] if p["targetPort"] == "otlp-grpc"}
    for balancer in balancers:
        resolver = balancer["resolver"]
        if "k8s" in resolver:
            assert resolver["k8s"]["service"] == "tracescore-headless.tracescore"
            assert set(resolver["k8s"].get("ports") or [GRPC_PORT]) <= grpc_ports
        else:
            assert resolver["dns"]["hostname"].startswith("tracescore-headless.tracescore")
            assert resolver["dns"].get("port", GRPC_PORT) in grpc_ports


def test_hpa_pdb_and_servicemonitor_target_the_right_things() -> None:
    deployment = k8s_one("deployment.yaml")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    hpa = k8s_one("hpa.yaml")["spec"]
    assert hpa["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": deployment["metadata"]["name"],
    }
    assert 1 <= hpa["minReplicas"] <= deployment["spec"]["replicas"] <= hpa["maxReplicas"]
    assert [m["resource"]["name"] for m in hpa["metrics"] if m["type"] == "Resource"] == ["cpu"]
    pdb = k8s_one("pdb.yaml")["spec"]
    assert pdb["minAvailable"] == 1
    assert pdb["minAvailable"] < hpa["minReplicas"]  # else a node drain could never proceed
    assert labels_match(pdb["selector"]["matchLabels"], pod_labels)
    monitor = k8s_one("servicemonitor.yaml")["spec"]
    selected = [
        s
        for s in k8s_docs("service.yaml")
        if labels_match(monitor["selector"]["matchLabels"], s["metadata"]["labels"])
    ]
    assert [s["metadata"]["name"] for s in selected] == ["tracescore"]  # not the headless one
    assert monitor["namespaceSelector"]["matchNames"] == ["tracescore"]
    (endpoint,) = monitor["endpoints"]
    assert endpoint["port"] in {p["name"] for p in selected[0]["spec"]["ports"]}
    assert endpoint["port"] == "otlp-http"
    assert endpoint["path"] == "/metrics" and "GET" in ROUTES["/metrics"]
    assert endpoint["interval"] == "15s"


def test_configmap_matches_the_examples(tmp_path: Path) -> None:
    data = k8s_one("configmap.yaml")["data"]
    assert data["tracescore.toml"] == (DEPLOY / "tracescore" / "tracescore.toml").read_text()
    settings = configmap_settings(tmp_path)
    assert settings.serve.host == "0.0.0.0"
    assert settings.judge == Settings().judge
    examples = ROOT / "examples"
    assert json.loads(data["eval_config.json"]) == json.loads(
        (examples / "eval_config.json").read_text()
    )
    assert json.loads(data["weather.evalset.json"]) == json.loads(
        (examples / "goldens" / "weather.evalset.json").read_text(encoding="utf-8")
    )


def test_deploy_settings_load_and_build_the_live_pipeline(tmp_path: Path) -> None:
    """The container's settings, laid out as in the container, build serve's pipeline."""
    from tracescore.live.config import build_live

    (tmp_path / "tracescore.toml").write_text(
        (DEPLOY / "tracescore" / "tracescore.toml").read_text()
    )
    (tmp_path / "eval_config.json").write_text((ROOT / "examples/eval_config.json").read_text())
    (tmp_path / "goldens").mkdir()
    (tmp_path / "goldens" / "weather.evalset.json").write_bytes(
        (ROOT / "examples/goldens/weather.evalset.json").read_bytes()
    )
    live = build_live(tmp_path / "tracescore.toml")
    assert live.judge is None  # nothing judged: no API key needed
    assert sum(len(g.cases) for g in live.goldens) > 0
    assert {c.name for c in live.criteria} >= {"tool_trajectory_avg_score", "response_match_score"}


# -- the checkers catch breakage ------------------------------------------------------------


def test_negative_service_target_port_naming_no_container_port() -> None:
    services = copy.deepcopy(k8s_docs("service.yaml"))
    services[0]["spec"]["ports"][0]["targetPort"] = "otlp-grcp"
    problems = service_problems(services, k8s_one("deployment.yaml"))
    assert problems == [
        "Service tracescore-headless: targetPort 'otlp-grcp' names no container port"
    ]


def test_negative_service_selector_selecting_nothing() -> None:
    services = copy.deepcopy(k8s_docs("service.yaml"))
    services[1]["spec"]["selector"] = {"app.kubernetes.io/name": "scorer"}
    assert service_problems(services, k8s_one("deployment.yaml")) == [
        "Service tracescore: selector does not select the pods"
    ]


def test_negative_probe_on_unknown_port_and_path() -> None:
    deployment = copy.deepcopy(k8s_one("deployment.yaml"))
    container(deployment)["readinessProbe"]["httpGet"] = {"path": "/ready", "port": "http"}
    problems = probe_problems(deployment)
    assert len(problems) == 3, problems


def test_negative_grace_period_not_above_drain_timeout(tmp_path: Path) -> None:
    deployment = copy.deepcopy(k8s_one("deployment.yaml"))
    deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 30
    assert grace_problems(deployment, configmap_settings(tmp_path)) != []
    del deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]  # default 30
    assert grace_problems(deployment, None) != []


def test_negative_settings_after_the_command_is_rejected() -> None:
    with pytest.raises(click.UsageError):
        parse_cli(["serve", "--settings", "/etc/tracescore/tracescore.toml"])


def test_negative_dockerfile_root_user_and_wrong_healthcheck_port() -> None:
    text = DOCKERFILE.read_text().replace("USER 10001:10001", "USER root")
    text = text.replace("127.0.0.1:4318/healthz", "127.0.0.1:8080/healthz")
    text = text.replace("COPY src/ ./src/", "COPY srcs/ ./src/")
    problems = dockerfile_problems(text)
    assert any("USER" in p for p in problems), problems
    assert any("HEALTHCHECK" in p for p in problems), problems
    assert any("srcs/" in p for p in problems), problems
    single = 'FROM python:3.11-slim\nCMD ["serve"]\n'
    assert dockerfile_problems(single) == ["not multi-stage: 1 FROM"]


def test_negative_compose_latest_image_public_port_and_unknown_dependency() -> None:
    compose = copy.deepcopy(load_compose())
    services = compose["services"]
    services["tempo"]["image"] = "grafana/tempo:latest"
    services["grafana"]["ports"] = ["3000:3000"]
    services["agent"]["depends_on"] = {"collector": {"condition": "service_started"}}
    services["otel-collector"]["depends_on"]["tempo"] = {"condition": "service_healthy"}
    problems = compose_problems(compose)
    assert len(problems) == 4, problems
