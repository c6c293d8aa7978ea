"""Pydantic models of ADK's eval data (``*.evalset.json``), mirroring google-adk 2.13.

Only this module, :mod:`tracescore.goldens.evalset` and :mod:`tracescore.goldens.fastpath`
see pydantic; everything past the loader works on :class:`tracescore.model.Invocation` and
the golden dataclasses. The fast path reads the field names and aliases from these models:
a field added here is known there too (its checks in ``fastpath`` need adding by hand).

Validation mirrors ADK's own models (``google/adk/evaluation/eval_set.py``,
``eval_case.py``, ``eval_rubrics.py``, ``conversation_scenarios.py``, ``app_details.py`` and
``google.genai.types``):

* ``EvalSet`` is a plain pydantic model: snake_case keys only, unknown keys ignored.
* Everything below it accepts snake_case and camelCase keys and rejects unknown keys,
  except ``EvalCase`` and ``SessionInput`` (extras kept) and ``InvocationEvent`` (extras
  ignored: the ``adk web`` editor writes UI-only indices there).
* ``Part`` knows every field of ``google.genai.types.Part``; the ones tracescore does not
  read are accepted as any JSON value, so files written by ADK always load.
* ``intermediate_data`` is ``IntermediateData`` or ``InvocationEvents``; the presence of
  an ``invocation_events`` key decides which (ADK tries both; the outcome is the same,
  our error messages are shorter).

The model class names are ADK's; error locations use them to find the allowed keys.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator
from pydantic.alias_generators import to_camel

__all__ = [
    "AgentDetails",
    "AppDetails",
    "Content",
    "ConversationScenario",
    "EvalCase",
    "EvalSet",
    "FunctionCall",
    "FunctionResponse",
    "IntermediateData",
    "Invocation",
    "InvocationEvent",
    "InvocationEvents",
    "OldFormatToolUse",
    "OldFormatTurn",
    "OldFormatAgentResponse",
    "Part",
    "Rubric",
    "RubricContent",
    "SessionInput",
]


class _EvalModel(BaseModel):
    """ADK's ``EvalBaseModel``: camelCase aliases, snake_case names, unknown keys rejected."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
    )


class FunctionCall(_EvalModel):
    """``google.genai.types.FunctionCall``."""

    id: str | None = None
    args: dict[str, Any] | None = None
    name: str | None = None
    partial_args: list[Any] | None = None
    will_continue: bool | None = None


class FunctionResponse(_EvalModel):
    """``google.genai.types.FunctionResponse``."""

    will_continue: bool | None = None
    scheduling: Any = None
    parts: list[Any] | None = None
    id: str | None = None
    name: str | None = None
    response: dict[str, Any] | None = None


class Part(_EvalModel):
    """``google.genai.types.Part``: text, thought flag, function call or response, ...."""

    text: str | None = None
    thought: bool | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    # Known to google-genai, not read by tracescore: accepted as any JSON value.
    media_resolution: Any = None
    code_execution_result: Any = None
    executable_code: Any = None
    file_data: Any = None
    inline_data: Any = None
    thought_signature: Any = None
    video_metadata: Any = None
    tool_call: Any = None
    tool_response: Any = None
    part_metadata: dict[str, Any] | None = None
    audio_transcription: Any = None
    media_processing: Any = None
    speech_metadata: Any = None


class Content(_EvalModel):
    """``google.genai.types.Content``."""

    parts: list[Part] | None = None
    role: str | None = None

    def text(self) -> str:
        r"""The parts' non-empty texts joined with ``"\n"``, as ADK reads a Content."""
        return "\n".join(p.text for p in self.parts or () if p.text)


class RubricContent(_EvalModel):
    """What a rubric checks."""

    text_property: str | None = None


class Rubric(_EvalModel):
    """One rubric; ``type`` is e.g. ``FINAL_RESPONSE_QUALITY`` or ``TOOL_USE_QUALITY``."""

    rubric_id: str
    rubric_content: RubricContent
    description: str | None = None
    type: str | None = None


class IntermediateData(_EvalModel):
    """Tool uses, tool responses and intermediate ``(author, parts)`` responses."""

    tool_uses: list[FunctionCall] = []
    tool_responses: list[FunctionResponse] = []
    intermediate_responses: list[tuple[str, list[Part]]] = []


class InvocationEvent(_EvalModel):
    """One event of an invocation (extra keys ignored, as ADK does)."""

    model_config = ConfigDict(extra="ignore")

    author: str
    content: Content | None = None
    grounding_metadata: Any = None
    usage_metadata: Any = None
    model_version: str | None = None


class InvocationEvents(_EvalModel):
    """The events of an invocation, in order."""

    invocation_events: list[InvocationEvent] = Field(default_factory=list)


