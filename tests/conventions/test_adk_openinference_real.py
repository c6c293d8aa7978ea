"""Real google-adk agents under OpenInference's instrumentors, rebuilt as ADK derives them.

Teams that send ADK's traces to Phoenix or Arize run ``openinference-instrumentation-
google-adk`` beside ADK's own telemetry (it writes its attributes onto ADK's spans and
adds spans of its own), or ``openinference-instrumentation-google-genai``, whose LLM
span of each google-genai call sits inside ADK's model-call span (the agents then use
ADK's real ``Gemini`` model, against a local fake of the Gemini API).
``adk_openinference_harness.py`` runs every ADK scenario (the ones
``test_adk_agreement`` holds to ADK) in both schemas and every content mode under each,
in a child process, and writes the spans and log records as OTLP JSON Lines. Imported as
any file is, the turns must equal what ADK's ``EvaluationGenerator`` derives from the
session: each tool call once, every model call once, every reply's text, in every mode.

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
from adk_harness import SCENARIOS, TURN_ENDING_CALLS
from tracescore.model import Invocation, group_conversations

HARNESS = Path(harness.__file__)
RUNS = [
    pytest.param(schema, content, scenario, id=f"{schema}-{content}-{scenario}")
    for schema, content in harness.MODES
    for scenario in SCENARIOS
]
#: Modes whose ADK tool spans carry no result: results come from the next request.
NO_TOOL_RESULTS = {("v1", "NO_CONTENT"), ("v2", "default"), ("v2", "EVENT_ONLY")}
NO_TOOL_RESULTS.add(("v2", "NO_CONTENT"))
ADK_ONLY = pytest.mark.parametrize("recorded", ["adk"], indirect=True)


@pytest.fixture(scope="module", params=harness.INSTRUMENTORS)
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The instrumentor's recordings of every scenario and mode."""
    instrumentor: str = request.param
    out = tmp_path_factory.mktemp(f"adk-openinference-{instrumentor}")
    run_harness(HARNESS, out, instrumentor)
    (out / "instrumentor").write_text(instrumentor)
    return out


def _instrumentor(recorded: Path) -> str:
    return (recorded / "instrumentor").read_text()


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
    assert bool(adk["errors"]) == (scenario == "tool_raises"), adk["errors"]
    turns = _turns(invocations, adk["session_id"])
    assert [t.invocation_id for t in turns] == adk["invocation_ids"]
    for mine, theirs in zip(turns, adk["turns"], strict=True):
        got = _jsonable(adk_like_view(mine))
        if scenario == "tool_raises":
            # ADK has no response for the call that raised; we carry the error instead.
            theirs["results"] = got["results"]
            assert mine.tool_calls[-1].error == "ConnectionError"
        if (
            scenario in TURN_ENDING_CALLS
            and _instrumentor(recorded) == "google-genai"
            and (schema, content) in NO_TOOL_RESULTS
        ):
            # As in test_adk_agreement's EVENT_ONLY case: no request shows that result.
            index = TURN_ENDING_CALLS[scenario]
            assert theirs["results"][index] == {"result": None}
            theirs["results"][index] = None
        assert got == theirs
        # Even where ADK itself captured nothing, the instrumentor's spans did.
        assert mine.status == "ok", mine.reason
        # Each call joined to its tool span: none left over, none counted twice.
        assert not [w for w in mine.warnings if "matches no model output" in w]
        assert all(c.span_id is not None for c in mine.tool_calls)
    # Every model call the script served is counted once, nested runs included.
    assert sum(i.inference_calls for i in invocations) == adk["model_calls"]


@ADK_ONLY
@pytest.mark.parametrize("scenario", ["text_and_call", "two_sequential_tools"])
def test_schema2_replies_without_a_span_are_said_to_be(recorded: Path, scenario: str) -> None:
    """Over schema 2 the earlier replies come from the last call's input, with a warning."""
    [turn], _ = _load(recorded, "v2", "SPAN_ONLY", scenario)
    [warning] = [w for w in turn.warnings if "read from a later model call's input" in w]
    unseen = {"text_and_call": 1, "two_sequential_tools": 2}[scenario]
    assert warning.endswith(f": {unseen}")
    [native], _ = _load(recorded, "v1", "default", scenario)
    assert not [w for w in native.warnings if "later model call's input" in w]


@ADK_ONLY
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


@pytest.mark.parametrize("recorded", ["google-genai"], indirect=True)
@pytest.mark.parametrize(("schema", "content"), [("v2", "default"), ("v1", "NO_CONTENT")])
def test_where_adk_captured_nothing_the_google_genai_spans_did(
    recorded: Path, schema: str, content: str
) -> None:
    [turn], adk = _load(recorded, schema, content, "two_sequential_tools")
    assert turn.final_response == adk["turns"][0]["final"]
    assert turn.provenance["responses"] == "llm.output_messages"
    assert turn.inference_calls == adk["model_calls"] == 3
