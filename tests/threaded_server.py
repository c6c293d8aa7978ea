"""A local HTTP server run from a thread, as a context manager: the fakes' common part."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Generic, TypeVar

from typing_extensions import Self

T = TypeVar("T")


class ScriptedServer(ThreadingHTTPServer, Generic[T]):
    """An HTTP server on a free port of 127.0.0.1 whose handler pops scripted replies.

    ``script`` is what the handler answers, in order (under ``lock``); the handler keeps
    each JSON request body in ``requests``.
    """

    daemon_threads = True

    def __init__(self, script: Sequence[T], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()


class ThreadedServer:
    """Serves ``server`` (bound to 127.0.0.1) from a daemon thread while in the ``with``.

    No sleeps: entering waits on an Event set by the thread; leaving shuts it down.
    """

    def __init__(self, server: ThreadingHTTPServer, name: str) -> None:
        self._server = server
        self._name = name
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        host, port = server.server_address[:2]
        self.root_url = f"http://{host!s}:{port}"

    def _serve(self) -> None:
        self._ready.set()
        # A short poll keeps shutdown() quick (the default waits up to 0.5 s).
        self._server.serve_forever(poll_interval=0.01)

    def __enter__(self) -> Self:
        self._thread.start()
        if not self._ready.wait(timeout=5):
            raise RuntimeError(f"{self._name} server thread did not start")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving and join the thread."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def send(handler: BaseHTTPRequestHandler, status: int, data: bytes, content_type: str) -> None:
    """Answer ``handler``'s request with ``data`` (its length stated: keep-alive works)."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
