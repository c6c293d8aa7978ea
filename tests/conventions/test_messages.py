from __future__ import annotations

import json

import orjson
import pytest

from tracescore.conventions.messages import (
    JsonValue,
    Message,
    OtherPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    is_not_captured,
    message_from_obj,
    messages_from_value,
    parse_arguments,
    response_reply,
)


def test_genai_shape() -> None:
    msgs = messages_from_value(
        orjson.dumps(
            [
                {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
                {
                    "role": "assistant",
                    "parts": [
                        {"type": "reasoning", "content": "think"},
                        {"type": "tool_call", "id": "1", "name": "f", "arguments": {"a": 1}},
                        {"type": "blob", "mime_type": "image/png"},
                    ],
                },
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "1", "result": 5}]},
            ]
        ).decode()
    )
    assert msgs[0].is_user and msgs[0].text() == "hi"
    assert msgs[1].parts[0] == TextPart(text="think", thought=True)
    assert msgs[1].tool_calls() == [ToolCallPart(name="f", args={"a": 1}, id="1")]
    assert isinstance(msgs[1].parts[2], OtherPart)
    assert msgs[2].tool_results() == [ToolResultPart(name=None, response=5, id="1")]


def test_gemini_shape_snake_and_camel() -> None:
    m = message_from_obj(
        {
            "role": "model",
            "parts": [
                {"text": "a"},
                {"functionCall": {"name": "f", "args": {"x": 1.5}, "id": "adk-1"}},
                {"function_response": {"name": "f", "response": {"r": 1}}},
            ],
        }
    )
    assert m is not None and m.is_assistant
    assert m.text() == "a"
    assert m.tool_calls()[0] == ToolCallPart(name="f", args={"x": 1.5}, id="adk-1")
    assert m.tool_results()[0].response == {"r": 1}


def test_openai_chat_shape() -> None:
    m = message_from_obj(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "x"}],
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"q": "é"}'},
                }
            ],
        }
    )
    assert m is not None
    assert m.text() == "x"
    assert m.tool_calls() == [ToolCallPart(name="f", args={"q": "é"}, id="c")]
    t = message_from_obj({"role": "tool", "tool_call_id": "c", "content": '{"ok": 1}'})
    assert t is not None and t.tool_results() == [
        ToolResultPart(name=None, response={"ok": 1}, id="c")
    ]


def test_texts_join_with_newline_like_adk() -> None:
    m = message_from_obj({"role": "model", "parts": [{"text": "a"}, {"text": "b"}]})
    assert m is not None and m.text() == "a\nb"


@pytest.mark.parametrize("value", [None, "", "__REDACTED__", "<elided>", "FILTERED", "{}", [], {}])
def test_not_captured_markers(value: object) -> None:
    assert is_not_captured(value)


def test_bad_json_arguments_are_kept_verbatim() -> None:
    assert parse_arguments('{"a": ') == '{"a": '
    assert parse_arguments("plain") == "plain"
    assert parse_arguments({"a": 1}) == {"a": 1}


def test_non_messages_are_skipped() -> None:
    assert messages_from_value('[1, "x", {"role": "user", "content": "y"}]')[0].text() == "y"
    assert messages_from_value("42") == []


def test_parts_that_are_no_parts_are_skipped_and_empty_ones_kept() -> None:
    [msg] = messages_from_value(
        '[{"role": "model", "parts": [1, null, {"text": ""}, [], {"type": "text", "content": ""},'
        ' {"function_call": {"name": "f"}}, true]}]'
    )
    assert msg.parts == (
        TextPart(text=""),
        TextPart(text=""),
        ToolCallPart(name="f", args=None, id=None),
    )


def _piece(
    *parts: TextPart | ToolCallPart, finish: str | None = "", role: str = "assistant"
) -> Message:
    return Message(role=role, parts=parts, finish_reason=finish)


def test_an_output_messages_finish_reason_is_kept_as_written() -> None:
    obj = {"role": "assistant", "parts": [{"type": "text", "content": "a"}]}
    assert message_from_obj({**obj, "finish_reason": ""}) == _piece(TextPart(text="a"))
    assert message_from_obj({**obj, "finish_reason": "stop"}) == _piece(
        TextPart(text="a"), finish="stop"
    )
    assert (
        message_from_obj(obj)
        == message_from_obj({**obj, "finish_reason": 3})
        == _piece(TextPart(text="a"), finish=None)
    )


def _dumped(block: JsonValue) -> dict[str, object]:
    """A LangChain block as OpenLLMetry writes it when a reply has no text block."""
    return {"type": "text", "content": json.dumps(block)}


def test_langchain_blocks_written_as_json_text_are_read_as_those_blocks() -> None:
    thinking: JsonValue = {"type": "thinking", "thinking": "They want Lima.", "signature": "s1"}
    summary: JsonValue = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Hm."}],
    }
    search: JsonValue = {"type": "server_tool_call", "id": "ws_1", "name": "web_search", "args": {}}
    found: JsonValue = {"type": "server_tool_result", "tool_call_id": "ws_1", "status": "success"}
    redacted: JsonValue = {"type": "redacted_thinking", "data": "xyz"}
    msg = message_from_obj(
        {
            "role": "assistant",
            "parts": [_dumped(b) for b in (thinking, summary, search, found, redacted)],
        }
    )
    assert msg is not None
    assert msg.parts == (
        TextPart(text="They want Lima.", thought=True),
        TextPart(text="Hm.", thought=True),
        OtherPart(type="server_tool_call", data=search),
        OtherPart(type="server_tool_call_response", data=found),
        OtherPart(type="redacted_thinking", data=redacted),
    )
    assert msg.text(thoughts=False) is None


@pytest.mark.parametrize(
    "text",
    [
        '{"type": "forecast", "city": "Lima"}',  # a reply that is JSON of its own
        '{"type": "thinking"}',  # no thinking in it: not LangChain's block
        '{"type": "thinking", "thinking": ',  # cut short
        '{"city": "Lima", "type": "thinking", "thinking": "x"}',  # not as json.dumps starts
    ],
)
def test_other_json_text_stays_text(text: str) -> None:
    msg = message_from_obj({"role": "assistant", "parts": [{"type": "text", "content": text}]})
    assert msg is not None
    assert msg.parts == (TextPart(text=text),)


def test_a_messages_text_with_and_without_its_thoughts() -> None:
    msg = Message(
        role="assistant",
        parts=(TextPart(text="Hmm.", thought=True), TextPart(text="Yes."), TextPart(text="!")),
    )
    assert msg.text() == "Hmm.\nYes.\n!"
    assert msg.text(thoughts=False) == "Yes.\n!"
    only_thought = Message(role="assistant", parts=(TextPart(text="Hmm.", thought=True),))
    assert only_thought.text(thoughts=False) is None


def test_a_responses_api_response_is_one_reply_in_item_order() -> None:
    text = {"type": "output_text", "text": "Checking.", "annotations": []}
    response = {
        "object": "response",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "id": "msg_1", "role": "assistant", "content": [text]},
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "f",
                "arguments": '{"a": 1}',
            },
            "not an item",
        ],
    }
    reply = response_reply(response)
    assert reply is not None and reply.is_assistant
    assert reply.parts == (
        OtherPart(type="reasoning", data={"type": "reasoning", "id": "rs_1", "summary": []}),
        TextPart(text="Checking."),
        ToolCallPart(name="f", args={"a": 1}, id="call_1"),  # the call's id, not the item's
    )
    assert response_reply({"object": "response", "output": []}) is None
    assert response_reply({"object": "response"}) is None
