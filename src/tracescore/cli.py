"""The ``tracescore`` command line: a thin layer over the library.

Exit codes: 0 clean; 1 some records were bad (output still written) or ``--strict``
stopped at one; 2 usage error or unreadable input. User mistakes are one line on
stderr, never a traceback. Every option can also be set from the environment
(``TRACESCORE_<COMMAND>_<OPTION>``, e.g. ``TRACESCORE_IMPORT_STRICT=1``).
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Final

import click
import orjson
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from tracescore import __version__
from tracescore.assembly import DEFAULT_IDLE_RECORDS, TraceAssembler
from tracescore.criteria import Criterion, informational_criteria
from tracescore.eval_config import criteria_from_config, load_eval_config
from tracescore.evalset import conversations_to_evalset
from tracescore.exceptions import ConfigError, InputError, TraceFormatError, TracescoreError
from tracescore.export import write_jsonl
from tracescore.formats.base import Batch
from tracescore.formats.files import expand_paths, read_file
from tracescore.goldens import load_goldens
from tracescore.importer import ImportStats, bulk_gc, invocations_from_batches
from tracescore.judge.config import JudgeSettings, build_judge
from tracescore.model import Invocation, group_conversations
from tracescore.parallel import Part, plan_parts, write_jsonl_parallel
from tracescore.replay import replay, results_jsonl
from tracescore.report import junit_xml, print_judge_usage, print_report
from tracescore.settings import load_settings
from tracescore.sinks.push import push_results

__all__ = ["main"]

_SHOWN_ERRORS: Final = 20
#: CPython's default gen-0 threshold: small, frequent collections (see ``replay``).
_LATENCY_GC_THRESHOLD: Final = 700
_PROGRESS_MIN_BYTES: Final = 8 * 1024 * 1024


def _stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


@click.group(context_settings={"auto_envvar_prefix": "TRACESCORE"})
@click.version_option(__version__, prog_name="tracescore")
@click.option(
    "--log-level",
    default="WARNING",
    show_default=True,
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    help="Verbosity of tracescore's own log on stderr.",
)
@click.option(
    "--settings",
    "settings_path",
    default=None,
    help="Settings file (TOML or YAML) with defaults for every command; "
    "flags and TRACESCORE_* variables override it.",
)
@click.pass_context
def main(ctx: click.Context, log_level: str, settings_path: str | None) -> None:
    """Score LLM agents from their OpenTelemetry traces."""
    logging.basicConfig(
        level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    if settings_path is None:
        return
    try:
        settings = load_settings(settings_path)
    except TracescoreError as exc:
        _stderr().print(f"error: {exc}", markup=False)
        ctx.exit(2)
    ctx.default_map = settings.default_map()
    ctx.obj = (settings_path, settings)


#: Shared by the commands that assemble traces from files.
_idle_records_option = click.option(
    "--idle-records",
    type=click.IntRange(min=1),
    default=DEFAULT_IDLE_RECORDS,
    show_default=True,
    help="Records without news of a trace (root seen) before it counts as complete. "
    "Raise it when the summary reports late records.",
)


def _format_for(output: str, fmt: str | None) -> str:
    if fmt:
        return fmt
    return "evalset" if output.endswith(".json") else "jsonl"


class _Reporter:
    """Prints located errors as they come (the first few) and the closing summary."""

    def __init__(self, console: Console, *, quiet: bool) -> None:
        self.console = console
        self.quiet = quiet
        self.shown = 0

    def error(self, error: TraceFormatError) -> None:
        self.shown += 1
        if self.shown <= _SHOWN_ERRORS:
            self.console.print(f"bad record: {error.located()}", markup=False)

    def summary(self, stats: ImportStats, *, written: int, skipped: int, output: str) -> None:
        if self.shown > _SHOWN_ERRORS:
            self.console.print(f"... and {self.shown - _SHOWN_ERRORS} more bad records")
        if self.quiet:
            return
        if stats.empty:
            self.console.print("empty input: no spans or log records were found")
            return
        lines = [
            f"read      {stats.files} file(s), {stats.records} line(s) or message(s), "
            f"{stats.spans} span(s), {stats.logs} log record(s)",
            f"traces    {stats.traces} ({stats.traces_without_agent} without agent activity)",
            f"invocations {stats.invocations}, written {written} to {output}",
        ]
        if stats.not_evaluable:
            reasons = ", ".join(f"{k} {v}" for k, v in sorted(stats.not_evaluable.items()))
            lines.append(f"not evaluable {sum(stats.not_evaluable.values())}: {reasons}")
            lines.extend(f"  {k}: {stats.reasons[k]}" for k in sorted(stats.reasons))
        if skipped:
            lines.append(
                f"left out of the evalset: {skipped} (not evaluable, or agent runs called as tools)"
            )
        if stats.dropped:
            dropped = ", ".join(f"{k} {v}" for k, v in sorted(stats.dropped.items()))
            lines.append(f"dropped   {dropped}")
        lines.append(f"bad records {stats.bad_records}")
        for line in lines:
            self.console.print(line, markup=False)


def _batches(files: Sequence[str], console: Console, stats: ImportStats) -> Iterator[Batch]:
    """Read files in order, with a progress bar when the input is large and stderr a TTY."""
    sizes = [_size(f) for f in files]
    if not (console.is_terminal and sum(sizes) >= _PROGRESS_MIN_BYTES):
        for path in files:
            yield from read_file(path, stdin=sys.stdin.buffer)
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[spans]} spans"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("importing", total=sum(sizes), spans=0)
        for path, size in zip(files, sizes):
            for n, batch in enumerate(read_file(path, stdin=sys.stdin.buffer)):
                if n % 256 == 0:
                    progress.update(task, spans=stats.spans)
                yield batch
            progress.advance(task, size)


def _size(path: str) -> int:
    try:
        return 0 if path == "-" else os.path.getsize(path)
    except OSError:
        return 0


def _open_output(output: str) -> tuple[IO[bytes], str | None]:
    """Open the output; files are written to a temp file and renamed when complete."""
    if output == "-":
        return sys.stdout.buffer, None
    target = Path(output)
    if target.parent and not target.parent.exists():
        raise InputError(f"{output}: directory {target.parent} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    return os.fdopen(fd, "wb"), tmp


@main.command("import")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    default="-",
    show_default=True,
    help="Where to write: a file, or - for stdout.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["evalset", "jsonl"]),
    default=None,
    help="evalset (ADK *.evalset.json) or jsonl (one invocation per line). "
    "Default: evalset when OUTPUT ends in .json, else jsonl.",
)
@click.option("--eval-set-id", default=None, help="eval_set_id of the written evalset.")
@_idle_records_option
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=0),
    default=0,
    show_default="0 = one per CPU",
    help="Processes for large JSON Lines inputs written as jsonl (split at line boundaries).",
)
@click.option("--strict", is_flag=True, help="Stop at the first bad record.")
@click.option("-q", "--quiet", is_flag=True, help="No summary on stderr.")
def import_command(
    paths: tuple[str, ...],
    output: str,
    fmt: str | None,
    eval_set_id: str | None,
    idle_records: int,
    jobs: int,
    strict: bool,
    quiet: bool,
) -> None:
    """Rebuild agent invocations from trace files and write them as goldens or JSON Lines.

    PATHS are files, directories, glob patterns or - (stdin): OTLP JSON Lines as the
    Collector's file exporter writes them, single OTLP JSON documents, Tempo and Jaeger
    downloads, length-prefixed OTLP protobuf, any of them gzipped.
    """
    console = _stderr()
    reporter = _Reporter(console, quiet=quiet)
    stats = ImportStats()
    fmt = _format_for(output, fmt)
    try:
        files = expand_paths(paths)
        stats.files = len(files)
        out, tmp = _open_output(output)
        parts = _parallel_parts(files, fmt=fmt, jobs=jobs, strict=strict, idle=idle_records)
        try:
            if parts:
                with bulk_gc():
                    written = write_jsonl_parallel(
                        parts,
                        out,
                        stats,
                        jobs=_jobs(jobs),
                        idle_records=idle_records,
                        on_error=reporter.error,
                    )
                skipped = 0
            else:
                invocations = invocations_from_batches(
                    _batches(files, console, stats),
                    stats,
                    strict=strict,
                    assembler=TraceAssembler(idle_records=idle_records),
                    on_error=reporter.error,
                )
                with bulk_gc():
                    written, skipped = _write(
                        invocations, out, fmt=fmt, eval_set_id=eval_set_id, output=output
                    )
        except BaseException:
            if tmp is not None:
                out.close()
                os.unlink(tmp)
            raise
        if tmp is not None:
            out.close()
            os.replace(tmp, output)
    except TraceFormatError as exc:
        console.print(f"bad record (--strict): {exc.located()}", markup=False)
        raise SystemExit(1) from None
    except TracescoreError as exc:
        console.print(f"error: {exc}", markup=False)
        raise SystemExit(2) from None
    reporter.summary(stats, written=written, skipped=skipped, output=output)
    if stats.bad_records:
        raise SystemExit(1)


def _jobs(jobs: int) -> int:
    return jobs or os.cpu_count() or 1


def _parallel_parts(
    files: Sequence[str], *, fmt: str, jobs: int, strict: bool, idle: int
) -> list[Part] | None:
    """The parts of a parallel import, or None when it runs in this process.

    In-process when: one job, ``--strict`` (the first bad record stops everything),
    stdin among the inputs, evalset output (built whole anyway), or nothing to split.
    """
    if _jobs(jobs) < 2 or strict or fmt != "jsonl" or "-" in files:
        return None
    parts = plan_parts(files, jobs=_jobs(jobs), idle_records=idle)
    return parts if len(parts) > 1 else None


def _write(
    invocations: Iterator[Invocation],
    out: IO[bytes],
    *,
    fmt: str,
    eval_set_id: str | None,
    output: str,
) -> tuple[int, int]:
    if fmt == "jsonl":
        return write_jsonl(invocations, out), 0
    conversations = group_conversations(list(invocations))
    set_id = eval_set_id or _default_set_id(output)
    doc, written, skipped = conversations_to_evalset(conversations, eval_set_id=set_id)
    out.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2, default=str))
    out.write(b"\n")
    return written, skipped


def _default_set_id(output: str) -> str:
    name = Path(output).name if output != "-" else "imported"
    for suffix in (".evalset.json", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)] or "imported"
    return name


@main.command("replay")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--config",
    "config_path",
    default=None,
    help="ADK eval_config.json / test_config.json (default: ADK's default criteria).",
)
@click.option(
    "--goldens",
    multiple=True,
    help="ADK evalset(s) (*.evalset.json, *.test.json, or a directory); repeatable.",
)
@click.option("--output", default=None, help="Write one JSON line per invocation here.")
@click.option("--junit", default=None, help="Write a JUnit XML report here.")
@click.option("--detailed", is_flag=True, help="Per-invocation rows in the report.")
@_idle_records_option
@click.option("--strict", is_flag=True, help="Stop at the first bad record (exit 2).")
@click.option("-q", "--quiet", is_flag=True, help="No report on stdout.")
@click.option(
    "--judge-backend",
    type=click.Choice(["gemini", "openai"]),
    default=None,
    help="Judge provider for LLM-judged criteria (default: settings [judge], else gemini).",
)
@click.option("--judge-model", default=None, help="Default judge model (gemini-2.5-flash).")
@click.option("--judge-base-url", default=None, help="Judge endpoint (required for openai).")
@click.option(
    "--judge-cache",
    default=None,
    help="SQLite file caching judge replies: a re-run pays nothing twice.",
)
@click.option(
    "--judge-concurrency", type=click.IntRange(min=1), default=None, help="Judge calls in flight."
)
@click.option(
    "--judge-budget-usd",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Daily judge spend cap; beyond it criteria are NOT_EVALUATED 'budget exhausted'.",
)
@click.option(
    "--pushgateway",
    default=None,
    metavar="URL",
    help="Push the scores to this Prometheus Pushgateway after the replay.",
)
@click.option(
    "--pushgateway-job",
    default="tracescore",
    show_default=True,
    help="The job label (and grouping key) of the pushed metrics.",
)
@click.pass_context
def replay_command(
    ctx: click.Context,
    paths: tuple[str, ...],
    config_path: str | None,
    goldens: tuple[str, ...],
    output: str | None,
    junit: str | None,
    detailed: bool,
    idle_records: int,
    strict: bool,
    quiet: bool,
    judge_backend: str | None,
    judge_model: str | None,
    judge_base_url: str | None,
    judge_cache: str | None,
    judge_concurrency: int | None,
    judge_budget_usd: float | None,
    pushgateway: str | None,
    pushgateway_job: str,
) -> None:
    """Score exported traces (or evalsets of recorded runs) against goldens, like adk eval.

    Exit codes: 0 no evaluated criterion failed; 1 some criterion FAILED (a CI gate);
    2 usage error, unreadable input or invalid config/goldens.
    """
    err = _stderr()
    reporter = _Reporter(err, quiet=True)
    try:
        criteria = [*_configured_criteria(ctx, config_path), *informational_criteria()]
        golden_sets = load_goldens(list(goldens)) if goldens else []
        judge = None
        if any(c.judged for c in criteria):
            overrides = {
                "backend": judge_backend,
                "model": judge_model,
                "base_url": judge_base_url,
                "cache": judge_cache,
                "concurrency": judge_concurrency,
                "daily_budget_usd": judge_budget_usd,
            }
            judge = build_judge(_judge_settings(ctx, overrides))
        # With a judge, the event loop's latency matters more than bulk decoding speed:
        # keep the default gen-0 threshold so no collection pauses the loop for long.
        with bulk_gc() if judge is None else bulk_gc(threshold=_LATENCY_GC_THRESHOLD):
            result = replay(
                paths,
                criteria,
                goldens=golden_sets,
                strict=strict,
                idle_records=idle_records,
                on_error=reporter.error,
                judge=judge,
            )
        if output:
            _write_file(output, results_jsonl(result))
        if junit:
            _write_file(junit, junit_xml(result))
        if pushgateway:
            push_results(result.invocations, criteria, url=pushgateway, job=pushgateway_job)
    except TraceFormatError as exc:
        err.print(f"bad record (--strict): {exc.located()}", markup=False)
        raise SystemExit(2) from None
    except TracescoreError as exc:
        err.print(f"error: {exc}", markup=False)
        raise SystemExit(2) from None
    if not quiet:
        print_report(result, Console(highlight=False), detailed=detailed)
        if judge is not None:
            print_judge_usage(judge, Console(highlight=False))
    if result.stats.bad_records:
        err.print(f"bad records: {result.stats.bad_records} (skipped)", markup=False)
    raise SystemExit(1 if result.failed else 0)


@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--grpc-port",
    type=click.IntRange(min=-1, max=65535),
    default=4317,
    show_default=True,
    help="OTLP/gRPC port (0: any free port, -1: no gRPC listener).",
)
@click.option(
    "--http-port",
    type=click.IntRange(min=-1, max=65535),
    default=4318,
    show_default=True,
    help="OTLP/HTTP port, also /metrics, /healthz, /readyz (0: any free, -1: none).",
)
@click.option(
    "--auth-token", default=None, help="Require 'Authorization: Bearer <token>' on OTLP calls."
)
@click.option(
    "--max-request-bytes",
    type=click.IntRange(min=1024),
    default=8 * 1024 * 1024,
    show_default=True,
    help="Largest OTLP request, after decompression.",
)
@click.option(
    "--drain-timeout",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    help="Seconds to score what is pending after SIGTERM.",
)
@click.option("--config", "config_path", default=None, help="ADK eval_config.json.")
@click.option("--goldens", multiple=True, help="ADK evalset(s) or directories; repeatable.")
@click.option("--judge-backend", type=click.Choice(["gemini", "openai"]), default=None)
@click.option("--judge-model", default=None, help="Default judge model.")
@click.option("--judge-base-url", default=None, help="Judge endpoint (required for openai).")
@click.option("--judge-cache", default=None, help="SQLite file caching judge replies.")
@click.option("--judge-concurrency", type=click.IntRange(min=1), default=None)
@click.option("--judge-budget-usd", type=click.FloatRange(min=0, min_open=True), default=None)
@click.option(
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
    did not finish in time).
    """
    from prometheus_client import CollectorRegistry  # noqa: PLC0415 - serve only

    from tracescore.live.config import build_live  # noqa: PLC0415
    from tracescore.live.engine import LiveEngine  # noqa: PLC0415
    from tracescore.live.scorer import LiveScorer  # noqa: PLC0415
    from tracescore.server import OTLPServer, ServeOptions, run  # noqa: PLC0415

    err = _stderr()
    settings_path = ctx.obj[0] if isinstance(ctx.obj, tuple) else None
    overrides = {
        "backend": judge_backend,
        "model": judge_model,
        "base_url": judge_base_url,
        "cache": judge_cache,
        "concurrency": judge_concurrency,
        "daily_budget_usd": judge_budget_usd,
    }
    try:
        live = build_live(
            settings_path,
            eval_config=config_path,
            goldens=list(goldens) or None,
            judge_settings=_judge_settings(ctx, overrides),
        )
        options = ServeOptions(
            host=host,
            grpc_port=None if grpc_port < 0 else grpc_port,
            http_port=None if http_port < 0 else http_port,
            auth_token=auth_token,
            max_request_bytes=max_request_bytes,
            drain_timeout_s=drain_timeout,
        )
    except TracescoreError as exc:
        err.print(f"error: {exc}", markup=False)
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
            f"{sum(len(g.cases) for g in live.goldens)} golden cases",
            markup=False,
        )
        if ready_file:
            ports = {"http_port": server.http_port, "grpc_port": server.grpc_port}
            _write_file(ready_file, orjson.dumps(ports))

    raise SystemExit(run(engine, registry=registry, options=options, on_started=started))


def _judge_settings(ctx: click.Context, overrides: Mapping[str, object]) -> JudgeSettings:
    """Settings file's ``[judge]`` with the given flags (or their env vars) on top."""
    base = ctx.obj[1].judge if isinstance(ctx.obj, tuple) else JudgeSettings()
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return JudgeSettings.model_validate({**base.model_dump(), **given})
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"judge.{'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def _configured_criteria(ctx: click.Context, config_path: str | None) -> list[Criterion]:
    """``--config``, else criteria embedded in the settings file, else ADK's defaults."""
    if config_path is None and isinstance(ctx.obj, tuple):
        source, settings = ctx.obj
        if settings.replay.criteria is not None:
            data = {"criteria": settings.replay.criteria}
            return criteria_from_config(data, source=f"{source}: replay")
    return load_eval_config(config_path)


def _write_file(path: str, data: bytes) -> None:
    target = Path(path)
    if not target.parent.exists():
        raise InputError(f"{path}: directory {target.parent} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)
