"""The ``tracescore`` command line: a thin layer over the library.

One module per command (``import_cmd``, ``replay_cmd``, ``serve_cmd``) on the group and
shared pieces of :mod:`tracescore.cli.app`; a command's module is imported when the
command is looked up (see ``app._COMMANDS``), so each command starts with what it uses.
The console script is :func:`run` (:mod:`tracescore.cli.entry`): :func:`main`, then a
quick exit.
"""

from tracescore.cli.app import main
from tracescore.cli.entry import run

__all__ = ["main", "run"]
