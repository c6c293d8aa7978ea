"""The evalset we write must load in google-adk itself."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import orjson
from google.adk.evaluation.eval_set import EvalSet
from google.genai import types as genai_types

from tracescore.evalset import conversations_to_evalset
from tracescore.export import invocation_json
from tracescore.model import AgentText, Invocation, ToolCall, group_conversations


def _inv(conv: str | None, start: int, **kw: object) -> Invocation:
    base: dict[str, object] = {
        "trace_id": f"{start:032x}",
        "invocation_id": f"e-{start}",
        "conversation_id": conv,
        "agent": "weather_agent",
        "user_content": f"question {start}",
        "final_response": f"answer {start}",
        "start_ns": start * 10**9,
        "end_ns": start * 10**9 + 1,
        "root_span_id": f"{start:016x}",
    }
    base.update(kw)
    return Invocation(**base)  # type: ignore[arg-type]


def _first_text(content: genai_types.Content) -> str | None:
    """The text of a content's first part (every content here has parts)."""
    assert content.parts
    return content.parts[0].text


def test_written_evalset_loads_in_adk_and_keeps_the_trajectory() -> None:
    invs = [
        _inv("s1", 2, tool_calls=(ToolCall(name="f", args={"x": 1}, id="c1", result="plain"),)),
        _inv("s1", 1, intermediate_responses=(AgentText(author="a", text="hm"),)),
        _inv(None, 3, tool_calls=(ToolCall(name="g", args=None, error="ValueError"),)),
        _inv(
            "s2", 4, status="not_evaluable", reason_code="content_not_captured", user_content=None
        ),
    ]
    doc, written, skipped = conversations_to_evalset(group_conversations(invs), eval_set_id="prod")
    assert (written, skipped) == (3, 1)
    evalset = EvalSet.model_validate_json(orjson.dumps(doc))
    assert evalset.eval_set_id == "prod"
    assert [c.eval_id for c in evalset.eval_cases] == ["s1", f"trace-{3:032x}-{3:016x}"]
    s1 = evalset.eval_cases[0].conversation
    assert s1 is not None
    assert [_first_text(i.user_content) for i in s1] == ["question 1", "question 2"]
    data = s1[1].intermediate_data
    assert data is not None
    assert [(t.name, t.args, t.id) for t in data.tool_uses] == [("f", {"x": 1}, "c1")]  # type: ignore[union-attr]
    assert data.tool_responses[0].response == {"result": "plain"}  # type: ignore[union-attr]
    first = s1[0].intermediate_data
    assert first is not None
    assert first.intermediate_responses[0][0] == "a"  # type: ignore[union-attr]
    assert first.intermediate_responses[0][1][0].text == "hm"  # type: ignore[union-attr]
    lone = evalset.eval_cases[1].conversation
    assert lone is not None
    assert lone[0].intermediate_data.tool_responses[0].response == {"error": "ValueError"}  # type: ignore[union-attr]


def test_eval_ids_are_unique_and_safe() -> None:
    invs = [_inv("a b/c", 1), _inv("a_b_c", 2)]
    doc, _, _ = conversations_to_evalset(group_conversations(invs), eval_set_id="x")
    ids = [c["eval_id"] for c in cast("list[dict[str, Any]]", doc["eval_cases"])]
    assert ids == ["a_b_c", "a_b_c-2"]


def test_import_outputs_never_carry_the_model_context() -> None:
    """Why ``tracescore import`` skips rebuilding it: neither output format writes it.

    Should an output ever carry instructions or tool declarations (ADK's ``app_details``),
    this fails, and ``import_cmd`` must rebuild them again (``model_context=True``).
    """
    tools = [{"name": "f", "parameters": {"type": "object"}}]
    full = _inv(
        "s1",
        1,
        tool_calls=(ToolCall(name="f", args={"x": 1}, id="c1", result="ok"),),
        system_instructions="Be brief.",
        tool_definitions=tools,
    )
    lean = replace(full, system_instructions=None, tool_definitions=None)
    assert invocation_json(lean) == invocation_json(full)
    assert conversations_to_evalset(group_conversations([lean]), eval_set_id="x") == (
        conversations_to_evalset(group_conversations([full]), eval_set_id="x")
    )
