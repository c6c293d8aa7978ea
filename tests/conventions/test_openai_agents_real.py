"""Real OpenAI Agents SDK runs traced by OpenInference, rebuilt as the SDK recorded them.

``openai_agents_harness.py`` runs the SDK's agents against the local fake OpenAI server,
through the Responses API model (the SDK's default) and the Chat Completions one, in a
child process per API and capture setting, and writes the spans as OTLP JSON Lines next
to each run as the SDK kept it (``raw_responses``, ``new_items``). The rebuilt invocations
must equal that: a handoff is the model's ``transfer_to_…`` call, not a second tool; a
Responses API reply of text and calls is one reply; a call without arguments has ``{}``;
an agent used as a tool is a run of its own; ``using_session`` groups turns. With
OpenInference's ``OPENINFERENCE_HIDE_*`` switches on, every run says how to capture.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conv_helpers import assert_paused, imported, run_harness, run_view

import openai_agents_harness
from tracescore.conventions.openinference import CAPTURE_HINT
from tracescore.importer import ImportStats, import_paths
from tracescore.model import group_conversations

HARNESS = Path(openai_agents_harness.__file__)
HIDDEN = {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"}


@pytest.fixture(scope="module", params=openai_agents_harness.APIS)
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenarios' traces and expected runs for one model API, content captured."""
    api: str = request.param
    return run_harness(HARNESS, tmp_path_factory.mktemp(f"agents-{api}"), api)


@pytest.mark.parametrize("scenario", list(openai_agents_harness.SCENARIOS))
def test_rebuilt_invocations_equal_what_the_sdk_recorded(recorded: Path, scenario: str) -> None:
    expected = json.loads((recorded / "expected.json").read_text())[scenario]
    ours = imported(recorded / f"{scenario}.jsonl")
    assert [run_view(i, authors=True, failed=False) for i in ours] == expected
    for inv in ours:
        assert inv.status == "ok", inv.reason
        assert inv.warnings == ()
        assert inv.usage.input_tokens == 13 * inv.inference_calls
        assert inv.error is None


@pytest.mark.parametrize("recorded", ["responses"], indirect=True)
def test_a_reasoning_summary_is_a_thought_not_the_answer(recorded: Path) -> None:
    """OpenInference writes a reasoning item's summary as a ``reasoning`` content of the
    reply. It is the model's thought: the SDK's answer (its final output, its message
    items) leaves it out, and so do the run's responses."""
    expected = json.loads((recorded / "expected.json").read_text())["reasoning"]
    spans = (recorded / "reasoning.jsonl").read_text()
    assert '"stringValue": "It is sunny; say so."' in spans  # written, and read as a thought
    ours = imported(recorded / "reasoning.jsonl")
    assert [run_view(i, authors=True, failed=False) for i in ours] == expected
    [inv] = ours
    assert (inv.final_response, inv.intermediate_responses) == ("Lima is sunny.", ())


@pytest.mark.parametrize("recorded", ["responses"], indirect=True)
def test_a_hosted_file_search_is_what_the_model_read_not_a_call(recorded: Path) -> None:
    """A ``FileSearchTool`` runs inside the Responses API call: OpenInference writes it as
    a call named ``file_search_call`` and its results as a tool message in the same
    output. It is no call of the agent's (the SDK ran none) and the reply's text is the
    answer; what the search found is the run's retrieved documents."""
    [expected] = json.loads((recorded / "expected.json").read_text())["file_search"]
    found = expected.pop("retrieved")
    [inv] = imported(recorded / "file_search.jsonl")
    assert run_view(inv, authors=True, failed=False) == expected
    assert (inv.tool_calls, inv.final_response) == (
        (),
        "Lima is sunny all year, says the handbook.",
    )
    assert (inv.status, inv.warnings) == ("ok", ())
    [with_context] = import_paths([recorded / "file_search.jsonl"], ImportStats())
    assert list(with_context.retrieved) == found == ["Lima: sunny all year.", "Oslo: rain."]
    assert with_context.provenance["retrieved"] == "llm.output_messages"


#: The errors the SDK sets on the agent's span (OpenInference writes them as the status).
WHY_IT_RAISED = {
    "max_turns": "Max turns exceeded: {'max_turns': 1}",
    "output_tripwire": "Guardrail tripwire triggered: {'guardrail': '_no_rain'}",
}


