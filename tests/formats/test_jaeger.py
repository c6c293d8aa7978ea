"""Jaeger v1 JSON (``/api/traces``, UI downloads): mapping, bad spans, files and the CLI."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from tracescore.cli import main
from tracescore.formats.base import Batch
from tracescore.formats.files import is_json_lines, read_file
from tracescore.formats.jaeger import decode_jaeger_v1, looks_like_jaeger_v1
from tracescore.formats.otlp_json import decode_json_document, looks_like_document
from tracescore.spans import AttrValue, Origin, SpanEvent, SpanRecord
from tracescore.trajectory import build_invocations

ORIGIN = Origin("trace.json", 3)
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
ROOT, CHAT1, TOOL, CHAT2, HTTP = (
    "00f067aa0ba902b7",
    "0b1c2d3e4f5a6b7c",
    "a1b2c3",  # Jaeger writes ids without leading zeros: padded to 16 digits
    "7d3f4a5b6c7d8e9f",
    "1e2d3c4b5a697887",
)
TOOL_ID = "0000000000a1b2c3"
T0 = 1_700_000_000_000_000  # microseconds
QUESTION = "What's the weather in Paris?"
ANSWER = "It is sunny and 21°C in Paris."
CALL = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}
RESULT = {"temp_c": 21, "condition": "sunny"}


def tag(key: str, value: Any, type_: str = "string") -> dict[str, Any]:
    return {"key": key, "type": type_, "value": value}


def js(value: Any) -> str:
    return json.dumps(value)


def child_of(span_id: str, trace_id: str = TRACE_ID, ref: str = "CHILD_OF") -> dict[str, Any]:
    return {"refType": ref, "traceID": trace_id, "spanID": span_id}


def span(span_id: str, name: str, start: int, duration: int, refs: list[Any], tags: list[Any],
         process: str = "p1", **extra: Any) -> dict[str, Any]:  # fmt: skip
    return {"traceID": TRACE_ID, "spanID": span_id, "flags": 1, "operationName": name,
            "references": refs, "startTime": T0 + start, "duration": duration, "tags": tags,
            "logs": [], "processID": process, "warnings": None, **extra}  # fmt: skip


def agent_trace() -> dict[str, Any]:
    """One agent turn as Jaeger's query service returns it for OTel GenAI spans."""
    user = {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
    called = {"role": "assistant", "parts": [CALL]}
    answered = {"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}
    tool_reply = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1",
                                             "response": RESULT}]}  # fmt: skip
    spans = [
        span(ROOT, "invoke_agent weather_agent", 0, 2_500_000,
             # a new turn links to the previous one: another trace, so not a parent
             [child_of("5e6f7a8b9c0d1e2f", "0af7651916cd43dd8448eb211c80319c", "FOLLOWS_FROM")],
             [tag("gen_ai.operation.name", "invoke_agent"),
              tag("gen_ai.agent.name", "weather_agent"),
              tag("gen_ai.conversation.id", "conv-42"),
              tag("span.kind", "internal"),
              tag("otel.scope.name", "opentelemetry.instrumentation.genai"),
              tag("otel.scope.version", "0.3b0"),
              tag("otel.status_code", "OK")]),
        span(CHAT1, "chat gpt-4o", 10_000, 900_000, [child_of(ROOT)],
             [tag("gen_ai.operation.name", "chat"),
              tag("gen_ai.request.model", "gpt-4o"),
              tag("gen_ai.request.temperature", 0.2, "float64"),
              tag("gen_ai.usage.input_tokens", "120", "int64"),
              tag("gen_ai.usage.output_tokens", 18, "int64"),
              tag("gen_ai.input.messages", js([user])),
              tag("gen_ai.output.messages", js([called])),
              tag("span.kind", "client"),
              tag("otel.library.name", "opentelemetry.instrumentation.openai_v2")]),
        span(HTTP, "POST /v1/chat/completions", 20_000, 300_000, [child_of(CHAT1)],
             [tag("http.request.method", "POST"),
              tag("http.response.status_code", 503, "int64"),
              tag("http.request.resend", True, "bool"),
              tag("http.request.body.digest", base64.b64encode(b"\x01\xfe").decode(), "binary"),
              tag("span.kind", "client"),
              tag("error", True, "bool"),
              tag("otel.status_code", "ERROR"),
              tag("otel.status_description", "503 Service Unavailable")],
             process="p2"),
        span(TOOL, "execute_tool get_weather", 950_000, 400_000, [child_of(ROOT)],
             [tag("gen_ai.operation.name", "execute_tool"),
              tag("gen_ai.tool.name", "get_weather"),
              tag("gen_ai.tool.call.id", "call_1"),
              tag("gen_ai.tool.call.arguments", js({"city": "Paris"})),
              tag("gen_ai.tool.call.result", js(RESULT)),
              tag("span.kind", "internal")],
             logs=[{"timestamp": T0 + 1_000_000,
                    "fields": [tag("event", "cache.miss"), tag("cache.key", "weather:paris")]},
                   {"timestamp": T0 + 1_100_000, "fields": [tag("message", "fetched")]}]),
        span(CHAT2, "chat gpt-4o", 1_400_000, 1_000_000, [child_of(ROOT)],
             [tag("gen_ai.operation.name", "chat"),
              tag("gen_ai.request.model", "gpt-4o"),
              tag("gen_ai.input.messages", js([user, called, tool_reply])),
              tag("gen_ai.output.messages", js([answered])),
              tag("span.kind", "client")]),
    ]  # fmt: skip
    processes = {
        "p1": {"serviceName": "weather-agent",
               "tags": [tag("telemetry.sdk.language", "python"), tag("host.cpu.count", 8, "int64")]},
        "p2": {"serviceName": "openai-proxy", "tags": []},
    }  # fmt: skip
    return {"traceID": TRACE_ID, "spans": spans, "processes": processes, "warnings": None}


