"""OTLP/HTTP (``/v1/traces``, ``/v1/logs``), ``/metrics`` and health checks as a Starlette app.

OTLP/HTTP (opentelemetry-proto ``docs/specification.md``, "OTLP/HTTP"): a POST of an
``Export*ServiceRequest`` as ``application/x-protobuf`` or ``application/json``, optionally
gzip-compressed. The answer is in the request's encoding: the ``Export*ServiceResponse``
(with ``partial_success`` when some records were rejected) on 200, a ``google.rpc.Status``
on failure. 429 and 503 tell the sender to retry (with ``Retry-After``); 400, 401, 413 and
415 tell it not to.

Checks run cheapest first, and authentication before anything that reveals how the
request would have been handled: auth (401), content type (415), declared length (413),
body as it streams in (413 / 400 / 415 for the encoding), decoding (400), the intake (429).
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import Final, Literal, TypeAlias

import orjson
from google.rpc.status_pb2 import Status  # type: ignore[import-untyped, unused-ignore]
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from tracescore.formats.base import Batch
from tracescore.server.body import BodyError, check_content_length, read_body
from tracescore.server.decoding import (
    MalformedRequest,
    decode_json_request,
    decode_protobuf_request,
    export_response,
    partial_success,
)
from tracescore.server.metrics import Signal
from tracescore.server.receiver import RETRY_AFTER_S, Receiver
from tracescore.server.unserved import HTTP_PATHS, UnservedLog, UnservedSignal, unserved_message
from tracescore.spans import Origin

__all__ = ["build_http_app"]

logger = logging.getLogger(__name__)

Encoding: TypeAlias = Literal["protobuf", "json"]

ORIGIN: Final = Origin("otlp-http")
PROTOBUF: Final = "application/x-protobuf"
JSON: Final = "application/json"
_ENCODINGS: Final[dict[str, Encoding]] = {PROTOBUF: "protobuf", JSON: "json"}

# google.rpc.Code values for the Status body of a failed request (google/rpc/code.proto):
# INVALID_ARGUMENT 3, RESOURCE_EXHAUSTED 8 (also what grpc answers an oversized message
# with, hence 413 too), UNIMPLEMENTED 12 (a signal not served, as over gRPC), INTERNAL 13,
# UNAVAILABLE 14, UNAUTHENTICATED 16.
_RPC_CODES: Final = {400: 3, 401: 16, 404: 12, 413: 8, 415: 3, 429: 8, 500: 13, 503: 14}
# Answered by nobody: the client went away mid-body (nginx's number, for the counter).
_CLIENT_CLOSED: Final = 499


def build_http_app(receiver: Receiver, registry: CollectorRegistry) -> Starlette:
    """The receiver's ASGI app.

    Routes: ``POST /v1/traces``, ``POST /v1/logs`` (OTLP, bearer token when configured),
    ``GET /metrics`` (``registry``; OpenMetrics when the scraper asks for it, which is
    what carries exemplars), ``GET /healthz`` (200 while the process serves),
    ``GET /readyz`` (200 when started, not draining and ``intake.ready()``, else 503).
    ``POST /v1/metrics`` and the profiles paths get 404 with a ``google.rpc.Status`` saying
    that only traces and logs are received (:mod:`tracescore.server.unserved`). Other
    methods on these paths get 405; other paths 404, listing the ones served.
    """
    endpoints = _Endpoints(receiver, registry)
    unserved = [
        Route(path, partial(endpoints.unserved, signal=signal), methods=["POST"])
        for path, signal in HTTP_PATHS.items()
    ]
    served = [
        Route("/v1/traces", partial(endpoints.export, signal="traces"), methods=["POST"]),
        Route("/v1/logs", partial(endpoints.export, signal="logs"), methods=["POST"]),
        Route("/metrics", endpoints.metrics, methods=["GET"]),
        Route("/healthz", endpoints.healthz, methods=["GET"]),
        Route("/readyz", endpoints.readyz, methods=["GET"]),
    ]
    # Listed from the routes themselves (HEAD, which Starlette adds to GET, left out).
    listing = ", ".join(
        f"{method} {route.path}"
        for route in served
        for method in sorted(route.methods or ())
        if method != "HEAD"
    )
    return Starlette(
        routes=[*served, *unserved],
        exception_handlers={404: partial(_not_found, served=listing)},
    )


class _Endpoints:
    def __init__(self, receiver: Receiver, registry: CollectorRegistry) -> None:
        self._receiver = receiver
        self._registry = registry
        self._log_unserved = UnservedLog("http")

    async def export(self, request: Request, *, signal: Signal) -> Response:
        response = await self._export(request, signal)
        self._receiver.metrics.request("http", signal, str(response.status_code))
        return response

    async def _export(self, request: Request, signal: Signal) -> Response:
        receiver = self._receiver
        headers = request.headers
        encoding = _encoding(request)
        if not receiver.authorized(headers.get("authorization")):
            return _error(
                401, "missing or invalid bearer token", encoding, {"WWW-Authenticate": "Bearer"}
            )
        if encoding is None:
            return PlainTextResponse(
                f"unsupported Content-Type {headers.get('content-type', '')!r}: "
                f"use {PROTOBUF} or {JSON}",
                status_code=415,
            )
        limit = receiver.max_request_bytes
        try:
            check_content_length(headers.get("content-length"), limit)
            body, wire_bytes = await read_body(
                request.stream(),
                content_encoding=headers.get("content-encoding"),
                limit=limit,
                timeout_s=receiver.request_timeout_s,
            )
            receiver.metrics.body_bytes("http", signal, wire_bytes)
            decode = decode_protobuf_request if encoding == "protobuf" else decode_json_request
            batch = await receiver.decode(len(body), partial(decode, signal, body, origin=ORIGIN))
        except BodyError as exc:
            logger.debug("OTLP/HTTP %s request refused: %s", signal, exc)
            return _error(exc.status, str(exc), encoding)
        except MalformedRequest as exc:
            logger.debug("OTLP/HTTP %s request malformed: %s", signal, exc)
            return _error(400, str(exc), encoding)
        except ClientDisconnect:
            return Response(status_code=_CLIENT_CLOSED)
        except Exception:  # a bug in decoding: one request fails, the server goes on
            logger.exception("internal error decoding an OTLP/HTTP %s request", signal)
            return _error(500, "internal error while decoding the request", encoding)
        try:
            taken = receiver.offer("http", signal, batch)
        except Exception:
            logger.exception("intake.offer raised on an OTLP/HTTP %s request", signal)
            return _error(500, "internal error while queueing the records", encoding)
        if not taken:
            return _error(
                429,
                "receiver queue is full; retry later",
                encoding,
                {"Retry-After": str(RETRY_AFTER_S)},
            )
        return _success(signal, batch, encoding)

    async def unserved(self, request: Request, *, signal: UnservedSignal) -> Response:
        self._log_unserved(signal, f"POST {request.url.path}")
        self._receiver.metrics.request("http", signal, "404")
        return _error(404, unserved_message(signal), _encoding(request))

    async def metrics(self, request: Request) -> Response:
        encoder, content_type = choose_encoder(request.headers.get("accept", ""))
        # Scrape-time collectors may take locks shared with the scoring worker: keep
        # any wait off the loop.
        body = await asyncio.to_thread(encoder, self._registry)
        return Response(body, media_type=content_type)

    async def healthz(self, request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(self, request: Request) -> Response:
        reason = self._receiver.readiness()
        if reason is None:
            return PlainTextResponse("ready")
        return PlainTextResponse(reason, status_code=503)


def _encoding(request: Request) -> Encoding | None:
    content_type = request.headers.get("content-type", "")
    return _ENCODINGS.get(content_type.partition(";")[0].strip().lower())


async def _not_found(request: Request, exc: Exception, *, served: str) -> Response:
    # Scanners and typos alike: DEBUG only, and not counted (the path is unbounded).
    logger.debug("HTTP %s %s: no such endpoint", request.method, request.url.path)
    return _error(404, f"no endpoint {request.url.path}; served: {served}", _encoding(request))


def _success(signal: Signal, batch: Batch, encoding: Encoding) -> Response:
    rejected = partial_success(signal, batch)
    if encoding == "json":
        if rejected is None:
            return Response(b"{}", media_type=JSON)
        count, message = rejected
        key = "rejectedSpans" if signal == "traces" else "rejectedLogRecords"
        # int64 fields are decimal strings in protobuf's JSON mapping, which OTLP/JSON uses.
        document = {"partialSuccess": {key: str(count), "errorMessage": message}}
        return Response(orjson.dumps(document), media_type=JSON)
    body = export_response(signal, rejected).SerializeToString()
    return Response(body, media_type=PROTOBUF)


def _error(
    status: int,
    message: str,
    encoding: Encoding | None,
    headers: dict[str, str] | None = None,
) -> Response:
    """A failed request's answer: ``google.rpc.Status`` in the request's encoding."""
    code = _RPC_CODES.get(status, 2)  # 2 = UNKNOWN
    if encoding == "protobuf":
        body = Status(code=code, message=message).SerializeToString()
        return Response(body, status_code=status, headers=headers, media_type=PROTOBUF)
    if encoding == "json":
        body = orjson.dumps({"code": code, "message": message})
        return Response(body, status_code=status, headers=headers, media_type=JSON)
    return PlainTextResponse(message, status_code=status, headers=headers)
