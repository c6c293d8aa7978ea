"""Real OpenAI Agents SDK runs traced by OpenLLMetry, rebuilt as the SDK recorded them.

The same scenarios as ``test_openai_agents_real`` (``openai_agents_harness.py``), traced
by OpenLLMetry's ``opentelemetry-instrumentation-openai-agents``, which writes GenAI
attributes (``gen_ai.input|output.messages``, ``gen_ai.tool.call.*``). Through the
Responses API (the SDK's default) each *output item* is written as an output message of
its own; they are one reply, merged by the ``resp_`` response id. An agent used as a
tool is written beside its caller, not under the tool span: it runs within the tool's
time, and that makes it a run of its own. What the instrumentation does not record is
held here as it is, so that a change shows: Chat Completions calls get no output at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conv_helpers import assert_paused, imported, run_harness, run_view

import openai_agents_harness
from tracescore.conventions.traceloop import CAPTURE_HINT
from tracescore.importer import ImportStats, import_paths

HARNESS = Path(openai_agents_harness.__file__)
OPENLLMETRY = {"TRACESCORE_HARNESS_INSTRUMENTATION": "openllmetry"}


@pytest.fixture(scope="module")
def responses(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("agents-openllmetry-responses")
    return run_harness(HARNESS, out, "responses", env=OPENLLMETRY)


@pytest.mark.parametrize("scenario", list(openai_agents_harness.SCENARIOS))
def test_rebuilt_invocations_equal_what_the_sdk_recorded(responses: Path, scenario: str) -> None:
    expected = json.loads((responses / "expected.json").read_text())[scenario]
    ours = imported(responses / f"{scenario}.jsonl")
    assert [run_view(i, authors=True, failed=False) for i in ours] == expected
    for inv in ours:
        assert inv.status == "ok", inv.reason
        assert inv.warnings == ()
        assert inv.usage.input_tokens == 13 * inv.inference_calls
        assert inv.provenance["responses"] == "gen_ai.output.messages"


def test_a_hosted_file_search_leaves_no_trace_but_its_answer(responses: Path) -> None:
    """OpenLLMetry writes a Responses API reply's text and function calls only: the file
    search the API ran inside the call is not in its output messages, so the run is right
    but has nothing to say of what was found."""
    [expected] = json.loads((responses / "expected.json").read_text())["file_search"]
    assert expected.pop("retrieved")  # the SDK saw results
    [inv] = import_paths([responses / "file_search.jsonl"], ImportStats())
    assert run_view(inv, authors=True, failed=False) == expected
    assert (inv.status, inv.retrieved) == ("ok", ())


@pytest.mark.parametrize(
    ("scenario", "why"),
    [
        ("max_turns", "Max turns exceeded: {'max_turns': 1}"),
        ("output_tripwire", "Guardrail tripwire triggered: {'guardrail': '_no_rain'}"),
    ],
)
def test_a_run_that_raised_says_why(responses: Path, scenario: str, why: str) -> None:
    """OpenLLMetry writes the SDK's error (a dict) as the agent span's status, and leaves
    the ``Agent Workflow`` span OK: the run failed all the same. The dict's repr is read
    as OpenInference writes the same error (``message: data``)."""
    [expected] = json.loads((responses / "expected.json").read_text())[scenario]
    expected.pop("raised")
    [inv] = imported(responses / f"{scenario}.jsonl")
    assert run_view(inv, authors=True, failed=False) == expected
    assert (inv.status, inv.error, inv.warnings) == ("ok", why, ())


def test_a_model_call_that_failed_for_good_is_the_run_s_error(responses: Path) -> None:
    [inv] = imported(responses / "model_fails.jsonl")
    assert len(inv.tool_calls) == 1
    assert (inv.final_response, inv.warnings) == (None, ())
    assert inv.error is not None and "Error code: 500 - script exhausted" in inv.error


def test_an_input_guardrail_that_tripped_leaves_nothing_to_say_why(responses: Path) -> None:
    """OpenLLMetry writes the guardrail's trip nowhere (no span has an error, and the
    prompt is in none): the run is not evaluable, with no model call, and that is all."""
    [inv] = imported(responses / "input_tripwire.jsonl")
    assert (inv.status, inv.reason_code, inv.error) == ("not_evaluable", "no_model_call", None)


def test_a_tool_that_raised_is_flagged(responses: Path) -> None:
    [inv] = imported(responses / "tool_raises.jsonl")
    [call] = inv.tool_calls
    assert call.error is not None and "Error running tool" in call.error


def test_an_agent_written_beside_the_tool_that_called_it_is_a_run_of_its_own(
    responses: Path,
) -> None:
    boss, weather = imported(responses / "agent_as_tool.jsonl")
    [ask] = boss.tool_calls
    assert weather.parent_tool_span_id == ask.span_id is not None
    assert weather.trace_id == boss.trace_id


def test_chat_completions_calls_have_no_output_and_say_the_input_was_there(
    tmp_path: Path,
) -> None:
    out = run_harness(HARNESS, tmp_path, "chat", env=OPENLLMETRY)
    expected = json.loads((out / "expected.json").read_text())
    for scenario in openai_agents_harness.SCENARIOS:
        ours = imported(out / f"{scenario}.jsonl")
        assert [i.user_content for i in ours] == [run["user"] for run in expected[scenario]]
        for inv in ours:
            assert (inv.status, inv.reason_code) == ("not_evaluable", "content_not_captured")
            assert inv.reason == (
                f"content not captured (model output missing, input captured): {CAPTURE_HINT}"
            )


def test_a_reasoning_summary_is_not_recorded_and_the_answer_is_read(responses: Path) -> None:
    """OpenLLMetry leaves reasoning items out of its output messages: the run is read as
    the SDK's answer has it."""
    expected = json.loads((responses / "expected.json").read_text())["reasoning"]
    assert "It is sunny; say so." not in (responses / "reasoning.jsonl").read_text()
    ours = imported(responses / "reasoning.jsonl")
    assert [run_view(i, authors=True, failed=False) for i in ours] == expected


def test_a_call_held_for_approval_pauses_the_run_the_resumed_run_is_the_turn(
    responses: Path,
) -> None:
    """A tool made with ``needs_approval``: the paused run's tool span has the arguments
    and no result, and the run says it paused. The resumed run (the call approved) is a
    trace of its own here, whose model call's input holds the whole turn: it is the
    turn, as the SDK's view of the resumed run has it. OpenLLMetry writes the call in
    that input with the Responses API item's id (``fc_r1``), its result with the call's
    id (``r1``): the call keeps the id it was written with."""
    paused_expected, resumed_expected = json.loads((responses / "expected.json").read_text())[
        "approval"
    ]
    paused, resumed = imported(responses / "approval.jsonl")
    assert run_view(paused, authors=True, failed=False) == paused_expected
    assert_paused(paused, "OpenAI Agents tool approval for refund")
    view = run_view(resumed, authors=True, failed=False)
    assert [call.pop("id") for call in view["calls"]] == ["fc_r1"]
    assert [call.pop("id") for call in resumed_expected["calls"]] == ["r1"]
    assert view == resumed_expected
    assert (resumed.status, resumed.error, resumed.final_response) == (
        "ok",
        None,
        "Order 42 is refunded.",
    )
    [warning] = resumed.warnings
    assert warning.startswith("model replies read from a later model call's input")
