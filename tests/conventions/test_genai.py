"""OTel GenAI semantic-convention span attributes read by ``conventions/genai.py``.

Most of this reader is exercised by the real-framework tests (Agent Framework, Strands,
OpenAI v2, ADK schema 2); here, shapes no framework we run writes yet.
"""

from __future__ import annotations

import pytest
from conv_helpers import TraceBuilder, to_json

from tracescore.conventions.base import SpanView
from tracescore.conventions.genai import GenAIAttributes
from tracescore.conventions.registry import classify
from tracescore.spans import AttrValue
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
