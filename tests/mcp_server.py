"""A real MCP server on 127.0.0.1 for the harnesses whose agents call tools over MCP.

The ``mcp`` SDK's ``MCPServer`` over streamable HTTP, served by uvicorn in a daemon
thread: started once per process on first use (:func:`url`), stopped at exit. The SDK
traces both sides of every request by itself: the client's ``MCP send tools/call
<tool>`` span and, under it (the client propagates its context in ``_meta``), the
server's ``tools/call <tool>`` span with ``gen_ai.operation.name = execute_tool``, both
into the global tracer provider. Under a framework's own ``execute_tool`` span that is
one call recorded three times.
"""

from __future__ import annotations

import atexit
import logging
import socket
import threading
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer

_lock = threading.Lock()
_url: list[str] = []


def forecast(city: str, days: int) -> dict[str, Any]:
    """The forecast for a city, ``days`` days ahead; there is no station in Atlantis."""
    if city == "Atlantis":
        raise ValueError(f"no station in {city}")
    return {"city": city, "days": days, "outlook": "sunny"}


def url() -> str:
    """The server's endpoint, starting it on a free port on first use."""
    with _lock:
        if not _url:
            # Listening before uvicorn runs: a client that connects first waits in the
            # backlog until the server accepts, so nothing waits for the thread to start.
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sock.listen(64)
            port = sock.getsockname()[1]
            config = uvicorn.Config(_new_server().streamable_http_app(), log_level="warning")
            server = uvicorn.Server(config)
            thread = threading.Thread(
                target=server.run, kwargs={"sockets": [sock]}, name="mcp-server", daemon=True
            )
            thread.start()

            def stop() -> None:
                server.should_exit = True
                thread.join(5)

            atexit.register(stop)
            _url.append(f"http://127.0.0.1:{port}/mcp")
        return _url[0]


def _new_server() -> MCPServer:
    """The server, its ``forecast`` tool registered.

    ``MCPServer()`` calls ``logging.basicConfig`` with a rich handler at INFO: the root
    logger of the whole test session would render every INFO record. A handler already
    on the root logger makes that call do nothing.
    """
    root = logging.getLogger()
    guard = logging.NullHandler()
    root.addHandler(guard)
    try:
        server = MCPServer("forecasts")
    finally:
        root.removeHandler(guard)
    server.tool()(forecast)
    return server
