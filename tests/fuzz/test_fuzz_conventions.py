"""Fuzzing the convention readers and the trajectory builder with hostile attribute values.

ADK legacy/v2, GenAI attributes and events (every semconv generation), OpenInference,
OpenLLMetry and pydantic-ai attributes get wrong types, malformed or truncated JSON,
huge or deep values, NaN, bytes, empty strings, odd indices and missing roles/parts.
Contract (see ``fuzz_helpers``): every reader answers ``None`` or a well-typed
``Found``; :func:`build_invocations` returns well-typed, exportable invocations (content
it cannot read makes them not evaluable, with warnings), within a time limit.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
from fuzz_helpers import check_trajectory, check_value, fuzz_settings, seed_traces, time_limit
from fuzz_strategies import (
    JSON_SCALARS,
    TEXT,
    TRICKY_TEXT,
    deep_json_text,
    deep_list,
    mutated_bytes,
)
from hypothesis import given
from hypothesis import strategies as st

from tracescore.conventions.base import SpanView, parse_content
from tracescore.conventions.messages import message_from_obj, messages_from_value
from tracescore.conventions.salvage import salvage_json
from tracescore.spans import LogRecord, SpanEvent, SpanRecord

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


_settings = fuzz_settings


# --------------------------------------------------------------------------- values

BIG_INTS = st.sampled_from([2**63, 2**64, -(2**63) - 1, 10**30, -(10**40)])
SCALARS = st.one_of(
    JSON_SCALARS,
    BIG_INTS,
    st.sampled_from([float("nan"), float("inf"), float("-inf"), -0.0]),
    st.binary(max_size=8),
    st.sampled_from([b"\xff\xfe", b'{"role": "user"', b"[1, 2]", b"\x80abc", b" {"]),
)
LEAVES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=4,
)
ROLES = st.sampled_from(["user", "assistant", "model", "system", "tool", "human", "", "USER"])
ROLE = ROLES | LEAVES
PART_TYPES = st.sampled_from(
    [
        "text",
        "reasoning",
        "thinking",
        "tool_call",
        "function_call",
        "function",
        "tool_call_response",
        "tool_result",
        "function_response",
        "blob",
        "uri",
        "",
    ]
)

PART = st.one_of(
    st.fixed_dictionaries(
        {"type": PART_TYPES | LEAVES},
        optional=dict.fromkeys(
            ("content", "text", "name", "id", "arguments", "args", "response", "result"), LEAVES
        ),
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "text": LEAVES,
            "thought": LEAVES,
            "function_call": st.fixed_dictionaries(
                {}, optional={"name": LEAVES, "args": LEAVES, "id": LEAVES}
            )
            | LEAVES,
            "functionResponse": st.fixed_dictionaries(
                {}, optional={"name": LEAVES, "response": LEAVES, "id": LEAVES}
            )
            | LEAVES,
            "toolUse": st.fixed_dictionaries(
                {}, optional={"name": LEAVES, "input": LEAVES, "toolUseId": LEAVES}
            )
            | LEAVES,
            "toolResult": st.fixed_dictionaries(
                {}, optional={"content": LEAVES, "toolUseId": LEAVES}
            )
            | LEAVES,
        },
    ),
    LEAVES,
)
TOOL_CALLS = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "id": LEAVES,
            "function": st.fixed_dictionaries({}, optional={"name": LEAVES, "arguments": LEAVES})
            | LEAVES,
            "name": LEAVES,
            "arguments": LEAVES,
        },
    )
    | LEAVES,
    max_size=3,
)
MESSAGE = st.fixed_dictionaries(
    {},
    optional={
        "role": ROLE,
        "parts": st.lists(PART, max_size=4) | LEAVES,
        "content": LEAVES | st.lists(PART, max_size=3) | TEXT,
        "tool_calls": TOOL_CALLS | LEAVES,
        "name": LEAVES,
        "tool_call_id": LEAVES,
        "message": st.fixed_dictionaries({}, optional={"role": ROLE, "content": LEAVES}),
        "index": LEAVES,
        "event.name": st.sampled_from(["gen_ai.choice", "gen_ai.user.message"]) | LEAVES,
        "contents": st.lists(
            st.fixed_dictionaries({}, optional={"role": ROLE, "parts": st.lists(PART) | PART})
        ),
        "choices": st.lists(
            st.fixed_dictionaries({}, optional={"message": LEAVES, "text": LEAVES})
        ),
    },
)
MESSAGES = st.lists(MESSAGE | LEAVES, max_size=4) | MESSAGE


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value, default=str).decode()
    except orjson.JSONEncodeError:
        return "[]"


@st.composite
def hostile_json_text(draw: st.DrawFn, structure: st.SearchStrategy[Any]) -> str:
    """JSON text of ``structure``: whole, truncated (as backends cut it), or byte-mutated."""
    text = _json_text(draw(structure))
    how = draw(st.sampled_from(["whole", "whole", "truncated", "mutated"]))
    if how == "truncated" and text:
        return text[: draw(st.integers(0, len(text) - 1))]
    if how == "mutated":
        return draw(mutated_bytes(text.encode())).decode("utf-8", "replace")
    return text


ATTR_VALUES = st.one_of(
    SCALARS,
    TRICKY_TEXT,
    LEAVES,
    MESSAGES,
    hostile_json_text(MESSAGES),
    hostile_json_text(MESSAGE.map(lambda m: {"contents": [m], "config": m})),
    hostile_json_text(st.fixed_dictionaries({"args": LEAVES, "kwargs": LEAVES})),
    st.builds(lambda: deep_list(300)),
    st.builds(lambda: deep_json_text(1000)),
    st.builds(lambda: deep_json_text(100)),
    hostile_json_text(MESSAGES).map(str.encode),
)

# --------------------------------------------------------------------------- keys

INDICES = st.sampled_from(
    ["0", "1", "2", "²", "01", "-1", "", "x", "99999999999999999999", "9" * 5000]
)
MESSAGE_SUBKEYS = st.sampled_from(
    [
        "role",
        "content",
        "name",
        "tool_call_id",
        "function_call_name",
        "function_call_arguments_json",
        "contents.{i}.message_content.type",
        "contents.{i}.message_content.text",
        "tool_calls.{i}.tool_call.id",
        "tool_calls.{i}.tool_call.function.name",
        "tool_calls.{i}.tool_call.function.arguments",
    ]
)
TRACELOOP_SUBKEYS = st.sampled_from(
    [
        "role",
        "content",
        "tool_call_id",
        "finish_reason",
        "tool_calls.{i}.id",
        "tool_calls.{i}.name",
        "tool_calls.{i}.arguments",
        "function_call.name",
        "function_call.arguments",
    ]
)


@st.composite
def indexed_key(draw: st.DrawFn) -> str:
    """A flattened OpenInference or OpenLLMetry message key with a possibly odd index."""
    if draw(st.booleans()):
        prefix = draw(st.sampled_from(["llm.input_messages.", "llm.output_messages."]))
        sub = draw(MESSAGE_SUBKEYS).replace("{i}", draw(INDICES))
        return f"{prefix}{draw(INDICES)}.message.{sub}"
    if draw(st.booleans()):
        return f"llm.tools.{draw(INDICES)}.tool.json_schema"
    prefix = draw(st.sampled_from(["gen_ai.prompt.", "gen_ai.completion."]))
    sub = draw(TRACELOOP_SUBKEYS).replace("{i}", draw(INDICES))
    return f"{prefix}{draw(INDICES)}.{sub}"


KEYS = st.one_of(
    st.sampled_from(
        [
            "gen_ai.operation.name",
            "gen_ai.agent.name",
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.system_instructions",
            "gen_ai.tool.definitions",
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.prompt_tokens",
            "gen_ai.usage.completion_tokens",
            "gen_ai.tool.name",
            "gen_ai.tool.call.id",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
            "gen_ai.request.model",
            "gen_ai.response.model",
            "gen_ai.conversation.id",
            "error.type",
            "gcp.vertex.agent.llm_request",
            "gcp.vertex.agent.llm_response",
            "gcp.vertex.agent.tool_call_args",
            "gcp.vertex.agent.tool_response",
            "gcp.vertex.agent.invocation_id",
            "gcp.vertex.agent.session_id",
            "openinference.span.kind",
            "agent.name",
            "graph.node.id",
            "input.value",
            "output.value",
            "llm.token_count.prompt",
            "llm.token_count.completion",
            "tool.name",
            "tool.id",
            "tool_call.id",
            "tool.parameters",
            "llm.model_name",
            "traceloop.span.kind",
            "traceloop.entity.name",
            "traceloop.entity.input",
            "traceloop.entity.output",
            "llm.request.type",
            "traceloop.workflow.name",
            "traceloop.association.properties.session_id",
            "agent_name",
            "pydantic_ai.all_messages",
            "all_messages_events",
            "final_result",
            "model_name",
            "events",
            "tool_arguments",
            "tool_response",
            "model_request_parameters",
            "session.id",
            "tracescore.eval_id",
            "event.name",
        ]
    ),
    indexed_key(),
    TEXT,
)
#: Values the readers switch on: operation names, span kinds, request types.
SWITCHES = {
    "gen_ai.operation.name": st.sampled_from(
        [
            "chat",
            "invoke_agent",
            "execute_tool",
            "generate_content",
            "invoke_workflow",
            "create_agent",
            "text_completion",
        ]
    ),
    "openinference.span.kind": st.sampled_from(
        ["LLM", "AGENT", "TOOL", "CHAIN", "llm", "RETRIEVER"]
    ),
    "traceloop.span.kind": st.sampled_from(["workflow", "agent", "tool", "task"]),
    "llm.request.type": st.sampled_from(["chat", "completion"]),
}


@st.composite
def attribute_dicts(draw: st.DrawFn) -> dict[str, Any]:
    """Some attributes of some conventions, with hostile values and sane switches."""
    attrs: dict[str, Any] = {}
    for key, strategy in SWITCHES.items():
        if draw(st.integers(0, 3)) == 0:
            attrs[key] = draw(strategy | ATTR_VALUES)
    for key in draw(st.lists(KEYS, max_size=6)):
        attrs[key] = draw(ATTR_VALUES)
    return attrs


EVENT_NAMES = st.sampled_from(
    [
        "gen_ai.client.inference.operation.details",
        "gen_ai.choice",
        "gen_ai.user.message",
        "gen_ai.system.message",
        "gen_ai.assistant.message",
        "gen_ai.tool.message",
        "gen_ai.content.prompt",
        "gen_ai.content.completion",
        "exception",
    ]
)
EVENT_KEYS = st.sampled_from(
    [
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.definitions",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "role",
        "content",
        "message",
        "index",
        "tool_calls",
        "gen_ai.prompt",
        "gen_ai.completion",
        "id",
        "name",
        "tool_call_id",
        "event.name",
    ]
)
EVENT_ATTRS = st.dictionaries(EVENT_KEYS, ATTR_VALUES, max_size=4)
SCOPES = st.sampled_from(
    [
        None,
        "gcp.vertex.agent",
        "pydantic-ai",
        "openinference.instrumentation.google_adk",
        "opentelemetry.instrumentation.openai.v1",
        "opentelemetry.instrumentation.openai_v2",
        "",
    ]
)


@st.composite
def traces(draw: st.DrawFn) -> tuple[list[SpanRecord], list[LogRecord]]:
    """One trace of hostile spans and logs; ids may repeat and parents may loop."""
    count = draw(st.integers(1, 6))
    ids = [f"{draw(st.integers(1, count + 1)):016x}" for _ in range(count)]
    spans = []
    for index, span_id in enumerate(ids):
        parent = draw(
            st.sampled_from([None, *ids[:index]])
            if index and draw(st.integers(0, 5))
            else st.sampled_from([None, span_id, f"{99:016x}"])
        )
        start = draw(st.integers(0, 50) | st.integers(-(2**70), 2**70))
        spans.append(
            SpanRecord(
                trace_id=TRACE_ID,
                span_id=span_id,
                parent_span_id=parent,
                name=draw(
                    st.sampled_from(["invocation", "call_llm", "execute_tool t", "run"]) | TEXT
                ),
                kind=draw(st.integers(0, 5)),
                start_ns=start,
                end_ns=start + draw(st.integers(0, 10)),
                attributes=draw(attribute_dicts()),
                events=[
                    SpanEvent(
                        name=name, time_ns=draw(st.integers(0, 9)), attributes=draw(EVENT_ATTRS)
                    )
                    for name in draw(st.lists(EVENT_NAMES | TEXT, max_size=3))
                ],
                status_code=draw(st.integers(0, 2)),
                status_message=draw(st.none() | TEXT),
                resource=draw(st.dictionaries(KEYS, ATTR_VALUES, max_size=2)),
                scope=draw(SCOPES),
            )
        )
    logs = [
        LogRecord(
            trace_id=TRACE_ID,
            span_id=draw(st.sampled_from([None, *ids])),
            time_ns=draw(st.integers(0, 9)),
            event_name=draw(st.none() | EVENT_NAMES),
            body=draw(ATTR_VALUES),
            attributes=draw(EVENT_ATTRS),
        )
        for _ in range(draw(st.integers(0, 3)))
    ]
    return spans, logs


# --------------------------------------------------------------------------- tests


@_settings(250)
@given(traces())
def test_hostile_traces(trace: tuple[list[SpanRecord], list[LogRecord]]) -> None:
    spans, logs = trace
    with time_limit():
        check_trajectory(spans, logs)


SEEDS = seed_traces()


@st.composite
def mutated_seed(draw: st.DrawFn) -> tuple[list[SpanRecord], list[LogRecord]]:
    """A real trace with a few attribute values replaced, truncated or byte-mutated."""
    spans, logs = draw(st.sampled_from(SEEDS))
    spans = [replace(s, attributes=dict(s.attributes)) for s in spans]  # the seeds are shared
    for _ in range(draw(st.integers(1, 4))):
        span = draw(st.sampled_from(spans))
        if not span.attributes or draw(st.integers(0, 4)) == 0:
            span.attributes[draw(KEYS)] = draw(ATTR_VALUES)
            continue
        key = draw(st.sampled_from(sorted(span.attributes)))
        value = span.attributes[key]
        how = draw(st.sampled_from(["replace", "truncate", "mutate"]))
        if how == "replace" or not isinstance(value, str) or not value:
            span.attributes[key] = draw(ATTR_VALUES)
        elif how == "truncate":
            span.attributes[key] = value[: draw(st.integers(0, len(value) - 1))]
        else:
            mutated = draw(mutated_bytes(value.encode("utf-8", "surrogatepass")))
            span.attributes[key] = mutated.decode("utf-8", "replace")
    return spans, logs


@_settings(250)
@given(mutated_seed())
def test_mutated_real_traces(trace: tuple[list[SpanRecord], list[LogRecord]]) -> None:
    spans, logs = trace
    with time_limit():
        check_trajectory(spans, logs)


@_settings(200)
@given(ATTR_VALUES, st.sampled_from(["user", "assistant"]))
def test_message_parsers_are_total(value: Any, role: str) -> None:
    """The parsers raise only what they document (orjson.JSONDecodeError / ValueError)."""
    view = SpanView(SpanRecord(trace_id=TRACE_ID, span_id="1" * 16, parent_span_id=None, name=""))
    found = parse_content(view, value, "key")
    if found is not None:
        check_value(found.value, "parsed")
    message_from_obj(value, default_role=role)
    try:
        messages_from_value(value, default_role=role)
    except orjson.JSONDecodeError:
        assert isinstance(value, (str, bytes))
    if isinstance(value, (str, bytes)):
        try:
            salvaged, _ = salvage_json(value)
        except ValueError:
            pass
        else:
            check_value(salvaged, "salvaged")
