"""Calls a framework refused without running them (tracescore.refusals)."""

from __future__ import annotations

import pytest

from tracescore.conventions.messages import JsonValue
from tracescore.model import ToolCall
from tracescore.refusals import refusals_failed, refused, validation_errors

_PYDANTIC_UNKNOWN = "Unknown tool name: 'get_wether'. Available tools: 'get_weather'"
_MAF_UNKNOWN = 'Error: Requested function "get_wether" not found.'
_LLAMA_INDEX_UNKNOWN = "Tool get_wether not found. Please select a tool that is available."


@pytest.mark.parametrize(
    ("name", "result", "is_refusal"),
    [
        ("get_wether", _PYDANTIC_UNKNOWN, True),
        ("get_wether", "Unknown tool name: 'get_wether'. No tools available.", True),
        ("lookup", "Tool 'lookup' is not available yet: search for it first, then …", True),
        ("get_wether", _MAF_UNKNOWN, True),
        ("get_weather", "Error: Argument parsing failed.", True),
        ("get_weather", "Error: Argument parsing failed. Exception: city: Field required", True),
        ("get_weather", "Error: Argument parsing failed; retrying", False),
        ("get_wether", _LLAMA_INDEX_UNKNOWN, True),
        ("other", _LLAMA_INDEX_UNKNOWN, False),
        # Another tool's name, other words, or the words inside other text: a result.
        ("other", _PYDANTIC_UNKNOWN, False),
        ("other", _MAF_UNKNOWN, False),
        ("get_wether", "unknown tool name: 'get_wether'. Available tools: 'x'", False),
        ("get_wether", f"Sunny. {_PYDANTIC_UNKNOWN}", False),
        ("get_wether", f"{_MAF_UNKNOWN} Try again.", False),
        ("get_weather", "21C in Paris", False),
        ("get_wether", {"error": _MAF_UNKNOWN}, False),
        ("get_wether", None, False),
    ],
)
def test_a_framework_s_words_for_a_call_it_refused(
    name: str, result: JsonValue, is_refusal: bool
) -> None:
    assert refused(name, result) is is_refusal


def test_a_refused_call_no_span_answered_fails_with_the_refusal() -> None:
    calls = [
        ToolCall(name="get_wether", id="u1", result=_MAF_UNKNOWN),
        ToolCall(name="get_weather", id="u2", result="sunny", span_id="5" * 16),
        # LlamaIndex reports no result for it: the words are the error alone.
        ToolCall(name="get_wether", id="u3", result=_LLAMA_INDEX_UNKNOWN),
    ]
    assert [(c.result, c.error) for c in refusals_failed(calls)] == [
        (_MAF_UNKNOWN, _MAF_UNKNOWN),
        ("sunny", None),
        (None, _LLAMA_INDEX_UNKNOWN),
    ]


@pytest.mark.parametrize(
    "call",
    [
        # A tool that ran (its span says how it went), even one that answers the same words.
        ToolCall(name="get_wether", result=_PYDANTIC_UNKNOWN, span_id="5" * 16),
        # An error already known stays.
        ToolCall(name="get_wether", result=_PYDANTIC_UNKNOWN, error="RetryError"),
        ToolCall(name="get_wether", result="Final result processed."),
        # A tool that ran and returned what looks like validation errors: its span says.
        ToolCall(name="check", result=[{"type": "x", "loc": [], "msg": "m"}], span_id="5" * 16),
    ],
)
def test_anything_else_is_left_as_it_is(call: ToolCall) -> None:
    assert refusals_failed([call]) == [call]


def test_a_call_whose_step_failed_fails_with_the_step_s_error() -> None:
    """smolagents: the model was told in a user message, so no result came back."""
    error = "AgentToolCallError: Argument town is not in the tool's input schema"
    calls = [
        ToolCall(name="get_weather", id="b1"),
        ToolCall(name="get_weather", id="b2", span_id="5" * 16),  # one that ran keeps its span's
        ToolCall(name="get_weather", id="b3"),
        ToolCall(name="get_weather"),  # no id: nothing to tell it by
    ]
    step_errors = {"b1": error, "b2": error}
    assert [c.error for c in refusals_failed(calls, step_errors)] == [error, None, None, None]


_INT_PARSING: JsonValue = {
    "type": "int_parsing",
    "loc": ["temp"],
    "msg": "Input should be a valid integer, unable to parse string as an integer",
    "input": "warm",
}


@pytest.mark.parametrize(
    ("result", "said"),
    [
        (
            [_INT_PARSING],
            "temp: Input should be a valid integer, unable to parse string as an integer",
        ),
        (
            [
                {"type": "missing", "loc": ["forecast", 0, "city"], "msg": "Field required"},
                {"type": "model_type", "loc": [], "msg": "Input should be an object"},
            ],
            "forecast.0.city: Field required; Input should be an object",
        ),
        ([], None),
        ([_INT_PARSING, "text"], None),
        ([{"type": "missing", "loc": "city", "msg": "Field required"}], None),  # loc not a list
        ([{"loc": ["city"], "msg": "Field required"}], None),  # no type
        ({"type": "missing", "loc": ["city"], "msg": "Field required"}, None),
        ("temp: Input should be a valid integer", None),
    ],
)
def test_pydantic_validation_errors_read_as_one_line(result: JsonValue, said: str | None) -> None:
    assert validation_errors(result) == said


def test_an_output_tool_whose_arguments_did_not_validate_fails_with_the_errors() -> None:
    """pydantic-ai's ``final_result`` has no span; the errors fed back are its result."""
    call = ToolCall(name="final_result", id="o1", args={"temp": "warm"}, result=[_INT_PARSING])
    [failed] = refusals_failed([call])
    assert failed.result == [_INT_PARSING]  # what the model was told, as pydantic-ai keeps it
    assert failed.error == (
        "temp: Input should be a valid integer, unable to parse string as an integer"
    )


def test_a_retry_of_an_output_tool_s_call_fails_it() -> None:
    """pydantic-ai: an output validator's ``ModelRetry`` answers the call in its own words."""
    calls = [
        ToolCall(name="final_result", id="v1", result="temp too high"),
        ToolCall(name="final_result", id="v2", result="Final result processed."),
        ToolCall(name="final_result", id="v3", result=None),  # not answered: nothing to say
        ToolCall(name="get_weather", id="c1", result="temp too high"),  # not an output tool
    ]
    failed = refusals_failed(calls, outputs=frozenset({"final_result"}))
    assert [c.error for c in failed] == ["temp too high", None, None, None]
    assert [c.result for c in failed] == [c.result for c in calls]
    assert refusals_failed(calls) == calls  # no output tools named: none read so
