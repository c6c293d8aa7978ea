"""Real LlamaIndex agents traced by OpenInference and by OpenLLMetry, rebuilt as LlamaIndex
reported them.

``llama_index_harness.py`` runs LlamaIndex agents on its Ollama LLM against the local
fake Ollama server in a child process, once per instrumentation, and writes their spans
next to each run's event stream. The rebuilt invocations must equal those runs: agents in
order (a handoff included), tool calls with arguments (not the bound ``{"kwargs": ...}``
OpenInference writes, nor the workflow ``Context`` LlamaIndex injects) and results (not
the whole ``ToolOutput``), a raised tool flagged, one model call per call (not the
request preparation OpenInference also marks LLM), texts beside calls, the answer.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conv_helpers import TraceBuilder, imported, run_harness, run_view

import llama_index_harness
from fake_ollama import COMPLETION_TOKENS, PROMPT_TOKENS
from tracescore.assembly import TraceAssembler
from tracescore.cli import main
from tracescore.conventions import llama_index
from tracescore.formats.files import read_file
from tracescore.importer import ImportStats, import_paths
from tracescore.live.assembly import LiveAssembler, LiveTrace
from tracescore.model import Invocation, group_conversations
from tracescore.spans import SpanRecord
from tracescore.trajectory import build_invocations

HARNESS = Path(llama_index_harness.__file__)
#: Ollama's tool calls have no ids. LlamaIndex makes one (the tool's name; a uuid in a
#: ReActAgent): OpenLLMetry writes it on the tool call, OpenInference nowhere.
RECORDS_CALL_IDS = {"openinference": False, "openllmetry": True}
#: What each instrumentation leaves out, so the invocation says so in a warning:
#: OpenLLMetry writes no tool calls in an Ollama reply's output messages, so the calls
#: are known from their tool spans only (and placed by start time).
PLACED = "matches no model output; placed by its start time"


@pytest.fixture(scope="module", params=llama_index_harness.MODES)
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    mode = str(request.param)
    out = run_harness(HARNESS, tmp_path_factory.mktemp(mode), mode)
    (out / "mode").write_text(mode)
    return out


def _expected(recorded: Path, scenario: str) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = json.loads((recorded / "expected.json").read_text())[scenario]
    if not RECORDS_CALL_IDS[(recorded / "mode").read_text()]:
        runs = copy.deepcopy(runs)
        for run in runs:
            for call in run["calls"]:
                call["id"] = None
    return runs


def _view(inv: Invocation) -> dict[str, Any]:
    """``run_view`` with each text's author, each call's agent, whether the run failed."""
    return {
        **run_view(inv, authors=True),
        "call_agents": [c.agent for c in inv.tool_calls],
        "run_failed": inv.error is not None,
    }


def _agreeing(recorded: Path, scenario: str) -> list[Invocation]:
    ours = imported(recorded / f"{scenario}.jsonl")
    assert [_view(i) for i in ours] == _expected(recorded, scenario)
    return ours


#: The scenarios of agent runs (the query and chat engines have no agent).
AGENT_SCENARIOS = [
    s for s in llama_index_harness.SCENARIOS if s not in ("query_engine", "chat_engine")
]


@pytest.mark.parametrize("scenario", AGENT_SCENARIOS)
def test_rebuilt_invocations_equal_what_llama_index_reported(recorded: Path, scenario: str) -> None:
    mode = (recorded / "mode").read_text()
    for inv in _agreeing(recorded, scenario):
        assert inv.status == "ok", inv.reason
        answered = inv.inference_calls - (scenario == "model_fails" and mode == "openinference")
        assert inv.usage.input_tokens == PROMPT_TOKENS * answered
        assert inv.usage.output_tokens == COMPLETION_TOKENS * answered
        # A ReAct agent's calls are in its replies as it parsed them, under both.
        if mode == "openinference" or not inv.tool_calls or scenario == "react_agent":
            assert inv.warnings == ()
        else:
            assert len(inv.warnings) == len(inv.tool_calls)
            assert all(PLACED in w for w in inv.warnings)


def test_one_model_call_per_request(recorded: Path) -> None:
    """Three requests reached the server; OpenInference's request-preparation spans
    (``Ollama._prepare_chat_with_tools``, marked LLM) are no calls."""
    [inv] = imported(recorded / "sequential_tools.jsonl")
    assert inv.inference_calls == 3


def test_a_failed_tool_is_flagged_with_what_the_model_was_told(recorded: Path) -> None:
    [inv] = imported(recorded / "parallel_calls.jsonl")
    ok, failed = inv.tool_calls
    assert ok.error is None
    assert failed.result == "no weather station in Atlantis"
    assert failed.error is not None and "no weather station in Atlantis" in failed.error


def test_the_handoff_lists_both_agents_and_the_calls_of_each(recorded: Path) -> None:
    [inv] = imported(recorded / "handoff.jsonl")
    assert inv.agents == ("triage_agent", "weather_agent")
    assert inv.agent == "triage_agent"
    handoff, weather = inv.tool_calls
    assert handoff.args == {"to_agent": "weather_agent", "reason": "weather question"}
    # OpenInference writes each model call inside its agent's turn, OpenLLMetry beside
    # the step that names the agent: under both, each call is its agent's.
    assert (handoff.agent, weather.agent) == ("triage_agent", "weather_agent")


def test_a_failed_run_says_so(recorded: Path) -> None:
    """OpenInference records the exception on the run's span. OpenLLMetry ends no span
    for the failing step, and its workflow span ended before the first step: the run
    never ended, which is what tells it failed (or was cut off)."""
    [inv] = imported(recorded / "model_fails.jsonl")
    assert inv.final_response is None
    assert inv.error is not None
    if (recorded / "mode").read_text() == "openinference":
        assert inv.error == "ResponseError: script exhausted (status code: 500)"
    else:
        assert inv.error.startswith("the run did not finish")
    [call] = inv.tool_calls
    assert call.result == "sunny in Oslo, 21 °C"


def test_a_query_engine_is_no_agent_run(recorded: Path) -> None:
    """Building the index and embedding the question are traces without a model call:
    no invocation (OpenLLMetry marks their top spans ``workflow`` too, as an agent's).
    The query is a run of its model call; its user text is the question the engine was
    asked, not the prompt template the model saw it in."""
    stats = ImportStats()
    [inv] = import_paths([recorded / "query_engine.jsonl"], stats)
    [expected] = json.loads((recorded / "expected.json").read_text())["query_engine"]
    assert stats.traces_without_agent > 0
    assert (inv.agents, inv.tool_calls) == ((), ())
    assert inv.final_response == expected["final"] == "Lima is sunny today."
    assert inv.user_content == expected["user"] == "What is the weather in Lima?"
    assert (inv.status, inv.error) == ("ok", None)


@pytest.mark.parametrize("scenario", ["query_engine", "chat_engine"])
def test_an_engine_run_has_the_documents_its_model_was_given(recorded: Path, scenario: str) -> None:
    """The retriever's documents (OpenInference's RETRIEVER spans, OpenLLMetry's
    ``…Retriever.task`` output), each once though a retriever's spans nest: what the
    engine's response says its model was given."""
    stats = ImportStats()
    invocations = list(import_paths([recorded / f"{scenario}.jsonl"], stats, model_context=True))
    expected = json.loads((recorded / "expected.json").read_text())[scenario]
    assert [list(i.retrieved) for i in invocations] == [run["retrieved"] for run in expected]
    assert all(run["retrieved"] for run in expected)
    # Model context is read only when a criterion needs it (not by `tracescore import`).
    plain = import_paths([recorded / f"{scenario}.jsonl"], stats, model_context=False)
    assert all(i.retrieved == () for i in plain)


