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


# --- GenAI-convention spans and messages (semconv >= 1.37 attributes) ---------------


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def reply(*parts: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "assistant", "parts": list(parts)}]


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "content": t}


def call(name: str, args: Any, cid: str | None = None) -> dict[str, Any]:
    return {"type": "tool_call", "id": cid, "name": name, "arguments": args}


def agent(
    tb: TraceBuilder, name: str, parent: SpanRecord | None = None, /, **attrs: Any
) -> SpanRecord:
    return tb.span(
        f"invoke_agent {name}",
        parent,
        attrs={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **attrs},
    )


def chat(
    tb: TraceBuilder, parent: SpanRecord, history: list[Any] | None, out: Any, **attrs: Any
) -> SpanRecord:
    a = {"gen_ai.operation.name": "chat", **attrs}
    if history is not None:
        a["gen_ai.input.messages"] = history
    if out is not None:
        a["gen_ai.output.messages"] = out
    return tb.span("chat", parent, attrs=a)


def tool(
    tb: TraceBuilder,
    parent: SpanRecord,
    name: str,
    args: Any,
    result: Any,
    cid: str | None = None,
    status: int = 0,
    **attrs: Any,
) -> SpanRecord:
    a: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, **attrs}
    if cid:
        a["gen_ai.tool.call.id"] = cid
    if args is not None:
        a["gen_ai.tool.call.arguments"] = args
    if result is not None:
        a["gen_ai.tool.call.result"] = result
    return tb.span(f"execute_tool {name}", parent, attrs=a, status=status)
