"""Recording a real framework's spans for the agreement tests: the harnesses' common part.

Each ``*_harness.py`` runs one framework's agents in a child process and calls
:func:`record_scenarios`: every scenario's finished spans go through the real OTLP
encoder into ``<scenario>.jsonl`` (one OTLP JSON document, as the Collector's ``file``
exporter writes a batch), and what the framework itself recorded of each run into
``expected.json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class Recorder:
    """A tracer provider (and a logger provider) kept in memory until :meth:`write`."""

    def __init__(self, *processors: SpanProcessor) -> None:
        """``processors`` run before the exporter's (e.g. one that adds attributes on end)."""
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        for processor in processors:
            self.provider.add_span_processor(processor)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        #: For instrumentations that emit content as log records (set it as the global one).
        self.logger_provider = LoggerProvider()
        self.log_exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]  # SDK: unannotated __init__
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.log_exporter))

    def write(self, path: Path) -> None:
        """Write the spans finished so far as one OTLP JSON line, the log records emitted
        so far (if any) as a second one, and forget them."""
        self.provider.force_flush()
        lines = [MessageToDict(encode_spans(self.exporter.get_finished_spans()))]
        logs = self.log_exporter.get_finished_logs()
        if logs:
            lines.append(MessageToDict(encode_logs(logs)))
        path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
        self.exporter.clear()
        self.log_exporter.clear()


def weather(city: str) -> str:
    """The harnesses' weather tool, whatever framework wraps it: Atlantis has no station."""
    if city == "Atlantis":
        raise ConnectionError(f"no weather station in {city}")
    return f"sunny in {city}, 21 °C"


def record_scenarios(
    recorder: Recorder,
    scenarios: Mapping[str, Callable[[], list[dict[str, Any]]]],
    out_dir: Path,
) -> None:
    """Run each scenario; write ``<name>.jsonl`` and, for all, ``expected.json``."""
    expected = {}
    for name, scenario in scenarios.items():
        expected[name] = scenario()
        recorder.write(out_dir / f"{name}.jsonl")
    (out_dir / "expected.json").write_text(json.dumps(expected, ensure_ascii=False, indent=1))
