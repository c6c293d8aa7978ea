"""An ADK evalset as msgspec structs: the strict subset :mod:`.typed` decodes.

They live apart from the conversion because it is compiled with mypyc (``hatch_build.py``),
which drops a class statement's keywords: compiled, these structs would lose
``forbid_unknown_fields``, and a document outside the subset could decode. This module
stays interpreted; a test holds every compiled module to class statements without
keywords.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

__all__ = [
    "NULL",
    "Call",
    "Case",
    "Content",
    "Data",
    "EvalSet",
    "Part",
    "Response",
    "Session",
    "Turn",
]

# A field typed ``None`` takes only ``null``: written out, an unused field is null.

#: A field left out, as JSON text.
NULL: Final = msgspec.Raw(b"null")


class Call(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """ADK's ``Call``, as ADK writes it."""

    id: str | None = None
    name: str | None = None
    args: dict[str, Any] | None = None
    will_continue: bool | None = None
    partial_args: None = None


class Response(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """ADK's ``Response``, as ADK writes it.

    ``response``, a JSON object or null, stays undecoded JSON text (a view of the file's
    bytes): a replay whose criteria read no golden tool results does not build them (39%
    of the benchmark's evalset, 40 MB of objects); :mod:`.typed` checks or decodes it.
    """

    id: str | None = None
    name: str | None = None
    response: msgspec.Raw = NULL
    will_continue: bool | None = None
    scheduling: None = None
    parts: None = None


class Part(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """ADK's ``Part``, as ADK writes it."""

    text: str | None = None
    thought: bool | None = None
    function_call: Call | None = None
    function_response: Response | None = None
    part_metadata: None = None
    media_resolution: None = None
    code_execution_result: None = None
    executable_code: None = None
    file_data: None = None
    inline_data: None = None
    thought_signature: None = None
    video_metadata: None = None
    tool_call: None = None
    tool_response: None = None
    audio_transcription: None = None
    media_processing: None = None
    speech_metadata: None = None


class Content(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """ADK's ``Content``, as ADK writes it."""

    role: str | None = None
    parts: list[Part] | None = None


class Data(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """ADK's ``Data``, as ADK writes it."""

    tool_uses: list[Call] = []
    tool_responses: list[Response] = []
    intermediate_responses: list[tuple[str, list[Part]]] = []


class Turn(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """ADK's ``Turn``, as ADK writes it."""

    user_content: Content
    invocation_id: str = ""
    final_response: Content | None = None
    intermediate_data: Data | None = None
    creation_timestamp: float = 0.0
    duration: float | None = None
    model_duration: float | None = None
    tool_duration: float | None = None
    rubrics: None = None
    app_details: None = None


class Session(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """ADK's ``Session``, as ADK writes it."""

    app_name: str
    user_id: str
    session_id: str | None = None
    state: dict[str, Any] = {}


class Case(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """ADK's ``Case``, as ADK writes it."""

    eval_id: str
    conversation: list[Turn]
    session_input: Session | None = None
    creation_timestamp: float = 0.0
    final_session_state: dict[str, Any] | None = {}
    conversation_scenario: None = None
    rubrics: None = None


class EvalSet(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """ADK's ``EvalSet``, as ADK writes it."""

    eval_set_id: str
    eval_cases: list[Case]
    name: str | None = None
    description: str | None = None
    creation_timestamp: float = 0.0
