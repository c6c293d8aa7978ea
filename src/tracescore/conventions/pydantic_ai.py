"""pydantic-ai's own instrumentation attributes (scope ``pydantic-ai``).

pydantic-ai's model and tool spans follow the GenAI conventions from instrumentation
version 2 on (``gen_ai.input.messages`` ... are read by
:class:`~tracescore.conventions.genai.GenAIAttributes`). What is pydantic-ai's own:

* the agent run span carries the whole run: ``pydantic_ai.all_messages`` (GenAI message
  JSON, versions ≥ 2) or ``all_messages_events`` (version 1: a JSON list of GenAI 1.28–1.36
  event dicts), ``final_result``, ``agent_name``; read by :meth:`PydanticAI.history`.
* version 2 tool spans (``running tool``) keep arguments and result in
  ``tool_arguments`` / ``tool_response`` (version ≥ 3 uses ``gen_ai.tool.call.*``).
* version 1 model spans keep the request and reply in ``events`` (event dicts as above).
* model spans describe the request in ``model_request_parameters`` (every version): its
  ``output_tools`` name the tools whose call is the run's output (``final_result``), which
  pydantic-ai answers itself, in no tool span (:func:`output_tools`).

Event dicts are the body merged with the event's attributes; older releases add
``event.name``, newer ones leave it out, so the event is told apart by its keys
(``message`` + ``index`` = ``gen_ai.choice``) and ``role``.

Spans are recognised by attributes, never by span name (REFERENCE §5).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

import orjson

from tracescore.conventions.base import (
    ConventionReader,
    Found,
    SpanView,
    StepKind,
    ToolIO,
    parse_content,
)
from tracescore.conventions.genai import messages_attr
from tracescore.conventions.genai_events import (
    CHOICE_EVENT,
    MESSAGE_EVENT_ROLES,
    legacy_message,
    legacy_messages,
)
from tracescore.conventions.messages import Message, decoded_json, is_not_captured
from tracescore.spans import SpanRecord

__all__ = ["CAPTURE_HINT", "PydanticAI", "output_retried", "output_tools"]

SCOPE: Final = "pydantic-ai"
ALL_MESSAGES: Final = "pydantic_ai.all_messages"
ALL_EVENTS: Final = "all_messages_events"
EVENTS: Final = "events"
TOOL_ARGS: Final = "tool_arguments"
TOOL_RESPONSE: Final = "tool_response"
FINAL_RESULT: Final = "final_result"
REQUEST_PARAMETERS: Final = "model_request_parameters"
#: What pydantic-ai answers an output tool's call with when it took its output, or
#: skipped it (another output was taken, or had to be): successes in its record. Anything
#: else is the retry it asked for (arguments that do not validate, an output validator's
#: ``ModelRetry``), a failed call.
_OUTPUT_STATUS: Final = ("Final result processed.", "Output tool not used - ")
_RUN_MARKERS: Final = (ALL_MESSAGES, ALL_EVENTS, FINAL_RESULT, "model_name")
_ROLE_EVENTS: Final = {role: name for name, role in MESSAGE_EVENT_ROLES.items()}

CAPTURE_HINT: Final = (
    "pydantic-ai content capture is off: instrument with "
    "InstrumentationSettings(include_content=True) (in Agent.instrument_all(...) or "
    "capabilities=[Instrumentation(settings=...)])"
)


def _event_name(item: Mapping[str, object]) -> str | None:
    name = item.get("event.name")
    if isinstance(name, str):
        return name
    if "message" in item and "index" in item:
        return CHOICE_EVENT
    role = item.get("role")
    return _ROLE_EVENTS.get(role) if isinstance(role, str) else None


def _is_pydantic(span: SpanRecord) -> bool:
    return span.scope == SCOPE or REQUEST_PARAMETERS in span.attributes


class PydanticAI(ConventionReader):
    """Reader for pydantic-ai's agent-run, tool and version-1 model-span attributes."""

    name = "pydantic_ai"
    markers = frozenset({"agent_name", TOOL_ARGS, TOOL_RESPONSE})

    def step_kind(self, span: SpanRecord) -> StepKind | None:
        """Agent run: ``agent_name`` plus a run attribute; tool: ``tool_arguments``."""
        attrs = span.attributes
        if "agent_name" in attrs and any(key in attrs for key in _RUN_MARKERS):
            return "agent"
        if TOOL_ARGS in attrs or TOOL_RESPONSE in attrs:
            return "tool"
        return None

    def agent_name(self, span: SpanRecord) -> str | None:
        """``agent_name`` (``gen_ai.agent.name`` is read by the GenAI reader)."""
        name = span.attributes.get("agent_name")
        return name if isinstance(name, str) and name else None

    def _events(self, view: SpanView, key: str) -> list[tuple[str, Mapping[str, object]]] | None:
        """The event dicts of a version-1 ``events`` / ``all_messages_events`` attribute."""
        raw = view.span.attributes.get(key)
        if raw is None:
            return None

        def parse() -> list[tuple[str, Mapping[str, object]]] | None:
            found = parse_content(view, raw, key)
            if found is None or not isinstance(found.value, list):
                return None
            return [
                (name, item)
                for item in found.value
                if isinstance(item, dict) and (name := _event_name(item)) is not None
            ]

        return view.cached(f"pydantic_ai:{key}", parse)

    def llm_input(self, view: SpanView) -> Found[list[Message]] | None:
        """Version 1 model spans: the message events in ``events``."""
        if not _is_pydantic(view.span):
            return None
        events = self._events(view, EVENTS)
        if not events:
            return None
        inputs, _ = legacy_messages(events)
        return Found(inputs, EVENTS) if inputs else None

    def llm_output(self, view: SpanView) -> Found[list[Message]] | None:
        """Version 1 model spans: the ``gen_ai.choice`` event in ``events``."""
        if not _is_pydantic(view.span):
            return None
        events = self._events(view, EVENTS)
        if not events:
            return None
        _, choices = legacy_messages(events)
        return Found(choices, EVENTS) if choices else None

    def system_instructions(self, view: SpanView) -> Found[str] | None:
        """Version 1 model spans: the ``gen_ai.system.message`` events in ``events``."""
        found = self.llm_input(view)
        if found is None:
            return None
        texts = [t for m in found.value if m.role == "system" and (t := m.text())]
        return Found("\n".join(texts), EVENTS) if texts else None

    def history(self, view: SpanView) -> Found[list[Message]] | None:
        """The run's messages: ``pydantic_ai.all_messages``, else ``all_messages_events``."""
        attrs = view.span.attributes
        if ALL_MESSAGES in attrs:
            found = messages_attr(view, attrs[ALL_MESSAGES], ALL_MESSAGES)
            if found is not None and found.value:
                return found
        events = self._events(view, ALL_EVENTS)
        if not events:
            return None
        msgs: list[Message] = []
        for name, payload in events:
            # In a history the model's replies are assistant-message events.
            msg = legacy_message(name, payload)
            if msg is not None:
                msgs.append(msg)
        return Found(msgs, ALL_EVENTS) if msgs else None

    def final_output(self, view: SpanView) -> Found[str] | None:
        """``final_result`` on the run span: the only text form of a structured output.

        With ``output_type=SomeModel`` the model answers by calling the ``final_result``
        output tool, so no reply has text; the run span states the result.
        """
        value = view.span.attributes.get(FINAL_RESULT)
        if is_not_captured(value) or _waiting(view) is not None:
            return None
        if isinstance(value, str):
            return Found(value, FINAL_RESULT)
        try:
            text = orjson.dumps(value, default=str).decode()
        except orjson.JSONEncodeError:  # an int past 64 bits, nesting past 255 levels
            view.warn(f"{FINAL_RESULT} cannot be written as JSON; ignored")
            return None
        return Found(text, FINAL_RESULT)

    def paused_for(self, view: SpanView) -> str | None:
        """``final_result`` is ``DeferredToolRequests``: the tools it waits on, named."""
        waiting = _waiting(view)
        if waiting is None:
            return None
        return f"DeferredToolRequests for {', '.join(waiting) or 'its tools'}"

    def tool_io(self, view: SpanView) -> ToolIO | None:
        """Version 2 tool spans: ``tool_arguments`` / ``tool_response``."""
        attrs = view.span.attributes
        if TOOL_ARGS not in attrs and TOOL_RESPONSE not in attrs:
            return None
        name = attrs.get("gen_ai.tool.name")
        call_id = attrs.get("gen_ai.tool.call.id")
        return ToolIO(
            name=name if isinstance(name, str) and name else None,
            call_id=str(call_id) if call_id not in (None, "") else None,
            args=parse_content(view, attrs.get(TOOL_ARGS), TOOL_ARGS),
            result=parse_content(view, attrs.get(TOOL_RESPONSE), TOOL_RESPONSE),
        )

    def capture_hint(self, span: SpanRecord) -> str | None:
        """``include_content=True``, for spans pydantic-ai emitted."""
        return CAPTURE_HINT if _is_pydantic(span) or "agent_name" in span.attributes else None


