"""Real Strands Agents traces, in its three content modes, rebuilt as Strands recorded them.

``strands_harness.py`` runs real Strands agents (scripted model) in a child process per
mode and writes their spans as OTLP JSON Lines next to what Strands itself kept in its
agents' ``messages``. ``tracescore import``'s reader must give back exactly that: the
user's prompt, the tool calls with arguments, ids and results (errors flagged), the texts
before the answer and the answer; a session id groups turns; a swarm or a graph is one
invocation of its task, its agents in the order they ran; an agent called as a tool is a
run of its own; a failed model call is an error, not missing content.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conv_helpers import assert_paused, imported, run_harness, run_view

import strands_harness
from tracescore.cli import main
from tracescore.evalset import conversations_to_evalset
from tracescore.model import group_conversations

HARNESS = Path(strands_harness.__file__)

MODES = list(strands_harness.MODES)


@pytest.fixture(scope="module", params=MODES)
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenarios' traces and expected invocations for one content mode."""
    mode: str = request.param
    return run_harness(
        HARNESS, tmp_path_factory.mktemp(f"strands-{mode}"), env=strands_harness.MODES[mode]
    )


@pytest.mark.parametrize("scenario", list(strands_harness.SCENARIOS))
def test_rebuilt_invocations_equal_what_strands_recorded(recorded: Path, scenario: str) -> None:
    expected = json.loads((recorded / "expected.json").read_text())[scenario]
    ours = imported(recorded / f"{scenario}.jsonl")
    # Checked below, not part of the view.
    extra = ("error", "failed_model_calls", "final_is_json")
    assert [_as_data(run_view(i), e) for i, e in zip(ours, expected, strict=True)] == [
        _as_data({k: v for k, v in e.items() if k not in extra}, e) for e in expected
    ]
    for inv, exp in zip(ours, expected, strict=True):
        assert inv.status == "ok", inv.reason
        assert inv.warnings == ()
        assert inv.inference_calls >= 1
        # The scripted model reports 11 input tokens per answered call; a failed one has none.
        answered = inv.inference_calls - exp.get("failed_model_calls", 0)
        assert inv.usage.input_tokens == 11 * answered
        assert inv.error == exp.get("error")


def _as_data(view: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any]:
    """A structured output's final response as data: OpenInference's span processor
    writes the JSON Strands states anew (``{"city": "Paris"...}``, spaced)."""
    if expected.get("final_is_json") and view["final"] is not None:
        return {**view, "final": json.loads(view["final"])}
    return view


@pytest.mark.parametrize("scenario", list(strands_harness.STOPPED))
def test_a_run_strands_stopped_unanswered_says_why(
    recorded: Path, scenario: str, request: pytest.FixtureRequest
) -> None:
    """``limits`` or a cancellation: Strands returns normally, every span OK, only the
    run's stop reason says it stopped; the run's error says so, not "ended on tool calls"."""
    [expected] = json.loads((recorded / "expected.json").read_text())[scenario]
    stop = expected.pop("stop")
    [inv] = imported(recorded / f"{scenario}.jsonl")
    assert run_view(inv) == expected
    assert (inv.status, inv.final_response) == ("ok", None)
    if request.node.callspec.params["recorded"] == "openinference_legacy":
        # OpenInference's processor drops the run's empty output message, and its stop
        # reason with it (the default mode): no span says the run was stopped.
        assert inv.error is None
        [warning] = inv.warnings
        assert warning.startswith("the run ended on tool calls, with no model reply after them")
        return
    assert inv.error is not None
    assert inv.error.startswith("Strands stopped the run: ")
    assert inv.error.endswith(f"; stop reason {stop}")
    assert inv.warnings == ()


