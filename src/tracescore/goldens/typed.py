"""Typed path of the evalset loader: the file's bytes straight into golden cases.

Why: on a large evalset, parsing into dicts and walking them (:mod:`.fastpath`) is most
of a replay's goldens load; msgspec decodes the JSON into the typed structs of
:mod:`.typed_structs` in one C pass, checking each value's JSON type as it goes, and only
the conversion to golden cases runs in Python (the 200k-span benchmark's 33 MB evalset:
~0.2 s against ~0.36 s).

How it stays exact: the structs describe a *strict subset* of what the schema accepts:
the way ADK writes evalsets (snake_case keys, exact JSON types, no rubrics, scenarios,
app details, invocation events, session state or extra keys, and only the ``Part``
fields ADK's text and tool turns use). A document outside it fails to decode, and the
caller goes on with :mod:`.fastpath` and then the pydantic models, which stay the
reference (they report every error). Within the subset, the conversion is the
fast path's, rule for rule; the tests hold all paths to the same outcome.

One difference is accepted: an integer beyond 64 bits inside tool arguments or
responses stays an ``int`` here, where ``orjson`` reads it as a ``float``.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from tracescore.conventions.messages import JsonValue
from tracescore.goldens import schema
from tracescore.goldens.cases import GoldenCase
from tracescore.goldens.fastpath import Unsupported, join_calls
from tracescore.goldens.typed_structs import Case, EvalSet, Part, Turn
from tracescore.model import AgentText, Invocation

__all__ = ["golden_cases"]


_DECODER = msgspec.json.Decoder(EvalSet)
#: A tool response as the schema takes it, from the JSON text the structs keep.
_RESPONSE: Final = msgspec.json.Decoder(dict[str, Any] | None)
_OPEN_BRACE: Final = 0x7B


def _response(raw: msgspec.Raw, tool_results: bool) -> dict[str, Any] | None:
    """A tool response (``None`` unless ``tool_results``), checked the same either way.

    Raises:
        Unsupported: It is neither a JSON object nor null (msgspec's ValidationError
            when decoded, which the caller turns into the same).

    """
    if tool_results:
        value: dict[str, Any] | None = _RESPONSE.decode(raw)
        return value
    view = memoryview(raw)  # msgspec keeps no whitespace around the value
    if view[0] != _OPEN_BRACE and view.tobytes() != b"null":
        raise Unsupported
    return None


def _text(parts: list[Part] | None) -> str:
    if parts is None:
        return ""
    return "\n".join([p.text for p in parts if p.text])


def _in_range(seconds: float | None) -> bool:
    return seconds is None or -schema.MAX_SECONDS <= seconds <= schema.MAX_SECONDS


def _turn(
    turn: Turn, eval_set_id: str, eval_id: str, agent: str | None, i: int, tool_results: bool
) -> Invocation:
    start, duration = turn.creation_timestamp, turn.duration
    if not (_in_range(start) and _in_range(duration)):
        raise Unsupported  # pydantic's Seconds names the field
    calls: list[tuple[str | None, str | None, dict[str, Any] | None]] = []
    responses: list[tuple[str | None, str | None, dict[str, Any] | None]] = []
    texts: list[AgentText] = []
    data = turn.intermediate_data
    if data is not None:
        calls = [(c.id, c.name, c.args) for c in data.tool_uses]
        responses = [
            (r.id, r.name, _response(r.response, tool_results)) for r in data.tool_responses
        ]
        for author, parts in data.intermediate_responses:
            text = _text(parts)
            if text:
                texts.append(AgentText(author=author, text=text))
    final = turn.final_response
    start_ns = int(start * 1e9)
    return Invocation(
        trace_id="",
        invocation_id=turn.invocation_id or f"{eval_set_id}/{eval_id}/{i}",
        conversation_id=eval_id,
        agent=agent,
        user_content=_text(turn.user_content.parts),
        tool_calls=join_calls(calls, responses),
        intermediate_responses=tuple(texts),
        final_response=None if final is None else _text(final.parts),
        start_ns=start_ns,
        end_ns=start_ns + int((duration or 0.0) * 1e9),
    )


def _case(case: Case, eval_set_id: str, tool_results: bool) -> GoldenCase:
    session = case.session_input
    agent = None if session is None else session.app_name
    turns = tuple(
        _turn(turn, eval_set_id, case.eval_id, agent, i, tool_results)
        for i, turn in enumerate(case.conversation)
    )
    session_input: dict[str, JsonValue] | None = None
    if session is not None:
        if session.state:
            raise Unsupported  # JSON dumping of a state's values: left to pydantic
        # SessionInput.model_dump(mode="json", exclude_none=True)
        dumped: dict[str, JsonValue] = {"app_name": session.app_name, "user_id": session.user_id}
        if session.session_id is not None:
            dumped["session_id"] = session.session_id
        dumped["state"] = {}
        session_input = dumped
    return GoldenCase(
        eval_set_id=eval_set_id,
        eval_id=case.eval_id,
        turns=turns,
        rubrics=(),
        turn_rubrics=((),) * len(turns),
        scenario=None,
        session_input=session_input,
    )


def golden_cases(
    text: bytes | str, *, tool_results: bool = True
) -> tuple[str, str | None, str | None, tuple[GoldenCase, ...]]:
    """The eval set id, name, description and cases of an evalset file's content.

    Without ``tool_results``, every golden tool call's ``result`` is None: the responses
    are checked (an object or null) but not built.

    Raises:
        Unsupported: The document is outside the subset (maybe invalid, maybe not JSON):
            the caller reads it the other ways.

    """
    try:
        evalset = _DECODER.decode(text)
        return (
            evalset.eval_set_id,
            evalset.name,
            evalset.description,
            tuple(_case(case, evalset.eval_set_id, tool_results) for case in evalset.eval_cases),
        )
    # Not UTF-8 is a ValueError; tool arguments nested deeper than msgspec recurses (the
    # JSON reader after it takes 1024 levels) a RecursionError.
    except (msgspec.DecodeError, ValueError, OverflowError, RecursionError):
        raise Unsupported from None
