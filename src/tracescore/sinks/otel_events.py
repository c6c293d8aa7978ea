"""Scores back to the tracing backend, as OpenTelemetry ``gen_ai.evaluation.result`` events.

Opt-in. Each :class:`~tracescore.criteria.base.CriterionResult` of a scored invocation
becomes one event (an OTel log record with an event name, GenAI semantic conventions,
"Event: gen_ai.evaluation.result", stability *development*) whose span context is the
invocation's **root span**: the spec says the event SHOULD be parented to the evaluated
operation's span, so Tempo, Jaeger or Phoenix show the scores beside the trace.

Attributes of every event:

* ``gen_ai.evaluation.name`` (required): the criterion name;
* ``gen_ai.evaluation.score.value`` (conditionally required, "if applicable"): the
  score, a double; absent when the criterion gave none (NOT_EVALUATED);
* ``gen_ai.evaluation.score.label``: the status, one of ``passed``, ``failed``,
  ``not_evaluated``, ``informational`` (the spec asks implementations to document the
  values; a NOT_EVALUATED result is still emitted, so "why was this not scored?" has an
  answer next to the trace);
* ``gen_ai.evaluation.explanation`` (recommended): tracescore's own reason text
  (``no golden``, ``judge timeout``, ...); with ``include_content`` also the judge's
  rationales;
* ``error.type`` (conditionally required "if the operation ended in an error"): only
  when the evaluation itself failed — a judge failure (its bounded reason, e.g.
  ``judge timeout``, ``judge error 429``) or a criterion that raised (the exception
  class name). A result that is NOT_EVALUATED because nothing could be scored (no
  golden, content not captured, no judge configured) did not fail, so it has no
  ``error.type``;
* ``gen_ai.agent.name`` and ``gen_ai.conversation.id`` when the invocation has them;
* ``tracescore.criterion.version``, ``tracescore.criterion.threshold`` (when set),
  ``tracescore.outcome`` (the invocation's outcome), ``tracescore.invocation.id``, and
  ``tracescore.golden.eval_set_id`` / ``.eval_id`` / ``.turn`` (0-based) when a golden
  turn matched: the same names as the tags that select a golden on a span.

``gen_ai.response.id`` is not set: the spec wants it only when the span id is not
available, and the root span id is always there when an event is emitted.

Prompts and completions stay out unless ``include_content=True`` (then
``tracescore.user_content``, ``tracescore.final_response`` and the judge rationales from
``details`` are added). By default even a criterion's exception message is cut to its
class name, since it may quote the content it choked on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping
from importlib import metadata
from typing import Final, Literal
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.context import Context
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from tracescore.conventions.messages import JsonValue
from tracescore.criteria.base import CriterionResult
from tracescore.exceptions import ConfigError, JudgeError
from tracescore.goldens.matching import EVAL_ID_TAG, EVAL_SET_ID_TAG, TURN_TAG
from tracescore.scoring import InvocationResult

__all__ = ["EVENT_NAME", "EvaluationEventSink"]

logger = logging.getLogger(__name__)

#: The event name (GenAI semantic conventions, "Event: gen_ai.evaluation.result").
EVENT_NAME: Final = "gen_ai.evaluation.result"

_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
_EXPLANATION: Final = "gen_ai.evaluation.explanation"
_ERROR_TYPE: Final = "error.type"
_AGENT_NAME: Final = "gen_ai.agent.name"
_CONVERSATION_ID: Final = "gen_ai.conversation.id"
_CRITERION_VERSION: Final = "tracescore.criterion.version"
_CRITERION_THRESHOLD: Final = "tracescore.criterion.threshold"
_OUTCOME: Final = "tracescore.outcome"
_INVOCATION_ID: Final = "tracescore.invocation.id"
_USER_CONTENT: Final = "tracescore.user_content"
_FINAL_RESPONSE: Final = "tracescore.final_response"

_SCOPE: Final = "tracescore.evaluation"
_OTLP_LOGS_PATH: Final = "/v1/logs"

#: NOT_EVALUATED reasons that mean the judge failed (the JudgeError family's reasons;
#: ``judge error <status>`` is matched by prefix).
_JUDGE_REASONS: Final = frozenset(
    [JudgeError.default_reason, *(cls.default_reason for cls in JudgeError.__subclasses__())]
)
#: Prefix of the reason :meth:`Criterion.evaluate` gives an exception inside a criterion.
_CRITERION_ERROR: Final = "criterion error: "
#: Keys of a result's ``details`` whose strings are judge rationales (any nesting).
_RATIONALE_KEYS: Final = frozenset({"rationale", "rationales", "reasoning"})

_Attributes = dict[str, str | int | float]


class EvaluationEventSink:
    """Emits one ``gen_ai.evaluation.result`` event per criterion result of an invocation.

    Thread-safe: :meth:`emit` may be called from several threads; with a batching
    processor it only appends to the SDK's bounded queue (a full queue drops the oldest
    records, as the SDK logs). Nothing here raises into the caller for exporter or
    pipeline problems: they are logged on this module's logger.

    Exporter I/O is never traced: the SDK 1.44 ``BatchLogRecordProcessor`` (worker and
    ``force_flush`` alike) and ``SimpleLogRecordProcessor`` already attach
    ``_SUPPRESS_INSTRUMENTATION_KEY`` around ``exporter.export``, so an instrumented
    ``requests``/``grpc`` client records no span for it and tracescore never scores its
    own traffic. A provider passed in by the caller is the caller's pipeline.

    Args:
        logger_provider: Where events go (its processors and exporters decide the rest).
        include_content: Add the user message, the final response and judge rationales.
            Off by default: prompts and completions stay out of emitted data.
        owns_provider: :meth:`shutdown` shuts the provider down too.

    """

    def __init__(
        self,
        logger_provider: LoggerProvider,
        *,
        include_content: bool = False,
        owns_provider: bool = False,
    ) -> None:
        self._provider = logger_provider
        self._include_content = include_content
        self._owns_provider = owns_provider
        self._logger = logger_provider.get_logger(_SCOPE, version=_version())
        self._lock = threading.Lock()
        self._shut_down = False

    @classmethod
    def to_otlp(
        cls,
        endpoint: str,
        *,
        protocol: Literal["http", "grpc"] = "http",
        headers: Mapping[str, str] | None = None,
        include_content: bool = False,
        resource_attributes: Mapping[str, str] | None = None,
    ) -> EvaluationEventSink:
        """A sink exporting over OTLP through its own provider, which it owns.

        The pipeline is a ``LoggerProvider`` with a ``BatchLogRecordProcessor`` and the
        OTLP log exporter of ``protocol``; the SDK's ``OTEL_BLRP_*`` and
        ``OTEL_EXPORTER_OTLP_LOGS_*`` settings (timeout, compression, certificates) apply.

        Args:
            endpoint: ``http``: the full URL, e.g. ``http://collector:4318/v1/logs`` (a URL
                without a path gets ``/v1/logs``). ``grpc``: ``http://host:4317`` (plain
                text) or ``https://host:4317`` (TLS).
            protocol: OTLP over HTTP (protobuf) or gRPC.
            headers: Sent with every export (e.g. an authorization header).
            include_content: See :class:`EvaluationEventSink`.
            resource_attributes: The resource of the events, over ``OTEL_RESOURCE_ATTRIBUTES``;
                ``service.name`` defaults to ``tracescore`` unless set there or by
                ``OTEL_SERVICE_NAME``.

        Raises:
            ConfigError: The endpoint is empty or the protocol unknown.

        """
        if not endpoint.strip():
            raise ConfigError("OTLP endpoint for evaluation events is empty")
        exporter: LogRecordExporter
        if protocol == "http":
            from opentelemetry.exporter.otlp.proto.http._log_exporter import (  # noqa: PLC0415
                OTLPLogExporter as HTTPLogExporter,
            )

            exporter = HTTPLogExporter(
                endpoint=_http_logs_url(endpoint), headers=dict(headers or {})
            )
        elif protocol == "grpc":
            # Imported here: grpc is heavy and only this protocol needs it.
            from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (  # noqa: PLC0415
                OTLPLogExporter as GRPCLogExporter,
            )

            # gRPC metadata keys must be lowercase.
            metadata_ = tuple((k.lower(), v) for k, v in (headers or {}).items())
            exporter = GRPCLogExporter(endpoint=endpoint, headers=metadata_ or None)
        else:
            raise ConfigError(f"unknown OTLP protocol {protocol!r}: use 'http' or 'grpc'")
        provider = LoggerProvider(resource=_resource(resource_attributes))
        provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
        return cls(provider, include_content=include_content, owns_provider=True)

    def emit(self, result: InvocationResult) -> int:
        """Emit the events of one scored invocation.

        Every criterion result gives one event, NOT_EVALUATED ones included. An
        invocation without a valid trace id or root span id (hex) cannot be tied to its
        trace, so nothing is emitted for it. After :meth:`shutdown` nothing is emitted.

        Returns:
            The number of events handed to the provider (delivery is the exporter's job).

        """
        if self._shut_down:
            return 0
        inv = result.invocation
        context = _root_span_context(inv.trace_id, inv.root_span_id)
        if context is None:
            logger.debug(
                "no evaluation events for invocation %s: no trace or root span id",
                inv.invocation_id,
            )
            return 0
        shared = self._invocation_attributes(result)
        now = time.time_ns()
        emitted = 0
        failure: Exception | None = None
        for res in result.results:
            attributes = {**self._result_attributes(res), **shared}
            try:
                self._logger.emit(
                    timestamp=now,
                    context=context,
                    severity_number=SeverityNumber.INFO,
                    event_name=EVENT_NAME,
                    attributes=attributes,
                )
            except Exception as exc:  # a processor's bug must not reach the scoring loop
                failure = failure or exc
                continue
            emitted += 1
        if failure is not None:
            logger.warning(
                "%d of %d evaluation events of trace %s not emitted",
                len(result.results) - emitted,
                len(result.results),
                inv.trace_id,
                exc_info=failure,
            )
        return emitted

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Export what is queued, blocking the caller until it is done.

        The timeout is passed to the provider, but the SDK 1.44 ``BatchLogRecordProcessor``
        does not enforce it (opentelemetry-python#4568): each queued batch then waits at
        most the exporter's own timeout (``OTEL_EXPORTER_OTLP_LOGS_TIMEOUT``, 10 s).

        Returns:
            The provider's answer (the SDK's batch processor says True even when an
            export failed, which it logs); False after :meth:`shutdown` or on an error.

        """
        if self._shut_down:
            return False
        try:
            return self._provider.force_flush(timeout_millis)
        except Exception:
            logger.warning("flushing evaluation events failed", exc_info=True)
            return False

    def shutdown(self) -> None:
        """Stop emitting; shut the provider down (flushing it) only if this sink owns it.

        Idempotent and safe from several threads: only the first call does anything.
        The SDK's batch processor waits up to 30 s for its worker's last export.
        """
        with self._lock:
            if self._shut_down:
                return
            self._shut_down = True
        if not self._owns_provider:
            return
        try:
            self._provider.shutdown()
        except Exception:
            logger.warning("shutting down the evaluation event pipeline failed", exc_info=True)

    def _invocation_attributes(self, result: InvocationResult) -> _Attributes:
        inv = result.invocation
        attributes: _Attributes = {_OUTCOME: result.outcome, _INVOCATION_ID: inv.invocation_id}
        if inv.agent:
            attributes[_AGENT_NAME] = inv.agent
        if inv.conversation_id:
            attributes[_CONVERSATION_ID] = inv.conversation_id
        if result.golden is not None:
            attributes[EVAL_SET_ID_TAG] = result.golden.eval_set_id
            attributes[EVAL_ID_TAG] = result.golden.eval_id
            attributes[TURN_TAG] = result.golden.turn
        if self._include_content:
            if inv.user_content is not None:
                attributes[_USER_CONTENT] = inv.user_content
            if inv.final_response is not None:
                attributes[_FINAL_RESPONSE] = inv.final_response
        return attributes

    def _result_attributes(self, res: CriterionResult) -> _Attributes:
        attributes: _Attributes = {
            _EVALUATION_NAME: res.criterion,
            _SCORE_LABEL: res.status,
            _CRITERION_VERSION: res.version,
        }
        if res.score is not None:
            attributes[_SCORE_VALUE] = float(res.score)
        if res.threshold is not None:
            attributes[_CRITERION_THRESHOLD] = float(res.threshold)
        explanation = self._explanation(res)
        if explanation:
            attributes[_EXPLANATION] = explanation
        error_type = _error_type(res)
        if error_type is not None:
            attributes[_ERROR_TYPE] = error_type
        return attributes

    def _explanation(self, res: CriterionResult) -> str | None:
        if not self._include_content:
            return _content_free_reason(res.reason)
        parts = [res.reason] if res.reason else []
        parts.extend(r for r in dict.fromkeys(_rationales(res.details)) if r not in parts)
        return "\n".join(parts) or None


def _root_span_context(trace_id: str, span_id: str | None) -> Context | None:
    """A context holding the invocation's root span (remote, sampled), or None if invalid.

    Sampled: the trace was recorded and exported, or there would be nothing to score.
    """
    trace_int = _hex_id(trace_id)
    span_int = _hex_id(span_id)
    if trace_int is None or span_int is None:
        return None
    span_context = SpanContext(
        trace_id=trace_int,
        span_id=span_int,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    if not span_context.is_valid:  # zero or too long for 128/64 bits
        return None
    # A fresh Context: nothing of the caller's current context (its span) leaks in.
    return trace.set_span_in_context(NonRecordingSpan(span_context), Context())


def _hex_id(value: str | None) -> int | None:
    if not value:
        return None
    try:
        return int(value, 16)
    except ValueError:
        return None


def _error_type(res: CriterionResult) -> str | None:
    """``error.type`` when the evaluation failed (not when it merely did not apply)."""
    reason = res.reason
    if res.score is not None or not reason:
        return None
    if reason in _JUDGE_REASONS or reason.startswith("judge error"):
        return reason  # bounded by design: these are metric label values too
    if reason.startswith(_CRITERION_ERROR):
        return _exception_name(reason)
    return None


def _content_free_reason(reason: str | None) -> str | None:
    """The reason without an exception message, which may quote prompt or response text."""
    if reason and reason.startswith(_CRITERION_ERROR):
        return f"{_CRITERION_ERROR}{_exception_name(reason)}"
    return reason


def _exception_name(reason: str) -> str:
    """``KeyError`` of ``criterion error: KeyError: 'the prompt...'``."""
    return reason[len(_CRITERION_ERROR) :].split(":", 1)[0].strip() or "unknown"


def _rationales(
    value: JsonValue | Mapping[str, JsonValue], *, under: bool = False
) -> Iterator[str]:
    """Strings under a rationale key (``rationale``, ``*_rationales``, ...), depth first."""
    if isinstance(value, str):
        if under and value.strip():
            yield value.strip()
    elif isinstance(value, Mapping):
        for key, item in value.items():
            named = key in _RATIONALE_KEYS or key.endswith("_rationales")
            yield from _rationales(item, under=named)
    elif isinstance(value, list):
        for item in value:
            yield from _rationales(item, under=under)


def _http_logs_url(endpoint: str) -> str:
    """The endpoint as given, or with ``/v1/logs`` when it has no path."""
    if urlsplit(endpoint).path in ("", "/"):
        return endpoint.rstrip("/") + _OTLP_LOGS_PATH
    return endpoint


def _resource(attributes: Mapping[str, str] | None) -> Resource:
    resource = Resource.create(dict(attributes or {}))
    name = resource.attributes.get(SERVICE_NAME)
    if not isinstance(name, str) or name.startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "tracescore"}))
    return resource


def _version() -> str | None:
    try:
        return metadata.version("tracescore")
    except metadata.PackageNotFoundError:
        return None
