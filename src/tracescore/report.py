"""Human and CI reports of a replay.

A terminal summary in the spirit of ``adk eval``, per-invocation details on request, and
JUnit XML for CI systems.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Final
from xml.etree import ElementTree as ET

from rich.console import Console
from rich.text import Text

from tracescore.conventions.messages import JsonValue
from tracescore.criteria.base import EvalStatus
from tracescore.judge.client import JudgeClient
from tracescore.replay import ReplayResult
from tracescore.scoring import CaseResult, InvocationResult

__all__ = ["junit_xml", "print_judge_usage", "print_report"]

_STYLE: dict[EvalStatus, str] = {
    "passed": "green",
    "failed": "bold red",
    "not_evaluated": "yellow",
    "informational": "cyan",
}
_LABEL: dict[EvalStatus, str] = {
    "passed": "PASSED",
    "failed": "FAILED",
    "not_evaluated": "NOT_EVALUATED",
    "informational": "INFORMATIONAL",
}


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}".rstrip("0").rstrip(".") or "0"


#: C0 and C1 control characters (newline and tab kept) shown as U+FFFD: ids, reasons and
#: judge rationales come from traces and judges, and an ESC in them must not reach the
#: terminal as an escape sequence.
_CONTROLS: Final = {
    c: "\ufffd" for c in (*range(0x20), *range(0x7F, 0xA0)) if c not in (0x09, 0x0A)
}


def _safe(text: str) -> str:
    return text.translate(_CONTROLS)


class _Painter:
    """Styles as the console renders them: ANSI codes on a colour terminal, none when piped.

    The report is written as plain strings (see :func:`print_report`); each style's codes
    are rendered once through the console, so colour and ``NO_COLOR`` follow rich's rules.
    """

    def __init__(self, console: Console) -> None:
        self._console = console
        self._codes: dict[str, tuple[str, str]] = {}

    def __call__(self, text: str, style: str) -> str:
        codes = self._codes.get(style)
        if codes is None:
            with self._console.capture() as capture:
                self._console.print(Text("\x00", style=style), end="", soft_wrap=True)
            before, _, after = capture.get().partition("\x00")
            codes = self._codes[style] = (before, after)
        return f"{codes[0]}{text}{codes[1]}" if codes[0] else text

    def status(self, status: EvalStatus) -> str:
        return self(_LABEL[status], _STYLE[status])


_LINES_PER_WRITE: Final = 4096
_HEADER: Final = ("criterion", "status", "score", "threshold")


def print_report(result: ReplayResult, console: Console, *, detailed: bool = False) -> None:
    """Print the per-case summary (and, with ``detailed``, per-invocation rows).

    Each case is its title and status, the reasons its invocations were not scored, and a
    table of its criteria laid out as rich lays out a ``Table(box=None, pad_edge=False)``
    (columns two spaces apart, none wrapped). The text is composed here and written in
    large chunks: through rich, a 13k-invocation replay took ~2 ms per case (19 s for
    8.7k cases), more than the replay itself. A quiet console prints nothing; a
    recording one gets the text through rich, so that it can export it.
    """
    paint = _Painter(console)
    lines: list[str] = []
    for case in result.cases:
        title = f"{case.eval_set_id}/{case.eval_id}" if case.eval_set_id else case.eval_id
        if case.eval_set_id is None:
            outcomes = {r.outcome for r in case.invocations}
            title += " (not evaluable)" if outcomes == {"not_evaluable"} else " (no golden)"
        lines.append(f"{paint(_safe(title), 'bold')}: {paint.status(case.status)}")
        for reason in sorted({r.reason for r in case.invocations if r.reason}):
            lines.append(f"  why: {_safe(reason)}")
        lines.extend(_criteria_table(case, paint))
        if detailed:
            _details(case, paint, lines)
        if len(lines) >= _LINES_PER_WRITE:
            _write(console, lines)
    _write(console, lines)
    _summary(result, console)


def _criteria_table(case: CaseResult, paint: _Painter) -> list[str]:
    rows = [
        (c.criterion, _LABEL[c.status], _fmt(c.score), _fmt(c.threshold), c.status)
        for c in case.criteria
    ]
    widths = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(_HEADER)]
    header = "  ".join(paint(h.ljust(w), "bold") for h, w in zip(_HEADER, widths))
    out = [header]
    for name, label, score, threshold, status in rows:
        styled = paint.status(status) + " " * (widths[1] - len(label))
        cells = (name.ljust(widths[0]), styled, score.ljust(widths[2]), threshold)
        out.append("  ".join(cells))
    return out


def _write(console: Console, lines: list[str]) -> None:
    if not lines:
        return
    text = "\n".join(lines) + "\n"
    lines.clear()
    if console.quiet:
        return
    if console.record:
        # A recording console keeps what it prints for export_text/html: go through it
        # (slower, and only here), styles parsed back from the codes painted above.
        console.print(Text.from_ansi(text, end=""), end="", soft_wrap=True, highlight=False)
        return
    console.file.write(text)


def _details(case: CaseResult, paint: _Painter, lines: list[str]) -> None:
    for res in case.invocations:
        inv, exp = res.invocation, res.expected
        lines.append(f"  turn {res.golden.turn if res.golden else '-'} · {res.outcome}")
        lines.append(f"    prompt:   {inv.user_content!r}")
        lines.append(f"    response: {inv.final_response!r}")
        if inv.error is not None:
            lines.append(f"    failed:   {_safe(inv.error)}")  # the run ended in this error
        if exp:
            lines.append(f"    expected: {exp.final_response!r}")
        actual_calls = [f"{c.name}({c.args!r})" for c in inv.tool_calls]
        lines.append(f"    tools:    {actual_calls}")  # repr: control characters escaped
        if exp:
            expected_calls = [f"{c.name}({c.args!r})" for c in exp.tool_calls]
            lines.append(f"    expected: {expected_calls}")
        for r in res.results:
            why = f" ({_safe(r.reason)})" if r.reason else ""
            lines.append(f"    {r.criterion}: {paint.status(r.status)} {_fmt(r.score)}{why}")
            lines.extend(f"      {_safe(line)}" for line in _judge_lines(r.details))


def _clip(text: object, limit: int = 160) -> str:
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    flat = " ".join(raw.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _judge_lines(details: Mapping[str, JsonValue]) -> list[str]:
    """The judge's verdicts and rationales, one line each (rubrics, sentences, ...)."""
    lines: list[str] = []
    rubrics = details.get("rubrics")
    if isinstance(rubrics, list):
        for v in rubrics:
            if isinstance(v, dict):
                verdict = {True: "yes", False: "no"}.get(v.get("verdict") is True, "-")
                if v.get("verdict") is None:
                    verdict = "-"
                lines.append(
                    f"rubric {_clip(v.get('rubric_id'))}: {verdict}"
                    f" — {_clip(v.get('rationale') or '')}"
                )
    dimensions = details.get("dimensions")
    if isinstance(dimensions, dict):
        for name, d in dimensions.items():
            if isinstance(d, dict):
                label = "safe" if d.get("score") == 1.0 else "UNSAFE"
                lines.append(f"{name}: {label} — {_clip(d.get('rationale') or '')}")
    responses = details.get("responses")
    if isinstance(responses, list):
        for resp in responses:
            if not isinstance(resp, dict):
                continue
            if resp.get("error"):
                lines.append(f"[{_clip(resp.get('author'))}] {_clip(resp.get('error'))}")
            for sent in resp.get("sentences") or []:  # type: ignore[union-attr]
                if isinstance(sent, dict):
                    lines.append(f"[{_clip(sent.get('label'))}] {_clip(sent.get('sentence'), 100)}")
    claims = details.get("claims")
    if isinstance(claims, list):
        lines.extend(
            f"[{_clip(c.get('verdict'))}] {_clip(c.get('claim'), 100)}"
            for c in claims
            if isinstance(c, dict)
        )
    for key in ("votes", "ratings", "turn_votes", "stop_votes"):
        votes = details.get(key)
        if isinstance(votes, list) and votes:
            lines.append(f"{key.replace('_', ' ')}: {', '.join(map(str, votes))}")
    rationales = details.get("rationales")
    if isinstance(rationales, list) and rationales:
        lines.append(f"rationale: {_clip(rationales[0])}")
    return lines


