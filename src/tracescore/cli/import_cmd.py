"""``tracescore import``: trace files → invocations, as an ADK evalset or JSON Lines."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final

import click
import orjson

from tracescore.assembly import TraceAssembler
from tracescore.cli.app import (
    Diagnostics,
    Reporter,
    idle_records_option,
    is_stream,
    jobs_option,
    main,
    open_stream,
    stderr,
    temp_beside,
    written_path,
)
from tracescore.cli.options import option
from tracescore.cli.overwrite import input_files
from tracescore.evalset import conversations_to_evalset
from tracescore.exceptions import TraceFormatError, TracescoreError
from tracescore.export import json_bytes, write_jsonl
from tracescore.formats.base import Batch
from tracescore.formats.files import read_file
from tracescore.importer import ImportStats, bulk_gc, invocations_from_batches
from tracescore.model import Invocation, group_conversations
from tracescore.parallel import Part, parallel_parts, resolve_jobs, write_jsonl_parallel

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["import_command"]

_PROGRESS_MIN_BYTES: Final = 8 * 1024 * 1024


def _format_for(output: str, fmt: str | None) -> str:
    if fmt:
        return fmt
    return "evalset" if output.endswith(".json") else "jsonl"


def _batches(files: Sequence[str], err: Diagnostics, stats: ImportStats) -> Iterator[Batch]:
    """Read files in order, with a progress bar when the input is large and stderr a TTY."""
    sizes = [_size(f) for f in files]
    console = _progress_console(err, sizes)
    if console is None:
        for path in files:
            yield from read_file(path, stdin=sys.stdin.buffer)
        return
    from rich.progress import (  # noqa: PLC0415 - lazy, see Diagnostics
        BarColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

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


@contextmanager
def _parallel_progress(
    files: Sequence[str], err: Diagnostics
) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar for a parallel import (as :func:`_batches` shows), or None.

    Refreshed only when the import reports (``auto_refresh=False``): rich's refresh
    thread would make the import spawn its workers instead of forking them.
    """
    console = _progress_console(err, [_size(f) for f in files])
    if console is None:
        yield None
        return
    from rich.progress import (  # noqa: PLC0415 - lazy, see Diagnostics
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True, auto_refresh=False) as bar:
        task = bar.add_task("importing", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)
            bar.refresh()

        yield update


def _progress_console(err: Diagnostics, sizes: Sequence[int]) -> Console | None:
    """The console of a progress bar, when the input is large and stderr a terminal."""
    return err.terminal() if sum(sizes) >= _PROGRESS_MIN_BYTES else None


def _size(path: str) -> int:
    try:
        return 0 if path == "-" else os.path.getsize(path)
    except OSError:
        return 0


def _open_output(output: str) -> tuple[IO[bytes], str | None]:
    """Open the output; files are written to a temp file and renamed when complete.

    A pipe or device (``-o >(gzip > out.gz)``, a FIFO, ``/dev/null``) is written in
    place: no temporary file (see :func:`tracescore.cli.app.is_stream`).
    """
    if output == "-":
        return sys.stdout.buffer, None
    if is_stream(output):
        return open_stream(output), None
    fd, tmp = temp_beside(output)
    return os.fdopen(fd, "wb"), tmp


