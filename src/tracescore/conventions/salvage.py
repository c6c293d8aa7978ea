"""Recover what a truncated JSON payload still holds.

Tracing backends cap attribute values (Google's at 64 KiB), so ADK's ``llm_request``
JSON, which carries the whole conversation, is often cut mid-string. Rather than losing
the span, :func:`salvage_json` closes the open string and containers and returns the
longest valid prefix; callers record that the value was truncated.
"""

from __future__ import annotations

from collections import deque
from typing import Final, TypeAlias, cast

import orjson

from tracescore import json_text
from tracescore.conventions.messages import JsonValue

__all__ = ["salvage_json"]

_CLOSER: Final = {"{": "}", "[": "]"}
_MAX_ATTEMPTS: Final = 64
#: The open containers, innermost first, as a linked list: ``(bracket, outer)``.
_Open: TypeAlias = "tuple[str, _Open] | None"


def salvage_json(text: str | bytes) -> tuple[JsonValue, bool]:
    """Parse ``text``; when it is truncated JSON, parse the longest recoverable prefix.

    Returns:
        ``(value, truncated)``: the parsed value and whether salvage was needed.

    Raises:
        ValueError: when nothing can be recovered (not JSON at all).

    """
    try:
        return cast(JsonValue, json_text.loads(text)), False
    except orjson.JSONDecodeError:
        pass
    s = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    for candidate in _candidates(s):
        try:
            return cast(JsonValue, json_text.loads(candidate)), True
        except orjson.JSONDecodeError:
            continue
    raise ValueError("not JSON, and no valid prefix could be recovered")


def _closers(open_: _Open) -> str:
    closers = []
    while open_ is not None:
        closers.append(_CLOSER[open_[0]])
        open_ = open_[1]
    return "".join(closers)


def _candidates(s: str) -> list[str]:
    """Closed-off prefixes of ``s``, most complete first.

    Linear in ``len(s)``: the open containers are remembered at each cut as a shared
    linked list, not a copy (copying made deep input with many commas quadratic: 48 KB
    of ``[[[…1,1,1…`` took ten seconds), and only the last cuts are kept.
    """
    stack: _Open = None
    in_string = False
    escape = False
    # Cut points just before a comma outside strings: everything before it is complete.
    cuts: deque[tuple[int, _Open]] = deque(maxlen=_MAX_ATTEMPTS)
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
            stack = (ch, stack)
        elif ch in "}]":
            if stack is not None:
                stack = stack[1]
        elif ch == ",":
            cuts.append((i, stack))
    out = []
    closers = _closers(stack)
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
    for idx, open_ in reversed(cuts):
        out.append(s[:idx] + _closers(open_))
    return out