@pytest.mark.parametrize("scenario", list(strands_harness.PAUSING))
def test_a_run_interrupted_for_a_human_is_no_turn_the_run_that_resumes_it_is(
    recorded: Path, scenario: str
) -> None:
    """An interrupt (from a hook or a tool) stops the run with stop reason ``interrupt``;
    the caller's responses resume it in a new run (a trace of its own) whose model calls
    see the whole turn. That run is the turn, as Strands' messages after the resume have
    it; the paused one is not evaluable, and its stated output (the interrupts) is no
    answer."""
    [expected] = json.loads((recorded / "expected.json").read_text())[scenario]
    paused, resumed = imported(recorded / f"{scenario}.jsonl")
    name = {"hook_interrupt": "approve_lookup", "tool_interrupt": "approve_refund"}[scenario]
    assert_paused(paused, f"Strands interrupt {name}")
    assert paused.final_response is None
    assert [c.name for c in paused.tool_calls] == [expected["calls"][0]["name"]]
    assert run_view(resumed) == expected
    assert (resumed.status, resumed.error) == ("ok", None)
    [conversation] = group_conversations([paused, resumed])
    assert conversation.conversation_id == paused.conversation_id == resumed.conversation_id
    _, written, left_out = conversations_to_evalset([conversation], eval_set_id="hitl")
    assert (written, left_out) == (1, 1)


def test_session_id_groups_the_turns(recorded: Path) -> None:
    ours = imported(recorded / "two_turn_session.jsonl")
    [conversation] = group_conversations(ours)
    assert conversation.conversation_id == "strands-session-1"
    assert [i.user_content for i in conversation.invocations] == ["Weather in Rome?", "Thanks!"]


def test_agent_called_as_a_tool_is_a_run_of_its_own(recorded: Path) -> None:
    boss, researcher = imported(recorded / "agent_as_tool.jsonl")
    assert boss.parent_tool_span_id is None
    assert researcher.parent_tool_span_id is not None
    assert researcher.trace_id == boss.trace_id


def test_a_retried_model_call_counts_and_changes_nothing_else(recorded: Path) -> None:
    [inv] = imported(recorded / "model_retried.jsonl")
    assert inv.inference_calls == 3  # the throttled call is a model call too
    assert [c.name for c in inv.tool_calls] == ["get_weather"]
    assert inv.final_response == "Bergen: sunny, answered on the second try."
    assert inv.warnings == ()
    assert inv.error is None


GOLDEN = {
    "eval_set_id": "strands",
    "eval_cases": [
        {
            "eval_id": "ping",
            "conversation": [
                {
                    "invocation_id": "g1",
                    "user_content": {"role": "user", "parts": [{"text": "Anyone there?"}]},
                    "final_response": {"role": "model", "parts": [{"text": "Yes, I am here."}]},
                    "intermediate_data": {
                        "tool_uses": [],
                        "tool_responses": [],
                        "intermediate_responses": [],
                    },
                }
            ],
            "session_input": {"app_name": "fragile", "user_id": "u", "state": {}},
        }
    ],
}


def test_a_run_the_model_failed_fails_its_case_and_says_why(recorded: Path, tmp_path: Path) -> None:
    trace = recorded / "model_error.jsonl"
    runner = CliRunner()
    imported = runner.invoke(main, ["import", str(trace), "--format", "jsonl", "-q"])
    assert imported.exit_code == 0, imported.stderr
    [record] = [json.loads(line) for line in imported.stdout.splitlines()]
    assert (record["status"], record["final_response"]) == ("ok", None)
    assert record["error"] == "model endpoint down"

    goldens = tmp_path / "ping.evalset.json"
    goldens.write_text(json.dumps(GOLDEN))
    results = tmp_path / "results.jsonl"
    replayed = runner.invoke(
        main,
        ["replay", str(trace), "--goldens", str(goldens), "--output", str(results), "--detailed"],
    )
    # ADK fails an eval case whose agent raised; so does the replay, as a CI gate.
    assert replayed.exit_code == 1, replayed.stderr
    assert "strands/ping: FAILED" in replayed.stdout
    assert f"failed:   {record['error']}" in replayed.stdout
    [scored] = [json.loads(line) for line in results.read_text().splitlines()]
    assert scored["outcome"] == "scored"
    assert scored["error"] == record["error"]
    assert scored["criteria"]["response_match_score"]["status"] == "FAILED"
    assert scored["criteria"]["tool_trajectory_avg_score"]["status"] == "PASSED"
