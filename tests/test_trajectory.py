"""Trajectory rebuilding on spec-shaped traces: tree cutting, joins, fallbacks, reasons."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from spanbuilder import TraceBuilder, agent, call, chat, reply, text, tool, user
from tracescore import build_invocations
from tracescore.spans import STATUS_ERROR, AttrValue, SpanRecord


def simple_run(
    tb: TraceBuilder, parent: SpanRecord | None = None, name: str = "a", q: str = "hi"
) -> SpanRecord:
    root = agent(tb, name, parent)
    chat(tb, root, [user(q)], reply(call("t", {"x": 1}, "c1")))
    tool(tb, root, "t", {"x": 1}, {"ok": True}, "c1")
    chat(tb, root, [user(q)], reply(text(f"done {q}")))
    return root


def test_basic_run_joins_call_to_execution_by_id() -> None:
    tb = TraceBuilder()
    simple_run(tb)
    [inv] = build_invocations(tb.spans)
    assert inv.status == "ok"
    assert inv.user_content == "hi"
    assert [(c.name, c.args, c.id, c.result) for c in inv.tool_calls] == [
        ("t", {"x": 1}, "c1", {"ok": True})
    ]
    assert inv.final_response == "done hi"
    assert inv.intermediate_responses == ()
    assert inv.inference_calls == 2
    assert inv.provenance["user_content"] == "gen_ai.input.messages"


def test_parallel_calls_keep_model_order_and_pair_by_name_and_order() -> None:
    tb = TraceBuilder()
    root = agent(tb, "a")
    chat(tb, root, [user("q")], reply(call("w", {"c": "B"}), call("w", {"c": "A"}), call("v", {})))
    # Executions run in another order and carry ids the model's calls do not have.
    tool(tb, root, "v", {}, "rv", "adk-3")
    tool(tb, root, "w", {"c": "B"}, "rB", "adk-1")
    tool(tb, root, "w", {"c": "A"}, "rA", "adk-2")
    chat(tb, root, [user("q")], reply(text("ok")))
    [inv] = build_invocations(tb.spans)
    assert [(c.name, c.args, c.result) for c in inv.tool_calls] == [
        ("w", {"c": "B"}, "rB"),
        ("w", {"c": "A"}, "rA"),
        ("v", {}, "rv"),
    ]


def test_calls_of_one_tool_pair_with_the_execution_of_their_arguments() -> None:
    """Concurrent executions may start in another order than the calls were made."""
    tb = TraceBuilder()
    root = agent(tb, "a")
    chat(tb, root, [user("q")], reply(call("w", {"c": "A"}), call("w", {"c": "B"})))
    tool(tb, root, "w", {"c": "B"}, "rB")  # no call ids on the tool spans
    tool(tb, root, "w", {"c": "A"}, "rA")
    chat(tb, root, [user("q")], reply(text("ok")))
    [inv] = build_invocations(tb.spans)
    assert [(c.args, c.result) for c in inv.tool_calls] == [
        ({"c": "A"}, "rA"),
        ({"c": "B"}, "rB"),
    ]
    assert inv.warnings == ()


def test_text_and_call_in_one_response_is_intermediate() -> None:
    tb = TraceBuilder()
    root = agent(tb, "a")
    chat(tb, root, [user("q")], reply(text("Looking it up."), call("t", {})))
    tool(tb, root, "t", {}, 1)
    chat(tb, root, [user("q")], reply(text("Found.")))
    [inv] = build_invocations(tb.spans)
    assert [(r.author, r.text) for r in inv.intermediate_responses] == [("a", "Looking it up.")]
    assert inv.final_response == "Found."


def _thinking_run(tb: TraceBuilder) -> None:
    root = agent(tb, "a")
    thought = {"type": "reasoning", "content": "They want t."}
    chat(tb, root, [user("q")], reply(thought, call("t", {})))
    tool(tb, root, "t", {}, 1)
    chat(tb, root, [user("q")], reply({"type": "reasoning", "content": "Say so."}, text("Done.")))


def test_a_thinking_models_thoughts_are_not_its_answer() -> None:
    """A framework's answer leaves its model's thoughts out (pydantic-ai's output, OpenAI
    Agents' final output): a thought is neither a response nor part of the final one."""
    tb = TraceBuilder()
    _thinking_run(tb)
    [inv] = build_invocations(tb.spans)
    assert inv.intermediate_responses == ()
    assert inv.final_response == "Done."


def test_in_an_adk_run_thoughts_are_text_as_adks_eval_reads_them() -> None:
    tb = TraceBuilder(scope="gcp.vertex.agent")
    _thinking_run(tb)
    [inv] = build_invocations(tb.spans)
    assert [(r.author, r.text) for r in inv.intermediate_responses] == [("a", "They want t.")]
    assert inv.final_response == "Say so.\nDone."


def test_tool_error_is_recorded() -> None:
    tb = TraceBuilder()
    root = agent(tb, "a")
    chat(tb, root, [user("q")], reply(call("t", {})))
    tool(tb, root, "t", {}, None, status=STATUS_ERROR, **{"error.type": "ValueError"})
    chat(tb, root, [user("q")], reply(text("Sorry.")))
    [inv] = build_invocations(tb.spans)
    assert inv.tool_calls[0].error == "ValueError"
    assert inv.tool_calls[0].result is None


def test_nested_model_span_is_one_call_with_fallback_sources() -> None:
    tb = TraceBuilder()
    root = agent(tb, "a")
    outer = tb.span("call_llm", root, attrs={"gen_ai.operation.name": "chat"})
    chat(
        tb,
        outer,
        [user("from inner")],
        reply(text("inner answer")),
        **{"gen_ai.usage.input_tokens": 3},
    )
    [inv] = build_invocations(tb.spans)
    assert inv.inference_calls == 1
    assert inv.user_content == "from inner"
    assert inv.final_response == "inner answer"
    assert inv.usage.input_tokens == 3


def test_tool_span_nested_in_tool_span_counts_once() -> None:
    tb = TraceBuilder()
    root = agent(tb, "a")
    chat(tb, root, [user("q")], reply(call("search", {"q": 1}, "c1")))
    outer = tool(tb, root, "search", {"q": 1}, "r", "c1")
    tool(tb, outer, "search", {"q": 1}, "r")  # e.g. MCP client span
    chat(tb, outer, [user("inner")], reply(text("tool-internal model call")))
    chat(tb, root, [user("q")], reply(text("ok")))
    [inv] = build_invocations(tb.spans)
    assert len(inv.tool_calls) == 1
    assert inv.inference_calls == 2


def test_agent_under_tool_is_its_own_invocation() -> None:
    tb = TraceBuilder()
    root = agent(tb, "outer")
    chat(tb, root, [user("q")], reply(call("helper", {"request": "x"})))
    t = tool(tb, root, "helper", {"request": "x"}, "helped")
    simple_run(tb, t, name="inner", q="x")
    chat(tb, root, [user("q")], reply(text("final")))
    outer_inv, inner_inv = build_invocations(tb.spans)
    assert outer_inv.agents == ("outer",)
    assert [c.name for c in outer_inv.tool_calls] == ["helper"]
    assert outer_inv.final_response == "final"
    assert inner_inv.agent == "inner"
    assert inner_inv.user_content == "x"
    assert inner_inv.final_response == "done x"


def test_agent_beside_the_tool_that_called_it_is_its_own_invocation() -> None:
    """Some instrumentations write a called agent as the caller's sibling, not under the
    tool span: it runs within the tool's time. A transferred-to agent runs after."""
    tb = TraceBuilder()
    root = agent(tb, "boss")
    chat(tb, root, [user("q")], reply(call("ask_helper", {"q": "x"}, "c1")))
    asked = tool(tb, root, "ask_helper", {"q": "x"}, "42", "c1")
    helper = agent(tb, "helper", root)
    chat(tb, helper, [user("x")], reply(text("42")))
    # The helper ran during the tool call: stretch the tool over it.
    stretched = replace(asked, end_ns=helper.end_ns + 1)
    tb.spans[tb.spans.index(asked)] = stretched
    chat(tb, root, [user("q")], reply(text("It is 42.")))
    boss, nested = build_invocations(tb.spans)
    assert (boss.agents, [c.name for c in boss.tool_calls]) == (("boss",), ["ask_helper"])
    assert boss.final_response == "It is 42."
    assert (nested.agents, nested.user_content, nested.final_response) == (("helper",), "x", "42")
    assert nested.parent_tool_span_id == stretched.span_id
    # Without the overlap (a transfer: the agent runs after the tool returned), one run.
    tb.spans[tb.spans.index(stretched)] = asked
    [one] = build_invocations(tb.spans)
    assert one.agents == ("boss", "helper")


def test_sub_agents_and_visit_order() -> None:
    tb = TraceBuilder()
    root = agent(tb, "root", **{"gen_ai.conversation.id": "s"})
    chat(tb, root, [user("q")], reply(call("transfer_to_agent", {"agent_name": "sub"})))
    tool(tb, root, "transfer_to_agent", {"agent_name": "sub"}, None)
    sub = agent(tb, "sub")
    sub.parent_span_id = root.span_id
    agent(tb, "sub", sub)  # same agent seen by a second instrumentation: one visit
    chat(tb, sub, [user("q")], reply(text("sub answers")))
    [inv] = build_invocations(tb.spans)
    assert inv.agents == ("root", "sub")
    assert inv.tool_calls[0].name == "transfer_to_agent"
    assert inv.final_response == "sub answers"
    assert inv.conversation_id == "s"


def test_two_runs_under_one_http_root() -> None:
    tb = TraceBuilder()
    http = tb.span("GET /chat", attrs={"http.method": "GET"})
    simple_run(tb, http, "a", "first")
    simple_run(tb, http, "a", "second")
    invs = build_invocations(tb.spans)
    assert [i.user_content for i in invs] == ["first", "second"]


def test_model_spans_without_agent_span_form_one_run() -> None:
    tb = TraceBuilder()
    http = tb.span("POST /ask")
    chat(tb, http, [user("q")], reply(text("a")))
    [inv] = build_invocations(tb.spans)
    assert inv.root_span_id == http.span_id
    assert inv.final_response == "a"


def test_trace_without_agent_activity_gives_nothing() -> None:
    tb = TraceBuilder()
    root = tb.span("GET /health")
    tb.span("SELECT", root, attrs={"db.system": "postgresql"})
    assert build_invocations(tb.spans) == []


def test_outputs_not_captured_falls_back_to_tool_spans_and_is_not_evaluable() -> None:
    tb = TraceBuilder()
    root = agent(tb, "a")
    chat(tb, root, None, None)
    tool(tb, root, "t", None, None, "adk-1")
    chat(tb, root, None, None)
    [inv] = build_invocations(tb.spans)
    assert inv.status == "not_evaluable"
    assert inv.reason_code == "content_not_captured"
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in (inv.reason or "")
    assert [c.name for c in inv.tool_calls] == ["t"]
    assert any("tool spans" in w for w in inv.warnings)


def test_a_cut_trace_without_any_content_says_capture_is_off() -> None:
    """Model calls without content say what to fix whether or not the run's end came (a
    run whose end is content too never ends); calls with content in a cut trace, and a
    trace without model calls, say it was cut."""
    tb = TraceBuilder()
    root = agent(tb, "a")
    chat(tb, root, None, None)
    [inv] = build_invocations(tb.spans, complete=False)
    assert inv.reason_code == "content_not_captured"
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in (inv.reason or "")
    assert "flushed before its run was seen to end" in (inv.reason or "")
    [whole] = build_invocations(tb.spans)
    assert whole.reason_code == "content_not_captured"
    assert "flushed" not in (whole.reason or "")

    captured = TraceBuilder()
    chat(captured, agent(captured, "a"), [user("q")], None)
    [cut] = build_invocations(captured.spans, complete=False)
    assert cut.reason_code == "incomplete_trace"
    bare = TraceBuilder()
    agent(bare, "a")
    assert [i.reason_code for i in build_invocations(bare.spans, complete=False)] == [
        "incomplete_trace"
    ]


def test_redacted_content_is_not_captured() -> None:
    tb = TraceBuilder()
    root = agent(tb, "a")
    chat(tb, root, "__REDACTED__", "<elided>")  # type: ignore[arg-type]
    [inv] = build_invocations(tb.spans)
    assert inv.reason_code == "content_not_captured"


def test_no_model_call_reason() -> None:
    tb = TraceBuilder()
    agent(tb, "a")
    [inv] = build_invocations(tb.spans)
    assert inv.reason_code == "no_model_call"


def failed_chat(tb: TraceBuilder, parent: SpanRecord, history: list[Any] | None) -> SpanRecord:
    """A model call that raised: its input is recorded, it has no output, status ERROR."""
    attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "error.type": "RateLimitError"}
    if history is not None:
        attrs["gen_ai.input.messages"] = history
    return tb.span("chat", parent, attrs=attrs, status=STATUS_ERROR)


