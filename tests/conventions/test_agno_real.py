"""Real agno agents and a team traced by OpenInference, rebuilt as agno returned them.

``agno_harness.py`` runs agno agents against the local fake OpenAI server in a child
process and writes their spans next to each run's ``RunOutput``. The rebuilt invocations
must equal those: tools with results (a raised one flagged), parallel calls, a session
of two turns, and a team whose member run, written beside the delegating tool span but
within its time, is a run of its own called from that tool.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conv_helpers import agreeing, imported, run_harness

import agno_harness
from tracescore.model import group_conversations

HARNESS = Path(agno_harness.__file__)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_harness(HARNESS, tmp_path_factory.mktemp("agno"))


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
