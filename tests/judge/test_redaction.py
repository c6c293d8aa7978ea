"""Redaction of personal data and secrets before a judge call: built-ins, user rules, JSON."""

from __future__ import annotations

import copy

import pytest

from tracescore.conventions.messages import JsonValue
from tracescore.exceptions import ConfigError
from tracescore.judge.redaction import BUILTIN_RULES, RedactionRule, Redactor

# Fake secrets are assembled at run time so that secret scanners do not flag this file.
OPENAI_KEY = "sk-proj-" + "Ab3dE5" * 8
GOOGLE_KEY = "AIza" + "Sy" + "A1b2C3d4" * 4 + "e"
GITHUB_TOKEN = "ghp_" + "A1b2C3" * 6
STRIPE_KEY = "sk_" + "live_" + "a1B2" * 6
JWT = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9P"


def only(rule: str) -> Redactor:
    return Redactor(builtins=[rule])


# ---------------------------------------------------------------- built-in rules


def test_builtin_rules_are_ordered_tokens_first() -> None:
    assert list(BUILTIN_RULES) == ["bearer", "api_key", "email", "card", "phone"]
    for name, rule in BUILTIN_RULES.items():
        assert isinstance(rule, RedactionRule)
        assert rule.name == name
        assert rule.replacement == f"[REDACTED:{name}]"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail john.doe+tag@mail.example.co.uk now", "mail [REDACTED:email] now"),
        ("a_b-c@sub.example.org.", "[REDACTED:email]."),
        ("mailto:jane@example.com", "mailto:[REDACTED:email]"),
        ("<Jane.Doe@Example.COM>", "<[REDACTED:email]>"),
        ("x: 100%test@corp.example.io", "x: [REDACTED:email]"),
        ("josé.müller@exämple.de", "[REDACTED:email]"),
        ("a@b.com,c@d.net", "[REDACTED:email],[REDACTED:email]"),
    ],
)
def test_email_positives(text: str, expected: str) -> None:
    assert only("email").redact(text) == expected


@pytest.mark.parametrize(
    "text",
    ["user@localhost", "@handle says hi", "a @ b.com", "foo@bar", "size 10@2x", "no at sign"],
)
def test_email_negatives(text: str) -> None:
    assert Redactor().redact(text) == text


PHONES = [
    "+1 (415) 555-0132",
    "+1-415-555-0132",
    "+1.415.555.0132",
    "+14155550132",
    "(415) 555-0132",
    "(415)555-0132",
    "415-555-0132",
    "415.555.0132",
    "415 555 0132",
    "1-800-555-0199",
    "+44 20 7946 0958",
    "+44 (0)20 7946 0958",
    "+33 1 23 45 67 89",
    "+49 30 1234567",
    "+91 98765 43210",
    "+81 3-1234-5678",
    "020 7946 0958",
    "01 23 45 67 89",
    "01.23.45.67.89",
]


@pytest.mark.parametrize("phone", PHONES)
def test_phone_positives(phone: str) -> None:
    assert only("phone").redact(f"Call {phone} today.") == "Call [REDACTED:phone] today."
    assert Redactor().redact(f"Call {phone}, or write.") == "Call [REDACTED:phone], or write."


def test_adjacent_phone_numbers_are_both_redacted() -> None:
    text = "+14155550132 1-800-555-0199"
    assert only("phone").redact(text) == "[REDACTED:phone] [REDACTED:phone]"


@pytest.mark.parametrize(
    "text",
    [
        "on 2024-01-15",
        "at 2024-01-15T10:30:00Z",
        "2024-01-15 10:30:00",
        "15/01/2024 and 01/15/2024",
        "15.01.2024",
        "at 10:30 or 14:05:33",
        "version 1.2.3 and v10.4.12",
        "I am 21",
        "it is 21°C, or -5 °C",
        "up +3.5% and +12 points",
        "costs $1,234.56 or 1,234,567.89 €",
        "order #12345 and #123456789",
        "in 1999",
        "your PIN 4821",
        "host 192.168.1.100",
        "epoch 1705312345",
        "score 98.6 of 100",
        "pages 100-200",
    ],
)
def test_phone_negatives(text: str) -> None:
    assert Redactor().redact(text) == text


@pytest.mark.parametrize(
    "card",
    [
        "4111 1111 1111 1111",
        "4111-1111-1111-1111",
        "4111111111111111",
        "5555 5555 5555 4444",
        "6011 1111 1111 1117",
        "3782 822463 10005",
        "378282246310005",
    ],
)
def test_card_positives(card: str) -> None:
    assert only("card").redact(f"card {card} exp 12/26") == "card [REDACTED:card] exp 12/26"
    assert Redactor().redact(f"card: {card}.") == "card: [REDACTED:card]."


