"""The small records convention readers answer with: a value and its source, a view.

They are msgspec Structs, and they live apart from the readers because the readers are
compiled with mypyc (``hatch_build.py``), which drops a class statement's keywords:
compiled, ``kw_only`` and ``frozen`` would be lost. This module stays interpreted; a test
holds every compiled module to class statements without keywords.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar, cast

from msgspec import Struct
from msgspec.structs import replace

from tracescore.conventions.chat import JsonValue, Message, TextPart, ToolCallPart
from tracescore.spans import LogRecord, SpanRecord

__all__ = ["Found", "ReadReply", "SpanView", "ToolIO", "Usage"]

T = TypeVar("T")

# The small records a rebuild makes by the dozen per run (Found, SpanView, the message
# parts, the tree's steps...) are msgspec Structs, not dataclasses: a Struct's __init__ is
# C, ~50 ns where a slotted dataclass's generated Python __init__ takes 200-400 ns, and
# they fill an import's ~75 records per run (-4.7% of its instructions). The same
# contract otherwise: keyword fields, ==, repr, pickling; copies through
# msgspec.structs.replace; an empty [] or {} default is a fresh one per record.


class Found(Struct, Generic[T]):
    """A value read from telemetry and where it was read (``source``, e.g. an attribute key)."""

    value: T
    source: str
    truncated: bool = False


class Usage(Struct, kw_only=True):
    """Token counts of one model call (None when the convention does not say)."""

    input_tokens: int | None = None
    output_tokens: int | None = None


class ToolIO(Struct, kw_only=True):
    """What one tool-execution span says about the call."""

    name: str | None = None
    call_id: str | None = None
    args: Found[JsonValue] | None = None
    result: Found[JsonValue] | None = None
    #: The failure the recorded result states, on a span that did not end in error
    #: (LlamaIndex catches a tool's exception and returns its message as the result).
    error: str | None = None


class ReadReply(Struct, frozen=True, kw_only=True):
    """What an agent read in a model's text reply: a tool call it writes, or its answer.

    A ReAct agent's model writes its tool call as text (``Action: get_weather`` /
    ``Action Input: {...}``) and its answer after ``Answer:``; the agent parses the text
    and runs the call, or returns the answer alone. At most one of the two is set.
    """

    #: The tool call the text writes: the tool's name and its arguments.
    call: tuple[str, JsonValue] | None = None
    #: The answer the text gives, as the agent returns it.
    answer: str | None = None

    def applied_to(self, reply: Message) -> Message:
        """``reply`` as the agent read it.

        A call is added to the reply (its text stays: it is what the model said beside
        the call); an answer replaces the reply's text parts. A reply that already holds
        tool calls of its own is kept as it is: the model's structured calls win.
        """
        if reply.tool_calls():
            return reply
        if self.call is not None:
            name, args = self.call
            return replace(reply, parts=(*reply.parts, ToolCallPart(name=name, args=args)))
        if self.answer is not None:
            kept = (p for p in reply.parts if not isinstance(p, TextPart))
            return replace(reply, parts=(TextPart(text=self.answer), *kept))
        return reply


class SpanView(Struct):
    """A span with its correlated log records and a place for reader warnings."""

    span: SpanRecord
    logs: list[LogRecord] = []
    warnings: list[str] = []
    #: Parsed payloads shared by the questions asked of one span (parse once, read many).
    cache: dict[str, object] = {}

    def cached(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()``, run once per view and key (parse once, read many)."""
        if key in self.cache:
            return cast(T, self.cache[key])
        value = compute()
        self.cache[key] = value
        return value

    def warn(self, message: str) -> None:
        """Record a problem with this span's content (shown on the invocation)."""
        self.warnings.append(f"span {self.span.span_id} ({self.span.name}): {message}")
