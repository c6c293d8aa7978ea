"""What judge calls cost: token usage, estimated spend, and an optional daily spend cap.

Costs are estimates from list prices (:data:`DEFAULT_PRICES`, overridable in settings) and
the token counts the provider reports; they are not invoices. A model with no known price
still has its calls and tokens counted, but contributes no cost (and so never trips the cap).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timezone
from types import MappingProxyType

from tracescore.exceptions import BudgetExhausted

__all__ = ["DEFAULT_PRICES", "ModelPrice", "PriceTable", "SpendLedger", "UsageRow"]

logger = logging.getLogger(__name__)

_MODELS_PREFIX = "models/"
_NEAR_CAP_FRACTION = 0.8


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelPrice:
    """The price of one model, in US dollars per million tokens.

    Attributes:
        input_per_mtok: USD per 1M input (prompt) tokens.
        output_per_mtok: USD per 1M output tokens (including any thinking tokens).

    Raises:
        ValueError: If a price is negative or not finite.

    """

    input_per_mtok: float
    output_per_mtok: float

    def __post_init__(self) -> None:
        for name in ("input_per_mtok", "output_per_mtok"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


#: List prices at the time of writing (2025 public Google Gemini API and OpenAI pricing, paid
#: tier, standard context length). They go stale: override them in settings.
DEFAULT_PRICES: Mapping[str, ModelPrice] = MappingProxyType(
    {
        "gemini-2.5-flash": ModelPrice(input_per_mtok=0.30, output_per_mtok=2.50),
        "gemini-2.5-flash-lite": ModelPrice(input_per_mtok=0.10, output_per_mtok=0.40),
        "gemini-2.5-pro": ModelPrice(input_per_mtok=1.25, output_per_mtok=10.00),
        "gemini-2.0-flash": ModelPrice(input_per_mtok=0.10, output_per_mtok=0.40),
        "gpt-4o-mini": ModelPrice(input_per_mtok=0.15, output_per_mtok=0.60),
        "gpt-4o": ModelPrice(input_per_mtok=2.50, output_per_mtok=10.00),
        "gpt-4.1-mini": ModelPrice(input_per_mtok=0.40, output_per_mtok=1.60),
    }
)


class PriceTable:
    """Prices by model name, resolving versioned and prefixed names to a known model.

    Args:
        prices: Prices to add to (and override) the defaults.
        include_defaults: Start from :data:`DEFAULT_PRICES`; ``False`` uses ``prices`` only.

    """

    def __init__(
        self, prices: Mapping[str, ModelPrice] | None = None, *, include_defaults: bool = True
    ) -> None:
        self._prices: dict[str, ModelPrice] = dict(DEFAULT_PRICES) if include_defaults else {}
        self._prices.update(prices or {})
        # Longest first, so "gemini-2.5-flash-lite-001" finds "-lite" before "gemini-2.5-flash".
        self._by_length = sorted(self._prices, key=len, reverse=True)

    def price(self, model: str) -> ModelPrice | None:
        """The price of ``model``, or ``None`` if unknown.

        Lookup order: the exact name; the name without a ``models/`` prefix (as the Gemini
        API reports it); else the longest known name that the model name starts with,
        followed by ``-`` (``gemini-2.5-flash-001`` and ``gemini-2.5-flash-preview-05-20``
        use ``gemini-2.5-flash``, while ``gemini-2.5-flash-lite`` has its own entry).
        """
        found = self._prices.get(model)
        if found is not None:
            return found
        name = model.removeprefix(_MODELS_PREFIX)
        found = self._prices.get(name)
        if found is not None:
            return found
        for known in self._by_length:
            if name.startswith(known + "-"):
                return self._prices[known]
        return None

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        """Estimated cost in USD of one call, or ``None`` if the model has no price.

        Raises:
            ValueError: If a token count is negative.

        """
        if input_tokens < 0 or output_tokens < 0:
            raise ValueError(f"token counts must be >= 0, got {input_tokens}, {output_tokens}")
        price = self.price(model)
        if price is None:
            return None
        return (
            input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok
        ) / 1_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageRow:
    """Cumulative usage of one model by one criterion.

    Attributes:
        criterion: The criterion name.
        model: The judge model name, as recorded.
        calls: Calls recorded.
        input_tokens: Input tokens over those calls.
        output_tokens: Output tokens over those calls.
        cost_usd: Estimated cost in USD, ``None`` when the model has no price.

    """

    criterion: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None


@dataclass(slots=True)
class _Usage:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None


class SpendLedger:
    """Token usage and estimated cost per criterion and model; an optional daily spend cap.

    The cap applies to the UTC calendar day: spend is counted from 00:00 UTC and starts
    again at 0 when the UTC date changes. Usage rows are cumulative since the ledger was made.

    Call :meth:`check` before a judge call and :meth:`record` after it. Calls already in
    flight when the cap is reached still complete and are recorded, so the day's spend may
    end a little above the cap. Single event loop (or thread) only; not thread-safe.

    Args:
        prices: Prices used to turn tokens into dollars.
        daily_cap_usd: Spend per UTC day after which :meth:`check` refuses, ``None`` for
            no cap.
        clock: Wall-clock time in epoch seconds (it decides the UTC date).

    Raises:
        ValueError: If ``daily_cap_usd`` is negative or not finite.

    """

    def __init__(
        self,
        prices: PriceTable,
        *,
        daily_cap_usd: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if daily_cap_usd is not None and not (daily_cap_usd >= 0 and math.isfinite(daily_cap_usd)):
            raise ValueError(f"daily_cap_usd must be a finite number >= 0, got {daily_cap_usd!r}")
        self._prices = prices
        self._cap = daily_cap_usd
        self._clock = clock
        self._usage: dict[tuple[str, str], _Usage] = {}
        self._day = self._today()
        self._spent = 0.0
        self._unpriced_warned: set[str] = set()

    @property
    def daily_cap_usd(self) -> float | None:
        """The daily cap in USD, ``None`` when there is none."""
        return self._cap

    @property
    def spent_today(self) -> float:
        """Estimated USD spent since 00:00 UTC today."""
        self._roll_day()
        return self._spent

    def snapshot(self) -> tuple[float | None, float]:
        """``(daily cap, spend today)`` without touching the ledger, for other threads.

        Metrics read this from the scraping thread while the judge's loop records calls:
        it only reads two fields (a spend recorded on a previous UTC day reads as 0),
        so a scrape never rolls the day or races a :meth:`record`.
        """
        day, spent = self._day, self._spent
        return self._cap, spent if day == self._today() else 0.0

    @property
    def near_cap(self) -> bool:
        """Whether today's spend has reached 80% of the cap (always ``False`` with no cap)."""
        return self._cap is not None and self.spent_today >= _NEAR_CAP_FRACTION * self._cap

    def check(self) -> None:
        """Refuse a new judge call once today's spend has reached the cap.

        Raises:
            BudgetExhausted: If there is a cap and today's spend is at or above it.

        """
        if self._cap is None:
            return
        spent = self.spent_today
        if spent >= self._cap:
            raise BudgetExhausted(
                f"daily judge budget of ${_usd(self._cap)} exhausted (spent ${_usd(spent)} today)"
            )

    def record(
        self, *, criterion: str, model: str, input_tokens: int, output_tokens: int
    ) -> float | None:
        """Record one finished judge call.

        Args:
            criterion: The criterion that made the call.
            model: The judge model (as configured or as reported by the provider).
            input_tokens: Input tokens the provider reported.
            output_tokens: Output tokens the provider reported.

        Returns:
            This call's estimated cost in USD, or ``None`` if the model has no price (logged
            once per model).

        Raises:
            ValueError: If a token count is negative.

        """
        cost = self._prices.cost(model, input_tokens, output_tokens)
        usage = self._usage.setdefault((criterion, model), _Usage())
        usage.calls += 1
        usage.input_tokens += input_tokens
        usage.output_tokens += output_tokens
        if cost is None:
            if model not in self._unpriced_warned:
                self._unpriced_warned.add(model)
                logger.warning(
                    "no price known for judge model %r: its tokens are counted but not its "
                    "cost, and it does not count towards the daily cap; set its price in settings",
                    model,
                )
            return None
        usage.cost_usd = (usage.cost_usd or 0.0) + cost
        self._roll_day()
        self._spent += cost
        return cost

    def rows(self) -> list[UsageRow]:
        """Cumulative usage since the ledger was made, sorted by (criterion, model)."""
        return [
            UsageRow(
                criterion=criterion,
                model=model,
                calls=usage.calls,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cost_usd=usage.cost_usd,
            )
            for (criterion, model), usage in sorted(self._usage.items())
        ]

    def _today(self) -> date:
        return datetime.fromtimestamp(self._clock(), tz=timezone.utc).date()

    def _roll_day(self) -> None:
        today = self._today()
        if today != self._day:
            self._day = today
            self._spent = 0.0


def _usd(amount: float) -> str:
    """Dollars with at least 2 and at most 4 decimals: ``5.00``, ``0.1234``."""
    text = f"{amount:.4f}".rstrip("0")
    whole, _, cents = text.partition(".")
    return f"{whole}.{cents.ljust(2, '0')}"
