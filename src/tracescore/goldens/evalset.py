r"""Load ADK evalsets (``*.evalset.json``) and old ``*.test.json`` files as goldens.

Every golden turn becomes a frozen :class:`tracescore.model.Invocation` (the *expected*
side), the same type criteria get for the actual side:

* ``user_content`` / ``final_response``: the Content's non-empty part texts joined with
  ``"\n"`` (ADK's reading; thought parts are not dropped). No ``final_response`` → None.
* ``tool_calls``: ``tool_uses`` (or, for ``invocation_events``, every ``function_call``
  part of every event) in order, as ``ToolCall(name, args, id)``; each joined to its
  response (``result`` = ``FunctionResponse.response`` as written) by id, else by name
  and order.
* ``intermediate_responses``: ``(author, text)`` of every intermediate response (or event)
  with text.
* ``conversation_id`` is the eval id; ``invocation_id`` the golden's, else
  ``<eval_set_id>/<eval_id>/<turn>``; ``trace_id`` is empty (no trace behind a golden).

Old ``*.test.json``: a JSON list of turns, the whole file one case, named after the file
(``weather.test.json`` → eval set and eval id ``weather``); ``reference`` becomes the
final response (``""`` when absent), as ADK's own conversion does.

Errors are :class:`~tracescore.exceptions.ConfigError` with one line naming the file, the
JSON location and what is allowed there.

An evalset is first decoded by :mod:`tracescore.goldens.typed` (msgspec structs, for the
way ADK writes them), else read by :mod:`tracescore.goldens.fastpath` (straight from the
parsed JSON, for the common shapes); what both decline goes through the pydantic models
and the conversion below, which stay the reference (same golden sets, same errors).
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import orjson
from pydantic import TypeAdapter, ValidationError

from tracescore.conventions.messages import JsonValue
from tracescore.documents import identify, identify_lines, not_utf8, where_it_goes
from tracescore.exceptions import ConfigError
from tracescore.goldens import fastpath, schema, typed
from tracescore.goldens.cases import (
    GoldenCase,
    GoldenRubric,
    GoldenScenario,
    GoldenSet,
    golden_rubrics,
)
from tracescore.goldens.errors import validation_error
from tracescore.model import AgentGrounding, AgentText, Invocation, ToolCall
from tracescore.path_args import Paths, path_list, real_path

__all__ = [
    "GoldenCase",
    "GoldenRubric",
    "GoldenScenario",
    "GoldenSet",
    "load_golden_file",
    "load_goldens",
    "parse_golden_data",
    "parse_goldens",
]

logger = logging.getLogger(__name__)


# -- conversion ------------------------------------------------------------------------


def _text(content: schema.Content | None) -> str | None:
    return None if content is None else content.text()


def _join_responses(
    calls: Sequence[schema.FunctionCall], responses: Sequence[schema.FunctionResponse]
) -> tuple[ToolCall, ...]:
    """Pair each call with its response: by id, else the next unused one of that name."""
    call_ids = {c.id for c in calls if c.id}
    by_id: dict[str, int] = {}
    by_name: dict[str | None, deque[int]] = defaultdict(deque)
    for i, resp in enumerate(responses):
        if resp.id and resp.id in call_ids:
            by_id.setdefault(resp.id, i)
        else:
            by_name[resp.name].append(i)
    out = []
    for call in calls:
        index = by_id.pop(call.id, None) if call.id else None
        if index is None and by_name[call.name]:
            index = by_name[call.name].popleft()
        result = responses[index].response if index is not None else None
        out.append(ToolCall(name=call.name or "", args=call.args, id=call.id, result=result))
    return tuple(out)


def _turn(
    inv: schema.Invocation, *, case: schema.EvalCase, eval_set_id: str, turn: int
) -> Invocation:
    calls: list[schema.FunctionCall] = []
    responses: list[schema.FunctionResponse] = []
    texts: list[AgentText] = []
    grounding: list[AgentGrounding] = []
    data = inv.intermediate_data
    if isinstance(data, schema.IntermediateData):
        calls, responses = list(data.tool_uses), list(data.tool_responses)
        for author, parts in data.intermediate_responses:
            text = schema.Content(parts=parts).text()
            if text:
                texts.append(AgentText(author=author, text=text))
    elif isinstance(data, schema.InvocationEvents):
        for event in data.invocation_events:
            if event.grounding_metadata:
                grounding.append(
                    AgentGrounding(author=event.author, metadata=event.grounding_metadata)
                )
            event_parts = event.content.parts if event.content else None
            for part in event_parts or ():
                if part.function_call is not None:
                    calls.append(part.function_call)
                if part.function_response is not None:
                    responses.append(part.function_response)
            event_text = _text(event.content)
            if event_text:
                texts.append(AgentText(author=event.author, text=event_text))
    start_ns = int(inv.creation_timestamp * 1e9)
    app = inv.app_details
    return Invocation(
        trace_id="",
        invocation_id=inv.invocation_id or f"{eval_set_id}/{case.eval_id}/{turn}",
        conversation_id=case.eval_id,
        agent=case.session_input.app_name if case.session_input else None,
        user_content=inv.user_content.text(),
        tool_calls=_join_responses(calls, responses),
        intermediate_responses=tuple(texts),
        final_response=_text(inv.final_response),
        start_ns=start_ns,
        end_ns=start_ns + int((inv.duration or 0.0) * 1e9),
        system_instructions=None if app is None else app.instructions(),
        tool_definitions=None if app is None else cast(JsonValue, app.tool_declarations()),
        grounding=tuple(grounding),
    )


def _case(case: schema.EvalCase, eval_set_id: str) -> GoldenCase:
    conversation = case.conversation or []
    scenario = case.conversation_scenario
    return GoldenCase(
        eval_set_id=eval_set_id,
        eval_id=case.eval_id,
        turns=tuple(
            _turn(inv, case=case, eval_set_id=eval_set_id, turn=i)
            for i, inv in enumerate(conversation)
        ),
        rubrics=golden_rubrics(case.rubrics),
        turn_rubrics=tuple(golden_rubrics(inv.rubrics) for inv in conversation),
        scenario=None
        if scenario is None
        else GoldenScenario(
            starting_prompt=scenario.starting_prompt,
            conversation_plan=scenario.conversation_plan,
            user_persona=scenario.user_persona,
        ),
        session_input=None
        if case.session_input is None
        else case.session_input.model_dump(mode="json", exclude_none=True),
    )


def _old_format_case(turns: Sequence[schema.OldFormatTurn], eval_id: str) -> GoldenCase:
    invocations = tuple(
        Invocation(
            trace_id="",
            invocation_id=f"{eval_id}/{eval_id}/{i}",
            conversation_id=eval_id,
            user_content=t.query,
            tool_calls=tuple(
                ToolCall(name=u.tool_name, args=u.tool_input) for u in t.expected_tool_use
            ),
            intermediate_responses=tuple(
                AgentText(author=r.author, text=r.text)
                for r in t.expected_intermediate_agent_responses
            ),
            final_response=t.reference,
        )
        for i, t in enumerate(turns)
    )
    return GoldenCase(eval_set_id=eval_id, eval_id=eval_id, turns=invocations)


# -- loading ---------------------------------------------------------------------------

_OLD_FORMAT = TypeAdapter(list[schema.OldFormatTurn])


def _stem(path: str) -> str:
    name = Path(path).name
    for suffix in (".test.json", ".evalset.json", ".json"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def _check_utf8(data: bytes, source: str) -> None:
    problem = not_utf8(data)
    if problem is not None:
        raise ConfigError(f"{source}: {problem}")


def parse_goldens(text: str | bytes, *, source: str, tool_results: bool = True) -> GoldenSet:
    """Parse one evalset or old-format document.

    Args:
        text: The file's content.
        source: Path shown in error messages; an old-format file's ids come from its name.
        tool_results: Keep the golden tool calls' results. Without, every ``result`` is
            None (checked all the same: the same documents are valid either way), which
            is what a replay does when no criterion reads them
            (:attr:`~tracescore.criteria.Criterion.reads_golden_tool_results`).

    Returns:
        The golden set. A JSON object is read as an ``EvalSet``; a JSON list as an old
        ``*.test.json`` (one case).

    Raises:
        ConfigError: Invalid JSON (with line and column) or a document ADK would reject.

    """
    try:
        # The way ADK writes evalsets, in one typed pass (see tracescore.goldens.typed).
        eval_set_id, name, description, cases = typed.golden_cases(text, tool_results=tool_results)
    except fastpath.Unsupported:
        pass  # anything else: parsed, then the fast path or the pydantic models
    else:
        return GoldenSet(
            path=source, eval_set_id=eval_set_id, name=name, description=description, cases=cases
        )
    try:
        data = orjson.loads(text)  # large golden sets: several times faster than json
    except orjson.JSONDecodeError as exc:
        # orjson accepts only valid UTF-8, so decoding is needed only to name the cause
        # (not on every load: a 33 MB file's str costs ~25 ms).
        if isinstance(text, bytes):
            _check_utf8(text, source)
        hint = where_it_goes(identify_lines(text), "evalset")
        if hint:
            raise ConfigError(f"{source}: {hint}") from None
        raise ConfigError(f"{source}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text ({exc.reason})") from None
    goldens = parse_golden_data(data, source=source)
    return goldens if tool_results else _without_tool_results(goldens)


def _without_tool_results(goldens: GoldenSet) -> GoldenSet:
    """``goldens`` with every tool call's ``result`` None (what the typed path builds)."""

    def turn(inv: Invocation) -> Invocation:
        if all(call.result is None for call in inv.tool_calls):
            return inv
        calls = tuple(replace(call, result=None) for call in inv.tool_calls)
        return replace(inv, tool_calls=calls)

    cases = tuple(
        replace(case, turns=tuple(turn(inv) for inv in case.turns)) for case in goldens.cases
    )
    return replace(goldens, cases=cases)