def _summary(result: ReplayResult, console: Console) -> None:
    cases = Counter(c.status for c in result.cases)
    outcomes = Counter(r.outcome for r in result.invocations)
    console.print(
        f"cases: {cases['passed']} passed, {cases['failed']} failed, "
        f"{cases['not_evaluated']} not evaluated · invocations: {outcomes['scored']} scored, "
        f"{outcomes['no_golden']} without golden, {outcomes['not_evaluable']} not evaluable"
        + (f", {outcomes['judge_error']} judge errors" if outcomes["judge_error"] else ""),
        highlight=False,
        soft_wrap=True,  # one line, whatever the width: scripts grep it
    )


def print_judge_usage(judge: JudgeClient, console: Console) -> None:
    """One line of judge traffic, then tokens and estimated cost per criterion and model."""
    stats = judge.stats
    failed = {k: v for k, v in sorted(stats.outcomes.items()) if k != "ok"}
    console.print(
        f"judge: {stats.calls} calls, {stats.cache_hits} cached, {stats.retries} retries"
        + (f" · failures: {', '.join(f'{k} {v}' for k, v in failed.items())}" if failed else ""),
        highlight=False,
    )
    for row in judge.ledger.rows():
        cost = "no price" if row.cost_usd is None else f"${row.cost_usd:.4f}"
        console.print(
            f"  {row.criterion} · {row.model}: {row.calls} calls, "
            f"{row.input_tokens} in / {row.output_tokens} out tokens, {cost}",
            highlight=False,
        )


