"""OTel GenAI semantic conventions, attribute form (semconv ≥ 1.37; ADK schema v2).

Content lives in ``gen_ai.input.messages`` / ``gen_ai.output.messages`` /
``gen_ai.system_instructions`` / ``gen_ai.tool.definitions`` (JSON strings or structured
AnyValues), tool I/O in ``gen_ai.tool.call.arguments`` / ``gen_ai.tool.call.result``.
Events carrying the same content are read by :mod:`tracescore.conventions.genai_events`.
"""

from __future__ import annotations

from typing import Final

import orjson

from tracescore.conventions.base import (
    ConventionReader,
    Found,
    SpanView,
    StepKind,
    ToolIO,
    Usage,
    digits,
    parse_content,
)
from tracescore.conventions.messages import (
    JsonValue,
    Message,
    decoded_json,
    is_not_captured,
    messages_from_value,
    simplify_blocks,
)
from tracescore.conventions.replies import one_reply
from tracescore.spans import AttrValue, SpanRecord

__all__ = ["GenAIAttributes", "int_attr", "messages_attr", "system_text"]

OPERATION_KINDS: Final[dict[str, StepKind]] = {
    "chat": "llm",
    "generate_content": "llm",
    "text_completion": "llm",
    "completion": "llm",
    "invoke_agent": "agent",
    "create_agent": "other",
    "execute_tool": "tool",
    "retrieval": "retrieval",
    "invoke_workflow": "workflow",
    # Strands' multi-agent patterns: one user task, several agents, one answer.
    "invoke_swarm": "workflow",
    "invoke_graph": "workflow",
}

#: Where semconv >= 1.37 puts a call's output messages (a tool span's, for Strands).
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
#: Agent Framework's mark on a content that asks the user (an approval request).
_USER_INPUT_REQUEST: Final = "user_input_request"
#: What a ``retrieval`` span found (opt-in, as message content is).
RETRIEVAL_DOCUMENTS: Final = "gen_ai.retrieval.documents"

#: Microsoft Agent Framework's instrumentation scope. It writes semconv >= 1.37 attributes,
#: but a workflow's run (``SequentialBuilder``, ``WorkflowBuilder``...) is a ``workflow.run``
#: span with no ``gen_ai.operation.name``: its agents' ``invoke_agent`` spans under it are
#: one run of the user's task, as ADK's workflow agents are.
MAF_SCOPE: Final = "agent_framework"
_MAF_WORKFLOW_RUN: Final = "workflow.run"
#: Agent Framework writes no content unless sensitive data is enabled (checked with
#: agent-framework-core 1.23: no ``gen_ai.*.messages``, no tool arguments or results).
MAF_CAPTURE_HINT: Final = (
    "Microsoft Agent Framework records no content by default: set ENABLE_SENSITIVE_DATA=true "
    "in the agent's environment, or call agent_framework.observability."
    "enable_instrumentation(enable_sensitive_data=True)"
)

# The latest-experimental mode takes a mode name, not "true" (a "true" there is
# rejected and nothing is captured: checked with opentelemetry-instrumentation-openai-v2).
CAPTURE_HINT: Final = (
    "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true in the agent's environment "
    "(with OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental use span_only, "
    "event_only or span_and_event instead of true)"
)


def _maf_workflow_run(span: SpanRecord) -> bool:
    return span.scope == MAF_SCOPE and span.name == _MAF_WORKFLOW_RUN


def _responses_api(span: SpanRecord) -> bool:
    """True for a call answered by OpenAI's Responses API (its response ids: ``resp_…``)."""
    response_id = span.attributes.get("gen_ai.response.id")
    return isinstance(response_id, str) and response_id.startswith("resp_")


def int_attr(span: SpanRecord, *keys: str) -> int | None:
    """The first of ``keys`` holding an integer (ints written as strings accepted)."""
    for key in keys:
        value = span.attributes.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            number = digits(value)
            if number is not None:
                return number
    return None


