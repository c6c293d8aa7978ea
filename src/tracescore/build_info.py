"""Which of tracescore's modules run compiled (mypyc) in this installation.

A regular install (``pip install .``) compiles the hot modules that ``hatch_build.py``
lists; an editable one, a build with ``TRACESCORE_PURE_PYTHON=1`` or one on a machine
that could not compile runs them all as Python, with the same results, more slowly.
``tracescore --version`` says which.
"""

from __future__ import annotations

from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

__all__ = ["compiled_modules", "describe"]

_PACKAGE = Path(__file__).resolve().parent
#: The library mypyc links every compiled module into: not a module of ours to import.
_LIBRARY = "_compiled__mypyc"


def compiled_modules() -> list[str]:
    """The dotted names of the installed compiled modules, sorted (none when pure Python).

    Read from the files beside the package's sources, without importing anything.
    """
    names = set()
    for suffix in EXTENSION_SUFFIXES:
        for path in _PACKAGE.rglob(f"*{suffix}"):
            stem = path.name[: -len(suffix)]
            if stem != _LIBRARY and (path.parent / f"{stem}.py").is_file():
                parts = path.parent.relative_to(_PACKAGE.parent).parts
                names.add(".".join((*parts, stem)))
    return sorted(names)


def describe() -> str:
    """One line for ``--version``: how many modules run compiled, or pure Python."""
    count = len(compiled_modules())
    if not count:
        return "pure Python"
    return f"{count} modules compiled with mypyc"
