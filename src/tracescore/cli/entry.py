"""The ``tracescore`` console script: the command group, then a quick exit.

When a command is done, the heap it built (a replay's goldens, invocations and results:
millions of objects) would be freed one object at a time before the process ends:
~0.2 s of a 200k-span replay, after its output is already written. So once a command
has finished and the main thread is the only one left, the process runs its exit
handlers (``atexit``: logging's flush among them), flushes the standard streams and
ends with ``os._exit``, leaving the memory to the operating system, as mypy does. With
other threads still running, the ordinary exit (which waits for them) is kept.

In-process callers (tests, ``click.testing.CliRunner``) use
:func:`tracescore.cli.app.main` and never reach this.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

from tracescore.cli.app import main

__all__ = ["run"]

#: What CPython exits with when flushing stdout fails at shutdown (e.g. a closed pipe).
_FLUSH_FAILED = 120


def run() -> NoReturn:
    """Run the command line; end the process with the command's exit status."""
    try:
        main()
    except SystemExit as done:
        # Still inside the handler: the command's frames (and all they hold) stay alive
        # until os._exit, so nothing is freed on the way out.
        if threading.active_count() == 1:
            _quick_exit(done.code)
        raise
    raise SystemExit(0)  # click's standalone mode always raises SystemExit


def _quick_exit(code: object) -> NoReturn:
    """What ``sys.exit(code)`` ends with, without tearing the heap down."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): printed, status 1
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed pipe or stream
            if stream is sys.stdout and status == 0:
                status = _FLUSH_FAILED
    os._exit(status)
