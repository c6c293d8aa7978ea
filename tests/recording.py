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
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class Recorder:
    """A tracer provider whose spans are kept in memory until :meth:`write` takes them."""

    def __init__(self, *processors: SpanProcessor) -> None:
        """``processors`` run before the exporter's (e.g. one that adds attributes on end)."""
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        for processor in processors:
            self.provider.add_span_processor(processor)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def write(self, path: Path) -> None:
        """Write the spans finished so far as one OTLP JSON line, and forget them."""
        self.provider.force_flush()
        document = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        path.write_text(json.dumps(document, ensure_ascii=False) + "\n")
        self.exporter.clear()


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