def document(*traces: dict[str, Any]) -> dict[str, Any]:
    return {"data": list(traces), "total": 0, "limit": 0, "offset": 0, "errors": None}


def decode(doc: Any) -> Batch:
    """Through the top-level dispatch, on a JSON round trip as a file read would give."""
    return decode_json_document(orjson.loads(orjson.dumps(doc)), origin=ORIGIN)


def by_id(batch: Batch) -> dict[str, SpanRecord]:
    return {record.span_id: record for record in batch.spans}


# --- mapping --------------------------------------------------------------------------


def test_agent_trace_is_decoded_field_by_field() -> None:
    batch = decode(document(agent_trace()))
    assert batch.errors == []
    assert batch.logs == []
    spans = by_id(batch)
    agent_resource: dict[str, AttrValue] = {
        "telemetry.sdk.language": "python",
        "host.cpu.count": 8,
        "service.name": "weather-agent",
    }
    root = spans[ROOT]
    assert root == SpanRecord(
        trace_id=TRACE_ID,
        span_id=ROOT,
        parent_span_id=None,  # only a link to another trace
        name="invoke_agent weather_agent",
        kind=1,
        start_ns=T0 * 1000,
        end_ns=(T0 + 2_500_000) * 1000,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "weather_agent",
            "gen_ai.conversation.id": "conv-42",
        },
        status_code=1,
        resource=agent_resource,
        scope="opentelemetry.instrumentation.genai",
        origin=ORIGIN,
    )
    chat = spans[CHAT1]
    assert (chat.parent_span_id, chat.kind, chat.status_code) == (ROOT, 3, 0)
    assert chat.scope == "opentelemetry.instrumentation.openai_v2"
    assert chat.attributes["gen_ai.request.temperature"] == 0.2
    assert chat.attributes["gen_ai.usage.input_tokens"] == 120  # int64 given as a string
    assert chat.attributes["gen_ai.usage.output_tokens"] == 18
    assert json.loads(str(chat.attributes["gen_ai.output.messages"]))[0]["parts"] == [CALL]
    assert "span.kind" not in chat.attributes and "otel.library.name" not in chat.attributes
    assert chat.resource is root.resource  # one dict per process

    http = spans[HTTP]
    assert http.attributes == {
        "http.request.method": "POST",
        "http.response.status_code": 503,
        "http.request.resend": True,
        "http.request.body.digest": b"\x01\xfe",
    }
    assert (http.status_code, http.status_message) == (2, "503 Service Unavailable")
    assert (http.parent_span_id, http.scope) == (CHAT1, None)
    assert http.resource == {"service.name": "openai-proxy"}

    tool = spans[TOOL_ID]
    assert (tool.trace_id, tool.parent_span_id, tool.kind) == (TRACE_ID, ROOT, 1)
    assert (tool.start_ns, tool.end_ns) == ((T0 + 950_000) * 1000, (T0 + 1_350_000) * 1000)
    assert tool.events == [
        SpanEvent(
            name="cache.miss",
            time_ns=(T0 + 1_000_000) * 1000,
            attributes={"cache.key": "weather:paris"},
        ),
        SpanEvent(name="log", time_ns=(T0 + 1_100_000) * 1000, attributes={"message": "fetched"}),
    ]
    assert list(spans) == [ROOT, CHAT1, HTTP, TOOL_ID, CHAT2]  # document order


