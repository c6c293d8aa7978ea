"""OTLP field values as plain Python values: AnyValue, attributes, ints, ids, enums.

``AnyValue`` and attribute lists are decoded from their JSON and protobuf forms; 64-bit
integers, ids and enums from their (lenient) JSON forms.

The JSON ``AnyValue`` follows the OTLP/JSON mapping (REFERENCE.md section 6): exactly one
of ``stringValue``, ``boolValue``, ``intValue`` (decimal string or number),
``doubleValue`` (number, or ``"NaN"``/``"Infinity"``/``"-Infinity"``),
``arrayValue{values}``, ``kvlistValue{values:[{key,value}]}``, ``bytesValue`` (base64),
or ``{}`` for an empty value. The snake_case spellings (``string_value``, ...) are
accepted too, as the Collector's own reader does. Unknown keys are ignored, so an object
with none of the keys above is ``None``. When an object holds several value keys
(invalid OTLP), ``stringValue`` wins, otherwise the first recognised key in document
order.

Every JSON decoder here raises :class:`ValueError` with a short, human-readable reason
for a malformed value; the record-level decoders turn that into a located
:class:`~tracescore.exceptions.TraceFormatError`.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # protobuf is imported only by the readers of protobuf input
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from tracescore.spans import Attributes, AttrValue

#: The range of a 64-bit field, signed (``intValue``) or unsigned (``fixed64`` times). A
#: number past it is not OTLP; it is rejected here because nothing downstream (the JSON
#: the importer writes, among others) could hold it.
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
UINT64_MAX: Final = 2**64 - 1

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "UINT64_MAX",
    "decode_base64",
    "json_double",
    "json_enum",
    "json_id",
    "json_optional_id",
    "json_any_value",
    "json_attributes",
    "json_int",
    "proto_any_value",
    "proto_attributes",
    "type_name",
]


def type_name(value: object) -> str:
    """The JSON name of a decoded JSON value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def json_int(
    value: object, what: str = "integer", *, low: int = INT64_MIN, high: int = UINT64_MAX
) -> int:
    """A 64-bit OTLP/JSON integer (decimal string or number) as ``int``.

    Integral floats (``1e3``) are accepted as protobuf's JSON reader does; booleans,
    fractions and non-numeric strings are not. The value must lie in ``low..high``: by
    default what a 64-bit field holds, signed or unsigned.

    Raises:
        ValueError: ``value`` is not an integer, or out of range.

    """
    number = None
    if value.__class__ is int:
        number = value
    elif value.__class__ is str:
        try:
            number = int(value)
        except ValueError:
            number = None
    elif value.__class__ is float and value.is_integer():
        number = int(value)
    if number is None:
        raise ValueError(f"{what} must be an integer, got {type_name(value)} {_short(value)}")
    if not low <= number <= high:
        raise ValueError(f"{what} {_short(value)} is out of range ({low} to {high})")
    return number


def decode_base64(text: str) -> bytes:
    """Standard or URL-safe base64, padding optional (the protobuf JSON ``bytes`` mapping).

    Raises:
        ValueError: ``text`` is not base64.

    """
    if "-" in text or "_" in text:
        text = text.replace("-", "+").replace("_", "/")
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"not valid base64: {_short(text)}") from None


def _string(value: object) -> AttrValue:
    if value.__class__ is str:
        return value
    raise ValueError(f"stringValue must be a string, got {type_name(value)}")


def _bool(value: object) -> AttrValue:
    if value.__class__ is bool:
        return value
    raise ValueError(f"boolValue must be true or false, got {type_name(value)}")


def _int(value: object) -> AttrValue:
    return json_int(value, "intValue", high=INT64_MAX)


_SPECIAL_DOUBLES: Final = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def json_double(value: object) -> float:
    """An OTLP/JSON ``doubleValue`` (a number, or ``"NaN"``/``"Infinity"``/a numeric string).

    Raises:
        ValueError: anything else.

    """
    if value.__class__ is float:
        return value
    if value.__class__ is int:
        return float(value)
    if value.__class__ is str:
        special = _SPECIAL_DOUBLES.get(value)
        if special is not None:
            return special
        try:
            return float(value)
        except ValueError:
            pass
    raise ValueError(f"doubleValue must be a number, got {type_name(value)} {_short(value)}")


def _values(value: object, what: str) -> list[object]:
    if value.__class__ is not dict:
        raise ValueError(f"{what} must be an object, got {type_name(value)}")
    values = value.get("values")
    if values is None:
        return []
    if values.__class__ is not list:
        raise ValueError(f"{what}.values must be an array, got {type_name(values)}")
    return values


def _array(value: object) -> AttrValue:
    out: list[AttrValue] = []
    append = out.append
    any_value = json_any_value
    for item in _values(value, "arrayValue"):
        if item.__class__ is dict:  # string arrays are the common case
            inner = item.get("stringValue")
            if inner.__class__ is str:
                append(inner)
                continue
        append(any_value(item))
    return out


def _kvlist(value: object) -> AttrValue:
    return json_attributes(_values(value, "kvlistValue"))


def _bytes(value: object) -> AttrValue:
    if value.__class__ is not str:
        raise ValueError(f"bytesValue must be a base64 string, got {type_name(value)}")
    return decode_base64(value)


_HANDLERS: Final[dict[str, Callable[[object], AttrValue]]] = {
    "stringValue": _string,
    "boolValue": _bool,
    "intValue": _int,
    "doubleValue": json_double,
    "arrayValue": _array,
    "kvlistValue": _kvlist,
    "bytesValue": _bytes,
    "string_value": _string,
    "bool_value": _bool,
    "int_value": _int,
    "double_value": json_double,
    "array_value": _array,
    "kvlist_value": _kvlist,
    "bytes_value": _bytes,
}