@main.command("import")
@click.argument("paths", nargs=-1, required=True)
@option(
    "-o",
    "--output",
    default="-",
    show_default=True,
    help="Where to write: a file, or - for stdout.",
)
@option(
    "--format",
    "fmt",
    type=click.Choice(["evalset", "jsonl"]),
    default=None,
    help="evalset (ADK *.evalset.json) or jsonl (one invocation per line). "
    "Default: evalset when OUTPUT ends in .json, else jsonl.",
)
@option("--eval-set-id", default=None, help="eval_set_id of the written evalset.")
@option(
    "--model-context",
    is_flag=True,
    help="Also write what the model was given (jsonl only): system_instructions, "
    "tool_definitions, retrieved (documents a retriever found) and grounding "
    "(search grounding metadata).",
)
@idle_records_option
@jobs_option("large JSON Lines inputs written as jsonl")
@option("--strict", is_flag=True, help="Stop at the first bad record.")
@option("-q", "--quiet", is_flag=True, help="No summary on stderr.")
def import_command(
    paths: tuple[str, ...],
    output: str,
    fmt: str | None,
    eval_set_id: str | None,
    model_context: bool,
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
    err = stderr()
    reporter = Reporter(err, quiet=quiet)
    stats = ImportStats()
    fmt = _format_for(output, fmt)
    if model_context and fmt != "jsonl":
        # An ADK evalset has no place for retrieved documents, and its app_details want
        # tool declarations as Gemini Tool objects, which other conventions do not record.
        raise click.UsageError(
            "--model-context is written by --format jsonl only "
            "(an ADK evalset has no place for retrieved documents)"
        )
    try:
        files = input_files(paths, {"--output": output}, err, quiet=quiet)
        stats.files = len(files)
        out, tmp = _open_output(output)
        parts = _parallel_parts(files, fmt=fmt, jobs=jobs, strict=strict, idle=idle_records)
        # Without --model-context, neither output carries the model's context: not read
        # (decoding system instructions and tool declarations is ~6% of rebuilding a run).
        try:
            if parts:
                with bulk_gc(), _parallel_progress(files, err) as progress:
                    written = write_jsonl_parallel(
                        parts,
                        out,
                        stats,
                        jobs=resolve_jobs(jobs),
                        idle_records=idle_records,
                        on_error=reporter.error,
                        model_context=model_context,
                        # Spooled beside the output: the space it needs is the output's.
                        spool_dir=None if tmp is None else os.path.dirname(tmp),
                        progress=progress,
                    )
                skipped = 0
            else:
                invocations = invocations_from_batches(
                    _batches(files, err, stats),
                    stats,
                    strict=strict,
                    assembler=TraceAssembler(idle_records=idle_records),
                    on_error=reporter.error,
                    model_context=model_context,
                )
                with bulk_gc():
                    written, skipped = _write(
                        invocations,
                        out,
                        fmt=fmt,
                        eval_set_id=eval_set_id,
                        output=output,
                        model_context=model_context,
                    )
            if tmp is not None:
                out.close()
                os.replace(tmp, written_path(output))
        except BaseException:
            if tmp is not None:  # nothing half-written is left behind
                with suppress(OSError):
                    out.close()
                with suppress(OSError):
                    os.unlink(tmp)
            raise
    except TraceFormatError as exc:
        err.print(f"bad record (--strict): {exc.located()}")
        raise SystemExit(1) from None
    except TracescoreError as exc:
        err.print(f"error: {exc}")
        raise SystemExit(2) from None
    except BrokenPipeError:
        raise  # stdout closed by a reader such as head: handled by the entry point
    except OSError as exc:
        # Input errors and an output that cannot be created are TracescoreErrors by now:
        # this is writing the output or the workers' spool (a full disk, a directory gone).
        name = output if tmp is not None and exc.filename == tmp else exc.filename
        where = f" {name}" if name else ""
        err.print(f"error: cannot write{where}: {exc.strerror or exc}")
        raise SystemExit(2) from None
    reporter.summary(stats, written=written, skipped=skipped, output=output)
    if stats.bad_records:
        raise SystemExit(1)


def _parallel_parts(
    files: Sequence[str], *, fmt: str, jobs: int, strict: bool, idle: int
) -> list[Part] | None:
    """The parts of a parallel import, or None when it runs in this process.

    In-process also for evalset output: the evalset is built whole anyway.
    """
    if fmt != "jsonl":
        return None
    return parallel_parts(files, jobs=jobs, idle_records=idle, strict=strict)


def _write(
    invocations: Iterator[Invocation],
    out: IO[bytes],
    *,
    fmt: str,
    eval_set_id: str | None,
    output: str,
    model_context: bool,
) -> tuple[int, int]:
    if fmt == "jsonl":
        return write_jsonl(invocations, out, model_context=model_context), 0
    conversations = group_conversations(list(invocations))
    set_id = eval_set_id or _default_set_id(output)
    doc, written, skipped = conversations_to_evalset(conversations, eval_set_id=set_id)
    out.write(json_bytes(doc, option=orjson.OPT_INDENT_2))
    out.write(b"\n")
    return written, skipped


def _default_set_id(output: str) -> str:
    # stdout, or a device such as /dev/fd/63 (``-o >(…)``): the name says nothing.
    unnamed = output == "-" or (output.startswith(("/dev/", "/proc/")) and is_stream(output))
    name = "imported" if unnamed else Path(output).name
    for suffix in (".evalset.json", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)] or "imported"
    return name