def test_agent_trace_rebuilds_the_trajectory() -> None:
    [invocation] = build_invocations(decode(document(agent_trace())).spans)
    assert invocation.status == "ok", invocation.reason
    assert invocation.trace_id == TRACE_ID
    assert invocation.agent == "weather_agent"
    assert invocation.conversation_id == "conv-42"
    assert invocation.user_content == QUESTION
    assert [(c.name, c.args, c.id, c.result) for c in invocation.tool_calls] == [
        ("get_weather", {"city": "Paris"}, "call_1", RESULT)
    ]
    assert invocation.final_response == ANSWER
    assert invocation.inference_calls == 2


def test_short_and_upper_case_ids_are_padded_and_lowered() -> None:
    doc = {"data": [{"spans": [
        {"traceID": "A3CE929D0E0E4736", "spanID": "1F", "startTime": 5,
         "references": [{"refType": "CHILD_OF", "traceID": "a3ce929d0e0e4736", "spanID": "abc"}]},
    ]}]}  # fmt: skip
    [record] = decode(doc).spans
    assert record.trace_id == "0000000000000000a3ce929d0e0e4736"
    assert record.span_id == "000000000000001f"
    assert record.parent_span_id == "0000000000000abc"
    assert (record.start_ns, record.end_ns) == (5000, 5000)  # no duration: zero


@pytest.mark.parametrize(
    ("refs", "extra", "parent"),
    [
        ([child_of("01", ref="FOLLOWS_FROM"), child_of("02")], {}, "02"),  # CHILD_OF wins
        ([child_of("01", ref="FOLLOWS_FROM"), child_of("02", ref="FOLLOWS_FROM")], {}, "01"),
        ([{"spanID": "03"}], {}, "03"),  # no refType, no traceID: the protobuf default
        ([child_of("04", trace_id="ff" * 16)], {}, None),  # another trace: a link
        ([], {"parentSpanID": "05"}, "05"),  # legacy field
        ([child_of("0000000000000000")], {}, None),  # all-zero parent: a root
        (None, {}, None),
    ],
)
def test_parent_is_chosen_from_the_references(
    refs: Any, extra: dict[str, Any], parent: str | None
) -> None:
    doc = document({"spans": [span("aa", "s", 0, 1, refs, [], process="", **extra)]})
    [record] = decode(doc).spans
    assert record.parent_span_id == (parent and parent.rjust(16, "0"))


@pytest.mark.parametrize(
    ("tags", "status", "attributes"),
    [
        ([tag("error", True, "bool"), tag("otel.status_code", "OK")], (2, None), {}),
        ([tag("error", "true")], (2, None), {}),
        ([tag("error", False, "bool")], (0, None), {"error": False}),
        (
            [tag("otel.status_code", "ERROR"), tag("otel.status_description", "boom")],
            (2, "boom"),
            {},
        ),
        (
            [tag("otel.status_description", "stray")],
            (0, None),
            {"otel.status_description": "stray"},
        ),
        ([tag("span.kind", "teleport")], (0, None), {"span.kind": "teleport"}),
    ],
)
def test_status_and_unknown_kind(
    tags: list[dict[str, Any]], status: tuple[int, str | None], attributes: dict[str, Any]
) -> None:
    [record] = decode(document({"spans": [span("aa", "s", 0, 1, [], tags, process="")]})).spans
    assert ((record.status_code, record.status_message), record.attributes) == (status, attributes)
    assert record.kind == 0


