r"""JSON text as other writers produce it: lone surrogates and bad UTF-8 read as U+FFFD.

A JSON string may spell any UTF-16 code unit as ``\uXXXX``, and some writers spell
half a surrogate pair that way: JavaScript's ``JSON.stringify`` on a string cut in the
middle of an emoji (content truncated with ``slice``), Python's ``json.dumps`` on text
decoded with ``surrogateescape`` (a file name with invalid bytes, in a tool result).
``orjson`` refuses the whole text then, so one cut emoji lost a whole message, tool
result or OTLP batch. Go's ``encoding/json``, which the Collector's readers build on,
reads such an escape as U+FFFD, the replacement character; so does :func:`loads`.

Bytes that are not UTF-8 read the same way, each bad sequence as U+FFFD: Go's reader
takes them, and the OTLP specification recommends that reading for strings.

Strings in Python can hold lone surrogates too (the live processor receives the agent's
own ``str`` values). Nothing downstream can encode them: a Prometheus scrape, an OTLP
export and ``orjson.dumps`` all fail on one. :func:`clean_text` replaces them where
such strings come in.

Only text ``orjson`` refuses for a surrogate or for bad UTF-8 takes the slow path:
valid JSON is parsed exactly as ``orjson.loads`` parses it.
"""

from __future__ import annotations

import re
from typing import Any, Final

import orjson

__all__ = ["clean_text", "loads", "repair_escapes"]

#: A scan of JSON text, left to right: an escaped backslash (skipped whole, so that a
#: backslash followed by the text ``ud800`` stays that text), a well-formed surrogate
#: pair (kept), or a lone half (group 1: replaced).
_ESCAPES_STR: Final = re.compile(
    r"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    r"|(\\u[dD][89a-fA-F][0-9a-fA-F]{2})"
)
_ESCAPES_BYTES: Final = re.compile(_ESCAPES_STR.pattern.encode())
_LONE: Final = re.compile("[\ud800-\udfff]")
#: What ``orjson`` says of a lone surrogate escape (``no low surrogate``, ``invalid low
#: surrogate``, ``invalid high surrogate``), of raw surrogates in a ``str`` and of any
#: bytes that are not UTF-8 (``str is not valid UTF-8: surrogates not allowed``).
_SURROGATE_ERROR: Final = "surrogate"


def _replace_str(match: re.Match[str]) -> str:
    return "\\ufffd" if match.group(1) else match.group(0)


def _replace_bytes(match: re.Match[bytes]) -> bytes:
    return b"\\ufffd" if match.group(1) else match.group(0)


def loads(data: str | bytes | bytearray | memoryview) -> Any:  # Any, as orjson.loads
    r"""``orjson.loads(data)``, reading each lone surrogate and bad UTF-8 as U+FFFD.

    A lone surrogate is an escape ``\uD800``–``\uDFFF`` that is not half of a
    well-formed pair, or (in a ``str``) such a code point itself. In bytes, each
    sequence that is not UTF-8 reads as one U+FFFD (as ``bytes.decode`` replaces).

    Raises:
        orjson.JSONDecodeError: ``data`` is not JSON for another reason (as
            ``orjson.loads`` says it).

    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if _SURROGATE_ERROR not in exc.msg:
            raise
        first = exc
    fixed: str | bytes
    if isinstance(data, str):
        fixed = repair_escapes(clean_text(data))
    else:
        raw = bytes(data)
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:  # orjson says "surrogates" of any invalid UTF-8
            fixed = repair_escapes(raw.decode("utf-8", "replace"))
        else:
            fixed = _ESCAPES_BYTES.sub(_replace_bytes, raw)
    try:
        return orjson.loads(fixed)
    except orjson.JSONDecodeError:
        # Report the original text's first error, positions included.
        raise first from None


def repair_escapes(text: str) -> str:
    r"""JSON ``text`` with each lone surrogate escape (``\ud83d`` alone) spelled ``\ufffd``.

    For readers other than orjson (Python's ``json`` takes such escapes and would hand
    back a string that nothing can encode).
    """
    return _ESCAPES_STR.sub(_replace_str, text)


def clean_text(text: str) -> str:
    r"""``text`` with each lone surrogate code point replaced by U+FFFD.

    Adjacent high and low halves (``"\ud83d\ude00"``) are joined into their character.

    Cheap for the usual text: ASCII is returned at once, other text after one scan.
    """
    if text.isascii() or _LONE.search(text) is None:
        return text
    # Two halves that make a pair become its character, as ``json.dumps`` and a JSON
    # reader would join them; the others become U+FFFD.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
