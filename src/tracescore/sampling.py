"""Which live invocations get scored, and by which criteria.

Decisions are deterministic: the same trace (or conversation) gets the same answer on
every replica and every restart, so scale-out behind the Collector's ``loadbalancing``
exporter and re-runs agree.

* ``by="trace"`` hashes nothing: it compares the trace id's lower 64 bits with
  ``rate * 2**64``, exactly as the OTel SDK's ``TraceIdRatioBased`` sampler does, so a
  trace the SDK kept at ratio ``r`` is scored at ``r`` too.
* ``by="conversation"`` hashes the conversation (session) id, so every turn of a sampled
  conversation is scored and multi-turn criteria see whole sessions; invocations without
  a conversation id fall back to their trace id. The live scorer passes the key of a
  Responses API chain (:mod:`tracescore.response_chains`) it saw begin, so its turns,
  each naming the response it continues, are sampled together on that scorer.

Rates nest: a criterion at rate 0.1 scores a subset of the invocations a criterion at 0.5
scores (the same hash is compared with both bounds). Deterministic criteria run at 100% by
default, judged ones at ``judged_rate``. Filters (agent names, attributes) come first;
``always_score_errors`` overrides the rates for runs that ended in an error.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Final, Literal

from tracescore.criteria import Criterion
from tracescore.exceptions import ConfigError
from tracescore.model import Invocation
from tracescore.spans import AttrValue

__all__ = ["SamplingDecision", "SamplingPolicy", "sample_key"]

_SPACE: Final = 1 << 64
_LOW64: Final = _SPACE - 1


def _bound(rate: float) -> int:
    """``TraceIdRatioBased``'s bound: ids whose lower 64 bits are below it are kept."""
    return round(rate * _SPACE)


def sample_key(trace_id: str, conversation_id: str | None, *, by: str) -> int:
    """The 64-bit value compared with a rate's bound.

    Args:
        trace_id: Hex trace id (32 digits).
        conversation_id: The invocation's conversation id, if any.
        by: ``"trace"`` or ``"conversation"``.

    """
    if by == "conversation" and conversation_id:
        digest = hashlib.blake2b(conversation_id.encode("utf-8"), digest_size=8).digest()
        return int.from_bytes(digest, "big")
    try:
        return int(trace_id, 16) & _LOW64
    except ValueError:
        digest = hashlib.blake2b(trace_id.encode("utf-8"), digest_size=8).digest()
        return int.from_bytes(digest, "big")


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplingDecision:
    """What to do with one invocation.

    Attributes:
        criteria: Names of the criteria that score it (empty: sampled out).
        skipped: Names of the criteria sampled out for it.
        reason: Why it is sampled out entirely (``"rate"``, ``"agent filter"``,
            ``"attribute filter"``), None when some criterion scores it.

    """

    criteria: frozenset[str]
    skipped: tuple[str, ...]
    reason: str | None = None

    @property
    def sampled_out(self) -> bool:
        """True when no criterion scores the invocation."""
        return not self.criteria


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplingPolicy:
    """Sampling settings for live scoring (replays score everything).

    Attributes:
        rate: Share of invocations considered at all (0–1).
        by: ``"trace"`` (consistent with ``TraceIdRatioBased``) or ``"conversation"``.
        judged_rate: Default rate of LLM-judged criteria.
        deterministic_rate: Default rate of the other criteria.
        criteria: Per-criterion rates, overriding the two defaults.
        agents: Agent-name globs to score (empty: every agent).
        exclude_agents: Agent-name globs never scored.
        attributes: Required attribute values on the invocation's root span or its
            resource (compared as strings).
        always_score_errors: Score every criterion of runs that ended in an error,
            whatever the rates say (filters still apply).

    """

    rate: float = 1.0
    by: Literal["trace", "conversation"] = "trace"
    judged_rate: float = 0.1
    deterministic_rate: float = 1.0
    criteria: Mapping[str, float] = field(default_factory=dict)
    agents: Sequence[str] = ()
    exclude_agents: Sequence[str] = ()
    attributes: Mapping[str, str] = field(default_factory=dict)
    always_score_errors: bool = False

    def __post_init__(self) -> None:
        rates = {"rate": self.rate, "judged_rate": self.judged_rate}
        rates["deterministic_rate"] = self.deterministic_rate
        rates.update({f"criteria.{k}": v for k, v in self.criteria.items()})
        for name, value in rates.items():
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"sampling.{name}: {value} is not a rate between 0 and 1")
        if self.by not in ("trace", "conversation"):
            raise ConfigError(f"sampling.by: {self.by!r} is not one of trace, conversation")

    def check_criteria(self, criteria: Sequence[Criterion]) -> None:
        """Refuse per-criterion rates naming criteria that are not configured.

        Raises:
            ConfigError: a rate names an unknown criterion.

        """
        known = {c.name for c in criteria}
        unknown = sorted(set(self.criteria) - known)
        if unknown:
            raise ConfigError(
                f"sampling.criteria: {', '.join(unknown)} not among the configured criteria "
                f"({', '.join(sorted(known)) or 'none'})"
            )

    def criterion_rate(self, criterion: Criterion) -> float:
        """The rate a criterion runs at."""
        rate = self.criteria.get(criterion.name)
        if rate is not None:
            return rate
        return self.judged_rate if criterion.judged else self.deterministic_rate

    def _passes_filters(
        self, invocation: Invocation, attributes: Mapping[str, AttrValue]
    ) -> str | None:
        agent = invocation.agent or ""
        if self.agents and not any(fnmatchcase(agent, glob) for glob in self.agents):
            return "agent filter"
        if any(fnmatchcase(agent, glob) for glob in self.exclude_agents):
            return "agent filter"
        for key, wanted in self.attributes.items():
            value = attributes.get(key)
            if value is None or _as_text(value) != wanted:
                return "attribute filter"
        return None

    def decide(
        self,
        invocation: Invocation,
        criteria: Sequence[Criterion],
        *,
        attributes: Mapping[str, AttrValue] | None = None,
        errored: bool = False,
        conversation_id: str | None = None,
    ) -> SamplingDecision:
        """Which of ``criteria`` score ``invocation``.

        Args:
            invocation: The invocation.
            criteria: The configured criteria.
            attributes: The root span's attributes over its resource's (for filters).
            errored: The run ended in an error (a span with status ERROR).
            conversation_id: The conversation ``by = "conversation"`` hashes, when the
                caller knows it better than the invocation does (a Responses API chain
                whose turns each name the response they continue); None: the
                invocation's own ``conversation_id``.

        """
        names = tuple(c.name for c in criteria)
        filtered = self._passes_filters(invocation, attributes or {})
        if filtered is not None:
            return SamplingDecision(criteria=frozenset(), skipped=names, reason=filtered)
        if errored and self.always_score_errors:
            return SamplingDecision(criteria=frozenset(names), skipped=())
        conversation = conversation_id or invocation.conversation_id
        key = sample_key(invocation.trace_id, conversation, by=self.by)
        if key >= _bound(self.rate):
            return SamplingDecision(criteria=frozenset(), skipped=names, reason="rate")
        chosen = {c.name for c in criteria if key < _bound(self.criterion_rate(c))}
        skipped = tuple(n for n in names if n not in chosen)
        return SamplingDecision(
            criteria=frozenset(chosen), skipped=skipped, reason=None if chosen else "rate"
        )


def _as_text(value: AttrValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)
