"""Real agno agents and a team traced by OpenInference, rebuilt as agno returned them.

``agno_harness.py`` runs agno agents against the local fake OpenAI server in a child
process and writes their spans next to each run's ``RunOutput``. The rebuilt invocations
must equal those: tools with results (a raised one flagged), parallel calls, a session
of two turns, and a team whose member run, written beside the delegating tool span but
within its time, is a run of its own called from that tool. A run that paused for a
human is no turn; the run ``continue_run`` resumed is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conv_helpers import agreeing, assert_paused, imported, run_harness, run_view

import agno_harness
from tracescore.evalset import conversations_to_evalset
from tracescore.model import group_conversations

HARNESS = Path(agno_harness.__file__)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_harness(HARNESS, tmp_path_factory.mktemp("agno"), "--pausing")


@pytest.mark.parametrize("scenario", list(agno_harness.SCENARIOS))
def test_rebuilt_invocations_equal_what_agno_returned(recorded: Path, scenario: str) -> None:
    for inv in agreeing(recorded, scenario):
        assert inv.status == "ok", inv.reason
        assert inv.warnings == ()
        assert inv.usage.input_tokens == 13 * inv.inference_calls


def test_the_session_groups_the_turns(recorded: Path) -> None:
    [conversation] = group_conversations(imported(recorded / "two_turn_session.jsonl"))
    assert conversation.conversation_id == "agno-session-1"
    assert [i.user_content for i in conversation.invocations] == ["Weather in Rome?", "Thanks!"]


def test_a_team_member_run_is_called_from_the_delegating_tool(recorded: Path) -> None:
    desk, researcher = imported(recorded / "team_delegation.jsonl")
    [delegate] = desk.tool_calls
    assert delegate.name == "delegate_task_to_member"
    assert researcher.parent_tool_span_id == delegate.span_id is not None


@pytest.mark.parametrize("scenario", list(agno_harness.PAUSING))
def test_a_run_paused_for_a_human_is_no_turn_the_run_that_resumes_it_is(
    recorded: Path, scenario: str
) -> None:
    """A tool that needs confirmation, the user's input or running elsewhere pauses the
    run before it runs; the run's content (its span's output) is agno's sentence for
    that, no answer. ``continue_run`` resumes it in a trace of its own, whose model call
    sees the whole turn: that run is the turn, as agno returned it, the call that paused
    included (an external one has no tool span anywhere: its result is the one the
    caller gave)."""
    [expected] = json.loads((recorded / "expected.json").read_text())[scenario]
    paused, resumed = imported(recorded / f"{scenario}.jsonl")
    waits = {
        "confirmation": "I need confirmation",
        "user_input": "I need user input",
        "external_execution": "it needs external execution",
    }[scenario]
    assert_paused(paused, f"agno: I have tools to execute, but {waits}")
    assert paused.final_response is None
    assert run_view(resumed) == expected
    assert (resumed.status, resumed.error) == ("ok", None)
    [conversation] = group_conversations([paused, resumed])
    assert conversation.conversation_id == f"agno-hitl-{expected['calls'][0]['name']}"
    _, written, left_out = conversations_to_evalset([conversation], eval_set_id="hitl")
    assert (written, left_out) == (1, 1)
