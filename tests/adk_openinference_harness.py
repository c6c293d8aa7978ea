"""Real google-adk agents under an OpenInference instrumentor, or streaming, recorded.

Two ways teams send ADK's traces to Phoenix or Arize, each beside ADK's own telemetry:

* ``adk``: ``openinference-instrumentation-google-adk``, which writes its attributes onto
  ADK's own spans and adds spans of its own; the agents keep the scripted model;
* ``google-genai``: ``openinference-instrumentation-google-genai``, which traces the
  google-genai client's calls. The agents' model is then ADK's real ``Gemini`` class:
  google-genai posts to :class:`fake_judges.FakeGemini` (``GOOGLE_GEMINI_BASE_URL``),
  which answers each agent (told by its instruction, in the request's system
  instruction) with the next response of that agent's script, as a ``generateContent``
  reply. Its LLM span sits inside ADK's model-call span.

And the way ``adk web`` runs agents, with ``StreamingMode.SSE``: the real ``Gemini``
class then asks ``streamGenerateContent``, and the fake streams each reply in pieces
(:func:`stream_chunks`), which ADK joins into the reply it keeps:

* ``adk-sse``: under the google-adk instrumentor, streamed (on the real model);
* ``google-genai-sse``: as ``google-genai``, streamed;
* ``gemini-sse``: streamed, with ADK's own telemetry only.

The instrumentors patch process-wide (and every mode sets the process's telemetry), so
this runs in a child process of its own (``conv_helpers.run_harness``). It runs every
scenario of ``adk_harness`` in both telemetry schemas and every content mode and writes
to ``OUT_DIR``:

* ``<schema>-<content>-<scenario>.jsonl``: the run's spans, then its log records, each
  through the real OTLP encoder as one OTLP JSON document (a trace line and a log line,
  as the Collector's ``file`` exporter writes them);
* ``expected.json``: per run, ADK's own invocations (``adk_harness.adk_view`` of
  ``EvaluationGenerator.convert_events_to_eval_invocations``), their invocation ids, the
  session id, the model calls the scripts served and the errors turns raised.

Usage::

    python tests/adk_openinference_harness.py MODE OUT_DIR    (MODE: one of ALL_MODES)

(OpenInference's ``TraceConfig(hide_inputs=True, hide_outputs=True)`` redacts only the
spans the google-adk instrumentor starts itself: 1.0.5 still writes every message onto
ADK's own spans, so there is no mode here where nothing is captured.)
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import ssl
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.llm_agent import LlmAgent
from google.adk.models.google_llm import Gemini
from google.adk.workflow import Workflow
from google.protobuf.json_format import MessageToDict
from openinference.instrumentation.google_adk import GoogleADKInstrumentor
from openinference.instrumentation.google_genai import GoogleGenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

import adk_harness
from fake_judges import FakeGemini, FakeReply

#: The OpenInference modes (``test_adk_openinference_real``).
INSTRUMENTORS = ("adk", "adk-sse", "google-genai", "google-genai-sse")
#: Every mode: those and ADK's own telemetry, streamed (``test_adk_streaming_real``).
ALL_MODES = (*INSTRUMENTORS, "gemini-sse")
#: Every schema and content mode; where ADK captures no content (schema 2's default,
#: NO_CONTENT) the instrumentor's attributes still do.
MODES: list[tuple[adk_harness.SchemaVersion, adk_harness.ContentMode]] = [
    ("v1", "default"),
    ("v1", "EVENT_ONLY"),
    ("v1", "NO_CONTENT"),
    ("v2", "default"),
    ("v2", "SPAN_ONLY"),
    ("v2", "SPAN_AND_EVENT"),
    ("v2", "EVENT_ONLY"),
    ("v2", "NO_CONTENT"),
]


#: Every run a mode records: (schema, content mode, scenario).
RUNS = [
    (schema, content, scenario) for schema, content in MODES for scenario in adk_harness.SCENARIOS
]
#: The runs that pause for a person, then go on, in every mode too.
PAUSING_RUNS = [
    (schema, content, scenario) for schema, content in MODES for scenario in adk_harness.PAUSING
]


def record_name(schema: str, content: str, scenario: str) -> str:
    """The file a run is written to."""
    return f"{schema}-{content}-{scenario}.jsonl"


def write_run(run: adk_harness.AdkRun, path: Path) -> None:
    """The run's spans and log records as OTLP JSON Lines."""
    lines = [MessageToDict(encode_spans(run.spans))]
    if run.logs:
        lines.append(MessageToDict(encode_logs(run.logs)))
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))


