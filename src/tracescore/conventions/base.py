"""The contract between telemetry conventions and the trajectory builder.

A convention reader is an adapter: it looks at one span (plus the log records correlated
with it) and answers narrow questions — what kind of step is this, what did the model see
and say, what did the tool get and return. Each answer carries its *source* (the attribute
or event it came from) so every field of an invocation can say where it was read.

Readers never raise on bad content: they return ``None`` and append a warning to the
view, and the builder asks the next reader in precedence order (REFERENCE §5.5).
"""

from __future__ import annotations

from typing import ClassVar, Literal, cast

import orjson
from mypy_extensions import mypyc_attr

from tracescore import json_text
from tracescore.conventions.messages import (
    JsonValue,
    Message,
    is_not_captured,
)
from tracescore.conventions.records import Found, ReadReply, SpanView, ToolIO, Usage
from tracescore.conventions.salvage import salvage_json
from tracescore.spans import SpanRecord

__all__ = [
    "ConventionReader",
    "Found",
    "ReadReply",
    "SpanView",
    "StepKind",
    "ToolIO",
    "Usage",
    "digits",
    "parse_content",
]

#: Digits of the largest value :func:`digits` reads (an unsigned 64-bit integer).
_MAX_DIGITS = 20

#: What a span is in an agent run. ``invocation``/``workflow``/``agent`` are agent-ish
#: (they can root an invocation); ``llm`` is a model call; ``tool`` a tool execution;
#: ``turn`` one step of a named agent inside a run (LlamaIndex's ``run_agent_step``): it
#: names the agent of the spans inside it, and counts as a visit only when another agent
#: ran since that agent's last turn; ``parse`` the agent's reading of the model call
#: just before it (a LlamaIndex ``ReActAgent`` parses the tool call or the answer out of
#: the reply's text): see :class:`ReadReply`; ``retrieval`` a search of documents the
#: run's model is given as context (a RAG retriever's), not a call the model made.
StepKind = Literal[
    "invocation",
    "workflow",
    "agent",
    "turn",
    "llm",
    "parse",
    "tool",
    "retrieval",
    "chain",
    "other",
]


def digits(text: str) -> int | None:
    """``text`` as an integer when it is 1-20 ASCII digits (an index, a token count).

    ``str.isdigit`` also accepts characters ``int`` rejects (``"²"``), and ``int`` refuses
    strings of more than 4300 digits: attribute keys and values hold anything.
    """
    if text.isascii() and text.isdigit() and len(text) <= _MAX_DIGITS:
        return int(text)
    return None


def _text(value: str | bytes) -> str:
    # Content from a ``bytesValue`` need not be UTF-8: never fail on it.
    return value if isinstance(value, str) else value.decode("utf-8", "replace")


def parse_content(view: SpanView, value: object, source: str) -> Found[JsonValue] | None:
    """Parse a JSON content value leniently, salvaging truncated JSON.

    Returns None when the value is absent or a not-captured placeholder; a value that is
    not JSON at all is returned as the raw string (tool results may be plain text).
    """
    if is_not_captured(value):
        return None
    if isinstance(value, (str, bytes)):
        stripped = value.strip()
        if stripped[:1] not in ("{", "[", b"{", b"["):
            return Found(_text(value), source)
        try:
            return Found(json_text.loads(stripped), source)
        except orjson.JSONDecodeError:
            try:
                parsed, _ = salvage_json(stripped)
            except ValueError:
                view.warn(f"{source} is not valid JSON; kept as text")
                return Found(_text(value), source)
            view.warn(f"{source} was truncated ({len(value)} bytes); salvaged what it holds")
            return Found(parsed, source, truncated=True)
    return Found(cast(JsonValue, value), source)


