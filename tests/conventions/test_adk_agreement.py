"""Our rebuilt invocations must equal what google-adk itself derives from the session.

Real ADK agents (scripted model) run in every schema and content mode; their spans and
log records go through the same path as any input (SDK records → SpanRecord → trace
tree → invocations) and are compared with
``EvaluationGenerator.convert_events_to_eval_invocations(session.events)``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from conv_helpers import adk_like_view, assert_paused
from google.adk.evaluation.eval_case import InvocationEvents

from adk_harness import (
    SCENARIOS,
    TURN_ENDING_CALLS,
    AdkRun,
    ContentMode,
    SchemaVersion,
    adk_view,
    run_scenario,
)
from tracescore.criteria.base import EvalContext
from tracescore.criteria.efficiency import InferenceCallCount
from tracescore.formats.sdk import from_readable_span, from_sdk_log
from tracescore.model import Invocation, group_conversations
from tracescore.trajectory import build_invocations

CAPTURED: list[tuple[SchemaVersion, ContentMode]] = [
    ("v1", "default"),
    ("v1", "EVENT_ONLY"),
    ("v2", "SPAN_ONLY"),
    ("v2", "SPAN_AND_EVENT"),
    ("v2", "EVENT_ONLY"),
]
NOT_CAPTURED: list[tuple[SchemaVersion, ContentMode]] = [
    ("v1", "NO_CONTENT"),
    ("v2", "default"),
    ("v2", "NO_CONTENT"),
]


def rebuild(run: AdkRun) -> list[Invocation]:
    """The turns of the run's session, as tracescore reads them from telemetry."""
    spans = [from_readable_span(s) for s in run.spans]
    logs = [from_sdk_log(r) for r in run.logs]
    by_trace: dict[str, tuple[list[Any], list[Any]]] = defaultdict(lambda: ([], []))
    for span in spans:
        by_trace[span.trace_id][0].append(span)
    for log in logs:
        assert log.trace_id is not None
        by_trace[log.trace_id][1].append(log)
    invocations = [
        inv
        for trace_spans, trace_logs in by_trace.values()
        for inv in build_invocations(trace_spans, trace_logs)
    ]
    # Agents run as tools (AgentTool) are separate invocations, not session turns.
    turns = [i for i in invocations if i.parent_tool_span_id is None]
    [conversation] = group_conversations(turns)
    assert conversation.conversation_id == run.session_id
    return list(conversation.invocations)


#: What ADK's own eval sees that no trace records (see the tests of each below).
NOT_IN_TRACES: set[tuple[str, SchemaVersion]] = {
    ("after_model_rewrite", "v1"),
    ("after_model_rewrite", "v2"),
    ("guardrail_before_model", "v2"),
}
AGREEING = [
    (name, schema, content)
    for name in SCENARIOS
    for schema, content in CAPTURED
    if (name, schema) not in NOT_IN_TRACES
]


def adk_inference_calls(invocations: list[Any]) -> list[float | None]:
    """ADK's ``inference_call_count_v1`` per invocation, from its own evaluator."""
    # Imported from where it lives: ADK's metric registry needs pandas to load.
    from google.adk.evaluation._efficiency_evaluators import _InferenceCallCountV1Evaluator

    result = _InferenceCallCountV1Evaluator().evaluate_invocations(invocations)
    return [r.score for r in result.per_invocation_results]