def parse_golden_data(data: object, *, source: str) -> GoldenSet:
    """:func:`parse_goldens` of a document already parsed from JSON (``orjson.loads``).

    For documents built in memory (recorded runs rebuilt from an ADK eval result), which
    need not go through JSON text again: ``orjson`` writes 255 levels of nesting where
    tool arguments read from JSON may have 1024.

    Raises:
        ConfigError: A document ADK would reject.

    """
    if isinstance(data, list):
        try:
            turns = _OLD_FORMAT.validate_python(data)
        except ValidationError as exc:
            raise validation_error(source, exc, list[schema.OldFormatTurn]) from None
        if not turns:
            raise ConfigError(f"{source}: an old-format (*.test.json) file needs at least one turn")
        eval_id = _stem(source)
        case = _old_format_case(turns, eval_id)
        return GoldenSet(path=source, eval_set_id=eval_id, cases=(case,), format="test_json")
    hint = where_it_goes(identify(data), "evalset")
    if hint:
        raise ConfigError(f"{source}: {hint}")
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: expected an EvalSet object (or an old-format list of turns), "
            f"got {type(data).__name__}"
        )
    try:
        # Most files: straight from the parsed JSON, several times faster (see fastpath).
        eval_set_id, name, description, cases = fastpath.golden_cases(data)
        gset = GoldenSet(
            path=source,
            eval_set_id=eval_set_id,
            name=name,
            description=description,
            cases=cases,
        )
    except fastpath.Unsupported:
        gset = _validated_golden_set(data, source)
    ignored = sorted(set(data) - set(schema.EvalSet.model_fields))
    if ignored:
        logger.warning("%s: keys ignored at the top level (as ADK does): %s", source, ignored)
    return gset


