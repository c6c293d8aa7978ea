"""``python -m tracescore``: the command line."""

from tracescore.cli import run

run()