@pytest.mark.parametrize(
    ("name", "schema", "content"), AGREEING, ids=["-".join(t) for t in AGREEING]
)
def test_rebuilt_invocations_equal_adks(
    name: str, schema: SchemaVersion, content: ContentMode
) -> None:
    run = run_scenario(name, schema=schema, content=content)
    ours = rebuild(run)
    assert len(ours) == len(run.adk_invocations)
    counts = [InferenceCallCount().score(EvalContext(actual=i)).value for i in ours]
    assert counts == adk_inference_calls(run.adk_invocations)
    for mine, theirs in zip(ours, run.adk_invocations, strict=True):
        expected = adk_view(theirs)
        got = adk_like_view(mine)
        if name == "tool_raises":
            # ADK has no response for the call that raised; we carry the error instead.
            expected["results"] = got["results"]
            assert mine.tool_calls[-1].error == "ConnectionError"
            assert (mine.error or "").startswith("ConnectionError")
        if content == "EVENT_ONLY" and schema == "v2" and name in TURN_ENDING_CALLS:
            # Schema 2 logs carry no tool results; results come from the next request,
            # but the sub-agent sees the transfer only as rewritten "For context" text,
            # and after exit_loop no request comes.
            index = TURN_ENDING_CALLS[name]
            assert expected["results"][index] == {"result": None}
            expected["results"][index] = None
        assert got == expected
        assert mine.status == "ok", mine.reason
        assert mine.invocation_id == theirs.invocation_id
        if name == "guardrail_before_model":
            # The callback answered: a step of the run, not a model call.
            assert (mine.inference_calls, mine.framework_replies) == (0, 1)
            assert mine.usage.input_tokens == 0
        else:
            assert mine.inference_calls >= 1
            assert mine.usage.input_tokens > 0


@pytest.mark.parametrize(("schema", "content"), CAPTURED, ids=[f"{s}-{c}" for s, c in CAPTURED])
def test_a_run_waiting_for_a_tool_s_confirmation_is_no_turn_the_confirmed_run_is(
    schema: SchemaVersion, content: ContentMode
) -> None:
    """``require_confirmation=True``: ADK answers the call with an error, asks for the
    confirmation and ends the run; the user's confirmation goes on with the same ADK
    invocation, in a trace of its own, which runs the tool and answers.

    ADK's eval reads the two as one invocation whose user content is the confirmation (a
    function response, no text) and whose calls include its own ``adk_request_confirmation``
    (in no span). The paused run is not evaluable; the confirmed one is the turn: the
    user's text, the tool's call with its real result, the answer.
    """
    run = run_scenario("tool_confirmation", schema=schema, content=content)
    paused, confirmed = rebuild(run)
    [theirs] = run.adk_invocations
    expected = adk_view(theirs)
    assert expected["user"] == ""
    asked = [
        i for i, (name, _) in enumerate(expected["calls"]) if name == "adk_request_confirmation"
    ]
    assert len(asked) == 1
    for key in ("calls", "results"):
        del expected[key][asked[0]]
    assert adk_like_view(confirmed) == {**expected, "user": "Please refund my 40 euros."}
    assert (confirmed.status, confirmed.error) == ("ok", None)
    assert paused.invocation_id == confirmed.invocation_id == theirs.invocation_id
    assert [c.name for c in paused.tool_calls] == ["refund"]
    if (schema, content) == ("v2", "EVENT_ONLY"):
        # Schema 2's logs carry no tool results and no request follows the call: nothing
        # says ADK held it back. The run reads as one that ended on its call.
        assert (paused.status, paused.tool_calls[0].result) == ("ok", None)
        [warning] = paused.warnings
        assert warning.startswith("the run ended on tool calls")
        return
    assert_paused(paused, "ADK tool confirmation for refund")


@pytest.mark.parametrize(("schema", "content"), CAPTURED, ids=[f"{s}-{c}" for s, c in CAPTURED])
def test_a_run_waiting_for_a_long_running_tool_is_no_turn_the_resumed_run_is(
    schema: SchemaVersion, content: ContentMode
) -> None:
    """A ``LongRunningFunctionTool`` that returns None: ADK ends the run, its span says the
    call got no response; the user's function response brings the result later, in a
    run (a trace) of its own of the same ADK invocation.

    ADK's eval reads the two as one invocation whose user content is that function
    response, so the call has no result there; the resumed run's model call was sent it.
    """
    run = run_scenario("long_running_pause", schema=schema, content=content)
    paused, resumed = rebuild(run)
    [theirs] = run.adk_invocations
    expected = adk_view(theirs)
    assert (expected["user"], expected["results"]) == ("", [None])
    assert adk_like_view(resumed) == {
        **expected,
        "user": "Refund my 40 euros, please.",
        "results": [{"approved": True}],
    }
    assert (resumed.status, resumed.error) == ("ok", None)
    assert paused.invocation_id == resumed.invocation_id == theirs.invocation_id
    assert [(c.name, c.result) for c in paused.tool_calls] == [("ask_manager", None)]
    assert_paused(paused, "ADK long-running tool ask_manager")


