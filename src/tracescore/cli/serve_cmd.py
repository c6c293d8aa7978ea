"""``tracescore serve``: the OTLP receiver in front of the live scoring engine."""

from __future__ import annotations

import gc

import click
import orjson

from tracescore.cli.app import (
    check_output,
    judge_options,
    judge_settings,
    main,
    stderr,
    write_file,
)
from tracescore.cli.options import option
from tracescore.exceptions import TracescoreError

__all__ = ["serve_command"]


@main.command("serve")
@option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@option(
    "--grpc-port",
    type=click.IntRange(min=-1, max=65535),
    default=4317,
    show_default=True,
    help="OTLP/gRPC port (0: any free port, -1: no gRPC listener).",
)
@option(
    "--http-port",
    type=click.IntRange(min=-1, max=65535),
    default=4318,
    show_default=True,
    help="OTLP/HTTP port, also /metrics, /healthz, /readyz (0: any free, -1: none).",
)
@option("--auth-token", default=None, help="Require 'Authorization: Bearer <token>' on OTLP calls.")
@option(
    "--max-request-bytes",
    type=click.IntRange(min=1024),
    default=8 * 1024 * 1024,
    show_default=True,
    help="Largest OTLP request, after decompression.",
)
@option(
    "--drain-timeout",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    help="Seconds to score what is pending after SIGTERM.",
)
@option(
    "--request-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="Seconds an OTLP/HTTP client may take to send a request's headers, and its body.",
)
@option(
    "--max-connections",
    type=click.IntRange(min=1),
    default=1024,
    show_default=True,
    help="HTTP connections / gRPC calls at once; beyond it 503 / RESOURCE_EXHAUSTED.",
)
@option("--config", "config_path", default=None, help="ADK eval_config.json.")
@option("--goldens", multiple=True, help="ADK evalset(s) or directories; repeatable.")
@judge_options
@option(
    "--ready-file",
    default=None,
    help="Write the bound ports here as JSON once listening (for scripts and tests).",
)
@click.pass_context
def serve_command(
    ctx: click.Context,
    host: str,
    grpc_port: int,
    http_port: int,
    auth_token: str | None,
    max_request_bytes: int,
    drain_timeout: float,
    request_timeout: float,
    max_connections: int,
    config_path: str | None,
    goldens: tuple[str, ...],
    judge_backend: str | None,
    judge_model: str | None,
    judge_base_url: str | None,
    judge_cache: str | None,
    judge_concurrency: int | None,
    judge_budget_usd: float | None,
    ready_file: str | None,
) -> None:
    """Receive OTLP traces and logs (gRPC and HTTP), score them live, serve /metrics.

    Settings come from the settings file's [live], [sampling], [metrics], [events],
    [judge] and [serve] sections; flags override them. SIGTERM stops accepting, scores
    what is pending within --drain-timeout, flushes events and exits 0 (1 when the drain
    did not finish in time). Exit 2: a settings mistake, a port that cannot be bound, or
    a ready file that cannot be written.
    """
    from prometheus_client import CollectorRegistry  # noqa: PLC0415 - serve only

    from tracescore.live.config import build_live  # noqa: PLC0415
    from tracescore.live.engine import LiveEngine  # noqa: PLC0415
    from tracescore.live.scorer import LiveScorer  # noqa: PLC0415
    from tracescore.server import OTLPServer, ServeOptions, run  # noqa: PLC0415

    err = stderr()
    settings_path = ctx.obj[0] if isinstance(ctx.obj, tuple) else None
    try:
        live = build_live(
            settings_path,
            eval_config=config_path,
            goldens=list(goldens) or None,
            judge_settings=judge_settings(
                ctx,
                backend=judge_backend,
                model=judge_model,
                base_url=judge_base_url,
                cache=judge_cache,
                concurrency=judge_concurrency,
                budget_usd=judge_budget_usd,
            ),
        )
        options = ServeOptions(
            host=host,
            grpc_port=None if grpc_port < 0 else grpc_port,
            http_port=None if http_port < 0 else http_port,
            auth_token=auth_token,
            max_request_bytes=max_request_bytes,
            drain_timeout_s=drain_timeout,
            request_timeout_s=request_timeout,
            max_connections=max_connections,
        )
        if ready_file:
            check_output(ready_file)  # before binding anything
    except TracescoreError as exc:
        err.print(f"error: {exc}")
        raise SystemExit(2) from None
    registry = CollectorRegistry()
    scorer = LiveScorer.build(
        live.criteria,
        registry=registry,
        goldens=live.goldens,
        sampling=live.sampling,
        judge=live.judge,
        events=live.events,
        window_s=live.window_s,
        max_judged_traces=live.options.max_judged_traces,
    )
    # Start-up objects (modules, goldens, config) live as long as the process: keep the
    # collector from re-walking them on every full collection.
    gc.freeze()
    engine = LiveEngine(scorer, options=live.options)

    def started(server: OTLPServer) -> None:
        where = ", ".join(
            f"OTLP/{name} on {host}:{port}"
            for name, port in (("HTTP", server.http_port), ("gRPC", server.grpc_port))
            if port is not None
        )
        err.print(
            f"tracescore serve: {where}; {len(live.criteria)} criteria, "
            f"{sum(len(g.cases) for g in live.goldens)} golden cases"
        )
        if ready_file:
            ports = {"http_port": server.http_port, "grpc_port": server.grpc_port}
            write_file(ready_file, orjson.dumps(ports))

    try:
        status = run(engine, registry=registry, options=options, on_started=started)
    except TracescoreError as exc:  # a port taken, the ready file gone meanwhile
        engine.shutdown(timeout_s=drain_timeout)
        err.print(f"error: {exc}")
        raise SystemExit(2) from None
    raise SystemExit(status)
