from __future__ import annotations

import math
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common._internal import _encode_attributes, _encode_value
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tracescore.formats.anyvalue import (
    decode_base64,
    json_any_value,
    json_attributes,
    json_enum,
    json_id,
    json_int,
    json_optional_id,
    proto_any_value,
    proto_attributes,
)

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
SCALARS = st.one_of(st.text(), st.booleans(), INT64, st.floats(), st.binary())
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


def normalise(value: Any) -> Any:
    """Comparable form: NaN equal to itself, and 1 distinct from 1.0 and True."""
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value)
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    return (type(value).__name__, value)


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"stringValue": "hi"}, "hi"),
        ({"string_value": "hi"}, "hi"),
        ({"boolValue": True}, True),
        ({"bool_value": False}, False),
        ({"intValue": "-42"}, -42),
        ({"intValue": 42}, 42),
        ({"int_value": "9223372036854775807"}, 2**63 - 1),
        ({"intValue": 1e3}, 1000),
        ({"doubleValue": 1.5}, 1.5),
        ({"doubleValue": 2}, 2.0),
        ({"doubleValue": "Infinity"}, math.inf),
        ({"doubleValue": "-Infinity"}, -math.inf),
        ({"double_value": "2.5"}, 2.5),
        ({"bytesValue": "AAH/"}, b"\x00\x01\xff"),
        ({"bytes_value": "AAH_"}, b"\x00\x01\xff"),  # URL-safe alphabet
        ({"bytesValue": "AAE"}, b"\x00\x01"),  # padding optional
        ({}, None),
        (None, None),
        ({"somethingNew": 1}, None),
        ({"arrayValue": {}}, []),
        (
            {"arrayValue": {"values": [{"intValue": "1"}, {"stringValue": "a"}, {}]}},
            [1, "a", None],
        ),
        (
            {
                "kvlist_value": {
                    "values": [
                        {"key": "a", "value": {"arrayValue": {"values": [{"boolValue": True}]}}},
                        {"key": "b", "value": {"kvlistValue": {"values": []}}},
                        {"key": "c"},
                    ]
                }
            },
            {"a": [True], "b": {}, "c": None},
        ),
        ({"intValue": "1", "stringValue": "wins"}, "wins"),
    ],
)
def test_json_any_value(doc: object, expected: object) -> None:
    assert normalise(json_any_value(doc)) == normalise(expected)


