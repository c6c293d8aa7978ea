"""Loading goldens: evalsets written by google-adk itself, old *.test.json, our writer, errors."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from google.adk.evaluation import eval_case as adk_case
from google.adk.evaluation.app_details import AgentDetails, AppDetails
from google.adk.evaluation.eval_rubrics import Rubric, RubricContent
from google.adk.evaluation.eval_set import EvalSet
from google.adk.evaluation.local_eval_sets_manager import convert_eval_set_to_pydantic_schema
from google.genai import types as genai

from tracescore.evalset import conversations_to_evalset
from tracescore.exceptions import ConfigError
from tracescore.goldens import (
    GoldenSet,
    golden_files,
    load_golden_file,
    load_goldens,
    parse_goldens,
)
from tracescore.model import AgentGrounding, AgentText, Invocation, ToolCall, group_conversations

REFERENCE_MINIMAL = """
{"eval_set_id": "weather", "eval_cases": [{"eval_id": "paris", "conversation": [{
  "user_content": {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
  "final_response": {"role": "model", "parts": [{"text": "It is 21C in Paris."}]},
  "intermediate_data": {"tool_uses": [{"name": "get_weather", "args": {"city": "Paris"}}]}}]}]}
"""


def _content(role: str, *texts: str, thought: bool = False) -> genai.Content:
    parts = [genai.Part(text=t, thought=thought or None) for t in texts]
    return genai.Content(role=role, parts=parts)


def _adk_evalset() -> EvalSet:
    rubric = Rubric(
        rubric_id="r1",
        rubric_content=RubricContent(text_property="Mentions the temperature."),
        type="FINAL_RESPONSE_QUALITY",
    )
    data_turn = adk_case.Invocation(
        invocation_id="inv-1",
        user_content=_content("user", "Weather in", "Paris?"),
        final_response=genai.Content(
            role="model",
            parts=[
                genai.Part(text="thinking...", thought=True),
                genai.Part(text="It is 21C."),
                genai.Part(function_call=genai.FunctionCall(name="noop", args={})),
            ],
        ),
        intermediate_data=adk_case.IntermediateData(
            tool_uses=[
                genai.FunctionCall(id="c1", name="get_weather", args={"city": "Paris"}),
                genai.FunctionCall(id="c2", name="get_weather", args={"city": "Rome", "n": 1.5}),
            ],
            tool_responses=[
                genai.FunctionResponse(id="c2", name="get_weather", response={"t": 25}),
                genai.FunctionResponse(id="c1", name="get_weather", response={"t": 21}),
            ],
            intermediate_responses=[("planner", [genai.Part(text="Let me check.")])],
        ),
        creation_timestamp=12.5,
        rubrics=[rubric],
        app_details=AppDetails(
            agent_details={"root": AgentDetails(name="root", instructions="Be brief.")}
        ),
    )
    # ADK records genai Tool objects; written out and read back they are their JSON.
    weather = {"name": "get_weather", "description": "Weather in a city."}
    events_turn = adk_case.Invocation(
        user_content=_content("user", "And Rome?"),
        final_response=_content("model", "25C."),
        # As ADK's EvaluationGenerator records them: every agent of the app.
        app_details=AppDetails(
            agent_details={
                "root": AgentDetails(
                    name="root",
                    instructions="Route weather questions.",
                    tool_declarations=[{"function_declarations": [weather]}],
                ),
                "helper": AgentDetails(name="helper"),
                "critic": AgentDetails(name="critic", instructions="Check the answer."),
            }
        ),
        intermediate_data=adk_case.InvocationEvents(
            invocation_events=[
                adk_case.InvocationEvent(
                    author="root",
                    content=genai.Content(
                        role="model",
                        parts=[
                            genai.Part(text="Checking Rome."),
                            genai.Part(
                                function_call=genai.FunctionCall(
                                    name="get_weather", args={"city": "Rome"}
                                )
                            ),
                        ],
                    ),
                ),
                adk_case.InvocationEvent(
                    author="root",
                    content=genai.Content(
                        role="user",
                        parts=[
                            genai.Part(
                                function_response=genai.FunctionResponse(
                                    name="get_weather", response={"t": 25}
                                )
                            )
                        ],
                    ),
                ),
                # A reply grounded by the model's own search: ADK keeps the event for
                # its grounding metadata alone.
                adk_case.InvocationEvent(
                    author="searcher",
                    grounding_metadata=genai.GroundingMetadata(web_search_queries=["rome"]),
                ),
            ]
        ),
    )
    return EvalSet(
        eval_set_id="adk-set",
        name="ADK written",
        eval_cases=[
            adk_case.EvalCase(
                eval_id="two_turns",
                conversation=[data_turn, events_turn],
                session_input=adk_case.SessionInput(
                    app_name="weather_app", user_id="u1", state={"units": "C"}
                ),
                rubrics=[rubric.model_copy(update={"rubric_id": "case-r"})],
            ),
            adk_case.EvalCase(
                eval_id="simulated",
                conversation_scenario=adk_case.ConversationScenario(
                    starting_prompt="I need a flight.", conversation_plan="Book SFO to LAX."
                ),
            ),
        ],
    )


def _dump(evalset: EvalSet, *, by_alias: bool) -> str:
    text = evalset.model_dump_json(exclude_none=True, by_alias=by_alias)
    assert EvalSet.model_validate_json(text) == evalset  # ADK reads its own output back
    return text


@pytest.mark.parametrize("by_alias", [False, True], ids=["snake_case", "camelCase"])
def test_evalset_written_by_adk_loads_in_both_key_styles(by_alias: bool) -> None:
    text = _dump(_adk_evalset(), by_alias=by_alias)
    assert ("userContent" in text) is by_alias
    gset = parse_goldens(text, source="adk.evalset.json")
    assert (gset.eval_set_id, gset.name, gset.format) == ("adk-set", "ADK written", "evalset")
    case, scenario_case = gset.cases
    assert (case.eval_set_id, case.eval_id) == ("adk-set", "two_turns")
    first, second = case.turns
    # Content text = non-empty part texts joined with "\n"; thought parts kept, as ADK.
    assert first.user_content == "Weather in\nParis?"
    assert first.final_response == "thinking...\nIt is 21C."
    assert first.invocation_id == "inv-1"
    assert first.conversation_id == "two_turns"
    assert first.agent == "weather_app"
    assert first.start_ns == 12_500_000_000
    assert first.tool_calls == (
        ToolCall(name="get_weather", args={"city": "Paris"}, id="c1", result={"t": 21}),
        ToolCall(name="get_weather", args={"city": "Rome", "n": 1.5}, id="c2", result={"t": 25}),
    )
    assert first.intermediate_responses == (AgentText(author="planner", text="Let me check."),)
    # InvocationEvents form: calls from function_call parts, responses joined by name+order.
    assert second.invocation_id == "adk-set/two_turns/1"
    assert second.tool_calls == (
        ToolCall(name="get_weather", args={"city": "Rome"}, result={"t": 25}),
    )
    assert second.intermediate_responses == (AgentText(author="root", text="Checking Rome."),)
    assert second.final_response == "25C."
    queries = "webSearchQueries" if by_alias else "web_search_queries"
    assert second.grounding == (AgentGrounding(author="searcher", metadata={queries: ["rome"]}),)
    assert first.grounding == ()
    # The agents' instructions and tools, as ADK's judges are shown them.
    assert (first.system_instructions, first.tool_definitions) == ("Be brief.", None)
    assert second.system_instructions == (
        "root:\nRoute weather questions.\n\ncritic:\nCheck the answer."
    )
    assert second.tool_definitions == {
        "root": [
            {
                "function_declarations": [
                    {"name": "get_weather", "description": "Weather in a city."}
                ]
            }
        ]
    }
    assert [r.rubric_id for r in case.rubrics] == ["case-r"]
    assert [[r.rubric_id for r in rs] for rs in case.turn_rubrics] == [["r1"], []]
    assert case.turn_rubrics[0][0].text == "Mentions the temperature."
    assert case.turn_rubrics[0][0].type == "FINAL_RESPONSE_QUALITY"
    assert case.session_input == {
        "app_name": "weather_app",
        "user_id": "u1",
        "state": {"units": "C"},
    }
    assert case.scenario is None
    assert scenario_case.turns == ()
    assert scenario_case.scenario is not None
    assert scenario_case.scenario.starting_prompt == "I need a flight."
    assert scenario_case.scenario.conversation_plan == "Book SFO to LAX."


def test_tool_calls_agree_with_adks_own_readers() -> None:
    evalset = _adk_evalset()
    gset = parse_goldens(_dump(evalset, by_alias=True), source="x.evalset.json")
    conversation = evalset.eval_cases[0].conversation
    assert conversation is not None
    for adk_inv, ours in zip(conversation, gset.cases[0].turns, strict=True):
        pairs = adk_case.get_all_tool_calls_with_responses(adk_inv.intermediate_data)
        assert [(c.name, c.args, c.id) for c, _ in pairs] == [
            (t.name, t.args, t.id) for t in ours.tool_calls
        ]
        # ADK joins by id only; where it found a response, ours is the same one.
        for (_, resp), tool in zip(pairs, ours.tool_calls, strict=True):
            if resp is not None:
                assert resp.response == tool.result


def test_reference_minimal_evalset() -> None:
    gset = parse_goldens(REFERENCE_MINIMAL, source="weather.evalset.json")
    (turn,) = gset.cases[0].turns
    assert turn.user_content == "Weather in Paris?"
    assert turn.final_response == "It is 21C in Paris."
    assert turn.tool_calls == (ToolCall(name="get_weather", args={"city": "Paris"}),)
    assert turn.invocation_id == "weather/paris/0"


def test_tool_arguments_nested_1000_deep_load() -> None:
    """The typed pass (msgspec) stops short of 1000 levels and raised RecursionError, a
    traceback from ``replay --goldens``; the reader after it takes up to 1024."""
    deep = "[" * 1000 + "]" * 1000
    text = REFERENCE_MINIMAL.replace('{"city": "Paris"}', '{"city": ' + deep + "}")
    assert text != REFERENCE_MINIMAL
    (turn,) = parse_goldens(text, source="deep.evalset.json").cases[0].turns
    args = turn.tool_calls[0].args
    assert isinstance(args, dict)
    value, levels = args["city"], 0
    while isinstance(value, list):
        value, levels = (value[0] if value else None), levels + 1
    assert levels == 1000


def test_old_test_json_is_one_case_like_adks_conversion(tmp_path: Path) -> None:
    turns: list[dict[str, Any]] = [
        {
            "query": "Roll a 17 sided die twice",
            "expected_tool_use": [
                {"tool_name": "roll_die", "tool_input": {"sides": 17}, "mock_tool_output": 3},
                {"tool_name": "roll_die", "tool_input": {"sides": 17}},
            ],
            "expected_intermediate_agent_responses": [{"author": "helper", "text": "rolling"}],
            "reference": "13 and 4.",
        },
        {"query": "What can you do?"},
    ]
    path = tmp_path / "dice.test.json"
    path.write_text(json.dumps(turns))
    (gset,) = load_goldens([str(path)])
    assert (gset.format, gset.eval_set_id, gset.path) == ("test_json", "dice", str(path))
    (case,) = gset.cases
    assert case.eval_id == "dice"
    adk = convert_eval_set_to_pydantic_schema("dice", [{"name": "dice", "data": turns}])
    adk_turns = adk.eval_cases[0].conversation
    assert adk_turns is not None
    assert len(case.turns) == len(adk_turns) == 2
    for ours, theirs in zip(case.turns, adk_turns, strict=True):
        assert ours.user_content == theirs.user_content.parts[0].text  # type: ignore[index]
        assert ours.final_response == theirs.final_response.parts[0].text  # type: ignore[union-attr,index]
        calls = adk_case.get_all_tool_calls(theirs.intermediate_data)
        assert [(t.name, t.args) for t in ours.tool_calls] == [(c.name, c.args) for c in calls]
    assert case.turns[0].intermediate_responses == (AgentText(author="helper", text="rolling"),)
    assert case.turns[1].final_response == ""


def _inv(conv: str | None, start: int, **kw: Any) -> Invocation:
    base: dict[str, Any] = {
        "trace_id": f"{start:032x}",
        "invocation_id": f"e-{start}",
        "conversation_id": conv,
        "agent": "weather_agent",
        "user_content": f"question {start}",
        "final_response": f"answer {start}",
        "start_ns": start * 10**9,
        "root_span_id": f"{start:016x}",
    }
    base.update(kw)
    return Invocation(**base)


def test_our_writer_output_round_trips(tmp_path: Path) -> None:
    invs = [
        _inv("s1", 1, intermediate_responses=(AgentText(author="a", text="hm"),)),
        _inv(
            "s1",
            2,
            tool_calls=(
                ToolCall(name="f", args={"x": 1}, id="c1", result={"ok": True}),
                ToolCall(name="f", args={"x": 2}, id="c2", result="plain"),
                ToolCall(name="g", args=None),
            ),
        ),
        _inv(None, 3, final_response=None),
    ]
    doc, written, _ = conversations_to_evalset(group_conversations(invs), eval_set_id="prod")
    path = tmp_path / "prod.evalset.json"
    path.write_bytes(orjson.dumps(doc))
    (gset,) = load_goldens([str(path)])
    assert written == 3
    loaded = [t for c in gset.cases for t in c.turns]
    for original, golden in zip(invs, loaded, strict=True):
        assert golden.invocation_id == original.invocation_id
        assert golden.user_content == original.user_content
        assert golden.final_response == original.final_response
        assert golden.intermediate_responses == original.intermediate_responses
        assert golden.start_ns == original.start_ns
        assert [(t.name, t.args, t.id) for t in golden.tool_calls] == [
            (t.name, t.args, t.id) for t in original.tool_calls
        ]
    # Results keep the writer's dict wrapping of non-dict values.
    assert [t.result for t in loaded[1].tool_calls] == [{"ok": True}, {"result": "plain"}, None]
    assert [c.eval_id for c in gset.cases] == [doc["eval_cases"][i]["eval_id"] for i in (0, 1)]  # type: ignore[index,call-overload]


def test_extras_follow_adks_config(caplog: pytest.LogCaptureFixture) -> None:
    doc = {
        "eval_set_id": "x",
        "schema_note": "ignored at the top level",
        "eval_cases": [
            {
                "eval_id": "a",
                "custom_case_field": 1,
                "session_input": {"app_name": "app", "user_id": "u", "tenant": "t1"},
                "conversation": [
                    {
                        "user_content": {"parts": [{"text": "hi"}]},
                        "intermediate_data": {
                            "invocation_events": [
                                {"author": "root", "invocationIndex": 0, "toolUseIndex": 2}
                            ]
                        },
                    }
                ],
            }
        ],
    }
    with caplog.at_level(logging.WARNING, logger="tracescore.goldens"):
        gset = parse_goldens(json.dumps(doc), source="x.evalset.json")
    assert EvalSet.model_validate(doc).eval_cases[0].eval_id == "a"  # ADK accepts it too
    assert gset.cases[0].session_input == {
        "app_name": "app",
        "user_id": "u",
        "state": {},
        "tenant": "t1",
    }
    assert "schema_note" in caplog.text


def test_directory_and_duplicate_eval_ids(tmp_path: Path) -> None:
    (tmp_path / "a.evalset.json").write_text(REFERENCE_MINIMAL)
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "weather.test.json").write_text(json.dumps([{"query": "q"}]))
    (sub / "notes.json").write_text("not json")  # not a goldens file name: skipped
    sets = load_goldens([str(tmp_path)])
    assert [s.eval_set_id for s in sets] == ["weather", "weather"]
    assert [c.eval_id for s in sets for c in s.cases] == ["paris", "weather"]
    (tmp_path / "b.evalset.json").write_text(REFERENCE_MINIMAL)
    with pytest.raises(ConfigError) as err:
        load_goldens([str(tmp_path / "a.evalset.json"), str(tmp_path / "b.evalset.json")])
    message = str(err.value)
    assert "a.evalset.json" in message
    assert "b.evalset.json" in message
    assert "'paris'" in message


def test_a_goldens_directory_that_cannot_be_listed_is_a_config_error(
    tmp_path: Path, refuse_listing: Callable[[Path], None]
) -> None:
    # Path.rglob used to skip it silently, and its goldens were missing from every verdict.
    (tmp_path / "a.evalset.json").write_text(REFERENCE_MINIMAL)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "b.evalset.json").write_text(REFERENCE_MINIMAL)
    refuse_listing(locked)
    with pytest.raises(ConfigError) as err:
        load_goldens(str(tmp_path))
    assert str(err.value) == f"{locked}: cannot list goldens directory: Permission denied"


def test_duplicate_eval_id_within_one_file(tmp_path: Path) -> None:
    doc = json.loads(REFERENCE_MINIMAL)
    doc["eval_cases"] *= 2
    path = tmp_path / "dup.evalset.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match=r"dup\.evalset\.json: duplicate eval case 'paris'"):
        load_goldens([str(path)])


def test_one_file_named_twice_is_loaded_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A directory and a file in it (or two spellings of a path) used to clash with itself:
    # "duplicate eval case 'paris'".
    (tmp_path / "a.evalset.json").write_text(REFERENCE_MINIMAL)
    monkeypatch.chdir(tmp_path)
    named = [str(tmp_path), "a.evalset.json", "./a.evalset.json"]
    assert golden_files(named) == [str(tmp_path / "a.evalset.json")]
    [gset] = load_goldens(named)
    assert [c.eval_id for c in gset.cases] == ["paris"]


def test_same_eval_id_in_two_eval_sets_is_allowed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    other = json.loads(REFERENCE_MINIMAL)
    other["eval_set_id"] = "other"
    (tmp_path / "a.evalset.json").write_text(REFERENCE_MINIMAL)
    (tmp_path / "b.evalset.json").write_text(json.dumps(other))
    with caplog.at_level(logging.WARNING, logger="tracescore.goldens"):
        sets = load_goldens([str(tmp_path)])
    assert len(sets) == 2
    assert "tracescore.golden.eval_set_id" in caplog.text


def _case_with(**turn: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"user_content": {"parts": [{"text": "hi"}]}}
    base.update(turn)
    return {"eval_set_id": "s", "eval_cases": [{"eval_id": "c", "conversation": [base]}]}


ERROR_CASES: list[tuple[str, Any, str]] = [
    ("missing eval_set_id", {"eval_cases": []}, "(top level): missing required key eval_set_id"),
    (
        "camelCase eval set keys",
        {"evalSetId": "s", "eval_cases": []},
        "missing required key eval_set_id",
    ),
    (
        "missing user_content",
        {"eval_set_id": "s", "eval_cases": [{"eval_id": "c", "conversation": [{}]}]},
        "eval_cases[0].conversation[0]: missing required key user_content (or userContent)",
    ),
    (
        "unknown key in a part",
        _case_with(user_content={"parts": [{"txt": "hi"}]}),
        "eval_cases[0].conversation[0].user_content.parts[0].txt: unknown key; "
        "allowed keys (snake_case or camelCase): text, thought, function_call",
    ),
    (
        "unknown camelCase key in tool uses",
        _case_with(intermediateData={"toolUses": [{"name": "f", "argz": {}}]}),
        "eval_cases[0].conversation[0].intermediateData.toolUses[0].argz: unknown key; "
        "allowed keys (snake_case or camelCase): id, args, name, partial_args, will_continue",
    ),
    (
        "unknown key in invocation events container",
        _case_with(intermediate_data={"invocation_events": [], "tool_uses": []}),
        "eval_cases[0].conversation[0].intermediate_data.tool_uses: unknown key; "
        "allowed keys (snake_case or camelCase): invocation_events",
    ),
    (
        "wrong type",
        _case_with(user_content={"parts": [{"text": 3}]}),
        "eval_cases[0].conversation[0].user_content.parts[0].text: "
        "Input should be a valid string (got int)",
    ),
    (
        "args not an object",
        _case_with(intermediate_data={"tool_uses": [{"name": "f", "args": [1]}]}),
        "intermediate_data.tool_uses[0].args: Input should be a valid dictionary (got list)",
    ),
    (
        "both conversation and scenario",
        {
            "eval_set_id": "s",
            "eval_cases": [
                {
                    "eval_id": "c",
                    "conversation": [],
                    "conversation_scenario": {"starting_prompt": "a", "conversation_plan": "b"},
                }
            ],
        },
        "eval_cases[0]: exactly one of 'conversation' and 'conversation_scenario'",
    ),
    (
        "timestamp past int64 nanoseconds",
        _case_with(creation_timestamp=1e300),
        "eval_cases[0].conversation[0].creation_timestamp: Input should be less than or equal",
    ),
    (
        "negative duration past int64 nanoseconds",
        _case_with(duration=-1e10),
        "eval_cases[0].conversation[0].duration: Input should be greater than or equal",
    ),
    ("not an object", 42, "expected an EvalSet object (or an old-format list of turns), got int"),
    (
        "old format without query",
        [{"reference": "x"}],
        "[0]: missing required key query",
    ),
    ("old format empty", [], "needs at least one turn"),
]


@pytest.mark.parametrize(
    ("doc", "expected"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES]
)
def test_validation_errors_name_file_and_location(tmp_path: Path, doc: Any, expected: str) -> None:
    path = tmp_path / "bad.evalset.json"
    path.write_text(json.dumps(doc, indent=2))
    with pytest.raises(ConfigError) as err:
        load_goldens([str(path)])
    message = str(err.value)
    assert message.startswith(f"{path}: ")
    assert expected in message
    assert "\n" not in message
    # No chained pydantic/JSON traceback behind the one-line message.
    assert err.value.__cause__ is None
    assert err.value.__context__ is None or err.value.__suppress_context__


def test_bad_json_reports_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "broken.evalset.json"
    path.write_text('{"eval_set_id": "s",\n  "eval_cases": [,]}\n')
    with pytest.raises(ConfigError, match=r"broken\.evalset\.json:2:18: invalid JSON: "):
        load_golden_file(str(path))


def test_unreadable_paths(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.evalset\.json: cannot read goldens file"):
        load_goldens([str(tmp_path / "missing.evalset.json")])
    with pytest.raises(ConfigError, match=r"no \*\.evalset\.json or \*\.test\.json files"):
        load_goldens([str(tmp_path)])
    (tmp_path / "latin1.evalset.json").write_bytes(b'{"eval_set_id": "\xe9"}')
    with pytest.raises(ConfigError, match=r"latin1\.evalset\.json: not UTF-8 text \(invalid"):
        load_goldens([str(tmp_path / "latin1.evalset.json")])
    (tmp_path / "notepad.evalset.json").write_bytes('{"eval_set_id": "s"}'.encode("utf-16"))
    with pytest.raises(ConfigError, match=r"json: not UTF-8 text but UTF-16: save it as UTF-8$"):
        load_goldens([str(tmp_path / "notepad.evalset.json")])


def test_golden_files_expands_and_checks_without_parsing(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.evalset.json").write_text("not even JSON")
    (tmp_path / "a.test.json").write_text("{}")
    (tmp_path / "notes.json").write_text("{}")
    assert golden_files([str(tmp_path)]) == [
        str(tmp_path / "a.test.json"),
        str(tmp_path / "sub" / "b.evalset.json"),
    ]
    with pytest.raises(ConfigError, match=r"missing\.evalset\.json: cannot read goldens file"):
        golden_files([str(tmp_path / "a.test.json"), str(tmp_path / "missing.evalset.json")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"no \*\.evalset\.json or \*\.test\.json files"):
        golden_files([str(tmp_path / "empty")])
    assert golden_files([]) == []


def test_golden_set_is_frozen() -> None:
    gset = parse_goldens(REFERENCE_MINIMAL, source="w.evalset.json")
    assert isinstance(gset, GoldenSet)
    with pytest.raises(AttributeError):
        gset.eval_set_id = "other"  # type: ignore[misc]
