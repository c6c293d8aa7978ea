"""LlamaIndex agents as OpenInference's and OpenLLMetry's instrumentations write them.

LlamaIndex (``llama-index-core`` 0.14) traces nothing itself: it dispatches events and
spans of its own, which two instrumentations turn into OTel spans, one per instrumented
method. Its agents (``FunctionAgent``, ``ReActAgent``, ``AgentWorkflow``) are workflows
whose steps are methods of the agent: ``init_run``, ``setup_agent``, ``run_agent_step``
(one model call), ``parse_agent_output``, ``call_tool`` (one tool call),
``aggregate_tool_results``. Checked with openinference-instrumentation-llama-index 4.6
and opentelemetry-instrumentation-llamaindex 0.62:

* **OpenInference** names a span ``<class>.<method>`` and marks it CHAIN, LLM or TOOL.
  The run is a CHAIN ``<class>.run`` span; each step a CHAIN span whose ``input.value``
  holds the step's event as Python text (``AgentSetup(input=[...],
  current_agent_name='weather_agent')``): the only place the agent's name is written.
  The model's request preparation (``<llm>._prepare_chat_with_tools``) is an LLM span
  of its own beside the call. A tool's ``input.value`` is the bound arguments of
  ``acall(*args, **kwargs)`` (``{"kwargs": {"city": "Paris"}}``, with the workflow
  ``Context`` a tool may take written as ``"<workflows.context.context.Context object
  at 0x...>"``), its ``output.value`` the ``ToolOutput``.
* **OpenLLMetry** names a span ``<class>.task`` (``<class>.workflow`` at the top) and
  writes the bound arguments and the result as JSON (``traceloop.entity.input`` /
  ``output``). Only the ``call_tool`` step says it is a tool call (``tool.name``,
  ``tool.arguments``; its output the ``ToolCallResult``); the tool's own span is a task
  like any other. The model calls carry GenAI attributes, without the tool calls of an
  Ollama reply.

A ``ReActAgent``'s model writes its tool call and its answer as text; the agent parses
each reply with its ``ReActOutputParser``, whose span (``ReActOutputParser.parse`` /
``.task``, beside the model call in the same step) both instrumentations write with the
step it read as JSON: ``{"thought", "action", "action_input"}`` for a call,
``{"thought", "response", ...}`` for the answer (what the agent returns, without the
``Thought:``/``Answer:`` lines).

Both write a ``ToolOutput`` as ``{"blocks", "tool_name", "raw_input", "raw_output",
"is_error"}``: the result is ``raw_output`` (what the tool returned), and ``is_error``
marks a call that failed (LlamaIndex catches the exception and hands its message to the
model as the result).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection
from typing import Final

from tracescore.conventions.base import ReadReply
from tracescore.conventions.messages import JsonValue, decoded_json
from tracescore.spans import SpanRecord

__all__ = [
    "OI_SCOPE",
    "OL_SCOPE",
    "agent_in_event",
    "engine_question",
    "is_engine_call",
    "is_agent_run",
    "is_reply_parser",
    "is_retriever",
    "method",
    "names_agent",
    "node_texts",
    "reasoning_step",
    "tool_call_result",
    "tool_output",
    "without_context",
]

OI_SCOPE: Final = "openinference.instrumentation.llama_index"
OL_SCOPE: Final = "opentelemetry.instrumentation.llamaindex"
#: The workflow step that makes one model call (its event names the agent).
AGENT_STEP: Final = "run_agent_step"
#: The model's request preparation, an LLM span beside the call (OpenInference).
PREPARE: Final = "_prepare_chat_with_tools"
#: An LLM's methods that format a prompt and call ``chat`` or ``complete``, whose own
#: span (inside theirs) is the model call; OpenInference marks both LLM.
PROMPTING: Final = frozenset(
    {
        "predict",
        "apredict",
        "stream",
        "astream",
        "structured_predict",
        "astructured_predict",
        "stream_structured_predict",
        "astream_structured_predict",
    }
)
#: A workflow's (an agent's) run.
RUN: Final = "run"
#: What the class of a model reply's parser ends with (``ReActOutputParser``, or a
#: subclass of the user's own).
REPLY_PARSER: Final = "OutputParser"
#: The workflow classes whose run is an agent run (any ``...Agent``, and these).
AGENT_WORKFLOWS: Final = frozenset({"AgentWorkflow"})

#: What a retriever's class ends with (``VectorIndexRetriever``, ``BM25Retriever``...).
RETRIEVER: Final = "Retriever"
#: What the classes of engines that answer a question without an agent end with:
#: query engines (``RetrieverQueryEngine``) and chat engines (``ContextChatEngine``).
ENGINES: Final = ("QueryEngine", "ChatEngine")
#: The methods of theirs a user calls, as OpenInference names their spans.
ENGINE_CALLS: Final = frozenset({"query", "aquery", "chat", "achat", "stream_chat", "astream_chat"})
#: Where an engine's bound arguments hold the question: a query engine's text or
#: ``QueryBundle``, a chat engine's message, then a ``QueryBundle``'s text.
_QUESTION_KEYS: Final = ("str_or_query_bundle", "query_bundle", "message", "query_str")
#: A ``QueryBundle`` in a query engine's arguments is two levels down; more is no question.
_QUESTION_DEPTH: Final = 3

# ``current_agent_name='x')`` closing an event's repr (either quote, escapes inside).
_AGENT_IN_REPR: Final = re.compile(
    r"""current_agent_name=('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\)$"""
)
# The workflow Context a tool may take, as OpenInference's encoder writes it.
_CONTEXT: Final = re.compile(r"<[\w.]*\bContext object at 0x[0-9a-fA-F]+>")
_TOOL_OUTPUT_KEYS: Final = frozenset({"tool_name", "raw_output", "is_error"})


