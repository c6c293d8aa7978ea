"""Real pydantic-ai runs of many shapes, rebuilt as pydantic-ai itself recorded them.

``pydantic_ai_harness.py`` runs the scenarios in each instrumentation version pydantic-ai
still emits, with content capture on or off, and once more with OpenInference's span
processor for pydantic-ai adding its attributes to the same spans; ``tracescore import``
must give back what pydantic-ai kept of each run: the user prompt, the tool calls with
arguments, ids and results (retries and raises flagged), the texts before the answer and
the answer. The ``test_pydantic_ai`` module covers the attribute-level details of one
run; this one covers the shapes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conv_helpers import assert_paused, imported, run_view

from pydantic_ai_harness import SCENARIOS, VERSIONS, recorded_runs
from tracescore.evalset import conversations_to_evalset
from tracescore.model import Invocation, group_conversations

#: (instrumentation version, OpenInference's processor on top)
SETUPS = [*((v, False) for v in VERSIONS), (5, True)]


@pytest.fixture(
    scope="module",
    params=SETUPS,
    ids=[f"v{v}{'-openinference' if oi else ''}" for v, oi in SETUPS],
)
def recorded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, Any]]:
    version, openinference = request.param
    out = tmp_path_factory.mktemp(f"pydantic-ai-v{version}")
    return out, recorded_runs(
        out, version, include_content=True, openinference=openinference, pausing=True
    )


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_rebuilt_invocations_equal_what_pydantic_ai_recorded(
    recorded: tuple[Path, dict[str, Any]], scenario: str
) -> None:
    out, expected = recorded
    ours = imported(out / f"{scenario}.jsonl")
    assert [{**run_view(i), "error": i.error} for i in ours] == expected[scenario]
    for inv in ours:
        assert inv.status == "ok", inv.reason
        assert inv.warnings == ()
        assert inv.inference_calls >= 1


def test_a_run_waiting_for_approval_is_no_turn_the_run_that_resumes_it_is(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    """The paused run's output is ``DeferredToolRequests`` (its ``final_result``): not an
    answer, and not a turn. The run given the approval is the turn, as pydantic-ai's
    messages after it have it; only it becomes a golden."""
    out, expected = recorded
    paused, resumed = imported(out / "approval.jsonl")
    assert_paused(paused, "DeferredToolRequests for refund")
    assert paused.final_response is None
    assert [{**run_view(resumed), "error": resumed.error}] == expected["approval"]
    assert resumed.status == "ok"
    conversations = group_conversations([paused, resumed])
    assert [c.conversation_id for c in conversations] == ["pai-approval"]
    _, written, left_out = conversations_to_evalset(conversations, eval_set_id="approval")
    assert (written, left_out) == (1, 1)


def test_openinference_attributes_sit_on_the_same_spans(tmp_path: Path) -> None:
    recorded_runs(tmp_path, 5, include_content=True, openinference=True)
    text = (tmp_path / "text_and_call.jsonl").read_text()
    # Both conventions on the spans: what the agreement test above holds is read from them.
    for key in ("openinference.span.kind", "llm.output_messages", "gen_ai.output.messages"):
        assert key in text


def test_a_conversation_id_groups_the_turns(recorded: tuple[Path, dict[str, Any]]) -> None:
    out, _ = recorded
    [conversation] = group_conversations(imported(out / "two_turns.jsonl"))
    assert conversation.conversation_id == "pai-conv-1"
    assert [i.final_response for i in conversation.invocations] == ["Hello!", "Goodbye!"]


def test_an_agent_run_inside_a_tool_is_a_run_of_its_own(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    out, _ = recorded
    boss, researcher = imported(out / "delegation.jsonl")
    assert boss.parent_tool_span_id is None
    assert researcher.parent_tool_span_id is not None
    assert researcher.trace_id == boss.trace_id
    # Each run has its own conversation (pydantic-ai gives every run one).
    assert researcher.conversation_id != boss.conversation_id


def test_the_output_tool_result_comes_from_the_run_history(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    out, _ = recorded
    [inv] = imported(out / "structured_output.jsonl")
    assert inv.tool_calls[-1].name == "final_result"
    assert inv.tool_calls[-1].span_id is None  # no tool span: pydantic-ai answers it itself
    assert inv.provenance["tool_results"].endswith("pydantic_ai.all_messages")


@pytest.fixture(scope="module")
def without_content(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pydantic-ai-no-content")
    recorded_runs(out, 5, include_content=False)
    return out


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_without_content_every_run_says_how_to_capture_it(
    without_content: Path, scenario: str
) -> None:
    runs: list[Invocation] = imported(without_content / f"{scenario}.jsonl")
    assert runs
    for inv in runs:
        assert (inv.status, inv.reason_code) == ("not_evaluable", "content_not_captured")
        assert inv.reason is not None
        assert "InstrumentationSettings(include_content=True)" in inv.reason
        assert inv.user_content is None
        # What the spans say without content still comes through: tools, and why a
        # run failed (the exception's type: its message is content).
        assert all(c.args is None for c in inv.tool_calls)
    if scenario == "tool_raises":
        [inv] = runs
        assert [c.name for c in inv.tool_calls] == ["get_weather"]
        assert inv.tool_calls[0].error == "RuntimeError"
        assert inv.error == "RuntimeError"
