"""Real google-adk agents under OpenInference's instrumentor, rebuilt as ADK derives them.

Teams that send ADK's traces to Phoenix or Arize run ``openinference-instrumentation-
google-adk`` beside ADK's own telemetry: it writes its attributes onto ADK's spans and
adds spans of its own. ``adk_openinference_harness.py`` runs every ADK scenario (the
ones ``test_adk_agreement`` holds to ADK) in both schemas and every content mode with
the instrumentor on, in a child process, and writes the spans and log records as OTLP
JSON Lines. Imported as any file is, the turns must equal what ADK's
``EvaluationGenerator`` derives from the session: each tool call once, every reply's
text, in every mode.

Over schema 2 the instrumentor writes every model call of an agent onto that agent's
span (ADK's ``generate_content`` spans are gone): only the last call's input and output
survive, and its ``llm.output_messages.*`` keep keys of earlier replies. The earlier
replies are rebuilt from that last input (``tracescore.history``) and the last reply is
read from ``output.value``, rewritten whole each time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conv_helpers import adk_like_view, imported, run_harness

import adk_openinference_harness as harness
from adk_harness import SCENARIOS
from tracescore.model import Invocation, group_conversations

HARNESS = Path(harness.__file__)
RUNS = [
    pytest.param(schema, content, scenario, id=f"{schema}-{content}-{scenario}")
    for schema, content in harness.MODES
    for scenario in SCENARIOS
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_harness(HARNESS, tmp_path_factory.mktemp("adk-openinference"))


def _load(out: Path, schema: str, content: str, scenario: str) -> tuple[list[Invocation], Any]:
    name = harness.record_name(schema, content, scenario)
    return imported(out / name), json.loads((out / "expected.json").read_text())[name]


def _turns(invocations: list[Invocation], session_id: str) -> list[Invocation]:
    # Agents run as tools (AgentTool) are invocations of their own, not session turns.
    turns = [i for i in invocations if i.parent_tool_span_id is None]
    [conversation] = group_conversations(turns)
    assert conversation.conversation_id == session_id
    return list(conversation.invocations)


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False))


@pytest.mark.parametrize(("schema", "content", "scenario"), RUNS)
def test_rebuilt_turns_equal_adks(recorded: Path, schema: str, content: str, scenario: str) -> None:
    invocations, adk = _load(recorded, schema, content, scenario)
    turns = _turns(invocations, adk["session_id"])
    assert [t.invocation_id for t in turns] == adk["invocation_ids"]
    for mine, theirs in zip(turns, adk["turns"], strict=True):
        got = _jsonable(adk_like_view(mine))
        if scenario == "tool_raises":
            # ADK has no response for the call that raised; we carry the error instead.
            theirs["results"] = got["results"]
            assert mine.tool_calls[-1].error == "ConnectionError"
        assert got == theirs
        # Even where ADK itself captured nothing, the instrumentor's attributes did.
        assert mine.status == "ok", mine.reason
        # Each call joined to its tool span: none left over, none counted twice.
        assert not [w for w in mine.warnings if "matches no model output" in w]
        assert all(c.span_id is not None for c in mine.tool_calls)
    # Every model call the scripted model served is counted once, nested runs included.
    assert sum(i.inference_calls for i in invocations) == adk["model_calls"]


@pytest.mark.parametrize("scenario", ["text_and_call", "two_sequential_tools"])
def test_schema2_replies_without_a_span_are_said_to_be(recorded: Path, scenario: str) -> None:
    """Over schema 2 the earlier replies come from the last call's input, with a warning."""
    [turn], _ = _load(recorded, "v2", "SPAN_ONLY", scenario)
    [warning] = [w for w in turn.warnings if "read from a later model call's input" in w]
    unseen = {"text_and_call": 1, "two_sequential_tools": 2}[scenario]
    assert warning.endswith(f": {unseen}")
    [native], _ = _load(recorded, "v1", "default", scenario)
    assert not [w for w in native.warnings if "later model call's input" in w]


def test_the_last_reply_is_read_whole_not_from_lingering_keys(recorded: Path) -> None:
    """Schema 2, ADK capturing nothing: the final text is not taken for an intermediate one.

    The last reply (text only) is written key by key over the previous one (a call at
    part 0), whose ``tool_calls.0`` keys linger: read from them, the final answer would
    carry a call and the run would have no final response.
    """
    [turn], adk = _load(recorded, "v2", "NO_CONTENT", "two_sequential_tools")
    assert turn.final_response == adk["turns"][0]["final"]
    assert [c.name for c in turn.tool_calls] == ["get_weather", "convert_temperature"]
    assert turn.provenance["responses"].split(", ")[-1] == "output.value"
