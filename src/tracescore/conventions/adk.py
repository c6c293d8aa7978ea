"""Google ADK telemetry (instrumentation scope ``gcp.vertex.agent``).

Legacy schema (v1, ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``): the model call span carries
``gcp.vertex.agent.llm_request`` (JSON: ``{model, config{system_instruction, tools},
contents[...]}``, whole history in Gemini ``Content`` form) and ``...llm_response``
(``{content, finish_reason, usage_metadata}``); tool spans carry
``gcp.vertex.agent.tool_call_args`` / ``...tool_response``. The run's root span is
``invocation`` with no attributes at all, so it is recognised by scope and name — the one
place we key on a span name, because ADK gives nothing else.

Schema v2 (default since 2.13) is OTel GenAI semconv, read by
:mod:`tracescore.conventions.genai`; this module adds ADK's ids and capture switches.
"""

from __future__ import annotations

from typing import Final

from tracescore.conventions.base import (
    ConventionReader,
    Found,
    SpanView,
    StepKind,
    ToolIO,
    Usage,
    parse_content,
)
from tracescore.conventions.genai import system_text
from tracescore.conventions.messages import JsonValue, Message, message_from_obj
from tracescore.spans import SpanRecord

__all__ = [
    "ADK_SCOPE",
    "CONFIRMATION_PENDING",
    "AdkLegacy",
    "awaits_long_running_result",
    "is_adk",
    "is_callback_reply",
]

ADK_SCOPE: Final = "gcp.vertex.agent"
LLM_REQUEST: Final = "gcp.vertex.agent.llm_request"
LLM_RESPONSE: Final = "gcp.vertex.agent.llm_response"
TOOL_ARGS: Final = "gcp.vertex.agent.tool_call_args"
TOOL_RESPONSE: Final = "gcp.vertex.agent.tool_response"

#: What ADK answers a call of a tool that needs a person's confirmation
#: (``require_confirmation=True``) with, before it asks (``adk_request_confirmation``)
#: and ends the run; the user's confirmation goes on with the same invocation, in a run
#: of its own that runs the tool (checked with google-adk 2.13).
CONFIRMATION_PENDING: Final = {
    "error": "This tool call requires confirmation, please approve or reject."
}
#: ``gen_ai.tool.type`` of a tool whose result may come later, from the user (a person's
#: approval): returning None, it ends the run, which the user's function response resumes.
_LONG_RUNNING: Final = "LongRunningFunctionTool"
#: The call id ADK writes on a tool span when the call got no response (both schemas).
_NO_RESPONSE: Final = "<not specified>"
#: Schema 1's ``tool_response`` when the call got none.
_NO_RESULT: Final = {"result": _NO_RESPONSE}
#: What only a model's reply carries, in both key cases (``Event`` fields ADK counts by).
_MODEL_REPLY_KEYS: Final = ("usage_metadata", "usageMetadata", "model_version", "modelVersion")