def test_a_run_whose_model_call_failed_is_scored_with_its_error() -> None:
    tb = TraceBuilder()
    root = tb.span(
        "invoke_agent a",
        attrs={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"},
        status=STATUS_ERROR,
    )
    failed_chat(tb, root, [user("hi")])
    [inv] = build_invocations(tb.spans)
    # Not "content not captured": the content was captured, the model never answered.
    assert (inv.status, inv.reason_code, inv.reason) == ("ok", None, None)
    assert inv.user_content == "hi"
    assert inv.final_response is None
    assert inv.error == "RateLimitError"  # the root says only "error": the call says why
    assert inv.inference_calls == 1


def test_a_retried_model_call_leaves_the_run_as_it_was() -> None:
    tb = TraceBuilder()
    root = agent(tb, "a")
    chat(tb, root, [user("hi")], reply(call("t", {"x": 1}, "c1")))
    tool(tb, root, "t", {"x": 1}, {"ok": True}, "c1")
    throttled = failed_chat(tb, root, [user("hi")])
    retry = chat(tb, root, [user("hi")], reply(text("done")))
    throttled.end_ns = retry.start_ns - 1  # the retry comes after the failure
    [inv] = build_invocations(tb.spans)
    assert inv.status == "ok"
    assert inv.warnings == ()  # the calls come from the model's outputs, not the tool spans
    assert inv.provenance["tool_calls"] != "tool spans"
    assert [(c.name, c.result) for c in inv.tool_calls] == [("t", {"ok": True})]
    assert inv.final_response == "done"
    assert inv.error is None
    assert inv.inference_calls == 3


def test_a_failed_model_call_without_captured_input_is_still_not_captured() -> None:
    tb = TraceBuilder()
    root = agent(tb, "a")
    failed_chat(tb, root, None)
    [inv] = build_invocations(tb.spans)
    assert inv.reason_code == "content_not_captured"


def test_a_failed_call_after_uncaptured_outputs_is_still_not_captured() -> None:
    tb = TraceBuilder()
    root = agent(tb, "a")
    chat(tb, root, [user("hi")], None)  # answered, but its output was not captured
    failed_chat(tb, root, [user("hi")])
    [inv] = build_invocations(tb.spans)
    assert inv.reason_code == "content_not_captured"


def test_results_from_next_request_when_no_tool_span() -> None:
    tb = TraceBuilder()
    root = agent(tb, "a")
    chat(tb, root, [user("q")], reply(call("t", {"x": 1}, "c9")))
    history = [
        user("q"),
        reply(call("t", {"x": 1}, "c9"))[0],
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "c9", "response": {"v": 2}}],
        },
    ]
    chat(tb, root, history, reply(text("v is 2")))
    [inv] = build_invocations(tb.spans)
    assert inv.tool_calls[0].result == {"v": 2}
    assert inv.provenance["tool_results"] == "gen_ai.input.messages"