@pytest.mark.parametrize("scenario", ["query_engine", "chat_engine"])
def test_an_engine_run_imports_as_a_rag_record(recorded: Path, scenario: str) -> None:
    """``tracescore import --model-context``: question, documents and answer per line, what
    a RAG evaluation dataset is made of, as the engine reported them."""
    result = CliRunner().invoke(
        main, ["import", str(recorded / f"{scenario}.jsonl"), "--model-context", "-q"]
    )
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    expected = json.loads((recorded / "expected.json").read_text())[scenario]
    assert [(r["user_content"], r["retrieved"], r["final_response"]) for r in records] == [
        (run["user"], run["retrieved"], run["final"]) for run in expected
    ]


def test_a_chat_engine_turn_is_the_message_and_the_answer(recorded: Path) -> None:
    """The second turn's first model call rewrites the message in a template with the chat
    so far; the user text is still the message, the answer the last call's reply."""
    invocations = imported(recorded / "chat_engine.jsonl")
    expected = json.loads((recorded / "expected.json").read_text())["chat_engine"]
    assert [(i.user_content, i.final_response) for i in invocations] == [
        (run["user"], run["final"]) for run in expected
    ]
    assert [run["final"] for run in expected] == ["Lima is sunny today.", "Oslo has rain."]
    assert [i.inference_calls for i in invocations] == [1, 2]
    assert all((i.status, i.error, i.agents) == ("ok", None, ()) for i in invocations)


