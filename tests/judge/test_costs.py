"""Price lookup, cost arithmetic, the usage ledger and the daily spend cap."""

from __future__ import annotations

import logging
from datetime import datetime, timezone

import pytest

from tracescore.exceptions import BudgetExhausted, JudgeError
from tracescore.judge.costs import DEFAULT_PRICES, ModelPrice, PriceTable, SpendLedger, UsageRow


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


FLASH = DEFAULT_PRICES["gemini-2.5-flash"]
LITE = DEFAULT_PRICES["gemini-2.5-flash-lite"]


def test_default_prices_are_the_documented_list_prices() -> None:
    assert DEFAULT_PRICES["gemini-2.5-flash"] == ModelPrice(
        input_per_mtok=0.30, output_per_mtok=2.50
    )
    assert DEFAULT_PRICES["gemini-2.5-flash-lite"] == ModelPrice(
        input_per_mtok=0.10, output_per_mtok=0.40
    )
    assert DEFAULT_PRICES["gpt-4o"] == ModelPrice(input_per_mtok=2.50, output_per_mtok=10.00)
    assert set(DEFAULT_PRICES) == {
        "gemini-2.5-flash",
        "gemini-2.5-flash-lite",
        "gemini-2.5-pro",
        "gemini-2.0-flash",
        "gpt-4o-mini",
        "gpt-4o",
        "gpt-4.1-mini",
    }
    with pytest.raises(TypeError):
        DEFAULT_PRICES["x"] = FLASH  # type: ignore[index]


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gemini-2.5-flash", "gemini-2.5-flash"),
        ("gemini-2.5-flash-001", "gemini-2.5-flash"),
        ("gemini-2.5-flash-preview-05-20", "gemini-2.5-flash"),
        ("gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),  # its own entry, not flash's
        ("gemini-2.5-flash-lite-preview-06-17", "gemini-2.5-flash-lite"),  # longer prefix wins
        ("models/gemini-2.5-pro", "gemini-2.5-pro"),
        ("models/gemini-2.5-flash-lite-001", "gemini-2.5-flash-lite"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
    ],
)
def test_price_lookup_rules(model: str, expected: str) -> None:
    assert PriceTable().price(model) == DEFAULT_PRICES[expected]


@pytest.mark.parametrize(
    "model", ["gemini-2.5-flashy", "claude-3", "gemini-2.5", "", "models/", "x-gemini-2.5-flash"]
)
def test_unknown_models_have_no_price(model: str) -> None:
    assert PriceTable().price(model) is None
    assert PriceTable().cost(model, 1000, 1000) is None


def test_overrides_and_include_defaults() -> None:
    mine = ModelPrice(input_per_mtok=1.0, output_per_mtok=2.0)
    table = PriceTable({"gemini-2.5-flash": mine, "my-judge": mine})
    assert table.price("gemini-2.5-flash-001") == mine
    assert table.price("gemini-2.5-flash-lite") == LITE
    assert table.price("my-judge-v2") == mine
    only_mine = PriceTable({"my-judge": mine}, include_defaults=False)
    assert only_mine.price("gemini-2.5-flash") is None
    assert only_mine.price("my-judge") == mine


def test_an_exact_entry_with_models_prefix_wins() -> None:
    special = ModelPrice(input_per_mtok=9.0, output_per_mtok=9.0)
    table = PriceTable({"models/gemini-2.5-flash": special})
    assert table.price("models/gemini-2.5-flash") == special
    assert table.price("gemini-2.5-flash") == FLASH


def test_cost_math() -> None:
    table = PriceTable()
    # 1M in at $0.30 + 1M out at $2.50
    assert table.cost("gemini-2.5-flash", 1_000_000, 1_000_000) == pytest.approx(2.80)
    assert table.cost("gemini-2.5-flash-001", 2_000, 500) == pytest.approx(
        (2_000 * 0.30 + 500 * 2.50) / 1e6
    )
    assert table.cost("gpt-4o", 0, 0) == 0.0
    with pytest.raises(ValueError, match="token"):
        table.cost("gpt-4o", -1, 0)


def test_model_price_rejects_negative() -> None:
    with pytest.raises(ValueError, match="input_per_mtok"):
        ModelPrice(input_per_mtok=-1.0, output_per_mtok=0.0)
    with pytest.raises(ValueError, match="output_per_mtok"):
        ModelPrice(input_per_mtok=0.0, output_per_mtok=float("nan"))


