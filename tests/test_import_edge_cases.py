"""Import edge cases on real ADK telemetry: backend truncation, huge values, progress."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import orjson
from click.testing import CliRunner
from otlp_helpers import spans_to_otlp_json_lines

from adk_harness import run_scenario
from tracescore import build_invocations
from tracescore.cli import main
from tracescore.formats.sdk import from_readable_span
from tracescore.importer import ImportStats, import_paths
from tracescore.spans import SpanRecord

LIMIT = 64 * 1024
REQUEST = "gcp.vertex.agent.llm_request"


def _v1_spans(scenario: str = "two_sequential_tools") -> list[SpanRecord]:
    run = run_scenario(scenario, schema="v1", content="default")
    return [from_readable_span(s) for s in run.spans]


def _truncate_requests(spans: list[SpanRecord], *, pad: int, where: str) -> list[SpanRecord]:
    """Grow each request by ``pad`` bytes of system instruction, then cut it at 64 KiB,
    as Cloud Trace does. ``where`` puts the padding before or after ``contents``."""
    out = []
    for span in spans:
        raw = span.attributes.get(REQUEST)
        if isinstance(raw, str) and raw != "{}":
            req = orjson.loads(raw)
            req["config"]["system_instruction"] = "Be precise. " * (pad // 12)
            contents = req.pop("contents")
            ordered = (
                {"contents": contents, **req} if where == "after" else {**req, "contents": contents}
            )
            text = orjson.dumps(ordered).decode()
            assert len(text) > LIMIT
            out.append(replace(span, attributes={**span.attributes, REQUEST: text[:LIMIT]}))
        else:
            out.append(span)
    return out


def test_request_cut_after_the_contents_is_salvaged_and_says_so() -> None:
    spans = _truncate_requests(_v1_spans(), pad=100_000, where="after")
    [inv] = build_invocations(spans)
    assert inv.status == "ok"
    assert inv.user_content == "What is the weather in Paris, in Fahrenheit?"
    assert [c.name for c in inv.tool_calls] == ["get_weather", "convert_temperature"]
    assert inv.final_response == "It is 70.7°F and sunny in Paris."
    assert any("truncated" in w and REQUEST in w for w in inv.warnings)
    assert inv.system_instructions is not None


def test_request_cut_before_the_contents_loses_only_the_user_message() -> None:
    # ADK writes config before contents: a large system prompt pushes the history out.
    spans = _truncate_requests(_v1_spans(), pad=100_000, where="before")
    [inv] = build_invocations(spans)
    assert inv.status == "not_evaluable"
    assert inv.reason_code == "no_user_message"
    assert "truncated" in (inv.reason or "")
    # What other spans carry is still there.
    assert [c.name for c in inv.tool_calls] == ["get_weather", "convert_temperature"]
    assert inv.tool_calls[0].result == {"city": "Paris", "temp_c": 21.5, "condition": "sunny"}
    assert inv.final_response == "It is 70.7°F and sunny in Paris."


def test_megabyte_attributes_go_through_import(tmp_path: Path) -> None:
    run = run_scenario("two_sequential_tools", schema="v2", content="SPAN_ONLY")
    lines = spans_to_otlp_json_lines(run.spans, batch_size=3)
    big = "x" * (3 * 1024 * 1024)
    lines = [line.replace("sunny", big) for line in lines]
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(main, ["import", str(path)])
    assert result.exit_code == 0, result.stderr
    [record] = [orjson.loads(x) for x in result.stdout.splitlines()]
    assert record["tool_calls"][0]["result"]["condition"] == big


def test_model_context_is_optional_and_changes_nothing_else() -> None:
    """The bundled ADK traces carry instructions and tool declarations; left out on request."""
    examples = str(Path(__file__).resolve().parent.parent / "examples" / "traces")
    full = list(import_paths([examples], ImportStats()))
    lean = list(import_paths([examples], ImportStats(), model_context=False))
    assert sum(i.system_instructions is not None for i in full) >= len(full) // 2
    assert sum(i.tool_definitions is not None for i in full) >= len(full) // 2
    assert [replace(i, provenance={}) for i in lean] == [
        replace(i, system_instructions=None, tool_definitions=None, provenance={}) for i in full
    ]
    assert all(not {"system_instructions", "tool_definitions"} & i.provenance.keys() for i in lean)


def test_lone_surrogates_and_bad_utf8_read_as_replacement_characters(tmp_path: Path) -> None:
    # Half an emoji, as JavaScript's JSON.stringify writes a string cut inside one (or
    # Python's json.dumps a surrogateescape'd file name): in the OTLP document itself
    # (the conversation id) and in the JSON text of a tool result and of the reply.
    run = run_scenario("two_sequential_tools", schema="v2", content="SPAN_ONLY")
    lines = [
        line.replace("tools-session", "tools-session\\ud83d")
        .replace('sunny\\"', 'sunny \\\\ud83d\\"')
        .replace('in Paris.\\"', 'in Paris. \\\\udc00\\\\ud83d\\\\ude00\\"')
        for line in spans_to_otlp_json_lines(run.spans, batch_size=3)
    ]
    assert sum("\\ud83d" in line for line in lines) > 1
    path = tmp_path / "cut-emoji.jsonl"
    # And a byte that is not UTF-8 (Go's reader takes it, the OTLP spec says U+FFFD).
    path.write_bytes(("\n".join(lines) + "\n").encode().replace(b"Fahrenheit", b"Fahren\xffheit"))
    result = CliRunner().invoke(main, ["import", str(path)])
    assert result.exit_code == 0, result.stderr
    [record] = [orjson.loads(x) for x in result.stdout.splitlines()]
    assert record["status"] == "ok"
    assert record["conversation_id"] == "two_sequential_tools-session\ufffd"
    assert record["user_content"] == "What is the weather in Paris, in Fahren\ufffdheit?"
    assert record["tool_calls"][0]["result"]["condition"] == "sunny \ufffd"
    assert record["final_response"] == "It is 70.7°F and sunny in Paris. \ufffd😀"