def test_the_session_groups_the_turns(recorded: Path) -> None:
    """OpenInference's ``using_session`` names the session; OpenLLMetry's instrumentation
    has no such switch of its own, so there each turn is a conversation of its own."""
    conversations = group_conversations(imported(recorded / "two_turn_session.jsonl"))
    if (recorded / "mode").read_text() == "openinference":
        [conversation] = conversations
        assert conversation.conversation_id == llama_index_harness.SESSION
        turns = conversation.invocations
    else:
        assert len(conversations) == 2
        turns = tuple(c.invocations[0] for c in conversations)
    assert [t.user_content for t in turns] == ["Weather in Rome?", "Thanks!"]


def test_a_react_agent_is_read_as_it_parsed_its_replies(recorded: Path) -> None:
    """A ReActAgent's model writes its call and its answer as text; the agent's output
    parser reads them (``ReActOutputParser``'s span, beside the model call): the call is
    the reply's, its text kept beside it, and the answer is what follows ``Answer:``, as
    the agent returns it."""
    [inv] = imported(recorded / "react_agent.jsonl")
    [call] = inv.tool_calls
    assert (call.name, call.args, call.result) == (
        "get_weather",
        {"city": "Lima"},
        "sunny in Lima, 21 °C",
    )
    assert [t.text for t in inv.intermediate_responses] == [
        'Thought: I need the weather.\nAction: get_weather\nAction Input: {"city": "Lima"}'
    ]
    assert inv.final_response == "Lima is sunny."
    assert inv.inference_calls == 2
    assert "output" in inv.provenance["responses"]  # the parser's output is named


def _export_order(path: Path) -> list[SpanRecord]:
    return [span for batch in read_file(str(path)) for span in batch.spans]


def _ran_to_the_end(span: SpanRecord) -> bool:
    """The span that carries the run's result: what a run still running cannot have sent.

    OpenInference's root span ends last; OpenLLMetry's for an agent ends first (``run()``
    hands back a handler), and the run ends with the step returning the ``StopEvent``.
    """
    output = span.attributes.get("traceloop.entity.output")
    if span.scope == llama_index.OL_SCOPE and span.name.endswith(
        ("Agent.workflow", "AgentWorkflow.workflow")
    ):
        return False
    if span.scope == llama_index.OL_SCOPE and isinstance(output, str):
        return output.startswith('{"result"') or span.parent_span_id is None
    return span.parent_span_id is None


