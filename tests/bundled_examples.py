"""The bundled examples (``examples/``) and README command one's replay arguments."""

from __future__ import annotations

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

#: ``tracescore replay`` on the example traces, goldens and config (README command one).
REPLAY_ARGS = [
    "replay",
    str(EXAMPLES / "traces"),
    "--goldens",
    str(EXAMPLES / "goldens"),
    "--config",
    str(EXAMPLES / "eval_config.json"),
]
