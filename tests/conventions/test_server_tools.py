"""Hosted tools of the OpenAI Responses API: items of the reply, not the agent's calls.

Built from what OpenInference's OpenAI Agents instrumentation writes (checked against
the real SDK in ``test_openai_agents_real.py``): a hosted tool as a tool call named
after its item type, a file search's results as a ``tool`` message answering it within
the same output.
"""

from __future__ import annotations

from typing import Any

from conv_helpers import TraceBuilder, to_json

from tracescore.conventions.base import SpanView
from tracescore.conventions.messages import (
    JsonValue,
    Message,
    OtherPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    message_from_obj,
    response_reply,
)
from tracescore.conventions.openinference import OpenInference
from tracescore.conventions.server_tools import file_search_texts, hosted_calls
from tracescore.trajectory import build_invocations

RESULTS: list[JsonValue] = [
    {"file_id": "f1", "filename": "a.md", "score": 0.9, "text": "Lima: sunny."},
    {"file_id": "f2", "filename": "b.md", "score": 0.4, "text": "Oslo: rain."},
    {"file_id": "f3", "filename": "c.md", "score": 0.1},  # text not included
]


def _assistant(*parts: Any) -> Message:
    return Message(role="assistant", parts=tuple(parts))


def test_a_call_answered_in_its_own_output_is_the_providers() -> None:
    search = ToolCallPart(name="file_search_call", args={"queries": ["lima"]}, id="fs_1")
    mine = ToolCallPart(name="get_weather", args={"city": "Lima"}, id="call_1")
    answer = Message(role="tool", parts=(ToolResultPart(name=None, response=RESULTS, id="fs_1"),))
    text = _assistant(TextPart(text="Sunny."))
    out = hosted_calls([_assistant(search), answer, _assistant(mine), text])
    assert out == [
        _assistant(
            OtherPart(
                type="file_search_call",
                data={
                    "type": "file_search_call",
                    "id": "fs_1",
                    "queries": ["lima"],
                    "results": RESULTS,
                },
            )
        ),
        _assistant(mine),  # the agent's call: its result comes with the next request
        text,
    ]
    assert out[2] is text  # untouched messages are the same objects
    assert file_search_texts(out) == ["Lima: sunny.", "Oslo: rain."]


def test_a_hosted_call_is_known_by_its_item_type_without_results() -> None:
    """A web search writes no results: its name says what it is; any other name, not
    answered in the output, is the agent's own call (even one named like a search)."""
    web = ToolCallPart(name="web_search_call", args={"query": "lima", "type": "search"}, id="ws_1")
    own = ToolCallPart(name="file_search", args={}, id="call_9")
    [reply] = hosted_calls([_assistant(web, own, TextPart(text="Sunny."))])
    assert reply.parts == (
        OtherPart(
            type="web_search_call", data={"type": "web_search_call", "id": "ws_1", "query": "lima"}
        ),
        own,
        TextPart(text="Sunny."),
    )
    assert file_search_texts([reply]) == []


def test_file_search_texts_of_a_response_object() -> None:
    """The ``Response`` object keeps the item whole, results included."""
    item = {"type": "file_search_call", "id": "fs_1", "queries": ["q"], "results": RESULTS}
    message = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Sunny.", "annotations": []}],
    }
    reply = response_reply({"object": "response", "output": [item, message]})
    assert reply is not None
    assert file_search_texts([reply]) == ["Lima: sunny.", "Oslo: rain."]
    no_results = response_reply({"object": "response", "output": [{**item, "results": None}]})
    assert no_results is not None and file_search_texts([no_results]) == []


def _search_reply(final: str) -> dict[str, Any]:
    """An OpenInference LLM span of a Responses API call that searched files, then answered."""
    out = "llm.output_messages."
    return {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "Weather in Lima?",
        "output.value": to_json({"id": "resp_1", "object": "response", "output": []}),
        f"{out}0.message.role": "assistant",
        f"{out}0.message.tool_calls.0.tool_call.id": "fs_1",
        f"{out}0.message.tool_calls.0.tool_call.function.name": "file_search_call",
        f"{out}0.message.tool_calls.0.tool_call.function.arguments": to_json({"queries": ["lima"]}),
        f"{out}1.message.role": "tool",
        f"{out}1.message.tool_call_id": "fs_1",
        f"{out}1.message.content": to_json(RESULTS),
        f"{out}2.message.role": "assistant",
        f"{out}2.message.content": final,
    }


def test_an_openinference_run_that_searched_files_answered_and_read_them() -> None:
    t = TraceBuilder()
    agent = t.span("librarian", {"openinference.span.kind": "AGENT", "agent.name": "librarian"})
    t.span("response", _search_reply("Lima is sunny."), parent=agent)
    [inv] = build_invocations(t.spans)
    assert (inv.status, inv.tool_calls, inv.final_response) == ("ok", (), "Lima is sunny.")
    assert inv.retrieved == ("Lima: sunny.", "Oslo: rain.")
    assert inv.warnings == ()
    [bare] = build_invocations(t.spans, model_context=False)
    assert (bare.retrieved, bare.final_response) == ((), "Lima is sunny.")


def test_a_chat_completion_keeps_its_choices_and_calls() -> None:
    """Outside the Responses API nothing is read as hosted: a tool message in the output
    of a chat completion stays what it was."""
    attrs = _search_reply("Lima is sunny.")
    attrs["output.value"] = to_json({"id": "c1", "object": "chat.completion", "choices": []})
    found = OpenInference().llm_output(SpanView(TraceBuilder().span("chat", attrs)))
    assert found is not None
    assert found.value[0].parts == (
        ToolCallPart(name="file_search_call", args={"queries": ["lima"]}, id="fs_1"),
    )
    assert OpenInference().retrieved(SpanView(TraceBuilder().span("chat", attrs))) is None


def test_a_native_tool_in_genai_parts_is_the_providers() -> None:
    """pydantic-ai marks its native tools' parts ``"builtin": true`` (the GenAI
    conventions' ``server_tool_call``): the reply's, not the agent's calls."""
    msg = message_from_obj(
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "ws_1", "name": "web_search", "builtin": True},
                {"type": "tool_call_response", "id": "ws_1", "builtin": True, "result": {}},
                {"type": "tool_call", "id": "c1", "name": "get_weather", "builtin": False},
                {"type": "text", "content": "Sunny."},
            ],
        }
    )
    assert msg is not None
    assert [type(p).__name__ for p in msg.parts] == [
        "OtherPart",
        "OtherPart",
        "ToolCallPart",
        "TextPart",
    ]
    assert [p.type for p in msg.parts if isinstance(p, OtherPart)] == [
        "server_tool_call",
        "server_tool_call_response",
    ]
    assert [c.name for c in msg.tool_calls()] == ["get_weather"]
