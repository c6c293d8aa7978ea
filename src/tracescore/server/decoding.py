"""One OTLP export request (protobuf or JSON) to a :class:`~tracescore.formats.base.Batch`.

Two kinds of failure are kept apart, as OTLP wants them answered differently:

* the request as a whole cannot be read (corrupt protobuf, invalid JSON, not an OTLP
  document): :class:`MalformedRequest`, answered with HTTP 400 / ``INVALID_ARGUMENT``
  and nothing is kept;
* single spans or log records are bad: they are skipped by the decoders with one located
  error each (``Batch.errors``) and their neighbours are kept; the sender learns about
  them through ``partial_success`` (:func:`partial_success`).
"""

from __future__ import annotations

from typing import Final

import orjson
from google.protobuf.message import DecodeError  # type: ignore[import-untyped, unused-ignore]
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsPartialSuccess,
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tracescore import json_text
from tracescore.formats.base import Batch
from tracescore.formats.otlp_json import decode_json_document, looks_like_document
from tracescore.formats.otlp_json_typed import decode_collector_json
from tracescore.formats.otlp_proto import (
    decode_logs_request,
    decode_trace_request,
    parse_message,
)
from tracescore.server.metrics import Signal
from tracescore.spans import Origin

__all__ = [
    "MalformedRequest",
    "decode_json_request",
    "decode_message",
    "decode_protobuf_request",
    "export_response",
    "parse_protobuf_request",
    "partial_success",
]

_RECORDS: Final = {"traces": "spans", "logs": "log records"}
_MESSAGE_NAMES: Final = {
    "traces": "ExportTraceServiceRequest",
    "logs": "ExportLogsServiceRequest",
}
_DOCUMENT_KEYS: Final = {"traces": "resourceSpans", "logs": "resourceLogs"}


class MalformedRequest(Exception):
    """The request cannot be read at all; the message says what is wrong."""


def parse_protobuf_request(
    signal: Signal, data: bytes | bytearray
) -> ExportTraceServiceRequest | ExportLogsServiceRequest:
    """Parse serialized export request bytes of ``signal``.

    Raises:
        MalformedRequest: the bytes are not a valid message of that type.

    """
    message = ExportTraceServiceRequest() if signal == "traces" else ExportLogsServiceRequest()
    try:
        parse_message(message, data)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise MalformedRequest(f"invalid protobuf {_MESSAGE_NAMES[signal]}: {exc}") from None
    return message


def decode_message(
    message: ExportTraceServiceRequest | ExportLogsServiceRequest, *, origin: Origin
) -> Batch:
    """The records of a parsed export request; bad records become ``Batch.errors``."""
    if isinstance(message, ExportTraceServiceRequest):
        return decode_trace_request(message, origin=origin)
    return decode_logs_request(message, origin=origin)


def decode_protobuf_request(signal: Signal, data: bytes | bytearray, *, origin: Origin) -> Batch:
    """Parse and decode a protobuf export request (``application/x-protobuf``).

    Raises:
        MalformedRequest: the bytes are not a valid message of that type.

    """
    return decode_message(parse_protobuf_request(signal, data), origin=origin)


def decode_json_request(signal: Signal, data: bytes | bytearray, *, origin: Origin) -> Batch:
    """Parse and decode an OTLP/JSON export request (``application/json``).

    The decoder is the one ``tracescore import`` uses for files, so the receiver is as
    lenient (snake_case keys, enum names, base64 or hex ids). An empty object is an empty
    request; an object with none of the OTLP keys is malformed (a misrouted payload would
    otherwise pass as an empty success).

    Raises:
        MalformedRequest: not JSON, not an object, or not an OTLP document.

    """
    batch = decode_collector_json(data, origin=origin)
    if batch is not None:
        return batch
    try:
        doc = json_text.loads(data)
    except orjson.JSONDecodeError as exc:
        raise MalformedRequest(f"invalid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise MalformedRequest(f"expected a JSON object, got {type(doc).__name__}")
    if doc and not looks_like_document(doc):
        keys = ", ".join(sorted(str(key) for key in doc)[:5])
        raise MalformedRequest(
            f"not an OTLP JSON export request: no {_DOCUMENT_KEYS[signal]} (keys: {keys})"
        )
    return decode_json_document(doc, origin=origin)


def partial_success(signal: Signal, batch: Batch) -> tuple[int, str] | None:
    """How many records were rejected and why, or None when all were accepted.

    The count is the number of located errors: one per skipped record, or per malformed
    block around records (OTLP only asks for a count the sender can log). The message
    names the first error, with its span id when the decoder could read one.
    """
    if not batch.errors:
        return None
    rejected = len(batch.errors)
    more = f" (and {rejected - 1} more)" if rejected > 1 else ""
    return rejected, f"{rejected} invalid {_RECORDS[signal]} rejected: {batch.errors[0]}{more}"


def export_response(
    signal: Signal, rejected: tuple[int, str] | None
) -> ExportTraceServiceResponse | ExportLogsServiceResponse:
    """The ``Export*ServiceResponse`` for ``signal``.

    ``partial_success`` is filled in when ``rejected`` (from :func:`partial_success`) is set.
    """
    if signal == "traces":
        traces = ExportTraceServiceResponse()
        if rejected is not None:
            traces.partial_success.CopyFrom(
                ExportTracePartialSuccess(rejected_spans=rejected[0], error_message=rejected[1])
            )
        return traces
    logs = ExportLogsServiceResponse()
    if rejected is not None:
        logs.partial_success.CopyFrom(
            ExportLogsPartialSuccess(rejected_log_records=rejected[0], error_message=rejected[1])
        )
    return logs
