"""A model call's reply among its output messages, where one reply is written as many.

Output messages are usually *choices*, each a whole reply. Two kinds of call write
one reply as several messages instead:

* an OpenAI Responses API call, whose output *items* (a text message, each function
  call...) instrumentations write as messages of their own (:func:`one_reply`);
* a streamed call, written one message per chunk by ADK's schema 2 and OpenTelemetry's
  google-genai instrumentation (:func:`joined_stream`).
"""

from __future__ import annotations

from tracescore.conventions.messages import Message, Part, TextPart

__all__ = ["joined_stream", "one_reply"]


def one_reply(messages: list[Message]) -> list[Message]:
    """The assistant messages of one OpenAI Responses API call merged into one reply.

    Instrumentations write each Responses *output item* (a text message, each function
    call...) as an output message of its own, where output messages are otherwise
    choices. The Responses API has no choices: together they are the reply, in order.
    """
    parts = tuple(p for m in messages if m.is_assistant for p in m.parts)
    return [Message(role="assistant", parts=parts)]


def joined_stream(messages: list[Message]) -> Message | None:
    """The reply a streamed model call's output messages are pieces of; None if they are not.

    Streamed replies are written one output message per chunk by ADK's schema 2 and by
    OpenTelemetry's google-genai instrumentation, each chunk's ``finish_reason`` empty
    but the last one's. Output messages are otherwise choices, each with its own finish
    reason, so only assistant messages all of which but the last say ``""`` are read as
    a stream. They are joined as ADK joins the chunks of the reply it keeps: consecutive
    text pieces of the same kind (thought or not) into one text, every other part as it
    came, in order. A chunk with no parts (what the convention could not write, such as
    code the model ran) and an empty text both end a run of text, as they do for ADK.
    """
    replies = [m for m in messages if m.is_assistant]
    if len(replies) < 2 or any(m.finish_reason != "" for m in replies[:-1]):
        return None
    parts: list[Part] = []
    # Whether parts[-1] is a text run the next text piece of its kind extends.
    extending = False
    for reply in replies:
        if not reply.parts:
            # A chunk whose parts the convention could not write (ADK's schema 2 drops
            # code and its results): ADK ends the text run there all the same.
            extending = False
        for part in reply.parts:
            last = parts[-1] if extending else None
            if (
                isinstance(part, TextPart)
                and part.text
                and isinstance(last, TextPart)
                and last.thought == part.thought
            ):
                parts[-1] = TextPart(text=last.text + part.text, thought=part.thought)
            else:
                parts.append(part)
            # An empty text (a chunk carrying only a thought signature) is, to ADK's
            # aggregator, a part of its own: it ends the run, as any other part does.
            extending = isinstance(part, TextPart) and part.text != ""
    return Message(
        role=replies[-1].role,
        parts=tuple(parts),
        name=replies[-1].name,
        finish_reason=replies[-1].finish_reason,
    )