@pytest.mark.parametrize(
    "text",
    [
        "4111 1111 1111 1112",  # Luhn fails
        "4111111111111112",
        "4111 1111 1111 1111 1111",  # 20 digits
        "1705312345123456789",  # a nanosecond timestamp: not a card network's range
        "0.4111111111111111",
        "#4111111111111111",
    ],
)
def test_card_negatives(text: str) -> None:
    assert Redactor().redact(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"key {OPENAI_KEY} end", "key [REDACTED:api_key] end"),
        ("sk-" + "a1B2" * 6, "[REDACTED:api_key]"),
        (f"google {GOOGLE_KEY}", "google [REDACTED:api_key]"),
        (f"gh {GITHUB_TOKEN}", "gh [REDACTED:api_key]"),
        ("gho_" + "z9" * 18, "[REDACTED:api_key]"),
        ("ghs_" + "Q7" * 18, "[REDACTED:api_key]"),
        ("github_pat_" + "11ABC" * 6, "[REDACTED:api_key]"),
        ("slack xoxb-1234567890-abcdefghij", "slack [REDACTED:api_key]"),
        ("xoxp-12345-67890-abcdef", "[REDACTED:api_key]"),
        ("aws AKIA" + "IOSFODNN7EXAMPLE", "aws [REDACTED:api_key]"),
        (f"stripe {STRIPE_KEY}", "stripe [REDACTED:api_key]"),
        ("rk_" + "live_" + "Zz9" * 8, "[REDACTED:api_key]"),
        (f"jwt {JWT} ok", "jwt [REDACTED:api_key] ok"),
        ("api_key=abc123", "api_key=[REDACTED:api_key]"),
        ("apikey: xyz789 next", "apikey: [REDACTED:api_key] next"),
        ('{"api_key": "a b\\"c", "n": 1}', '{"api_key": "[REDACTED:api_key]", "n": 1}'),
        ("{'password': \"it's me\"}", "{'password': \"[REDACTED:api_key]\"}"),
        ("secret=s3cr3t;", "secret=[REDACTED:api_key];"),
        ("password = hunter2", "password = [REDACTED:api_key]"),
        ("OPENAI_API_KEY=foo", "OPENAI_API_KEY=[REDACTED:api_key]"),
        ("X-Api-Key: abc", "X-Api-Key: [REDACTED:api_key]"),
        ("client_secret: shh", "client_secret: [REDACTED:api_key]"),
        ("GET /x?token=abc&page=2", "GET /x?token=[REDACTED:api_key]&page=2"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIabc+/=\nProc-Type: 4\n-----END RSA PRIVATE KEY-----!",
            "[REDACTED:api_key]!",
        ),
    ],
)
def test_api_key_positives(text: str, expected: str) -> None:
    assert only("api_key").redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "the key point is this",
        "max_tokens: 100, input_tokens=5",
        "a monkey: ok",
        "password reset link sent",
        "risk-assessment-framework-for-teams",
        "task_live_abcdefghijklmnopqrstu",
        "AKIA alone",
        "sk-short",
        'the "password" field',
    ],
)
def test_api_key_negatives(text: str) -> None:
    assert Redactor().redact(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc123def456", "Authorization: Bearer [REDACTED:bearer]"),
        (
            '{"Authorization": "Basic dXNlcjpwYXNz"}',
            '{"Authorization": "Basic [REDACTED:bearer]"}',
        ),
        ("-H 'authorization: bearer tok_9f8e7d6c'", "-H 'authorization: bearer [REDACTED:bearer]'"),
        ("Proxy-Authorization: Basic dXNlcjpwYXNz", "Proxy-Authorization: Basic [REDACTED:bearer]"),
        ("Authorization: Token abcd1234efgh", "Authorization: Token [REDACTED:bearer]"),
        ("send Bearer abc.def-123_xyz now", "send Bearer [REDACTED:bearer] now"),
        (f"Bearer {JWT}", "Bearer [REDACTED:bearer]"),
        ("Basic dXNlcjpwYXNz", "Basic [REDACTED:bearer]"),
        ("Bearer AbCdEfGhIjKlMnOpQr", "Bearer [REDACTED:bearer]"),
    ],
)
def test_bearer_positives(text: str, expected: str) -> None:
    assert only("bearer").redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Basic understanding of the topic",
        "the bearer of bad news",
        "authorization: required for this endpoint",
        "a Bearer token is needed",
    ],
)
def test_bearer_negatives(text: str) -> None:
    assert Redactor().redact(text) == text


