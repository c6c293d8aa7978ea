"""OpenInference's flattened messages (``llm.input_messages.N.message.*``) folded back.

Keys as the OpenInference semantic conventions spell them (REFERENCE §5.3): indexes that
sort as numbers, sub-keys in any order, and keys no message has.
"""

from __future__ import annotations

from conv_helpers import TraceBuilder

from tracescore.conventions.base import SpanView
from tracescore.conventions.messages import OtherPart, TextPart, ToolCallPart, ToolResultPart
from tracescore.conventions.openinference import OpenInference
from tracescore.conventions.openinference_flat import documents, messages, opt_str, parse_flat
from tracescore.spans import AttrValue

IN = "llm.input_messages."
OUT = "llm.output_messages."


def _view(attrs: dict[str, AttrValue]) -> SpanView:
    return SpanView(TraceBuilder().span("llm", {"openinference.span.kind": "LLM", **attrs}))


def test_keys_are_sorted_into_sides_by_index_and_cached() -> None:
    view = _view(
        {
            f"{IN}10.message.role": "user",
            f"{IN}2.message.role": "system",
            f"{OUT}0.message.content": "Hi",
            "llm.tools.1.tool.json_schema": "{}",
            "llm.tools.1.tool.name": "ignored",  # only the schema of a tool is read
            "llm.model_name": "gpt-4o",  # no message
            f"{IN}x.message.role": "user",  # no index
            f"{IN}².message.role": "user",  # a digit int() refuses
            f"{IN}3.role": "user",  # no "message." sub-key
        }
    )
    inputs, outputs, tools = parse_flat(view)
    assert inputs == {10: {"role": "user"}, 2: {"role": "system"}}
    assert outputs == {0: {"content": "Hi"}}
    assert tools == {1: "{}"}
    # Folded once per view: later questions read the fold, not the attributes again (the
    # same dicts: compiled, the tuple around them is a new one each time).
    view.span.attributes[f"{IN}4.message.role"] = "user"
    again = parse_flat(view)
    assert again == (inputs, outputs, tools)
    assert all(a is b for a, b in zip(again, (inputs, outputs, tools), strict=True))
    # Messages come in index order (2 before 10), not key order.
    inputs[2]["content"] = "Be brief."
    inputs[10]["content"] = "Hello"
    assert [m.role for m in messages(inputs, "user")] == ["system", "user"]


def test_a_message_reads_its_parts_in_order() -> None:
    flat: dict[str, AttrValue] = {
        "role": "ASSISTANT",
        "name": "planner",
        "contents.1.message_content.type": "image",
        "contents.1.message_content.image.image.url": "https://example.invalid/a.png",
        "contents.0.message_content.text": "Let me check.",  # type text by default
        "tool_calls.1.tool_call.function.name": "get_time",
        "tool_calls.0.tool_call.id": "call_1",
        "tool_calls.0.tool_call.function.name": "get_weather",
        "tool_calls.0.tool_call.function.arguments": '{"city": "Paris"}',
        "function_call_name": "legacy_call",
        "function_call_arguments_json": '{"n": 1}',
    }
    [message] = messages({0: flat}, "user")
    assert (message.role, message.name) == ("assistant", "planner")
    assert message.parts == (
        TextPart(text="Let me check."),
        OtherPart(
            type="image",
            data={"type": "image", "image.image.url": "https://example.invalid/a.png"},
        ),
        ToolCallPart(name="get_weather", args={"city": "Paris"}, id="call_1"),
        # A call written without arguments was made with none ("{}").
        ToolCallPart(name="get_time", args={}, id=None),
        ToolCallPart(name="legacy_call", args={"n": 1}),
    )


