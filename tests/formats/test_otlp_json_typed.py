"""The typed pass over OTLP JSON bytes (``decode_json_bytes``).

Equality with the reference path on generated, mutated and garbage documents is checked
in ``test_otlp_json_properties.py``; every example-based test of ``test_otlp_json.py``
runs through both paths. Here: that the Collector's spelling really takes the typed
pass (no silent fallback), and what sends a document to the reference path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.trace import ReadableSpan
from otlp_helpers import span_doc, to_collector_json

from tracescore import json_text
from tracescore.formats import otlp_json_typed
from tracescore.formats.base import Batch
from tracescore.formats.otlp_json import decode_json_document
from tracescore.formats.otlp_json_typed import decode_json_bytes
from tracescore.spans import Origin

ORIGIN = Origin("traces.jsonl", 3)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Documents the reference path was asked to decode (it still decodes them)."""
    seen: list[object] = []

    def spy(doc: object, *, origin: Origin | None) -> Batch:
        seen.append(doc)
        return decode_json_document(doc, origin=origin)

    monkeypatch.setattr(otlp_json_typed, "decode_json_document", spy)
    return seen


def test_collector_output_takes_the_typed_pass(
    sdk_spans: list[ReadableSpan], sdk_logs: list[ReadableLogRecord], calls: list[object]
) -> None:
    doc = {**to_collector_json(encode_spans(sdk_spans)), **to_collector_json(encode_logs(sdk_logs))}
    data = orjson.dumps(doc)
    batch = decode_json_bytes(data, origin=ORIGIN)
    assert calls == []
    reference = decode_json_document(orjson.loads(data), origin=ORIGIN)
    assert (batch.spans, batch.logs, batch.errors) == (reference.spans, reference.logs, [])
    assert len(batch.spans) == len(sdk_spans) and len(batch.logs) == 3
    assert any(span.events for span in batch.spans)  # events went through it too
    assert len({id(span.resource) for span in batch.spans}) == 1  # one dict per block


def test_every_value_type_takes_the_typed_pass(calls: list[object]) -> None:
    values = [
        {"intValue": "-9223372036854775808"},
        {"intValue": 42},
        {"boolValue": False},
        {"doubleValue": "-Infinity"},
        {"doubleValue": 2},
        {"bytesValue": "3q2+7w=="},
        {"arrayValue": {"values": [{"stringValue": "a"}, {}, {"arrayValue": {}}]}},
        {"kvlistValue": {"values": [{"key": "k", "value": {"intValue": "1"}}, {"key": "e"}]}},
        {},
    ]
    attributes = [{"key": f"a{i}", "value": value} for i, value in enumerate(values)]
    [span] = decode_json_bytes(orjson.dumps(span_doc(attributes=attributes)), origin=None).spans
    assert calls == []
    assert span.attributes == {
        "a0": -(2**63),
        "a1": 42,
        "a2": False,
        "a3": float("-inf"),
        "a4": 2.0,
        "a5": b"\xde\xad\xbe\xef",
        "a6": ["a", None, []],
        "a7": {"k": 1, "e": None},
        "a8": None,
    }


@pytest.mark.parametrize(
    "span",
    [
        {"parent_span_id": "0a0b0c0d0e0f1011"},  # another spelling of a known field
        {"kind": "SPAN_KIND_CLIENT"},
        {"spanId": "09acc3d9 233945f0"},  # fromhex would skip the space
        {"spanId": "0000000000000000"},
        {"traceId": "5B8EFFF798038103D269B633813FC60C"[:30]},
        {"parentSpanId": None},
        {"attributes": [{"key": "k", "value": {"intValue": "1", "boolValue": True}}]},
        {"attributes": [{"key": "k", "value": {"intValue": "9223372036854775808"}}]},
        {"attributes": [{"key": "k", "value": {"string_value": "x"}}]},
        {"status": {"code": 3}},
    ],
)
def test_other_spellings_go_to_the_reference_path(
    span: dict[str, Any], calls: list[object]
) -> None:
    data = orjson.dumps(span_doc(**span))
    batch = decode_json_bytes(data, origin=ORIGIN)
    assert len(calls) == 1
    reference = decode_json_document(orjson.loads(data), origin=ORIGIN)
    assert batch.spans == reference.spans
    assert [str(e) for e in batch.errors] == [str(e) for e in reference.errors]


def test_uppercase_and_base64_ids_take_the_typed_pass(calls: list[object]) -> None:
    doc = span_doc(
        traceId="5B8EFFF798038103D269B633813FC60C",
        spanId="CazD2SM5RfA=",
        parentSpanId="0000000000000000",
    )
    [span] = decode_json_bytes(orjson.dumps(doc), origin=ORIGIN).spans
    assert calls == []
    assert (span.trace_id, span.span_id, span.parent_span_id) == (
        "5b8efff798038103d269b633813fc60c",
        "09acc3d9233945f0",
        None,
    )


def test_a_trace_id_spelled_as_an_earlier_span_id_is_an_error() -> None:
    doc = span_doc()
    first = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"].append(
        {**first, "spanId": "1111111111111111", "traceId": first["spanId"]}
    )
    for batch in (
        decode_json_bytes(orjson.dumps(doc), origin=ORIGIN),
        decode_json_document(doc, origin=ORIGIN),
    ):
        assert [span.span_id for span in batch.spans] == [first["spanId"]]
        [error] = batch.errors
        assert "traceId" in error.detail and error.span_id == "1111111111111111"


