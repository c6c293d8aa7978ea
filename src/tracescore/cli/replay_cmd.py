"""``tracescore replay``: score exported traces against goldens, as ``adk eval`` would."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Final

import click
from rich.console import Console

from tracescore.cli.app import (
    Diagnostics,
    Reporter,
    check_output,
    idle_records_option,
    jobs_option,
    judge_options,
    judge_settings,
    main,
    stderr,
    write_file,
)
from tracescore.cli.options import option
from tracescore.cli.overwrite import input_files
from tracescore.criteria import Criterion, informational_criteria
from tracescore.criteria.base import golden_tool_results_needed
from tracescore.eval_config import criteria_from_config, load_eval_config
from tracescore.exceptions import TraceFormatError, TracescoreError
from tracescore.goldens import GoldenSet, golden_files, load_goldens
from tracescore.importer import ImportStats, bulk_gc, paused_gc
from tracescore.judge.config import build_judge
from tracescore.replay import read_runs, results_jsonl, score_runs
from tracescore.report import junit_xml, print_judge_usage, print_report
from tracescore.sinks.push import check_pushgateway, push_failure, push_results

__all__ = ["replay_command"]

#: CPython's default gen-0 threshold: small, frequent collections (see ``replay``).
_LATENCY_GC_THRESHOLD: Final = 700


@main.command("replay")
@click.argument("paths", nargs=-1, required=True)
@option(
    "--config",
    "config_path",
    default=None,
    help="ADK eval_config.json / test_config.json (default: ADK's default criteria).",
)
@option(
    "--goldens",
    multiple=True,
    help="ADK evalset(s) (*.evalset.json, *.test.json, or a directory); repeatable.",
)
@option(
    "--output",
    default=None,
    help="Write one JSON line per invocation here (- for stdout: the report then goes to stderr).",
)
@option("--junit", default=None, help="Write a JUnit XML report here (- for stdout, as --output).")
@option("--detailed", is_flag=True, help="Per-invocation rows in the report.")
@idle_records_option
@jobs_option("importing and scoring large plain JSON Lines inputs")
@option("--strict", is_flag=True, help="Stop at the first bad record (exit 2).")
@option("-q", "--quiet", is_flag=True, help="No report (on stdout, or stderr when an output is -).")
@judge_options
@option(
    "--pushgateway",
    default=None,
    metavar="URL",
    help="Push the scores to this Prometheus Pushgateway after the replay "
    "(a replay that fails before scoring pushes when it failed).",
)
@option(
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
    jobs: int,
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
    2 usage error, unreadable input, invalid config/goldens, or no invocation to score.
    """
    err = stderr()
    reporter = Reporter(err, quiet=True)
    if output == "-" and junit == "-":
        raise click.UsageError("--output and --junit cannot both be - (stdout)")
    # With a machine-readable output on stdout, the report must not mix into it.
    report_to_stderr = "-" in (output, junit)
    # Where a failed replay says so (see tracescore.sinks.push): set once the URL is known
    # to be usable, so that a mistyped one fails before the work, and pushes nothing.
    failures_to: str | None = None
    try:
        if pushgateway:
            check_pushgateway(pushgateway, pushgateway_job)
            failures_to = pushgateway
        criteria = [*_configured_criteria(ctx, config_path), *informational_criteria()]
        # Checked now, so that a mistyped path fails before any work.
        golden_paths = golden_files(list(goldens))
        files = input_files(
            paths,
            {"--output": output, "--junit": junit},
            err,
            quiet=quiet,
            also={"a goldens file": golden_paths, "the eval config (--config)": [config_path]},
        )
        for path in (output, junit):
            if path and path != "-":
                check_output(path)  # a mistyped directory fails before the work, too
        judge = None
        if any(c.judged for c in criteria):
            judge = build_judge(
                judge_settings(
                    ctx,
                    backend=judge_backend,
                    model=judge_model,
                    base_url=judge_base_url,
                    cache=judge_cache,
                    concurrency=judge_concurrency,
                    budget_usd=judge_budget_usd,
                )
            )
        # With a judge, the event loop's latency matters more than bulk decoding speed:
        # keep the default gen-0 threshold so no collection pauses the loop for long, and
        # let the collector reclaim the cycles its I/O creates (nothing frozen meanwhile).
        with (
            bulk_gc()
            if judge is None
            else bulk_gc(threshold=_LATENCY_GC_THRESHOLD, freeze_survivors=False)
        ):
            # Import workers score too, given the goldens (tracescore.prescore), except
            # for judged criteria: then the goldens are loaded after the import, as
            # forked workers run slower beside a large evalset (see read_runs).
            prescore = judge is None
            golden_sets = _load_goldens(golden_paths, criteria) if prescore else None
            runs = read_runs(
                files,
                criteria,
                strict=strict,
                idle_records=idle_records,
                on_error=reporter.error,
                jobs=jobs,
                goldens=golden_sets,
            )
            if golden_sets is None:
                golden_sets = _load_goldens(golden_paths, criteria)
            if judge is None:
                # The results are one large acyclic structure, all kept, as the goldens
                # are: scored with the collector paused, then frozen. Under bulk_gc each
                # young collection would walk them (~0.2 s for 13k turns' results).
                with paused_gc(freeze=True):
                    result = score_runs(runs, criteria, goldens=golden_sets)
            else:  # the judge's event loop makes cycles: the collector stays on
                result = score_runs(runs, criteria, goldens=golden_sets, judge=judge)
        if output:
            _write(output, results_jsonl(result))
        if junit:
            _write(junit, junit_xml(result))
    except TraceFormatError as exc:
        err.print(f"bad record (--strict): {exc.located()}")
        _failed(failures_to, pushgateway_job, err)
        raise SystemExit(2) from None
    except TracescoreError as exc:
        err.print(f"error: {exc}")
        _failed(failures_to, pushgateway_job, err)
        raise SystemExit(2) from None
    if not quiet:
        console = Console(highlight=False, stderr=report_to_stderr)
        print_report(result, console, detailed=detailed)
        if judge is not None:
            print_judge_usage(judge, console)
    if result.stats.bad_records:
        err.print(f"bad records: {result.stats.bad_records} (skipped)")
    if not result.invocations:
        # A gate that scored nothing must not pass: an empty export, or traces from an
        # agent whose instrumentation is off, would otherwise read as "no failures".
        err.print(f"error: {_nothing_to_score(result.stats)}")
        _failed(failures_to, pushgateway_job, err)
        raise SystemExit(2)
    if pushgateway:  # after the report: a gateway that is down loses nothing else
        try:
            push_results(result.invocations, criteria, url=pushgateway, job=pushgateway_job)
        except TracescoreError as exc:
            err.print(f"error: {exc}")
            raise SystemExit(2) from None
    raise SystemExit(1 if result.failed else 0)