HINT_V1: Final = (
    "ADK legacy telemetry (schema 1) had content capture turned off: "
    "unset ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS or set it to true"
)
HINT_V2: Final = (
    "ADK telemetry schema 2 captures no content by default: set "
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY (or SPAN_AND_EVENT, or "
    "EVENT_ONLY with the OTel logs pipeline exported) in the agent's environment"
)


def is_callback_reply(response: Found[JsonValue] | None) -> bool:
    """True for a whole ADK ``LlmResponse`` that no model gave (no usage, no model version).

    ADK's own rule: ``inference_call_count_v1`` counts the events that carry either. A
    model's reply always has them; a callback's (a guardrail's) only what it set.
    """
    if response is None or response.truncated or not isinstance(response.value, dict):
        return False
    value = response.value
    return "content" in value and not any(value.get(k) for k in _MODEL_REPLY_KEYS)


def is_adk(span: SpanRecord) -> bool:
    """True for spans emitted by ADK's own instrumentation."""
    return span.scope == ADK_SCOPE


class AdkLegacy(ConventionReader):
    """Reader for ADK's ``gcp.vertex.agent.*`` attributes (legacy schema and shared ids)."""

    name = "adk"
    markers = frozenset({LLM_REQUEST, LLM_RESPONSE, TOOL_ARGS, TOOL_RESPONSE})
    scopes = frozenset({ADK_SCOPE})

    def step_kind(self, span: SpanRecord) -> StepKind | None:
        """``invocation`` root, ``call_llm`` (has ``llm_request``), tool spans."""
        attrs = span.attributes
        if LLM_REQUEST in attrs or LLM_RESPONSE in attrs:
            return "llm"
        if TOOL_ARGS in attrs or TOOL_RESPONSE in attrs:
            return "tool"
        if span.scope == ADK_SCOPE and span.name == "invocation":
            return "invocation"
        return None

    def _payload(self, view: SpanView, key: str) -> Found[JsonValue] | None:
        value = view.span.attributes.get(key)
        if value is None:  # every span but schema 1's model calls: nothing to parse or cache
            return None
        return view.cached(key, lambda: parse_content(view, value, key))

    def _request(self, view: SpanView) -> Found[JsonValue] | None:
        return self._payload(view, LLM_REQUEST)

    def _response(self, view: SpanView) -> Found[JsonValue] | None:
        return self._payload(view, LLM_RESPONSE)

    def llm_input(self, view: SpanView) -> Found[list[Message]] | None:
        """``llm_request.contents``."""
        req = self._request(view)
        if req is None or not isinstance(req.value, dict):
            return None
        contents = req.value.get("contents")
        if not isinstance(contents, list):
            return None
        msgs = [m for m in map(message_from_obj, contents) if m is not None]
        return Found(msgs, f"{LLM_REQUEST}.contents", req.truncated)

    def llm_output(self, view: SpanView) -> Found[list[Message]] | None:
        """``llm_response.content``."""
        resp = self._response(view)
        if resp is None or not isinstance(resp.value, dict):
            return None
        content = resp.value.get("content")
        msg = message_from_obj(content, default_role="model")
        if msg is None:
            return None
        return Found([msg], f"{LLM_RESPONSE}.content", resp.truncated)

    def grounding(self, view: SpanView) -> Found[JsonValue] | None:
        """``llm_response.grounding_metadata`` (schema 1: Gemini's Google Search grounding)."""
        resp = self._response(view)
        if resp is None or not isinstance(resp.value, dict):
            return None
        meta = resp.value.get("grounding_metadata") or resp.value.get("groundingMetadata")
        if not isinstance(meta, dict) or not meta:
            return None
        return Found(meta, f"{LLM_RESPONSE}.grounding_metadata", resp.truncated)

    def _config(self, view: SpanView) -> tuple[dict[str, JsonValue], bool] | None:
        req = self._request(view)
        if req is None or not isinstance(req.value, dict):
            return None
        config = req.value.get("config")
        return (config, req.truncated) if isinstance(config, dict) else None

    def system_instructions(self, view: SpanView) -> Found[str] | None:
        """``llm_request.config.system_instruction``."""
        config = self._config(view)
        if config is None:
            return None
        text = system_text(config[0].get("system_instruction"))
        return Found(text, f"{LLM_REQUEST}.config", config[1]) if text else None

    def tool_definitions(self, view: SpanView) -> Found[JsonValue] | None:
        """``llm_request.config.tools``."""
        config = self._config(view)
        if config is None:
            return None
        tools = config[0].get("tools")
        return Found(tools, f"{LLM_REQUEST}.config.tools", config[1]) if tools else None

    def usage(self, view: SpanView) -> Usage | None:
        """``llm_response.usage_metadata``."""
        resp = self._response(view)
        if resp is None or not isinstance(resp.value, dict):
            return None
        meta = resp.value.get("usage_metadata") or resp.value.get("usageMetadata")
        if not isinstance(meta, dict):
            return None
        inp = meta.get("prompt_token_count", meta.get("promptTokenCount"))
        out = meta.get("candidates_token_count", meta.get("candidatesTokenCount"))
        return Usage(
            input_tokens=inp if isinstance(inp, int) else None,
            output_tokens=out if isinstance(out, int) else None,
        )

    def replied_without_model(self, view: SpanView) -> bool:
        """A whole ``llm_response`` with neither ``usage_metadata`` nor ``model_version``."""
        return is_callback_reply(self._response(view))

    def tool_io(self, view: SpanView) -> ToolIO | None:
        """``gcp.vertex.agent.tool_call_args`` / ``tool_response``."""
        attrs = view.span.attributes
        if TOOL_ARGS not in attrs and TOOL_RESPONSE not in attrs:
            return None
        name = attrs.get("gen_ai.tool.name")
        call_id = attrs.get("gen_ai.tool.call.id")
        result = parse_content(view, attrs.get(TOOL_RESPONSE), TOOL_RESPONSE)
        if result is not None and result.value == _NO_RESULT:
            result = None  # ADK's placeholder when the call got no response
        return ToolIO(
            name=name if isinstance(name, str) else None,
            call_id=call_id if isinstance(call_id, str) and call_id else None,
            args=parse_content(view, attrs.get(TOOL_ARGS), TOOL_ARGS),
            result=result,
        )

    def capture_hint(self, span: SpanRecord) -> str | None:
        """Schema 1 or schema 2 switch, told apart by the legacy attributes."""
        if not is_adk(span):
            return None
        attrs = span.attributes
        if LLM_REQUEST in attrs or TOOL_ARGS in attrs:
            return HINT_V1
        # Schema 1 also has content-less ``generate_content`` spans, but always under a
        # ``call_llm`` that the trace walk meets first, so this only decides schema 2.
        if attrs.get("gen_ai.operation.name") == "generate_content":
            return HINT_V2
        return None


def awaits_long_running_result(span: SpanRecord) -> bool:
    """Whether ``span`` is ADK's call of a long-running tool that gave no result yet.

    The run ends there and waits: the user's function response resumes it (a trace of
    its own). Told by the tool's type and the call id ADK writes when it has no
    response, in every schema and content mode (checked with google-adk 2.13).
    """
    attrs = span.attributes
    return (
        attrs.get("gen_ai.tool.type") == _LONG_RUNNING
        and attrs.get("gen_ai.tool.call.id") == _NO_RESPONSE
    )
