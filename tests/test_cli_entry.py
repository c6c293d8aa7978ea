"""The console script (``tracescore.cli.run``): same output and status, quick exit."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from bundled_examples import EXAMPLES, REPLAY_ARGS
from tracescore.cli import main

# Prints "teardown" when the process frees its heap at exit (module globals are cleared
# then), and "atexit" from an exit handler. Then runs the console script.
_PROBE = """
import atexit, sys, threading

class Probe:
    def __del__(self):
        sys.stdout.write("teardown\\n")
        sys.stdout.flush()

probe = Probe()
atexit.register(lambda: sys.stdout.write("atexit\\n"))  # flushed by the exit itself
if sys.argv[1] == "thread":
    threading.Thread(target=threading.Event().wait, daemon=True).start()
sys.argv = ["tracescore", *sys.argv[2:]]
from tracescore.cli import run
run()
"""


def python(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_output_and_status_are_the_commands() -> None:
    args = ["import", str(EXAMPLES / "traces"), "--format", "jsonl"]
    inside = CliRunner().invoke(main, args)
    outside = python("-m", "tracescore", *args)
    assert (outside.returncode, outside.stdout) == (inside.exit_code, inside.stdout)
    assert outside.stdout.count("\n") > 5  # all of it flushed before the quick exit
    replay = python("-m", "tracescore", *REPLAY_ARGS)
    assert replay.returncode == 1  # a criterion failed: the CI gate
    assert "FAILED" in replay.stdout
    usage = python("-m", "tracescore", "import")
    assert usage.returncode == 2
    assert "Traceback" not in usage.stderr


def test_exit_handlers_run_but_the_heap_is_not_torn_down() -> None:
    done = python("-c", _PROBE, "alone", "--version")
    assert done.returncode == 0
    assert done.stdout.splitlines()[-1:] == ["atexit"]
    assert "teardown" not in done.stdout
    failed = python("-c", _PROBE, "alone", "import", "/nonexistent/x.jsonl")
    assert (failed.returncode, failed.stdout.splitlines()) == (2, ["atexit"])


def test_with_another_thread_running_the_ordinary_exit_is_kept() -> None:
    done = python("-c", _PROBE, "thread", "--version")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[-2:] == ["atexit", "teardown"]


@pytest.mark.parametrize(
    ("code", "status", "stderr"), [("None", 0, ""), ("3", 3, ""), ("'boom'", 1, "boom\n")]
)
def test_exit_codes_follow_sys_exit(code: str, status: int, stderr: str) -> None:
    script = textwrap.dedent(
        f"""
        from tracescore.cli import entry
        entry._quick_exit({code})
        """
    )
    done = python("-c", script)
    assert (done.returncode, done.stderr) == (status, stderr)