def test_tokens_are_redacted_before_phones_and_cards() -> None:
    redactor = Redactor()
    assert redactor.redact("Authorization: Bearer 4111111111111111") == (
        "Authorization: Bearer [REDACTED:bearer]"
    )
    assert redactor.redact("api_key=4155550132") == "api_key=[REDACTED:api_key]"
    assert redactor.counts["bearer"] == 1
    assert redactor.counts["api_key"] == 1
    assert redactor.counts["card"] == 0
    assert redactor.counts["phone"] == 0


def test_mixed_text_keeps_everything_else() -> None:
    text = (
        "User jane@example.com (tel +44 20 7946 0958) paid 1,234.56 EUR on 2024-01-15 "
        "with 4111 1111 1111 1111; order #12345 ships in 3 days."
    )
    assert Redactor().redact(text) == (
        "User [REDACTED:email] (tel [REDACTED:phone]) paid 1,234.56 EUR on 2024-01-15 "
        "with [REDACTED:card]; order #12345 ships in 3 days."
    )


PATHOLOGICAL = [
    "a" * 50_000 + "@",
    "x@" + "a." * 25_000,
    "x@" + "a-" * 25_000,
    "1" * 50_000,
    "1 " * 25_000,
    "1-" * 25_000,
    "+1" * 25_000,
    "(1)" * 17_000,
    "4111 " * 10_000,
    "-----BEGIN RSA PRIVATE KEY-----" + "a" * 50_000,
    "eyJ" + "a" * 50_000 + ".",
    "Authorization: " * 4_000,
    "Bearer " * 8_000,
    "password=" * 5_000,
]


@pytest.mark.parametrize("text", PATHOLOGICAL, ids=lambda text: repr(text[:12]))
def test_pathological_inputs_complete(text: str) -> None:
    # The patterns are linear (anchored at run starts, unambiguous repeats): inputs like
    # these take minutes with backtracking-prone patterns. None holds a full secret shape,
    # except the last, whose value runs to the end.
    out = Redactor().redact(text)
    assert out in (text, "password=[REDACTED:api_key]")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('password="' + "a" * 50_000, 'password="[REDACTED:api_key]'),
        ("sk-" + "a-" * 25_000 + "!", "[REDACTED:api_key]!"),
    ],
    ids=["unterminated-quote", "long-key"],
)
def test_pathological_secrets_are_redacted_whole(text: str, expected: str) -> None:
    assert Redactor().redact(text) == expected


# ---------------------------------------------------------------- configuration


def test_disabled_redactor_returns_input_unchanged() -> None:
    redactor = Redactor(enabled=False)
    text = "jane@example.com 4111 1111 1111 1111"
    value: JsonValue = {"password": "x", "mail": "jane@example.com"}
    assert redactor.redact(text) == text
    assert redactor.redact_json(value) is value
    redactor.enabled = True
    assert redactor.redact(text) == "[REDACTED:email] [REDACTED:card]"


def test_builtins_subset_only_applies_those_rules() -> None:
    redactor = Redactor(builtins=["card", "email"])
    assert [rule.name for rule in redactor.rules] == ["email", "card"]
    text = "jane@example.com, 415-555-0132, 4111111111111111, api_key=abc"
    assert redactor.redact(text) == ("[REDACTED:email], 415-555-0132, [REDACTED:card], api_key=abc")
    assert set(redactor.counts) == {"email", "card"}


def test_no_builtins() -> None:
    assert Redactor(builtins=[]).redact("jane@example.com") == "jane@example.com"


def test_unknown_builtin_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'ssn'"):
        Redactor(builtins=["email", "ssn"])


def test_user_patterns_mapping() -> None:
    redactor = Redactor(
        builtins=[],
        patterns={"ticket": r"\bTCK-[0-9]{4,}\b", "session": r"sid=(?P<secret>[a-f0-9]+)"},
    )
    assert redactor.redact("see TCK-12345 with sid=deadbeef;") == (
        "see [REDACTED:ticket] with sid=[REDACTED:session];"
    )
    assert redactor.counts == {"ticket": 1, "session": 1}


def test_user_patterns_list_and_single_string() -> None:
    redactor = Redactor(builtins=[], patterns=[r"alpha", r"beta"])
    assert [rule.name for rule in redactor.rules] == ["custom_1", "custom_2"]
    assert redactor.redact("alpha beta gamma") == "[REDACTED:custom_1] [REDACTED:custom_2] gamma"
    single = Redactor(builtins=[], patterns="gamma")
    assert single.redact("alpha gamma") == "alpha [REDACTED:custom_1]"


