"""Real smolagents runs traced by OpenInference, rebuilt as smolagents recorded them.

``smolagents_harness.py`` runs ``ToolCallingAgent`` and ``CodeAgent`` agents against the
local fake OpenAI server in a child process and writes their spans next to each run as
the agent's memory kept it. The rebuilt invocations must equal that: the agent is named
by its run span (``<agent>.run``), the user's text is the task (the model sees it after
"New task:"), the answer is what the agent's run returned (the run span states it: a
``ToolCallingAgent``'s replies hold none, a ``CodeAgent``'s hold the code that gave it),
a tool that raised is flagged, and a ``CodeAgent``'s calls are the tools its code ran,
with their arguments (positional ones named), its replies intermediate text; a managed
agent is a run of its own, called by its manager's model; a plan is intermediate text.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conv_helpers import agreeing, imported, run_harness

import smolagents_harness

HARNESS = Path(smolagents_harness.__file__)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_harness(HARNESS, tmp_path_factory.mktemp("smolagents"))


@pytest.mark.parametrize("scenario", list(smolagents_harness.SCENARIOS))
def test_rebuilt_invocations_equal_what_smolagents_recorded(recorded: Path, scenario: str) -> None:
    for inv in agreeing(recorded, scenario):
        assert inv.status == "ok", inv.reason
        assert inv.warnings == ()
        assert inv.provenance["user_content"] == "input.value"
        assert inv.provenance["final_response"] == "output.value"
        assert inv.usage.input_tokens == 13 * inv.inference_calls


def test_a_tool_that_raised_says_why(recorded: Path) -> None:
    [inv] = imported(recorded / "tool_raises.jsonl")
    assert inv.tool_calls[0].error == "ConnectionError: no weather station in Atlantis"
    assert inv.error is None  # the agent recovered and answered


def test_a_call_of_a_tool_the_agent_lacks_fails_with_the_step_s_error(recorded: Path) -> None:
    [inv] = imported(recorded / "unknown_tool.jsonl")
    refused, looked_up, _ = inv.tool_calls
    assert (refused.name, refused.span_id, refused.result) == ("get_wether", None, None)
    assert refused.error == (
        "AgentToolExecutionError: Unknown tool get_wether, should be one of: get_weather,"
        " final_answer."
    )
    assert (looked_up.error, inv.error) == (None, None)  # the agent recovered and answered


def test_a_managed_agent_is_a_run_of_its_own_called_by_its_manager(recorded: Path) -> None:
    """smolagents writes no tool span for a manager's call of its managed agent: the
    managed agent's run span is both the call's execution (its answer the call's
    result) and a run of its own, nested in the call, so no turn of the conversation."""
    boss, researcher = imported(recorded / "managed_agent.jsonl")
    call = boss.tool_calls[0]
    assert (call.name, call.result) == ("researcher", "Nice: sunny.")
    assert researcher.parent_tool_span_id == call.span_id is not None
    assert boss.parent_tool_span_id is None
    assert [c.name for c in researcher.tool_calls] == ["get_weather", "final_answer"]
    assert boss.inference_calls == 2 and researcher.inference_calls == 2


def test_a_code_agent_s_managed_agent_call_has_the_task_its_code_gave(recorded: Path) -> None:
    """A ``CodeAgent`` manager's code calls the managed agent: no reply holds the call, so
    its arguments come from the managed run's task, smolagents' template around the
    task the code gave (``test_rebuilt_invocations_equal_what_smolagents_recorded``
    holds the whole runs)."""
    boss, researcher = imported(recorded / "code_managed_agent.jsonl")
    call = boss.tool_calls[0]
    assert (call.name, call.args) == ("researcher", {"task": smolagents_harness.MANAGED_TASK})
    assert researcher.parent_tool_span_id == call.span_id is not None
    assert researcher.user_content is not None
    assert f"Task:\n{smolagents_harness.MANAGED_TASK}\n---" in researcher.user_content