@pytest.mark.parametrize(
    ("tag_", "value"),
    [
        ({"key": "k", "value": 7}, 7),  # untyped scalars are kept
        ({"key": "k", "type": "BOOL", "value": "false"}, False),
        ({"key": "k", "type": "float64", "value": "1.5"}, 1.5),
        ({"key": "k", "type": "float64", "value": 2}, 2.0),
        ({"key": "k", "type": "int64", "value": 9007199254740993}, 9007199254740993),
        ({"key": "k", "type": "binary", "value": "AQI"}, b"\x01\x02"),  # unpadded base64
    ],
)
def test_tag_values(tag_: dict[str, Any], value: Any) -> None:
    [record] = decode(document({"spans": [span("aa", "s", 0, 1, [], [tag_], process="")]})).spans
    assert record.attributes == {"k": value}


def test_embedded_process_and_span_without_process() -> None:
    spans = [
        span("aa", "s", 0, 1, [], [], process=""),
        span("bb", "s", 0, 1, [], [], process=""),
    ]
    spans[0]["process"] = {"serviceName": "svc", "tags": [tag("k", "v")]}
    first, second = decode(document({"spans": spans})).spans
    assert first.resource == {"k": "v", "service.name": "svc"}
    assert second.resource == {}


def test_recognised_by_the_dispatch_and_by_looks_like_document() -> None:
    assert looks_like_jaeger_v1(document()) and looks_like_document(document())
    assert looks_like_document({"data": None, "errors": [{"code": 404, "msg": "not found"}]})
    assert not looks_like_document({"data": {"spans": []}})
    assert not looks_like_jaeger_v1([{"spans": []}])


# --- bad input ------------------------------------------------------------------------


def _replace_tool(**changes: Any) -> dict[str, Any]:
    trace = agent_trace()
    bad = trace["spans"][3]
    for key, value in changes.items():
        if value is None:
            del bad[key]
        else:
            bad[key] = value
    return document(trace)


@pytest.mark.parametrize(
    ("changes", "message", "span_id"),
    [
        ({"spanID": None}, "missing spanID", None),
        ({"spanID": "zz"}, "spanID 'zz' is not a hex id", None),
        ({"spanID": "1" * 17}, "is not a hex id of at most 16 digits", None),
        ({"traceID": 42}, "traceID must be a string, got number", TOOL_ID),
        ({"startTime": "yesterday"}, "startTime must be an integer, got string", TOOL_ID),
        ({"startTime": None}, "missing startTime", TOOL_ID),
        ({"duration": -5}, "duration must not be negative", TOOL_ID),
        ({"tags": [tag("k", 1, "complex")]}, "tag 'k': unknown type 'complex'", TOOL_ID),
        ({"tags": [tag("k", "abc", "int64")]}, "tag 'k': int64 value must be an int", TOOL_ID),
        ({"tags": [tag("k", 1, "string")]}, "tag 'k': not a valid string value", TOOL_ID),
        ({"tags": [tag("k", "!!", "binary")]}, "not valid base64", TOOL_ID),
        ({"tags": [{"value": 1}]}, "tag key must be a string, got null", TOOL_ID),
        ({"tags": {"k": "v"}}, "tags must be an array, got object", TOOL_ID),
        ({"references": [{"refType": "CHILD_OF"}]}, "missing references[0].spanID", TOOL_ID),
        ({"references": [7]}, "references[0] must be an object, got number", TOOL_ID),
        ({"logs": [{"timestamp": "soon"}]}, "logs[0]: timestamp must be an integer", TOOL_ID),
        ({"logs": [3]}, "logs[0]: log must be an object, got number", TOOL_ID),
        ({"processID": "p9"}, "processID 'p9' is not in the trace's processes", TOOL_ID),
        ({"operationName": ["x"]}, "operationName must be a string", TOOL_ID),
    ],
)
def test_a_bad_span_is_a_located_error_and_its_neighbours_are_kept(
    changes: dict[str, Any], message: str, span_id: str
) -> None:
    batch = decode(_replace_tool(**changes))
    assert [record.span_id for record in batch.spans] == [ROOT, CHAT1, HTTP, CHAT2]
    [error] = batch.errors
    assert message in error.detail
    assert error.detail.startswith("data[0].spans[3]: ")
    assert (error.path, error.line, error.span_id) == ("trace.json", 3, span_id)


