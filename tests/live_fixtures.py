"""Shared set-up of the live-scoring tests: a provider with the processor, goldens, a fake clock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

from tracescore.goldens import GoldenSet, load_goldens

PARIS = "What is the weather in Paris?"


def write_goldens(
    path: Path, cases: dict[str, tuple[str, list[tuple[str, dict[str, Any]]], str]]
) -> list[GoldenSet]:
    """An ADK evalset with one single-turn case per entry: (user, tool calls, answer)."""
    doc = {
        "eval_set_id": "live",
        "eval_cases": [
            {
                "eval_id": eval_id,
                "conversation": [
                    {
                        "user_content": {"role": "user", "parts": [{"text": user}]},
                        "final_response": {"role": "model", "parts": [{"text": answer}]},
                        "intermediate_data": {
                            "tool_uses": [{"name": n, "args": a} for n, a in calls],
                            "tool_responses": [],
                            "intermediate_responses": [],
                        },
                    }
                ],
            }
            for eval_id, (user, calls, answer) in cases.items()
        ],
    }
    file = path / "live.evalset.json"
    file.write_text(json.dumps(doc))
    return load_goldens([str(file)])


def value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    """A sample's value, 0 when absent."""
    return registry.get_sample_value(name, labels) or 0.0


def total(registry: CollectorRegistry, name: str, label: str) -> dict[str, float]:
    """Sum of a counter's samples per value of one label."""
    out: dict[str, float] = {}
    for metric in registry.collect():
        for sample in metric.samples:
            if sample.name == name and label in sample.labels:
                key = sample.labels[label]
                out[key] = out.get(key, 0.0) + sample.value
    return out


def provider_with(processor: Any) -> Iterator[TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(processor)
    try:
        yield provider
    finally:
        processor.shutdown()