def test_invalid_json_raises_as_orjson_does() -> None:
    with pytest.raises(orjson.JSONDecodeError):
        decode_json_bytes(b'{"resourceSpans": [', origin=ORIGIN)
    with pytest.raises(orjson.JSONDecodeError):
        decode_json_bytes(b'{"resourceSpans": []} trailing', origin=ORIGIN)


def _nested(depth: int) -> bytes:
    value = '{"stringValue":"leaf"}'
    for _ in range(depth):
        value = '{"arrayValue":{"values":[' + value + "]}}"
    span = orjson.dumps(span_doc(attributes=[{"key": "deep", "value": {}}]))
    return span.replace(b'"value":{}', b'"value":' + value.encode())


def test_nested_values_as_deep_as_orjson_reads_decode(calls: list[object]) -> None:
    [span] = decode_json_bytes(_nested(240), origin=ORIGIN).spans  # 3 levels each: 721 deep
    assert calls == []
    value = span.attributes["deep"]
    for _ in range(240):
        assert isinstance(value, list)
        [value] = value
    assert value == "leaf"


def test_deeper_nesting_is_invalid_json_as_for_orjson() -> None:
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(_nested(400))
    with pytest.raises(orjson.JSONDecodeError):
        decode_json_bytes(_nested(400), origin=ORIGIN)


_FULL_SPAN = orjson.dumps(
    span_doc(
        traceState="vendor=1",
        flags=256,
        links=[{"traceId": "5b8efff798038103d269b633813fc60c", "attributes": [
            {"key": "l", "value": {"intValue": "3"}}]}],
        attributes=[{"key": "k", "value": {"stringValue": "v"}},
                    {"key": "n", "value": {"doubleValue": 1.5}}],
        events=[{"timeUnixNano": "5", "name": "e"}],
        status={"code": 2, "message": "boom"},
    )
)  # fmt: skip


def _outcome(decode: Callable[[], Batch]) -> object:
    try:
        batch = decode()
    except orjson.JSONDecodeError:
        return "invalid JSON"
    return batch.spans, batch.logs, [(str(e), e.span_id) for e in batch.errors]


@pytest.mark.parametrize(
    "junk",
    [b'"\xff"', b'"\\ud800"', b"1" + b"0" * 400, b"18446744073709551616", b'"a\x01"'],
    ids=["bad-utf8", "lone-surrogate", "beyond-float", "beyond-64-bits", "control-char"],
)
@pytest.mark.parametrize("field", ["traceState", "flags", "links", "name"])
def test_fields_the_records_do_not_keep_are_checked_as_orjson_checks_them(
    field: str, junk: bytes
) -> None:
    # Skipping such a field unread would decode lines orjson rejects as invalid JSON.
    data = orjson.dumps(span_doc(**{field: "PLACEHOLDER"})).replace(b'"PLACEHOLDER"', junk)
    reference = _outcome(lambda: decode_json_document(json_text.loads(data), origin=ORIGIN))
    assert _outcome(lambda: decode_json_bytes(data, origin=ORIGIN)) == reference


@settings(max_examples=400, deadline=None)
@given(
    st.data(),
    st.binary(max_size=4)
    | st.sampled_from([b"\xff", b"\\ud800", b"9" * 400, b'"', b"\\", b",", b"]", b"{}", b"null"]),
)
def test_damaged_bytes_decode_as_orjson_and_the_reference_path_read_them(
    data: st.DataObject, junk: bytes
) -> None:
    at = data.draw(st.integers(0, len(_FULL_SPAN)))
    cut = data.draw(st.integers(0, 3))
    damaged = _FULL_SPAN[:at] + junk + _FULL_SPAN[at + cut :]
    reference = _outcome(lambda: decode_json_document(json_text.loads(damaged), origin=ORIGIN))
    assert _outcome(lambda: decode_json_bytes(damaged, origin=ORIGIN)) == reference


@settings(max_examples=500, deadline=None)
@given(
    st.sampled_from([8, 16]),
    st.text(alphabet="0123456789abcdefABCDEF0 +/=g", min_size=10, max_size=34),
)
def test_the_hex_id_shortcut_agrees_with_json_id(size: int, raw: str) -> None:
    from tracescore.formats.anyvalue import json_id

    try:
        expected: str | None = json_id(raw, size, "id")
    except ValueError:
        expected = None
    if otlp_json_typed._is_hex_id(raw, size):
        assert expected == raw
    else:  # everything the shortcut leaves to json_id: not lowercase hex, or all zeros
        assert expected != raw or raw != raw.lower() or len(raw) != 2 * size


@pytest.mark.parametrize(
    ("raw", "size", "shortcut"),
    [
        ("0123456789abcdef", 8, True),
        ("0123456789ABCDEF", 8, False),  # upper case: json_id lowers it
        ("0000000000000000", 8, False),  # all zeros: an error (or no parent)
        ("0123456789abcde", 8, False),
        ("0123456789abcdef0123456789abcdef", 16, True),
        ("0123456789abcdef", 16, False),
        ("ASNFZ4mrze8=", 8, False),  # base64
    ],
)
def test_the_hex_id_shortcut_takes_only_lowercase_hex(raw: str, size: int, shortcut: bool) -> None:
    assert otlp_json_typed._is_hex_id(raw, size) is shortcut


@given(st.binary(min_size=8, max_size=8) | st.binary(min_size=16, max_size=16))
def test_every_nonzero_lowercase_hex_id_takes_the_shortcut(data: bytes) -> None:
    from tracescore.formats.anyvalue import json_id

    raw = data.hex()
    assert otlp_json_typed._is_hex_id(raw, len(data)) is any(data)
    if any(data):
        assert json_id(raw, len(data), "id") == raw
