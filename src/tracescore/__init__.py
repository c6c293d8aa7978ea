"""tracescore: score LLM agents in production from their OpenTelemetry traces."""

from tracescore.exceptions import ConfigError, InputError, TraceFormatError, TracescoreError
from tracescore.model import AgentText, Conversation, Invocation, TokenUsage, ToolCall
from tracescore.spans import LogRecord, SpanEvent, SpanRecord
from tracescore.trajectory import build_invocations

__all__ = [
    "AgentText",
    "ConfigError",
    "Conversation",
    "InputError",
    "Invocation",
    "LogRecord",
    "SpanEvent",
    "SpanRecord",
    "TokenUsage",
    "ToolCall",
    "TraceFormatError",
    "TracescoreError",
    "build_invocations",
]

__version__ = "0.1.0"
