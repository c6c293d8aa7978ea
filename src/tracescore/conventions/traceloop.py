"""OpenLLMetry / Traceloop attributes (REFERENCE §5.4).

Decorator spans (``@workflow``, ``@agent``, ``@task``, ``@tool``) carry
``traceloop.span.kind``, ``traceloop.entity.name`` and the call's input/output as JSON in
``traceloop.entity.input`` (``{"args": [...], "kwargs": {...}}``) and
``traceloop.entity.output``. LLM spans (``openai.chat`` ...) of older releases carry
``llm.request.type`` and the messages as indexed keys::

    gen_ai.prompt.{i}.{role,content,tool_call_id}
    gen_ai.prompt.{i}.tool_calls.{j}.{id,name,arguments}
    gen_ai.completion.{i}.{role,content,finish_reason}
    gen_ai.completion.{i}.tool_calls.{j}.{id,name,arguments}
    gen_ai.completion.{i}.function_call.{name,arguments}

Newer OpenLLMetry releases (``opentelemetry-instrumentation-openai`` 0.62) write
``gen_ai.operation.name`` and ``gen_ai.input.messages`` / ``gen_ai.output.messages``
instead, with no ``llm.request.type``; those are read by
:class:`~tracescore.conventions.genai.GenAIAttributes`, and such a span is recognised as
OpenLLMetry's only by its instrumentation scope (for the content-capture hint).
Session ids (``traceloop.association.properties.*``) are read by the trajectory builder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, TypeVar, cast

import orjson

from tracescore import json_text
from tracescore.conventions import langgraph, llama_index
from tracescore.conventions.base import (
    ConventionReader,
    Found,
    ReadReply,
    SpanView,
    StepKind,
    ToolIO,
    digits,
    parse_content,
)
from tracescore.conventions.messages import (
    JsonValue,
    Message,
    message_from_obj,
    parse_arguments,
)
from tracescore.spans import AttrValue, SpanRecord

__all__ = ["CAPTURE_HINT", "Traceloop", "unwrap_entity_input", "unwrap_entity_output"]

T = TypeVar("T")

SPAN_KIND: Final = "traceloop.span.kind"
ENTITY_NAME: Final = "traceloop.entity.name"
ENTITY_INPUT: Final = "traceloop.entity.input"
ENTITY_OUTPUT: Final = "traceloop.entity.output"
REQUEST_TYPE: Final = "llm.request.type"
_TOOL_NAME: Final = "tool.name"
_TOOL_ARGUMENTS: Final = "tool.arguments"
#: The method part of a LlamaIndex span's name (``ReActOutputParser.task``), and of
#: its top span's (``FunctionAgent.workflow``).
_TASK: Final = "task"
_WORKFLOW: Final = "workflow"
_ENGINE: Final = frozenset({_WORKFLOW})
_PROMPT: Final = "gen_ai.prompt."
_COMPLETION: Final = "gen_ai.completion."

KINDS: Final[dict[str, StepKind]] = {
    "workflow": "workflow",
    "agent": "agent",
    "tool": "tool",
    "task": "chain",
}
REQUEST_KINDS: Final[dict[str, StepKind]] = {"chat": "llm", "completion": "llm"}

CAPTURE_HINT: Final = (
    "OpenLLMetry content capture is off: set TRACELOOP_TRACE_CONTENT=true "
    "(or Traceloop.init(trace_content=True)) in the agent's environment"
)
_MARKERS: Final = (SPAN_KIND, REQUEST_TYPE, ENTITY_NAME, "traceloop.workflow.name")
#: Scopes only OpenLLMetry's instrumentations use (the official one is ``…openai_v2``).
_SCOPES: Final = frozenset(
    {"opentelemetry.instrumentation.openai.v0", "opentelemetry.instrumentation.openai.v1"}
)


def _decode(value: object) -> object:
    """OpenLLMetry JSON-encodes entity values: decode fully (``'"text"'`` → ``text``)."""
    if isinstance(value, (str, bytes)):
        try:
            return json_text.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _decode_json(value: object) -> JsonValue:
    """``value`` decoded when it is JSON text holding an object, else None."""
    decoded = _decode(value) if isinstance(value, str) and value.startswith("{") else None
    return cast(JsonValue, decoded) if isinstance(decoded, dict) else None


def _llama_index_task(span: SpanRecord) -> StepKind:
    """A LlamaIndex task span's step (:mod:`tracescore.conventions.llama_index`).

    The ``call_tool`` step is the tool call (``tool.name``); a step whose output is an
    ``AgentInput`` or ``AgentSetup`` is a turn of the agent it names; a ReAct output
    parser's span is the agent's reading of the reply before it; a retriever's span is a
    retrieval.
    """
    attrs = span.attributes
    if isinstance(attrs.get(_TOOL_NAME), str):
        return "tool"
    if llama_index.is_reply_parser(span, _TASK):
        return "parse"
    if llama_index.is_retriever(span, _TASK):
        return "retrieval"
    return "turn" if _turn_agent(attrs) else "chain"


def _turn_agent(attrs: Mapping[str, AttrValue]) -> str | None:
    """The agent a LlamaIndex task span's ``AgentInput`` / ``AgentSetup`` output names.

    Decoded only when the text mentions the field: a model call's output (the whole
    conversation) is no turn's.
    """
    output = attrs.get(ENTITY_OUTPUT)
    if not isinstance(output, str) or '"current_agent_name"' not in output:
        return None
    return llama_index.names_agent(_decode_json(output))


def unwrap_entity_input(value: JsonValue) -> JsonValue:
    """The tool arguments in a decorator's ``{"args": [...], "kwargs": {...}}`` input.

    * no positional args → the kwargs dict (the usual case: tools called by keyword);
    * one positional dict and no kwargs → that dict (a tool taking one payload object);
    * otherwise the value unchanged: positional arguments cannot be named without the
      function's signature, and inventing names would hide the mismatch from a scorer.

    The LangChain instrumentation writes the tool callback's payload instead
    (``{"input_str", "inputs", "kwargs", "tags", "metadata"}``): its ``inputs``.
    """
    if not isinstance(value, dict):
        return value
    if _is_callback_input(value):
        return value["inputs"]
    if not set(value) <= {"args", "kwargs"}:
        return value
    args = value.get("args") or []
    kwargs = value.get("kwargs") or {}
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        return value
    if not args:
        return kwargs
    if len(args) == 1 and isinstance(args[0], dict) and not kwargs:
        return args[0]
    return value


def _is_callback_input(value: dict[str, JsonValue]) -> bool:
    """True for a LangChain ``on_tool_start`` payload (OpenLLMetry's LangChain instrumentation).

    In 0.62 ``input_str`` holds the arguments as Python text and ``inputs`` as a dict.
    """
    return "input_str" in value and isinstance(value.get("inputs"), dict)


def _callback_call_id(value: JsonValue) -> str | None:
    """The ``tool_call_id`` a LangChain tool callback payload carries, if any."""
    if isinstance(value, dict) and _is_callback_input(value):
        kwargs = value.get("kwargs")
        if isinstance(kwargs, dict):
            call_id = kwargs.get("tool_call_id")
            if isinstance(call_id, str) and call_id:
                return call_id
    return None


def unwrap_entity_output(value: JsonValue) -> JsonValue:
    """A tool's result out of a LangChain ``on_tool_end`` payload, else ``value``.

    OpenLLMetry's LangChain instrumentation writes ``{"output": …, "kwargs": {…}}``
    where the output is the ``ToolMessage`` in LangChain's own serialization
    (``{"lc": 1, "type": "constructor", "id": [… "ToolMessage"], "kwargs": {"content"…}}``):
    the result is that message's ``content`` (JSON text read as its value, as
    everywhere).
    """
    if not (isinstance(value, dict) and "output" in value and set(value) <= {"output", "kwargs"}):
        return value
    output = value["output"]
    if isinstance(output, dict) and output.get("lc") == 1 and output.get("type") == "constructor":
        ident = output.get("id")
        kwargs = output.get("kwargs")
        if (
            isinstance(ident, list)
            and ident[-1:] == ["ToolMessage"]
            and isinstance(kwargs, dict)
            and "content" in kwargs
        ):
            return parse_arguments(kwargs["content"])
    return output


def _indexed(attrs: dict[str, AttrValue], prefix: str) -> dict[int, dict[str, AttrValue]]:
    """``{prefix}{i}.{rest}`` keys grouped by ``i`` (one pass over the attributes)."""
    out: dict[int, dict[str, AttrValue]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        head, _, rest = key[len(prefix) :].partition(".")
        index = digits(head)
        if index is not None and rest:
            out.setdefault(index, {})[rest] = value
    return out


def _chat_dict(flat: dict[str, AttrValue]) -> dict[str, object]:
    """An OpenAI chat message dict from one message's flattened keys."""
    msg: dict[str, object] = {}
    calls: dict[int, dict[str, AttrValue]] = {}
    for key, value in flat.items():
        if key.startswith("tool_calls."):
            head, _, rest = key[len("tool_calls.") :].partition(".")
            index = digits(head)
            if index is not None:
                calls.setdefault(index, {})[rest] = value
        elif key.startswith("function_call."):
            calls.setdefault(-1, {})[key[len("function_call.") :]] = value
        else:
            msg[key] = value
    content = msg.get("content")
    if isinstance(content, str) and content.lstrip()[:1] == "[":
        # Multimodal content is written as a JSON list of content items.
        decoded = _decode(content)
        if isinstance(decoded, list):
            msg["content"] = decoded
    if calls:
        msg["tool_calls"] = [
            {
                "id": c.get("id"),
                "function": {"name": c.get("name"), "arguments": c.get("arguments")},
            }
            for _, c in sorted(calls.items())
        ]
    return msg


