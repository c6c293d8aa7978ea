r"""Coverage-guided fuzzing of the convention readers and the trajectory builder.

An input is either

* a JSON trace, ``{"spans": [{"span_id", "parent_span_id", "name", "scope", "kind",
  "status", "attributes": {...}, "events": [{"name", "attributes"}]}], "logs":
  [{"span_id", "event_name", "body", "attributes"}]}``, whose attribute values are taken
  as they are (a string ``"b:..."`` becomes bytes, ``"i:<digits>"`` an integer of any
  size, as the SDK allows), fields of the wrong type replaced by defaults; or
* anything else: then the bytes (as text, and as bytes) become the value of every
  content attribute of a fixed trace covering each convention (ADK legacy, GenAI
  attributes and events, OpenInference, OpenLLMetry, pydantic-ai).

Every reader is asked every question about every span and the invocations are rebuilt;
any contract breach raises (see ``tests/fuzz/fuzz_helpers.py``).

Run (see fuzz/README.md)::

    python fuzz/make_corpus.py
    python fuzz/fuzz_conventions.py -dict=fuzz/conventions.dict -timeout=10 \\
        -runs=200000 -max_total_time=600 fuzz/corpus/conventions
"""

from __future__ import annotations

import sys
from typing import Any

import _common
import atheris
import orjson

with atheris.instrument_imports(include=_common.INSTRUMENT):
    import fuzz_helpers

    from tracescore.spans import AttrValue, LogRecord, SpanEvent, SpanRecord

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"

#: One span per convention's step kinds: (name, scope, marker attributes, content keys).
#: The fixed trace puts the input in each span's content keys, and only there: every
#: reader parses what it is asked about, so a copy on every span multiplies the cost.
FIXED_SPANS: tuple[tuple[str, str | None, dict[str, AttrValue], tuple[str, ...]], ...] = (
    ("invocation", "gcp.vertex.agent", {}, ()),
    (
        "agent run",
        "pydantic-ai",
        {"agent_name": "a", "model_name": "m"},
        ("pydantic_ai.all_messages", "all_messages_events", "final_result"),
    ),
    ("invoke_agent a", None, {"gen_ai.operation.name": "invoke_agent"}, ()),
    (
        "call_llm",
        "gcp.vertex.agent",
        {"gen_ai.operation.name": "chat"},
        (
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.system_instructions",
            "gen_ai.tool.definitions",
            "gcp.vertex.agent.llm_request",
            "gcp.vertex.agent.llm_response",
        ),
    ),
    (
        "llm",
        None,
        {"openinference.span.kind": "LLM"},
        (
            "input.value",
            "output.value",
            "llm.input_messages.0.message.content",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
            "llm.tools.0.tool.json_schema",
        ),
    ),
    (
        "openai.chat",
        None,
        {"llm.request.type": "chat", "gen_ai.prompt.0.role": "user"},
        (
            "gen_ai.prompt.0.content",
            "gen_ai.completion.0.content",
            "gen_ai.completion.0.tool_calls.0.arguments",
        ),
    ),
    ("chat m", "pydantic-ai", {"model_request_parameters": "{}"}, ("events",)),
    (
        "execute_tool t",
        None,
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"},
        (
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
            "tool_arguments",
            "tool_response",
            "gcp.vertex.agent.tool_call_args",
            "gcp.vertex.agent.tool_response",
        ),
    ),
    (
        "tool",
        None,
        {"openinference.span.kind": "TOOL", "tool.name": "t"},
        ("input.value", "output.value", "tool.parameters"),
    ),
    (
        "t.tool",
        None,
        {"traceloop.span.kind": "tool", "traceloop.entity.name": "t"},
        ("traceloop.entity.input", "traceloop.entity.output"),
    ),
)
#: What a GenAI event carries (on the model span, and as log bodies).
EVENT_KEYS = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "content",
    "message",
    "gen_ai.prompt",
    "gen_ai.completion",
)
EVENT_NAMES = (
    "gen_ai.client.inference.operation.details",
    "gen_ai.choice",
    "gen_ai.user.message",
    "gen_ai.content.prompt",
    "gen_ai.content.completion",
)


def _leaf(value: Any) -> AttrValue:
    if isinstance(value, str):
        if value.startswith("b:"):
            return value[2:].encode("utf-8", "surrogatepass")
        if value.startswith("i:") and value[2:].isascii() and value[2:52].isdigit():
            return int(value[2:52])
    return value  # type: ignore[no-any-return]