def _result_message(view: SpanView, call_id: str | None) -> Found[JsonValue] | None:
    """A tool span's result as a ``tool_call_response`` in its ``gen_ai.output.messages``.

    Strands, writing its events as attributes (``gen_ai_span_attributes_only``), sets
    ``gen_ai.tool.call.result`` only for a tool that succeeded; a failed one's result
    (the error text the model is given) is only there. The part of this call's id wins.
    """
    found = messages_attr(view, view.span.attributes.get(OUTPUT_MESSAGES), OUTPUT_MESSAGES)
    if found is None:
        return None
    parts = [part for msg in found.value for part in msg.tool_results()]
    part = next((p for p in parts if call_id is not None and p.id == call_id), None)
    if part is None and len(parts) == 1:
        part = parts[0]
    return None if part is None else Found(part.response, OUTPUT_MESSAGES, found.truncated)


def messages_attr(
    view: SpanView, value: AttrValue, source: str, *, default_role: str = "user"
) -> Found[list[Message]] | None:
    """Parse a message-list attribute; None when absent, not captured or unreadable."""
    if is_not_captured(value):
        return None
    if isinstance(value, (str, bytes)):  # JSON text (bytes: from a ``bytesValue``)
        try:
            return Found(messages_from_value(value, default_role=default_role), source)
        except orjson.JSONDecodeError:
            found = parse_content(view, value, source)
            if found is None or isinstance(found.value, str):
                view.warn(f"{source} is not a JSON message list")
                return None
            msgs = messages_from_value(found.value, default_role=default_role)
            return Found(msgs, source, truncated=found.truncated)
    return Found(messages_from_value(value, default_role=default_role), source)


