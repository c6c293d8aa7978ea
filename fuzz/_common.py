"""What the harnesses share: where the contract lives, and the origin of fuzzed input.

The contract (record checks, import counts, time and memory bounds) is the one the
hypothesis tests use, in ``tests/fuzz/fuzz_helpers.py``; this puts that folder on
``sys.path`` so a harness can import it under ``atheris.instrument_imports``.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HELPERS = REPO / "tests" / "fuzz"
if str(HELPERS) not in sys.path:
    sys.path.insert(0, str(HELPERS))

#: Instrumented for coverage: only tracescore's own code.
INSTRUMENT = ["tracescore"]
