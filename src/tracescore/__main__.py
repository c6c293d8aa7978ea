"""``python -m tracescore``: the command line."""

from tracescore.cli import main

main()
