"""What the judge client reports: a record per attempt, counters, and failure outcomes.

Every attempt of :meth:`tracescore.judge.client.JudgeClient.ask` (a cache hit and a
refusal to call included) becomes a :class:`JudgeCallRecord` for the observer (metrics),
and counts in the client's :class:`JudgeStats`. A failure's ``outcome`` label is bounded
(:func:`outcome_of`), and only some failures mean the judge is down (:func:`means_down`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tracescore.exceptions import (
    BudgetExhausted,
    JudgeBlocked,
    JudgeConnectionError,
    JudgeEmptyReply,
    JudgeError,
    JudgeHTTPError,
    JudgeTimeout,
    JudgeUnavailable,
    JudgeUnparsableReply,
)

__all__ = ["JudgeCallRecord", "JudgeStats", "means_down", "outcome_of"]


@dataclass(frozen=True, slots=True, kw_only=True)
class JudgeCallRecord:
    """One attempt (or cache hit, or refusal to call), as reported to the observer.

    Attributes:
        criterion: The criterion that asked.
        model: The judge model.
        outcome: ``ok``, ``cached``, ``timeout``, ``http_<status>``, ``connection_error``,
            ``blocked``, ``empty``, ``unparsable``, ``unavailable``, ``budget_exhausted``.
        duration_s: Wall time of the provider call (0 when not called).
        input_tokens: Prompt tokens billed (0 when not called).
        output_tokens: Reply tokens billed.
        cost_usd: Estimated cost of this attempt, None when the model has no price.

    """

    criterion: str
    model: str
    outcome: str
    duration_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None


@dataclass(slots=True)
class JudgeStats:
    """Counters since the client was created (also what ``--detailed`` prints)."""

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)

    def count(self, outcome: str) -> None:
        """Add one attempt with ``outcome``."""
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1


_OUTCOMES: dict[type[JudgeError], str] = {
    JudgeTimeout: "timeout",
    JudgeConnectionError: "connection_error",
    JudgeBlocked: "blocked",
    JudgeEmptyReply: "empty",
    JudgeUnparsableReply: "unparsable",
    JudgeUnavailable: "unavailable",
    BudgetExhausted: "budget_exhausted",
}


def outcome_of(exc: JudgeError) -> str:
    """The bounded ``outcome`` label of a failure (see :class:`JudgeCallRecord`)."""
    if isinstance(exc, JudgeHTTPError):
        return f"http_{exc.status}"
    return _OUTCOMES.get(type(exc), "error")


def means_down(exc: JudgeError) -> bool:
    """Whether a failure says the judge is down (fed to the breaker).

    429 is rate limiting and other 4xx our own mistake: neither means it is unavailable.
    """
    if isinstance(exc, JudgeHTTPError):
        return exc.status >= 500 or exc.status == 408
    return exc.retryable