def test_ledger_rows_accumulate_sorted_by_criterion_and_model() -> None:
    ledger = SpendLedger(PriceTable(), clock=FakeClock(at("2025-06-01T12:00:00")))
    c1 = ledger.record(criterion="safety", model="gpt-4o", input_tokens=1000, output_tokens=100)
    c2 = ledger.record(criterion="safety", model="gpt-4o", input_tokens=2000, output_tokens=200)
    ledger.record(
        criterion="hallucinations", model="gemini-2.5-flash", input_tokens=10, output_tokens=1
    )
    ledger.record(criterion="safety", model="mystery", input_tokens=5, output_tokens=5)
    assert c1 == pytest.approx((1000 * 2.5 + 100 * 10.0) / 1e6)
    assert c2 == pytest.approx(2 * c1)  # type: ignore[operator]
    assert ledger.rows() == [
        UsageRow(
            criterion="hallucinations",
            model="gemini-2.5-flash",
            calls=1,
            input_tokens=10,
            output_tokens=1,
            cost_usd=pytest.approx((10 * 0.30 + 1 * 2.50) / 1e6),  # type: ignore[arg-type]
        ),
        UsageRow(
            criterion="safety",
            model="gpt-4o",
            calls=2,
            input_tokens=3000,
            output_tokens=300,
            cost_usd=pytest.approx(3 * c1),  # type: ignore[arg-type, operator]
        ),
        UsageRow(
            criterion="safety",
            model="mystery",
            calls=1,
            input_tokens=5,
            output_tokens=5,
            cost_usd=None,
        ),
    ]
    assert ledger.spent_today == pytest.approx(3 * c1 + (10 * 0.30 + 2.50) / 1e6)  # type: ignore[operator]


def test_record_rejects_negative_tokens_without_counting() -> None:
    ledger = SpendLedger(PriceTable())
    with pytest.raises(ValueError, match="token"):
        ledger.record(criterion="c", model="gpt-4o", input_tokens=-1, output_tokens=0)
    assert ledger.rows() == []


def test_no_cap_never_raises() -> None:
    ledger = SpendLedger(PriceTable(), clock=FakeClock(at("2025-06-01T12:00:00")))
    ledger.record(criterion="c", model="gpt-4o", input_tokens=10**9, output_tokens=10**9)
    ledger.check()
    assert ledger.near_cap is False
    assert ledger.daily_cap_usd is None


def _near_cap(ledger: SpendLedger) -> bool:
    """Read afresh: mypy keeps an earlier ``assert ledger.near_cap is False`` narrowing."""
    return ledger.near_cap


def test_cap_reached_raises_budget_exhausted_with_message() -> None:
    ledger = SpendLedger(
        PriceTable(), daily_cap_usd=5.0, clock=FakeClock(at("2025-06-01T12:00:00"))
    )
    # $2.50 per 1M input tokens of gpt-4o
    ledger.record(criterion="c", model="gpt-4o", input_tokens=1_000_000, output_tokens=0)
    ledger.check()
    assert ledger.near_cap is False
    ledger.record(criterion="c", model="gpt-4o", input_tokens=800_000, output_tokens=0)
    assert ledger.spent_today == pytest.approx(4.5)
    assert _near_cap(ledger) is True  # 4.5 >= 0.8 * 5
    ledger.check()
    ledger.record(criterion="c", model="gpt-4o", input_tokens=200_000, output_tokens=0)
    with pytest.raises(BudgetExhausted) as info:
        ledger.check()
    assert str(info.value) == "daily judge budget of $5.00 exhausted (spent $5.00 today)"
    assert isinstance(info.value, JudgeError)
    assert info.value.reason == "budget exhausted"


def test_message_shows_small_amounts() -> None:
    ledger = SpendLedger(PriceTable(), daily_cap_usd=0.01, clock=FakeClock(0.0))
    ledger.record(criterion="c", model="gpt-4o", input_tokens=4_500, output_tokens=0)
    with pytest.raises(BudgetExhausted, match=r"budget of \$0\.01 exhausted \(spent \$0\.0112 "):
        ledger.check()


def test_utc_day_rollover_resets_spent_today_but_not_rows() -> None:
    clock = FakeClock(at("2025-06-01T23:59:00"))
    ledger = SpendLedger(PriceTable(), daily_cap_usd=1.0, clock=clock)
    ledger.record(criterion="c", model="gpt-4o", input_tokens=400_000, output_tokens=0)
    with pytest.raises(BudgetExhausted):
        ledger.check()
    clock.advance(59.0)  # 23:59:59 UTC, still the same day
    assert ledger.spent_today == pytest.approx(1.0)
    clock.advance(1.0)  # 00:00:00 UTC
    assert ledger.spent_today == 0.0
    ledger.check()
    ledger.record(criterion="c", model="gpt-4o", input_tokens=100_000, output_tokens=0)
    assert ledger.spent_today == pytest.approx(0.25)
    (row,) = ledger.rows()
    expected: tuple[object, ...] = (2, 500_000, pytest.approx(1.25))
    assert (row.calls, row.input_tokens, row.cost_usd) == expected


def test_unknown_model_counts_tokens_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    ledger = SpendLedger(PriceTable(), daily_cap_usd=0.0001, clock=FakeClock(0.0))
    with caplog.at_level(logging.WARNING, logger="tracescore.judge.costs"):
        for _ in range(3):
            cost = ledger.record(
                criterion="c", model="mystery", input_tokens=10**6, output_tokens=0
            )
            assert cost is None
        ledger.record(criterion="d", model="mystery", input_tokens=1, output_tokens=1)
        ledger.record(criterion="c", model="other", input_tokens=1, output_tokens=1)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert "'mystery'" in warnings[0] and "'other'" in warnings[1]
    assert ledger.spent_today == 0.0
    ledger.check()  # unpriced usage never trips the cap
    assert ledger.rows()[0].input_tokens == 3 * 10**6


def test_ledger_rejects_bad_cap() -> None:
    with pytest.raises(ValueError, match="daily_cap_usd"):
        SpendLedger(PriceTable(), daily_cap_usd=-1.0)
