"""The OTel Python SDK's console exporters' output, read as traces."""

from __future__ import annotations

import dataclasses
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    ConsoleLogRecordExporter,
    InMemoryLogRecordExporter,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import ConsoleSpanExporter
from otlp_helpers import logs_to_otlp_json, make_tracer_provider, spans_to_otlp_json_lines

from adk_harness import ContentMode, SchemaVersion, run_scenario
from tracescore.cli import main
from tracescore.formats.console import decode_console_stream
from tracescore.formats.files import read_file
from tracescore.formats.sdk import from_readable_span, from_sdk_log
from tracescore.spans import LogRecord, SpanRecord

COMPACT = {"formatter": lambda record: record.to_json(indent=None) + "\n"}


def printed(
    spans: Sequence[ReadableSpan], logs: Sequence[ReadableLogRecord] = (), *, compact: bool = False
) -> str:
    """What the SDK's console exporters print for ``spans`` then ``logs``."""
    out = io.StringIO()
    options = COMPACT if compact else {}
    ConsoleSpanExporter(out=out, **options).export(spans)  # type: ignore[arg-type]
    if logs:
        ConsoleLogRecordExporter(out=out, **options).export(logs)
    return out.getvalue()


def imported(path: Path) -> list[dict[str, object]]:
    result = CliRunner().invoke(main, ["import", str(path)])
    assert result.exit_code == 0, result.stderr
    records = [orjson.loads(line) for line in result.stdout.splitlines()]
    for record in records:  # the printout keeps microseconds: times differ below that
        del record["start_time_unix_nano"], record["duration_s"]
    return records


@pytest.mark.parametrize("compact", [False, True], ids=["pretty", "one-per-line"])
@pytest.mark.parametrize(
    ("scenario", "schema", "content"),
    [
        ("two_sequential_tools", "v1", "default"),
        ("transfer_to_sub_agent", "v2", "SPAN_ONLY"),
        ("tool_raises", "v2", "EVENT_ONLY"),  # the content is in the log records
    ],
)
def test_a_printed_adk_run_imports_as_its_otlp_export(
    tmp_path: Path, scenario: str, schema: SchemaVersion, content: ContentMode, compact: bool
) -> None:
    run = run_scenario(scenario, schema=schema, content=content)
    console = tmp_path / "agent-stdout.txt"
    console.write_text(printed(run.spans, run.logs, compact=compact))
    otlp = tmp_path / "otlp.jsonl"
    lines = spans_to_otlp_json_lines(run.spans)
    if run.logs:
        lines.append(logs_to_otlp_json(run.logs))
    otlp.write_text("\n".join(lines) + "\n")
    expected = imported(otlp)
    assert expected and all(r["status"] == "ok" for r in expected)
    assert imported(console) == expected


def _sdk_records() -> tuple[list[ReadableSpan], list[ReadableLogRecord]]:
    from opentelemetry.trace import SpanKind, Status, StatusCode

    provider, exporter = make_tracer_provider()
    tracer = provider.get_tracer("scope.not.printed")
    logger_provider = LoggerProvider()
    log_exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]  # SDK: unannotated __init__
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    attributes: dict[str, Any] = {"tags": ("a", "b"), "n": 3, "x": 1.5, "ok": True}
    attributes["nan"] = math.nan
    with (
        tracer.start_as_current_span("invoke_agent a", kind=SpanKind.SERVER),
        tracer.start_as_current_span("chat m", kind=SpanKind.CLIENT, attributes=attributes) as span,
    ):
        span.add_event("gen_ai.choice", {"index": 0})
        span.set_status(Status(StatusCode.ERROR, "upstream timeout"))
        logger_provider.get_logger("l").emit(
            event_name="gen_ai.user.message",
            body={"content": "hi", "parts": [1, None]},
            attributes={"gen_ai.system": "gemini"},
            severity_text="INFO",
        )
    logger_provider.get_logger("l").emit(body="outside any span")
    return list(exporter.get_finished_spans()), list(log_exporter.get_finished_logs())


def _near(ns: int, seen: int) -> int:
    """The printed time, when within a microsecond of ``ns``.

    The SDK prints ``datetime.fromtimestamp(ns / 1e9)``: a float, so its microsecond may
    be one off a truncation.
    """
    assert abs(ns - seen) < 1000
    return seen


def _span_as_printed(record: SpanRecord, printed: SpanRecord) -> SpanRecord:
    """``record`` as the printout keeps it: no scope, times to the microsecond."""
    events = [
        dataclasses.replace(e, time_ns=_near(e.time_ns, p.time_ns))
        for e, p in zip(record.events, printed.events, strict=True)
    ]
    return dataclasses.replace(
        record,
        start_ns=_near(record.start_ns, printed.start_ns),
        end_ns=_near(record.end_ns, printed.end_ns),
        events=events or record.events,
        scope=None,
    )


def _log_as_printed(record: LogRecord, printed: LogRecord) -> LogRecord:
    return dataclasses.replace(record, time_ns=_near(record.time_ns, printed.time_ns), scope=None)