def _value(value: Any) -> AttrValue:
    """A JSON value as an attribute value; ``"b:..."`` is bytes, ``"i:<digits>"`` an int.

    Iterative: JSON nests 1024 levels deep, more than Python's recursion limit allows.
    """
    if not isinstance(value, (list, dict)):
        return _leaf(value)
    root: Any = [] if isinstance(value, list) else {}
    stack = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = enumerate(source) if isinstance(source, list) else source.items()
        for key, item in items:
            if isinstance(item, (list, dict)):
                new: Any = [] if isinstance(item, list) else {}
                stack.append((item, new))
            else:
                new = _leaf(item)
            if isinstance(target, list):
                target.append(new)
            else:
                target[str(key)] = new
    return root  # type: ignore[no-any-return]


def _attributes(value: Any) -> dict[str, AttrValue]:
    return {str(k): _value(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _str(value: Any, default: str | None) -> str | None:
    return value if isinstance(value, str) else default


def _int(value: Any, default: int, low: int, high: int) -> int:
    return value if isinstance(value, int) and low <= value <= high else default


def trace_from_json(doc: dict[str, Any]) -> tuple[list[SpanRecord], list[LogRecord]]:
    """A trace from its lenient JSON form (see the module docstring)."""
    spans = []
    for index, raw in enumerate(doc.get("spans") or ()):
        item = raw if isinstance(raw, dict) else {}
        raw_events = item.get("events")
        events = raw_events if isinstance(raw_events, list) else []
        spans.append(
            SpanRecord(
                trace_id=TRACE_ID,
                span_id=_str(item.get("span_id"), f"{index + 1:016x}") or "",
                parent_span_id=_str(item.get("parent_span_id"), None),
                name=_str(item.get("name"), "") or "",
                kind=_int(item.get("kind"), 0, 0, 5),
                start_ns=_int(item.get("start"), index, -(2**63), 2**64 - 1),
                end_ns=_int(item.get("end"), index + 1, -(2**63), 2**64 - 1),
                attributes=_attributes(item.get("attributes")),
                events=[
                    SpanEvent(
                        name=_str(e.get("name"), "") or "",
                        time_ns=_int(e.get("time"), 0, 0, 2**63),
                        attributes=_attributes(e.get("attributes")),
                    )
                    for e in events
                    if isinstance(e, dict)
                ],
                status_code=_int(item.get("status"), 0, 0, 2),
                scope=_str(item.get("scope"), None),
            )
        )
    logs = [
        LogRecord(
            trace_id=TRACE_ID,
            span_id=_str(item.get("span_id"), None),
            time_ns=_int(item.get("time"), 0, 0, 2**63),
            event_name=_str(item.get("event_name"), None),
            body=_value(item.get("body")),
            attributes=_attributes(item.get("attributes")),
        )
        for item in doc.get("logs") or ()
        if isinstance(item, dict)
    ]
    return spans, logs


def fixed_trace(value: AttrValue) -> tuple[list[SpanRecord], list[LogRecord]]:
    """A trace with a span of each convention, ``value`` in its content attributes."""
    event_payload: dict[str, AttrValue] = dict.fromkeys(EVENT_KEYS, value)
    spans = []
    for index, (name, scope, markers, keys) in enumerate(FIXED_SPANS):
        content: dict[str, AttrValue] = dict.fromkeys(keys, value)
        events = [SpanEvent(name=e, attributes=event_payload) for e in EVENT_NAMES]
        spans.append(
            SpanRecord(
                trace_id=TRACE_ID,
                span_id=f"{index + 1:016x}",
                parent_span_id=None if index == 0 else f"{1 if index < 3 else 3:016x}",
                name=name,
                start_ns=index,
                end_ns=100 - index,
                attributes={**content, **markers},
                events=events if name == "call_llm" else [],
                scope=scope,
            )
        )
    logs = [
        LogRecord(trace_id=TRACE_ID, span_id=f"{5:016x}", event_name=event, body=value)
        for event in EVENT_NAMES
    ]
    return spans, logs


def test_one_input(data: bytes) -> None:
    """Rebuild the trace(s) ``data`` describes; any contract breach raises."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        doc = None
    if isinstance(doc, dict) and "spans" in doc:
        fuzz_helpers.check_trajectory(*trace_from_json(doc))
        return
    text = data.decode("utf-8", "replace")
    fuzz_helpers.check_trajectory(*fixed_trace(text))
    if text.encode() != data:  # not UTF-8: bytes values take other paths
        fuzz_helpers.check_trajectory(*fixed_trace(data))
    if doc is not None:
        fuzz_helpers.check_trajectory(*fixed_trace(_value(doc)))


def main() -> None:
    """Hand the harness to libFuzzer (arguments as for any libFuzzer binary)."""
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