def system_text(value: JsonValue) -> str | None:
    """Text of a system-instruction value: a string, a parts list or a Content object."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, dict):
        value = value.get("parts")
    if isinstance(value, list):
        texts = []
        for part in value:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                text = part.get("content", part.get("text"))
                if isinstance(text, str):
                    texts.append(text)
        return "\n".join(texts) or None
    return None


class GenAIAttributes(ConventionReader):
    """Reader for ``gen_ai.*`` span attributes."""

    name = "genai"
    markers = frozenset({"gen_ai.operation.name"})
    scopes = frozenset({MAF_SCOPE})

    def step_kind(self, span: SpanRecord) -> StepKind | None:
        """Map ``gen_ai.operation.name`` to a step kind; Agent Framework's workflow runs."""
        op = span.attributes.get("gen_ai.operation.name")
        if isinstance(op, str):
            return OPERATION_KINDS.get(op, "other")
        if _maf_workflow_run(span):
            return "workflow"
        return None

    def agent_name(self, span: SpanRecord) -> str | None:
        """``gen_ai.agent.name``; an Agent Framework workflow's ``workflow.name``."""
        value = span.attributes.get("gen_ai.agent.name")
        if value is None and _maf_workflow_run(span):
            value = span.attributes.get("workflow.name")
        return value if isinstance(value, str) and value else None

    def llm_input(self, view: SpanView) -> Found[list[Message]] | None:
        """``gen_ai.input.messages``."""
        key = "gen_ai.input.messages"
        return messages_attr(view, view.span.attributes.get(key), key)

    def history(self, view: SpanView) -> Found[list[Message]] | None:
        """An Agent Framework agent span's ``gen_ai.output.messages``: its run's messages.

        They hold the results of calls the framework answered itself, which no tool span
        or later request shows (a handoff's ``{"handoff_to": ...}``). Other emitters' agent
        spans hold the final answer at most, so only Agent Framework's are asked.
        """
        span = view.span
        if span.scope != MAF_SCOPE or span.attributes.get("gen_ai.operation.name") != (
            "invoke_agent"
        ):
            return None
        return messages_attr(view, span.attributes.get(OUTPUT_MESSAGES), OUTPUT_MESSAGES)

    def paused_for(self, view: SpanView) -> str | None:
        """An Agent Framework run that asks the user (a tool with ``approval_mode``).

        Its agent span's output messages hold the request (``function_approval_request``,
        marked ``user_input_request``); the run that gets the answer is the turn. The
        1.36 baseline writes no agent-span content: such a run reads as ended on its call.
        """
        span = view.span
        if span.scope != MAF_SCOPE or span.attributes.get("gen_ai.operation.name") != (
            "invoke_agent"
        ):
            return None
        value: object = span.attributes.get(OUTPUT_MESSAGES)
        if isinstance(value, str):
            if _USER_INPUT_REQUEST not in value:  # nearly every run: no parse
                return None
            value = decoded_json(value)
        kinds: list[str] = []
        names: list[str] = []
        for message in value if isinstance(value, list) else ():
            parts = message.get("parts") if isinstance(message, dict) else None
            for part in parts if isinstance(parts, list) else ():
                if not isinstance(part, dict) or part.get(_USER_INPUT_REQUEST) is not True:
                    continue
                kinds.append(str(part.get("type") or "user input request"))
                call = part.get("function_call")
                name = call.get("name") if isinstance(call, dict) else None
                if isinstance(name, str):
                    names.append(name)
        if not kinds:
            return None
        kind = ", ".join(dict.fromkeys(kinds))
        return (
            f"Agent Framework {kind} for {', '.join(names)}" if names else f"Agent Framework {kind}"
        )

    def llm_output(self, view: SpanView) -> Found[list[Message]] | None:
        """``gen_ai.output.messages``: each message a choice, but for the Responses API.

        A call whose ``gen_ai.response.id`` is a Responses API id (``resp_…``) has no
        choices: its several messages are its output items (OpenLLMetry's OpenAI Agents
        instrumentation), merged into one reply.
        """
        key = OUTPUT_MESSAGES
        value = view.span.attributes.get(key)
        found = messages_attr(view, value, key, default_role="assistant")
        if found is not None and len(found.value) > 1 and _responses_api(view.span):
            return Found(one_reply(found.value), found.source, found.truncated)
        return found

    def system_instructions(self, view: SpanView) -> Found[str] | None:
        """``gen_ai.system_instructions`` (a parts list, or plain text)."""
        key = "gen_ai.system_instructions"
        found = parse_content(view, view.span.attributes.get(key), key)
        if found is None:
            return None
        text = system_text(found.value)
        return Found(text, key, found.truncated) if text else None

    def tool_definitions(self, view: SpanView) -> Found[JsonValue] | None:
        """``gen_ai.tool.definitions``."""
        key = "gen_ai.tool.definitions"
        return parse_content(view, view.span.attributes.get(key), key)

    def usage(self, view: SpanView) -> Usage | None:
        """``gen_ai.usage.input_tokens|output_tokens`` (old ``prompt|completion_tokens``)."""
        span = view.span
        inp = int_attr(span, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
        out = int_attr(span, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
        if inp is None and out is None:
            return None
        return Usage(input_tokens=inp, output_tokens=out)

    def tool_io(self, view: SpanView) -> ToolIO | None:
        """``gen_ai.tool.name``, ``gen_ai.tool.call.id|arguments|result``."""
        attrs = view.span.attributes
        name = attrs.get("gen_ai.tool.name")
        if not isinstance(name, str):
            return None
        call_id = attrs.get("gen_ai.tool.call.id")
        args_key, result_key = "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"
        call_id = str(call_id) if call_id not in (None, "") else None
        result = parse_content(view, attrs.get(result_key), result_key)
        if result is None and OUTPUT_MESSAGES in attrs:
            result = _result_message(view, call_id)
        if result is not None:
            # Strands writes its content blocks here (``[{"text": ...}]``): read as the
            # same result from its events is (one text or JSON block is its value).
            result = Found(simplify_blocks(result.value), result.source, result.truncated)
        return ToolIO(
            name=name,
            call_id=call_id,
            args=parse_content(view, attrs.get(args_key), args_key),
            result=result,
        )

    def retrieved(self, view: SpanView) -> Found[list[str]] | None:
        """A ``retrieval`` span's ``gen_ai.retrieval.documents``: each one's ``content``.

        The attribute is opt-in, and a document need only have its ``id`` and ``score``:
        documents without text are left out.
        """
        attrs = view.span.attributes
        if attrs.get("gen_ai.operation.name") != "retrieval":
            return None
        found = parse_content(view, attrs.get(RETRIEVAL_DOCUMENTS), RETRIEVAL_DOCUMENTS)
        if found is None or not isinstance(found.value, list):
            return None
        texts = [
            content
            for doc in found.value
            if isinstance(doc, dict)
            and isinstance(content := doc.get("content"), str)
            and content.strip()
        ]
        return Found(texts, found.source, found.truncated) if texts else None

    def capture_hint(self, span: SpanRecord) -> str | None:
        """Agent Framework's switch for its spans, else the generic GenAI semconv one."""
        if span.scope == MAF_SCOPE:
            return MAF_CAPTURE_HINT
        if "gen_ai.operation.name" in span.attributes:
            return CAPTURE_HINT
        return None