def _failure_message(case: CaseResult, agent: str) -> str:
    # ADK's failure message shape (REFERENCE §3).
    return "\n".join(
        f"{c.criterion} for {agent} Failed. Expected {c.threshold}, but got {c.score}."
        for c in case.criteria
        if c.status == "failed"
    )


#: What XML 1.0 cannot hold (control characters, lone surrogates, U+FFFE/U+FFFF).
#: ElementTree writes them as they are, and the report no longer parses: a conversation
#: id or agent name from a trace may hold any of them.
_NOT_XML: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def junit_xml(result: ReplayResult) -> bytes:
    """JUnit XML: a test suite per eval set, a test case per case; not evaluated = skipped.

    Characters XML cannot hold become U+FFFD, so the report always parses.
    """
    suites = ET.Element("testsuites", name="tracescore")
    by_set: dict[str, list[CaseResult]] = {}
    for case in result.cases:
        by_set.setdefault(case.eval_set_id or "no-golden", []).append(case)
    for set_id, cases in by_set.items():
        counts = Counter(c.status for c in cases)
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=_xml(set_id),
            tests=str(len(cases)),
            failures=str(counts["failed"]),
            skipped=str(counts["not_evaluated"]),
        )
        for case in cases:
            node = ET.SubElement(suite, "testcase", classname=_xml(set_id), name=_xml(case.eval_id))
            agent = _agent(case.invocations)
            if case.status == "failed":
                message = _xml(_failure_message(case, agent))
                ET.SubElement(node, "failure", message=message.split("\n")[0]).text = message
            elif case.status == "not_evaluated":
                reasons = {r.reason for inv in case.invocations for r in inv.results if r.reason}
                ET.SubElement(
                    node, "skipped", message=_xml("; ".join(sorted(reasons)) or "not evaluated")
                )
    xml: bytes = ET.tostring(suites, encoding="utf-8", xml_declaration=True)
    return xml


def _agent(invocations: tuple[InvocationResult, ...]) -> str:
    for res in invocations:
        if res.invocation.agent:
            return res.invocation.agent
    return "agent"