class Traceloop(ConventionReader):
    """Reader for ``traceloop.*`` decorator spans and indexed ``gen_ai.prompt|completion`` keys."""

    name = "traceloop"
    markers = frozenset({SPAN_KIND, REQUEST_TYPE})

    def step_kind(self, span: SpanRecord) -> StepKind | None:
        """``traceloop.span.kind``, else ``llm.request.type`` (chat/completion → llm)."""
        attrs = span.attributes
        kind = attrs.get(SPAN_KIND)
        if isinstance(kind, str):
            if span.scope == llama_index.OL_SCOPE:
                if kind == "task":
                    return _llama_index_task(span)
                if kind == _WORKFLOW and not llama_index.is_agent_run(span, _WORKFLOW):
                    # An index's, an embedding model's or a query engine's top span: not
                    # an agent run (its model calls, if any, still form one).
                    return "chain"
            return KINDS.get(kind, "other")
        req = attrs.get(REQUEST_TYPE)
        if isinstance(req, str):
            return REQUEST_KINDS.get(req, "other")
        return None

    def agent_name(self, span: SpanRecord) -> str | None:
        """``traceloop.entity.name`` of an agent or workflow span."""
        attrs = span.attributes
        if span.scope == llama_index.OL_SCOPE:
            # Its workflow spans are named by class (``FunctionAgent.workflow``); the
            # agents are named by the events of their turns.
            return _turn_agent(attrs) if attrs.get(SPAN_KIND) == "task" else None
        if attrs.get(SPAN_KIND) in ("agent", "workflow"):
            name = attrs.get(ENTITY_NAME)
            if isinstance(name, str) and name:
                return name
        return None

    def _messages(
        self, view: SpanView, prefix: str, default_role: str
    ) -> Found[list[Message]] | None:
        attrs = view.span.attributes
        if f"{prefix}0.role" not in attrs and f"{prefix}0.content" not in attrs:
            return None
        msgs: list[Message] = []
        for _, flat in sorted(_indexed(attrs, prefix).items()):
            msg = message_from_obj(_chat_dict(flat), default_role=default_role)
            if msg is not None and msg.parts:
                msgs.append(msg)
        return Found(msgs, prefix + "*") if msgs else None

    def llm_input(self, view: SpanView) -> Found[list[Message]] | None:
        """``gen_ai.prompt.{i}.*``."""
        return self._messages(view, _PROMPT, "user")

    def llm_output(self, view: SpanView) -> Found[list[Message]] | None:
        """``gen_ai.completion.{i}.*``."""
        return self._messages(view, _COMPLETION, "assistant")

    def system_instructions(self, view: SpanView) -> Found[str] | None:
        """Text of the system-role ``gen_ai.prompt`` messages."""
        found = self.llm_input(view)
        if found is None:
            return None
        texts = [t for m in found.value if m.role == "system" and (t := m.text())]
        return Found("\n".join(texts), found.source) if texts else None

    def tool_io(self, view: SpanView) -> ToolIO | None:
        """``@tool`` spans: ``traceloop.entity.name|input|output`` (input unwrapped)."""
        attrs = view.span.attributes
        if attrs.get(SPAN_KIND) != "tool":
            if view.span.scope == llama_index.OL_SCOPE and isinstance(attrs.get(_TOOL_NAME), str):
                return self._llama_index_call(view)
            return None
        name = attrs.get(ENTITY_NAME)
        args = self._entity(view, ENTITY_INPUT)
        result = self._entity(view, ENTITY_OUTPUT)
        call_id = None
        callback = False  # a LangChain tool callback's payloads, not a decorator's
        if args is not None:
            call_id = _callback_call_id(args.value)
            callback = isinstance(args.value, dict) and _is_callback_input(args.value)
            args = Found(unwrap_entity_input(args.value), args.source, args.truncated)
        if result is not None and callback:
            # Only beside a callback input: a decorated tool may return {"output": …}.
            result = Found(unwrap_entity_output(result.value), result.source, result.truncated)
        return ToolIO(
            name=name if isinstance(name, str) and name else None,
            call_id=call_id,
            args=args,
            result=result,
        )

    def _llama_index_call(self, view: SpanView) -> ToolIO:
        """A LlamaIndex ``call_tool`` step: name, arguments, the ``ToolCallResult``.

        ``tool.name`` and ``tool.arguments``; the call id, result and failure from the
        ``ToolCallResult`` the step returned.
        """
        attrs = view.span.attributes
        args = parse_content(view, attrs.get(_TOOL_ARGUMENTS), _TOOL_ARGUMENTS)
        if args is not None:
            args = Found(llama_index.without_context(args.value), args.source, args.truncated)
        call_id: str | None = None
        result: Found[JsonValue] | None = None
        error: str | None = None
        output = self._entity(view, ENTITY_OUTPUT)
        found = None if output is None else llama_index.tool_call_result(output.value)
        if output is not None and found is not None:
            call_id, value, error = found
            result = Found(value, output.source, output.truncated)
        name = attrs.get(_TOOL_NAME)
        return ToolIO(
            name=name if isinstance(name, str) and name else None,
            call_id=call_id,
            args=args,
            result=result,
            error=error,
        )

    def history(self, view: SpanView) -> Found[list[Message]] | None:
        """A LangGraph graph's final state's messages (:mod:`~tracescore.conventions.langgraph`)."""
        state = langgraph.state(view) if view.span.scope == langgraph.OL_SCOPE else None
        return state.history() if state is not None else None

    def final_output(self, view: SpanView) -> Found[str] | None:
        """A LangGraph graph's answer where no reply holds it.

        Its structured response (``response_format``), as JSON, or the result of the
        ``return_direct`` tool that ended it.
        """
        state = langgraph.state(view) if view.span.scope == langgraph.OL_SCOPE else None
        return (state.structured_text() or state.direct_result()) if state is not None else None

    def task(self, view: SpanView) -> Found[str] | None:
        """A LlamaIndex query or chat engine's question, from its ``traceloop.entity.input``."""
        return self._llama_index_entity(
            view,
            lambda s: llama_index.is_engine_call(s, _ENGINE),
            ENTITY_INPUT,
            llama_index.engine_question,
        )

    def retrieved(self, view: SpanView) -> Found[list[str]] | None:
        """A LlamaIndex retriever's nodes, from its ``traceloop.entity.output``."""
        return self._llama_index_entity(
            view,
            lambda s: llama_index.is_retriever(s, _TASK),
            ENTITY_OUTPUT,
            lambda value: llama_index.node_texts(value) or None,
        )

    def read_reply(self, view: SpanView) -> Found[ReadReply] | None:
        """A LlamaIndex ReAct output parser's step, from its ``traceloop.entity.output``."""
        return self._llama_index_entity(
            view,
            lambda s: llama_index.is_reply_parser(s, _TASK),
            ENTITY_OUTPUT,
            llama_index.reasoning_step,
        )

    def _llama_index_entity(
        self,
        view: SpanView,
        matches: Callable[[SpanRecord], bool],
        key: str,
        read: Callable[[JsonValue], T | None],
    ) -> Found[T] | None:
        """``read`` of a LlamaIndex span's entity ``key``, for the spans ``matches`` picks.

        Asked only of OpenLLMetry's LlamaIndex spans: one scope comparison for the others.
        """
        span = view.span
        if span.scope != llama_index.OL_SCOPE or not matches(span):
            return None
        found = self._entity(view, key)
        value = None if found is None else read(found.value)
        return (
            None if found is None or value is None else Found(value, found.source, found.truncated)
        )

    @staticmethod
    def _entity(view: SpanView, key: str) -> Found[JsonValue] | None:
        raw = view.span.attributes.get(key)
        decoded = _decode(raw)
        if decoded is raw:
            # Not valid JSON: maybe truncated; let the lenient parser salvage it.
            return parse_content(view, raw, key)
        return Found(cast(JsonValue, decoded), key)

    def capture_hint(self, span: SpanRecord) -> str | None:
        """``TRACELOOP_TRACE_CONTENT``, for spans OpenLLMetry emitted."""
        if span.scope in _SCOPES:
            return CAPTURE_HINT
        attrs = span.attributes
        for key in _MARKERS:
            if key in attrs:
                return CAPTURE_HINT
        return None
