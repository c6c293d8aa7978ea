"""Recover what a truncated JSON payload still holds.

Tracing backends cap attribute values (Google's at 64 KiB), so ADK's ``llm_request``
JSON, which carries the whole conversation, is often cut mid-string. Rather than losing
the span, :func:`salvage_json` closes the open string and containers and returns the
longest valid prefix; callers record that the value was truncated.
"""

from __future__ import annotations

from typing import Final, cast

import orjson

from tracescore.conventions.messages import JsonValue

__all__ = ["salvage_json"]

_CLOSER: Final = {"{": "}", "[": "]"}
_MAX_ATTEMPTS: Final = 64


def salvage_json(text: str | bytes) -> tuple[JsonValue, bool]:
    """Parse ``text``; when it is truncated JSON, parse the longest recoverable prefix.

    Returns:
        ``(value, truncated)``: the parsed value and whether salvage was needed.

    Raises:
        ValueError: when nothing can be recovered (not JSON at all).

    """
    try:
        return cast(JsonValue, orjson.loads(text)), False
    except orjson.JSONDecodeError:
        pass
    s = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    for candidate in _candidates(s):
        try:
            return cast(JsonValue, orjson.loads(candidate)), True
        except orjson.JSONDecodeError:
            continue
    raise ValueError("not JSON, and no valid prefix could be recovered")


def _candidates(s: str) -> list[str]:
    """Closed-off prefixes of ``s``, most complete first."""
    stack: list[str] = []
    in_string = False
    escape = False
    # Cut points just before a comma outside strings: everything before it is complete.
    cuts: list[tuple[int, str]] = []
    for i, ch in enumerate(s):
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append(ch)
        elif ch in "}]":
            if stack:
                stack.pop()
        elif ch == ",":
            cuts.append((i, "".join(_CLOSER[c] for c in reversed(stack))))
    out = []
    closers = "".join(_CLOSER[c] for c in reversed(stack))
    if in_string:
        body = s[:-1] if escape else s
        # A cut inside a \\uXXXX escape leaves a partial escape: drop it.
        tail = body[-6:]
        pos = tail.rfind("\\u")
        if pos != -1 and len(tail) - pos < 6:
            body = body[: len(body) - len(tail) + pos]
        out.append(body + '"' + closers)
    else:
        out.append(s.rstrip().rstrip(",:") + closers)
    for idx, closing in reversed(cuts[-_MAX_ATTEMPTS:]):
        out.append(s[:idx] + closing)
    return out
