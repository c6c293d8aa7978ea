r"""The small records the rebuild passes between its stages: a run's steps, its replies.

:mod:`.trace_tree` sorts a trace's spans into :class:`AgentRun`\ s of :class:`LlmStep`\ s
and :class:`ToolStep`\ s; :mod:`.tool_calls` joins each :class:`ModelReply`'s calls to an
:class:`Execution`. They are msgspec Structs (C ``__init__``, see
:mod:`tracescore.conventions.records`), and they live apart from the code that builds
them because that code is compiled with mypyc (``hatch_build.py``), which cannot compile
a class with msgspec's metaclass; this module stays interpreted (tests/test_compiled.py).
"""

from __future__ import annotations

from msgspec import Struct

from tracescore.conventions.base import SpanView
from tracescore.conventions.chat import JsonValue, Message, ToolResultPart
from tracescore.spans import SpanRecord

__all__ = ["AgentRun", "Execution", "LlmStep", "ModelReply", "ToolStep"]


class LlmStep(Struct):
    """One model call: its span view, views of nested spans of the same call, its agent."""

    view: SpanView
    agent: str | None
    nested: list[SpanView] = []
    #: The agent's reading of the reply (a ``parse`` span beside the call), if traced.
    parse: SpanView | None = None

    @property
    def views(self) -> list[SpanView]:
        """The outer view first, then the nested ones."""
        return [self.view, *self.nested]


class ToolStep(Struct):
    """One tool execution span, the agent that ran it, and the tool spans inside it.

    Those are the same call recorded again by the layers under the tool (an MCP SDK's
    client and server spans), or tools the tool called: never calls of their own.
    """

    view: SpanView
    agent: str | None
    nested: list[SpanRecord] = []


class AgentRun(Struct):
    """The spans of one agent run, sorted into steps (in tree order; sort by start later)."""

    root: SpanRecord
    #: The tool span this run was called from, for agents used as tools (else None).
    parent_tool: SpanRecord | None = None
    spans: list[SpanRecord] = []
    llm_steps: list[LlmStep] = []
    tool_steps: list[ToolStep] = []
    agent_views: list[SpanView] = []
    agents: list[str] = []
    #: Retrieval spans outside tools (a retriever's own nested spans included), in tree
    #: order: what they found is context the run's model was given.
    retrievals: list[SpanView] = []


class ModelReply(Struct):
    """One model response of the run, with the agent that produced it."""

    agent: str | None
    message: Message
    source: str
    #: Index of the model-call step it came from; None when read from a run history.
    step: int | None = None
    #: For history responses: the tool results that follow it in the history.
    results: list[ToolResultPart] | None = None


class Execution(Struct):
    """What one tool-execution span says, and whether a call was joined to it yet."""

    name: str
    call_id: str | None
    args: JsonValue
    result: JsonValue
    error: str | None
    agent: str | None
    span: SpanRecord
    used: bool = False