@pytest.mark.parametrize(
    ("schema", "content"), NOT_CAPTURED, ids=[f"{s}-{c}" for s, c in NOT_CAPTURED]
)
@pytest.mark.parametrize("name", ["two_sequential_tools", "transfer_to_sub_agent", "no_tools"])
def test_without_content_invocations_say_how_to_enable_capture(
    name: str, schema: SchemaVersion, content: ContentMode
) -> None:
    run = run_scenario(name, schema=schema, content=content)
    ours = rebuild(run)
    assert len(ours) == len(run.adk_invocations)
    switch = (
        "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS"
        if schema == "v1"
        else "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY"
    )
    for mine, theirs in zip(ours, run.adk_invocations, strict=True):
        assert mine.status == "not_evaluable"
        assert mine.reason_code == "content_not_captured"
        assert switch in (mine.reason or "")
        # Tool names (not args) still come from the tool spans, in order.
        assert [c.name for c in mine.tool_calls] == [n for n, _ in adk_view(theirs)["calls"]]


def test_agent_tool_inner_run_is_a_separate_invocation() -> None:
    run = run_scenario("agent_tool", schema="v2", content="SPAN_ONLY")
    spans = [from_readable_span(s) for s in run.spans]
    invs = build_invocations(spans)
    outer, inner = invs
    assert inner.parent_tool_span_id is not None
    assert inner.agent == "translator"
    assert [c.name for c in outer.tool_calls] == ["translator"]
    assert inner.conversation_id != outer.conversation_id


@pytest.mark.parametrize(("schema", "content"), [("v1", "default"), ("v2", "SPAN_ONLY")])
def test_a_tool_served_over_mcp_counts_once_under_the_sdks_own_spans(
    schema: SchemaVersion, content: ContentMode
) -> None:
    """ADK's ``execute_tool`` span holds the MCP SDK's client and server spans of the call.

    The server's says ``gen_ai.operation.name = execute_tool`` too: the call is ADK's span,
    once, and the failure the server reported is its error.
    """
    run = run_scenario("mcp_tools", schema=schema, content=content)
    [inv] = rebuild(run)
    server_calls = [
        s
        for s in run.spans
        if (s.attributes or {}).get("mcp.method.name") == "tools/call"
        and (s.attributes or {}).get("gen_ai.operation.name") == "execute_tool"
    ]
    assert len(server_calls) == 2
    adk_spans = run.spans_named("execute_tool forecast")
    assert [c.span_id for c in inv.tool_calls] == [
        f"{s.context.span_id:016x}" for s in sorted(adk_spans, key=lambda s: s.start_time or 0)
    ]
    assert [(c.name, c.args) for c in inv.tool_calls] == [
        ("forecast", {"city": "Lisbon", "days": 2}),
        ("forecast", {"city": "Atlantis", "days": 1}),
    ]
    assert inv.tool_calls[0].error is None
    assert inv.tool_calls[1].error is not None
    assert inv.tool_calls[1].result == {
        "content": [{"type": "text", "text": "Error executing tool forecast"}],
        "isError": True,
    }


