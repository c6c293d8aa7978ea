"""The convention-neutral chat message model every convention reader answers with.

One :class:`Message` per chat message, with typed parts; the parsers that build them
from the shapes conventions write are in :mod:`tracescore.conventions.messages`.

These records are msgspec Structs (see :mod:`tracescore.conventions.records` for why),
and they live apart from their parsers because the parsers are compiled with mypyc
(``hatch_build.py``), which drops a class statement's keywords: compiled, ``kw_only``
would be lost. This module stays interpreted; a test holds every compiled module to
class statements without keywords.
"""

from __future__ import annotations

from typing import Final, TypeAlias

from msgspec import Struct

__all__ = [
    "ASSISTANT_ROLES",
    "USER_ROLES",
    "JsonValue",
    "Message",
    "OtherPart",
    "Part",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
]

JsonValue: TypeAlias = (
    None | bool | int | float | str | bytes | list["JsonValue"] | dict[str, "JsonValue"]
)

USER_ROLES: Final = frozenset({"user", "human"})
ASSISTANT_ROLES: Final = frozenset({"assistant", "model", "ai", "bot"})


class TextPart(Struct, kw_only=True):
    """Natural-language text; ``thought`` marks model reasoning parts."""

    text: str
    thought: bool = False


class ToolCallPart(Struct, kw_only=True):
    """A tool call requested by the model. ``args`` is usually a dict; kept as written."""

    name: str
    args: JsonValue
    id: str | None = None


class ToolResultPart(Struct, kw_only=True):
    """A tool's result as fed back to the model.

    ``failed`` when the record says the call failed (a LangChain ``ToolMessage`` with
    ``status: error``), where no tool span says so.
    """

    name: str | None
    response: JsonValue
    id: str | None = None
    failed: bool = False


class OtherPart(Struct, kw_only=True):
    """Any part we do not interpret (blobs, files, server tool calls, ...), kept verbatim."""

    type: str
    data: JsonValue = None


Part: TypeAlias = TextPart | ToolCallPart | ToolResultPart | OtherPart


class Message(Struct, kw_only=True):
    """One chat message with typed parts.

    ``finish_reason`` is the output message's own, as written (GenAI shape only); None
    when it has none. An empty one marks a piece of a streamed reply (see
    :func:`tracescore.conventions.replies.joined_stream`).
    """

    role: str
    parts: tuple[Part, ...]
    name: str | None = None
    finish_reason: str | None = None

    @property
    def is_user(self) -> bool:
        """True for a message written by the end user (not a tool result carrier)."""
        return self.role in USER_ROLES

    @property
    def is_assistant(self) -> bool:
        """True for a message written by the model."""
        return self.role in ASSISTANT_ROLES

    def text(self, *, thoughts: bool = True) -> str | None:
        """All text parts joined with newlines (as ADK does), or None when there are none.

        Args:
            thoughts: Whether a thinking model's thoughts count (ADK's eval counts them;
                other frameworks' answers leave them out).

        """
        texts = [
            p.text for p in self.parts if isinstance(p, TextPart) and (thoughts or not p.thought)
        ]
        return "\n".join(texts) if texts else None

    def tool_calls(self) -> list[ToolCallPart]:
        """The tool-call parts, in order."""
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    def tool_results(self) -> list[ToolResultPart]:
        """The tool-result parts, in order."""
        return [p for p in self.parts if isinstance(p, ToolResultPart)]
