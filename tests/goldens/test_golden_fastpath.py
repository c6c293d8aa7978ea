"""The loader's fast path agrees with the pydantic path, and declines what it cannot check.

``parse_goldens`` first converts the parsed JSON directly (``goldens.fastpath``); anything
outside its subset goes to the pydantic models (``evalset._validated_golden_set``), the
reference. These tests hold the two to the same golden sets and the same errors.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from itertools import product
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic.alias_generators import to_camel, to_snake
from test_golden_loading import REFERENCE_MINIMAL, _adk_evalset, _dump

from tracescore.evalset import conversations_to_evalset
from tracescore.exceptions import ConfigError
from tracescore.goldens import GoldenSet, evalset, fastpath, parse_goldens, schema, typed
from tracescore.model import Invocation, ToolCall, group_conversations

SOURCE = "x.evalset.json"


def _reference(doc: dict[str, Any]) -> GoldenSet:
    return evalset._validated_golden_set(doc, SOURCE)


def _fast(doc: dict[str, Any]) -> GoldenSet:
    eval_set_id, name, description, cases = fastpath.golden_cases(doc)
    return GoldenSet(
        path=SOURCE, eval_set_id=eval_set_id, name=name, description=description, cases=cases
    )


def _outcome(load: Callable[..., GoldenSet]) -> tuple[str, object]:
    try:
        return "ok", load()
    except ConfigError as exc:
        return "ConfigError", str(exc)
    except OverflowError as exc:
        return "OverflowError", str(exc)


def _our_writer_doc() -> dict[str, Any]:
    turns = [
        Invocation(
            trace_id="t",
            invocation_id=f"i{i}",
            conversation_id="conv",
            agent="app",
            user_content=f"question {i}",
            tool_calls=(
                ToolCall(name="get", args={"k": i}, id=f"c{i}", result={"v": [i, {"x": None}]}),
                ToolCall(name="put", args={}, id=f"d{i}", result=None),
            ),
            final_response=f"answer {i}",
            start_ns=1_000_000_000 * (i + 1),
            end_ns=1_000_000_000 * (i + 2),
        )
        for i in range(3)
    ]
    doc, _, _ = conversations_to_evalset(group_conversations(turns), eval_set_id="ours")
    plain: dict[str, Any] = orjson.loads(orjson.dumps(doc))
    return plain


VALID_DOCS: list[tuple[str, Callable[[], dict[str, Any]]]] = [
    ("reference minimal", lambda: json.loads(REFERENCE_MINIMAL)),
    ("ADK snake_case", lambda: json.loads(_dump(_adk_evalset(), by_alias=False))),
    ("ADK camelCase", lambda: json.loads(_dump(_adk_evalset(), by_alias=True))),
    ("our writer", _our_writer_doc),
    (
        "session state, extra keys, scenario, rubrics",
        lambda: {
            "eval_set_id": "s",
            "eval_cases": [
                {
                    "eval_id": "c",
                    "custom": 1,
                    "conversation": [{"user_content": {"parts": []}}],
                    "session_input": {"appName": "a", "user_id": "u", "state": {"k": [1, None]}},
                    "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": "t"}}],
                },
                {
                    "eval_id": "d",
                    "conversation_scenario": {"starting_prompt": "a", "conversation_plan": "b"},
                    "session_input": {"app_name": "a", "user_id": "u", "extra": None},
                },
            ],
        },
    ),
]


@pytest.mark.parametrize("make", [d[1] for d in VALID_DOCS], ids=[d[0] for d in VALID_DOCS])
def test_valid_files_take_the_fast_path_with_the_same_result(
    make: Callable[[], dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = make()
    expected = _reference(doc)
    assert _fast(doc) == expected

    def no_fallback(data: dict[str, Any], source: str) -> GoldenSet:
        raise AssertionError("the pydantic path was used")

    monkeypatch.setattr(evalset, "_validated_golden_set", no_fallback)
    assert parse_goldens(orjson.dumps(doc), source=SOURCE) == expected


def _tool_lists() -> list[list[dict[str, Any]]]:
    one = [
        {"name": name, **({} if call_id is None else {"id": call_id})}
        for call_id, name in product([None, "a", "b"], ["f", "g"])
    ]
    return [[], *([c] for c in one), *([c, d] for c, d in product(one, one))]


def test_tool_responses_join_their_calls_as_on_the_pydantic_path() -> None:
    """Every pairing of up to two calls with up to two responses (ids, names, repeats)."""
    lists = _tool_lists()
    for calls, responses in product(lists, lists):
        doc = _turn_doc(
            intermediate_data={
                "tool_uses": [{**c, "args": {"n": i}} for i, c in enumerate(calls)],
                "tool_responses": [{**r, "response": {"n": i}} for i, r in enumerate(responses)],
            }
        )
        assert _fast(doc) == _reference(doc), (calls, responses)


def _turn_doc(**turn: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"user_content": {"parts": [{"text": "hi"}]}}
    base.update(turn)
    return {"eval_set_id": "s", "eval_cases": [{"eval_id": "c", "conversation": [base]}]}


DECLINED: list[tuple[str, dict[str, Any]]] = [
    # Valid for pydantic's lax mode, left to it.
    ("timestamp as a string", _turn_doc(creation_timestamp="1.5")),
    ("timestamp as a bool", _turn_doc(creation_timestamp=True)),
    ("thought as an int", _turn_doc(final_response={"parts": [{"text": "a", "thought": 1}]})),
    ("both spellings", _turn_doc(final_response={"parts": []}, finalResponse=None)),
    # Invalid: the pydantic path reports them.
    ("unknown key in a tool use", _turn_doc(intermediate_data={"tool_uses": [{"argz": {}}]})),
    ("args not an object", _turn_doc(intermediate_data={"tool_uses": [{"args": [1]}]})),
    ("response not an object", _turn_doc(intermediate_data={"tool_responses": [{"response": 1}]})),
    (
        "short intermediate response",
        _turn_doc(intermediate_data={"intermediate_responses": [["a"]]}),
    ),
    ("event without author", _turn_doc(intermediate_data={"invocation_events": [{}]})),
    ("null invocation id", _turn_doc(invocation_id=None)),
    ("null user content", _turn_doc(user_content=None)),
    ("bad rubric", _turn_doc(rubrics=[{"rubric_id": "r"}])),
    ("bad app details", _turn_doc(app_details={"agent_details": {"a": {}}})),
    ("timestamp too large", _turn_doc(creation_timestamp=1e300)),
]


@pytest.mark.parametrize("doc", [d[1] for d in DECLINED], ids=[d[0] for d in DECLINED])
def test_declined_documents_get_the_pydantic_outcome(doc: dict[str, Any]) -> None:
    with pytest.raises(fastpath.Unsupported):
        fastpath.golden_cases(doc)
    got = _outcome(lambda: parse_goldens(orjson.dumps(doc), source=SOURCE))
    assert got == _outcome(lambda: _reference(doc))


def test_a_huge_timestamp_is_a_located_error_on_both_paths() -> None:
    # It used to pass validation and overflow when converted to nanoseconds.
    doc = _turn_doc(creation_timestamp=1e300)
    with pytest.raises(fastpath.Unsupported):
        fastpath.golden_cases(doc)
    with pytest.raises(ConfigError, match=r"conversation\[0\]\.creation_timestamp: Input should"):
        parse_goldens(orjson.dumps(doc), source=SOURCE)
    doc["eval_cases"][0]["conversation"][0]["creation_timestamp"] = 9.2e9  # the limit: fine
    assert fastpath.golden_cases(doc)[3][0].turns[0].start_ns == 9_200_000_000 * 10**9


# -- properties: any document, the same outcome on both paths --------------------------

_JUNK = st.sampled_from([None, True, 0, 2, -1, 1.5, 1e300, "", "x", "1.5", [], {}, [1], {"x": 1}])
_STR = st.text(alphabet="ab \n", max_size=3)
_ID = st.sampled_from(["", "a", "b"])
_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.just(0.5), _STR),
    lambda inner: st.one_of(st.lists(inner, max_size=2), st.dictionaries(_ID, inner, max_size=2)),
    max_leaves=4,
)
_OBJECT = st.dictionaries(_ID, _JSON, max_size=2)


def _percent(p: int) -> st.SearchStrategy[bool]:
    """True with probability ``p`` %."""
    return st.integers(0, 99).map(lambda n: n < p)


def _evalsets(noise: int) -> st.SearchStrategy[dict[str, Any]]:
    """Evalset-shaped documents; with ``noise`` > 0, that percentage of values is junk, of
    objects has an unknown key, of fields is written in both spellings, of required ones
    is missing (all of the schema's rules, broken now and then)."""

    def junk_or(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return _percent(noise).flatmap(lambda junk: _JUNK if junk else strategy)

    def opt(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return junk_or(st.one_of(st.none(), strategy))

    def model(
        fields: dict[str, st.SearchStrategy[Any]], *, required: tuple[str, ...] = ()
    ) -> st.SearchStrategy[dict[str, Any]]:
        @st.composite
        def build(draw: st.DrawFn) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for name, strategy in fields.items():
                keep = not draw(_percent(noise)) if name in required else draw(st.booleans())
                if not keep:
                    continue
                both = draw(_percent(noise))
                camel = to_camel(name) != name and (both or draw(st.booleans()))
                if both or not camel:
                    out[name] = draw(strategy)
                if camel:
                    out[to_camel(name)] = draw(strategy)
            if draw(_percent(noise)):
                out["bogus"] = 1
            return out

        return build()

    call = model(
        {
            "id": opt(_ID),
            "name": opt(_ID),
            "args": opt(_OBJECT),
            "will_continue": opt(st.booleans()),
        }
    )
    response = model(
        {"id": opt(_ID), "name": opt(_ID), "response": opt(_OBJECT), "parts": opt(st.just([]))}
    )
    part = model(
        {
            "text": opt(_STR),
            "thought": opt(st.booleans()),
            "function_call": opt(call),
            "function_response": opt(response),
            "file_data": _JSON,
            "part_metadata": opt(_OBJECT),
        }
    )
    content = model({"parts": opt(st.lists(part, max_size=3)), "role": opt(_ID)})
    pair = st.tuples(junk_or(_ID), junk_or(st.lists(part, max_size=2))).map(list)
    data = model(
        {
            "tool_uses": junk_or(st.lists(call, max_size=3)),
            "tool_responses": junk_or(st.lists(response, max_size=3)),
            "intermediate_responses": junk_or(st.lists(junk_or(pair), max_size=2)),
        }
    )
    event = model(
        {"author": junk_or(_ID), "content": opt(content), "model_version": opt(_ID)},
        required=("author",),
    )
    events = model({"invocation_events": junk_or(st.lists(event, max_size=3))})
    rubric = st.fixed_dictionaries(
        {"rubric_id": junk_or(_ID), "rubric_content": st.just({"text_property": "t"})}
    )
    number = junk_or(st.sampled_from([0, 2, 1.25, 1e10]))
    invocation = model(
        {
            "invocation_id": junk_or(_ID),
            "user_content": junk_or(content),
            "final_response": opt(content),
            "intermediate_data": opt(st.one_of(data, events)),
            "creation_timestamp": number,
            "duration": opt(number),
            "rubrics": opt(st.lists(rubric, max_size=1)),
            "app_details": opt(st.just({"agent_details": {}})),
        },
        required=("user_content",),
    )
    session = model(
        {
            "app_name": junk_or(_ID),
            "user_id": junk_or(_ID),
            "session_id": opt(_ID),
            "state": junk_or(_OBJECT),
        },
        required=("app_name", "user_id"),
    )
    scenario = st.fixed_dictionaries(
        {"starting_prompt": junk_or(_STR), "conversation_plan": st.just("p")}
    )
    case_fields = {
        "eval_id": junk_or(_ID),
        "session_input": opt(session),
        "creation_timestamp": number,
        "rubrics": opt(st.lists(rubric, max_size=1)),
        "final_session_state": opt(_OBJECT),
    }
    conversation = junk_or(st.lists(invocation, max_size=3))
    # A static conversation xor a scenario, mostly; either, both or neither with noise.
    case = st.one_of(
        model({**case_fields, "conversation": conversation}, required=("eval_id", "conversation")),
        model({**case_fields, "conversation": conversation}, required=("eval_id", "conversation")),
        model(
            {**case_fields, "conversation_scenario": scenario},
            required=("eval_id", "conversation_scenario"),
        ),
        *(
            [
                model(
                    {
                        **case_fields,
                        "conversation": opt(conversation),
                        "conversation_scenario": opt(scenario),
                    }
                )
            ]
            if noise
            else []
        ),
    )
    return st.fixed_dictionaries(
        {"eval_set_id": junk_or(_ID), "eval_cases": junk_or(st.lists(case, max_size=3))},
        optional={
            "name": opt(_ID),
            "description": opt(_STR),
            "creation_timestamp": number,
            "evalSetId": _ID,
        },
    ).map(lambda doc: orjson.loads(orjson.dumps(doc)))  # as read from a file


def _typed(raw: bytes, *, tool_results: bool = True) -> GoldenSet:
    eval_set_id, name, description, cases = typed.golden_cases(raw, tool_results=tool_results)
    return GoldenSet(
        path=SOURCE, eval_set_id=eval_set_id, name=name, description=description, cases=cases
    )


def _no_results(outcome: tuple[str, object]) -> tuple[str, object]:
    """``outcome`` as loaded without tool results: the same, each call's result None."""
    kind, got = outcome
    if not isinstance(got, GoldenSet):
        return outcome
    cases = tuple(
        replace(
            case,
            turns=tuple(
                replace(t, tool_calls=tuple(replace(c, result=None) for c in t.tool_calls))
                for t in case.turns
            ),
        )
        for case in got.cases
    )
    return kind, replace(got, cases=cases)


def _paths(doc: dict[str, Any]) -> list[str]:
    """Hold both quick paths and ``parse_goldens`` to the pydantic reference on ``doc``;
    say which path took it and which declined it."""
    reference = _outcome(lambda: _reference(doc))
    raw = orjson.dumps(doc)
    took = []
    loads: dict[str, Callable[[], GoldenSet]] = {
        "fast": lambda: _fast(doc),
        "typed": lambda: _typed(raw),
    }
    for name, load in loads.items():
        try:
            got = load()
        except fastpath.Unsupported:
            took.append(f"{name} declined")
        else:
            took.append(name)
            assert reference == ("ok", got), doc
    assert _outcome(lambda: parse_goldens(raw, source=SOURCE)) == reference
    # Without tool results: the same documents valid, on the same paths, results None.
    without = _no_results(reference)
    try:
        assert ("ok", _typed(raw, tool_results=False)) == without, doc
    except fastpath.Unsupported:
        assert "typed declined" in took, doc
    else:
        assert "typed" in took, doc
    assert _outcome(lambda: parse_goldens(raw, source=SOURCE, tool_results=False)) == without
    return took


_PROPERTY = settings(
    max_examples=500,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@_PROPERTY
@given(doc=_evalsets(noise=4))
def test_both_paths_give_the_same_outcome(doc: dict[str, Any]) -> None:
    for took in _paths(doc):
        event(took)


_CHANGED_VALUES: tuple[Any, ...] = (None, True, 2, 1.5, "x", [], {}, [{}])


def _containers(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every object and list in ``value``."""
    if isinstance(value, dict | list):
        yield path
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            yield from _containers(item, (*path, key))


def _single_changes(raw: bytes) -> Iterator[dict[str, Any]]:
    """Every document one change away from ``raw``: at each object, each value replaced
    (by each of a few values of each JSON type), each key removed or also spelled another
    way, an unknown key added; in each list, an item appended or replaced."""

    def edit(path: tuple[Any, ...], change: Callable[..., None]) -> dict[str, Any]:
        doc: dict[str, Any] = orjson.loads(raw)
        node: Any = doc
        for key in path:
            node = node[key]
        change(node)
        return doc

    for path in _containers(orjson.loads(raw)):
        node: Any = orjson.loads(raw)
        for key in path:
            node = node[key]
        keys: Sequence[Any] = list(node) if isinstance(node, dict) else range(min(len(node), 2))
        for key in keys:
            for value in _CHANGED_VALUES:
                yield edit(path, lambda n, k=key, v=value: n.__setitem__(k, v))
        if isinstance(node, dict):
            yield edit(path, lambda n: n.__setitem__("bogus", 1))
            for key in keys:
                yield edit(path, lambda n, k=key: n.pop(k))
                other = next((o for o in (to_camel(key), to_snake(key)) if o != key), key.upper())
                yield edit(path, lambda n, k=key, o=other: n.__setitem__(o, n[k]))
        else:
            for value in _CHANGED_VALUES:
                yield edit(path, lambda n, v=value: n.append(v))


@pytest.mark.parametrize(
    ("base", "by_alias"),
    [("adk", False), ("adk", True), ("ours", False)],
    ids=["adk-snake_case", "adk-camelCase", "our-writer"],
)
def test_every_single_change_to_an_adk_file_gives_the_same_outcome(
    base: str, by_alias: bool
) -> None:
    if base == "adk":
        raw = _dump(_adk_evalset(), by_alias=by_alias).encode()
    else:
        raw = orjson.dumps(_our_writer_doc())
    outcomes: Counter[str] = Counter()
    for doc in _single_changes(raw):
        outcomes.update(_paths(doc))
    assert outcomes["fast"] > 100
    assert outcomes["fast declined"] > 30
    # The test's ADK file carries rubrics and app details (left to the other paths),
    # the one our writer makes does not: one change away, it mostly stays typed.
    if base == "ours":
        assert outcomes["typed"] > 100 and outcomes["typed declined"] > 30, outcomes


def test_a_schema_field_the_fast_path_does_not_check_stops_the_import() -> None:
    with pytest.raises(RuntimeError, match="does not check the fields of Content"):
        fastpath._Keys(schema.Content, "parts")


def _plain(value: Any) -> Any:
    """``value`` without rubrics, app details, session state, invocation events or
    scenario cases."""
    if isinstance(value, dict):
        return {
            k: _plain(v)
            for k, v in value.items()
            if k not in ("rubrics", "app_details", "state")
            and not (isinstance(v, dict) and "invocation_events" in v)
        }
    if isinstance(value, list):
        return [
            _plain(v) for v in value if not (isinstance(v, dict) and "conversation_scenario" in v)
        ]
    return value


@pytest.mark.parametrize("nulls", [False, True], ids=["omitted", "written-as-null"])
def test_an_adk_file_without_rubrics_takes_the_typed_path(nulls: bool) -> None:
    """ADK's file less what the typed path leaves to the others (multi-part texts,
    thought parts, calls inside a final response, responses out of order stay): decoded
    typed, with the reference's result; unused fields written as null change nothing."""
    doc = _plain(orjson.loads(_dump(_adk_evalset(), by_alias=False)))
    if nulls:
        turn = doc["eval_cases"][0]["conversation"][0]
        turn.update(rubrics=None, app_details=None, model_duration=None)
        turn["user_content"]["parts"][0].update(inline_data=None, part_metadata=None)
    raw = orjson.dumps(doc)
    reference = _reference(doc)
    assert _typed(raw) == reference
    first = reference.cases[0].turns[0]
    assert first.user_content == "Weather in\nParis?"
    assert first.final_response == "thinking...\nIt is 21C."
    assert parse_goldens(raw, source=SOURCE) == reference


_WITH_RESPONSE = {
    "eval_set_id": "s",
    "eval_cases": [
        {
            "eval_id": "c",
            "conversation": [
                {
                    "user_content": {"role": "user", "parts": [{"text": "Weather?"}]},
                    "intermediate_data": {
                        "tool_uses": [{"id": "1", "name": "w", "args": {"city": "Oslo"}}],
                        "tool_responses": [{"id": "1", "name": "w", "response": {"t": [1, 2]}}],
                    },
                }
            ],
        }
    ],
}


@pytest.mark.parametrize("camel", [False, True], ids=["typed-path", "other-paths"])
def test_goldens_load_with_or_without_tool_results(camel: bool) -> None:
    doc = json.loads(json.dumps(_WITH_RESPONSE))
    if camel:  # a key the typed structs do not take: the fast path reads it
        doc["eval_cases"][0]["conversation"][0]["userContent"] = doc["eval_cases"][0][
            "conversation"
        ][0].pop("user_content")
    raw = orjson.dumps(doc)
    (with_results,) = parse_goldens(raw, source=SOURCE).cases[0].turns
    (without,) = parse_goldens(raw, source=SOURCE, tool_results=False).cases[0].turns
    assert with_results.tool_calls[0].result == {"t": [1, 2]}
    assert without.tool_calls[0].result is None
    assert replace(without.tool_calls[0], result={"t": [1, 2]}) == with_results.tool_calls[0]
    for bad in (5, "x", [1], True):
        doc["eval_cases"][0]["conversation"][0]["intermediate_data"]["tool_responses"][0][
            "response"
        ] = bad
        raw = orjson.dumps(doc)
        errors = []
        for tool_results in (True, False):
            with pytest.raises(ConfigError) as caught:
                parse_goldens(raw, source=SOURCE, tool_results=tool_results)
            errors.append(str(caught.value))
        assert errors[0] == errors[1] and "response" in errors[0]
