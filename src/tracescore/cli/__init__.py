"""The ``tracescore`` command line: a thin layer over the library.

One module per command (``import_cmd``, ``replay_cmd``, ``serve_cmd``) on the group and
shared pieces of :mod:`tracescore.cli.app`; a command's module is imported when the
command is looked up (see ``app._COMMANDS``), so each command starts with what it uses.
"""

from tracescore.cli.app import main

__all__ = ["main"]
