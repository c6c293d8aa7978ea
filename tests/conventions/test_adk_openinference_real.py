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
    adk_like_view,
    adk_session_turns,
    assert_paused,
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
PAUSING_RUNS = [pytest.param(*run, id="-".join(run)) for run in harness.PAUSING_RUNS]
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


#: What each pausing scenario's user typed (ADK's eval has the function response that
#: resumed the turn instead), and the paused run's sign.
_PAUSED_BY = {
    "tool_confirmation": ("Please refund my 40 euros.", "ADK tool confirmation for refund"),
    "long_running_pause": ("Refund my 40 euros, please.", "ADK long-running tool ask_manager"),
}


@pytest.mark.parametrize(("schema", "content", "scenario"), PAUSING_RUNS)
def test_a_paused_run_is_no_turn_the_resumed_run_is(
    recorded: Path, schema: str, content: str, scenario: str
) -> None:
    """A tool that needs a person's confirmation, or a long-running tool with no result
    yet: ADK ends the run; the user's answer goes on with the same ADK invocation, in a
    trace of its own (``test_adk_agreement`` holds the same without an instrumentor).
    The resumed run is the turn: the user's text, the call with its real result, the
    answer. The paused run says it paused, except where nothing says ADK held the call
    back: a confirmation under the google-genai instrumentor in the modes whose ADK tool
    spans carry no result (the fixed error ADK answered the call with is in no span, and
    no request follows it), as in schema 2's EVENT_ONLY without an instrumentor. There
    the run reads as one that ended on its call."""
    invocations, adk = _load(recorded, schema, content, scenario)
    paused, resumed = invocations
    [theirs] = adk["turns"]
    user, sign = _PAUSED_BY[scenario]
    assert theirs["user"] == ""  # ADK's eval: the function response that resumed the turn
    expected = {**theirs, "user": user}
    if scenario == "tool_confirmation":  # ADK's own call asking for it is in no span
        [asked] = [i for i, (name, _) in enumerate(theirs["calls"]) if name.startswith("adk_")]
        for key in ("calls", "results"):
            expected[key] = [v for i, v in enumerate(theirs[key]) if i != asked]
    else:  # ADK's eval has the call's pending (None) result; the resumed run was sent it
        assert theirs["results"] == [None]
        expected["results"] = [{"approved": True}]
    view = adk_like_view(resumed)
    assert {**view, "calls": [list(c) for c in view["calls"]]} == expected
    assert (resumed.status, resumed.error) == ("ok", None)
    assert paused.invocation_id == resumed.invocation_id == adk["invocation_ids"][0]
    held_back_unsaid = (
        scenario == "tool_confirmation"
        and _instrumentor(recorded).startswith("google-genai")
        and (schema, content) in NO_TOOL_RESULTS
    )
    if held_back_unsaid:
        assert (paused.status, paused.tool_calls[0].result) == ("ok", None)
        [warning] = paused.warnings
        assert warning.startswith("the run ended on tool calls")
        return
    assert_paused(paused, sign)
