"""Matching live invocations to golden turns: explicit tags, normalised text, conversations."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from tracescore.evalset import conversations_to_evalset
from tracescore.goldens import (
    EVAL_ID_TAG,
    EVAL_SET_ID_TAG,
    TURN_TAG,
    GoldenIndex,
    GoldenRef,
    load_goldens,
    normalize_text,
    parse_goldens,
)
from tracescore.importer import ImportStats, import_paths
from tracescore.model import Invocation, group_conversations

EXAMPLES = Path(__file__).parents[2] / "examples" / "traces"


def _evalset(set_id: str, cases: dict[str, Sequence[str]], **scenarios: str) -> str:
    """An evalset whose cases are lists of user texts (final response = "re: <text>")."""
    doc: dict[str, Any] = {
        "eval_set_id": set_id,
        "eval_cases": [
            {
                "eval_id": eval_id,
                "conversation": [
                    {
                        "user_content": {"parts": [{"text": t}]},
                        "final_response": {"parts": [{"text": f"re: {t}"}]},
                    }
                    for t in texts
                ],
            }
            for eval_id, texts in cases.items()
        ]
        + [
            {
                "eval_id": eval_id,
                "conversation_scenario": {"starting_prompt": prompt, "conversation_plan": "p"},
            }
            for eval_id, prompt in scenarios.items()
        ],
    }
    return json.dumps(doc)


def _index(*docs: str) -> GoldenIndex:
    return GoldenIndex(parse_goldens(d, source=f"{i}.evalset.json") for i, d in enumerate(docs))


WEATHER = _evalset(
    "weather",
    {
        "paris": ["Weather in Paris?"],
        "trip": ["Plan a trip", "To Rome", "In May"],
        "trip_b": ["Plan a trip", "To Oslo"],
        "hello_a": ["Hello"],
        "hello_b": ["Hello"],
    },
    flight="I need a flight.",
)


def _inv(text: str | None, start: int = 1, conv: str | None = None, **kw: Any) -> Invocation:
    return Invocation(
        trace_id=f"{start:032x}",
        invocation_id=f"i{start}",
        conversation_id=conv,
        user_content=text,
        start_ns=start,
        **kw,
    )


def test_normalize_text() -> None:
    assert normalize_text("  ＷＥＡＴＨＥＲ\u3000in\tPARIS?\n") == "weather in paris?"
    assert normalize_text("Straße") == normalize_text("STRASSE")
    assert normalize_text("ﬁle") == "file"  # NFKC ligature


@pytest.mark.parametrize(
    "text",
    [
        "Weather in Paris?",
        "weather in paris?",
        "  Weather   in\nParis? ",
        "ＷＥＡＴＨＥＲ　ｉｎ Ｐａｒｉｓ？",
    ],
)
def test_text_match_is_normalised(text: str) -> None:
    match = _index(WEATHER).match(_inv(text))
    assert match.outcome == "matched"
    assert match.method == "text"
    assert match.ref == GoldenRef("weather", "paris")
    assert match.turn == 0
    assert match.expected is not None
    assert match.expected.final_response == "re: Weather in Paris?"


def test_no_golden() -> None:
    index = _index(WEATHER)
    match = index.match(_inv("Weather in Tokyo?"))
    assert (match.outcome, match.case, match.expected) == ("no_golden", None, None)
    assert "no golden case has this user text" in match.reason
    assert index.match(_inv(None)).reason == "the invocation has no user text to match"
    nested = _inv("Weather in Paris?", parent_tool_span_id="ab" * 8)
    assert "called as a tool" in index.match(nested).reason
    missing = _inv("Weather in Paris?", status="not_evaluable")
    assert index.match(missing).outcome == "no_golden"


def test_ambiguous_first_message_lists_candidates() -> None:
    match = _index(WEATHER).match(_inv("hello"))
    assert match.outcome == "ambiguous"
    assert match.case is None
    assert match.candidates == (GoldenRef("weather", "hello_a"), GoldenRef("weather", "hello_b"))
    assert "weather/hello_a, weather/hello_b" in match.reason


def test_eval_set_id_tag_restricts_text_matching() -> None:
    other = _evalset("other", {"hello_c": ["Hello"]})
    index = _index(WEATHER, other)
    assert len(index) == 7
    assert index.match(_inv("Hello")).candidates == (
        GoldenRef("other", "hello_c"),
        GoldenRef("weather", "hello_a"),
        GoldenRef("weather", "hello_b"),
    )
    match = index.match(_inv("Hello", tags={EVAL_SET_ID_TAG: "other"}))
    assert match.ref == GoldenRef("other", "hello_c")
    elsewhere = index.match(_inv("Weather in Paris?", tags={EVAL_SET_ID_TAG: "other"}))
    assert elsewhere.reason == "no golden case in eval set 'other' has this user text"


def test_multi_turn_matches_turn_by_turn() -> None:
    index = _index(WEATHER)
    conv = [_inv("To Rome", 20, "s"), _inv("In May", 30, "s"), _inv("plan a trip", 10, "s")]
    # Given unordered: ordered by start time. Turn 0 is shared by trip and trip_b, but the
    # conversation's later turns only agree with trip.
    matches = [index.match(inv, conversation=conv) for inv in conv]
    assert [(m.outcome, m.ref, m.turn) for m in matches] == [
        ("matched", GoldenRef("weather", "trip"), 1),
        ("matched", GoldenRef("weather", "trip"), 2),
        ("matched", GoldenRef("weather", "trip"), 0),
    ]
    assert matches[0].expected is not None
    assert matches[0].expected.user_content == "To Rome"


def test_multi_turn_prefix_must_match() -> None:
    index = _index(WEATHER)
    first = _inv("Plan a trip", 1, "s")
    # Turn 0 alone cannot tell trip from trip_b: reported, not guessed.
    alone = index.match(first, conversation=[first])
    assert alone.outcome == "ambiguous"
    assert "same first message" in alone.reason
    assert {str(c) for c in alone.candidates} == {"weather/trip", "weather/trip_b"}
    # A second turn that is in neither case: turn 1 has no golden.
    off = _inv("To Paris", 2, "s")
    match = index.match(off, conversation=[first, off])
    assert match.outcome == "no_golden"
    assert "first 2 user texts" in match.reason
    # A conversation longer than its case: the extra turn has no golden.
    conv = [_inv("Plan a trip", 1, "s"), _inv("To Oslo", 2, "s"), _inv("Thanks", 3, "s")]
    assert index.match(conv[1], conversation=conv).ref == GoldenRef("weather", "trip_b")
    assert index.match(conv[2], conversation=conv).outcome == "no_golden"
    # Turn 1 text without the right turn 0 does not match trip's turn 1.
    stray = [_inv("Hi", 1, "t"), _inv("To Rome", 2, "t")]
    assert index.match(stray[1], conversation=stray).outcome == "no_golden"
    # Only top-level evaluable turns count: a nested agent run does not shift positions.
    nested = _inv("Plan a trip", 2, "u", parent_tool_span_id="cd" * 8)
    conv = [_inv("Plan a trip", 1, "u"), nested, _inv("To Rome", 3, "u")]
    assert index.match(conv[2], conversation=conv).turn == 1


def test_scenario_case_matches_on_starting_prompt() -> None:
    index = _index(WEATHER)
    conv = [_inv("i need a flight.", 1, "s"), _inv("From SFO", 2, "s")]
    first, second = (index.match(inv, conversation=conv) for inv in conv)
    assert (first.ref, first.turn, second.ref, second.turn) == (
        GoldenRef("weather", "flight"),
        0,
        GoldenRef("weather", "flight"),
        1,
    )
    assert first.expected is None  # a simulated conversation has no expected turns
    assert first.case is not None
    assert first.case.scenario is not None
    explicit = index.match(_inv("anything", tags={EVAL_ID_TAG: "flight"}))
    assert (explicit.outcome, explicit.turn, explicit.expected) == ("matched", 0, None)
    tagged = index.match(_inv("x", tags={EVAL_ID_TAG: "flight", TURN_TAG: "7"}))
    assert tagged.turn == 7


def test_explicit_eval_id() -> None:
    index = _index(WEATHER)
    # The tag wins over the text.
    match = index.match(_inv("something else", tags={EVAL_ID_TAG: "paris"}))
    assert (match.outcome, match.method, match.ref, match.turn) == (
        "matched",
        "explicit",
        GoldenRef("weather", "paris"),
        0,
    )
    unknown = index.match(_inv("Weather in Paris?", tags={EVAL_ID_TAG: "nope"}))
    assert unknown.outcome == "no_golden"  # no fallback to the (matching) text
    assert "tracescore.golden.eval_id='nope': no golden case with this id" in unknown.reason


def test_explicit_eval_id_and_turn() -> None:
    index = _index(WEATHER)
    match = index.match(_inv("x", tags={EVAL_ID_TAG: "trip", TURN_TAG: "2"}))
    assert (match.ref, match.turn) == (GoldenRef("weather", "trip"), 2)
    assert match.expected is not None
    assert match.expected.user_content == "In May"
    assert index.match(_inv("x", tags={EVAL_ID_TAG: "trip", TURN_TAG: " 0 "})).turn == 0


@pytest.mark.parametrize("turn", ["3", "-1", "1.0", "one", ""])
def test_explicit_turn_is_validated(turn: str) -> None:
    match = _index(WEATHER).match(_inv("x", tags={EVAL_ID_TAG: "trip", TURN_TAG: turn}))
    assert match.outcome == "no_golden"
    assert f"tracescore.golden.turn={turn!r} is invalid for 'trip': 0-based turn, 0..2" in (
        match.reason
    )


def test_explicit_multi_turn_without_turn_tag() -> None:
    index = _index(WEATHER)
    tags = {EVAL_ID_TAG: "trip"}
    conv = [_inv("a", 1, "s", tags=tags), _inv("b", 2, "s"), _inv("c", 3, "s", tags=tags)]
    # Position among the conversation's invocations tagged with the same eval id.
    assert index.match(conv[2], conversation=conv).turn == 1
    # No conversation: the one turn with the same user text.
    assert index.match(_inv("In May", tags=tags)).turn == 2
    undecided = index.match(_inv("?", tags=tags))
    assert undecided.outcome == "no_golden"
    assert "set tracescore.golden.turn (0-based)" in undecided.reason
    too_long = [_inv("a", i, "s", tags=tags) for i in range(4)]
    assert "beyond case 'trip'" in index.match(too_long[3], conversation=too_long).reason


def test_explicit_eval_id_in_two_sets_needs_the_set_id() -> None:
    other = _evalset("other", {"paris": ["Bonjour"]})
    index = _index(WEATHER, other)
    match = index.match(_inv("x", tags={EVAL_ID_TAG: "paris"}))
    assert match.outcome == "ambiguous"
    assert match.candidates == (GoldenRef("other", "paris"), GoldenRef("weather", "paris"))
    chosen = index.match(_inv("x", tags={EVAL_ID_TAG: "paris", EVAL_SET_ID_TAG: "other"}))
    assert chosen.expected is not None
    assert chosen.expected.user_content == "Bonjour"
    wrong_set = index.match(_inv("x", tags={EVAL_ID_TAG: "trip", EVAL_SET_ID_TAG: "other"}))
    assert "in eval set 'other'" in wrong_set.reason


def test_examples_imported_as_evalset_match_their_own_goldens(tmp_path: Path) -> None:
    invocations = list(import_paths([str(EXAMPLES)], ImportStats()))
    conversations = group_conversations(invocations)
    doc, written, _ = conversations_to_evalset(conversations, eval_set_id="examples")
    path = tmp_path / "examples.evalset.json"
    path.write_bytes(orjson.dumps(doc))
    index = GoldenIndex(load_goldens([str(path)]))
    turns_by_case = {c.eval_id: c.turns for c in index.cases}
    checked = 0
    for conv in conversations:
        for inv in conv.invocations:
            match = index.match(inv, conversation=conv.invocations)
            if inv.status != "ok" or inv.parent_tool_span_id is not None:
                assert match.outcome == "no_golden"
                continue
            assert match.outcome == "matched", match.reason
            assert match.method == "text"
            assert match.case is not None
            expected = match.expected
            assert expected is not None
            assert expected.invocation_id == inv.invocation_id
            assert expected.user_content == inv.user_content
            assert expected.final_response == inv.final_response
            assert [(t.name, t.args) for t in expected.tool_calls] == [
                (t.name, t.args) for t in inv.tool_calls
            ]
            assert turns_by_case[match.case.eval_id][match.turn or 0] is expected
            checked += 1
    assert checked == written >= 8
    assert any(len(t) > 1 for t in turns_by_case.values())  # a multi-turn case was checked
