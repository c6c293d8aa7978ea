"""Real google-adk agents under OpenInference's instrumentor for google-adk, recorded.

``openinference-instrumentation-google-adk`` patches ADK process-wide, so this runs in a
child process of its own (``conv_helpers.run_harness``). It runs every scenario of
``adk_harness`` in both telemetry schemas and every content mode, with the instrumentor
on, and writes to ``OUT_DIR``:

* ``<schema>-<content>-<scenario>.jsonl``: the run's spans, then its log records, each
  through the real OTLP encoder as one OTLP JSON document (a trace line and a log line,
  as the Collector's ``file`` exporter writes them);
* ``expected.json``: per run, ADK's own invocations (``adk_harness.adk_view`` of
  ``EvaluationGenerator.convert_events_to_eval_invocations``), their invocation ids, the
  session id, the model calls the scripted model served and the errors turns raised.

Usage::

    python tests/adk_openinference_harness.py OUT_DIR

(OpenInference's ``TraceConfig(hide_inputs=True, hide_outputs=True)`` redacts only the
spans the instrumentor starts itself: 1.0.5 still writes every message onto ADK's own
spans, so there is no mode here where nothing is captured.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from openinference.instrumentation.google_adk import GoogleADKInstrumentor
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

import adk_harness

#: Every schema and content mode; in schema 2's default and in NO_CONTENT, ADK captures
#: no content, but the instrumentor's own attributes do.
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
#: With ``--hide``: nothing captured anywhere.
HIDDEN_MODES: list[tuple[adk_harness.SchemaVersion, adk_harness.ContentMode]] = [("v2", "default")]


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


def main(argv: list[str]) -> int:
    [out] = [Path(a) for a in argv]
    out.mkdir(parents=True, exist_ok=True)
    adk_harness.install_telemetry()
    capture = adk_harness._state.capture
    assert capture is not None
    GoogleADKInstrumentor().instrument(tracer_provider=capture.tracer_provider)
    records: dict[str, Any] = {}
    for schema, content in MODES:
        for scenario in adk_harness.SCENARIOS:
            run = adk_harness.run_scenario(scenario, schema=schema, content=content)
            name = record_name(schema, content, scenario)
            write_run(run, out / name)
            records[name] = expected(run)
    (out / "expected.json").write_text(json.dumps(records, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
