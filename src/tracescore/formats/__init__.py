"""Readers that turn trace input (SDK spans, OTLP protobuf, OTLP JSON, files) into records."""

from tracescore.formats.base import Batch

__all__ = ["Batch"]
