"""Fast path of the evalset loader: parsed JSON straight to golden cases, no pydantic models.

Why: validating a large evalset with the pydantic models of :mod:`~tracescore.goldens.schema`
builds a model (an instance, its ``__dict__`` and its fields-set) per JSON object, several
times the objects of the parsed document, and then the conversion reads them back. On the
200k-span benchmark's evalset (33 MB, 13k turns) that was ~1 s of CPU plus ~1.5 s of
cyclic garbage collection walking those short-lived objects (under ``bulk_gc``), most of
``tracescore replay``'s overhead over ``tracescore import``; this path takes ~0.7 s, about
a third of it ``orjson.loads`` and a fifth building the frozen dataclasses.

How it stays exact: :func:`golden_cases` checks the parsed document against a
*conservative subset* of what the schema accepts (each value's exact JSON type, keys in
snake_case or camelCase but not both for one field, no unknown key where the schema
forbids them) and builds the golden cases as it goes, with the conversion rules of
:mod:`tracescore.goldens.evalset`. Anything outside the subset raises :class:`Unsupported`,
and the caller then runs the pydantic path, which stays the reference: it either accepts
the document (then with the same result: pydantic's lax mode, e.g. ``"1.5"`` for a float,
is only ever handled there) or raises the located error. So this module never reports an
error itself, and a malformed evalset gives the same message as before. Rare sub-objects
(rubrics, app details, scenarios, unusual session inputs) are validated by their pydantic
models here, any failure again meaning :class:`Unsupported`.

The tests check that both paths give equal golden sets (``tests/goldens``).
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Any, NoReturn, cast

from pydantic import BaseModel, TypeAdapter, ValidationError

from tracescore.conventions.messages import JsonValue
from tracescore.goldens import schema
from tracescore.goldens.cases import GoldenCase, GoldenRubric, GoldenScenario, golden_rubrics
from tracescore.model import AgentGrounding, AgentText, Invocation, ToolCall

__all__ = ["Unsupported", "golden_cases", "join_calls"]


class Unsupported(Exception):
    """The document is outside the fast path's subset: validate it with pydantic instead."""


def _unsupported() -> NoReturn:
    raise Unsupported


class _Keys:
    """The keys a model accepts: snake_case names, camelCase aliases, whether others are."""

    __slots__ = ("alias_of", "extra_ok", "names")

    def __init__(self, model: type[BaseModel], checked: str) -> None:
        """Keys of ``model``, whose fields are all ``checked`` (read or type-checked) here."""
        self.names = frozenset(model.model_fields)
        if self.names != frozenset(checked.split()):
            # A field added to (or removed from) the schema: the checks below must follow,
            # else this path could accept a value the model rejects.
            raise RuntimeError(f"goldens.fastpath does not check the fields of {model.__name__}")
        self.alias_of = {
            info.alias: name
            for name, info in model.model_fields.items()
            if info.alias is not None and info.alias != name
        }
        # "allow" (kept as written) and "ignore": either way nothing here reads them.
        self.extra_ok = model.model_config.get("extra") in ("allow", "ignore")


def _fields(value: object, keys: _Keys) -> dict[str, Any]:
    """``value`` as a dict keyed by field name (itself when already snake_case)."""
    if type(value) is not dict:
        _unsupported()
    if value.keys() <= keys.names:
        return value  # the usual case: no copy
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = keys.alias_of.get(key) or (key if key in keys.names else None)
        if name is None:
            if keys.extra_ok:
                continue
            _unsupported()
        if name in out:  # both spellings of one field: pydantic decides which wins
            _unsupported()
        out[name] = item
    return out


# The fields each check below handles ("any JSON value" ones included, unchecked).
_PART = _Keys(
    schema.Part,
    "text thought function_call function_response part_metadata media_resolution"
    " code_execution_result executable_code file_data inline_data thought_signature"
    " video_metadata tool_call tool_response audio_transcription media_processing"
    " speech_metadata",
)
_CONTENT = _Keys(schema.Content, "parts role")
_CALL = _Keys(schema.FunctionCall, "id args name partial_args will_continue")
_RESPONSE = _Keys(schema.FunctionResponse, "will_continue scheduling parts id name response")
_INVOCATION = _Keys(
    schema.Invocation,
    "invocation_id user_content final_response intermediate_data creation_timestamp"
    " duration model_duration tool_duration rubrics app_details",
)
_DATA = _Keys(schema.IntermediateData, "tool_uses tool_responses intermediate_responses")
_EVENTS = _Keys(schema.InvocationEvents, "invocation_events")
_EVENT = _Keys(
    schema.InvocationEvent, "author content grounding_metadata usage_metadata model_version"
)
_CASE = _Keys(
    schema.EvalCase,
    "eval_id conversation conversation_scenario session_input creation_timestamp rubrics"
    " final_session_state",
)
_SESSION = _Keys(schema.SessionInput, "app_name user_id session_id state")
# Read by hand in golden_cases (no aliases there); constructed for the check only.
_Keys(schema.EvalSet, "eval_set_id name description eval_cases creation_timestamp")
_RUBRICS: TypeAdapter[list[schema.Rubric]] = TypeAdapter(list[schema.Rubric])


