"""What a run said before a model call: user text, results by id, replies without a span."""

from __future__ import annotations

import json
from typing import Any

from spanbuilder import TraceBuilder, agent, call, chat, reply, text, tool, user
from tracescore import build_invocations
from tracescore.history import _canonical

UNSEEN = "read from a later model call's input"


def tool_result(cid: str, result: Any, name: str = "final_result") -> dict[str, Any]:
    return {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": cid, "name": name, "result": result}],
    }


def history_run(history: list[dict[str, Any]], *calls: dict[str, Any]) -> list[Any]:
    """A pydantic-ai-like run whose last response makes ``calls`` nothing else answers."""
    tb = TraceBuilder()
    root = agent(tb, "a", **{"pydantic_ai.all_messages": history})
    chat(tb, root, [user("now")], reply(*calls))
    return build_invocations(tb.spans)


def test_results_no_span_gave_come_from_the_current_run_in_the_history_by_id() -> None:
    earlier = [user("before"), *reply(call("final_result", {}, "c1")), tool_result("c1", "stale")]
    now = [user("now"), *reply(call("final_result", {"v": 1}, "c1"))]
    [inv] = history_run(
        [*earlier, *now, tool_result("c1", "Final result processed.")],
        call("final_result", {"v": 1}, "c1"),
    )
    assert [(c.name, c.result) for c in inv.tool_calls] == [
        ("final_result", "Final result processed.")
    ]
    assert inv.provenance["tool_results"] == "pydantic_ai.all_messages"
    # Not from an earlier turn that reused the id, nor paired by name.
    [inv] = history_run([*earlier, *now], call("final_result", {"v": 1}, "c1"))
    assert inv.tool_calls[0].result is None
    assert "tool_results" not in inv.provenance
    [inv] = history_run([*now, tool_result("c7", "other")], call("final_result", {"v": 1}, "c1"))
    assert inv.tool_calls[0].result is None


def collapsed_run(history: list[dict[str, Any]], final: str, *tools: tuple[str, Any]) -> Any:
    """One agent whose model calls all wrote onto one span: the last input and output.

    Its tool spans (``(name, result)``) are children of that span, as OpenInference's
    google-adk instrumentor leaves them over ADK schema 2.
    """
    tb = TraceBuilder()
    root = agent(tb, "a")
    model = chat(tb, root, history, reply(text(final)))
    for name, result in tools:
        tool(tb, model, name, None, result)
    [inv] = build_invocations(tb.spans)
    return inv


def test_replies_only_the_last_input_shows_are_rebuilt_before_it() -> None:
    history = [
        user("earlier turn"),
        *reply(text("earlier answer")),
        user("Weather in Paris, in F?"),
        *reply(text("Let me check."), call("weather", {"city": "Paris"}, "w_0")),
        tool_result("w_0", {"c": 21}, "weather"),
        *reply(call("to_f", '{"c": 21}', "f_0")),
        tool_result("f_0", {"f": 70}, "to_f"),
    ]
    inv = collapsed_run(history, "It is 70F.", ("weather", {"c": 21}), ("to_f", {"f": 70}))
    assert inv.user_content == "Weather in Paris, in F?"
    assert [(c.name, c.args, c.result) for c in inv.tool_calls] == [
        ("weather", {"city": "Paris"}, {"c": 21}),
        ("to_f", {"c": 21}, {"f": 70}),  # JSON text args are read as JSON
    ]
    assert all(c.span_id is not None for c in inv.tool_calls)  # joined to their spans
    assert [(r.author, r.text) for r in inv.intermediate_responses] == [("a", "Let me check.")]
    assert inv.final_response == "It is 70F."
    assert inv.inference_calls == 3
    assert [w for w in inv.warnings if UNSEEN in w] == [
        "model replies read from a later model call's input (their calls left no span of"
        " their own; their token usage is not counted): 2"
    ]
    assert not [w for w in inv.warnings if "matches no model output" in w]


