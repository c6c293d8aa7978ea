"""``tracescore serve`` as a subprocess on free ports of 127.0.0.1, for end-to-end tests.

The service runs in its own process (its own signals and event loop) and writes the ports
it bound to ``--ready-file``; :func:`start_service` waits for that file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

#: Settings of a quick service: short idle window, two deterministic criteria.
DEFAULT_SETTINGS = (
    "[live]\nidle_s = 0.2\ntick_s = 0.05\n"
    "criteria = { tool_trajectory_avg_score = 1.0, response_match_score = 0.5 }\n"
)
SeriesKey = tuple[str, tuple[tuple[str, str], ...]]


class Service:
    """A running ``tracescore serve``: its process and bound ports."""

    def __init__(self, proc: subprocess.Popen[bytes], ports: dict[str, int]) -> None:
        self.proc = proc
        self.http_port = ports["http_port"]
        self.grpc_port = ports["grpc_port"]

    def metrics(self) -> dict[SeriesKey, float]:
        """Every sample of ``/metrics``, keyed by (name, sorted labels)."""
        text = httpx.get(f"http://127.0.0.1:{self.http_port}/metrics").text
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }

    def wait_for(
        self, key: SeriesKey, want: float, *, deadline_s: float = 30
    ) -> dict[SeriesKey, float]:
        """Scrape until ``key`` reaches ``want`` (the service scores asynchronously)."""
        deadline = time.monotonic() + deadline_s
        while True:
            metrics = self.metrics()
            if metrics.get(key, 0) >= want or time.monotonic() > deadline:
                return metrics
            time.sleep(0.05)  # polling another process, not one of our threads

    def stop(self) -> None:
        """Kill the service if it still runs."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def start_service(
    tmp_path: Path,
    *args: str,
    settings: str | Path = DEFAULT_SETTINGS,
    env: dict[str, str] | None = None,
) -> Service:
    """Start ``tracescore --settings <settings> serve <args>`` on free ports; wait until ready.

    ``settings`` is the settings text (written to ``tmp_path``) or an existing file. The
    service inherits this environment without its ``TRACESCORE_*`` variables (a
    developer's own would change the service's options), plus ``env``.
    """
    ready = tmp_path / "ready.json"
    if isinstance(settings, Path):
        settings_file = settings
    else:
        settings_file = tmp_path / "tracescore.toml"
        settings_file.write_text(settings)
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("TRACESCORE_")}
    cmd = [
        sys.executable, "-m", "tracescore", "--settings", str(settings_file), "serve",
        "--grpc-port", "0", "--http-port", "0", "--ready-file", str(ready), *args,
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, stderr=subprocess.PIPE, env={**inherited, **(env or {})}, cwd=tmp_path
    )
    deadline = time.monotonic() + 60
    while not ready.exists():  # the service's start-up, not one of our threads
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(proc.stderr.read().decode() if proc.stderr else "no start")
        time.sleep(0.05)
    return Service(proc, json.loads(ready.read_text()))
