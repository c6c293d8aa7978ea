"""Which error a run failed with, when its root span does not say (tracescore.run_errors)."""

from __future__ import annotations

from spanbuilder import TraceBuilder, agent, call, chat, reply, text, tool, user
from tracescore.spans import STATUS_ERROR, SpanEvent, SpanRecord
from tracescore.trajectory import build_invocations


def failed(span: SpanRecord, message: str, *, ends_after: SpanRecord | None = None) -> None:
    """Mark ``span`` failed with ``message``; make it end just after ``ends_after`` starts
    (the builder's spans all end a second after they start, after everything)."""
    span.status_code = STATUS_ERROR
    span.status_message = message
    if ends_after is not None:
        span.end_ns = ends_after.start_ns + 1


def test_an_inner_agent_span_s_error_is_the_run_s() -> None:
    """The OpenAI Agents SDK's shape: the trace's span OK, the agent's span failed."""
    tb = TraceBuilder()
    root = agent(tb, "workflow")
    inner = agent(tb, "weather", root)
    chat(tb, inner, [user("Linz?")], reply(call("get_weather", {"city": "Linz"}, "c1")))
    tool(tb, inner, "get_weather", {"city": "Linz"}, "sunny", "c1")
    failed(inner, "Max turns exceeded")
    [inv] = build_invocations(tb.spans)
    assert (inv.status, inv.error, inv.final_response) == ("ok", "Max turns exceeded", None)
    assert inv.warnings == ()  # it failed: it did not just end on its calls


def test_the_last_model_call_failing_is_the_run_s_error_even_after_replies() -> None:
    tb = TraceBuilder()
    root = agent(tb, "a")
    chat(tb, root, [user("Linz?")], reply(call("get_weather", {"city": "Linz"}, "c1")))
    tool(tb, root, "get_weather", {"city": "Linz"}, "sunny", "c1")
    last = chat(tb, root, None, None)
    failed(last, "Error code: 500")
    [inv] = build_invocations(tb.spans)
    assert (inv.error, inv.warnings) == ("Error code: 500", ())


def test_a_step_that_was_retried_is_not_the_run_s_error() -> None:
    """A node that failed and ran again (a retry policy): a model call came after it."""
    tb = TraceBuilder()
    root = agent(tb, "graph")
    first = agent(tb, "node", root)
    broken = chat(tb, first, [user("Linz?")], None)
    second = agent(tb, "node", root)
    answer = chat(tb, second, [user("Linz?")], reply(text("Sunny.")))
    failed(broken, "RateLimitError", ends_after=broken)
    failed(first, "RateLimitError", ends_after=broken)
    [inv] = build_invocations(tb.spans)
    assert answer.start_ns > first.end_ns
    assert (inv.error, inv.final_response) == (None, "Sunny.")


def test_a_plain_step_inside_an_agent_span_names_why_no_model_was_called() -> None:
    """An input guardrail's tripwire, on the ``turn`` span inside the agent's (OpenInference
    over the OpenAI Agents SDK): the reason says why there is no model call."""
    tb = TraceBuilder()
    root = agent(tb, "weather")
    turn = tb.span("turn", root)
    tb.span("no_math", turn)
    failed(turn, "Guardrail tripwire triggered")
    [inv] = build_invocations(tb.spans)
    assert (inv.reason_code, inv.error) == ("no_model_call", "Guardrail tripwire triggered")
    assert inv.reason == (
        "no model call was found in this agent run; the run failed first:"
        " Guardrail tripwire triggered"
    )


def test_errors_deeper_down_or_of_tools_are_not_the_run_s() -> None:
    """A tool that raised is its call's error; a span inside a model call (the HTTP
    client's) or inside a step is that step's business."""
    tb = TraceBuilder()
    root = agent(tb, "a")
    step = tb.span("step", root)
    first = chat(tb, step, [user("Oslo?")], reply(call("get_weather", {"city": "Oslo"}, "c1")))
    failed(tb.span("POST /v1/chat", first), "ConnectionReset")
    broken = tool(tb, root, "get_weather", {"city": "Oslo"}, None, "c1")
    failed(broken, "ValueError")
    chat(tb, step, None, reply(text("No data for Oslo.")))
    [inv] = build_invocations(tb.spans)
    assert (inv.error, inv.final_response) == (None, "No data for Oslo.")
    assert [c.error for c in inv.tool_calls] == ["ValueError"]


