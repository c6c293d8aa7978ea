"""CPython's own case mapping, for the modules compiled with mypyc.

Compiled with mypyc (``hatch_build.py``), ``text.lower()`` becomes mypyc's own
character-by-character mapping before Python 3.13, which misses Unicode's final-sigma
rule: ``"ΣΑΣ".lower()`` gives ``"σασ"`` where CPython gives ``"σας"``. Called through a
name, the method is CPython's. Compiled modules lower-case through :data:`lower`, which
``tests/test_compiled.py`` holds them to; ``str.upper`` maps the same either way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

__all__ = ["lower"]

#: ``str.lower``, CPython's (see the module docstring).
lower: Final[Callable[[str], str]] = str.lower
