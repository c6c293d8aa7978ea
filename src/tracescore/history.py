"""What a run said before a model call, read from the history that call was sent.

Every model request carries the conversation so far; the current run's part of it starts
after its last user text (earlier turns come before). The trajectory reads it where the
spans themselves fall short:

* the user text, from the first model call's input;
* the model replies, from an agent span's full history when the model calls recorded
  no output (pydantic-ai's ``pydantic_ai.all_messages``);
* a result no tool span and no later request gave (a call the framework answered
  itself), by call id;
* replies whose model call left no span of its own. OpenInference's instrumentor for
  google-adk, over ADK's schema 2, writes every model call of an agent onto that agent's
  span: only the last call's input and output survive, so the earlier replies (tool
  calls and the text beside them) are known only from that last input.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace

import orjson

from tracescore.conventions.base import ConventionReader, Found
from tracescore.conventions.messages import JsonValue, Message
from tracescore.conventions.registry import all_found, first_found
from tracescore.model import ToolCall
from tracescore.run_records import AgentRun, LlmStep, ModelReply
from tracescore.tool_calls import failed_with

__all__ = [
    "framework_answer",
    "history_replies",
    "last_user_text",
    "results_from_history",
    "run_start",
    "with_unseen_replies",
]


def last_user_text(messages: Iterable[Message]) -> str | None:
    """The text of the last user message that has text, or None."""
    text = None
    for msg in messages:
        if msg.is_user:
            t = msg.text()
            if t is not None:
                text = t
    return text


def run_start(messages: Sequence[Message]) -> int:
    """Where the current run starts in a history: after its last user text."""
    start = 0
    for i, msg in enumerate(messages):
        if msg.is_user and msg.text() is not None:
            start = i + 1
    return start


def history_replies(
    messages: Sequence[Message], agent: str | None, source: str
) -> list[ModelReply]:
    """The model replies of the current run in a history, each with the results after it."""
    replies: list[ModelReply] = []
    for msg in messages[run_start(messages) :]:
        if msg.is_assistant:
            replies.append(ModelReply(agent, msg, source, results=[]))
        elif replies:
            results = replies[-1].results
            if results is not None:
                results.extend(msg.tool_results())
    return replies


def results_from_history(
    run: AgentRun, calls: list[ToolCall], provenance: dict[str, str]
) -> list[ToolCall]:
    """Fill results no tool span or next request gave from the run's history, by call id.

    A call answered by the framework itself has no tool span, and when it ends the run
    no later request feeds its result back (pydantic-ai's ``final_result`` output tool:
    "Final result processed."); the run's history still has it. Only the current run's
    part of the history counts (earlier turns may reuse ids), and only by id.

    A call with no tool span whose result the history says failed (a LangChain
    ``ToolMessage`` with ``status: error``: the tool-call limit's refusal) takes that
    result as its error too.
    """
    results: dict[str, tuple[JsonValue, str, bool]] = {}
    # Every agent's history: in a multi-agent run each agent span holds its own part.
    for history in all_found(run.agent_views, ConventionReader.history):
        messages = history.value
        for msg in messages[run_start(messages) :]:
            for part in msg.tool_results():
                if part.id:
                    results.setdefault(part.id, (part.response, history.source, part.failed))
    if not results:
        return calls
    filled = list(calls)
    for i, call in enumerate(calls):
        if call.error is not None or call.id not in results:
            continue
        result, source, failed = results[call.id]
        if call.result is None:
            filled[i] = replace(call, result=result)
            sources = provenance.get("tool_results")
            if sources is None:
                provenance["tool_results"] = source
            elif source not in sources.split(", "):
                provenance["tool_results"] = f"{sources}, {source}"
        if failed and call.span_id is None:
            filled[i] = failed_with(filled[i], result)
    return filled


def framework_answer(run: AgentRun) -> Found[str] | None:
    """The reply that ends the run's history after a last model reply that called tools.

    Asked of a run whose model calls end on calls: a framework can end the run with a
    reply of its own that no model call made (LangChain's ``ModelCallLimitMiddleware``
    writes "Model call limits exceeded" as the agent's last message). Only a history
    whose current run ends with an assistant message with text and no call says so.
    """
    history = first_found(run.agent_views, ConventionReader.history)
    if history is None:
        return None
    messages = history.value[run_start(history.value) :]
    last = messages[-1] if messages else None
    if last is None or not last.is_assistant or last.tool_calls():
        return None
    text = last.text(thoughts=False)
    return Found(text, history.source) if text else None


def with_unseen_replies(
    replies: list[ModelReply], llm_steps: Sequence[LlmStep]
) -> tuple[list[ModelReply], int]:
    """``replies`` with those only a later model call's input shows, and how many.

    Each reply's model call was sent the run's replies so far. A reply of its input that
    calls tools and that no reply before it matches (by text and calls, ids aside: they
    may be rewritten between a reply and the history) had no model-call span of its
    own: it goes just before, in history order, with the tool results that follow it
    there. Only replies that call tools are taken: a reply without calls ends its
    agent's turn, so it cannot be an earlier call of the same span, and a text that an
    instrumentation wrote differently in the history must not come out twice.
    Only worth asking when some tool span is left that no reply asked for: it costs a
    decoding of every model call's input.
    """
    out: list[ModelReply] = []
    keys: Counter[_Key] = Counter()
    added = 0
    for reply in replies:
        if reply.step is not None:
            found = first_found(llm_steps[reply.step].views, ConventionReader.llm_input)
            if found is not None:
                seen = keys.copy()
                for earlier in history_replies(found.value, reply.agent, found.source):
                    key = _reply_key(earlier.message)
                    if seen[key]:
                        seen[key] -= 1
                    elif key[1]:
                        out.append(earlier)
                        keys[key] += 1
                        added += 1
        out.append(reply)
        keys[_reply_key(reply.message)] += 1
    return out, added


#: A reply as :func:`_reply_key` sees it.
_Key = tuple[str, tuple[tuple[str, bytes], ...]]


def _reply_key(message: Message) -> _Key:
    """A reply as its history copy shows it: its text and its calls' names and args."""
    text = (message.text() or "").strip()
    return text, tuple((c.name, _canonical(c.args)) for c in message.tool_calls())


def _canonical(args: JsonValue) -> bytes:
    """``args`` in one spelling: JSON text decoded, keys sorted (histories re-encode)."""
    value: object = args
    if isinstance(args, str):
        try:
            value = orjson.loads(args)
        except orjson.JSONDecodeError:
            return args.encode("utf-8", "surrogatepass")  # lone surrogates too
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # nested deeper than orjson writes, or not JSON at all
        return repr(args).encode()
