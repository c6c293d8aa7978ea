"""The errors tracescore raises, as one small tree.

```
TracescoreError                 base of everything raised on purpose
├── ConfigError                 a user mistake in settings, flags or a config file
├── InputError                  input that cannot be read at all (missing path, unreadable file)
└── TraceFormatError            one bad record: where it is (path, line, span) and what is wrong
```

The CLI turns each of them into one line on stderr and an exit code; a traceback is
only ever shown for a bug in tracescore itself.
"""

from __future__ import annotations

__all__ = ["ConfigError", "InputError", "TraceFormatError", "TracescoreError"]


class TracescoreError(Exception):
    """Base class of every error tracescore raises deliberately."""


class ConfigError(TracescoreError):
    """A setting, flag or configuration file is wrong; the message says where and why."""


class InputError(TracescoreError):
    """Input cannot be opened or read at all (as opposed to one bad record in it)."""


class TraceFormatError(TracescoreError):
    """One record of trace input is malformed.

    Attributes:
        path: The file it came from (``"-"`` for stdin, ``None`` for in-memory input).
        line: 1-based line number in a JSON Lines file, or record index in a binary file.
        span_id: The span id (hex) when the bad record is a span whose id could be read.
        detail: What is wrong, without the location.

    """

    def __init__(
        self,
        detail: str,
        *,
        path: str | None = None,
        line: int | None = None,
        span_id: str | None = None,
    ) -> None:
        self.detail = detail
        self.path = path
        self.line = line
        self.span_id = span_id
        super().__init__(self.located())

    def __reduce__(self) -> tuple[object, ...]:
        # Keep the location across processes (parallel import): the default pickling
        # would call __init__ with the formatted message as ``detail``.
        return (_rebuild_format_error, (self.detail, self.path, self.line, self.span_id))

    def located(self) -> str:
        """The message with its location, e.g. ``traces.jsonl:12: span 00f0…: bad traceId``."""
        where = []
        if self.path is not None:
            where.append(self.path if self.line is None else f"{self.path}:{self.line}")
        elif self.line is not None:
            where.append(f"record {self.line}")
        if self.span_id:
            where.append(f"span {self.span_id}")
        return ": ".join([*where, self.detail])


def _rebuild_format_error(
    detail: str, path: str | None, line: int | None, span_id: str | None
) -> TraceFormatError:
    return TraceFormatError(detail, path=path, line=line, span_id=span_id)