def test_results_of_rebuilt_replies_come_from_the_history_without_tool_spans() -> None:
    history = [user("q"), *reply(call("t", {}, "t_0")), tool_result("t_0", "r", "t")]
    tb = TraceBuilder()
    root = agent(tb, "a")
    model = chat(tb, root, history, reply(call("u", {}), text("and more")))
    tool(tb, model, "u", {}, "ru")
    tool(tb, model, "t", None, None)  # ran, recorded no result
    [inv] = build_invocations(tb.spans)
    assert [(c.name, c.result) for c in inv.tool_calls] == [("t", "r"), ("u", "ru")]
    assert inv.inference_calls == 2


def test_a_reply_the_history_spells_otherwise_is_not_counted_twice() -> None:
    """A run with spans for every call and one tool nobody asked for: nothing is rebuilt.

    The history re-encodes the first reply (args as JSON text, keys reordered, other ids,
    trailing space): it is still the reply the first span recorded.
    """
    tb = TraceBuilder()
    root = agent(tb, "a")
    first = reply(text("Checking."), call("t", {"x": 1, "y": [2, 3]}, "c1"))
    chat(tb, root, [user("q")], first)
    tool(tb, root, "t", {"x": 1, "y": [2, 3]}, "r1", "c1")
    tool(tb, root, "audit", {}, "logged")  # the framework's own, no model call asked for it
    again = reply(text("Checking. "), call("t", '{"y": [2, 3], "x": 1}', "other-id"))
    chat(tb, root, [user("q"), *again, tool_result("other-id", "r1", "t")], reply(text("Done.")))
    [inv] = build_invocations(tb.spans)
    assert [c.name for c in inv.tool_calls] == ["t", "audit"]
    assert [r.text for r in inv.intermediate_responses] == ["Checking."]
    assert inv.inference_calls == 2
    assert not [w for w in inv.warnings if UNSEEN in w]
    assert [w for w in inv.warnings if "matches no model output" in w]


def test_replies_without_calls_and_repeated_replies_are_not_rebuilt() -> None:
    """A text-only reply in the history ends a turn: never a lost call of this span.

    The same reply twice (the model called the same tool twice in two calls, each with
    its span) matches both spans' replies, one each.
    """
    tb = TraceBuilder()
    root = agent(tb, "a")
    same = reply(call("t", {}))
    chat(tb, root, [user("q")], same)
    tool(tb, root, "t", {}, "r")
    chat(tb, root, [user("q"), *same, tool_result("x", "r", "t")], same)
    tool(tb, root, "t", {}, "r")
    tool(tb, root, "extra", {}, "e")
    history = [user("q"), *same, *same, *reply(text("thinking aloud")), *same]
    chat(tb, root, history, reply(text("Done.")))
    [inv] = build_invocations(tb.spans)
    # One reply in the last input (the third ``same``) had no span: it is rebuilt, once.
    assert [c.name for c in inv.tool_calls] == ["t", "t", "t", "extra"]
    assert [r.text for r in inv.intermediate_responses] == []
    assert inv.inference_calls == 4


def test_args_too_deep_to_encode_still_compare() -> None:
    deep = "[" * 300 + "]" * 300  # deeper than orjson writes (it reads up to 1024)
    history = [user("q"), *reply(call("t", "@", "t_0")), tool_result("t_0", "r", "t")]
    encoded = json.dumps(history).replace('"arguments": "@"', f'"arguments": {deep}')
    tb = TraceBuilder()
    root = agent(tb, "a")
    model = chat(tb, root, encoded, reply(text("ok")))  # type: ignore[arg-type]
    tool(tb, model, "t", None, "r")
    [inv] = build_invocations(tb.spans)
    assert [c.name for c in inv.tool_calls] == ["t"]
    assert inv.inference_calls == 2


def test_args_are_compared_in_one_spelling() -> None:
    assert _canonical('{"b": 1, "a": [1, 2]}') == _canonical({"a": [1, 2], "b": 1})
    assert _canonical("not json") == b"not json"
    assert _canonical("lone \ud800") == "lone \ud800".encode("utf-8", "surrogatepass")
    assert _canonical(b"\x00") == _canonical(b"\x00")  # bytes: not JSON, still a key
