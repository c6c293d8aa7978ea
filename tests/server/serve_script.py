"""Runs ``tracescore.server.run`` with a test intake, for ``test_receiver_run.py``.

Usage: ``python serve_script.py MARKER DRAIN_MODE DRAIN_TIMEOUT_S``

* prints ``PORTS <http> <grpc>`` on stdout once both listeners are bound;
* at shutdown the intake's ``drain`` writes MARKER (JSON: the records it holds, the
  timeout it was given, whether the server still reported ready) and then, by
  DRAIN_MODE: ``ok`` returns True, ``late`` returns False (did not finish in time),
  ``hang`` never returns;
* exits with ``run``'s return value.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from pathlib import Path

from prometheus_client import CollectorRegistry
from server_helpers import ListIntake

from tracescore.server import OTLPServer, ServeOptions, run


class DrainingIntake(ListIntake):
    def __init__(self, marker: Path, mode: str) -> None:
        super().__init__()
        self.marker = marker
        self.mode = mode
        self.server: OTLPServer | None = None

    def drain(self, timeout_s: float) -> bool:
        draining = self.server is not None and self.server.draining
        state = {
            "spans": len(self.spans),
            "logs": len(self.logs),
            "timeout_s": timeout_s,
            "draining": draining,
            "thread": threading.current_thread().name,
        }
        self.marker.write_text(json.dumps(state), encoding="utf-8")
        if self.mode == "hang":
            threading.Event().wait()
        return self.mode == "ok"


def main() -> int:
    marker, mode, timeout = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    intake = DrainingIntake(marker, mode)

    def started(server: OTLPServer) -> None:
        intake.server = server
        print(f"PORTS {server.http_port} {server.grpc_port}", flush=True)

    options = ServeOptions(http_port=0, grpc_port=0, drain_timeout_s=timeout)
    return run(intake, registry=CollectorRegistry(), options=options, on_started=started)


if __name__ == "__main__":
    sys.exit(main())