#: The fields of ``DeferredToolRequests`` (pydantic-ai 2) as ``final_result`` writes it.
_DEFERRED_FIELDS: Final = frozenset({"calls", "approvals", "metadata", "_kinds"})


def _waiting(view: SpanView) -> list[str] | None:
    """:func:`_deferred` of the span's ``final_result``, parsed once per view."""
    value = view.span.attributes.get(FINAL_RESULT)
    return view.cached("pydantic_ai.deferred", lambda: _deferred(value))


def _deferred(value: object) -> list[str] | None:
    """The tools a ``DeferredToolRequests`` result waits on, or None for any other result.

    The calls to run elsewhere come first, then those to approve.
    """
    data = decoded_json(value)
    if not isinstance(data, dict) or not {"calls", "approvals"} <= data.keys():
        return None
    if data.keys() - _DEFERRED_FIELDS:
        return None
    calls, approvals = data["calls"], data["approvals"]
    if not isinstance(calls, list) or not isinstance(approvals, list):
        return None
    names = [c.get("tool_name") for c in [*calls, *approvals] if isinstance(c, dict)]
    return [n for n in names if isinstance(n, str)]


def output_tools(spans: Iterable[SpanRecord]) -> frozenset[str]:
    """The output tools of the first model span among ``spans`` that names any.

    An agent's output tools are the same in each of its model requests; their
    ``model_request_parameters`` (JSON, tool schemas included) is parsed for one span
    only, and only when its text mentions them.
    """
    for span in spans:
        raw = span.attributes.get(REQUEST_PARAMETERS)
        if not isinstance(raw, str) or '"output_tools"' not in raw:
            continue
        params = decoded_json(raw)
        tools = params.get("output_tools") if isinstance(params, dict) else None
        if not isinstance(tools, list) or not tools:
            continue
        names = (tool.get("name") if isinstance(tool, dict) else None for tool in tools)
        return frozenset(name for name in names if isinstance(name, str))
    return frozenset()


def output_retried(result: object) -> bool:
    """Whether pydantic-ai's answer to an output tool's call was a retry (see _OUTPUT_STATUS)."""
    return not (isinstance(result, str) and result.startswith(_OUTPUT_STATUS))
