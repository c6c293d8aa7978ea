"""``tracescore serve``: an OTLP receiver (gRPC and HTTP) in front of the live scoring engine.

Build an :class:`OTLPServer` to embed the receiver in an event loop of your own, or call
:func:`run` to serve until SIGTERM/SIGINT and drain the intake on the way out.
"""

from tracescore.server.options import ServeOptions
from tracescore.server.runner import run
from tracescore.server.service import OTLPServer

__all__ = ["OTLPServer", "ServeOptions", "run"]