def _failed(url: str | None, job: str, err: Diagnostics) -> None:
    """Tell the Pushgateway at ``url`` (if any) that this replay failed before scoring."""
    if url is None:
        return
    try:
        push_failure(url=url, job=job)
    except TracescoreError as exc:  # said after the replay's own error; still exit 2
        err.print(f"error: {exc}")


def _load_goldens(paths: list[str], criteria: Sequence[Criterion]) -> list[GoldenSet]:
    # A large evalset is millions of objects, all kept: built with the collector paused,
    # then frozen (bulk_gc unfreezes them when the replay ends).
    with paused_gc(freeze=True):
        return load_goldens(paths, tool_results=golden_tool_results_needed(criteria))


def _write(path: str, data: bytes) -> None:
    """``data`` to the file ``path`` (atomically), or to stdout for ``-``."""
    if path != "-":
        write_file(path, data)
        return
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def _nothing_to_score(stats: ImportStats) -> str:
    if not stats.spans and not stats.logs:
        return "empty input: no spans, log records or recorded runs were found; nothing to score"
    return (
        f"no agent invocation in {stats.traces} trace(s) ({stats.spans} span(s)); nothing "
        "to score (is the agent's instrumentation on?)"
    )


def _configured_criteria(ctx: click.Context, config_path: str | None) -> list[Criterion]:
    """``--config``, else criteria embedded in the settings file, else ADK's defaults."""
    if config_path is None and isinstance(ctx.obj, tuple):
        source, settings = ctx.obj
        if settings.replay.criteria is not None:
            data = {"criteria": settings.replay.criteria}
            return criteria_from_config(data, source=f"{source}: replay")
    return load_eval_config(config_path)