def test_a_result_from_the_next_request_is_the_calls_own_not_a_siblings() -> None:
    """Two parallel calls of one tool; only the first's span recorded its result.

    The results fed back pair with both calls in order: the second takes the second.
    """
    tb = TraceBuilder()
    root = agent(tb, "a")
    calls = reply(call("t", {"x": 1}, "c1"), call("t", {"x": 2}, "c2"))
    chat(tb, root, [user("q")], calls)
    tool(tb, root, "t", {"x": 1}, "one", "c1")
    tool(tb, root, "t", {"x": 2}, None, "c2", status=STATUS_ERROR)
    results = {
        "role": "tool",
        "parts": [
            {"type": "tool_call_response", "id": "c1", "name": "t", "response": "one"},
            {"type": "tool_call_response", "id": "c2", "name": "t", "response": "two failed"},
        ],
    }
    chat(tb, root, [user("q"), *calls, results], reply(text("done")))
    [inv] = build_invocations(tb.spans)
    assert [(c.result, c.error is not None) for c in inv.tool_calls] == [
        ("one", False),
        ("two failed", True),
    ]


def test_a_call_no_span_ran_takes_no_later_call_s_execution_by_name() -> None:
    """Agent Framework refuses arguments that do not validate without running the tool:
    the model calls again with others, and only that call has a span. The first call
    does not take it (by name and order), and fails with the framework's words."""
    tb = TraceBuilder()
    root = agent(tb, "a")
    first = reply(call("t", {"town": "Oslo"}, "c1"))
    chat(tb, root, [user("q")], first)
    refused = {
        "role": "tool",
        "parts": [
            {
                "type": "tool_call_response",
                "id": "c1",
                "response": "Error: Argument parsing failed.",
            }
        ],
    }
    second = reply(call("t", {"city": "Oslo"}, "c2"))
    chat(tb, root, [user("q"), *first, refused], second)
    tool(tb, root, "t", {"city": "Oslo"}, "sunny", "c2")
    answered = {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "c2", "response": "sunny"}],
    }
    chat(tb, root, [user("q"), *first, refused, *second, answered], reply(text("Oslo: sunny.")))
    [inv] = build_invocations(tb.spans)
    assert [(c.id, c.args, c.result, c.error, c.span_id is None) for c in inv.tool_calls] == [
        (
            "c1",
            {"town": "Oslo"},
            "Error: Argument parsing failed.",
            "Error: Argument parsing failed.",
            True,
        ),
        ("c2", {"city": "Oslo"}, "sunny", None, False),
    ]
    assert inv.warnings == ()


