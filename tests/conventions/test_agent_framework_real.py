"""Real Microsoft Agent Framework traces, in its content modes, rebuilt as it returned them.

``maf_harness.py`` runs real Agent Framework agents (its OpenAI chat-completion client on
the fake OpenAI server) in a child process per mode and writes their spans (and log
records) as OTLP JSON Lines next to what the framework returned of each run. The rebuilt
invocations must equal that in every mode that captures content: semconv >= 1.37
attributes with and without the 1.36 message events beside them, and the 1.36 baseline
where the content is in the events alone. A ``SequentialBuilder`` workflow is one
invocation of its task, its agents in the order they ran; an agent called through
``as_tool`` is a run of its own; with content capture off the run is not evaluable and
the reason names Agent Framework's own switch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conv_helpers import assert_paused, imported, run_harness, run_view

import maf_harness
from tracescore.model import group_conversations

HARNESS = Path(maf_harness.__file__)
CAPTURING = [mode for mode in maf_harness.MODES if mode != "off"]


#: (content mode, API) runs of the harness that capture content: every mode on Chat
#: Completions, and the Responses API (Agent Framework's default OpenAI client) once.
RUNS = [(mode, "chat") for mode in CAPTURING] + [("latest", "responses")]


@pytest.fixture(scope="module", params=RUNS, ids=[f"{m}-{a}" for m, a in RUNS])
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenarios' traces and expected invocations for one mode that captures content."""
    mode, api = request.param
    env = {**maf_harness.MODES[mode], "TRACESCORE_HARNESS_MAF_API": api}
    return run_harness(HARNESS, tmp_path_factory.mktemp(f"{mode}-{api}-"), env=env)


@pytest.fixture(scope="module")
def uncaptured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same scenarios with Agent Framework's default: no content."""
    return run_harness(HARNESS, tmp_path_factory.mktemp("off"), env=maf_harness.MODES["off"])


def _mode(recorded: Path) -> str:
    return recorded.name.split("-")[0]


def _api(recorded: Path) -> str:
    return recorded.name.split("-")[1]


def _expected(recorded: Path, scenario: str) -> list[dict[str, Any]]:
    expected: list[dict[str, Any]] = json.loads((recorded / "expected.json").read_text())[scenario]
    return expected


#: Results a mode records nowhere, by (mode, scenario): the call ids. The framework
#: answers a handoff call itself (no tool span, left out of the next request); only the
#: agent span's output messages list its result, and the 1.36 baseline writes none.
UNRECORDED = {("baseline", "handoff_workflow"): {"call_h"}}


@pytest.mark.parametrize("scenario", list(maf_harness.SCENARIOS))
def test_rebuilt_invocations_equal_what_agent_framework_returned(
    recorded: Path, scenario: str
) -> None:
    ours = imported(recorded / f"{scenario}.jsonl")
    expected = _expected(recorded, scenario)
    lost = UNRECORDED.get((_mode(recorded), scenario), set())
    for run in expected:
        for call in run["calls"]:
            if call["id"] in lost:
                call["result"] = None
    assert [run_view(i) for i in ours] == expected
    for inv in ours:
        assert inv.status == "ok", inv.reason
        assert inv.warnings == ()
        # Every answered call reports the same input tokens; a failed one reports none.
        answered = inv.inference_calls - (1 if inv.error else 0)
        assert inv.usage.input_tokens == maf_harness.INPUT_TOKENS * answered


@pytest.mark.parametrize("scenario", list(maf_harness.SCENARIOS))
def test_capture_off_names_agent_framework_switch(uncaptured: Path, scenario: str) -> None:
    """No content recorded: not evaluable, and the reason says what to set."""
    invocations = imported(uncaptured / f"{scenario}.jsonl")
    assert len(invocations) == len(_expected(uncaptured, scenario))
    for inv in invocations:
        assert inv.status == "not_evaluable"
        assert inv.reason_code == "content_not_captured"
        assert inv.reason is not None and "ENABLE_SENSITIVE_DATA=true" in inv.reason
        assert inv.inference_calls >= 1


def test_model_call_that_failed_is_the_runs_error(recorded: Path) -> None:
    [inv] = imported(recorded / "model_fails.jsonl")
    assert inv.error == "ChatClientException"
    assert inv.inference_calls == 1
    assert inv.final_response is None


def test_tool_that_raised_is_flagged_with_its_type(recorded: Path) -> None:
    [inv] = imported(recorded / "parallel_calls_one_raises.jsonl")
    paris, atlantis = inv.tool_calls
    assert paris.error is None
    assert atlantis.error == "ConnectionError"
    assert atlantis.id == "call_a"


def test_workflow_is_one_invocation_of_its_task(recorded: Path) -> None:
    [inv] = imported(recorded / "sequential_workflow.jsonl")
    assert inv.agent == "Sequential"
    assert inv.agents == ("Sequential", "weather_agent", "summarizer")
    assert inv.inference_calls == 3
    assert [c.agent for c in inv.tool_calls] == ["weather_agent"]