def test_user_patterns_run_after_builtins() -> None:
    redactor = Redactor(patterns={"domain": r"example\.com"})
    assert redactor.redact("jane@example.com and example.com") == (
        "[REDACTED:email] and [REDACTED:domain]"
    )


def test_invalid_user_regex_is_a_config_error_naming_the_rule() -> None:
    with pytest.raises(ConfigError, match=r"'employee_id'.*\(\[0-9\]\+") as info:
        Redactor(patterns={"employee_id": r"EMP-([0-9]+"})
    assert "missing )" in str(info.value)
    with pytest.raises(ConfigError, match="'custom_2'"):
        Redactor(patterns=["ok", "[unclosed"])


def test_user_regex_matching_empty_string_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"'maybe'.*empty string"):
        Redactor(patterns={"maybe": r"x*"})


@pytest.mark.parametrize("name", ["email", ""])
def test_user_rule_name_must_be_new_and_non_empty(name: str) -> None:
    with pytest.raises(ConfigError):
        Redactor(patterns={name: r"secretword"})


# ---------------------------------------------------------------- JSON and counts


def test_redact_json_recurses_and_copies() -> None:
    value: JsonValue = {
        "jane@example.com": "key stays",
        "messages": [
            {"role": "user", "content": "I am jane@example.com, call 415-555-0132"},
            ["nested", ["deeper 4111 1111 1111 1111"]],
        ],
        "n": 4155550132,
        "ratio": 0.5,
        "ok": True,
        "none": None,
        "raw": b"jane@example.com",
        "empty": "",
    }
    original = copy.deepcopy(value)
    out = Redactor().redact_json(value)
    assert out == {
        "jane@example.com": "key stays",
        "messages": [
            {"role": "user", "content": "I am [REDACTED:email], call [REDACTED:phone]"},
            ["nested", ["deeper [REDACTED:card]"]],
        ],
        "n": 4155550132,
        "ratio": 0.5,
        "ok": True,
        "none": None,
        "raw": b"jane@example.com",
        "empty": "",
    }
    assert value == original  # the input is not modified
    assert isinstance(out, dict)
    assert isinstance(value, dict)
    assert out["messages"] is not value["messages"]


def test_redact_json_scalars() -> None:
    redactor = Redactor()
    assert redactor.redact_json("jane@example.com") == "[REDACTED:email]"
    assert redactor.redact_json(12) == 12
    assert redactor.redact_json(None) is None


def test_redact_json_secret_keys_hide_whole_values() -> None:
    redactor = Redactor()
    value: JsonValue = {
        "password": "correct horse battery staple",
        "OPENAI_API_KEY": "plain",
        "clientSecret": "s",
        "next_page_token": "abc",
        "pin": 1234,  # not a string: untouched
        "input_tokens": "12",  # not a secret-like key
        "tokenizer": "bpe",
    }
    assert redactor.redact_json(value) == {
        "password": "[REDACTED:api_key]",
        "OPENAI_API_KEY": "[REDACTED:api_key]",
        "clientSecret": "[REDACTED:api_key]",
        "next_page_token": "[REDACTED:api_key]",
        "pin": 1234,
        "input_tokens": "12",
        "tokenizer": "bpe",
    }
    assert redactor.counts["api_key"] == 4
    # Without the api_key rule, keys do not matter.
    assert Redactor(builtins=["email"]).redact_json({"password": "x"}) == {"password": "x"}


def test_counts_accumulate_per_rule_and_are_snapshots() -> None:
    redactor = Redactor()
    assert redactor.counts == {"bearer": 0, "api_key": 0, "email": 0, "card": 0, "phone": 0}
    redactor.redact("a@b.com and c@d.org")
    snapshot = redactor.counts
    redactor.redact("4111 1111 1111 1111, e@f.io")
    redactor.redact_json(["+44 20 7946 0958", {"k": "g@h.io"}])
    assert snapshot == {"bearer": 0, "api_key": 0, "email": 2, "card": 0, "phone": 0}
    assert redactor.counts == {"bearer": 0, "api_key": 0, "email": 4, "card": 1, "phone": 1}
    # Only names and numbers: nothing that was matched is kept.
    assert all(isinstance(count, int) for count in redactor.counts.values())
    assert "a@b.com" not in repr(vars(redactor))


def test_rejected_matches_are_not_counted() -> None:
    redactor = Redactor()
    redactor.redact("4111 1111 1111 1112 and Basic understanding")
    assert sum(redactor.counts.values()) == 0