def test_an_execution_without_id_is_the_call_s_with_its_arguments_before_an_earlier_one_s() -> None:
    """Tool spans that record no call id (smolagents'): the first call, which nothing ran
    (its arguments refused), does not take by order the span of the second, whose
    arguments it records."""
    tb = TraceBuilder()
    root = agent(tb, "a")
    first = reply(call("t", {"town": "Oslo"}, "c1"))
    chat(tb, root, [user("q")], first)
    second = reply(call("t", {"city": "Paris"}, "c2"))
    chat(tb, root, [user("q"), *first], second)
    tool(tb, root, "t", {"city": "Paris"}, "sunny")
    chat(tb, root, [user("q"), *first, *second], reply(text("Paris: sunny.")))
    [inv] = build_invocations(tb.spans)
    assert [(c.id, c.result, c.span_id is None) for c in inv.tool_calls] == [
        ("c1", None, True),
        ("c2", "sunny", False),
    ]


def test_calls_sharing_an_id_take_its_executions_in_order() -> None:
    """LlamaIndex's call ids are the tool's name: two calls of one tool share one. Each
    takes the executions of that id in order (the first was once given the last)."""
    tb = TraceBuilder()
    root = agent(tb, "a")
    calls = reply(call("t", {"city": "Zürich"}, "t"), call("t", {"city": "Atlantis"}, "t"))
    chat(tb, root, [user("q")], calls)
    tool(tb, root, "t", None, "sunny", "t")
    tool(tb, root, "t", None, "no station", "t")
    chat(tb, root, [user("q"), *calls], reply(text("done")))
    [inv] = build_invocations(tb.spans)
    assert [(c.args, c.result) for c in inv.tool_calls] == [
        ({"city": "Zürich"}, "sunny"),
        ({"city": "Atlantis"}, "no station"),
    ]


def test_a_tool_spans_result_in_its_output_messages() -> None:
    """Strands' attributes-only mode: a failed tool's result is only a response part."""
    tb = TraceBuilder()
    root = agent(tb, "a")
    chat(tb, root, [user("q")], reply(call("t", {}, "c1"), call("u", {}, "c2")))
    for name, cid, response in (("t", "c1", [{"text": "boom"}]), ("u", "c2", {"ok": 1})):
        out = [
            {
                "role": "tool",
                "parts": [
                    {"type": "tool_call_response", "id": "other", "response": "not this"},
                    {"type": "tool_call_response", "id": cid, "response": response},
                ],
            }
        ]
        extra: dict[str, Any] = {"gen_ai.output.messages": out}
        tool(tb, root, name, {}, None, cid, **extra)
    chat(tb, root, [user("q")], reply(text("done")))
    [inv] = build_invocations(tb.spans)
    # One text block is its text, as Strands' gen_ai.tool.call.result is read.
    assert [c.result for c in inv.tool_calls] == ["boom", {"ok": 1}]


