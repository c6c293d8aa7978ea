"""The ``tracescore`` command group and what its commands share.

Exit codes: 0 clean; 1 some records were bad (output still written) or ``--strict``
stopped at one; 2 usage error or unreadable input. User mistakes are one line on
stderr, never a traceback. Every option can also be set from the environment
(``TRACESCORE_<COMMAND>_<OPTION>``, e.g. ``TRACESCORE_IMPORT_STRICT=1``).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final

import click

from tracescore import __version__
from tracescore.assembly import DEFAULT_IDLE_RECORDS
from tracescore.cli.options import option
from tracescore.exceptions import (
    ConfigError,
    OutputError,
    TraceFormatError,
    TracescoreError,
)
from tracescore.importer import ImportStats

if TYPE_CHECKING:
    from rich.console import Console

    from tracescore.judge.config import JudgeSettings

__all__ = [
    "Diagnostics",
    "Reporter",
    "check_output",
    "idle_records_option",
    "is_stream",
    "jobs_option",
    "judge_options",
    "judge_settings",
    "main",
    "open_stream",
    "stderr",
    "temp_beside",
    "write_file",
    "written_path",
]

_SHOWN_ERRORS: Final = 20


class Diagnostics:
    """Where a command's diagnostics go: plain lines on stderr.

    A line is written as given: no markup, emoji codes, highlighting or wrapping. rich
    is imported only for a progress bar (:meth:`terminal`): importing it was a tenth of
    ``tracescore import``'s start-up (63M of 603M instructions, ~15-20 ms), paid by
    every import, piped or not.
    """

    def print(self, line: str) -> None:
        """Write ``line`` and a newline to stderr, at once (nothing without a stderr)."""
        # sys.stderr as it is now: under a progress bar, rich's proxy, which prints the
        # line above the bar (and click's test runner swaps in its own).
        stream = sys.stderr
        if stream is not None:
            stream.write(f"{line}\n")
            stream.flush()

    def terminal(self) -> Console | None:
        """Rich's console on stderr when stderr is a terminal (as rich tells it), else None.

        Without a TTY on stderr, rich calls it a terminal only when ``FORCE_COLOR`` or
        ``TTY_COMPATIBLE=1`` says so: rich is not imported for that answer.
        """
        environ = os.environ
        if (
            not _isatty(sys.stderr)
            and not environ.get("FORCE_COLOR")
            and environ.get("TTY_COMPATIBLE") != "1"
        ):
            return None
        from rich.console import Console  # noqa: PLC0415 - lazy, see the class docstring

        console = Console(stderr=True, highlight=False, soft_wrap=True)
        return console if console.is_terminal else None


def _isatty(stream: IO[str] | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except ValueError:  # closed (rich answers False too)
        return False


def stderr() -> Diagnostics:
    """The diagnostics of a command (:class:`Diagnostics`)."""
    return Diagnostics()


#: Each command's module, imported only when the command runs (or help lists it):
#: ``tracescore import`` does not pay for the judge, pydantic settings and the servers,
#: ~0.45 s of start-up that matters to every small import.
_COMMANDS: Final = {
    "import": "tracescore.cli.import_cmd",
    "replay": "tracescore.cli.replay_cmd",
    "serve": "tracescore.cli.serve_cmd",
}


class _LazyGroup(click.Group):
    """A group whose commands register themselves when their module is imported."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _COMMANDS:
            importlib.import_module(_COMMANDS[cmd_name])
        return super().get_command(ctx, cmd_name)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    # Imported when asked only: the rest of the CLI's start-up never needs it.
    from tracescore.build_info import describe  # noqa: PLC0415

    click.echo(f"tracescore {__version__} ({describe()})")
    ctx.exit()