def test_nan_double() -> None:
    assert math.isnan(json_any_value({"doubleValue": "NaN"}))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"stringValue": 1}, "stringValue must be a string"),
        ({"boolValue": "true"}, "boolValue must be true or false"),
        ({"intValue": "1.5"}, "intValue must be an integer"),
        ({"intValue": True}, "intValue must be an integer"),
        ({"intValue": 1.5}, "intValue must be an integer"),
        ({"doubleValue": "fast"}, "doubleValue must be a number"),
        ({"doubleValue": False}, "doubleValue must be a number"),
        ({"bytesValue": "!!"}, "not valid base64"),
        ({"arrayValue": []}, "arrayValue must be an object"),
        ({"arrayValue": {"values": {}}}, "arrayValue.values must be an array"),
        ({"kvlistValue": {"values": [{"key": 1}]}}, "attribute key must be a string"),
        ("text", "AnyValue must be an object, got string"),
        ({"arrayValue": {"values": [[]]}}, "AnyValue must be an object, got array"),
    ],
)
def test_json_any_value_rejects(doc: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        json_any_value(doc)


def test_json_attributes_names_the_bad_attribute_and_keeps_last_duplicate() -> None:
    kvs = [{"key": "a", "value": {"intValue": "1"}}, {"key": "a", "value": {"intValue": "2"}}]
    assert json_attributes(kvs) == {"a": 2}
    assert json_attributes(None) == {}
    with pytest.raises(ValueError, match="attribute 'n': intValue"):
        json_attributes([{"key": "n", "value": {"intValue": "x"}}])
    with pytest.raises(ValueError, match="attributes must be an array"):
        json_attributes({"key": "a"})


def test_json_int() -> None:
    assert json_int("12") == 12
    assert json_int(12) == 12
    assert json_int(12.0) == 12
    for bad in ("", "x", None, False, 1.5, [1]):
        with pytest.raises(ValueError, match="must be an integer"):
            json_int(bad)


def test_ids() -> None:
    assert json_id("5B8EFFF798038103D269B633813FC60C", 16, "traceId") == (
        "5b8efff798038103d269b633813fc60c"
    )
    assert json_id("W47/95gDgQPSabYzgT/GDA==", 16, "traceId") == "5b8efff798038103d269b633813fc60c"
    assert json_id("W47_95gDgQPSabYzgT_GDA", 16, "traceId") == "5b8efff798038103d269b633813fc60c"
    assert json_id("CazD2SM5RfA=", 8, "spanId") == "09acc3d9233945f0"
    for bad, message in [
        (None, "missing spanId"),
        ("", "spanId must be a string"),
        (7, "spanId must be a string"),
        ("09acc3d9233945", "neither 16 hex digits nor base64 of 8 bytes"),
        ("zzzzzzzzzzzzzzzz", "neither"),
        ("0000000000000000", "all zeros"),
    ]:
        with pytest.raises(ValueError, match=message):
            json_id(bad, 8, "spanId")
    assert json_optional_id(None, 8, "p") is None
    assert json_optional_id("", 8, "p") is None
    assert json_optional_id("0000000000000000", 8, "p") is None
    assert json_optional_id("AAAAAAAAAAA=", 8, "p") is None
    assert json_optional_id("09acc3d9233945f0", 8, "p") == "09acc3d9233945f0"
    with pytest.raises(ValueError, match="neither"):
        json_optional_id("09ac", 8, "parentSpanId")


def test_enums() -> None:
    kinds = {
        "UNSPECIFIED": 0,
        "INTERNAL": 1,
        "SERVER": 2,
        "CLIENT": 3,
        "PRODUCER": 4,
        "CONSUMER": 5,
    }
    assert json_enum("SPAN_KIND_SERVER", kinds, "SPAN_KIND_", "kind") == 2
    assert json_enum("server", kinds, "SPAN_KIND_", "kind") == 2
    assert json_enum("span_kind_consumer", kinds, "SPAN_KIND_", "kind") == 5
    assert json_enum(3, kinds, "SPAN_KIND_", "kind") == 3
    assert json_enum("4", kinds, "SPAN_KIND_", "kind") == 4
    assert json_enum(None, kinds, "SPAN_KIND_", "kind") == 0
    for bad in (6, -1, True, "SPAN_KIND_NOPE", 1.0, "²"):
        with pytest.raises(ValueError, match="kind must be 0-5 or a name"):
            json_enum(bad, kinds, "SPAN_KIND_", "kind")


def test_base64_padding_and_alphabets() -> None:
    assert decode_base64("AA") == b"\x00"
    assert decode_base64("-_8") == b"\xfb\xff"
    with pytest.raises(ValueError, match="not valid base64"):
        decode_base64("a b")


def test_proto_any_value_empty_and_nested() -> None:
    assert proto_any_value(AnyValue()) is None
    value = _encode_value({"a": [1, "x", {"b": b"\x01"}], "c": 2.5, "d": None})
    assert proto_any_value(value) == {"a": [1, "x", {"b": b"\x01"}], "c": 2.5, "d": None}


@given(VALUES)
def test_sdk_encoded_value_decodes_back_from_protobuf_and_collector_json(value: Any) -> None:
    message = _encode_value(value)
    assert normalise(proto_any_value(message)) == normalise(value)
    as_json = MessageToDict(message)  # what the Collector writes for an AnyValue
    assert normalise(json_any_value(as_json)) == normalise(value)


@given(st.dictionaries(st.text(), VALUES, max_size=5))
def test_sdk_encoded_attributes_decode_back(attributes: dict[str, Any]) -> None:
    encoded = _encode_attributes(attributes)
    assert normalise(proto_attributes(encoded)) == normalise(attributes)
    as_json = [MessageToDict(kv) for kv in encoded]
    assert normalise(json_attributes(as_json)) == normalise(attributes)