@pytest.mark.parametrize("scenario", llama_index_harness.SCENARIOS)
def test_a_live_trace_waits_for_its_run_to_end(recorded: Path, scenario: str) -> None:
    """A pause longer than the idle window anywhere before the run's last step (a slow
    model call) does not let a live trace go: under OpenLLMetry the root span is among
    the first spans exported, and a trace released on it was scored on a few ms of the
    run, the rest of its spans dropped as late."""
    spans = _export_order(recorded / f"{scenario}.jsonl")
    totals = Counter(s.trace_id for s in spans)
    now = [0.0]
    live = LiveAssembler(idle_s=2.0, orphan_ttl_s=600.0, clock=lambda: now[0])
    released: list[LiveTrace] = []
    over: set[str] = set()
    for span in spans:
        released += live.add([span])
        if _ran_to_the_end(span):
            over.add(span.trace_id)
        if span.trace_id not in over:
            now[0] += 60.0  # the model thinks
            released += live.due()
            assert {t.trace_id for t in released} <= over
    now[0] += 60.0
    released += live.due()
    # A run that never ended (it failed, under OpenLLMetry) waits for the orphan window.
    assert live.in_flight == len(totals.keys() - over)
    now[0] += 3600.0
    released += live.due()
    assert {t.trace_id: (t.kind, len(t.spans)) for t in released} == {
        trace_id: ("complete" if trace_id in over else "incomplete", total)
        for trace_id, total in totals.items()
    }
    assert not live.dropped
    # Rebuilt as the file import reads the same spans.
    rebuilt = [
        i for t in released for i in build_invocations(t.spans, complete=t.kind == "complete")
    ]
    assert [_view(i) for i in rebuilt] == [
        _view(i) for i in imported(recorded / f"{scenario}.jsonl")
    ]


def test_an_import_waits_for_the_run_to_end(recorded: Path) -> None:
    """The same in a file: other traces' records between a run's steps (a busy service
    exporting while the model thinks) release a trace after one idle window once its
    run has ended, and after two before."""
    spans = _export_order(recorded / "sequential_tools.jsonl")
    window = 10
    assembler = TraceAssembler(idle_records=window)
    released = []
    for n, span in enumerate(spans):
        released += assembler.add([span])
        others = TraceBuilder(trace_id=f"{n + 1:032x}")
        released += assembler.add([others.span("busy") for _ in range(window + window // 2)])
    released += assembler.flush()
    [trace] = [t for t in released if t.trace_id == spans[0].trace_id]
    assert len(trace.spans) == len(spans)
    assert not assembler.dropped


def test_openllmetry_without_content_says_how_to_capture_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """``TRACELOOP_TRACE_CONTENT=false``: no messages, and no ``StopEvent`` either (it is
    content), so a live agent run is never seen to end and leaves after the orphan
    window. Its invocation still says what to fix, capture, not that the trace was cut."""
    out = run_harness(
        HARNESS,
        tmp_path_factory.mktemp("llama-index-openllmetry-no-content"),
        "openllmetry",
        env={"TRACELOOP_TRACE_CONTENT": "false"},
    )
    now = [0.0]
    for scenario in AGENT_SCENARIOS:
        spans = _export_order(out / f"{scenario}.jsonl")
        assert not any("traceloop.entity.output" in s.attributes for s in spans)
        now[0] = 0.0
        live = LiveAssembler(idle_s=2.0, orphan_ttl_s=120.0, clock=lambda: now[0])
        released = live.add(spans)
        now[0] += 60.0
        assert released + live.due() == []  # no run says it ended
        now[0] += 120.0
        released = live.due()
        assert {t.kind for t in released} == {"incomplete"}
        live_runs = [
            i for t in released for i in build_invocations(t.spans, complete=t.kind == "complete")
        ]
        expected = json.loads((out / "expected.json").read_text())[scenario]
        for invocations in (live_runs, imported(out / f"{scenario}.jsonl")):
            assert len(invocations) == len(expected), scenario
            for inv in invocations:
                assert (inv.status, inv.reason_code) == ("not_evaluable", "content_not_captured")
                assert inv.reason is not None and "TRACELOOP_TRACE_CONTENT=true" in inv.reason
        assert all("flushed before its run was seen to end" in (i.reason or "") for i in live_runs)
