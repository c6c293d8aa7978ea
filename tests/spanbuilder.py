"""Build SpanRecord trees tersely in tests (spec-shaped fixtures)."""

from __future__ import annotations

import itertools
from typing import Any

import orjson

from tracescore.spans import LogRecord, SpanEvent, SpanRecord

_ids = itertools.count(1)


class TraceBuilder:
    """Makes spans of one trace with increasing, non-overlapping timestamps."""

    def __init__(self, trace_id: str | None = None, *, scope: str | None = None) -> None:
        self.trace_id = trace_id or f"{next(_ids):032x}"
        self.scope = scope
        self.spans: list[SpanRecord] = []
        self.logs: list[LogRecord] = []
        self._t = 1_700_000_000_000_000_000

    def span(
        self,
        name: str,
        parent: SpanRecord | None = None,
        *,
        attrs: dict[str, Any] | None = None,
        events: list[tuple[str, dict[str, Any]]] | None = None,
        status: int = 0,
        scope: str | None = None,
    ) -> SpanRecord:
        self._t += 1000
        span = SpanRecord(
            trace_id=self.trace_id,
            span_id=f"{next(_ids):016x}",
            parent_span_id=parent.span_id if parent else None,
            name=name,
            start_ns=self._t,
            end_ns=self._t + 10**9,
            attributes={k: _enc(v) for k, v in (attrs or {}).items()},
            events=[SpanEvent(name=n, time_ns=self._t, attributes=a) for n, a in events or []],
            status_code=status,
            scope=scope or self.scope,
        )
        self.spans.append(span)
        return span

    def log(self, span: SpanRecord, event_name: str, body: Any = None, **attrs: Any) -> LogRecord:
        self._t += 10
        rec = LogRecord(
            trace_id=self.trace_id,
            span_id=span.span_id,
            time_ns=self._t,
            event_name=event_name,
            body=body,
            attributes=dict(attrs),
        )
        self.logs.append(rec)
        return rec


def _enc(value: Any) -> Any:
    """Dicts/lists given as attribute values are JSON-encoded, as most emitters write them."""
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    return value
