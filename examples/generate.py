"""Regenerate the bundled example traces from real google-adk agents (scripted model).

Needs the test extra (``pip install -e '.[test]'``); no API key, no network. Each file
is OTLP JSON Lines as the OpenTelemetry Collector's ``file`` exporter writes it: one
export batch per line, traces interleaved, trace and log lines in one file.

    python examples/generate.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "tests" / "formats"))

from otlp_helpers import logs_to_otlp_json, spans_to_otlp_json_lines  # noqa: E402

from adk_harness import run_scenario  # noqa: E402
from tracescore.evalset import conversations_to_evalset  # noqa: E402
from tracescore.importer import ImportStats, import_paths  # noqa: E402
from tracescore.model import group_conversations  # noqa: E402

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


def write_goldens(out_dir: Path) -> None:
    """Goldens for the replay example: the recorded runs, changed on purpose.

    Three answers differ from what the agents did, so the report shows failures next
    to passes.
    """
    invocations = list(import_paths([str(HERE / "traces")], ImportStats()))
    doc, _, _ = conversations_to_evalset(group_conversations(invocations), eval_set_id="weather")
    cases = {case["eval_id"]: case for case in doc["eval_cases"]}  # type: ignore[index,union-attr]
    # The agent answered Paris then Tokyo; the golden expects the other order (EXACT fails).
    uses = cases["parallel_calls-session"]["conversation"][0]["intermediate_data"]["tool_uses"]
    uses.reverse()
    # A golden answer worded differently: ROUGE-1 falls under the threshold.
    text_case = cases["text_and_call-session"]["conversation"][0]
    text_case["final_response"]["parts"][0]["text"] = "Expect rain in Berlin, around 15 degrees."
    # The golden expects the temperature conversion to one more decimal.
    seq = cases["two_sequential_tools-session"]["conversation"][0]["intermediate_data"]
    seq["tool_uses"][1]["args"]["precision"] = 2
    for case in doc["eval_cases"]:  # type: ignore[union-attr]
        for turn in case["conversation"]:
            turn.pop("invocation_id", None)
    doc["creation_timestamp"] = 0.0
    out_dir.mkdir(exist_ok=True)
    path = out_dir / "weather.evalset.json"
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}")


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
    write_goldens(HERE / "goldens")


if __name__ == "__main__":
    main()