def test_a_failed_span_without_error_type_or_message_names_its_exception_event() -> None:
    errors = []
    exceptions: list[dict[str, Any]] = [
        {"exception.type": "KeyError", "exception.message": "'city'"},
        {"exception.type": "KeyError"},
        {},
    ]
    for exception in exceptions:
        tb = TraceBuilder()
        root = agent(tb, "a")
        chat(tb, root, [user("q")], reply(call("t", {})))
        tb.span(
            "execute_tool t",
            root,
            attrs={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"},
            events=[("exception", exception)],
            status=STATUS_ERROR,
        )
        chat(tb, root, [user("q")], reply(text("Sorry.")))
        [inv] = build_invocations(tb.spans)
        errors.append(inv.tool_calls[0].error)
    assert errors == ["KeyError: 'city'", "KeyError", "error"]


def test_responses_api_output_items_are_one_reply_and_choices_are_not() -> None:
    items = [
        {"role": "assistant", "parts": [text("Let me check.")], "finish_reason": "stop"},
        {"role": "assistant", "parts": [call("t", {"x": 1}, "c1")], "finish_reason": "tool_call"},
    ]
    runs = {}
    for response_id in ("resp_0a1b", "chatcmpl-9"):
        tb = TraceBuilder()
        root = agent(tb, "a")
        chat(tb, root, [user("q")], items, **{"gen_ai.response.id": response_id})
        tool(tb, root, "t", {"x": 1}, "ok", "c1")
        chat(tb, root, [user("q")], reply(text("done")))
        [runs[response_id]] = build_invocations(tb.spans)
    merged = runs["resp_0a1b"]
    assert [(c.name, c.id, c.result) for c in merged.tool_calls] == [("t", "c1", "ok")]
    assert [r.text for r in merged.intermediate_responses] == ["Let me check."]
    assert merged.warnings == ()
    # Chat Completions choices: choice 0 is the reply; the call is known from its span.
    choice = runs["chatcmpl-9"]
    assert [r.text for r in choice.intermediate_responses] == ["Let me check."]
    assert any("matches no model output" in w for w in choice.warnings)


def _pieces(*parts: dict[str, Any], last: str = "stop") -> list[dict[str, Any]]:
    """A streamed reply as ADK's schema 2 and OTel's google-genai write it.

    A message a chunk, each finish reason empty but the last one's.
    """
    return [
        {"role": "assistant", "parts": [part], "finish_reason": "" if k < len(parts) - 1 else last}
        for k, part in enumerate(parts)
    ]


def test_a_streamed_reply_written_in_pieces_is_one_reply() -> None:
    tb = TraceBuilder(scope="gcp.vertex.agent")  # ADK's: thoughts are text (see above)
    root = agent(tb, "a")
    think = {"type": "reasoning", "content": "The user wants "}
    chat(
        tb,
        root,
        [user("q")],
        _pieces(
            think,
            {**think, "content": "t."},
            text("Let me "),
            text("check."),
            call("t", {"x": 1}, "t_2"),
        ),
    )
    tool(tb, root, "t", {"x": 1}, "ok", "adk-1")
    chat(tb, root, [user("q")], _pieces(text("Do"), text("ne "), text("at 5°C."), last=""))
    [inv] = build_invocations(tb.spans)
    assert [(c.name, c.args, c.result) for c in inv.tool_calls] == [("t", {"x": 1}, "ok")]
    # Thought and answer stay apart, as ADK keeps them (and joins them with a newline).
    assert [r.text for r in inv.intermediate_responses] == ["The user wants t.\nLet me check."]
    # Cut short (no piece says why it stopped): still one reply.
    assert inv.final_response == "Done at 5°C."
    assert inv.inference_calls == 2
    assert inv.warnings == ()


def test_choices_each_with_a_finish_reason_are_not_pieces() -> None:
    tb = TraceBuilder()
    root = agent(tb, "a")
    choices = [
        {"role": "assistant", "parts": [text("First.")], "finish_reason": "stop"},
        {"role": "assistant", "parts": [text("Second.")], "finish_reason": "stop"},
    ]
    chat(tb, root, [user("q")], choices)
    [inv] = build_invocations(tb.spans)
    assert inv.final_response == "First."


def test_tags_and_incomplete() -> None:
    tb = TraceBuilder()
    root = simple_run(tb)
    root.attributes["tracescore.golden.eval_id"] = "case-1"
    [inv] = build_invocations(tb.spans, complete=False)
    assert inv.tags == {"tracescore.golden.eval_id": "case-1"}
    assert inv.reason_code == "incomplete_trace"


def test_tags_come_from_the_root_and_agent_spans_and_their_resources_only() -> None:
    tb = TraceBuilder()
    root = simple_run(tb)
    shared: dict[str, AttrValue] = {"service.name": "svc", "tracescore.team": "search"}
    for span in tb.spans:
        span.resource = shared
    root.attributes["tracescore.golden.turn"] = 2  # not a string: written as one
    root.attributes["x\ntracescore.fake"] = "a key holding the prefix after a newline"
    root.attributes["tracescore.none"] = None
    others = [s for s in tb.spans if s is not root]
    others[0].attributes["tracescore.elsewhere"] = "not on the root or an agent span"
    [inv] = build_invocations(tb.spans)
    assert inv.tags == {"tracescore.golden.turn": "2", "tracescore.team": "search"}


def test_truncated_adk_request_is_salvaged_and_says_so() -> None:
    tb = TraceBuilder(scope="gcp.vertex.agent")
    inv_span = tb.span("invocation")
    a = agent(tb, "a", inv_span)
    big = "x" * 70_000
    request = (
        '{"model": "m", "contents": [{"role": "user", "parts": [{"text": "what now?"}]}],'
        ' "config": {"system_instruction": "' + big + '"}}'
    )[:65_536]
    response = {"content": {"role": "model", "parts": [{"text": "this"}]}}
    tb.span(
        "call_llm",
        a,
        attrs={"gcp.vertex.agent.llm_request": request, "gcp.vertex.agent.llm_response": response},
    )
    [inv] = build_invocations(tb.spans)
    assert inv.status == "ok"
    assert inv.user_content == "what now?"
    assert inv.final_response == "this"
    assert any("truncated" in w for w in inv.warnings)
    assert inv.system_instructions is not None
    assert inv.system_instructions.startswith("xxx")


def test_conversation_and_invocation_ids_by_key_order_then_span_order() -> None:
    tb = TraceBuilder()
    root = agent(tb, "a")  # no id of its own: only its resource has one
    step = chat(tb, root, [user("q")], reply(text("done")))
    step.attributes["session.id"] = "from-session-id"
    step.attributes["gen_ai.conversation.id"] = ""  # empty: not an answer
    step.attributes["gcp.vertex.agent.invocation_id"] = "e-42"
    shared: dict[str, AttrValue] = {
        "service.name": "agent",
        "gen_ai.conversation.id": "from-resource",
    }
    for span in tb.spans:
        span.resource = shared
    [inv] = build_invocations(tb.spans)
    # gen_ai.conversation.id outranks session.id, wherever it is (here: the resource)
    assert (inv.conversation_id, inv.provenance["conversation_id"]) == (
        "from-resource",
        "gen_ai.conversation.id",
    )
    assert (inv.invocation_id, inv.provenance["invocation_id"]) == (
        "e-42",
        "gcp.vertex.agent.invocation_id",
    )

    plain = TraceBuilder()
    only = agent(plain, "a")
    chat(plain, only, [user("q")], reply(text("done")))
    [bare] = build_invocations(plain.spans)
    assert bare.conversation_id is None
    assert bare.invocation_id == f"{only.trace_id}:{only.span_id}"
    assert "conversation_id" not in bare.provenance


def test_model_context_is_left_out_on_request_and_nothing_else_changes() -> None:
    """``model_context=False``: no instructions or tool declarations, the rest as before."""
    tb = TraceBuilder()
    root = agent(tb, "a")
    tools = [{"name": "lookup", "description": "Find a word.", "parameters": {"type": "object"}}]
    context = {
        "gen_ai.system_instructions": [{"type": "text", "content": "Be brief."}],
        "gen_ai.tool.definitions": tools,
    }
    chat(tb, root, [user("define cat")], reply(call("lookup", {"w": "cat"}, "c1")), **context)
    tool(tb, root, "lookup", {"w": "cat"}, "a small feline", cid="c1")
    chat(tb, root, None, reply(text("A small feline.")), **context)

    [full] = build_invocations(tb.spans)
    assert full.system_instructions == "Be brief."
    assert full.tool_definitions == tools
    assert {"system_instructions", "tool_definitions"} <= full.provenance.keys()

    [lean] = build_invocations(tb.spans, model_context=False)
    assert (lean.system_instructions, lean.tool_definitions) == (None, None)
    assert lean.provenance == {
        k: v
        for k, v in full.provenance.items()
        if k not in ("system_instructions", "tool_definitions")
    }
    assert replace(lean, provenance=full.provenance) == replace(
        full, system_instructions=None, tool_definitions=None
    )
    assert [c.name for c in lean.tool_calls] == ["lookup"]


def test_an_mcp_servers_own_trace_is_no_agent_run() -> None:
    """The ``mcp`` SDK's server span for a call whose client sent no trace context.

    Attributes as ``mcp.server._otel.OpenTelemetryMiddleware`` writes them (SDK 2.1).
    """
    tb = TraceBuilder()
    served = tb.span(
        "tools/call forecast",
        attrs={
            "mcp.method.name": "tools/call",
            "mcp.protocol.version": "2025-11-25",
            "jsonrpc.request.id": "3",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "forecast",
        },
    )
    tb.spans[-1] = replace(served, kind=2)  # SERVER
    assert build_invocations(tb.spans) == []
    # The same span from a client (or a framework's tool span alone) is still reported.
    tb.spans[-1] = replace(served, kind=3)  # CLIENT
    [inv] = build_invocations(tb.spans)
    assert inv.reason_code == "no_model_call"
    assert [c.name for c in inv.tool_calls] == ["forecast"]


def test_a_call_takes_the_failure_of_its_mcp_server_span() -> None:
    """OpenInference's OpenAI Agents tool span says OK when the MCP server failed the call.

    The MCP SDK's server span of the same call, inside it, says why; a failed tool of
    another name inside a tool is that tool's own business; of two server spans of the
    tool inside one tool span (a tool that retried its MCP call), none says how it ended.
    """
    tb = TraceBuilder()
    root = agent(tb, "a")
    replied = [call("forecast", {}, "m1"), call("lookup", {}, "m2"), call("fc", {}, "m3")]
    chat(tb, root, [user("q")], reply(*replied))
    # Each tool span: the tool the server spans inside it name, and their statuses.
    inside = {"forecast": ("forecast", [STATUS_ERROR]), "lookup": ("other", [STATUS_ERROR])}
    inside["fc"] = ("fc", [0, STATUS_ERROR])
    for name, (served, statuses) in inside.items():
        outer = tool(tb, root, name, {}, "Error executing tool", f"id-{name}")
        for status in statuses:
            client = tb.span(f"MCP send tools/call {served}", outer, attrs={"x": 1})
            attrs = {
                "mcp.method.name": "tools/call",
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": served,
            }
            if status:
                attrs["error.type"] = "tool_error"
            tb.span(f"tools/call {served}", client, attrs=attrs, status=status)
    chat(tb, root, [user("q")], reply(text("done")))
    [inv] = build_invocations(tb.spans)
    assert [(c.name, c.error) for c in inv.tool_calls] == [
        ("forecast", "tool_error"),
        ("lookup", None),
        ("fc", None),
    ]


def test_concurrent_branches_are_ordered_by_when_each_reply_came_back() -> None:
    """ADK's ParallelAgent: two branches' model calls overlap; the reply that came back
    first is first (ADK appends replies to the session as they arrive)."""
    tb = TraceBuilder()
    root = agent(tb, "pipeline")
    paris = agent(tb, "paris_agent", root)
    tokyo = agent(tb, "tokyo_agent", root)
    slow = chat(tb, paris, [user("q")], reply(text("Paris first asked."), call("w", {"c": "P"})))
    fast = chat(
        tb, tokyo, [user("q")], reply(text("Tokyo came back first."), call("w", {"c": "T"}))
    )
    spans = [
        replace(s, end_ns=s.start_ns + 5_000) if s is slow else s for s in tb.spans if s is not fast
    ]
    spans.append(replace(fast, end_ns=slow.start_ns + 4_000))
    [inv] = build_invocations(spans)
    assert [c.args for c in inv.tool_calls] == [{"c": "T"}, {"c": "P"}]
    assert [r.author for r in inv.intermediate_responses] == ["tokyo_agent", "paris_agent"]


def test_a_model_call_without_an_end_time_keeps_its_start_order() -> None:
    tb = TraceBuilder()
    root = agent(tb, "a")
    chat(tb, root, [user("q")], reply(text("A"), call("t", {"n": 1})))
    second = chat(tb, root, [user("q")], reply(text("B"), call("t", {"n": 2})))
    chat(tb, root, [user("q")], reply(text("done")))
    spans = [replace(s, end_ns=0) if s is second else s for s in tb.spans]
    [inv] = build_invocations(spans)
    assert [r.text for r in inv.intermediate_responses] == ["A", "B"]
    assert [c.args for c in inv.tool_calls] == [{"n": 1}, {"n": 2}]


def _maf_workflow(scope: str | None) -> TraceBuilder:
    """Agent Framework's shape: ``workflow.run`` (no GenAI operation) over two agents."""
    tb = TraceBuilder(scope=scope)
    run = tb.span("workflow.run", attrs={"workflow.name": "Pipeline", "workflow.id": "w1"})
    for name, answer in (("first", "draft"), ("second", "final")):
        step = tb.span(f"executor.process {name}", run, attrs={"executor.id": name})
        a = agent(tb, name, step)
        chat(tb, a, [user("task")], reply(text(answer)))
    return tb


def test_an_agent_framework_workflow_run_is_one_invocation_of_its_task() -> None:
    [inv] = build_invocations(_maf_workflow("agent_framework").spans)
    assert inv.agent == "Pipeline"
    assert inv.agents == ("Pipeline", "first", "second")
    assert inv.user_content == "task"
    assert [(r.author, r.text) for r in inv.intermediate_responses] == [("first", "draft")]
    assert inv.final_response == "final"


def test_a_workflow_run_span_of_another_library_is_not_a_run() -> None:
    # Only Agent Framework's scope says what its ``workflow.run`` is: elsewhere the
    # agents under it stay runs of their own.
    invs = build_invocations(_maf_workflow("some.other.library").spans)
    assert [i.agent for i in invs] == ["first", "second"]


def test_agent_framework_without_content_names_its_own_switch() -> None:
    tb = TraceBuilder(scope="agent_framework")
    root = agent(tb, "solo")
    tb.span("chat gpt-4o", root, attrs={"gen_ai.operation.name": "chat"})
    [inv] = build_invocations(tb.spans)
    assert inv.reason_code == "content_not_captured"
    assert inv.reason is not None and "ENABLE_SENSITIVE_DATA=true" in inv.reason


def test_a_run_that_ends_on_tool_calls_says_it_has_no_answer() -> None:
    # AutoGen's AssistantAgent, by default, answers with the tool results themselves: no
    # model call follows the calls, and its answer is in no span.
    tb = TraceBuilder()
    root = agent(tb, "assistant")
    chat(tb, root, [user("Weather?")], reply(call("get_weather", {"city": "Oslo"}, "c1")))
    tool(tb, root, "get_weather", {"city": "Oslo"}, "sunny", "c1")
    [inv] = build_invocations(tb.spans)
    assert inv.status == "ok"
    assert inv.final_response is None
    assert [c.result for c in inv.tool_calls] == ["sunny"]
    assert any("ended on tool calls" in w for w in inv.warnings)


def test_a_run_answered_after_its_calls_has_no_such_warning() -> None:
    tb = TraceBuilder()
    root = agent(tb, "assistant")
    chat(tb, root, [user("Weather?")], reply(text("Checking."), call("get_weather", {}, "c1")))
    tool(tb, root, "get_weather", {}, "sunny", "c1")
    chat(tb, root, None, reply(text("Sunny.")))
    [inv] = build_invocations(tb.spans)
    assert inv.final_response == "Sunny."
    assert inv.warnings == ()


def test_a_run_that_failed_in_its_tool_has_its_error_and_no_such_warning() -> None:
    tb = TraceBuilder()
    root = agent(tb, "assistant")
    chat(tb, root, [user("Weather?")], reply(call("get_weather", {"city": "Boom"}, "c1")))
    tool(tb, root, "get_weather", {"city": "Boom"}, None, "c1", status=STATUS_ERROR)
    root.status_code = STATUS_ERROR
    [inv] = build_invocations(tb.spans)
    assert inv.error is not None
    assert inv.warnings == ()


def _answered_by_framework(scope: str | None) -> list[SpanRecord]:
    """Two agents, each making a call no tool span or later request answers; each agent
    span's output messages hold its call's result (Agent Framework's handoffs)."""
    tb = TraceBuilder(scope=scope)
    run = tb.span("workflow.run", attrs={"workflow.name": "Handoff"})
    for name, cid, nxt in (("triage", "h1", "expert"), ("expert", "h2", "triage")):
        handoff = call(f"handoff_to_{nxt}", {}, cid)
        a = agent(
            tb,
            name,
            run,
            **{
                "gen_ai.output.messages": [
                    *reply(handoff),
                    {
                        "role": "tool",
                        "parts": [
                            {
                                "type": "tool_call_response",
                                "id": cid,
                                "response": {"handoff_to": nxt},
                            }
                        ],
                    },
                ]
            },
        )
        chat(tb, a, [user("task")], reply(handoff))
    return tb.spans


def test_results_only_agent_framework_agent_spans_list_are_taken_from_each() -> None:
    [inv] = build_invocations(_answered_by_framework("agent_framework"))
    assert [c.result for c in inv.tool_calls] == [
        {"handoff_to": "expert"},
        {"handoff_to": "triage"},
    ]
    assert inv.provenance["tool_results"] == "gen_ai.output.messages"


def test_an_agent_span_of_another_emitter_is_no_history() -> None:
    invs = build_invocations(_answered_by_framework("some.other.library"))
    assert [c.result for i in invs for c in i.tool_calls] == [None, None]


def test_a_run_that_resumes_a_turn_takes_the_call_that_paused_from_its_input() -> None:
    """A run resumed after a pause for a human (agno's ``continue_run``): its first model
    call sees the user's text, the reply that called the tool and the tool's result. The
    tool ran outside the agent (agno's external execution), so no tool span is left over
    to say a reply is missing: the resumed run still has the call, read from that input."""
    tb = TraceBuilder()
    root = agent(tb, "shipper")
    history = [
        user("Ship order 6?"),
        *reply(call("ship", {"order_id": 6}, "x1")),
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "x1", "response": "shipped by hand"}],
        },
    ]
    chat(tb, root, history, reply(text("Order 6 is shipped.")))
    [inv] = build_invocations(tb.spans)
    assert inv.user_content == "Ship order 6?"
    assert [(c.name, c.args, c.id, c.result) for c in inv.tool_calls] == [
        ("ship", {"order_id": 6}, "x1", "shipped by hand")
    ]
    assert (inv.final_response, inv.inference_calls) == ("Order 6 is shipped.", 2)
    assert [w.split(" (")[0] for w in inv.warnings] == [
        "model replies read from a later model call's input"
    ]


