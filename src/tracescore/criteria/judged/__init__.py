"""LLM-judged criteria (registered on import) and their shared contract."""

from tracescore.criteria.judged import (
    hallucinations,
    quality,
    response_match,
    rubrics,
    user_simulator,
)
from tracescore.criteria.judged.base import (
    NO_JUDGE,
    JudgedCriterion,
    JudgeModelOptions,
    JudgeSession,
    Samples,
    json_schema,
    majority,
)

__all__ = [
    "NO_JUDGE",
    "JudgeModelOptions",
    "JudgeSession",
    "JudgedCriterion",
    "Samples",
    "hallucinations",
    "json_schema",
    "majority",
    "quality",
    "response_match",
    "rubrics",
    "user_simulator",
]
