"""Readers for each telemetry convention, and the precedence that combines them."""
