"""Evaluation criteria: the scoring rules applied to assembled invocations."""
