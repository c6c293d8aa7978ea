"""A run's model context: instructions and tools of its first call, what its retrievals
found, its replies' search grounding; and none of it when not asked for."""

from __future__ import annotations

from spanbuilder import TraceBuilder
from tracescore.model import AgentGrounding
from tracescore.model_context import NO_CONTEXT, read_model_context
from tracescore.trace_tree import split_runs
from tracescore.trajectory import build_invocations


def _run() -> TraceBuilder:
    """An ADK schema-1 agent: a retrieval (GenAI), then two model calls, the second one
    grounded by the model's search."""
    t = TraceBuilder(scope="gcp.vertex.agent")
    agent = t.span(
        "invoke_agent rag",
        attrs={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "rag"},
    )
    t.span(
        "retrieval kb",
        agent,
        attrs={
            "gen_ai.operation.name": "retrieval",
            "gen_ai.retrieval.documents": [{"id": "1", "content": "Lima: sunny."}],
        },
    )
    request = {
        "contents": [{"role": "user", "parts": [{"text": "Weather in Lima?"}]}],
        "config": {"system_instruction": "Be brief.", "tools": [{"function_declarations": []}]},
    }
    for reply, grounded in (("Let me look.", False), ("Sunny.", True)):
        response: dict[str, object] = {"content": {"role": "model", "parts": [{"text": reply}]}}
        if grounded:
            response["grounding_metadata"] = {"web_search_queries": ["lima"]}
        t.span(
            "call_llm",
            agent,
            attrs={
                "gcp.vertex.agent.llm_request": request,
                "gcp.vertex.agent.llm_response": response,
            },
        )
    return t


def test_the_context_of_a_run_and_where_it_was_read() -> None:
    [run] = split_runs(_run().spans)
    provenance: dict[str, str] = {}
    context = read_model_context(run, run.llm_steps, provenance)
    assert context.system_instructions == "Be brief."
    assert context.tool_definitions == [{"function_declarations": []}]
    assert context.retrieved == ("Lima: sunny.",)
    assert context.grounding == (
        AgentGrounding(author="rag", metadata={"web_search_queries": ["lima"]}),
    )
    assert set(provenance) == {"system_instructions", "tool_definitions", "retrieved", "grounding"}


def test_an_invocation_without_its_model_context() -> None:
    spans = _run().spans
    [full] = build_invocations(spans)
    [bare] = build_invocations(spans, model_context=False)
    assert (full.retrieved, full.final_response) == (("Lima: sunny.",), "Sunny.")
    context_fields = ("system_instructions", "tool_definitions", "retrieved", "grounding")
    assert {f: getattr(bare, f) for f in context_fields} == {
        f: getattr(NO_CONTEXT, f) for f in context_fields
    }
    assert not set(context_fields) & set(bare.provenance)