@pytest.mark.parametrize(("schema", "content"), [("v1", "default"), ("v1", "EVENT_ONLY")])
def test_search_grounding_is_what_adk_records(schema: SchemaVersion, content: ContentMode) -> None:
    """A reply Gemini's built-in Google Search grounded carries ``grounding_metadata``,
    the only record of what the search found (it runs inside the model call, no tool
    span). Schema 1's ``llm_response`` holds it whole: it equals what ADK's evaluation
    events carry, per agent, which ADK's judges are shown."""
    run = run_scenario("search_grounding", schema=schema, content=content)
    [mine] = rebuild(run)
    [theirs] = run.adk_invocations
    data = theirs.intermediate_data
    assert isinstance(data, InvocationEvents)
    events = data.invocation_events
    expected = [
        (e.author, e.grounding_metadata.model_dump(mode="json", exclude_none=True))
        for e in events
        if e.grounding_metadata
    ]
    assert [(g.author, g.metadata) for g in mine.grounding] == expected
    assert expected and expected[0][1]["web_search_queries"] == ["weather in Lima today"]
    assert mine.provenance["grounding"] == "gcp.vertex.agent.llm_response.grounding_metadata"


def test_schema_2_spans_carry_no_grounding_metadata() -> None:
    """ADK 2.13's schema 2 writes a reply's text, not its ``grounding_metadata`` (only,
    behind an experimental gate, counts, queries and source URIs): none is read."""
    [mine] = rebuild(run_scenario("search_grounding", schema="v2", content="SPAN_ONLY"))
    assert mine.grounding == ()
    assert mine.final_response == "Lima is sunny, 21°C today."


@pytest.mark.parametrize("content", ["SPAN_ONLY", "SPAN_AND_EVENT", "EVENT_ONLY"])
def test_schema_2_records_nothing_of_a_before_model_callbacks_answer(
    content: ContentMode,
) -> None:
    """A guardrail's answer opens no ``generate_content`` span, and schema 2 writes a
    turn's content nowhere else: the run is not evaluable, and the reason says why."""
    run = run_scenario("guardrail_before_model", schema="v2", content=content)
    [mine] = rebuild(run)
    [theirs] = run.adk_invocations
    assert adk_view(theirs)["final"] == "I can't help with passwords."
    assert (mine.status, mine.reason_code) == ("not_evaluable", "no_model_call")
    assert "before_model_callback" in (mine.reason or "")
    assert (mine.user_content, mine.final_response) == (None, None)


def test_a_schema_1_run_without_model_calls_gets_no_schema_2_explanation() -> None:
    """The schema 2 explanation is for schema 2 runs only."""
    run = run_scenario("guardrail_before_model", schema="v1", content="default")
    [mine] = rebuild(run)
    assert mine.status == "ok"
    spans = [from_readable_span(s) for s in run.spans if s.name != "call_llm"]
    [cut] = build_invocations(spans)
    assert cut.reason == "no model call was found in this agent run"


@pytest.mark.parametrize(("schema", "content"), CAPTURED, ids=[f"{s}-{c}" for s, c in CAPTURED])
def test_an_after_model_callbacks_rewrite_is_in_no_trace(
    schema: SchemaVersion, content: ContentMode
) -> None:
    """ADK records the model's reply before ``after_model_callback`` changes it: the
    session (ADK's eval) holds the changed replies, the trace the model's. The tool
    calls agree; the texts are the model's. Should ADK start recording the changed
    reply, this fails and the scenario joins the agreeing ones."""
    run = run_scenario("after_model_rewrite", schema=schema, content=content)
    [mine] = rebuild(run)
    [theirs] = run.adk_invocations
    expected = adk_view(theirs)
    assert expected["final"] == "Your card #### is on file; Paris is ##.#°C."
    got = adk_like_view(mine)
    assert got["calls"] == expected["calls"]
    assert got["results"] == expected["results"]
    assert got["intermediate"] == [("redacting_agent", "Checking order 42.")]
    assert got["final"] == "Your card 4111 is on file; Paris is 21.5°C."