def test_a_tool_message_is_a_result_and_nothing_captured_is_no_message() -> None:
    tool: dict[str, AttrValue] = {
        "role": "tool",
        "content": '{"temp": 21}',
        "tool_call_id": "call_1",
        "name": "w",
    }
    redacted: dict[str, AttrValue] = {"role": "user", "content": "__REDACTED__"}
    hidden_text: dict[str, AttrValue] = {
        "role": "user",
        "contents.0.message_content.text": "__REDACTED__",
    }
    out = messages({0: tool, 1: redacted, 2: hidden_text, 3: {}}, "assistant")
    assert [m.parts for m in out] == [
        (ToolResultPart(name="w", response={"temp": 21}, id="call_1"),)
    ]


def test_empty_ids_and_names_are_none() -> None:
    assert [opt_str(v) for v in (None, "", 0, "call_1", 7)] == [None, None, "0", "call_1", "7"]


def test_flattened_messages_parse_through_the_reader() -> None:
    view = _view(
        {
            f"{IN}0.message.role": "user",
            f"{IN}0.message.content": "Weather?",
            f"{OUT}0.message.role": "assistant",
            f"{OUT}0.message.tool_calls.0.tool_call.function.name": "get_weather",
        }
    )
    reader = OpenInference()
    found = reader.llm_input(view)
    assert found is not None and found.source == "llm.input_messages"
    assert [m.text() for m in found.value] == ["Weather?"]
    out = reader.llm_output(view)
    assert out is not None
    assert out.value[0].tool_calls()[0].name == "get_weather"


def test_plain_content_is_kept_beside_contents_without_text() -> None:
    t = TraceBuilder()
    prefix = "llm.input_messages.0.message."
    attrs = {
        "openinference.span.kind": "LLM",
        f"{prefix}role": "user",
        f"{prefix}content": "What is in this picture?",
        f"{prefix}contents.0.message_content.type": "image",
        f"{prefix}contents.0.message_content.image.image.url": "https://example.invalid/a.png",
    }
    found = OpenInference().llm_input(SpanView(t.span("llm", attrs)))
    assert found is not None
    [message] = found.value
    assert message.text() == "What is in this picture?"
    assert [type(p).__name__ for p in message.parts] == ["TextPart", "OtherPart"]


def test_a_reasoning_content_is_the_text_of_a_thought() -> None:
    """google-genai's and google-adk's instrumentors write a thinking model's thought as
    a ``reasoning`` content: text of the reply (as ADK reads it), marked a thought; the
    plain ``content`` beside it is still the answer."""
    flat: dict[str, AttrValue] = {
        "role": "model",
        "contents.0.message_content.type": "reasoning",
        "contents.0.message_content.text": "The user wants Paris.",
        "contents.1.message_content.type": "text",
        "contents.1.message_content.text": "Paris is sunny.",
    }
    [message] = messages({0: flat}, "assistant")
    assert message.parts == (
        TextPart(text="The user wants Paris.", thought=True),
        TextPart(text="Paris is sunny."),
    )
    assert message.text() == "The user wants Paris.\nParis is sunny."
    only_thought: dict[str, AttrValue] = {
        "role": "assistant",
        "content": "Paris is sunny.",
        "contents.0.message_content.type": "reasoning",
        "contents.0.message_content.text": "Think first.",
    }
    [message] = messages({0: only_thought}, "assistant")
    assert message.parts == (
        TextPart(text="Paris is sunny."),
        TextPart(text="Think first.", thought=True),
    )


def test_documents_in_rank_order_without_those_not_captured() -> None:
    docs = "retrieval.documents."
    attrs: dict[str, AttrValue] = {
        f"{docs}10.document.content": "tenth",
        f"{docs}2.document.content": "second",
        f"{docs}2.document.score": 0.9,
        f"{docs}3.document.content": "__REDACTED__",  # OPENINFERENCE_HIDE_OUTPUTS
        f"{docs}4.document.content": "",
        f"{docs}5.document.id": "no content",
        f"{docs}x.document.content": "no index",
        f"{docs}6.document.content": 7,  # not text
        "input.value": "the query",
    }
    assert documents(attrs) == ["second", "tenth"]
    assert documents({}) == []
