"""The replay report: rich's table layout without rich's per-table cost, colour, safety."""

from __future__ import annotations

import dataclasses
import io
import re

from rich.console import Console
from rich.table import Table

from tracescore.criteria.base import EvalStatus
from tracescore.replay import ReplayResult
from tracescore.report import print_report
from tracescore.scoring import CaseResult, CriterionSummary

Row = tuple[str, EvalStatus, float | None, float | None]
ROWS: list[Row] = [
    ("tool_trajectory_avg_score", "failed", 0.0, 1.0),
    ("response_match_score", "passed", 0.8123, 0.8),
    ("rubric_based_final_response_quality_v1", "not_evaluated", None, 0.5),
    ("token_usage_v1", "informational", 4426.0, None),
]


def case(eval_id: str, status: EvalStatus = "failed", rows: list[Row] | None = None) -> CaseResult:
    return CaseResult(
        eval_set_id="set",
        eval_id=eval_id,
        status=status,
        criteria=tuple(
            CriterionSummary(criterion=n, status=s, score=v, threshold=t)
            for n, s, v, t in (rows or ROWS)
        ),
    )


def report(cases: list[CaseResult], **console: object) -> str:
    buf = io.StringIO()
    result = ReplayResult(invocations=[], cases=cases, criteria=[])
    print_report(result, Console(file=buf, highlight=False, **console))  # type: ignore[arg-type]
    return buf.getvalue()


def rich_table(rows: list[tuple[str, str, str, str]]) -> list[str]:
    """What rich itself prints for the old report's table (the layout we keep)."""
    buf = io.StringIO()
    table = Table(show_header=True, box=None, pad_edge=False)
    for col in ("criterion", "status", "score", "threshold"):
        table.add_column(col)
    for row in rows:
        table.add_row(*row)
    Console(file=buf, width=200).print(table)
    return [line.rstrip() for line in buf.getvalue().splitlines()]


def test_the_criteria_table_is_laid_out_as_rich_lays_it_out() -> None:
    lines = report([case("a")]).splitlines()
    assert lines[0] == "set/a: FAILED"
    expected = rich_table(
        [
            ("tool_trajectory_avg_score", "FAILED", "0", "1"),
            ("response_match_score", "PASSED", "0.812", "0.8"),
            ("rubric_based_final_response_quality_v1", "NOT_EVALUATED", "-", "0.5"),
            ("token_usage_v1", "INFORMATIONAL", "4426", "-"),
        ]
    )
    assert [line.rstrip() for line in lines[1:6]] == expected
    assert lines[-1].startswith("cases: 0 passed, 1 failed, 0 not evaluated")


def test_column_widths_follow_each_case() -> None:
    narrow: list[Row] = [("tool_name_match_score", "passed", 1.0, 1.0)]
    text = report([case("a", "passed", narrow)])
    assert "tool_name_match_score  PASSED  1      1" in text.splitlines()


def test_statuses_are_coloured_on_a_terminal_only() -> None:
    piped = report([case("a")])
    assert "\x1b[" not in piped
    coloured = report([case("a")], force_terminal=True, color_system="standard", width=200)
    assert "\x1b[1;31mFAILED\x1b[0m" in coloured
    assert "\x1b[32mPASSED\x1b[0m" in coloured
    # Padding is measured on the label, not its escape codes: columns still line up.
    rows = [line for line in coloured.splitlines() if "score  " not in line and "_v1" in line]
    plain = [line for line in piped.splitlines() if "score  " not in line and "_v1" in line]
    strip = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in rows]
    assert strip == plain
    assert report([case("a")], force_terminal=True, no_color=True).count("\x1b[3") == 0


def test_escape_sequences_from_traces_never_reach_the_terminal() -> None:
    hostile = case("conv\x1b]0;pwned\x07\x1b[2J", "failed")
    text = report([hostile], force_terminal=True, color_system="standard")
    assert "\x1b]0" not in text and "\x1b[2J" not in text and "\x07" not in text
    assert "set/conv\ufffd]0;pwned\ufffd\ufffd[2J" in text


def test_a_large_report_is_complete_and_in_order() -> None:
    # More lines than one write holds: the chunks must join without loss or reordering.
    cases = [case(f"c{i:05}", "passed") for i in range(2_000)]
    lines = report(cases).splitlines()
    assert len(lines) == 2_000 * 6 + 1
    titles = [line for line in lines if line.startswith("set/")]
    assert titles == [f"set/c{i:05}: PASSED" for i in range(2_000)]
    assert (
        lines[-1]
        == "cases: 2000 passed, 0 failed, 0 not evaluated · invocations: 0 scored, 0 without golden, 0 not evaluable"
    )


def test_a_quiet_console_prints_nothing() -> None:
    assert report([case("a"), case("b", "passed")], quiet=True) == ""


def test_a_recording_console_records_the_report_in_colour_and_as_text() -> None:
    buf = io.StringIO()
    console = Console(
        file=buf, highlight=False, record=True, force_terminal=True, color_system="standard"
    )
    result = ReplayResult(invocations=[], cases=[case("a")], criteria=[])
    print_report(result, console)
    written = buf.getvalue()
    recorded = console.export_text()  # plain text, as it was printed
    assert "\x1b[" in written  # still painted on the terminal
    assert "\x1b[" not in recorded
    assert recorded == report([case("a")])  # what a plain console prints, summary included
    assert recorded.rstrip().endswith("0 not evaluable")
    assert re.sub(r"\x1b\[[0-9;]*m", "", written) == recorded


def test_junit_xml_parses_whatever_the_traces_hold() -> None:
    """Conversation ids and agent names come from traces: control characters and lone
    surrogates (which XML cannot hold) were written as they are, and the report did not
    parse (or did not encode)."""
    from xml.etree import ElementTree as ET

    from tracescore.model import Invocation
    from tracescore.report import junit_xml
    from tracescore.scoring import InvocationResult

    agent = "router\x01\ud800"
    run = Invocation(trace_id="t", invocation_id="i", agent=agent)
    scored = InvocationResult(
        invocation=run, golden=None, expected=None, outcome="scored", reason=None, results=()
    )
    failed = dataclasses.replace(case("conv\x00\x1b[2J\ufffe"), invocations=(scored,))
    skipped = dataclasses.replace(case("ok\x0b", "not_evaluated"), eval_set_id="set\x02")
    result = ReplayResult(invocations=[], cases=[failed, skipped], criteria=[])
    root = ET.fromstring(junit_xml(result))
    [first, second] = root.findall("testsuite")
    case_node = first.find("testcase")
    assert case_node is not None
    assert case_node.get("name") == "conv\ufffd\ufffd[2J\ufffd"
    failure = case_node.find("failure")
    assert failure is not None and failure.text is not None
    assert "tool_trajectory_avg_score for router\ufffd\ufffd Failed." in failure.text
    assert second.get("name") == "set\ufffd"
    assert second.find("testcase/skipped") is not None