def _opt_str(value: object) -> str | None:
    if value is None or type(value) is str:
        return value
    _unsupported()


def _opt_float(value: object) -> float | None:
    # bool is not accepted here (pydantic's lax mode reads it as 0.0/1.0): exact types only.
    if value is None or type(value) is float:
        return value
    if type(value) is int:
        return float(value)
    _unsupported()


def _check_opt(value: object, kind: type) -> None:
    if value is not None and type(value) is not kind:
        _unsupported()


# -- google.genai types ----------------------------------------------------------------

# A call or response is kept as (id, name, args or response), checked.
_Call = tuple[str | None, str | None, dict[str, Any] | None]

# The keys ADK writes for a tool use / response / text part: checked inline, no copy.
_CALL_USUAL = frozenset({"id", "name", "args"})
_RESPONSE_USUAL = frozenset({"id", "name", "response"})


def _call(value: object, payload: str) -> _Call:
    """Check a ``FunctionCall`` (``payload="args"``) or ``FunctionResponse`` (``"response"``)."""
    if (
        type(value) is dict
        and value.keys() <= (_CALL_USUAL if payload == "args" else _RESPONSE_USUAL)
        and ((call_id := value.get("id")) is None or type(call_id) is str)
        and ((name := value.get("name")) is None or type(name) is str)
        and ((data := value.get(payload)) is None or type(data) is dict)
    ):
        return call_id, name, data
    if payload == "args":
        call = _fields(value, _CALL)
        _check_opt(call.get("args"), dict)
        _check_opt(call.get("partial_args"), list)
    else:
        call = _fields(value, _RESPONSE)
        _check_opt(call.get("response"), dict)
        _check_opt(call.get("parts"), list)
    _check_opt(call.get("will_continue"), bool)
    return _opt_str(call.get("id")), _opt_str(call.get("name")), call.get(payload)


def _parts_text(
    parts: object, calls: list[_Call] | None = None, responses: list[_Call] | None = None
) -> str:
    r"""Check a ``list[Part]``; its non-empty texts joined with ``"\n"``.

    Function calls and responses found in the parts go to ``calls`` / ``responses`` when
    given (the events of an invocation), else are only checked.
    """
    if type(parts) is not list:
        _unsupported()
    texts: list[str] = []
    for raw in parts:
        if type(raw) is dict and len(raw) == 1 and type(text := raw.get("text")) is str:
            if text:  # a text-only part, the bulk of a file
                texts.append(text)
            continue
        part = _fields(raw, _PART)
        text = _opt_str(part.get("text"))
        if text:
            texts.append(text)
        _check_opt(part.get("thought"), bool)
        _check_opt(part.get("part_metadata"), dict)
        call, resp = part.get("function_call"), part.get("function_response")
        if call is not None:
            checked = _call(call, "args")
            if calls is not None:
                calls.append(checked)
        if resp is not None:
            checked = _call(resp, "response")
            if responses is not None:
                responses.append(checked)
    return "\n".join(texts)


def _content_text(
    value: object, calls: list[_Call] | None = None, responses: list[_Call] | None = None
) -> str:
    """Check a ``Content``; its text as ``schema.Content.text`` reads it."""
    if (
        type(value) is dict
        and len(value) == 2
        and type(value.get("role")) is str
        and type(parts := value.get("parts")) is list
        and len(parts) == 1
        and type(part := parts[0]) is dict
        and len(part) == 1
        and type(text := part.get("text")) is str
    ):
        return text  # {"role": ..., "parts": [{"text": ...}]}: most contents of a file
    content = _fields(value, _CONTENT)
    _opt_str(content.get("role"))
    parts = content.get("parts")
    return "" if parts is None else _parts_text(parts, calls, responses)