@pytest.mark.parametrize("scenario", list(WHY_IT_RAISED))
def test_a_run_that_raised_keeps_what_it_did_and_says_why(recorded: Path, scenario: str) -> None:
    """The SDK leaves its ``Agent workflow`` span OK and sets the error on the agent's
    span: the run failed all the same. Before the failure the run is as the SDK's own
    ``run_data`` has it (an output guardrail's run has the answer the caller never got)."""
    [expected] = json.loads((recorded / "expected.json").read_text())[scenario]
    assert expected.pop("raised") in ("MaxTurnsExceeded", "OutputGuardrailTripwireTriggered")
    [inv] = imported(recorded / f"{scenario}.jsonl")
    assert run_view(inv, authors=True, failed=False) == expected
    assert (inv.status, inv.error, inv.warnings) == ("ok", WHY_IT_RAISED[scenario], ())


def test_a_model_call_that_failed_for_good_is_the_run_s_error(recorded: Path) -> None:
    """The second model call gets a 500 and the SDK raises: the run has its call and no
    answer, and says why (not that it ended on its calls)."""
    [expected] = json.loads((recorded / "expected.json").read_text())["model_fails"]
    assert expected == {"user": "Weather in Graz?", "raised": "InternalServerError"}
    [inv] = imported(recorded / "model_fails.jsonl")
    assert [(c.name, c.args, c.result) for c in inv.tool_calls] == [
        ("get_weather", {"city": "Graz"}, "sunny in Graz, 21 °C")
    ]
    assert (inv.user_content, inv.final_response, inv.warnings) == ("Weather in Graz?", None, ())
    assert inv.error == "Error in agent run: {'error': 'Error code: 500 - script exhausted'}"


def test_an_input_guardrail_that_tripped_is_why_no_model_answered(recorded: Path) -> None:
    """The guardrail trips before the model call ends: the SDK drops the call, so no span
    has the prompt or a reply. Not evaluable, and the reason says why."""
    [inv] = imported(recorded / "input_tripwire.jsonl")
    why = "Guardrail tripwire triggered: {'guardrail': '_refuse_sums'}"
    assert (inv.status, inv.reason_code, inv.error) == ("not_evaluable", "no_model_call", why)
    assert inv.reason == f"no model call was found in this agent run; the run failed first: {why}"


def test_a_run_stopped_on_its_tool_s_result_has_no_final_response(recorded: Path) -> None:
    """``stop_on_first_tool``: the tool's result is the SDK's ``final_output``, written in
    no span. The run has its call and no final response, and says so."""
    [expected] = json.loads((recorded / "expected.json").read_text())["stop_on_first_tool"]
    assert expected.pop("final_output") == "sunny in Lisbon, 21 °C"
    [inv] = imported(recorded / "stop_on_first_tool.jsonl")
    assert run_view(inv, authors=True, failed=False) == expected
    assert (inv.status, inv.error) == ("ok", None)
    [warning] = inv.warnings
    assert warning.startswith("the run ended on tool calls, with no model reply after them")


def test_a_tool_that_raised_is_flagged(recorded: Path) -> None:
    [inv] = imported(recorded / "tool_raises.jsonl")
    [call] = inv.tool_calls
    assert call.error is not None
    assert inv.final_response == "Atlantis has no weather station."


def test_using_session_groups_the_turns(recorded: Path) -> None:
    [conversation] = group_conversations(imported(recorded / "two_turn_session.jsonl"))
    assert conversation.conversation_id == "agents-session-1"
    assert [i.user_content for i in conversation.invocations] == ["Weather in Rome?", "Thanks!"]


def test_agent_used_as_a_tool_is_a_run_of_its_own(recorded: Path) -> None:
    boss, weather = imported(recorded / "agent_as_tool.jsonl")
    assert boss.parent_tool_span_id is None
    assert weather.parent_tool_span_id is not None


@pytest.mark.parametrize("api", openai_agents_harness.APIS)
def test_hidden_content_says_how_to_capture_it(api: str, tmp_path: Path) -> None:
    out = run_harness(HARNESS, tmp_path, api, env=HIDDEN)
    for scenario in ("sequential_tools", "handoff"):
        ours = imported(out / f"{scenario}.jsonl")
        assert ours
        for inv in ours:
            assert inv.status == "not_evaluable"
            assert inv.reason_code == "content_not_captured"
            assert CAPTURE_HINT in (inv.reason or "")


def test_a_call_held_for_approval_pauses_the_run(recorded: Path) -> None:
    """A tool made with ``needs_approval``: the SDK holds the call unrun (its tool span
    has the arguments and no result) and ends the run. The run resumed from its state,
    the call approved, reattaches to the same SDK trace without telling the trace
    processors, and OpenInference's, which saw that trace end, drops all of it: the
    paused run is all there is, and it says it paused, not that it ended on its call."""
    paused_expected, _ = json.loads((recorded / "expected.json").read_text())["approval"]
    [paused] = imported(recorded / "approval.jsonl")
    assert run_view(paused, authors=True, failed=False) == paused_expected
    assert_paused(paused, "OpenAI Agents tool approval for refund")
