"""Real ADK agents run as ``adk web`` runs them, streamed, rebuilt as ADK derives them.

With ``StreamingMode.SSE`` ADK's real ``Gemini`` model asks the local fake Gemini for
``streamGenerateContent``, which sends each scripted reply in pieces (its texts cut
inside words, each call in a chunk of its own); ADK joins them into the reply it keeps.
``adk_openinference_harness.py gemini-sse`` runs every ADK scenario so, in both schemas
and every content mode, with ADK's own telemetry only.

Schema 2 writes every piece as an output message of its own, each with an empty
``finish_reason`` but the last. Read as choices, the final answer was the first piece
("It is 70.7" of "It is 70.7°F and sunny in Paris."), and a text beside a call was
counted twice (its first piece, and the whole text a later request shows).
"""

from __future__ import annotations

import json
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
#: Modes where ADK captures no content (as in ``test_adk_agreement``).
NOT_CAPTURED = {("v1", "NO_CONTENT"), ("v2", "default"), ("v2", "NO_CONTENT")}


@pytest.fixture(scope="module")
def streamed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every scenario and mode, streamed, with ADK's own telemetry."""
    return run_harness(HARNESS, tmp_path_factory.mktemp("adk-sse"), "gemini-sse")


def _load(out: Path, schema: str, content: str, scenario: str) -> tuple[list[Invocation], Any]:
    return load_recorded(out, harness.record_name(schema, content, scenario))


@pytest.mark.parametrize(("schema", "content", "scenario"), RUNS)
def test_streamed_turns_equal_adks(
    streamed: Path, schema: str, content: str, scenario: str
) -> None:
    invocations, adk = _load(streamed, schema, content, scenario)
    turns = adk_session_turns(invocations, adk["session_id"])
    if (schema, content) in NOT_CAPTURED:
        if (scenario, schema) == ("guardrail_before_model", "v2"):
            # Schema 2 records nothing of a guardrail's turn, content or not, nor its id.
            assert [t.reason_code for t in turns] == ["no_model_call"]
            return
        assert [t.invocation_id for t in turns] == adk["invocation_ids"]
        assert {t.reason_code for t in turns} == {"content_not_captured"}
        return
    if asserted_known_gap(
        invocations, adk, writer="gemini-sse", schema=schema, content=content, scenario=scenario
    ):
        return
    lost = None
    if (schema, content) == ("v2", "EVENT_ONLY") and scenario in TURN_ENDING_CALLS:
        # As in test_adk_agreement: schema 2's logs carry no tool results, and no later
        # request shows a turn-ending call's.
        lost = TURN_ENDING_CALLS[scenario]
    assert_turns_equal_adks(turns, adk, scenario, lost_result=lost)
    # Every model call the script served is counted once, nested runs included.
    assert sum(i.inference_calls for i in invocations) == adk["model_calls"]


def _output_messages(path: Path) -> list[list[dict[str, Any]]]:
    """Every ``gen_ai.output.messages`` of the recording's spans, decoded."""
    found = []
    for line in path.read_text().splitlines():
        for resource in json.loads(line).get("resourceSpans", []):
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    for attr in span.get("attributes", []):
                        if attr["key"] == "gen_ai.output.messages":
                            found.append(json.loads(attr["value"]["stringValue"]))
    return found


@pytest.mark.parametrize("content", ["SPAN_ONLY", "SPAN_AND_EVENT"])
def test_schema2_writes_a_streamed_reply_in_pieces_read_as_one(
    streamed: Path, content: str
) -> None:
    """The recording holds what this is about; the pieces make one reply, counted once."""
    name = harness.record_name("v2", content, "text_and_call")
    first, second = _output_messages(streamed / name)
    assert [m["finish_reason"] for m in first] == ["", "", "", "stop"]
    assert "".join(p["content"] for m in first[:3] for p in m["parts"]) == (
        "Let me check Berlin for you."
    )
    assert [p["type"] for p in first[3]["parts"]] == ["tool_call"]
    assert len(second) == 3
    [turn], _ = _load(streamed, "v2", content, "text_and_call")
    assert [r.text for r in turn.intermediate_responses] == ["Let me check Berlin for you."]
    assert turn.final_response == "Berlin is rainy at 15.5°C."
    assert turn.inference_calls == 2
    assert not [w for w in turn.warnings if "later model call's input" in w]
