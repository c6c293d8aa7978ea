"""How a part's results travel from a parallel import's worker back to the parent.

Invocations go pickled (:func:`dumps_deep`), the traces near a cut as JSON
(:func:`encode_boundary`). Values read from traces nest as deep as the readers accept:
1024 levels (``orjson``'s limit for JSON text; tool arguments and results given as JSON
text are parsed). Pickle recurses once per level, so it stops at CPython's recursion
limit (1000), and ``orjson`` writes at most 255 levels: without the fallbacks below, a
parallel replay of a trace with a tool result nested 1000 deep failed with a traceback
where one process scored it.
"""

from __future__ import annotations

import base64
import pickle
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import fields
from typing import Any, Final

import orjson

from tracescore.assembly import AssembledTrace
from tracescore.spans import LogRecord, Origin, SpanEvent, SpanRecord

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
    """Boundary traces as the worker sends them back (:func:`decode_boundary` reads them).

    As JSON; pickled when a value is nested deeper than ``orjson`` writes.
    """
    shipped = [_shipped(t) for t in traces]
    try:
        return orjson.dumps(shipped, default=_bytes_default)
    except orjson.JSONEncodeError:
        return dumps_deep(shipped)


def decode_boundary(raw: bytes) -> list[AssembledTrace]:
    """The traces of :func:`encode_boundary`, as the worker had them (but parking state)."""
    if raw[:1] == _PICKLED:  # JSON never starts with this byte
        return [AssembledTrace(**d) for d in loads_deep(raw)]
    return [_trace(d) for d in orjson.loads(raw)]


#: The first byte of a pickle (protocol 2 and later).
_PICKLED: Final = pickle.PROTO


# Boundary traces travel as orjson (dataclasses serialise natively); bytes values are
# tagged so they come back as bytes.
def _bytes_default(value: object) -> object:
    if isinstance(value, bytes):
        return {"__bytes__": base64.b64encode(value).decode()}
    raise TypeError(type(value).__name__)


def _restore(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and "__bytes__" in value:
            return base64.b64decode(value["__bytes__"])
        return {k: _restore(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore(v) for v in value]
    return value


def _trace(d: dict[str, Any]) -> AssembledTrace:
    spans, logs = d.pop("spans"), d.pop("logs")
    trace = AssembledTrace(**d)
    trace.spans = [_span(s) for s in spans]
    trace.logs = [_log(r) for r in logs]
    return trace


def _span(d: dict[str, Any]) -> SpanRecord:
    d["attributes"] = _restore(d["attributes"])
    d["resource"] = _restore(d["resource"])
    d["events"] = [
        SpanEvent(name=e["name"], time_ns=e["time_ns"], attributes=_restore(e["attributes"]))
        for e in d["events"]
    ]
    d["origin"] = Origin(**d["origin"]) if d["origin"] is not None else None
    return SpanRecord(**d)


def _log(d: dict[str, Any]) -> LogRecord:
    d["attributes"] = _restore(d["attributes"])
    d["body"] = _restore(d["body"])
    d["origin"] = Origin(**d["origin"]) if d["origin"] is not None else None
    return LogRecord(**d)
