"""Smoke tests for the ADK telemetry harness (``tests/adk_harness.py``).

Every scenario runs in every schema/content mode inside this one pytest
process, which also proves that mode switching via env vars is reliable.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from adk_harness import (
    CONTENT_MODES,
    MANAGED_ENV_VARS,
    SCENARIOS,
    SCHEMAS,
    AdkRun,
    ContentMode,
    SchemaVersion,
    run_scenario,
)

ADK_SCOPE = "gcp.vertex.agent"
MCP_SCOPE = "mcp-python-sdk"
MODES: list[tuple[SchemaVersion, ContentMode]] = [
    (schema, content) for schema in SCHEMAS for content in CONTENT_MODES
]


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _generate_content_spans(run: AdkRun) -> list[ReadableSpan]:
    return run.spans_named("generate_content")


@pytest.mark.parametrize(("schema", "content"), MODES, ids=[f"{s}-{c}" for s, c in MODES])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_runs_and_is_captured(
    name: str, schema: SchemaVersion, content: ContentMode
) -> None:
    """Each scenario runs, emits ADK spans and yields ADK's invocation count."""
    run = run_scenario(name, schema=schema, content=content)
    scenario = run.spec

    assert run.spans, "no spans captured"
    scopes = {span.instrumentation_scope.name for span in run.spans if span.instrumentation_scope}
    # The MCP SDK traces its own side of the calls (and its session set-up, in traces of
    # its own); nothing else but ADK emits.
    assert scopes == ({ADK_SCOPE, MCP_SCOPE} if name == "mcp_tools" else {ADK_SCOPE})
    adk = [
        s
        for s in run.spans
        if s.instrumentation_scope and s.instrumentation_scope.name == ADK_SCOPE
    ]
    assert len(run.adk_invocations) == scenario.expected_invocations
    assert bool(run.errors) == scenario.expect_error, run.errors
    assert all(queue.remaining == 0 for queue in run.queues), "script not fully consumed"
    # One trace per user turn; the root span names the schema.
    assert len({s.context.trace_id for s in adk if s.context}) == len(scenario.user_messages)
    roots = [span for span in adk if span.parent is None]
    assert len(roots) == len(scenario.user_messages)
    expected_root = "invocation" if schema == "v1" else "invoke_workflow "
    assert all(root.name.startswith(expected_root) for root in roots)
    # A guardrail answers in the model's place: the model is never called.
    assert bool(_generate_content_spans(run)) != (name == "guardrail_before_model")


@pytest.mark.parametrize(("schema", "content"), MODES, ids=[f"{s}-{c}" for s, c in MODES])
def test_content_capture_follows_mode(schema: SchemaVersion, content: ContentMode) -> None:
    """Message content appears exactly where the mode says it should."""
    run = run_scenario("two_sequential_tools", schema=schema, content=content)
    gen_spans = _generate_content_spans(run)
    tool_spans = [s for s in run.spans_named("execute_tool") if "(merged)" not in s.name]
    assert len(gen_spans) == 3
    assert len(tool_spans) == 2

    if schema == "v1":
        call_llm = run.spans_named("call_llm")
        assert len(call_llm) == 3
        legacy_on = content != "NO_CONTENT"
        assert all(
            (_attrs(s)["gcp.vertex.agent.llm_request"] != "{}") == legacy_on for s in call_llm
        )
        assert all(
            (_attrs(s)["gcp.vertex.agent.tool_call_args"] != "{}") == legacy_on for s in tool_spans
        )
        assert all("gen_ai.input.messages" not in _attrs(s) for s in gen_spans)
        # Stable-semconv log events, content elided unless a log-bearing mode.
        names = {record.log_record.event_name for record in run.logs}
        assert names == {"gen_ai.system.message", "gen_ai.user.message", "gen_ai.choice"}
        bodies = [record.log_record.body for record in run.logs]
        elided = all(isinstance(b, dict) and b.get("content") == "<elided>" for b in bodies)
        assert elided == (content not in ("EVENT_ONLY", "SPAN_AND_EVENT"))
    else:
        assert not run.spans_named("call_llm")
        on_span = content in ("SPAN_ONLY", "SPAN_AND_EVENT")
        on_log = content in ("EVENT_ONLY", "SPAN_AND_EVENT")
        assert all(("gen_ai.input.messages" in _attrs(s)) == on_span for s in gen_spans)
        assert all(("gen_ai.tool.call.arguments" in _attrs(s)) == on_span for s in tool_spans)
        details = [
            r
            for r in run.logs
            if r.log_record.event_name == "gen_ai.client.inference.operation.details"
        ]
        assert len(details) == 3
        assert all(
            ("gen_ai.input.messages" in dict(r.log_record.attributes or {})) == on_log
            for r in details
        )


def test_modes_switch_back_and_forth_and_env_is_restored() -> None:
    """Alternating modes in one process never leaks settings between runs."""
    before = {key: os.environ.get(key) for key in MANAGED_ENV_VARS}
    sequence: list[tuple[SchemaVersion, ContentMode]] = [
        ("v2", "SPAN_ONLY"),
        ("v1", "default"),
        ("v2", "NO_CONTENT"),
        ("v2", "SPAN_ONLY"),
    ]
    for schema, content in sequence:
        run = run_scenario("no_tools", schema=schema, content=content)
        (gen,) = _generate_content_spans(run)
        assert bool(run.spans_named("call_llm")) == (schema == "v1")
        assert ("gen_ai.output.messages" in _attrs(gen)) == (
            schema == "v2" and content == "SPAN_ONLY"
        )
        assert {key: os.environ.get(key) for key in MANAGED_ENV_VARS} == before


def test_tool_raises_aborts_the_run() -> None:
    """ADK 2.13 propagates an unhandled tool exception; the span records it."""
    run = run_scenario("tool_raises", schema="v2", content="SPAN_ONLY")
    assert run.error is not None
    assert run.error.startswith("ConnectionError")
    (tool,) = run.spans_named("execute_tool")
    assert tool.status.status_code.name == "ERROR"
    assert _attrs(tool)["error.type"] == "ConnectionError"
    assert _attrs(tool)["gen_ai.tool.call.id"] == "<not specified>"
    (invocation,) = run.adk_invocations
    assert invocation.final_response is None