def test_agent_called_as_a_tool_is_a_run_of_its_own(recorded: Path) -> None:
    boss, forecaster = imported(recorded / "agent_as_tool.jsonl")
    assert boss.parent_tool_span_id is None
    assert forecaster.parent_tool_span_id is not None
    assert forecaster.trace_id == boss.trace_id


def _recorded_keys(path: Path) -> tuple[set[str], set[str]]:
    """The span attribute keys and the log records' event names in ``path``."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    span_keys = {
        attr["key"]
        for line in lines
        for rs in line.get("resourceSpans", [])
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
        for attr in span.get("attributes", [])
    }
    events = {
        record.get("eventName")
        for line in lines
        for rl in line.get("resourceLogs", [])
        for sl in rl["scopeLogs"]
        for record in sl["logRecords"]
    }
    return span_keys, events


def test_mode_puts_content_where_documented(recorded: Path) -> None:
    """Pins what each mode records (the harness docstring), so a release that moves the
    content shows here first."""
    mode = _mode(recorded)
    span_keys, events = _recorded_keys(recorded / "sequential_calls.jsonl")
    latest = {"gen_ai.input.messages", "gen_ai.tool.call.result"} <= span_keys
    assert latest == (mode != "baseline")
    assert ("gen_ai.choice" in events) == (mode != "latest_no_events")


def test_capture_off_records_no_content(uncaptured: Path) -> None:
    span_keys, events = _recorded_keys(uncaptured / "sequential_calls.jsonl")
    assert not {k for k in span_keys if k.endswith(("messages", "arguments", "result"))}
    assert events == set()


def test_a_sessions_turns_form_one_conversation_on_the_responses_api(recorded: Path) -> None:
    """On Chat Completions Agent Framework states no conversation id for a local session:
    each turn stands alone (README). On the Responses API it states the response each
    request continues: the turns are one conversation, named by its first response."""
    turns = imported(recorded / "three_turns.jsonl")
    assert [t.user_content for t in turns] == ["Hi", "Weather in Rome?", "What did I ask?"]
    assert len({t.trace_id for t in turns}) == 3
    conversations = group_conversations(turns)
    if _api(recorded) == "chat":
        assert [t.conversation_id for t in turns] == [None, None, None]
        assert len(conversations) == 3
        return
    [conversation] = conversations
    assert conversation.conversation_id == turns[0].response_ids[0]
    assert [t.user_content for t in conversation.invocations] == [t.user_content for t in turns]
    assert {t.conversation_id for t in conversation.invocations} == {"resp_0"}


def test_a_tool_served_over_mcp_counts_once_and_keeps_its_failure(recorded: Path) -> None:
    """Agent Framework's ``execute_tool`` and its own ``tools/call`` span, then the ``mcp``
    SDK's client and server spans: four spans per call, one call each."""
    path = recorded / "mcp_tools.jsonl"
    tool_spans = [
        span["name"]
        for line in path.read_text().splitlines()
        for rs in json.loads(line).get("resourceSpans", [])
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
        if span["name"].endswith("tools/call forecast") or span["name"] == "execute_tool forecast"
    ]
    assert len(tool_spans) == 8
    [inv] = imported(path)
    paris, atlantis = inv.tool_calls
    assert paris.result == {"city": "Paris", "days": 2, "outlook": "sunny"}
    assert paris.error is None
    assert atlantis.error == "ToolExecutionException"


def test_a_run_waiting_for_approval_is_no_turn_the_run_approved_is(recorded: Path) -> None:
    """A tool with ``approval_mode="always_require"``: the run ends with the request,
    which its agent span's output messages hold (``user_input_request``); the run given
    the approval, in the same session, runs the tool and answers. That run is the turn,
    as Agent Framework's two responses together have it (on the Responses API, without
    the user's text, which only the paused run's trace holds). The 1.36 baseline writes
    no agent-span content: there the paused run reads as one that ended on its call."""
    [expected] = _expected(recorded, "approval")
    paused, resumed = imported(recorded / "approval.jsonl")
    assert paused.final_response is None
    if _api(recorded) == "responses":
        # The approved run's request names the paused run's response and sends only the
        # tool's result: no span of its trace holds the user's text.
        assert run_view(resumed) == {**expected, "user": None}
        assert (resumed.status, resumed.reason_code) == ("not_evaluable", "no_user_message")
        assert resumed.reason is not None
        assert resumed.reason.startswith("the run goes on with a turn an earlier run began")
    else:
        assert run_view(resumed) == expected
        assert (resumed.status, resumed.error) == ("ok", None)
    if _mode(recorded) == "baseline":
        assert (paused.status, paused.reason_code) == ("ok", None)
        [warning] = paused.warnings
        assert warning.startswith("the run ended on tool calls")
        return
    assert_paused(paused, "Agent Framework function_approval_request for refund")
