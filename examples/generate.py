"""Regenerate the bundled example traces from real google-adk agents (scripted model).

Needs the test extra (``pip install -e '.[test]'``); no API key, no network. Each file
is OTLP JSON Lines as the OpenTelemetry Collector's ``file`` exporter writes it: one
export batch per line, traces interleaved, trace and log lines in one file.

    python examples/generate.py
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "tests" / "formats"))

from otlp_helpers import logs_to_otlp_json, spans_to_otlp_json_lines  # noqa: E402

from adk_harness import run_scenario  # noqa: E402

#: file name → (schema, content mode, scenarios)
EXAMPLES = {
    "adk-schema2-span-content.jsonl": (
        "v2",
        "SPAN_ONLY",
        ["two_sequential_tools", "parallel_calls", "transfer_to_sub_agent", "two_turn_session"],
    ),
    "adk-schema1-legacy.jsonl": ("v1", "default", ["text_and_call", "sequential_pipeline"]),
    "adk-schema2-event-only.jsonl": ("v2", "EVENT_ONLY", ["non_ascii", "agent_tool"]),
    "adk-schema2-no-content.jsonl": ("v2", "default", ["no_tools"]),
}


def main() -> None:
    """Write every example file."""
    out_dir = HERE / "traces"
    out_dir.mkdir(exist_ok=True)
    for name, (schema, content, scenarios) in EXAMPLES.items():
        lines: list[str] = []
        for scenario in scenarios:
            run = run_scenario(scenario, schema=schema, content=content)  # type: ignore[arg-type]
            lines.extend(spans_to_otlp_json_lines(run.spans, batch_size=4))
            if content in ("EVENT_ONLY", "SPAN_AND_EVENT") and run.logs:
                lines.append(logs_to_otlp_json(run.logs))
        # Interleave batches of different runs, as a Collector writing concurrent traffic.
        mixed = lines[0::2] + lines[1::2]
        (out_dir / name).write_text("\n".join(mixed) + "\n", encoding="utf-8")
        print(f"wrote {out_dir / name}: {len(mixed)} lines")


if __name__ == "__main__":
    main()