# Compiled with mypyc, a class is closed to subclasses defined in Python unless it says so:
# users register readers of their own (registry.register_reader).
@mypyc_attr(allow_interpreted_subclasses=True)
class ConventionReader:
    """Base class of convention readers; every question defaults to "not mine" (None).

    Subclasses override what their convention can answer. Implementations must be
    cheap when the convention does not apply (a dict lookup, not a parse).
    """

    #: Short name used in provenance and hints, e.g. ``"adk"``.
    name: ClassVar[str] = "base"
    #: Attribute keys whose presence lets :meth:`step_kind` answer. A span with none of
    #: any reader's markers (and no marked scope) is classified ``other`` without asking:
    #: most spans of a trace are HTTP, database or framework spans.
    markers: ClassVar[frozenset[str]] = frozenset()
    #: Instrumentation scopes whose spans :meth:`step_kind` may recognise by scope alone.
    scopes: ClassVar[frozenset[str]] = frozenset()

    def step_kind(self, span: SpanRecord) -> StepKind | None:
        """The kind of step this span is, if this convention marks it."""
        return None

    def agent_name(self, span: SpanRecord) -> str | None:
        """The agent this span belongs to or runs, if it says."""
        return None

    def llm_input(self, view: SpanView) -> Found[list[Message]] | None:
        """The messages sent to the model (history included), for an ``llm`` span."""
        return None

    def llm_output(self, view: SpanView) -> Found[list[Message]] | None:
        """The model's reply message(s), for an ``llm`` span."""
        return None

    def system_instructions(self, view: SpanView) -> Found[str] | None:
        """Developer/system instructions sent with a model call."""
        return None

    def tool_definitions(self, view: SpanView) -> Found[JsonValue] | None:
        """Declarations of the tools offered to the model."""
        return None

    def usage(self, view: SpanView) -> Usage | None:
        """Token usage of a model call."""
        return None

    def replied_without_model(self, view: SpanView) -> bool:
        """True when an ``llm`` span's reply came from the agent framework, not a model.

        An ADK ``before_model_callback`` (a guardrail, a cache) answers in the model's
        place; ADK still records the answer on a model-call span. Such a reply is part
        of the trajectory but not a model call.
        """
        return False

    def tool_io(self, view: SpanView) -> ToolIO | None:
        """Name, call id, arguments and result of a ``tool`` span."""
        return None

    def read_reply(self, view: SpanView) -> Found[ReadReply] | None:
        """How the agent read the model call before it, for a ``parse`` span."""
        return None

    def history(self, view: SpanView) -> Found[list[Message]] | None:
        """A whole run's message history carried on an agent span (e.g. pydantic-ai)."""
        return None

    def final_output(self, view: SpanView) -> Found[str] | None:
        """A run's final output stated on its agent span (e.g. structured output)."""
        return None

    def stated_answer(self, view: SpanView) -> Found[str] | None:
        """The run's answer as its agent span states it, taken over any model reply.

        Only where the framework's answer is never a reply's text: a smolagents
        ``CodeAgent``'s last reply is the code that gave the answer.
        """
        return None

    def paused_for(self, view: SpanView) -> str | None:
        """What the run waits for, when its agent span says it paused for input.

        pydantic-ai's run ends with ``DeferredToolRequests`` as its output when a tool
        needs a human's approval (or runs elsewhere); the run that resumes it is the turn.
        """
        return None

    def stopped_by(self, view: SpanView) -> str | None:
        """The run's error when its agent span says the framework stopped it unanswered.

        Strands stops a run at a limit of its ``limits`` or on a cancellation, and
        returns normally: no span is in error, only the run's stop reason says so.
        """
        return None

    def acts_in_code(self, view: SpanView) -> bool:
        """Whether this agent may act by code its model writes, which calls the tools.

        A smolagents ``CodeAgent``'s does: in a run whose replies call no tool, its tool
        spans are the code's calls, not calls of replies that were lost.
        """
        return False

    def task(self, view: SpanView) -> Found[str] | None:
        """The user's request as the agent span states it, where the model sees it rewritten.

        smolagents prompts the model with "New task:" and then the task; its run span
        states the task alone. A LlamaIndex query engine's call states the question its
        model sees inside a prompt template (asked in a run without agent spans).
        """
        return None

    def retrieved(self, view: SpanView) -> Found[list[str]] | None:
        """The texts of the documents a ``retrieval`` span found, in rank order."""
        return None

    def grounding(self, view: SpanView) -> Found[JsonValue] | None:
        """A model call's grounding metadata (what its built-in search based it on)."""
        return None

    def capture_hint(self, span: SpanRecord) -> str | None:
        """If ``span`` belongs to this convention: how to turn content capture on."""
        return None
