"""Real Prometheus binaries for the tests: find them, start them on 127.0.0.1, stop them.

The Debian packages ``prometheus`` (``prometheus``, ``promtool``) and
``prometheus-pushgateway`` provide them. Without a binary a test skips, unless
``TRACESCORE_REQUIRE_PROMETHEUS`` is set (as in CI), where a missing binary is a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

READY_DEADLINE_S = 30.0


def binary(name: str) -> str:
    """The path of the ``name`` executable; skip (or fail in CI) when it is missing."""
    found = shutil.which(f"/usr/bin/{name}") or shutil.which(name)
    if found is None:
        if os.environ.get("TRACESCORE_REQUIRE_PROMETHEUS"):
            pytest.fail(f"{name} is missing and TRACESCORE_REQUIRE_PROMETHEUS is set")
        pytest.skip(f"{name} is not installed (Debian packages prometheus, prometheus-pushgateway)")
    return found


def promtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run ``promtool`` with ``args``; its exit code and output, never raising."""
    return subprocess.run(
        [binary("promtool"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def get(url: str, *, timeout_s: float = 5.0) -> bytes:
    """The body of ``GET url`` (``urllib.error.URLError`` on failure)."""
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:
        body: bytes = resp.read()
        return body


@contextmanager
def running(cmd: Sequence[str], *, ready_url: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``cmd`` until the block ends; enter once ``ready_url`` answers 200.

    Output goes to ``log``. Fails the test if the process exits or is not ready within
    :data:`READY_DEADLINE_S`. Terminated (then killed) on exit.
    """
    with log.open("wb") as out:
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + READY_DEADLINE_S
            while True:
                if proc.poll() is not None:
                    pytest.fail(
                        f"{cmd[0]} exited with {proc.returncode}: {log.read_text()[-2000:]}"
                    )
                try:
                    get(ready_url)
                    break
                except (urllib.error.URLError, ConnectionError):
                    pass  # not listening or not ready yet
                if time.monotonic() > deadline:
                    pytest.fail(f"{cmd[0]} not ready within {READY_DEADLINE_S} s")
                time.sleep(0.05)  # polling an external server's readiness, not our threads
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