def json_any_value(value: object) -> AttrValue:
    """An OTLP/JSON ``AnyValue`` object (or ``null``) as a plain value.

    Raises:
        ValueError: the value is malformed (wrong JSON type, bad number, bad base64).

    """
    if value.__class__ is not dict:
        if value is None:
            return None
        raise ValueError(f"AnyValue must be an object, got {type_name(value)}")
    string = value.get("stringValue")
    if string.__class__ is str:
        return string
    for key, inner in value.items():
        # The common scalars inline; everything else (and every error) via its handler.
        if inner.__class__ is str:
            if key == "intValue":
                try:
                    number = int(inner)
                except ValueError:
                    pass
                else:
                    if INT64_MIN <= number <= INT64_MAX:
                        return number
        elif inner.__class__ is float:
            if key == "doubleValue":
                return inner
        elif inner.__class__ is bool and key == "boolValue":
            return inner
        handler = _HANDLERS.get(key)
        if handler is not None:
            return handler(inner)
    return None


def json_attributes(kvs: object) -> Attributes:
    """An OTLP/JSON ``KeyValue`` array (or ``null``) as a dict; a repeated key keeps the last.

    Raises:
        ValueError: not an array, an entry without a string ``key``, or a malformed value.

    """
    if kvs is None:
        return {}
    if kvs.__class__ is not list:
        raise ValueError(f"attributes must be an array, got {type_name(kvs)}")
    out: Attributes = {}
    for kv in kvs:
        if kv.__class__ is not dict:
            raise ValueError(f"attribute must be an object, got {type_name(kv)}")
        key = kv.get("key", "")  # proto3 JSON omits an empty key
        if key.__class__ is not str:
            raise ValueError(f"attribute key must be a string, got {type_name(key)}")
        try:
            value = kv.get("value")
            string = value.get("stringValue") if value.__class__ is dict else None
            out[key] = string if string.__class__ is str else json_any_value(value)
        except ValueError as exc:
            raise ValueError(f"attribute {key!r}: {exc}") from None
    return out


def proto_any_value(value: AnyValue) -> AttrValue:
    """A protobuf ``AnyValue`` as a plain value.

    An unset value, or a profiles-only ``string_value_strindex``, is ``None``.
    """
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value
    if which == "int_value":
        return value.int_value
    if which == "bool_value":
        return value.bool_value
    if which == "double_value":
        return value.double_value
    if which == "array_value":
        return [proto_any_value(item) for item in value.array_value.values]
    if which == "kvlist_value":
        return proto_attributes(value.kvlist_value.values)
    if which == "bytes_value":
        return value.bytes_value
    return None


def proto_attributes(kvs: Iterable[KeyValue]) -> Attributes:
    """Protobuf ``KeyValue`` entries as a dict; a repeated key keeps the last."""
    out: Attributes = {}
    for kv in kvs:
        value = kv.value
        if value.WhichOneof("value") == "string_value":
            out[kv.key] = value.string_value
        else:
            out[kv.key] = proto_any_value(value)
    return out


def _id_bytes(value: object, size: int, what: str) -> bytes:
    """The ``size`` bytes of a hex or base64 id; raises ValueError."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"missing {what}" if value is None else f"{what} must be a string")
    data = None
    if len(value) == 2 * size:
        try:
            data = bytes.fromhex(value)
        except ValueError:
            data = None
    if data is None or len(data) != size:
        try:
            data = decode_base64(value)
        except ValueError:
            data = None
    if data is None or len(data) != size:
        text = value if len(value) <= 48 else value[:45] + "..."
        raise ValueError(
            f"{what} {text!r} is neither {2 * size} hex digits nor base64 of {size} bytes"
        )
    return data


def json_id(value: object, size: int, what: str) -> str:
    """A required, non-zero id (hex or base64 of ``size`` bytes) as lowercase hex.

    Hex is tried when ``value`` has ``2 * size`` characters, base64 otherwise; the two
    never overlap (base64 of 16 or 8 bytes is 22-24 or 11-12 characters long).

    Raises:
        ValueError: missing, not a string, not decodable to ``size`` bytes, or all zeros.

    """
    data = _id_bytes(value, size, what)
    if not any(data):
        raise ValueError(f"{what} is all zeros")
    return data.hex()


def json_optional_id(value: object, size: int, what: str) -> str | None:
    """Like :func:`json_id` for an id that may be absent: missing, empty or all-zero is None.

    Raises:
        ValueError: present but not decodable to ``size`` bytes.

    """
    if value is None or value == "":
        return None
    data = _id_bytes(value, size, what)
    return data.hex() if any(data) else None


def json_enum(value: object, names: dict[str, int], prefix: str, what: str) -> int:
    """An OTLP enum given as an integer below ``len(names)`` or a (prefixed) name.

    ``names`` maps upper-case short names to values; ``prefix`` (``"SPAN_KIND_"``) is
    optional in the input, which is matched case-insensitively. ``None`` is 0.

    Raises:
        ValueError: anything else.

    """
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        if 0 <= value < len(names):
            return value
    elif isinstance(value, str):
        key = value.strip().upper().removeprefix(prefix)
        if key in names:
            return names[key]
        if key.isascii() and key.isdigit() and int(key) < len(names):
            return int(key)
    raise ValueError(f"{what} must be 0-{len(names) - 1} or a name, got {value!r:.40}")
