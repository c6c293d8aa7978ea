"""OTel GenAI content carried by *events*: span events or correlated log records.

Three generations of the GenAI semantic conventions put message content in events
(REFERENCE §5.2):

* ≥ 1.37 — one ``gen_ai.client.inference.operation.details`` event per model call with
  ``gen_ai.input.messages`` / ``gen_ai.output.messages`` / ``gen_ai.system_instructions``
  / ``gen_ai.tool.definitions``, read by :class:`GenAIEvents`. Google ADK (schema 2,
  ``EVENT_ONLY`` / ``SPAN_AND_EVENT``) emits it as a log record whose *attributes* hold the
  structured values; Strands (``gen_ai_latest_experimental``) as span events whose
  attributes hold JSON strings, several per span (input at start, output at end).
* 1.28–1.36 — one event per message: ``gen_ai.{system,user,assistant,tool}.message`` and
  ``gen_ai.choice``; and ≤ 1.27 — ``gen_ai.content.prompt`` / ``gen_ai.content.completion``
  with JSON in ``gen_ai.prompt`` / ``gen_ai.completion``. Both read by
  :class:`GenAILegacyEvents`.

Payloads come from span-event attributes, or from a log record's body (a map) merged
over its attributes. When a span has matching span events, its log records are ignored
(an emitter writing both writes the same content twice).

Message content shapes seen in the wild and accepted here: plain text, OpenAI chat
(``content`` + ``tool_calls[{id, function{name, arguments}}]``), a Gemini ``Content``
object under ``content`` (ADK schema 1 logs, which also put ``gen_ai.choice``'s reply
under ``content`` instead of the spec's ``message``), and Bedrock Converse content
blocks as a JSON string (Strands: ``[{"text"}, {"toolUse"}, {"toolResult"}]``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, cast

from tracescore.conventions.base import (
    ConventionReader,
    Found,
    SpanView,
    ToolIO,
    Usage,
    digits,
    parse_content,
)
from tracescore.conventions.genai import messages_attr, system_text
from tracescore.conventions.messages import (
    JsonValue,
    Message,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    decoded_json,
    is_not_captured,
    message_from_obj,
    messages_from_value,
    openai_tool_calls,
    parse_arguments,
    simplify_blocks,
)
from tracescore.spans import AttrValue, LogRecord, SpanRecord
from tracescore.unicode_case import lower

__all__ = [
    "CHOICE_EVENT",
    "DETAILS_EVENT",
    "LEGACY_HINT",
    "MESSAGE_EVENT_ROLES",
    "GenAIEvents",
    "GenAILegacyEvents",
    "event_payloads",
    "legacy_message",
    "simplify_blocks",
]

DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"
CHOICE_EVENT: Final = "gen_ai.choice"
PROMPT_EVENT: Final = "gen_ai.content.prompt"
COMPLETION_EVENT: Final = "gen_ai.content.completion"
#: 1.28–1.36 per-message events and the role each one implies.
MESSAGE_EVENT_ROLES: Final[dict[str, str]] = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_DETAILS_NAMES: Final = frozenset({DETAILS_EVENT})
_LEGACY_NAMES: Final = frozenset(
    {*MESSAGE_EVENT_ROLES, CHOICE_EVENT, PROMPT_EVENT, COMPLETION_EVENT}
)

LEGACY_HINT: Final = (
    "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true in the agent's environment "
    "(GenAI semconv ≤ 1.36 events carry no content without it)"
)

#: (origin, event name, payload); origin is ``"event"`` (span event) or ``"log"``.
Payload = tuple[str, str, Mapping[str, AttrValue]]


def _log_payload(log: LogRecord) -> Mapping[str, AttrValue]:
    body = log.body
    if isinstance(body, dict):
        return {**log.attributes, **body} if log.attributes else body
    if body is None:
        return log.attributes
    return {**log.attributes, "content": body}


def event_payloads(view: SpanView, names: frozenset[str]) -> list[Payload]:
    """The payloads of ``view``'s events named in ``names``, in emission order (cached).

    Span events win over correlated log records; log records are ordered by timestamp
    when every one has one (ADK schema 1 logs have none: their export order is kept).
    """
    key = "genai_events:" + ",".join(sorted(names))
    cached = view.cache.get(key)
    if cached is not None:
        return cast(list[Payload], cached)
    span = view.span
    out: list[Payload] = [("event", e.name, e.attributes) for e in span.events if e.name in names]
    if not out and view.logs:
        logs = [log for log in view.logs if log.name in names]
        if all(log.time_ns for log in logs):
            logs.sort(key=lambda log: log.time_ns)
        out = [("log", cast(str, log.name), _log_payload(log)) for log in logs]
    view.cache[key] = out
    return out


def _has_events(view: SpanView) -> bool:
    return bool(view.span.events or view.logs)


def _opt_str(value: object) -> str | None:
    return None if value is None or value == "" else str(value)


def _block_part(block: object) -> Part | None:
    """One content block: Bedrock ``toolUse``/``toolResult``, else any part shape."""
    if isinstance(block, str):
        return TextPart(text=block)
    if not isinstance(block, Mapping):
        return None
    use = block.get("toolUse")
    if isinstance(use, Mapping):
        return ToolCallPart(
            name=str(use.get("name") or ""),
            args=parse_arguments(use.get("input")),
            id=_opt_str(use.get("toolUseId")),
        )
    res = block.get("toolResult")
    if isinstance(res, Mapping):
        return ToolResultPart(
            name=None,
            response=simplify_blocks(res.get("content")),
            id=_opt_str(res.get("toolUseId")),
        )
    msg = message_from_obj({"role": "user", "parts": [block]})
    return msg.parts[0] if msg is not None and msg.parts else None


def legacy_message(event: str, payload: Mapping[str, object]) -> Message | None:
    """A :class:`Message` from one 1.28–1.36 message/choice event payload.

    Returns None when the event carries no content (capture off, ``"<elided>"``).
    The role comes from the payload, else from a Gemini ``Content``'s role, else from the
    event name; ``gen_ai.choice`` is always the model's reply.
    """
    if event == CHOICE_EVENT:
        body = payload.get("message")
        if body is None:
            body = payload.get("content")
        if not (isinstance(body, Mapping) and "parts" not in body):
            body = {} if body is None else {"content": body}
        calls = payload.get("tool_calls")
        if calls is not None and "tool_calls" not in body:
            # OpenLLMetry writes the choice's tool calls beside "message", not inside it.
            body = {**body, "tool_calls": calls}
        return _chat_event("assistant", body)
    default = MESSAGE_EVENT_ROLES.get(event)
    if default is None:
        role = payload.get("role")
        default = role if isinstance(role, str) and role else "user"
    return _chat_event(default, payload)


def _chat_event(default_role: str, payload: Mapping[str, object]) -> Message | None:
    role_value = payload.get("role")
    role = lower(role_value) if isinstance(role_value, str) and role_value else None
    raw = payload.get("content")
    content = None if is_not_captured(raw) else decoded_json(raw)
    parts: list[Part] = []
    if isinstance(content, Mapping) and isinstance(content.get("parts"), list):
        msg = message_from_obj(content, default_role=role or default_role)
        if msg is not None:
            role = role or (msg.role if content.get("role") else None)
            parts.extend(msg.parts)
    elif isinstance(content, list):
        parts.extend(p for p in map(_block_part, content) if p is not None)
    elif isinstance(content, Mapping):
        part = _block_part(content)
        if part is not None:
            parts.append(part)
    elif content is not None:
        parts.append(TextPart(text=str(content)))
    role = role or default_role
    if role == "tool" and not any(isinstance(p, ToolResultPart) for p in parts):
        # OpenAI-style tool message: the content *is* the result.
        parts = []
        if content is not None:
            parts.append(
                ToolResultPart(
                    name=_opt_str(payload.get("name")),
                    response=simplify_blocks(content),
                    id=_opt_str(payload.get("id") or payload.get("tool_call_id")),
                )
            )
    parts.extend(openai_tool_calls(payload.get("tool_calls")))
    if not parts:
        return None
    return Message(role=role, parts=tuple(parts), name=_opt_str(payload.get("name")))


def legacy_messages(
    events: Iterable[tuple[str, Mapping[str, object]]],
) -> tuple[list[Message], list[Message]]:
    """Split (event name, payload) pairs into input messages and index-0 choice messages."""
    inputs: list[Message] = []
    choices: list[Message] = []
    for name, payload in events:
        if name == CHOICE_EVENT:
            index = payload.get("index")
            if index not in (None, 0, "0"):
                continue
            msg = legacy_message(name, payload)
            if msg is not None:
                choices.append(msg)
        elif name in MESSAGE_EVENT_ROLES:
            msg = legacy_message(name, payload)
            if msg is not None:
                inputs.append(msg)
    return inputs, choices


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return digits(value)
    return None


class GenAIEvents(ConventionReader):
    """Reader for the semconv ≥ 1.37 ``gen_ai.client.inference.operation.details`` event."""

    name = "genai_events"

    def _first(
        self, view: SpanView, key: str, *, last: bool = False
    ) -> tuple[AttrValue, str] | None:
        if not _has_events(view):
            return None
        payloads = event_payloads(view, _DETAILS_NAMES)
        for origin, event, payload in reversed(payloads) if last else payloads:
            value = payload.get(key)
            if not is_not_captured(value):
                return value, f"{origin}:{event}/{key}"
        return None

    def llm_input(self, view: SpanView) -> Found[list[Message]] | None:
        """``gen_ai.input.messages`` of the last details event that has it.

        The last, as for the output: a span holding several model calls' events (ADK
        schema 2 under OpenInference's instrumentor writes every call of an agent onto
        its agent span) is read as its last call, whose input holds the whole history.
        """
        hit = self._first(view, "gen_ai.input.messages", last=True)
        return None if hit is None else messages_attr(view, hit[0], hit[1])

    def llm_output(self, view: SpanView) -> Found[list[Message]] | None:
        """``gen_ai.output.messages`` of the last details event that has it."""
        hit = self._first(view, "gen_ai.output.messages", last=True)
        if hit is None:
            return None
        return messages_attr(view, hit[0], hit[1], default_role="assistant")

    def system_instructions(self, view: SpanView) -> Found[str] | None:
        """``gen_ai.system_instructions`` of a details event."""
        hit = self._first(view, "gen_ai.system_instructions")
        if hit is None:
            return None
        found = parse_content(view, hit[0], hit[1])
        text = system_text(found.value) if found is not None else None
        return Found(text, hit[1], found.truncated) if text and found else None

    def tool_definitions(self, view: SpanView) -> Found[JsonValue] | None:
        """``gen_ai.tool.definitions`` of a details event."""
        hit = self._first(view, "gen_ai.tool.definitions")
        return None if hit is None else parse_content(view, hit[0], hit[1])

    def usage(self, view: SpanView) -> Usage | None:
        """``gen_ai.usage.input_tokens|output_tokens`` carried on a details event (ADK logs)."""
        inp = self._first(view, "gen_ai.usage.input_tokens")
        out = self._first(view, "gen_ai.usage.output_tokens")
        usage = Usage(
            input_tokens=_int(inp[0]) if inp else None,
            output_tokens=_int(out[0]) if out else None,
        )
        return None if usage.input_tokens is None and usage.output_tokens is None else usage

    def tool_io(self, view: SpanView) -> ToolIO | None:
        """A tool span's details events: a ``tool_call`` part in, a ``tool_call_response`` out.

        This is how Strands (``gen_ai_latest_experimental``) records tool executions.
        """
        inp = self.llm_input(view)
        out = self.llm_output(view)
        call = next((p for m in inp.value for p in m.tool_calls()), None) if inp else None
        res = next((p for m in out.value for p in m.tool_results()), None) if out else None
        if call is None and res is None:
            return None
        return ToolIO(
            name=call.name if call is not None and call.name else None,
            call_id=(call.id if call is not None else None) or (res.id if res else None),
            args=Found(call.args, inp.source) if call is not None and inp else None,
            result=Found(simplify_blocks(res.response), out.source) if res and out else None,
        )


class GenAILegacyEvents(ConventionReader):
    """Reader for semconv ≤ 1.36 content events (per-message events, prompt/completion)."""

    name = "genai_legacy_events"

    def _payloads(self, view: SpanView) -> list[Payload]:
        if not _has_events(view):
            return []
        return event_payloads(view, _LEGACY_NAMES)

    def llm_input(self, view: SpanView) -> Found[list[Message]] | None:
        """System/user/assistant/tool message events in order, or ``gen_ai.prompt``."""
        payloads = self._payloads(view)
        if not payloads:
            return None
        for origin, event, payload in payloads:
            if event == PROMPT_EVENT:
                return self._whole(view, payload.get("gen_ai.prompt"), origin, event, "user")
        inputs, _ = legacy_messages((e, p) for _, e, p in payloads)
        if not inputs:
            return None
        return Found(inputs, f"{payloads[0][0]}:gen_ai.*.message")

    def llm_output(self, view: SpanView) -> Found[list[Message]] | None:
        """The ``gen_ai.choice`` with index 0, or ``gen_ai.completion``."""
        payloads = self._payloads(view)
        if not payloads:
            return None
        for origin, event, payload in payloads:
            if event == COMPLETION_EVENT:
                value = payload.get("gen_ai.completion")
                return self._whole(view, value, origin, event, "assistant")
        _, choices = legacy_messages((e, p) for _, e, p in payloads)
        if not choices:
            return None
        return Found(choices, f"{payloads[0][0]}:{CHOICE_EVENT}")

    def _whole(
        self, view: SpanView, value: AttrValue, origin: str, event: str, role: str
    ) -> Found[list[Message]] | None:
        """≤ 1.27: a JSON list of chat messages (or of choices), or plain text."""
        source = f"{origin}:{event}/gen_ai.{'prompt' if role == 'user' else 'completion'}"
        found = parse_content(view, value, source)
        if found is None:
            return None
        data = found.value
        if isinstance(data, str):
            return Found([Message(role=role, parts=(TextPart(text=data),))], source)
        if isinstance(data, list):
            data = [
                item["message"] if isinstance(item, dict) and "message" in item else item
                for item in data
            ]
        msgs = messages_from_value(data, default_role=role)
        return Found(msgs, source, found.truncated) if msgs else None

    def system_instructions(self, view: SpanView) -> Found[str] | None:
        """Text of the ``gen_ai.system.message`` events."""
        texts: list[str] = []
        origin = ""
        for origin_, event, payload in self._payloads(view):
            if event == "gen_ai.system.message":
                msg = legacy_message(event, payload)
                text = msg.text() if msg is not None else None
                if text:
                    texts.append(text)
                    origin = origin_
        return Found("\n".join(texts), f"{origin}:gen_ai.system.message") if texts else None

    def tool_io(self, view: SpanView) -> ToolIO | None:
        """A tool span's ``gen_ai.tool.message`` (arguments) and ``gen_ai.choice`` (result).

        This is how Strands records tool executions without ``gen_ai_latest_experimental``.
        """
        args: Found[JsonValue] | None = None
        result: Found[JsonValue] | None = None
        call_id = None
        for origin, event, payload in self._payloads(view):
            if event == "gen_ai.tool.message" and args is None:
                source = f"{origin}:{event}/content"
                args = parse_content(view, payload.get("content"), source)
                call_id = call_id or _opt_str(payload.get("id"))
            elif event == CHOICE_EVENT and result is None:
                value = payload.get("message")
                if not is_not_captured(value):
                    result = Found(simplify_blocks(value), f"{origin}:{event}/message")
                call_id = call_id or _opt_str(payload.get("id"))
        if args is None and result is None:
            return None
        return ToolIO(call_id=call_id, args=args, result=result)

    def capture_hint(self, span: SpanRecord) -> str | None:
        """The GenAI content switch, for spans that carry legacy content events."""
        for event in span.events:
            if event.name in _LEGACY_NAMES:
                return LEGACY_HINT
        return None
