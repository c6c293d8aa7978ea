"""The ``tracescore`` command line: a thin layer over the library.

One module per command (``import_cmd``, ``replay_cmd``, ``serve_cmd``) on the group and
shared pieces of :mod:`tracescore.cli.app`; importing this package registers them all.
"""

from tracescore.cli import import_cmd, replay_cmd, serve_cmd
from tracescore.cli.app import main

__all__ = ["import_cmd", "main", "replay_cmd", "serve_cmd"]
