"""Shared test setup: tests import their helpers (spanbuilder, harnesses) from this folder."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent / "formats"))
