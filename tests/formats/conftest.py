"""Real SDK telemetry shared by the format tests (built once per session; treat as read-only)."""

from __future__ import annotations

import pytest
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.trace import ReadableSpan
from otlp_helpers import agent_logs, agent_spans


@pytest.fixture(scope="session")
def sdk_spans() -> list[ReadableSpan]:
    """Three agent runs (12 spans, 3 traces) from the real SDK."""
    return agent_spans(3)


@pytest.fixture(scope="session")
def sdk_logs() -> list[ReadableLogRecord]:
    """GenAI content events from the real SDK: two inside a span, one outside."""
    return agent_logs()
