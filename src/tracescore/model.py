"""The invocation: one agent run rebuilt from telemetry, the unit every criterion scores.

These dataclasses are what the pipeline passes between stages; pydantic appears only
at the edges (evalset files, config, receiver input). They are frozen: a criterion
can never change what another criterion sees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from tracescore.conventions.messages import JsonValue
from tracescore.records import quick_init

__all__ = [
    "AgentGrounding",
    "AgentText",
    "Conversation",
    "Invocation",
    "InvocationStatus",
    "NotEvaluableReason",
    "TokenUsage",
    "ToolCall",
    "group_conversations",
]

InvocationStatus = Literal["ok", "not_evaluable"]

#: Why an invocation cannot be scored. Each has a human explanation in ``Invocation.reason``.
NotEvaluableReason = Literal[
    "content_not_captured",
    "no_model_call",
    "no_user_message",
    "incomplete_trace",
    "paused",
]


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One tool call the model made, joined with its execution when telemetry has it.

    Attributes:
        name: Tool name as the model called it.
        args: Arguments as the model wrote them (usually a dict; ``None`` when absent).
        id: The call id (model's id, else the execution span's ``gen_ai.tool.call.id``).
        result: The tool's result, when captured.
        error: Error type or message when the execution failed, else None.
        agent: The agent that called the tool.
        start_ns: Start of the execution span, when there is one.
        end_ns: End of the execution span, when there is one.
        span_id: The execution span id, when there is one.

    """

    name: str
    args: JsonValue = None
    id: str | None = None
    result: JsonValue = None
    error: str | None = None
    agent: str | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    span_id: str | None = None


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentText:
    """Natural-language text an agent produced before the final response."""

    author: str
    text: str


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentGrounding:
    """What a model's built-in grounding (Gemini's Google Search) based a reply on.

    ``metadata`` is the reply's ``grounding_metadata`` as written (queries, the web
    chunks found, which parts of the text each supports), ``author`` the agent whose
    model call it was: what ADK's judges are shown per event.
    """

    author: str
    metadata: JsonValue


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class TokenUsage:
    """Token totals over an invocation's model calls."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Invocation:
    """One agent run: a user turn, what the agent did, and what it answered.

    Attributes:
        trace_id: Hex trace id the run was read from.
        invocation_id: Framework invocation id (ADK ``invocation_id``), else
            ``<trace_id>:<root span id>``.
        conversation_id: Session/conversation id shared by the turns of one conversation.
        agent: Name of the root agent, when known.
        agents: Agents in the order they were first visited.
        user_content: The user's message text.
        tool_calls: Tool calls in the order the model made them.
        intermediate_responses: Text produced before the final response, with its author.
        final_response: The final response text, or None when the run produced none.
        usage: Token totals; ``inference_calls`` counts model calls.
        framework_replies: Replies the agent framework gave in the model's place (an
            ADK ``before_model_callback``'s): steps of the run, but not model calls, so
            a turn with some and no model call made zero model calls (not an unknown
            number).
        start_ns: Start of the run's root span.
        end_ns: End of the run's root span.
        status: ``ok`` or ``not_evaluable``.
        reason_code: Machine-readable reason when not evaluable.
        reason: Human explanation (names the switch that enables capture, when relevant).
        warnings: Problems met while rebuilding (truncated payloads, dropped records...).
        provenance: Field name → where it was read (attribute or event name).
        system_instructions: Developer instructions of the root agent, when captured.
        tool_definitions: Tool declarations offered to the model, when captured.
        retrieved: Texts of the documents the run's retrievals found (a RAG retriever's),
            each once, in the order found: context its model was given. Read, like
            ``system_instructions``, only when a criterion needs the model's context.
        grounding: The grounding metadata of the run's model replies that have any, in
            order (read, like ``retrieved``, only when the model's context is needed).
        tags: ``tracescore.*`` attributes found on the run (e.g. golden eval ids).
        root_span_id: The span the invocation was rooted at.
        error: Why the run failed (a model call's or the root span's error), if it did.
        parent_tool_span_id: For an agent run called as a tool, that tool's span.
        response_ids: Responses API ids of the run's model calls (``resp_...``), which
            later turns of a ``previous_response_id`` chain point at
            (:mod:`tracescore.response_chains`); empty for other APIs.

    """

    trace_id: str
    invocation_id: str
    conversation_id: str | None = None
    agent: str | None = None
    agents: tuple[str, ...] = ()
    user_content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    intermediate_responses: tuple[AgentText, ...] = ()
    final_response: str | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    inference_calls: int = 0
    framework_replies: int = 0
    start_ns: int = 0
    end_ns: int = 0
    status: InvocationStatus = "ok"
    reason_code: NotEvaluableReason | None = None
    reason: str | None = None
    warnings: tuple[str, ...] = ()
    provenance: Mapping[str, str] = field(default_factory=dict)
    system_instructions: str | None = None
    tool_definitions: JsonValue = None
    retrieved: tuple[str, ...] = ()
    grounding: tuple[AgentGrounding, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)
    root_span_id: str | None = None
    error: str | None = None
    parent_tool_span_id: str | None = None
    response_ids: tuple[str, ...] = ()

    @property
    def duration_s(self) -> float:
        """Wall-clock duration of the run in seconds."""
        return max(0, self.end_ns - self.start_ns) / 1e9


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    """Invocations sharing one conversation id, in the order they started."""

    conversation_id: str
    invocations: tuple[Invocation, ...]


def _start_order(inv: Invocation) -> tuple[int, str, str]:
    # Equal starts (clocks with millisecond precision) are ordered by trace and root span,
    # so that the order never depends on the one the invocations came in (a parallel
    # import's differs near its cuts). Invocations without trace ids (recorded runs of an
    # evalset) tie on all three and keep the order they were given in.
    return inv.start_ns, inv.trace_id, inv.root_span_id or ""


def group_conversations(invocations: Sequence[Invocation]) -> list[Conversation]:
    """Group invocations by conversation id (each id-less one alone), ordered by start.

    Conversations are ordered by their first invocation's start time. Equal start times
    are ordered by trace id, then root span id; what still ties keeps the given order.
    A turn whose conversation id is a response another turn made (a Responses API
    ``previous_response_id`` chain) joins that turn's conversation: it comes back as a
    copy with the chain's id (:func:`_chained`).
    """
    invocations = _chained(invocations)
    groups: dict[str, list[Invocation]] = {}
    for inv in invocations:
        key = inv.conversation_id or f"trace-{inv.trace_id}-{inv.root_span_id}"
        groups.setdefault(key, []).append(inv)
    conversations = [
        Conversation(conversation_id=key, invocations=tuple(sorted(invs, key=_start_order)))
        for key, invs in groups.items()
    ]
    conversations.sort(key=lambda c: _start_order(c.invocations[0]))
    return conversations


def _chained(invocations: Sequence[Invocation]) -> Sequence[Invocation]:
    """``invocations`` with each turn of a response chain under the chain's id.

    Earlier turns first: a turn continuing a response of an earlier one takes that one's
    conversation id; a chain's first turn without an id of its own (one model call, so no
    pointer at all) takes its first response's id.
    """
    if not any(inv.response_ids for inv in invocations):
        return invocations
    made: dict[str, int] = {}  # response id -> the position of the turn that made it
    out: list[Invocation] = []
    for turn in sorted(invocations, key=_start_order):
        at = made.get(turn.conversation_id) if turn.conversation_id else None
        joined = turn
        if at is not None:
            first = out[at]
            if first.conversation_id is None:
                first = out[at] = replace(first, conversation_id=first.response_ids[0])
            if turn.conversation_id != first.conversation_id:
                joined = replace(turn, conversation_id=first.conversation_id)
        for response_id in turn.response_ids:
            made.setdefault(response_id, len(out))
        out.append(joined)
    return out
