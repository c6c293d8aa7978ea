"""OpenInference (Arize Phoenix) span attributes.

OpenInference marks every span with ``openinference.span.kind`` and flattens messages
into indexed keys (``llm.input_messages.N.message.*``, REFERENCE §5.3), folded back into
messages by :mod:`tracescore.conventions.openinference_flat` only when a question needs
them.

``llm.system`` is the model *vendor* in OpenInference (``"openai"``), not instructions:
system instructions are the text of the system-role input messages. Where a span has
no flattened messages, its generic ``input.value`` / ``output.value`` pair is read by
:mod:`tracescore.conventions.generic_io`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from tracescore.conventions import agno, langgraph, llama_index, server_tools, smolagents
from tracescore.conventions import openinference_flat as flat
from tracescore.conventions import openinference_llama_index as oi_llama_index
from tracescore.conventions.adk import ADK_SCOPE, is_callback_reply
from tracescore.conventions.base import (
    ConventionReader,
    Found,
    ReadReply,
    SpanView,
    StepKind,
    ToolIO,
    Usage,
    parse_content,
)
from tracescore.conventions.genai import OPERATION_KINDS, int_attr
from tracescore.conventions.generic_io import (
    INPUT_VALUE,
    OUTPUT_MIME_TYPE,
    OUTPUT_VALUE,
    output_messages,
)
from tracescore.conventions.messages import (
    JsonValue,
    Message,
    ToolCallPart,
    decoded_json,
    is_not_captured,
)
from tracescore.conventions.openinference_tools import (
    looks_like_schema,
    tool_message_call_id,
    unwrap_response,
)
from tracescore.conventions.replies import one_reply
from tracescore.conventions.traceloop import unwrap_entity_input
from tracescore.spans import AttrValue, SpanRecord

__all__ = ["CAPTURE_HINT", "OpenInference"]

SPAN_KIND: Final = "openinference.span.kind"
METADATA: Final = "metadata"
_HANDOFF: Final = "handoff to "

KINDS: Final[dict[str, StepKind]] = {
    "LLM": "llm",
    "AGENT": "agent",
    "TOOL": "tool",
    "CHAIN": "chain",
    "RETRIEVER": "retrieval",
}

CAPTURE_HINT: Final = (
    "OpenInference content is hidden: unset OPENINFERENCE_HIDE_INPUTS, "
    "OPENINFERENCE_HIDE_OUTPUTS, OPENINFERENCE_HIDE_INPUT_MESSAGES, "
    "OPENINFERENCE_HIDE_OUTPUT_MESSAGES, OPENINFERENCE_HIDE_INPUT_TEXT and "
    "OPENINFERENCE_HIDE_OUTPUT_TEXT (or pass TraceConfig() with the defaults) in the agent"
)


def _langgraph_role(metadata: AttrValue | None) -> Literal["graph", "node"] | None:
    """What a span with this ``metadata`` is in a LangGraph run: the graph, a node, neither.

    OpenInference's LangChain instrumentation names no agent and marks any run whose name
    holds "agent" as AGENT, else CHAIN: a compiled graph named "pipeline" (or LangGraph's
    default "LangGraph") is a CHAIN, while each run of its ``agent`` node is an AGENT.
    LangGraph's own metadata tells them apart: the graph run at top level has none of
    ``langgraph_node``, which names the node every run inside it belongs to. LangChain
    1.x's ``create_agent`` marks its graph's runs ``langchain_create_agent``.
    """
    if not isinstance(metadata, str) or not any(m in metadata for m in _LANGGRAPH_MARKS):
        return None
    data = decoded_json(metadata)
    if not isinstance(data, dict) or data.get("ls_integration") not in _LANGGRAPH_INTEGRATIONS:
        return None
    return "node" if "langgraph_node" in data else "graph"


#: The ``ls_integration`` of a LangGraph graph's runs: a graph's, ``create_agent``'s.
_LANGGRAPH_INTEGRATIONS: Final = frozenset({"langgraph", "langchain_create_agent"})
_LANGGRAPH_MARKS: Final = tuple(f'"{i}"' for i in sorted(_LANGGRAPH_INTEGRATIONS))


def _responses_api_output(span: SpanRecord, msgs: list[Message]) -> bool:
    """True when ``msgs`` (an LLM span's output messages) are one Responses API reply.

    That is, several messages, or one with a call named like a hosted tool's item; this
    is checked first, so ``output.value`` is parsed only then.
    """
    if len(msgs) < 2 and not any(
        isinstance(p, ToolCallPart) and p.name in server_tools.HOSTED_ITEMS
        for m in msgs
        for p in m.parts
    ):
        return False
    return _responses_api(span)


def _responses_api(span: SpanRecord) -> bool:
    """True when the span's ``output.value`` is an OpenAI Responses API ``response``.

    Parsed only for outputs of several messages (the rare case), not on every span.
    """
    value = span.attributes.get(OUTPUT_VALUE)
    if not isinstance(value, str) or '"response"' not in value:
        return False
    doc = decoded_json(value)
    return isinstance(doc, dict) and doc.get("object") == "response"


def _stated_output(view: SpanView) -> Found[str] | None:
    """A span's ``output.value``, when it holds captured text."""
    value = view.span.attributes.get(OUTPUT_VALUE)
    if not isinstance(value, str) or not value.strip() or is_not_captured(value):
        return None
    return Found(value, OUTPUT_VALUE)


class OpenInference(ConventionReader):
    """Reader for OpenInference attributes (``openinference.span.kind``, ``llm.*``, ``tool.*``)."""

    name = "openinference"
    markers = frozenset({SPAN_KIND})

    def step_kind(self, span: SpanRecord) -> StepKind | None:
        """``openinference.span.kind``: LLM, AGENT, TOOL, CHAIN, RETRIEVER; others are ``other``.

        The OpenAI Agents instrumentation writes a handoff as a TOOL span named
        ``handoff to <agent>`` with no ``tool.name`` (from and to agent as its input and
        output): a record of the switch, ``other`` here. The tool call the model made
        (``transfer_to_<agent>``) is in its output, its result in the next request.

        CHAIN is OpenInference's catch-all: on a span whose GenAI operation name says it
        runs agents (Strands' ``invoke_swarm`` / ``invoke_graph`` under OpenInference's
        span processor for Strands), that more specific kind wins, so the run is cut
        where it is without the processor.
        """
        attrs = span.attributes
        kind = attrs.get(SPAN_KIND)
        if isinstance(kind, str):
            step = KINDS.get(kind.upper(), "other")
            if span.scope == llama_index.OI_SCOPE:
                return oi_llama_index.step_kind(span, step)
            if step == "tool" and span.name.startswith(_HANDOFF) and "tool.name" not in attrs:
                return "other"
            if step == "chain":
                operation = attrs.get("gen_ai.operation.name")
                stated = OPERATION_KINDS.get(operation) if isinstance(operation, str) else None
                if stated in ("workflow", "agent"):
                    return stated
            if step in ("agent", "chain") and METADATA in attrs:
                # A LangGraph graph is the agent run, whatever its name; a node is a step
                # of it, even one named "agent" (see _langgraph_role).
                role = _langgraph_role(attrs[METADATA])
                if role == "graph":
                    return "agent"
                if role == "node" and step == "agent":
                    return "chain"
            return step
        return None

    def agent_name(self, span: SpanRecord) -> str | None:
        """``agent.name``; on an AGENT span without it, ``graph.node.id`` (a weaker hint).

        ``graph.node.id`` names a node of an agent graph; only on an AGENT span is that
        node the agent itself, so it is not used on other spans. A LangGraph graph run at
        top level is named by its span (:func:`_langgraph_role`).
        """
        attrs = span.attributes
        name = attrs.get("agent.name")
        if isinstance(name, str) and name:
            return name
        if span.scope == llama_index.OI_SCOPE:
            return oi_llama_index.agent(span)
        if attrs.get("gen_ai.agent.name"):
            # The GenAI name on the same span is explicit; OpenInference's span processor
            # for Strands writes the same ``graph.node.id`` ("strands_agent") for every
            # agent beside it.
            return None
        kind = attrs.get(SPAN_KIND)
        if kind == "AGENT":
            node = attrs.get("graph.node.id")
            if isinstance(node, str) and node:
                return node
            if smolagents.is_run(span):
                # smolagents' instrumentation names the run span "<agent name>.run".
                return span.name.removesuffix(smolagents.RUN_SUFFIX) or None
        if kind in ("AGENT", "CHAIN") and _langgraph_role(attrs.get(METADATA)) == "graph":
            return span.name or None
        return None

    def task(self, view: SpanView) -> Found[str] | None:
        """The ``task`` in a smolagents run span's ``input.value`` (its ``run`` arguments).

        On a LlamaIndex query or chat engine's call, its question (from ``input.value``:
        the text itself, or the bound arguments when the mime type says JSON).
        """
        span = view.span
        if span.scope == llama_index.OI_SCOPE:
            return oi_llama_index.engine_question(view)
        if not smolagents.is_run(span):
            return None
        arguments = decoded_json(span.attributes.get(INPUT_VALUE))
        task = arguments.get("task") if isinstance(arguments, dict) else None
        return Found(task, INPUT_VALUE) if isinstance(task, str) and task.strip() else None

    def history(self, view: SpanView) -> Found[list[Message]] | None:
        """A LangGraph graph's final state's messages (:mod:`~tracescore.conventions.langgraph`)."""
        state = langgraph.state(view) if view.span.scope == langgraph.OI_SCOPE else None
        return state.history() if state is not None else None

    def final_output(self, view: SpanView) -> Found[str] | None:
        """An AGENT span's ``output.value`` when it is plain text: the run's answer.

        Asked only when no model reply is the answer (a smolagents run's answer is
        :meth:`stated_answer`). A JSON object or list there is a framework's state (a
        LangGraph graph's messages), not an answer, and is not taken; but a LangGraph
        state's structured response (``response_format``) is what the caller gets.
        """
        if view.span.scope == langgraph.OI_SCOPE:
            state = langgraph.state(view)
            if state is not None:
                return state.structured_text() or state.direct_result()
        attrs = view.span.attributes
        if attrs.get(SPAN_KIND) != "AGENT":
            return None
        value = _stated_output(view)
        if value is None or isinstance(decoded_json(value.value), (dict, list)):
            return None
        return value

    def paused_for(self, view: SpanView) -> str | None:
        """An agno run span whose output is agno's sentence for a paused run."""
        return agno.paused_for(view.span) if view.span.scope == agno.SCOPE else None

    def stated_answer(self, view: SpanView) -> Found[str] | None:
        """A smolagents run span's ``output.value``: its answer, whatever the replies say.

        A ``ToolCallingAgent``'s replies hold none, a ``CodeAgent``'s last reply is the
        code that called ``final_answer`` (:mod:`tracescore.conventions.smolagents`).
        JSON there is the answer too: what ``final_answer`` was given.
        """
        return _stated_output(view) if smolagents.is_run(view.span) else None

    def acts_in_code(self, view: SpanView) -> bool:
        """A smolagents run: a ``CodeAgent``'s model writes code that calls the tools."""
        return smolagents.is_run(view.span)

    @staticmethod
    def _applies(view: SpanView) -> bool:
        return SPAN_KIND in view.span.attributes

    def llm_input(self, view: SpanView) -> Found[list[Message]] | None:
        """``llm.input_messages.*`` (None when absent or every message is redacted)."""
        if not self._applies(view):
            return None
        msgs = flat.messages(flat.parse_flat(view)[0], "user")
        if view.span.scope == agno.SCOPE:  # the calls agno refused to run
            msgs = agno.mark_failed(view, msgs)
        return Found(msgs, "llm.input_messages") if msgs else None

    def llm_output(self, view: SpanView) -> Found[list[Message]] | None:
        """``llm.output_messages.*``.

        Each message is a choice, except for an OpenAI Responses API call: there each
        *output item* (a text message, a function call...) is written as a message, and
        together they are the one reply, merged here in order.
        """
        if not self._applies(view):
            return None
        if view.span.scope == ADK_SCOPE:
            whole = _adk_response(view)
            if whole is not None:
                return whole
        msgs = flat.messages(flat.parse_flat(view)[1], "assistant")
        if _responses_api_output(view.span, msgs):
            # Hosted tools (a file search, a web search) are written as tool calls, a
            # file search's results as a tool message: items of the reply, not calls.
            msgs = one_reply(server_tools.hosted_calls(msgs))
        return Found(msgs, "llm.output_messages") if msgs else None

    def replied_without_model(self, view: SpanView) -> bool:
        """On ADK's spans, ``output.value`` is ADK's ``LlmResponse``: ADK's rule applies.

        OpenInference's instrumentor for google-adk writes it there, a callback's answer
        included, also where ADK itself captured no content.
        """
        if not self._applies(view) or view.span.scope != ADK_SCOPE:
            return False
        return is_callback_reply(_adk_output(view))

    def system_instructions(self, view: SpanView) -> Found[str] | None:
        """Text of the system-role input messages."""
        found = self.llm_input(view)
        if found is None:
            return None
        texts = [t for m in found.value if m.role == "system" and (t := m.text())]
        return Found("\n".join(texts), "llm.input_messages") if texts else None

    def tool_definitions(self, view: SpanView) -> Found[JsonValue] | None:
        """``llm.tools.N.tool.json_schema`` as a list of parsed schemas."""
        if not self._applies(view):
            return None
        schemas = flat.parse_flat(view)[2]
        out: list[JsonValue] = []
        for index in sorted(schemas):
            found = parse_content(view, schemas[index], f"llm.tools.{index}.tool.json_schema")
            if found is not None:
                out.append(found.value)
        return Found(out, "llm.tools") if out else None

    def usage(self, view: SpanView) -> Usage | None:
        """``llm.token_count.prompt|completion``."""
        span = view.span
        inp = int_attr(span, "llm.token_count.prompt")
        out = int_attr(span, "llm.token_count.completion")
        if inp is None and out is None:
            return None
        return Usage(input_tokens=inp, output_tokens=out)

    def tool_io(self, view: SpanView) -> ToolIO | None:
        """TOOL spans: ``tool.name``/``tool.id``, args ``input.value``, result ``output.value``.

        ``tool.parameters`` is normally the tool's schema; it is taken as the arguments
        only when ``input.value`` has none and it is an object that looks nothing like a
        schema. A result wrapped as ``{"id", "name", "response"}`` is unwrapped.
        """
        attrs = view.span.attributes
        name = attrs.get("tool.name")
        if attrs.get(SPAN_KIND) != "TOOL" and not isinstance(name, str):
            # A smolagents managed agent's run, as its manager's call of it.
            return smolagents.managed_call(view.span) if smolagents.is_run(view.span) else None
        tool = name if isinstance(name, str) and name else None
        call_id = flat.opt_str(
            attrs.get("tool.id") or attrs.get("tool_call.id") or attrs.get("tool.call_id")
        )
        args = parse_content(view, attrs.get(INPUT_VALUE), INPUT_VALUE)
        if args is None:
            params = parse_content(view, attrs.get("tool.parameters"), "tool.parameters")
            if params is not None and not looks_like_schema(params.value):
                args = params
        elif view.span.scope == smolagents.SCOPE:
            inputs = decoded_json(attrs.get("tool.parameters"))
            bound = smolagents.tool_args(args.value, inputs)
            args = Found(bound, args.source, args.truncated)
        result = _output_value(view)
        error = None
        if view.span.scope == llama_index.OI_SCOPE:
            if args is not None:
                unwrapped = llama_index.without_context(unwrap_entity_input(args.value))
                args = Found(unwrapped, args.source, args.truncated)
            output = None if result is None else llama_index.tool_output(result.value)
            if result is not None and output is not None:
                result = Found(output[0], result.source, result.truncated)
                error = output[1]
        elif result is not None:
            call_id = call_id or tool_message_call_id(result.value)
            result = Found(unwrap_response(result.value, tool), result.source, result.truncated)
        return ToolIO(name=tool, call_id=call_id, args=args, result=result, error=error)

    def read_reply(self, view: SpanView) -> Found[ReadReply] | None:
        """A LlamaIndex ReAct output parser's step, from its ``output.value``."""
        span = view.span
        if span.scope != llama_index.OI_SCOPE or not llama_index.is_reply_parser(
            span, oi_llama_index.PARSE
        ):
            return None
        found = parse_content(view, span.attributes.get(OUTPUT_VALUE), OUTPUT_VALUE)
        read = None if found is None else llama_index.reasoning_step(found.value)
        return None if found is None or read is None else Found(read, found.source, found.truncated)

    def retrieved(self, view: SpanView) -> Found[list[str]] | None:
        """What a span found.

        A RETRIEVER span's ``retrieval.documents.N.document.content``; an LLM span's
        file search results (an OpenAI Responses API hosted tool).
        """
        attrs = view.span.attributes
        kind = attrs.get(SPAN_KIND)
        if kind == "LLM":
            found = self.llm_output(view)
            texts = server_tools.file_search_texts(found.value) if found else []
            return Found(texts, "llm.output_messages") if texts else None
        if kind != "RETRIEVER":
            return None
        texts = flat.documents(attrs)
        return Found(texts, "retrieval.documents") if texts else None

    def capture_hint(self, span: SpanRecord) -> str | None:
        """The ``OPENINFERENCE_HIDE_*`` switches, for OpenInference spans."""
        return CAPTURE_HINT if SPAN_KIND in span.attributes else None


def _output_value(view: SpanView) -> Found[JsonValue] | None:
    """``output.value`` as its ``output.mime_type`` says: ``text/plain`` is text as written.

    A tool that returned JSON-looking text (Strands' content block under OpenInference's
    span processor for Strands) keeps it as text, as the framework recorded it; any other
    or no mime type reads JSON text as its value.
    """
    attrs = view.span.attributes
    raw = attrs.get(OUTPUT_VALUE)
    if isinstance(raw, str) and attrs.get(OUTPUT_MIME_TYPE) == "text/plain" and raw:
        return Found(raw, OUTPUT_VALUE)
    return parse_content(view, raw, OUTPUT_VALUE)


def _adk_output(view: SpanView) -> Found[JsonValue] | None:
    """``output.value`` of a span on ADK's, parsed once (its reply, and who gave it)."""
    raw = view.span.attributes.get(OUTPUT_VALUE)
    return view.cached("openinference.adk_output", lambda: parse_content(view, raw, OUTPUT_VALUE))


def _adk_response(view: SpanView) -> Found[list[Message]] | None:
    """The reply in ``output.value`` when it is an ADK ``LlmResponse`` (``content``).

    OpenInference's instrumentor for google-adk writes onto ADK's own spans; over schema
    2, every model call of an agent lands on that agent's one span. Each call sets its
    ``llm.output_messages.*`` key by key, and keys an earlier reply set that the last
    did not (its tool call at part 1, say) linger beside it. ``output.value`` is
    rewritten whole by each call: the last reply as it was.
    """
    found = _adk_output(view)
    if found is None or not isinstance(found.value, dict):
        return None
    if not isinstance(found.value.get("content"), Mapping):
        return None
    msgs = output_messages(found.value)  # read as the generic reader reads it
    return Found(msgs, OUTPUT_VALUE, found.truncated) if msgs else None