@click.group(cls=_LazyGroup, context_settings={"auto_envvar_prefix": "TRACESCORE"})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    allow_from_autoenv=False,
    help="Show the version, and whether the hot modules run compiled, and exit.",
)
@option(
    "--log-level",
    default="WARNING",
    show_default=True,
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    help="Verbosity of tracescore's own log on stderr.",
)
@option(
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
    from tracescore.settings import load_settings  # noqa: PLC0415 - lazy, see _COMMANDS

    try:
        settings = load_settings(settings_path)
    except TracescoreError as exc:
        stderr().print(f"error: {exc}")
        ctx.exit(2)
    ctx.default_map = settings.default_map()
    ctx.obj = (settings_path, settings)


#: Shared by the commands that assemble traces from files.
idle_records_option = option(
    "--idle-records",
    type=click.IntRange(min=1),
    default=DEFAULT_IDLE_RECORDS,
    show_default=True,
    help="Records without news of a trace (root seen) before it counts as complete. "
    "Raise it when the summary reports late records.",
)


def jobs_option(what: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """``-j/--jobs``: processes for ``what`` (0, the default, means one per CPU)."""
    return option(
        "-j",
        "--jobs",
        type=click.IntRange(min=0),
        default=0,
        show_default="0 = one per CPU",
        help=f"Processes for {what} (split at line boundaries).",
    )


class Reporter:
    """Prints located errors as they come (the first few) and the closing summary."""

    def __init__(self, console: Diagnostics, *, quiet: bool) -> None:
        self.console = console
        self.quiet = quiet
        self.shown = 0

    def error(self, error: TraceFormatError) -> None:
        """Show one bad record (only the first few)."""
        self.shown += 1
        if self.shown <= _SHOWN_ERRORS:
            self.console.print(f"bad record: {error.located()}")

    def summary(self, stats: ImportStats, *, written: int, skipped: int, output: str) -> None:
        """Print what the import read and what became of it."""
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
            self.console.print(line)


_JUDGE_OPTIONS = (
    option(
        "--judge-backend",
        type=click.Choice(["gemini", "openai"]),
        default=None,
        help="Judge provider for LLM-judged criteria (default: settings [judge], else gemini).",
    ),
    option("--judge-model", default=None, help="Default judge model (gemini-2.5-flash)."),
    option("--judge-base-url", default=None, help="Judge endpoint (required for openai)."),
    option(
        "--judge-cache",
        default=None,
        help="SQLite file caching judge replies: a re-run pays nothing twice.",
    ),
    option(
        "--judge-concurrency",
        type=click.IntRange(min=1),
        default=None,
        help="Judge calls in flight.",
    ),
    option(
        "--judge-budget-usd",
        type=click.FloatRange(min=0, min_open=True),
        default=None,
        help="Daily judge spend cap; beyond it criteria are NOT_EVALUATED 'budget exhausted'.",
    ),
)


def judge_options(command: Callable[..., None]) -> Callable[..., None]:
    """The ``--judge-*`` flags shared by ``replay`` and ``serve``."""
    for judge_option in reversed(_JUDGE_OPTIONS):
        command = judge_option(command)
    return command


def judge_settings(
    ctx: click.Context,
    *,
    backend: str | None,
    model: str | None,
    base_url: str | None,
    cache: str | None,
    concurrency: int | None,
    budget_usd: float | None,
) -> JudgeSettings:
    """Settings file's ``[judge]`` with the ``--judge-*`` flags (or their env vars) on top."""
    from pydantic import ValidationError  # noqa: PLC0415 - lazy, see _COMMANDS

    from tracescore.judge.config import JudgeSettings  # noqa: PLC0415

    base = ctx.obj[1].judge if isinstance(ctx.obj, tuple) else JudgeSettings()
    given = {
        k: v
        for k, v in {
            "backend": backend,
            "model": model,
            "base_url": base_url,
            "cache": cache,
            "concurrency": concurrency,
            "daily_budget_usd": budget_usd,
        }.items()
        if v is not None
    }
    try:
        return JudgeSettings.model_validate({**base.model_dump(), **given})
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"judge.{'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def written_path(path: str) -> str:
    """The file an output named ``path`` is renamed onto: the target of a symbolic link.

    Renamed onto ``path`` itself, a link (``latest.jsonl -> runs/today.jsonl``) became a
    regular file and its target kept its old content; a shell's ``>`` writes the target.
    """
    return os.path.realpath(path) if os.path.islink(path) else path


def temp_beside(path: str) -> tuple[int, str]:
    """A new temporary file beside ``path`` (descriptor, name), to rename onto it.

    Beside :func:`written_path`, the file a link points to, that is.

    Raises:
        OutputError: the directory does not exist, ``path`` is a directory, or no file
            can be created there (read-only or pseudo file system, permissions, full
            disk). The message names ``path``, not the temporary file.

    """
    target = Path(written_path(path))
    if not target.parent.is_dir():
        raise OutputError(f"{path}: directory {target.parent} does not exist")
    if target.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    # mkstemp makes the file private (0600); the output gets the mode ``open`` would
    # give it: an existing file's own, else the usual one under the umask.
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except OSError:
        mode = 0o666 & ~_umask()
    os.fchmod(fd, mode)
    return fd, tmp


def _umask() -> int:
    """The umask of this process, read without changing it where Linux allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # elsewhere the only way to read it is to set it
    os.umask(mask)
    return mask


def is_stream(path: str) -> bool:
    """True when ``path`` is a pipe or a device: written in place, never replaced.

    A FIFO, a process substitution (``-o >(gzip > out.gz)``: ``/dev/fd/63``) or a device
    (``/dev/stdout``, ``/dev/null``). Written to a temporary file renamed over it, a FIFO
    was replaced by a regular file (its reader got nothing) and ``/dev/fd/N`` could not
    be written at all.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def open_stream(path: str) -> IO[bytes]:
    """``path`` (see :func:`is_stream`) opened for writing.

    Raises:
        OutputError: it cannot be opened for writing.

    """
    try:
        return open(path, "wb")
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def check_output(path: str) -> None:
    """Fail now, before any long work, when ``path`` could not be written.

    Creates a temporary file beside it and removes it again: the one check that holds
    for permissions, read-only and pseudo file systems alike. A pipe or device is only
    checked for write permission (opening a FIFO would wait for its reader).

    Raises:
        OutputError: as :func:`temp_beside`.

    """
    if is_stream(path):
        if not os.access(path, os.W_OK):
            raise OutputError(f"cannot write {path}: permission denied")
        return
    fd, tmp = temp_beside(path)
    os.close(fd)
    os.unlink(tmp)


def write_file(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp file, then rename); a stream in place.

    Nothing is left behind when it fails: ``path`` keeps its old content (if any) and
    the temporary file is removed.

    Raises:
        OutputError: as :func:`temp_beside`, or the write or rename failed.

    """
    if is_stream(path):
        try:
            with open_stream(path) as stream:
                stream.write(data)
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        return
    fd, tmp = temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, written_path(path))
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