def test_a_first_call_after_the_user_s_text_alone_is_no_resumed_turn() -> None:
    """Earlier turns' calls come before the user's text: not this run's."""
    tb = TraceBuilder()
    root = agent(tb, "a")
    history = [user("Rome?"), *reply(call("get_weather", {"city": "Rome"}, "c1"))]
    history.append(
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "x"}]}
    )
    history += [*reply(text("Sunny.")), user("Thanks!")]
    chat(tb, root, history, reply(text("Welcome!")))
    [inv] = build_invocations(tb.spans)
    assert (inv.tool_calls, inv.warnings, inv.inference_calls) == ((), (), 1)


def test_a_run_with_tool_results_and_no_user_text_resumed_a_turn() -> None:
    """On the OpenAI Responses API a resumed run's request names the earlier response and
    sends the tool's result alone: the user's message is in the other trace."""
    tb = TraceBuilder()
    root = agent(tb, "refunder")
    history = [
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "ok"}]}
    ]
    chat(tb, root, history, reply(text("Order 4 is refunded.")))
    [inv] = build_invocations(tb.spans)
    assert (inv.status, inv.reason_code) == ("not_evaluable", "no_user_message")
    assert inv.reason == (
        "the run goes on with a turn an earlier run began: its first model call starts with"
        " tool results, and the user's message is in that run's trace, not this one's"
    )
    assert inv.final_response == "Order 4 is refunded."


def test_results_fed_back_out_of_order_pair_by_id() -> None:
    """LangChain's ToolCallLimitMiddleware answers the call past the limit before the
    tool runs the other: the next request has the results in another order than the
    calls. The tool span (no call id) answers the first call; the second takes its own
    result by id, not the first one left by name and order."""
    tb = TraceBuilder()
    root = agent(tb, "weather_agent")
    calls = reply(
        call("get_weather", {"city": "Oslo"}, "t1"), call("get_weather", {"city": "Rome"}, "t2")
    )
    chat(tb, root, [user("Oslo and Rome?")], calls)
    tool(tb, root, "get_weather", {"city": "Oslo"}, "sunny in Oslo")
    fed_back = [
        {"type": "tool_call_response", "id": "t2", "name": "get_weather", "response": "limit"},
        {"type": "tool_call_response", "id": "t1", "name": "get_weather", "response": "sunny"},
    ]
    history = [user("Oslo and Rome?"), *calls, {"role": "tool", "parts": fed_back}]
    chat(tb, root, history, reply(text("Only Oslo known.")))
    [inv] = build_invocations(tb.spans)
    assert [(c.id, c.result) for c in inv.tool_calls] == [("t1", "sunny in Oslo"), ("t2", "limit")]