def join_calls(calls: list[_Call], responses: list[_Call]) -> tuple[ToolCall, ...]:
    """As ``evalset._join_responses``: by id, else the next unused response of that name."""
    if not calls:
        return ()
    ids = [c[0] for c in calls]
    if [r[0] for r in responses] == ids and all(ids) and len(set(ids)) == len(ids):
        # Distinct ids, each response next to its call (what ADK writes): the general
        # rule below would pair them the same way.
        return tuple(
            [
                ToolCall(name=c[1] or "", args=c[2], id=c[0], result=r[2])
                for c, r in zip(calls, responses)
            ]
        )
    call_ids = {i for i in ids if i}
    by_id: dict[str, int] = {}
    by_name: dict[str | None, deque[int]] = defaultdict(deque)
    for i, (resp_id, resp_name, _) in enumerate(responses):
        if resp_id and resp_id in call_ids:
            by_id.setdefault(resp_id, i)
        else:
            by_name[resp_name].append(i)
    out = []
    for call_id, name, args in calls:
        index = by_id.pop(call_id, None) if call_id else None
        if index is None and by_name[name]:
            index = by_name[name].popleft()
        result = responses[index][2] if index is not None else None
        out.append(ToolCall(name=name or "", args=args, id=call_id, result=result))
    return tuple(out)


# -- eval case -------------------------------------------------------------------------


def _intermediate(
    value: object, calls: list[_Call], responses: list[_Call], grounding: list[AgentGrounding]
) -> list[AgentText]:
    """Check ``intermediate_data``; fill ``calls``/``responses``/``grounding``, return the texts."""
    texts: list[AgentText] = []
    if type(value) is not dict:
        _unsupported()
    # The discriminator of schema.IntermediateDataType, on the keys as written.
    if "invocation_events" in value or "invocationEvents" in value:
        for raw in _list(_fields(value, _EVENTS).get("invocation_events", [])):
            event = _fields(raw, _EVENT)
            author = event.get("author")
            if type(author) is not str:
                _unsupported()
            _opt_str(event.get("model_version"))
            metadata = event.get("grounding_metadata")
            if metadata:
                grounding.append(AgentGrounding(author=author, metadata=metadata))
            content = event.get("content")
            if content is not None:
                text = _content_text(content, calls, responses)
                if text:
                    texts.append(AgentText(author=author, text=text))
        return texts
    data = _fields(value, _DATA)
    calls.extend([_call(raw, "args") for raw in _list(data.get("tool_uses", []))])
    responses.extend([_call(raw, "response") for raw in _list(data.get("tool_responses", []))])
    for item in _list(data.get("intermediate_responses", [])):
        # tuple[str, list[Part]], written as a two-item JSON list.
        if type(item) is not list or len(item) != 2 or type(item[0]) is not str:
            _unsupported()
        text = _parts_text(item[1])
        if text:
            texts.append(AgentText(author=item[0], text=text))
    return texts


def _list(value: object) -> list[Any]:
    if type(value) is not list:
        _unsupported()
    return value


def _rubrics(value: object) -> tuple[GoldenRubric, ...]:
    if value is None:
        return ()
    try:
        rubrics = _RUBRICS.validate_python(value)
    except ValidationError:
        _unsupported()
    return golden_rubrics(rubrics)


def _turn(
    raw: object, *, eval_set_id: str, eval_id: str, agent: str | None, turn: int
) -> tuple[Invocation, tuple[GoldenRubric, ...]]:
    inv = _fields(raw, _INVOCATION)
    invocation_id = inv.get("invocation_id", "")
    if type(invocation_id) is not str or "user_content" not in inv:
        _unsupported()
    start = _opt_float(inv.get("creation_timestamp", 0.0))
    duration = _opt_float(inv.get("duration"))
    if start is None:  # a float, not float | None
        _unsupported()
    # Out of the trace model's range (or NaN): pydantic's Seconds names the field.
    if not -schema.MAX_SECONDS <= start <= schema.MAX_SECONDS or not (
        duration is None or -schema.MAX_SECONDS <= duration <= schema.MAX_SECONDS
    ):
        _unsupported()
    _opt_float(inv.get("model_duration"))
    _opt_float(inv.get("tool_duration"))
    app_details = inv.get("app_details")
    app = None
    if app_details is not None:
        try:
            app = schema.AppDetails.model_validate(app_details)
        except ValidationError:
            _unsupported()
    calls: list[_Call] = []
    responses: list[_Call] = []
    grounding: list[AgentGrounding] = []
    data = inv.get("intermediate_data")
    texts = [] if data is None else _intermediate(data, calls, responses, grounding)
    final = inv.get("final_response")
    start_ns = int(start * 1e9)
    invocation = Invocation(
        trace_id="",
        invocation_id=invocation_id or f"{eval_set_id}/{eval_id}/{turn}",
        conversation_id=eval_id,
        agent=agent,
        user_content=_content_text(inv["user_content"]),
        tool_calls=join_calls(calls, responses),
        intermediate_responses=tuple(texts),
        final_response=None if final is None else _content_text(final),
        start_ns=start_ns,
        end_ns=start_ns + int((duration or 0.0) * 1e9),
        system_instructions=None if app is None else app.instructions(),
        tool_definitions=None if app is None else cast(JsonValue, app.tool_declarations()),
        grounding=tuple(grounding),
    )
    return invocation, _rubrics(inv.get("rubrics"))