def method(span: SpanRecord) -> str:
    """The instrumented method of an OpenInference LlamaIndex span (``<class>.<method>``)."""
    return span.name.rpartition(".")[2]


def is_agent_run(span: SpanRecord, traced_method: str = RUN) -> bool:
    """True for the run of an agent or an ``AgentWorkflow``.

    ``traced_method`` is the run's method as the instrumentation names it: ``run``
    under OpenInference, ``workflow`` under OpenLLMetry. The run of a workflow of the
    user's own (a retrieval pipeline, say) is not one: its model calls, if any, form a
    run as elsewhere, rooted at the trace's root.
    """
    owner, _, name = span.name.rpartition(".")
    return name == traced_method and (owner.endswith("Agent") or owner in AGENT_WORKFLOWS)


def is_engine_call(span: SpanRecord, traced_methods: Collection[str]) -> bool:
    """True for the span of a query or chat engine's call (:data:`ENGINES`).

    ``traced_methods`` are the calls as the instrumentation names them
    (:data:`ENGINE_CALLS` under OpenInference, ``workflow`` under OpenLLMetry, which names
    only the top span so).
    """
    owner, _, name = span.name.rpartition(".")
    return name in traced_methods and owner.endswith(ENGINES)


def is_retriever(span: SpanRecord, traced_method: str) -> bool:
    """True for the span of a retriever's ``traced_method`` (``task`` under OpenLLMetry).

    OpenInference marks a retriever's spans RETRIEVER itself.
    """
    owner, _, name = span.name.rpartition(".")
    return name == traced_method and owner.endswith(RETRIEVER)


def node_texts(value: JsonValue) -> list[str] | None:
    """The texts of the nodes a retriever returned, in rank order.

    ``value`` is the list of ``NodeWithScore`` OpenLLMetry writes as a retriever's
    output, each as JSON text (``{"node": {"text": ...}, "score": ...}``) or as an
    object. None when ``value`` is no such list; nodes without text are left out.
    """
    if not isinstance(value, list):
        return None
    texts: list[str] = []
    for item in value:
        scored = decoded_json(item) if isinstance(item, str) else item
        node = scored.get("node") if isinstance(scored, dict) else None
        text = node.get("text") if isinstance(node, dict) else None
        if isinstance(text, str) and text.strip():
            texts.append(text)
    return texts