def _key(record: SpanRecord | LogRecord) -> str:
    return str(record.span_id) + str(getattr(record, "name", ""))


@pytest.mark.parametrize("compact", [False, True], ids=["pretty", "one-per-line"])
def test_each_field_reads_as_the_sdk_record_has_it(tmp_path: Path, compact: bool) -> None:
    spans, logs = _sdk_records()
    path = tmp_path / "stdout.log"
    path.write_text(printed(spans, logs, compact=compact))
    batches = list(read_file(str(path)))
    assert [e for b in batches for e in b.errors] == []
    got_spans = [dataclasses.replace(s, origin=None) for b in batches for s in b.spans]
    got_logs = [dataclasses.replace(g, origin=None) for b in batches for g in b.logs]
    by_id = {s.span_id: s for s in got_spans}
    want_spans = [
        _span_as_printed(record, by_id[record.span_id])
        for record in (from_readable_span(s) for s in spans)
    ]
    want_logs = [
        _log_as_printed(from_sdk_log(log), seen) for log, seen in zip(logs, got_logs, strict=True)
    ]
    # The SDK prints NaN as `NaN`, which orjson refuses: read as Python's json reads it.
    nan = [s.attributes.pop("nan") for s in (*got_spans, *want_spans) if "nan" in s.attributes]
    assert len(nan) == 2 and all(isinstance(v, float) and math.isnan(v) for v in nan)
    assert sorted(got_spans, key=_key) == sorted(want_spans, key=_key)
    assert got_logs == want_logs
    assert [s.kind for s in sorted(got_spans, key=lambda s: s.start_ns)] == [2, 3]
    assert got_logs[1].trace_id is None and got_logs[1].span_id is None


def test_other_output_between_records_is_located_and_the_rest_kept(tmp_path: Path) -> None:
    spans, _ = _sdk_records()
    first, second = (printed([span]) for span in spans)
    junk = "tool said: {oops\n"
    text = "Agent starting...\n" + first + junk + second + "3 tools loaded\n{\n  broken\n}\n"
    path = tmp_path / "mixed.txt"
    path.write_text(text)
    [batch] = read_file(str(path))
    assert len(batch.spans) == 2
    errors = [(e.line, e.detail) for e in batch.errors]
    assert errors == [
        (1, "not a record of the console exporter: text starting 'Agent starting...'"),
        (
            first.count("\n") + 2,
            "not a record of the console exporter: text starting 'tool said: {oops'",
        ),
        (
            text.count("\n") - 3,
            "not a record of the console exporter: text starting '3 tools loaded'",
        ),
        (text.count("\n") - 2, "not a record of the console exporter: text starting '{'"),
    ]
    assert [s.origin.line for s in batch.spans if s.origin] == [2, first.count("\n") + 3]


def test_bad_records_are_located_with_their_span_id(tmp_path: Path) -> None:
    spans, _ = _sdk_records()
    first, second = (printed([span]) for span in spans)
    span_id = f"{spans[0].context.span_id:016x}"
    first = first.replace(f'"0x{spans[0].context.trace_id:032x}"', '"0xnothex"')
    second = second.replace('"end_time": "', '"end_time": "yesterday ')
    log = '{\n    "body": 1, "severity_number": 9, "observed_timestamp": null, "trace_id": 7\n}\n'
    [batch] = read_file(_write(tmp_path, first + second + log))
    assert batch.spans == [] and batch.logs == []
    assert [(e.line, e.span_id, e.detail) for e in batch.errors] == [
        (1, span_id, "console exporter record: trace_id '0xnothex' is not 0x-prefixed hex"),
        (
            first.count("\n") + 1,
            f"{spans[1].context.span_id:016x}",
            "console exporter record: end_time 'yesterday "
            + second.split('"end_time": "yesterday ')[1].split('"')[0]
            + "' is not an ISO 8601 time",
        ),
        (
            (first + second).count("\n") + 1,
            None,
            "console exporter record: trace_id 7 is not 0x-prefixed hex",
        ),
    ]


def test_lone_surrogate_escapes_and_bad_bytes_read_as_replacement_characters(
    tmp_path: Path,
) -> None:
    spans, _ = _sdk_records()
    text = printed(spans).replace('"upstream timeout"', '"upstream \\ud83d timeout"')
    path = tmp_path / "cut.txt"
    path.write_bytes(text.encode().replace(b"invoke_agent a", b"invoke_agent \xff"))
    [batch] = read_file(str(path))
    assert batch.errors == []
    assert {s.name for s in batch.spans} == {"invoke_agent \ufffd", "chat m"}
    assert [s.status_message for s in batch.spans if s.status_message] == [
        "upstream \ufffd timeout"
    ]


def test_other_json_streams_keep_their_error(tmp_path: Path) -> None:
    path = _write(tmp_path, '{\n  "a": 1\n}\n{\n  "b": 2\n}\n')
    assert decode_console_stream(Path(path).read_bytes(), path) is None
    [batch] = read_file(path)
    [error] = batch.errors
    assert "invalid JSON" in error.detail


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "stdout.txt"
    path.write_text(text)
    return str(path)