def test_the_root_s_error_comes_first() -> None:
    tb = TraceBuilder()
    root = agent(tb, "workflow")
    inner = agent(tb, "weather", root)
    chat(tb, inner, [user("Hi")], reply(text("Hello.")))
    failed(inner, "inner")
    failed(root, "outer")
    [inv] = build_invocations(tb.spans)
    assert inv.error == "outer"


def test_a_graph_interrupt_pauses_the_run_it_does_not_fail_it() -> None:
    """OpenInference records LangGraph's ``GraphInterrupt`` as an exception event on OK
    spans: the node's and, inside it, the tool's, which the reason names."""
    tb = TraceBuilder()
    root = agent(tb, "refund_agent")
    chat(tb, root, [user("Refund order 4?")], reply(call("refund", {"order_id": 4}, "r1")))
    interrupted = {"exception.type": "langgraph.errors.GraphInterrupt", "exception.message": "?"}
    node = tb.span("tools", root, events=[("exception", interrupted)])
    refund = tool(tb, node, "refund", {"order_id": 4}, None, "r1")
    refund.events = node.events
    [inv] = build_invocations(tb.spans)
    assert (inv.status, inv.reason_code, inv.error) == ("not_evaluable", "paused", None)
    assert inv.reason is not None
    assert inv.reason.startswith("the run paused for input (GraphInterrupt in execute_tool refund)")
    assert inv.warnings == ()


def test_other_exceptions_do_not_pause_a_run() -> None:
    tb = TraceBuilder()
    root = agent(tb, "a")
    chat(tb, root, [user("Oslo?")], reply(call("t", {}, "c1")))
    raised = tool(tb, root, "t", {}, None, "c1")
    raised.events = [SpanEvent(name="exception", attributes={"exception.type": "ValueError"})]
    [inv] = build_invocations(tb.spans)
    assert (inv.status, inv.reason_code) == ("ok", None)


def _strands_run(tb: TraceBuilder, reason: str, text: str = "") -> SpanRecord:
    """A Strands agent span stating its run's result and stop reason (attributes mode)."""
    root = agent(tb, "weather")
    root.scope = "strands.telemetry.tracer"
    root.attributes["gen_ai.output.messages"] = [
        {"role": "assistant", "parts": [{"type": "text", "content": text}], "finish_reason": reason}
    ]
    chat(tb, root, [user("Linz?")], reply(call("get_weather", {"city": "Linz"}, "c1")))
    tool(tb, root, "get_weather", {"city": "Linz"}, "sunny", "c1")
    return root


def test_a_run_the_framework_stopped_has_its_stop_as_error_unless_a_span_failed() -> None:
    """Strands' ``limits``: every span OK, only the run's stop reason says it stopped. A
    root span's own error says more, and wins."""
    tb = TraceBuilder()
    _strands_run(tb, "limit_turns")
    [inv] = build_invocations(tb.spans)
    assert inv.error == (
        "Strands stopped the run: it reached its turn limit (limits['turns']);"
        " stop reason limit_turns"
    )
    assert (inv.final_response, inv.warnings) == (None, ())

    tb = TraceBuilder()
    failed(_strands_run(tb, "limit_turns"), "RuntimeError: boom")
    [inv] = build_invocations(tb.spans)
    assert inv.error == "RuntimeError: boom"


def test_a_run_that_states_an_answer_no_reply_holds_ends_with_it() -> None:
    """Strands' structured output: the model's last reply calls the output model's tool;
    the run span states the JSON the caller got. Not when the run paused: then it states
    the interrupts."""
    tb = TraceBuilder()
    _strands_run(tb, "tool_use", '{"city":"Linz"}')
    [inv] = build_invocations(tb.spans)
    assert (inv.final_response, inv.error, inv.warnings) == ('{"city":"Linz"}', None, ())
    assert inv.provenance["final_response"] == "gen_ai.output.messages"

    tb = TraceBuilder()
    _strands_run(tb, "interrupt", "[{'id': 'x', 'name': 'ask', 'reason': None}]")
    [inv] = build_invocations(tb.spans)
    assert (inv.status, inv.reason_code, inv.final_response) == ("not_evaluable", "paused", None)