def test_a_bad_process_fails_only_the_spans_that_use_it() -> None:
    trace = agent_trace()
    trace["processes"]["p2"]["tags"] = [tag("k", "x", "int64")]
    batch = decode(document(trace))
    assert len(batch.spans) == 4
    [error] = batch.errors
    assert error.detail == (
        "data[0].spans[2]: process 'p2': tag 'k': int64 value must be an integer, got string 'x'"
    )
    assert error.span_id == HTTP


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"data": [3]}, "data[0]: trace must be an object, got number"),
        ({"data": [{"spans": {}}]}, "data[0]: spans must be an array, got object"),
        ({"data": [{"spans": [], "processes": []}]}, "data[0]: processes must be an object"),
        ({"data": [{"spans": [7]}]}, "data[0].spans[0]: span must be an object, got number"),
        ({"data": None, "errors": [{"code": 404, "msg": "trace not found"}]}, "'trace not found'"),
    ],
)
def test_malformed_documents_are_located_errors(doc: Any, message: str) -> None:
    batch = decode(doc)
    assert batch.spans == []
    [error] = batch.errors
    assert message in error.detail
    assert (error.path, error.line) == ("trace.json", 3)


def test_direct_decoder_never_raises() -> None:
    assert [e.detail for e in decode_jaeger_v1([1], origin=None).errors] == [
        "expected a JSON object, got array"
    ]
    assert [e.detail for e in decode_jaeger_v1({"data": 5}, origin=None).errors] == [
        "data must be an array, got number"
    ]
    assert decode_jaeger_v1({}, origin=None).errors == []


def test_original_document_is_not_modified() -> None:
    doc = document(agent_trace())
    before = copy.deepcopy(doc)
    decode_jaeger_v1(doc, origin=None)
    assert doc == before


# --- files and the CLI ----------------------------------------------------------------


def test_pretty_printed_download_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "trace-4bf92f35.json"
    path.write_text(json.dumps(document(agent_trace()), indent=2, ensure_ascii=False))
    [batch] = read_file(str(path))
    assert batch.errors == []
    assert batch.origin == Origin(str(path))
    assert [s.span_id for s in batch.spans] == list(by_id(decode(document(agent_trace()))))
    assert [s.origin for s in batch.spans] == [Origin(str(path))] * 5


def test_json_lines_of_jaeger_documents(tmp_path: Path) -> None:
    bad = _replace_tool(startTime="later")
    path = tmp_path / "traces.jsonl"
    path.write_bytes(orjson.dumps(document(agent_trace())) + b"\n\n" + orjson.dumps(bad) + b"\n")
    assert is_json_lines(str(path))
    first, second = read_file(str(path))
    assert (len(first.spans), first.errors) == (5, [])
    assert len(second.spans) == 4
    [error] = second.errors
    assert (error.path, error.line, error.span_id) == (str(path), 3, TOOL_ID)


def test_cli_imports_a_jaeger_download(tmp_path: Path) -> None:
    path = tmp_path / "jaeger.json"
    path.write_text(json.dumps(document(agent_trace()), indent=2))
    result = CliRunner().invoke(main, ["import", str(path), "--format", "jsonl"])
    assert result.exit_code == 0, result.stderr
    [record] = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert record["trace_id"] == TRACE_ID
    assert record["user_content"] == QUESTION
    assert [(c["name"], c["args"], c["result"]) for c in record["tool_calls"]] == [
        ("get_weather", {"city": "Paris"}, RESULT)
    ]
    assert record["final_response"] == ANSWER


def test_cli_reports_a_bad_jaeger_span_with_its_location(tmp_path: Path) -> None:
    path = tmp_path / "jaeger.json"
    path.write_bytes(orjson.dumps(_replace_tool(spanID=None)))
    result = CliRunner().invoke(main, ["import", str(path), "--format", "jsonl"])
    assert result.exit_code == 1
    assert f"{path}:1: data[0].spans[3]: missing spanID" in result.stderr
