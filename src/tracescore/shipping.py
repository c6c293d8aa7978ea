"""How a part's results travel from a parallel import's worker back to the parent.

Invocations and the traces near a cut go pickled: every value comes back as the worker
had it. Boundary traces went as JSON before, which changed what crossed a cut: NaN and
infinite doubles came back null, a map whose only key was ``__bytes__`` (the tag the
JSON used for bytes) came back as bytes, and values nested deeper than the 255 levels
``orjson`` writes failed the worker.

Values read from traces nest as deep as the readers accept: 1024 levels (``orjson``'s
limit for JSON text; tool arguments and results given as JSON text are parsed). Pickle
recurses once per level and stops at CPython's recursion limit (1000), so it runs under
a higher one: a parallel replay of a tool result nested 1000 deep failed with a
traceback where one process scored it.
"""

from __future__ import annotations

import pickle
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import fields
from typing import Any, Final

from tracescore.assembly import AssembledTrace

__all__ = ["decode_boundary", "dumps_deep", "encode_boundary", "loads_deep"]

#: The recursion limit while pickling: a level per nesting level of a value, plus the
#: objects around it, with room to spare.
_DEEP: Final = 4 * 1024


@contextmanager
def _deep_recursion() -> Iterator[None]:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, _DEEP))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def dumps_deep(value: object) -> bytes:
    """``pickle.dumps(value)``, for values nested as deep as the readers accept."""
    try:
        return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except RecursionError:
        with _deep_recursion():
            return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def loads_deep(data: bytes) -> Any:
    """The value of :func:`dumps_deep`'s bytes (ours: read only by the parent that forked)."""
    with _deep_recursion():
        return pickle.loads(data)


#: What stays in the worker: how to decode a trace's batches again, and parking state
#: (a boundary trace is never parked when shipped: ``drain`` restores it).
_WORKER_ONLY: Final = frozenset({"sources", "parked", "prebuilt"})
_SHIPPED: Final = tuple(f.name for f in fields(AssembledTrace) if f.name not in _WORKER_ONLY)


def _shipped(trace: AssembledTrace) -> dict[str, object]:
    """What the parent needs of a boundary trace: every field but the worker-only ones."""
    return {name: getattr(trace, name) for name in _SHIPPED}


def encode_boundary(traces: Iterable[AssembledTrace]) -> bytes:
    """Boundary traces as the worker sends them back (:func:`decode_boundary` reads them)."""
    return dumps_deep([_shipped(t) for t in traces])


def decode_boundary(raw: bytes) -> list[AssembledTrace]:
    """The traces of :func:`encode_boundary`, as the worker had them (but parking state)."""
    return [AssembledTrace(**shipped) for shipped in loads_deep(raw)]
