"""A command's diagnostics on stderr: plain lines, and rich only for a terminal."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from bundled_examples import EXAMPLES
from tracescore.cli import import_cmd, main
from tracescore.cli.app import Diagnostics, Reporter
from tracescore.cli.import_cmd import _batches, _parallel_progress
from tracescore.importer import ImportStats, invocations_from_batches

ADK_V1 = EXAMPLES / "traces" / "adk-schema1-legacy.jsonl"


@pytest.fixture
def plain_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No variable that makes rich call a non-TTY a terminal (CI systems set some)."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def pty() -> Iterator[io.TextIOWrapper]:
    """A writable pseudo-terminal (its other end read by nobody: only small writes).

    Set as sys.stderr in the test itself: pytest's capture puts its own back between a
    fixture's set-up and the test.
    """
    leader, follower = os.openpty()
    stream = open(follower, "w", encoding="utf-8", closefd=True)  # noqa: SIM115 - closed below
    try:
        yield stream
    finally:
        stream.close()
        os.close(leader)


def test_lines_go_to_the_current_stderr_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = io.StringIO()
    monkeypatch.setattr(sys, "stderr", buf)
    text = "bad record: t.jsonl:3: [bold]not markup[/bold] :smile: stays text " + "x" * 300
    Diagnostics().print(text)
    Diagnostics().print("second")
    # No markup, no emoji code replaced, no wrapping at a terminal width.
    assert buf.getvalue() == f"{text}\nsecond\n"


@pytest.mark.usefixtures("plain_env")
def test_no_terminal_without_a_tty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert Diagnostics().terminal() is None


@pytest.mark.usefixtures("plain_env")
def test_a_tty_is_a_terminal(pty: io.TextIOWrapper, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", pty)
    console = Diagnostics().terminal()
    assert console is not None
    assert console.is_terminal
    assert console.file is pty


@pytest.mark.usefixtures("plain_env")
def test_rich_has_the_last_word_on_a_tty(
    pty: io.TextIOWrapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stderr", pty)
    monkeypatch.setenv("TTY_COMPATIBLE", "0")  # rich: this device takes no escapes
    assert Diagnostics().terminal() is None


@pytest.mark.usefixtures("plain_env")
@pytest.mark.parametrize(("name", "value"), [("FORCE_COLOR", "1"), ("TTY_COMPATIBLE", "1")])
def test_variables_that_make_rich_see_a_terminal_still_do(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    monkeypatch.setenv(name, value)
    console = Diagnostics().terminal()
    assert console is not None
    assert console.is_terminal


@pytest.mark.usefixtures("plain_env")
def test_an_empty_force_color_is_no_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    monkeypatch.setenv("FORCE_COLOR", "")  # rich: set but empty means no
    assert Diagnostics().terminal() is None


def test_a_piped_import_never_loads_rich(tmp_path: Path) -> None:
    """rich is a fifth of the import's start-up: a piped import, summary and all, skips it."""
    script = (
        "import sys\n"
        "from tracescore.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit as exit:\n"
        "    print('rich' in sys.modules, exit.code)\n"
    )
    out = tmp_path / "out.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    done = subprocess.run(
        [sys.executable, "-c", script, "import", str(EXAMPLES / "traces"), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.stdout.split() == ["False", "0"], done.stderr
    assert "invocations" in done.stderr  # the summary was written all the same
    assert out.stat().st_size > 0


def test_the_summary_and_errors_of_an_import_are_plain_lines(tmp_path: Path) -> None:
    good = ADK_V1.read_text().splitlines()[0]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(f"{good}\n[bold]x[/bold]\n:smile: {{\n")
    result = CliRunner().invoke(main, ["import", str(bad), "-o", str(tmp_path / "o.jsonl")])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0] == (
        f"bad record: {bad}:2: invalid JSON: unexpected character, expected a JSON value:"
        " line 1 column 2 (char 1)"
    )
    assert lines[1].startswith(f"bad record: {bad}:3: invalid JSON")
    assert lines[2] == "read      1 file(s), 3 line(s) or message(s), 4 span(s), 0 log record(s)"
    assert lines[-1] == "bad records 2"


class _Terminal(Diagnostics):
    """Diagnostics whose stderr is the terminal ``console`` writes to."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def terminal(self) -> Console | None:
        return self.console


def _on_terminal() -> tuple[_Terminal, io.StringIO]:
    """A terminal 80 columns wide, made as :meth:`Diagnostics.terminal` makes its console."""
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=80, highlight=False, soft_wrap=True)
    return _Terminal(console), buf


def test_progress_bar_on_a_terminal_for_large_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(import_cmd, "_PROGRESS_MIN_BYTES", 1)
    err, buf = _on_terminal()
    batches = list(_batches([str(ADK_V1)], err, ImportStats()))
    assert batches
    assert "importing" in buf.getvalue()
    # No terminal on stderr (pytest captures it): no bar, the same batches.
    assert len(list(_batches([str(ADK_V1)], Diagnostics(), ImportStats()))) == len(batches)
    monkeypatch.setattr(import_cmd, "_PROGRESS_MIN_BYTES", ADK_V1.stat().st_size + 1)
    err, small = _on_terminal()
    assert len(list(_batches([str(ADK_V1)], err, ImportStats()))) == len(batches)
    assert small.getvalue() == ""  # a small input shows no bar, even on a terminal


def test_a_bad_record_found_under_the_bar_is_printed_above_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the bar shows, rich stands in for sys.stderr: the line goes through it."""
    monkeypatch.setattr(import_cmd, "_PROGRESS_MIN_BYTES", 1)
    path = tmp_path / "t.jsonl"
    path.write_text(ADK_V1.read_text() + "not json\n")
    err, buf = _on_terminal()
    stats = ImportStats()
    reporter = Reporter(err, quiet=False)
    found = list(
        invocations_from_batches(_batches([str(path)], err, stats), stats, on_error=reporter.error)
    )
    assert found
    shown = buf.getvalue()
    line = len(ADK_V1.read_text().splitlines()) + 1
    # One line, longer than the terminal is wide: not wrapped.
    assert f"bad record: {path}:{line}: invalid JSON: invalid literal, expected 'null'" in shown
    assert "importing" in shown


def test_parallel_progress_on_a_terminal_for_large_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(import_cmd, "_PROGRESS_MIN_BYTES", 1)
    err, buf = _on_terminal()
    with _parallel_progress([str(ADK_V1)], err) as update:
        assert update is not None
        update(512, 1024)
    assert "50%" in buf.getvalue()
    with _parallel_progress([str(ADK_V1)], Diagnostics()) as update:
        assert update is None  # no terminal on stderr


@pytest.mark.usefixtures("plain_env")
def test_no_stderr_at_all_is_no_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", None)  # pythonw, or a daemon that closed it
    Diagnostics().print("lost, quietly")
    assert Diagnostics().terminal() is None
