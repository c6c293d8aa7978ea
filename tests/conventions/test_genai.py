"""OTel GenAI semantic-convention span attributes read by ``conventions/genai.py``.

Most of this reader is exercised by the real-framework tests (Agent Framework, Strands,
OpenAI v2, ADK schema 2); here, shapes no framework we run writes yet.
"""

from __future__ import annotations

import json

import pytest
from conv_helpers import TraceBuilder, to_json

from tracescore.conventions.base import SpanView
from tracescore.conventions.genai import GenAIAttributes
from tracescore.conventions.registry import classify
from tracescore.spans import AttrValue, SpanRecord
from tracescore.trajectory import build_invocations

_USER = [{"role": "user", "parts": [{"type": "text", "content": "Weather in Lima?"}]}]
_ANSWER = [{"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}]}]
DOCUMENTS: list[AttrValue] = [
    {"id": "doc_1", "score": 0.95, "content": "Lima: sunny, 21 C."},
    {"id": "doc_2", "score": 0.87},  # the id and score alone, as the convention allows
    {"id": "doc_3", "score": 0.80, "content": "Oslo: rain."},
]


@pytest.mark.parametrize("documents", [to_json(DOCUMENTS), DOCUMENTS])
def test_a_retrieval_span_is_the_runs_context(documents: AttrValue) -> None:
    """``gen_ai.operation.name = retrieval`` with its documents as JSON text or as
    structured values (an OTLP ``kvlistValue`` per document)."""
    t = TraceBuilder()
    agent = t.span("invoke_agent rag", {"gen_ai.operation.name": "invoke_agent"})
    retrieval = t.span(
        "retrieval kb",
        {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.data_source.id": "kb",
            "gen_ai.retrieval.documents": documents,
        },
        parent=agent,
    )
    t.span(
        "chat m",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": to_json(_USER),
            "gen_ai.output.messages": to_json(_ANSWER),
        },
        parent=agent,
    )
    assert classify(retrieval) == "retrieval"
    [inv] = build_invocations(t.spans)
    assert inv.retrieved == ("Lima: sunny, 21 C.", "Oslo: rain.")
    assert inv.provenance["retrieved"] == "gen_ai.retrieval.documents"
    assert (inv.user_content, inv.final_response, inv.tool_calls) == (
        "Weather in Lima?",
        "Sunny.",
        (),
    )


@pytest.mark.parametrize(
    "attrs",
    [
        # Not captured (the attribute is opt-in), ids and scores only, not a list:
        {"gen_ai.operation.name": "retrieval"},
        {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": '[{"id": "a"}]'},
        {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": '{"content": "x"}'},
        # Documents on a span of another operation:
        {"gen_ai.operation.name": "chat", "gen_ai.retrieval.documents": to_json(DOCUMENTS)},
    ],
)
def test_no_retrieved_text(attrs: dict[str, AttrValue]) -> None:
    span = TraceBuilder().span("retrieval", attrs)
    assert GenAIAttributes().retrieved(SpanView(span)) is None


def _maf_agent(output: AttrValue, scope: str = "agent_framework") -> SpanView:
    span = SpanRecord(
        trace_id="1" * 32,
        span_id="2" * 16,
        parent_span_id=None,
        name="invoke_agent refunder",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.output.messages": output},
        scope=scope,
    )
    return SpanView(span)


_APPROVAL_REQUEST = {
    "type": "function_approval_request",
    "function_call": {"type": "function_call", "call_id": "c1", "name": "refund"},
    "user_input_request": True,
    "id": "af-call-1",
}


def test_an_agent_framework_run_that_asks_for_approval_paused() -> None:
    call = {"type": "tool_call", "id": "c1", "name": "refund", "arguments": "{}"}
    messages = [{"role": "assistant", "parts": [call, _APPROVAL_REQUEST]}]
    reader = GenAIAttributes()
    assert reader.paused_for(_maf_agent(json.dumps(messages))) == (
        "Agent Framework function_approval_request for refund"
    )
    # Structured AnyValues, and a request that names no function.
    other: AttrValue = {"type": "user_input_request_x", "user_input_request": True}
    structured: AttrValue = [{"role": "assistant", "parts": [other]}]
    assert reader.paused_for(_maf_agent(structured)) == "Agent Framework user_input_request_x"


@pytest.mark.parametrize(
    "view",
    [
        _maf_agent(
            json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "x"}]}])
        ),
        _maf_agent(json.dumps([{"role": "assistant", "parts": [_APPROVAL_REQUEST]}]), "other"),
        _maf_agent('[{"user_input_request": true'),  # cut short
        _maf_agent(json.dumps([{"role": "assistant", "parts": "user_input_request"}])),
        _maf_agent(json.dumps({**_APPROVAL_REQUEST, "user_input_request": "yes"})),
        _maf_agent(None),
    ],
)
def test_anything_else_is_no_agent_framework_pause(view: SpanView) -> None:
    assert GenAIAttributes().paused_for(view) is None
