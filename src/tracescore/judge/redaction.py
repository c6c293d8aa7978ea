"""Redaction of personal data and secrets before text leaves the process for an LLM judge.

A :class:`Redactor` applies an ordered list of :class:`RedactionRule` s to each string:
the built-ins (:data:`BUILTIN_RULES`, all on by default) and then the user's own regexes.
Each match becomes ``[REDACTED:<rule>]``. Order matters: credentials go first, so that a
token is replaced as a whole before the phone or card rule could see a run of its digits.

Two conventions shape every rule, built-in or user-given:

* If the pattern has a named group ``secret`` and it took part in the match, only that
  group is replaced and the rest of the match is kept (``Authorization: Bearer`` and
  ``api_key=`` survive, the token does not). Otherwise the whole match is replaced.
* ``validate``, when set, is called with the text that would be replaced; a match that
  does not validate is left as it is (the Luhn check for cards).

Every built-in pattern is linear in the input: runs are anchored by look-behinds so a
match is only attempted at the start of a run, and repeated groups are unambiguous.
Nothing the rules matched is stored; :attr:`Redactor.counts` keeps only numbers.
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from tracescore.conventions.messages import JsonValue
from tracescore.exceptions import ConfigError

__all__ = ["BUILTIN_RULES", "RedactionRule", "Redactor"]

#: The named group whose span is replaced instead of the whole match.
_SECRET_GROUP = "secret"


@dataclass(frozen=True, slots=True, kw_only=True)
class RedactionRule:
    """One kind of sensitive text and how to replace it.

    Attributes:
        name: Rule name, used in the replacement and in :attr:`Redactor.counts`.
        pattern: Compiled regex. A named group ``secret`` narrows the replaced span.
        replacement: What a match (or its ``secret`` group) becomes.
        validate: Optional check on the text to be replaced; only matches for which it
            returns True are replaced (e.g. a Luhn check for card numbers).
        precheck: Optional cheap necessary condition on the whole text (e.g. ``"@" in
            text`` for e-mail addresses); when it returns False the pattern is not run.
            A speed-up only: it must never return False for text the pattern matches.

    """

    name: str
    pattern: re.Pattern[str]
    replacement: str
    validate: Callable[[str], bool] | None = None
    precheck: Callable[[str], bool] | None = None


_LUHN_DOUBLED = (0, 2, 4, 6, 8, 1, 3, 5, 7, 9)


def _ascii_digits(text: str) -> list[int]:
    return [ord(c) - 48 for c in text if "0" <= c <= "9"]


def _is_card_number(text: str) -> bool:
    """13–19 digits from a card network's range (first digit 2–6) passing the Luhn check.

    The range check keeps nanosecond timestamps and most numeric ids (which start with 1)
    from being taken for cards one time in ten by the Luhn check alone.
    """
    digits = _ascii_digits(text)
    if not 13 <= len(digits) <= 19 or not 2 <= digits[0] <= 6:
        return False
    # Luhn: from the right, double every second digit, summing the digits of products.
    total = sum(digits[-1::-2]) + sum(_LUHN_DOUBLED[d] for d in digits[-2::-2])
    return total % 10 == 0


def _is_phone_number(text: str) -> bool:
    """7 to 15 digits, the E.164 bounds (country code included)."""
    return 7 <= len(_ascii_digits(text)) <= 15


def _is_credential(token: str) -> bool:
    """Whether a word after ``Bearer``/``Basic``/``Authorization:`` is a credential.

    Real tokens contain a digit or mixed case; Basic credentials decode to ``user:pass``.
    This keeps prose (``Basic understanding``, ``authorization: required``) intact.
    """
    if any("0" <= c <= "9" for c in token):
        return True
    if (
        len(token) >= 16
        and sum(c.isupper() for c in token) >= 2
        and any(c.islower() for c in token)
    ):
        return True
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
        text = decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return ":" in text and text.isprintable()


# Speed: the regex engine tries a match at every position, so patterns open with a
# look-ahead on their possible first characters (failing there on one character test is
# what keeps a 10 kB text in the tenths of a millisecond), and rules whose text needs a
# rare marker (``@``, ``Bearer``, ``key``) have a precheck that skips the regex entirely.
# Linearity: look-behinds make a match start only at the beginning of a run (of digits,
# of word characters), so a long run is scanned once, not once per position in it, and
# every repeated group is unambiguous (separators are required between digit groups).

_BEARER = re.compile(
    r"""
    (?=[ABPabp])
    (?:
        \b(?i:(?:proxy-)?authorization)["']?[ \t]*[:=][ \t]*["']?
        (?:[A-Za-z][A-Za-z0-9-]*[ \t]+)?            # the scheme word, kept
      | \b(?i:bearer|basic)[ \t]+
    )
    (?P<secret>[A-Za-z0-9._~+/-]{8,}=*)             # token68 (RFC 9110 §11.2)
    """,
    re.VERBOSE | re.ASCII,
)

# Key names whose value is a secret in ``key=value`` / ``key: value`` / JSON assignments.
_KEY_NAMES = r"""(?i:
    api[_-]?(?:key|secret|token)
  | access[_-]?(?:key(?:[_-]?id)?|token)
  | secret(?:[_-]?(?:access[_-]?)?key)?
  | client[_-]?secret
  | private[_-]?key
  | (?:auth|refresh|session|id)[_-]?token
  | passw(?:or)?d | pwd
  | token
)"""

_API_KEY = re.compile(
    rf"""
    (?=[-ACEGIPRSTacegiprstx])
    (?:
        {_KEY_NAMES}["']?[ \t]*(?:=>|[:=])[ \t]*
        (?P<q>["'])?                                # a quoted value may hold anything
        (?P<secret>(?!\[REDACTED)(?(q)(?:\\.|(?!(?P=q))[^\\\r\n])+|[^\s"',;&(){{}}<>\[\]]+))
      | \b(?:
            sk-[A-Za-z0-9_-]{{20,}}                     # OpenAI (sk-, sk-proj-), Anthropic
          | [sr]k_(?:live|test)_[A-Za-z0-9]{{16,}}      # Stripe secret / restricted keys
          | AIza[0-9A-Za-z_-]{{35}}                     # Google API keys
          | gh[pousr]_[A-Za-z0-9]{{30,}}                # GitHub tokens
          | github_pat_[A-Za-z0-9_]{{22,}}              # GitHub fine-grained tokens
          | glpat-[A-Za-z0-9_-]{{20,}}                  # GitLab
          | hf_[A-Za-z0-9]{{30,}}                       # Hugging Face
          | xox[abeprs]-[A-Za-z0-9-]{{10,}}             # Slack
          | xapp-[0-9]-[A-Za-z0-9-]{{10,}}              # Slack app tokens
          | (?:AKIA|ASIA)[0-9A-Z]{{16}}\b               # AWS access key ids
          | eyJ[A-Za-z0-9_-]{{8,}}\.eyJ[A-Za-z0-9_-]{{8,}}\.[A-Za-z0-9_-]*   # JWT
        )
      | -----BEGIN[A-Z\ ]*PRIVATE\ KEY-----(?:[^-]|-(?!----END))*-----END[A-Z\ ]*PRIVATE\ KEY-----
    )
    """,
    re.VERBOSE | re.ASCII,
)

_EMAIL = re.compile(
    r"""
    (?<![\w.%+-])[\w.%+-]+
    @(?:[^\W_](?:[\w-]{0,61}[^\W_])?\.)+[^\W\d_]{2,63}
    (?![\w-])
    """,
    re.VERBOSE,
)

_CARD = re.compile(
    r"""
    (?=[0-9])(?<![\w.,+\#-])
    (?:
        [0-9]{13,19}
      | [0-9]{4}(?P<cs>[\ -])[0-9]{4,6}(?:(?P=cs)[0-9]{1,5}){1,3}   # 4-4-4-4, 4-6-5, ...
    )
    (?![\w]|[.,/-][0-9])
    """,
    re.VERBOSE,
)

_PHONE = re.compile(
    r"""
    (?=[+(0-9])
    (?:
        (?<![\w+])\+                                                # +<country code> ...
        (?:
            [0-9]{7,15}(?![0-9])                                    # +14155550132
          | [0-9]{1,6}(?:[\ .-]?\([0-9]{1,4}\)[\ .-]?[0-9]{1,8}|[\ .-][0-9]{1,8})*
        )
      | (?<![\w.,/:\#$€£+-])
        (?:1[\ .-]?)?                                               # NANP trunk prefix
        (?:
            \([0-9]{3}\)\ ?[0-9]{3}[\ .-][0-9]{4}                   # (415) 555-0132
          | [0-9]{3}(?P<us>[\ .-])[0-9]{3}(?P=us)[0-9]{4}           # 415-555-0132
          | 0[1-9](?P<fr>[\ .-])[0-9]{2}(?:(?P=fr)[0-9]{2}){3}      # 01 23 45 67 89
          | 0[0-9]{2,4}[\ -][0-9]{3,4}(?:[\ -]?[0-9]{3,4})?         # 020 7946 0958
        )
    )
    (?![\w]|[.,:/-][0-9])
    """,
    re.VERBOSE,
)

# Cheap necessary conditions, so that a rule's regex only runs on text it may match.
_BEARER_WORDS = ("bearer", "basic", "authorization")
_API_KEY_MARKERS = (
    *("key", "secret", "token", "passw", "pwd"),
    *("sk-", "sk_", "rk_", "aiza", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    *("glpat-", "hf_", "xox", "xapp-", "akia", "asia", "eyj", "-----begin"),
)


def _may_hold_bearer(text: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in _BEARER_WORDS)


def _may_hold_api_key(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in _API_KEY_MARKERS)


def _may_hold_email(text: str) -> bool:
    return "@" in text


def _builtin(
    name: str,
    pattern: re.Pattern[str],
    *,
    validate: Callable[[str], bool] | None = None,
    precheck: Callable[[str], bool] | None = None,
) -> RedactionRule:
    return RedactionRule(
        name=name,
        pattern=pattern,
        replacement=f"[REDACTED:{name}]",
        validate=validate,
        precheck=precheck,
    )


#: The built-in rules, in the order they are applied.
BUILTIN_RULES: Mapping[str, RedactionRule] = MappingProxyType(
    {
        "bearer": _builtin("bearer", _BEARER, validate=_is_credential, precheck=_may_hold_bearer),
        "api_key": _builtin("api_key", _API_KEY, precheck=_may_hold_api_key),
        "email": _builtin("email", _EMAIL, precheck=_may_hold_email),
        "card": _builtin("card", _CARD, validate=_is_card_number),
        "phone": _builtin("phone", _PHONE, validate=_is_phone_number),
    }
)

# JSON object keys whose string values are secrets as a whole (``{"password": "..."}``).
_SECRET_KEY = re.compile(rf".*{_KEY_NAMES}", re.VERBOSE | re.ASCII)


def _compile_user_rule(name: str, regex: str) -> RedactionRule:
    try:
        pattern = re.compile(regex)
    except re.error as exc:
        raise ConfigError(f"redaction rule {name!r}: invalid regex {regex!r}: {exc}") from exc
    if pattern.fullmatch(""):
        raise ConfigError(f"redaction rule {name!r}: regex {regex!r} matches the empty string")
    return RedactionRule(name=name, pattern=pattern, replacement=f"[REDACTED:{name}]")


class Redactor:
    """Replaces sensitive text with ``[REDACTED:<rule>]``; on by default.

    Instances are safe to share between threads: rules are immutable and the counters
    are merged under a lock once per call.

    Attributes:
        enabled: When False, :meth:`redact` and :meth:`redact_json` return their input.

    """

    def __init__(
        self,
        *,
        enabled: bool = True,
        builtins: Iterable[str] | None = None,
        patterns: Mapping[str, str] | Sequence[str] = (),
    ) -> None:
        """Select the rules.

        Args:
            enabled: Whether to redact at all.
            builtins: Names of the built-in rules to use (in :data:`BUILTIN_RULES` order
                whatever the order given); None for all of them.
            patterns: The user's own regexes, applied after the built-ins: a mapping of
                rule name to regex, or a sequence of regexes named ``custom_1``,
                ``custom_2``, ... (a single string is one regex).

        Raises:
            ConfigError: An unknown built-in name, an invalid regex, one that matches the
                empty string, or a rule name used twice; the message names the rule.

        """
        self.enabled = enabled
        if builtins is None:
            chosen = set(BUILTIN_RULES)
        else:
            chosen = set(builtins)
            unknown = sorted(chosen - set(BUILTIN_RULES))
            if unknown:
                raise ConfigError(
                    f"unknown built-in redaction rule(s) {', '.join(map(repr, unknown))}; "
                    f"known: {', '.join(BUILTIN_RULES)}"
                )
        rules = [rule for name, rule in BUILTIN_RULES.items() if name in chosen]
        if isinstance(patterns, str):
            patterns = [patterns]
        named = (
            list(patterns.items())
            if isinstance(patterns, Mapping)
            else [(f"custom_{i}", regex) for i, regex in enumerate(patterns, start=1)]
        )
        for name, regex in named:
            if not name:
                raise ConfigError(f"redaction rule for regex {regex!r} has an empty name")
            if any(rule.name == name for rule in rules):
                raise ConfigError(f"redaction rule {name!r} is defined twice")
            rules.append(_compile_user_rule(name, regex))
        self._rules: tuple[RedactionRule, ...] = tuple(rules)
        self._secret_keys = "api_key" in chosen
        self._counts: dict[str, int] = dict.fromkeys((rule.name for rule in rules), 0)
        self._lock = threading.Lock()

    @property
    def rules(self) -> tuple[RedactionRule, ...]:
        """The active rules, in the order they are applied."""
        return self._rules

    @property
    def counts(self) -> Mapping[str, int]:
        """Replacements made so far per rule name (a snapshot; zero for unused rules)."""
        with self._lock:
            return dict(self._counts)

    def redact(self, text: str) -> str:
        """Return ``text`` with every match of every active rule replaced."""
        if not self.enabled or not text:
            return text
        found: dict[str, int] = {}
        text = self._redact(text, found)
        self._merge(found)
        return text

    def redact_json(self, value: JsonValue) -> JsonValue:
        """Return a copy of ``value`` with every string in it redacted.

        Dict keys are kept as they are; numbers, booleans, None and bytes are returned
        unchanged. With the ``api_key`` rule active, a string stored under a secret-like
        key (``password``, ``api_key``, ``client_secret``, ``*_token``, ...) is replaced
        as a whole, since the key is not part of the string the rule would see.
        """
        if not self.enabled:
            return value
        found: dict[str, int] = {}
        result = self._walk(value, found)
        self._merge(found)
        return result

    def _walk(self, value: JsonValue, found: dict[str, int]) -> JsonValue:
        if isinstance(value, str):
            return self._redact(value, found) if value else value
        if isinstance(value, list):
            return [self._walk(item, found) for item in value]
        if isinstance(value, dict):
            out: dict[str, JsonValue] = {}
            for key, item in value.items():
                if (
                    self._secret_keys
                    and isinstance(item, str)
                    and item
                    and not item.startswith("[REDACTED:")
                    and _SECRET_KEY.fullmatch(key)
                ):
                    out[key] = BUILTIN_RULES["api_key"].replacement
                    found["api_key"] = found.get("api_key", 0) + 1
                else:
                    out[key] = self._walk(item, found)
            return out
        return value

    def _redact(self, text: str, found: dict[str, int]) -> str:
        for rule in self._rules:
            if rule.precheck is not None and not rule.precheck(text):
                continue
            replaced = 0

            def substitute(match: re.Match[str], rule: RedactionRule = rule) -> str:
                nonlocal replaced
                whole = match.group(0)
                start, end = 0, len(whole)
                if _SECRET_GROUP in rule.pattern.groupindex and match.start(_SECRET_GROUP) >= 0:
                    start = match.start(_SECRET_GROUP) - match.start()
                    end = match.end(_SECRET_GROUP) - match.start()
                target = whole[start:end]
                if not target or (rule.validate is not None and not rule.validate(target)):
                    return whole
                replaced += 1
                return whole[:start] + rule.replacement + whole[end:]

            text = rule.pattern.sub(substitute, text)
            if replaced:
                found[rule.name] = found.get(rule.name, 0) + replaced
        return text

    def _merge(self, found: Mapping[str, int]) -> None:
        if found:
            with self._lock:
                for name, count in found.items():
                    self._counts[name] += count