def expected(run: adk_harness.AdkRun) -> dict[str, Any]:
    """What ADK itself recorded of the run."""
    return {
        "session_id": run.session_id,
        "invocation_ids": [inv.invocation_id for inv in run.adk_invocations],
        "turns": [adk_harness.adk_view(inv) for inv in run.adk_invocations],
        "model_calls": sum(len(queue.requests) for queue in run.queues),
        "errors": run.errors,
    }


def stream_chunks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """``body`` (one ``generateContent`` reply) as ``streamGenerateContent`` streams it.

    Each text part comes in pieces cut inside its words (joined back, they are the
    text); each function call whole in a chunk of its own, as Gemini sends them. Only
    the last chunk says why the model stopped and counts the output tokens.
    """
    [candidate] = body["candidates"]
    pieces: list[dict[str, Any]] = []
    for part in candidate["content"]["parts"]:
        text = part.get("text")
        if text is None or len(text) < 3:
            pieces.append(part)
            continue
        cuts = [0, len(text) // 3, 2 * len(text) // 3, len(text)]
        pieces.extend({**part, "text": text[a:b]} for a, b in itertools.pairwise(cuts))
    usage = body["usageMetadata"]
    chunks = []
    for k, piece in enumerate(pieces):
        last = k == len(pieces) - 1
        chunk_candidate: dict[str, Any] = {
            "content": {"role": "model", "parts": [piece]},
            "index": 0,
        }
        if last:
            chunk_candidate["finishReason"] = candidate["finishReason"]
        chunks.append(
            {
                "candidates": [chunk_candidate],
                "usageMetadata": usage if last else {"promptTokenCount": usage["promptTokenCount"]},
                "modelVersion": body["modelVersion"],
            }
        )
    return chunks


class GeminiScripts:
    """The agents' scripts, served by :class:`FakeGemini` to ADK's real ``Gemini`` model."""

    def __init__(self) -> None:
        #: Each swapped agent's script, by its instruction (unique within a scenario).
        self.queues: dict[str, adk_harness.ResponseQueue] = {}

    def swap_models(self, agent: BaseAgent | Workflow) -> None:
        """Give every scripted agent of the tree the real model; keep its script here."""
        if isinstance(agent, Workflow):
            for node in agent.graph.nodes if agent.graph else ():
                if isinstance(node, BaseAgent):
                    self.swap_models(node)
            return
        if isinstance(agent, LlmAgent) and isinstance(agent.model, adk_harness.ScriptedLlm):
            assert isinstance(agent.instruction, str) and agent.instruction not in self.queues
            self.queues[agent.instruction] = agent.model.queue
            agent.model = Gemini(model="gemini-2.5-flash")
        for sub in agent.sub_agents:
            self.swap_models(sub)
        if isinstance(agent, LlmAgent):
            for tool in agent.tools:
                inner = getattr(tool, "agent", None)  # an AgentTool's agent
                if isinstance(inner, BaseAgent):
                    self.swap_models(inner)

    def reply(self, request: dict[str, Any], _index: int) -> FakeReply:
        """The next response of the agent whose instruction the system instruction holds.

        (The longest such: one agent's instruction may be part of another's. ADK adds
        "Your internal name is …" only for agents, not for a ``Workflow``'s nodes. An
        instruction template is known by what precedes its first placeholder.)
        """
        system = json.dumps(request.get("systemInstruction", ""), ensure_ascii=False)
        # What precedes a template's first placeholder (``{notes}``), which ADK fills in.
        held = [
            i
            for i in self.queues
            if json.dumps(i.split("{", 1)[0], ensure_ascii=False)[1:-1] in system
        ]
        response = self.queues[max(held, key=len)].pop(None)  # type: ignore[arg-type]
        assert response.content is not None and response.usage_metadata is not None
        usage = response.usage_metadata
        content = response.content.model_dump(mode="json", by_alias=True, exclude_none=True)
        body = {
            "candidates": [{"content": content, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {
                "promptTokenCount": usage.prompt_token_count,
                "candidatesTokenCount": usage.candidates_token_count,
                "totalTokenCount": usage.total_token_count,
            },
            "modelVersion": "gemini-2.5-flash-001",
        }
        return FakeReply(body=body)

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Every scenario built meanwhile talks to the fake through the real model."""
        originals = dict(adk_harness.SCENARIOS)
        pausing = dict(adk_harness.PAUSING)

        def swapped(build: Callable[[], adk_harness.Scenario]) -> adk_harness.Scenario:
            scenario = build()
            self.queues.clear()
            self.swap_models(scenario.root_agent)
            return scenario

        with FakeGemini(self.reply, chunks=stream_chunks) as fake, one_tls_context():
            os.environ["GOOGLE_GEMINI_BASE_URL"] = fake.base_url
            os.environ["GOOGLE_API_KEY"] = "test-key"  # the fake checks none
            os.environ.pop("GOOGLE_GENAI_USE_VERTEXAI", None)
            for builders, kept in (
                (adk_harness.SCENARIOS, originals),
                (adk_harness.PAUSING, pausing),
            ):
                for name, build in kept.items():
                    builders[name] = lambda build=build: swapped(build)  # type: ignore[misc]
            try:
                yield
            finally:
                adk_harness.SCENARIOS.update(originals)
                adk_harness.PAUSING.update(pausing)


@contextmanager
def one_tls_context() -> Iterator[None]:
    """Every TLS context asked for meanwhile with the same arguments is the first one made.

    ADK builds a google-genai client per event loop (each scenario runs on its own), and
    each client makes three default contexts, loading the CA bundle (``SSL_CERT_FILE``,
    else certifi's) each time, ~50 ms: about two thirds of a mode's run (48 s -> 17 s).
    The fake speaks plain HTTP, so no context is ever used; sharing one changes nothing
    else.
    """
    original = ssl.create_default_context
    ssl.create_default_context = functools.cache(original)  # type: ignore[assignment]
    try:
        yield
    finally:
        ssl.create_default_context = original


def main(argv: list[str]) -> int:
    mode, out = argv[0], Path(argv[1])
    if mode not in ALL_MODES:
        raise SystemExit(f"unknown mode {mode!r}; known: {', '.join(ALL_MODES)}")
    out.mkdir(parents=True, exist_ok=True)
    adk_harness.install_telemetry()
    capture = adk_harness._state.capture
    assert capture is not None
    if mode.startswith("adk"):
        GoogleADKInstrumentor().instrument(tracer_provider=capture.tracer_provider)
    elif mode.startswith("google-genai"):
        GoogleGenAIInstrumentor().instrument(tracer_provider=capture.tracer_provider)
    serving = nullcontext() if mode == "adk" else GeminiScripts().serving()
    streaming = mode.endswith("-sse")
    records: dict[str, Any] = {}
    with serving:
        for schema, content, scenario in RUNS + PAUSING_RUNS:
            run = adk_harness.run_scenario(
                scenario, schema=schema, content=content, streaming=streaming
            )
            name = record_name(schema, content, scenario)
            write_run(run, out / name)
            records[name] = expected(run)
    (out / "expected.json").write_text(json.dumps(records, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
