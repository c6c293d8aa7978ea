"""Real LangGraph ReAct agents traced by OpenInference, rebuilt as LangGraph returned them.

``langgraph_harness.py`` runs ``create_react_agent`` graphs (LangChain's scripted fake
chat model) in a child process under ``openinference-instrumentation-langchain`` and
writes their spans as OTLP JSON Lines next to the new messages of each run's state. The
rebuilt invocations must equal those: the graph's name is the agent (the instrumentation
names none), a tool's result is its ``ToolMessage`` content (not the serialized message),
an error result is flagged, and the thread id groups the turns of a conversation.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conv_helpers import imported, run_harness, run_view

import langgraph_harness
from tracescore.model import group_conversations

HARNESS = Path(langgraph_harness.__file__)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenarios' traces and LangGraph's own record of each run."""
    return run_harness(HARNESS, tmp_path_factory.mktemp("langgraph"))


@pytest.mark.parametrize("scenario", list(langgraph_harness.SCENARIOS))
def test_rebuilt_invocations_equal_what_langgraph_returned(recorded: Path, scenario: str) -> None:
    expected = json.loads((recorded / "expected.json").read_text())[scenario]
    ours = imported(recorded / f"{scenario}.jsonl")
    assert [run_view(i) for i in ours] == expected
    for inv in ours:
        assert inv.status == "ok", inv.reason
        assert inv.warnings == ()
        assert inv.agent == "weather_agent"
        assert all(c.agent == "weather_agent" for c in inv.tool_calls)


def test_the_thread_id_groups_the_turns(recorded: Path) -> None:
    [conversation] = group_conversations(imported(recorded / "two_turn_session.jsonl"))
    assert conversation.conversation_id == "thread-1"
    assert [i.user_content for i in conversation.invocations] == ["Weather in Rome?", "Thanks!"]
