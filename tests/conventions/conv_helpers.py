"""Helpers for convention fixture tests: build traces by hand, convert SDK records, summarise.

Hand-built fixtures follow the emitters' specs (cited in each test); real ones come from
the OTel SDK's in-memory exporters (pydantic-ai, ADK) or from committed JSON samples in
``tests/fixtures`` written by the ``generate_*.py`` scripts there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracescore.importer import ImportStats, import_paths
from tracescore.model import Invocation, group_conversations
from tracescore.spans import (
    STATUS_ERROR,
    STATUS_OK,
    STATUS_UNSET,
    AttrValue,
    LogRecord,
    SpanEvent,
    SpanRecord,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


@dataclass
class TraceBuilder:
    """Builds one trace: spans get ids and increasing start times in creation order."""

    trace_id: str = TRACE_ID
    scope: str | None = None
    spans: list[SpanRecord] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)
    clock: int = 1_700_000_000_000_000_000

    def _tick(self) -> int:
        self.clock += 1_000_000
        return self.clock

    def span(
        self,
        name: str,
        attrs: Mapping[str, AttrValue] | None = None,
        *,
        parent: SpanRecord | None = None,
        events: Iterable[tuple[str, Mapping[str, AttrValue]]] = (),
        error: str | None = None,
        scope: str | None = None,
    ) -> SpanRecord:
        start = self._tick()
        span = SpanRecord(
            trace_id=self.trace_id,
            span_id=f"{len(self.spans) + 1:016x}",
            parent_span_id=parent.span_id if parent else None,
            name=name,
            start_ns=start,
            end_ns=start + 500_000,
            attributes=dict(attrs or {}),
            events=[
                SpanEvent(name=n, time_ns=start + i + 1, attributes=dict(a))
                for i, (n, a) in enumerate(events)
            ],
            status_code=STATUS_ERROR if error else STATUS_UNSET,
            status_message=error,
            scope=scope or self.scope,
        )
        self.spans.append(span)
        return span

    def log(
        self,
        span: SpanRecord,
        name: str,
        body: AttrValue = None,
        attrs: Mapping[str, AttrValue] | None = None,
        *,
        name_in_attribute: bool = False,
    ) -> LogRecord:
        """A log record correlated with ``span``; the event name goes in ``event.name``
        instead of ``eventName`` when ``name_in_attribute`` (older emitters)."""
        attributes = dict(attrs or {})
        if name_in_attribute:
            attributes["event.name"] = name
        record = LogRecord(
            trace_id=self.trace_id,
            span_id=span.span_id,
            time_ns=self._tick(),
            event_name=None if name_in_attribute else name,
            body=body,
            attributes=attributes,
        )
        self.logs.append(record)
        return record


def to_json(value: Any) -> str:
    """Compact JSON, as emitters write it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _attr_value(value: Any) -> AttrValue:
    if isinstance(value, tuple):
        return [_attr_value(v) for v in value]
    if isinstance(value, list):
        return [_attr_value(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _attr_value(v) for k, v in value.items()}
    scalar: AttrValue = value  # str, bool, int, float, bytes or None
    return scalar


_KIND = {"UNSPECIFIED": 0, "INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}


def sample_records(sample: dict[str, Any]) -> tuple[list[SpanRecord], list[LogRecord]]:
    """The spans and logs of a sample written by ``adk_harness.run_to_sample``."""
    status = {"UNSET": STATUS_UNSET, "OK": STATUS_OK, "ERROR": STATUS_ERROR}
    spans = [
        SpanRecord(
            trace_id=s["trace_id"],
            span_id=s["span_id"],
            parent_span_id=s["parent_span_id"],
            name=s["name"],
            kind=_KIND.get(str(s.get("kind")), 0),
            start_ns=s["start"],
            end_ns=s["end"],
            attributes=s["attributes"],
            events=[
                SpanEvent(name=e["name"], time_ns=e["timestamp"], attributes=e["attributes"])
                for e in s["events"]
            ],
            status_code=status[s["status"]["code"]],
            status_message=s["status"]["description"],
            scope=(s["scope"] or {}).get("name"),
        )
        for s in sample["spans"]
    ]
    logs = [
        LogRecord(
            trace_id=r["trace_id"],
            span_id=r["span_id"],
            time_ns=r["timestamp"] or r["observed_timestamp"] or 0,
            event_name=r["event_name"],
            body=r["body"],
            attributes=r["attributes"],
            scope=(r["scope"] or {}).get("name"),
        )
        for r in sample.get("logs", [])
    ]
    return spans, logs


def load_sample(path: Path) -> tuple[list[SpanRecord], list[LogRecord], dict[str, Any]]:
    """Spans and logs of a JSON sample written by ``adk_harness.run_to_sample``, and the sample."""
    sample = json.loads(path.read_text(encoding="utf-8"))
    spans, logs = sample_records(sample)
    return spans, logs, sample


def by_trace(
    spans: Sequence[SpanRecord], logs: Sequence[LogRecord] = ()
) -> list[tuple[list[SpanRecord], list[LogRecord]]]:
    """Spans and logs grouped by trace id, in order of first span start."""
    groups: dict[str, tuple[list[SpanRecord], list[LogRecord]]] = {}
    for span in sorted(spans, key=lambda s: s.start_ns):
        groups.setdefault(span.trace_id, ([], []))[0].append(span)
    for log in logs:
        if log.trace_id in groups:
            groups[log.trace_id][1].append(log)
    return list(groups.values())


def summary(inv: Invocation) -> dict[str, Any]:
    """The fields every fixture test asserts in full."""
    return {
        "user": inv.user_content,
        "tool_calls": [
            {"name": c.name, "args": c.args, "id": c.id, "result": c.result, "error": c.error}
            for c in inv.tool_calls
        ],
        "intermediate": [(t.author, t.text) for t in inv.intermediate_responses],
        "final": inv.final_response,
        "status": inv.status,
        "reason_code": inv.reason_code,
        "usage": (inv.usage.input_tokens, inv.usage.output_tokens),
        "source": (inv.provenance.get("user_content"), inv.provenance.get("responses")),
    }


def run_harness(harness: Path, out: Path, *args: str, env: Mapping[str, str] = {}) -> Path:
    """Run a ``tests/*_harness.py`` (real framework runs) in a child process into ``out``.

    The child gets this environment without the variables that would send its telemetry
    or its model calls elsewhere (OTLP endpoints, vendor keys and tracing switches),
    plus ``env``.
    """
    drop = ("OTEL_EXPORTER_", "OTEL_TRACES_", "OPENINFERENCE_", "OPENAI_", "LANGSMITH_")
    base = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    proc = subprocess.run(
        [sys.executable, str(harness), *args, str(out)],
        env={**base, "LANGSMITH_TRACING": "false", **env},
        cwd=harness.parent,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def imported(path: Path) -> list[Invocation]:
    """The invocations ``tracescore import`` reads from ``path`` (no bad record allowed)."""
    stats = ImportStats()
    invocations = list(import_paths([path], stats))
    assert stats.bad_records == 0
    return invocations


def run_view(inv: Invocation, *, authors: bool = False, failed: bool = True) -> dict[str, Any]:
    """``inv`` as the real-framework agreement tests compare it with the framework's record.

    ``authors`` pairs each intermediate text with its agent; ``failed`` flags each tool
    call whose execution failed (for frameworks that record it).
    """
    calls: list[dict[str, Any]] = []
    for c in inv.tool_calls:
        call = {"name": c.name, "args": c.args, "id": c.id, "result": c.result}
        if failed:
            call["failed"] = c.error is not None
        calls.append(call)
    return {
        "agents": list(inv.agents),
        "user": inv.user_content,
        "calls": calls,
        "intermediate": [
            [r.author, r.text] if authors else r.text for r in inv.intermediate_responses
        ],
        "final": inv.final_response,
    }


def agreeing(recorded: Path, scenario: str, **view_options: bool) -> list[Invocation]:
    """The invocations imported from ``<scenario>.jsonl``, held equal to the framework's
    record of that scenario in ``expected.json`` (as :func:`run_view` shows them)."""
    expected = json.loads((recorded / "expected.json").read_text())[scenario]
    ours = imported(recorded / f"{scenario}.jsonl")
    assert [run_view(i, **view_options) for i in ours] == expected
    return ours


def adk_like_view(inv: Invocation) -> dict[str, Any]:
    """``inv`` as :func:`adk_harness.adk_view` reduces ADK's own invocation."""
    intermediate: list[tuple[str, str]] = []
    for r in inv.intermediate_responses:
        # ADK lists each text part; we join a response's parts with "\n" like ADK's text.
        intermediate.extend((r.author, t) for t in r.text.split("\n"))
    return {
        "user": inv.user_content,
        "calls": [(c.name, c.args) for c in inv.tool_calls],
        "results": [c.result for c in inv.tool_calls],
        "intermediate": intermediate,
        "final": inv.final_response,
    }


def adk_session_turns(invocations: list[Invocation], session_id: str) -> list[Invocation]:
    """The turns of the one session ``invocations`` hold, in order.

    Agents run as tools (AgentTool) are invocations of their own, not session turns.
    """
    turns = [i for i in invocations if i.parent_tool_span_id is None]
    [conversation] = group_conversations(turns)
    assert conversation.conversation_id == session_id
    return list(conversation.invocations)


def _any_branch_order(view: dict[str, Any]) -> dict[str, Any]:
    """``view`` with its calls (and their results) and texts in a fixed order."""
    pairs = sorted(zip(view["calls"], view["results"], strict=True), key=json.dumps)
    return {
        **view,
        "calls": [c for c, _ in pairs],
        "results": [r for _, r in pairs],
        "intermediate": sorted(view["intermediate"]),
    }


def assert_turns_equal_adks(
    turns: list[Invocation],
    adk: Mapping[str, Any],
    scenario: str,
    *,
    lost_result: int | None,
    any_branch_order: bool = False,
) -> None:
    """``turns`` are the turns ADK derived (a recorded run's ``expected.json`` entry).

    Same invocation ids, user text, calls with arguments and results, intermediate texts
    and final answer; each call joined to its tool span; evaluable. ``lost_result`` is
    the index of a turn-ending call (transfer, exit_loop) whose result no later request
    shows in this mode, where ADK has ``{"result": None}``. ``any_branch_order``: the
    order of concurrent branches' calls and texts is not compared (a trace that keeps no
    time of each model call cannot tell which branch's reply came back first).
    """
    assert bool(adk["errors"]) == (scenario == "tool_raises"), adk["errors"]
    assert [t.invocation_id for t in turns] == adk["invocation_ids"]
    for mine, theirs in zip(turns, adk["turns"], strict=True):
        got = json.loads(json.dumps(adk_like_view(mine), ensure_ascii=False))
        if scenario == "tool_raises":
            # ADK has no response for the call that raised; we carry the error instead.
            theirs["results"] = got["results"]
            assert mine.tool_calls[-1].error == "ConnectionError"
        if lost_result is not None:
            assert theirs["results"][lost_result] == {"result": None}
            theirs["results"][lost_result] = None
        if any_branch_order:
            assert _any_branch_order(got) == _any_branch_order(theirs)
        else:
            assert got == theirs
        assert mine.status == "ok", mine.reason
        # Each call joined to its tool span: none left over, none counted twice.
        assert not [w for w in mine.warnings if "matches no model output" in w]
        assert all(c.span_id is not None for c in mine.tool_calls)


def assert_paused(inv: Invocation, sign: str) -> None:
    """``inv`` is a run paused for input, as ``sign`` (the framework's mark) says.

    Not evaluable with reason code ``paused``, no error, no warning (a paused run did not
    "end on tool calls"), and the reason that names the sign and the run that goes on.
    """
    assert (inv.status, inv.reason_code, inv.error, inv.warnings) == (
        "not_evaluable",
        "paused",
        None,
        (),
    )
    assert inv.reason == (
        f"the run paused for input ({sign}): its turn goes on in the run that resumes it,"
        " which is scored"
    )


def load_recorded(out: Path, name: str) -> tuple[list[Invocation], Any]:
    """Run ``name`` of a harness's recordings in ``out``: imported, and what ADK recorded."""
    return imported(out / name), json.loads((out / "expected.json").read_text())[name]


#: The model's last reply in ``after_model_rewrite`` (ADK's session has it with ``#``s).
MODELS_FINAL_REPLY = "Your card 4111 is on file; Paris is 21.5°C."


def asserted_known_gap(
    invocations: list[Invocation],
    adk: Mapping[str, Any],
    *,
    writer: str,
    schema: str,
    content: str,
    scenario: str,
) -> bool:
    """Asserts how a run reads where the trace cannot hold what ADK's session does.

    ``writer`` is what wrote the trace: an OpenInference instrumentor's mode
    (``adk``, ``google-genai``, their ``-sse`` forms) or ``gemini-sse`` (ADK's own
    telemetry, streamed). Returns False for a run without such a gap, which must then
    equal ADK's whole. The gaps (README, *Agreement with ADK*):

    - an ``after_model_callback``'s rewrite is in no model call's output: the final
      answer is the model's, though calls and results agree;
    - a ``before_model_callback``'s answer opens no model call: ADK's schema 2 writes
      it nowhere, and the google-genai client never sees it (so captures nothing of it
      where ADK captured nothing either);
    - ADK's schema 2 writes a streamed thought as plain text, so it joins the answer;
    - schema 2 writes ADK's invocation id only on model calls.
    """
    streamed = writer.endswith("sse")
    only_adk = writer == "gemini-sse"
    if scenario == "after_model_rewrite":
        [turn] = adk_session_turns(invocations, adk["session_id"])
        got, theirs = adk_like_view(turn), adk["turns"][0]
        assert json.loads(json.dumps(got["calls"])) == theirs["calls"]
        assert (got["final"], theirs["final"]) == (
            MODELS_FINAL_REPLY,
            "Your card #### is on file; Paris is ##.#°C.",
        )
        return True
    if scenario == "guardrail_before_model" and (
        (only_adk or writer.startswith("google-genai"))
        and (schema == "v2" or content == "NO_CONTENT")
    ):
        [turn] = adk_session_turns(invocations, adk["session_id"])
        assert turn.status == "not_evaluable"
        assert adk["model_calls"] == 0
        return True
    if scenario == "guardrail_before_model" and writer.startswith("adk") and schema == "v2":
        # The instrumentor records the guardrail's turn whole, but schema 2 writes ADK's
        # invocation id only on model calls: the run is named by its trace and root span.
        [turn] = adk_session_turns(invocations, adk["session_id"])
        got = json.loads(json.dumps(adk_like_view(turn)))
        assert got == adk["turns"][0]
        assert turn.status == "ok"
        assert turn.invocation_id == f"{turn.trace_id}:{turn.root_span_id}"
        assert (turn.inference_calls, turn.framework_replies) == (0, 1)
        return True
    adk_captured = content in ("SPAN_ONLY", "SPAN_AND_EVENT", "EVENT_ONLY")
    if scenario == "thinking" and streamed and schema == "v2" and adk_captured:
        [turn] = adk_session_turns(invocations, adk["session_id"])
        got, theirs = json.loads(json.dumps(adk_like_view(turn))), adk["turns"][0]
        thought, answer = theirs["final"].split("\n")
        assert got["final"] == thought + answer
        assert {**got, "final": None} == {**theirs, "final": None}
        return True
    return False