def _validated_golden_set(data: dict[str, Any], source: str) -> GoldenSet:
    """The reference path: validate with the pydantic models, then convert them.

    Used when the fast path declines a document (unusual or invalid); raises the located
    ``ConfigError`` for an invalid one.
    """
    try:
        evalset = schema.EvalSet.model_validate(data)
    except ValidationError as exc:
        raise validation_error(source, exc, schema.EvalSet) from None
    return GoldenSet(
        path=source,
        eval_set_id=evalset.eval_set_id,
        name=evalset.name,
        description=evalset.description,
        cases=tuple(_case(c, evalset.eval_set_id) for c in evalset.eval_cases),
    )


def load_golden_file(path: str, *, tool_results: bool = True) -> GoldenSet:
    """Read and parse one goldens file (see :func:`parse_goldens`).

    Raises:
        ConfigError: The file cannot be read or is not a valid evalset.

    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read goldens file: {exc.strerror or exc}") from None
    return parse_goldens(data, source=path, tool_results=tool_results)


def _expand(path: str) -> list[str]:
    if os.path.isdir(path):
        # os.walk rather than Path.rglob: rglob skips a directory it cannot list without
        # a word, and the goldens in it would be missing from every verdict.
        found = sorted(
            os.path.join(top, name)
            for top, _, names in os.walk(path, onerror=_unlistable)
            for name in names
            if name.endswith((".evalset.json", ".test.json"))
        )
        if not found:
            raise ConfigError(f"{path}: no *.evalset.json or *.test.json files in this directory")
        return found
    return [path]


def _unlistable(exc: OSError) -> None:
    raise ConfigError(
        f"{exc.filename}: cannot list goldens directory: {exc.strerror or exc}"
    ) from exc


def _expand_all(paths: Paths) -> list[str]:
    """Every file ``paths`` name, in order, each once.

    A file named twice (a directory and a file in it, two spellings of one path) is one
    file, not a clash of its own eval ids. One path alone is one path, not its characters.
    """
    found: dict[str, str] = {}
    for path in path_list(paths):
        for f in _expand(path):
            found.setdefault(real_path(f), f)
    return list(found.values())


def golden_files(paths: Paths) -> list[str]:
    """The goldens files ``paths`` name (a directory: its evalsets), each one readable.

    What :func:`load_goldens` reads, checked without parsing: a program with a long step
    before the load (a replay imports first) reports a mistyped path at once.

    Raises:
        ConfigError: A directory holds no evalset, or a file cannot be opened.
        TypeError: ``paths`` is not a path or an iterable of paths.

    """
    files = _expand_all(paths)
    for f in files:
        try:
            with open(f, "rb"):
                pass
        except OSError as exc:
            raise ConfigError(f"{f}: cannot read goldens file: {exc.strerror or exc}") from None
    return files


def load_goldens(paths: Paths, *, tool_results: bool = True) -> list[GoldenSet]:
    """Load goldens files; a directory contributes its ``*.evalset.json``/``*.test.json``.

    ``paths`` is one path or an iterable of them (``str`` or :class:`os.PathLike`).
    Without ``tool_results``, golden tool calls carry no ``result`` (:func:`parse_goldens`).

    Eval ids must be unique within an eval set, across all files. The same eval id in
    two different eval sets is allowed (logged): explicit matching then needs
    ``tracescore.golden.eval_set_id``.

    Raises:
        ConfigError: A file is unreadable or invalid, or an ``(eval_set_id, eval_id)``
            pair appears twice (both files are named).
        TypeError: ``paths`` is not a path or an iterable of paths.

    """
    sets = [load_golden_file(f, tool_results=tool_results) for f in _expand_all(paths)]
    seen: dict[tuple[str, str], str] = {}
    sets_of: dict[str, set[str]] = defaultdict(set)
    for gset in sets:
        for case in gset.cases:
            key = (case.eval_set_id, case.eval_id)
            if key in seen:
                where = gset.path if seen[key] == gset.path else f"{seen[key]} and {gset.path}"
                raise ConfigError(
                    f"{where}: duplicate eval case {case.eval_id!r} in eval set "
                    f"{case.eval_set_id!r}; eval ids must be unique within an eval set"
                )
            seen[key] = gset.path
            sets_of[case.eval_id].add(case.eval_set_id)
    for eval_id, set_ids in sets_of.items():
        if len(set_ids) > 1:
            logger.warning(
                "eval id %r is in several eval sets (%s): explicit matching needs "
                "tracescore.golden.eval_set_id",
                eval_id,
                ", ".join(sorted(set_ids)),
            )
    return sets