def engine_question(value: JsonValue) -> str | None:
    """The question an engine was asked, from its call's bound arguments or its text.

    A query engine takes a text or a ``QueryBundle`` (``str_or_query_bundle``; its text
    is ``query_str``), a chat engine a ``message``. The model sees the question inside a
    prompt template, beside the retrieved context: this is the user's own text. None when
    absent or blank.
    """
    for _ in range(_QUESTION_DEPTH):
        if isinstance(value, str):
            return value if value.strip() else None
        if not isinstance(value, dict):
            return None
        value = next((value[k] for k in _QUESTION_KEYS if k in value), None)
    return None


def is_reply_parser(span: SpanRecord, traced_method: str) -> bool:
    """True for the span of an output parser's ``traced_method`` (see :func:`reasoning_step`).

    ``traced_method`` is the method as the instrumentation names it: ``parse`` under
    OpenInference, ``task`` under OpenLLMetry.
    """
    owner, _, name = span.name.rpartition(".")
    return name == traced_method and owner.endswith(REPLY_PARSER)


def reasoning_step(value: JsonValue) -> ReadReply | None:
    """The call or answer a ReAct output parser read in a reply, from the step it returned.

    None for any other value: an output parser of another kind (structured output), or
    a parse that failed (the agent then asks the model again; the reply stays as written).
    """
    if not isinstance(value, dict) or "thought" not in value:
        return None
    action = value.get("action")
    if isinstance(action, str) and action and "action_input" in value:
        return ReadReply(call=(action, value["action_input"]))
    response = value.get("response")
    if isinstance(response, str):
        return ReadReply(answer=response)
    return None


def agent_in_event(event: object) -> str | None:
    """The agent an agent step's event names (its ``current_agent_name``).

    ``event`` is the repr OpenInference writes, whose closing field it is, or the dict
    OpenLLMetry's JSON decodes to. None when absent or cut short (an attribute length
    limit).
    """
    if isinstance(event, dict):
        name = event.get("current_agent_name")
        return name if isinstance(name, str) and name else None
    if not isinstance(event, str):
        return None
    match = _AGENT_IN_REPR.search(event)
    if match is None:
        return None
    try:
        name = ast.literal_eval(match.group(1))
    except (ValueError, SyntaxError):
        return None
    return name if isinstance(name, str) and name else None


def without_context(args: JsonValue) -> JsonValue:
    """Tool arguments without the workflow ``Context`` LlamaIndex passed (not the model)."""
    if not isinstance(args, dict):
        return args
    kept = {k: v for k, v in args.items() if not (isinstance(v, str) and _CONTEXT.fullmatch(v))}
    return kept if len(kept) < len(args) else args


def tool_output(value: JsonValue) -> tuple[JsonValue, str | None] | None:
    """The result and error of a ``ToolOutput``; None when ``value`` is none.

    The result is ``raw_output``, what the model was given; for a failed call
    (``is_error``) that is the exception's message, which is also the error.
    """
    if not isinstance(value, dict) or not value.keys() >= _TOOL_OUTPUT_KEYS:
        return None
    raw = value.get("raw_output")
    if value.get("is_error") is True:
        return raw, str(raw) if raw not in (None, "") else "tool error"
    return raw, None


def tool_call_result(value: JsonValue) -> tuple[str | None, JsonValue, str | None] | None:
    """The call id, result and error of a ``ToolCallResult`` (OpenLLMetry's ``call_tool``)."""
    if not isinstance(value, dict) or "tool_output" not in value or "tool_kwargs" not in value:
        return None
    output = tool_output(value["tool_output"])
    if output is None:
        return None
    call_id = value.get("tool_id")
    return (call_id if isinstance(call_id, str) and call_id else None), output[0], output[1]


def names_agent(value: JsonValue) -> str | None:
    """The agent an ``AgentInput`` / ``AgentSetup`` names (OpenLLMetry writes them as JSON)."""
    if isinstance(value, dict) and "input" in value:
        return agent_in_event(value)
    return None