def _intermediate_kind(value: Any) -> str:
    if isinstance(value, dict) and ("invocation_events" in value or "invocationEvents" in value):
        return "InvocationEvents"
    if isinstance(value, InvocationEvents):
        return "InvocationEvents"
    return "IntermediateData"


IntermediateDataType = Annotated[
    Annotated[IntermediateData, Tag("IntermediateData")]
    | Annotated[InvocationEvents, Tag("InvocationEvents")],
    Discriminator(_intermediate_kind),
]


class AgentDetails(_EvalModel):
    """One agent of the app: name, instructions, tool declarations."""

    name: str
    instructions: str = ""
    tool_declarations: list[Any] = Field(default_factory=list)


class AppDetails(_EvalModel):
    """The agents of the app, by name.

    ADK's ``EvaluationGenerator`` records them on each actual invocation, and its judges
    are shown every agent's instructions and tool declarations from here.
    """

    agent_details: dict[str, AgentDetails] = Field(default_factory=dict)

    def instructions(self) -> str | None:
        """The agents' instructions; None when no agent has any.

        One agent's are its text; several agents' are shown as ADK's judges see them:
        ``name:`` then the text, a blank line between agents.
        """
        given = [(name, a.instructions) for name, a in self.agent_details.items() if a.instructions]
        if not given:
            return None
        if len(self.agent_details) == 1:
            return given[0][1]
        return "\n\n".join(f"{name}:\n{text}" for name, text in given)

    def tool_declarations(self) -> dict[str, list[Any]] | None:
        """Each agent's tool declarations, by agent name; None when no agent has any."""
        tools = {
            n: a.tool_declarations for n, a in self.agent_details.items() if a.tool_declarations
        }
        return tools or None


#: Largest time in seconds (either sign) that fits the trace model's int64 nanoseconds
#: (the year 2262 as a timestamp).
MAX_SECONDS = 9.2e9
#: A creation time or duration in seconds the trace model can hold (finite, in range).
Seconds = Annotated[float, Field(ge=-MAX_SECONDS, le=MAX_SECONDS, allow_inf_nan=False)]


class Invocation(_EvalModel):
    """One user turn and the expected agent behaviour."""

    invocation_id: str = ""
    user_content: Content
    final_response: Content | None = None
    intermediate_data: IntermediateDataType | None = None
    creation_timestamp: Seconds = 0.0
    duration: Seconds | None = None
    model_duration: float | None = None
    tool_duration: float | None = None
    rubrics: list[Rubric] | None = None
    app_details: AppDetails | None = None


class SessionInput(_EvalModel):
    """How the session starts (extra keys kept, as ADK does)."""

    model_config = ConfigDict(extra="allow")

    app_name: str
    user_id: str
    session_id: str | None = None
    state: dict[str, Any] = Field(default_factory=dict)


class ConversationScenario(_EvalModel):
    """A scenario for a simulated user; ``user_persona`` is a persona id or object."""

    starting_prompt: str
    conversation_plan: str
    user_persona: str | dict[str, Any] | None = None


class EvalCase(_EvalModel):
    """One case: a static ``conversation`` xor a ``conversation_scenario`` (extras kept)."""

    model_config = ConfigDict(extra="allow")

    eval_id: str
    conversation: list[Invocation] | None = None
    conversation_scenario: ConversationScenario | None = None
    session_input: SessionInput | None = None
    creation_timestamp: float = 0.0
    rubrics: list[Rubric] | None = None
    final_session_state: dict[str, Any] | None = Field(default_factory=dict)

    @model_validator(mode="after")
    def _conversation_xor_scenario(self) -> EvalCase:
        if (self.conversation is None) == (self.conversation_scenario is None):
            raise ValueError(
                "exactly one of 'conversation' and 'conversation_scenario' must be given"
            )
        return self


class EvalSet(BaseModel):
    """The file: ``eval_set_id`` and ``eval_cases`` (snake_case only; unknown keys ignored)."""

    model_config = ConfigDict(frozen=True)

    eval_set_id: str
    name: str | None = None
    description: str | None = None
    eval_cases: list[EvalCase]
    creation_timestamp: float = 0.0


# -- the old ``*.test.json`` format: a JSON list of turns, the whole file is one case ------


class _OldModel(BaseModel):
    # ADK reads these with dict lookups: unknown keys (e.g. ``mock_tool_output``) are ignored.
    model_config = ConfigDict(extra="ignore", frozen=True)


class OldFormatToolUse(_OldModel):
    """``{"tool_name", "tool_input"}``."""

    tool_name: str
    tool_input: dict[str, Any] | None


class OldFormatAgentResponse(_OldModel):
    """``{"author", "text"}``."""

    author: str
    text: str


class OldFormatTurn(_OldModel):
    """One turn of a ``*.test.json`` file."""

    query: str
    expected_tool_use: list[OldFormatToolUse] = []
    expected_intermediate_agent_responses: list[OldFormatAgentResponse] = []
    reference: str = ""
