"""Real LangGraph ReAct agents, traced by OpenInference or OpenLLMetry, rebuilt as LangGraph
returned them.

``langgraph_harness.py`` runs ``create_react_agent`` graphs and LangChain 1.x's
``create_agent`` (its middleware, its structured output; LangChain's scripted fake chat
model) in a child process under ``openinference-instrumentation-langchain`` or
OpenLLMetry's ``opentelemetry-instrumentation-langchain`` and writes their spans as OTLP
JSON Lines next to the new messages of each run's state. The rebuilt invocations must
equal those: the graph's name is the agent, a tool's result is its ``ToolMessage``
content (not the serialized message, nor the callback payload around it), an error
result is flagged, and the thread id groups the turns of a conversation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
from conv_helpers import assert_paused, imported, run_harness, run_view

import langgraph_harness
from tracescore.evalset import conversations_to_evalset
from tracescore.model import group_conversations

HARNESS = Path(langgraph_harness.__file__)


@pytest.fixture(scope="module", params=langgraph_harness.INSTRUMENTATIONS)
def traced(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path]:
    """The instrumentation, and the scenarios' traces and LangGraph's record of each run."""
    instrumentation: str = request.param
    out = tmp_path_factory.mktemp(f"langgraph-{instrumentation}")
    return instrumentation, run_harness(HARNESS, out, instrumentation)


@pytest.fixture
def recorded(traced: tuple[str, Path]) -> Path:
    return traced[1]


@pytest.mark.parametrize("scenario", list(langgraph_harness.SCENARIOS))
def test_rebuilt_invocations_equal_what_langgraph_returned(
    traced: tuple[str, Path], scenario: str
) -> None:
    instrumentation, recorded = traced
    expected = json.loads((recorded / "expected.json").read_text())[scenario]
    if instrumentation == "openinference":
        # Its spans name no agent: the graph is named by its span, the agents inside a
        # graph (its nodes) cannot be told from other nodes (see the README).
        expected = [{**run, "agents": run["agents"][:1]} for run in expected]
    ours = imported(recorded / f"{scenario}.jsonl")
    assert [run_view(i) for i in ours] == expected
    for inv, run in zip(ours, expected, strict=True):
        assert inv.status == "ok", inv.reason
        assert inv.warnings == ()
        assert inv.agent == run["agents"][0]
        assert all(c.agent == inv.agent for c in inv.tool_calls)


def test_a_streamed_reply_is_one_model_call_with_the_usage_of_its_last_chunk(
    recorded: Path,
) -> None:
    [inv] = imported(recorded / "streamed.jsonl")
    assert inv.inference_calls == 2
    assert (inv.usage.input_tokens, inv.usage.output_tokens) == (22, 6)


#: What each pausing scenario stops in (OpenInference's span name), its user text, thread
#: and answer.
PAUSES = {
    "human_in_the_loop": ("refund", "Refund order 4?", "thread-hitl", "Order 4 is refunded."),
    "agent_human_in_the_loop": (
        "HumanInTheLoopMiddleware.after_model",
        "Where is order 3?",
        "thread-hitl-agent",
        "Order 3 has shipped.",
    ),
}


@pytest.mark.parametrize("scenario", list(langgraph_harness.PAUSING))
def test_a_run_paused_for_a_human_is_no_turn_the_run_that_resumes_it_is(
    traced: tuple[str, Path], scenario: str
) -> None:
    """``interrupt()`` in a tool, or ``create_agent``'s ``HumanInTheLoopMiddleware``
    before the tool runs, pauses the graph (a trace of its own); the resumed run's model
    calls see the whole turn. That run is the turn, as LangGraph's state after the
    resume has it; the paused one is not evaluable, and no turn of its conversation (so
    not a golden either, nor matched against one)."""
    instrumentation, recorded = traced
    where, user, thread, answer = PAUSES[scenario]
    [expected] = json.loads((recorded / "expected.json").read_text())[scenario]
    paused, resumed = imported(recorded / f"{scenario}.jsonl")
    prefix = "execute_tool " if scenario == "human_in_the_loop" else "execute_task "
    span = f"{prefix}{where}" if instrumentation == "openllmetry" else where
    assert_paused(paused, f"GraphInterrupt in {span}")
    assert run_view(resumed) == expected
    assert (resumed.status, resumed.user_content) == ("ok", user)
    conversations = group_conversations([paused, resumed])
    assert [c.conversation_id for c in conversations] == [thread]
    evalset, written, left_out = conversations_to_evalset(conversations, eval_set_id="hitl")
    assert (written, left_out) == (1, 1)
    [case] = cast("list[dict[str, Any]]", evalset["eval_cases"])
    [golden] = case["conversation"]
    assert golden["final_response"]["parts"] == [{"text": answer}]


def test_a_reply_the_framework_wrote_in_the_model_s_place_ends_the_run(recorded: Path) -> None:
    """``ModelCallLimitMiddleware(exit_behavior="end")``: no model call made the last
    reply, the graph's state holds it; it is the answer, a framework's reply, no call."""
    [inv] = imported(recorded / "agent_model_call_limit.jsonl")
    assert inv.final_response == "Model call limits exceeded: run limit (1/1)"
    assert (inv.inference_calls, inv.framework_replies) == (1, 1)


def test_a_call_the_framework_refused_takes_its_own_result(recorded: Path) -> None:
    """``ToolCallLimitMiddleware``: the call past the limit is answered first, in no tool
    span, with an error ``ToolMessage``; each call still gets its own result, and the
    refused one its error, which only the graph's final state says."""
    [expected] = json.loads((recorded / "expected.json").read_text())["agent_tool_call_limit"]
    [inv] = imported(recorded / "agent_tool_call_limit.jsonl")
    assert [c["failed"] for c in expected["calls"]] == [False, True]
    assert run_view(inv) == expected
    refusal = "Tool call limit exceeded. Do not make additional tool calls."
    assert [c.error for c in inv.tool_calls] == [None, refusal]
    assert (inv.status, inv.warnings) == ("ok", ())


def test_the_thread_id_groups_the_turns(recorded: Path) -> None:
    [conversation] = group_conversations(imported(recorded / "two_turn_session.jsonl"))
    assert conversation.conversation_id == "thread-1"
    assert [i.user_content for i in conversation.invocations] == ["Weather in Rome?", "Thanks!"]


def test_openllmetry_without_content_says_how_to_capture_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    out = run_harness(
        HARNESS,
        tmp_path_factory.mktemp("langgraph-openllmetry-no-content"),
        "openllmetry",
        env={"TRACELOOP_TRACE_CONTENT": "false"},
    )
    for scenario in langgraph_harness.SCENARIOS:
        expected = json.loads((out / "expected.json").read_text())[scenario]
        ours = imported(out / f"{scenario}.jsonl")
        assert len(ours) == len(expected)
        for inv, run in zip(ours, expected, strict=True):
            assert (inv.status, inv.reason_code) == ("not_evaluable", "content_not_captured")
            assert inv.reason is not None and "TRACELOOP_TRACE_CONTENT=true" in inv.reason
            # Tool spans still name the tools that ran, in order (a structured output's
            # call is answered by the framework: no tool ran).
            ran = [c["name"] for c in run["calls"] if c["name"] != "Forecast"]
            assert [c.name for c in inv.tool_calls] == ran
            assert all(c.args is None and c.result is None for c in inv.tool_calls)