def _session_input(value: object) -> tuple[dict[str, JsonValue], str]:
    """``SessionInput.model_dump(mode="json", exclude_none=True)`` of ``value``, app name."""
    if (
        type(value) is dict
        and value.keys() <= _SESSION.names
        and type(app_name := value.get("app_name")) is str
        and type(user_id := value.get("user_id")) is str
        and value.get("state", {}) == {}  # JSON dumping of a state's values: left to pydantic
    ):
        out: dict[str, JsonValue] = {"app_name": app_name, "user_id": user_id}
        session_id = _opt_str(value.get("session_id"))
        if session_id is not None:
            out["session_id"] = session_id
        out["state"] = {}
        return out, app_name
    try:  # camelCase or extra keys, a state: rare, left to the model
        session = schema.SessionInput.model_validate(value)
    except ValidationError:
        _unsupported()
    return session.model_dump(mode="json", exclude_none=True), session.app_name


def _scenario(value: object) -> GoldenScenario:
    try:
        scenario = schema.ConversationScenario.model_validate(value)
    except ValidationError:
        _unsupported()
    return GoldenScenario(
        starting_prompt=scenario.starting_prompt,
        conversation_plan=scenario.conversation_plan,
        user_persona=scenario.user_persona,
    )


def _case(raw: object, eval_set_id: str) -> GoldenCase:
    case = _fields(raw, _CASE)
    eval_id = case.get("eval_id")
    conversation = case.get("conversation")
    scenario = case.get("conversation_scenario")
    if type(eval_id) is not str or (conversation is None) == (scenario is None):
        _unsupported()
    _check_opt(case.get("final_session_state", {}), dict)
    if _opt_float(case.get("creation_timestamp", 0.0)) is None:
        _unsupported()
    raw_session = case.get("session_input")
    session, agent = (None, None) if raw_session is None else _session_input(raw_session)
    turns: list[Invocation] = []
    turn_rubrics: list[tuple[GoldenRubric, ...]] = []
    for i, inv in enumerate(_list(conversation) if conversation is not None else ()):
        invocation, rubrics = _turn(
            inv,
            eval_set_id=eval_set_id,
            eval_id=eval_id,
            agent=agent,
            turn=i,
        )
        turns.append(invocation)
        turn_rubrics.append(rubrics)
    return GoldenCase(
        eval_set_id=eval_set_id,
        eval_id=eval_id,
        turns=tuple(turns),
        rubrics=_rubrics(case.get("rubrics")),
        turn_rubrics=tuple(turn_rubrics),
        scenario=None if scenario is None else _scenario(scenario),
        session_input=session,
    )


def golden_cases(
    data: dict[str, Any],
) -> tuple[str, str | None, str | None, tuple[GoldenCase, ...]]:
    """The eval set id, name, description and cases of a parsed ``EvalSet`` document.

    Raises:
        Unsupported: ``data`` is outside the fast path's subset (maybe invalid): the
            caller validates it with :class:`schema.EvalSet` instead.

    """
    eval_set_id = data.get("eval_set_id")
    cases = data.get("eval_cases")
    if type(eval_set_id) is not str or type(cases) is not list:
        _unsupported()
    name, description = _opt_str(data.get("name")), _opt_str(data.get("description"))
    if _opt_float(data.get("creation_timestamp", 0.0)) is None:
        _unsupported()
    try:
        return eval_set_id, name, description, tuple(_case(c, eval_set_id) for c in cases)
    except OverflowError:
        # A timestamp too large for nanoseconds: the reference path decides (it validates
        # the whole file first, so a later schema error would be reported instead).
        raise Unsupported from None
