"""Replies written as many output messages: Responses API items, streamed chunks."""

from __future__ import annotations

import pytest

from tracescore.conventions.messages import Message, OtherPart, TextPart, ToolCallPart
from tracescore.conventions.replies import joined_stream, one_reply


def _piece(
    *parts: TextPart | ToolCallPart, finish: str | None = "", role: str = "assistant"
) -> Message:
    return Message(role=role, parts=parts, finish_reason=finish)


def test_responses_items_are_one_reply_in_order_without_other_roles() -> None:
    call = ToolCallPart(name="lookup", args={"q": "x"}, id="call_1")
    reasoning = OtherPart(type="reasoning", data={"summary": []})
    reply = one_reply(
        [
            Message(role="assistant", parts=(reasoning,)),
            Message(role="user", parts=(TextPart(text="not the model's"),)),
            Message(role="assistant", parts=(TextPart(text="Looking."), call)),
        ]
    )
    assert reply == [Message(role="assistant", parts=(reasoning, TextPart(text="Looking."), call))]
    assert one_reply([]) == [Message(role="assistant", parts=())]


def test_stream_pieces_join_texts_of_a_kind_and_keep_other_parts_in_order() -> None:
    call = ToolCallPart(name="f", args={}, id="f_3")
    joined = joined_stream(
        [
            _piece(TextPart(text="th", thought=True)),
            _piece(TextPart(text="ink", thought=True), TextPart(text="Hel")),
            _piece(TextPart(text="lo")),
            _piece(role="tool"),  # not the model's: left out
            _piece(call),
            _piece(TextPart(text="after")),
            _piece(TextPart(text="!"), finish="stop"),
        ]
    )
    assert joined == Message(
        role="assistant",
        parts=(
            TextPart(text="think", thought=True),
            TextPart(text="Hello"),
            call,
            TextPart(text="after!"),
        ),
        finish_reason="stop",
    )


def test_a_chunk_of_no_writable_part_or_an_empty_text_ends_a_run_of_text() -> None:
    """ADK's aggregator ends a text run at every part that is not text (code the model
    ran, a thought signature's empty text); schema 2 writes such a chunk as a message
    without parts, and the empty text as it is."""
    joined = joined_stream(
        [
            _piece(TextPart(text="Let me ")),
            _piece(TextPart(text="compute.")),
            _piece(),  # executable_code: nothing schema 2 can write
            _piece(),  # code_execution_result
            _piece(TextPart(text="It is ")),
            _piece(TextPart(text="5050.")),
            _piece(TextPart(text="")),
            _piece(TextPart(text="Done."), finish="stop"),
        ]
    )
    assert joined is not None
    assert joined.parts == (
        TextPart(text="Let me compute."),
        TextPart(text="It is 5050."),
        TextPart(text=""),
        TextPart(text="Done."),
    )
    assert joined.text() == "Let me compute.\nIt is 5050.\n\nDone."


@pytest.mark.parametrize(
    "finishes",
    [
        ["stop"],  # one message
        ["stop", "stop"],  # choices
        [None, "stop"],  # no finish reason written: choices as far as anyone can tell
        ["", "stop", "stop"],  # a finished message before the last
    ],
)
def test_messages_that_are_not_all_pieces_are_not_joined(finishes: list[str | None]) -> None:
    assert joined_stream([_piece(TextPart(text="x"), finish=f) for f in finishes]) is None
