"""What a parallel import's workers send back, for values of any depth the readers take."""

from __future__ import annotations

import math
import sys
from typing import Any

import pytest

from spanbuilder import TraceBuilder
from tracescore.assembly import AssembledTrace
from tracescore.model import Invocation, ToolCall
from tracescore.shipping import decode_boundary, dumps_deep, encode_boundary, loads_deep
from tracescore.spans import Origin


def _nested(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def _depth(value: Any) -> int:
    levels = 0
    while isinstance(value, list):
        value = value[0] if value else None
        levels += 1
    return levels


def _trace(**attributes: Any) -> AssembledTrace:
    trace = TraceBuilder()
    root = trace.span("invoke_agent weather", attrs={"gen_ai.agent.name": "weather"})
    tool = trace.span("execute_tool lookup", root, attrs={"gen_ai.tool.name": "lookup"})
    tool.attributes.update(attributes)
    tool.origin = Origin("traces.jsonl", 12)
    resource: dict[str, Any] = {"service.name": "weather-agent"}  # one map per block
    for span in trace.spans:
        span.resource = resource
    trace.log(root, "gen_ai.user.message", body={"content": "hi", "raw": b"\x00\xff"})
    return AssembledTrace(
        trace_id=trace.trace_id,
        spans=trace.spans,
        logs=trace.logs,
        root_seen=True,
        held=True,
        first_seq=3,
        last_seq=9,
        gap_open=2,
    )


def test_invocations_nested_as_deep_as_the_readers_take_are_pickled() -> None:
    """1024 levels (orjson's limit for the JSON text tool values come in) plus the objects
    around them: past CPython's recursion limit of 1000, where pickle stopped."""
    result: dict[str, Any] = {"rows": _nested(1024)}
    inv = Invocation(
        trace_id="t", invocation_id="i", tool_calls=(ToolCall(name="f", result=result),)
    )
    limit = sys.getrecursionlimit()
    back = loads_deep(dumps_deep([inv]))
    assert sys.getrecursionlimit() == limit  # restored
    assert _depth(back[0].tool_calls[0].result["rows"]) == 1024
    assert dumps_deep([1, "a"]) and loads_deep(dumps_deep([1, "a"])) == [1, "a"]


@pytest.mark.parametrize("levels", [3, 300, 1024])
def test_boundary_traces_come_back_as_the_worker_had_them(levels: int) -> None:
    """Also nested deeper than the 255 levels orjson writes (the worker failed there)."""
    trace = _trace(**{"gen_ai.tool.call.result": _nested(levels), "raw": b"\x01"})
    [back] = decode_boundary(encode_boundary([trace]))
    # Compared apart: == recurses once per level too.
    assert _depth(back.spans[1].attributes.pop("gen_ai.tool.call.result")) == levels
    del trace.spans[1].attributes["gen_ai.tool.call.result"]
    assert back == trace


def test_values_json_would_change_cross_a_cut_unchanged() -> None:
    """Shipped as JSON, NaN and infinities came back null and a map whose only key was
    the bytes tag came back as bytes."""
    trace = _trace(nan=math.nan, inf=-math.inf, tagged={"__bytes__": "AAAA"}, ints=(1, 2))
    [back] = decode_boundary(encode_boundary([trace]))
    got = back.spans[1].attributes
    nan = got.pop("nan")
    assert isinstance(nan, float) and math.isnan(nan)  # NaN != NaN: compared apart
    del trace.spans[1].attributes["nan"]
    assert back == trace
    assert got["inf"] == -math.inf and got["tagged"] == {"__bytes__": "AAAA"}
    # One resource map per block, shared by its spans, as the worker had it.
    assert back.spans[0].resource is back.spans[1].resource


def test_worker_only_state_stays_in_the_worker() -> None:
    trace = _trace()
    trace.sources = []
    trace.prebuilt = ["built"]
    for deep in (False, True):
        if deep:
            trace.spans[0].attributes["deep"] = _nested(400)
        [back] = decode_boundary(encode_boundary([trace]))
        assert back.spans[0].attributes.pop("deep", None) == trace.spans[0].attributes.pop(
            "deep", None
        )
        assert (back.sources, back.prebuilt, back.parked) == (None, None, False)
        assert back.spans == trace.spans and back.logs == trace.logs
