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

``adk-sse`` and ``google-genai-sse`` run the agents as ``adk web`` does, streamed
(``StreamingMode.SSE``) on the real ``Gemini`` model: ADK's spans and the instrumentor's
then see each reply in pieces (``test_adk_streaming_real`` has the same without an
instrumentor).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conv_helpers import (
    adk_session_turns,
    assert_turns_equal_adks,
    asserted_known_gap,
    load_recorded,
    run_harness,
)

import adk_openinference_harness as harness
from adk_harness import TURN_ENDING_CALLS
from tracescore.model import Invocation

HARNESS = Path(harness.__file__)
RUNS = [pytest.param(*run, id="-".join(run)) for run in harness.RUNS]
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
    return load_recorded(out, harness.record_name(schema, content, scenario))


@pytest.mark.parametrize(("schema", "content", "scenario"), RUNS)
def test_rebuilt_turns_equal_adks(recorded: Path, schema: str, content: str, scenario: str) -> None:
    invocations, adk = _load(recorded, schema, content, scenario)
    writer = _instrumentor(recorded)
    if asserted_known_gap(
        invocations, adk, writer=writer, schema=schema, content=content, scenario=scenario
    ):
        return
    lost = None
    if (
        scenario in TURN_ENDING_CALLS
        and _instrumentor(recorded).startswith("google-genai")
        and (schema, content) in NO_TOOL_RESULTS
    ):
        # As in test_adk_agreement's EVENT_ONLY case: no request shows that result.
        lost = TURN_ENDING_CALLS[scenario]
    # Over schema 2 the google-adk instrumentor keeps no span, so no time, of each model
    # call: on a real model, which concurrent branch's reply came back first is unknown
    # (the branches come out in the order they ended).
    unordered = (
        _instrumentor(recorded) == "adk-sse" and schema == "v2" and scenario == "parallel_fanout"
    )
    # Even where ADK itself captured nothing, the instrumentor's spans did.
    assert_turns_equal_adks(
        adk_session_turns(invocations, adk["session_id"]),
        adk,
        scenario,
        lost_result=lost,
        any_branch_order=unordered,
    )
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


@pytest.mark.parametrize("recorded", ["google-genai", "google-genai-sse"], indirect=True)
@pytest.mark.parametrize(("schema", "content"), [("v2", "default"), ("v1", "NO_CONTENT")])
def test_where_adk_captured_nothing_the_google_genai_spans_did(
    recorded: Path, schema: str, content: str
) -> None:
    [turn], adk = _load(recorded, schema, content, "two_sequential_tools")
    assert turn.final_response == adk["turns"][0]["final"]
    assert turn.provenance["responses"] == "llm.output_messages"
    assert turn.inference_calls == adk["model_calls"] == 3
