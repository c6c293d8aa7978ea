"""rouge-score's Porter stemmer, without importing the whole of nltk.

rouge-score's ``DefaultTokenizer(use_stemmer=True)`` (the stemming behind ADK's
``response_match_score``) stems with ``nltk.stem.porter.PorterStemmer()``. Importing
that module first runs ``nltk/__init__.py``, which imports most of nltk plus numpy and
regex: ~0.2-0.5 s and ~30 MB on the first ROUGE score of every process, be it a replay or
the live scorer's thread inside an agent. The stemmer itself is one self-contained file:
its only package imports are the abstract base ``nltk.stem.api.StemmerI`` and two
helpers that only its ``demo()`` calls.

So :func:`porter_stemmer` executes the installed ``nltk/stem/porter.py`` in a private
module: its import of ``nltk.stem.api`` gets the installed ``nltk/stem/api.py``, executed
the same way, and the two ``demo()`` helpers get stand-ins that refuse to run. The code
that stems is nltk's own file; nothing is registered in ``sys.modules``, so anyone's
later ``import nltk`` is untouched. When the files are not where expected, or import
anything else of nltk, or fail to run, the ordinary import is used instead (logged).
``tests/criteria/test_stemmer.py`` holds the result to nltk's own stemmer.
"""

from __future__ import annotations

import builtins
import functools
import importlib.util
import logging
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

__all__ = ["Stemmer", "porter_stemmer"]

logger = logging.getLogger(__name__)


class Stemmer(Protocol):
    """What rouge-score's ``tokenize.tokenize`` calls on its stemmer."""

    def stem(self, word: str) -> str:
        """The stem of one lower-case word."""
        ...


class _DemoOnly:
    """Stand-in for a helper that only ``PorterStemmer``'s ``demo()`` uses."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __call__(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError(f"{self._name} is not available to the private Porter stemmer")

    def __getattr__(self, attr: str) -> _DemoOnly:
        return _DemoOnly(f"{self._name}.{attr}")


class _Standins(ModuleType):
    """``nltk`` and ``nltk.termsec`` as ``porter.py`` sees them: ``redos``, ``safe_print``."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.redos = _DemoOnly("nltk.redos")
        self.safe_print = _DemoOnly("nltk.termsec.safe_print")


class _UnexpectedImportError(ImportError):
    """The file imports a part of nltk this module does not provide."""


def _exec_file(path: Path, name: str, provided: Mapping[str, object]) -> ModuleType:
    """Run ``path`` as module ``name`` (not registered); nltk imports come from ``provided``."""
    real_import = builtins.__import__

    def private_import(
        wanted: str,
        globals: Mapping[str, object] | None = None,
        locals: Mapping[str, object] | None = None,
        fromlist: tuple[str, ...] | list[str] = (),
        level: int = 0,
    ) -> Any:
        if wanted in provided and level == 0:
            return provided[wanted]
        if level or wanted == "nltk" or wanted.startswith("nltk."):
            raise _UnexpectedImportError(f"{path.name} imports {wanted!r}")
        return real_import(wanted, globals, locals, fromlist, level)

    module = ModuleType(name)
    module.__file__ = str(path)
    namespace = module.__dict__
    namespace["__builtins__"] = {**vars(builtins), "__import__": private_import}
    # nltk's own installed file, run as its import would run it.
    exec(compile(path.read_bytes(), str(path), "exec"), namespace)
    return module


def _private_porter() -> Stemmer:
    spec = importlib.util.find_spec("nltk")  # finds the package without running it
    if spec is None or not spec.submodule_search_locations:
        raise _UnexpectedImportError("nltk is not installed as a package")
    root = Path(next(iter(spec.submodule_search_locations)))
    api = _exec_file(root / "stem" / "api.py", "nltk.stem.api", {})
    standins = _Standins("nltk")
    porter = _exec_file(
        root / "stem" / "porter.py",
        "nltk.stem.porter",
        {"nltk": standins, "nltk.termsec": standins, "nltk.stem.api": api},
    )
    stemmer: Stemmer = porter.PorterStemmer()
    return stemmer


@functools.cache
def porter_stemmer() -> Stemmer:
    """The stemmer rouge-score's ``DefaultTokenizer(use_stemmer=True)`` makes.

    ``nltk.stem.porter.PorterStemmer()`` (mode ``NLTK_EXTENSIONS``), built from nltk's
    installed file without importing the nltk package, else by the ordinary import. One
    instance per process; its ``stem`` keeps no state between calls.
    """
    try:
        return _private_porter()
    except Exception as exc:  # any failure: the ordinary import is the fallback
        logger.info("Porter stemmer: importing nltk (%s)", exc)
    from nltk.stem import porter  # noqa: PLC0415 - ~0.2-0.5 s, only when the above failed

    stemmer: Stemmer = porter.PorterStemmer()
    return stemmer
