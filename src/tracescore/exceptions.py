"""The errors tracescore raises, as one small tree.

```
TracescoreError                 base of everything raised on purpose
├── ConfigError                 a user mistake in settings, flags or a config file
├── InputError                  input that cannot be read at all (missing path, unreadable file)
├── OutputError                 an output file that cannot be written (directory missing, full disk)
├── TraceFormatError            one bad record: where it is (path, line, span) and what is wrong
└── JudgeError                  one judge call did not give a usable verdict; ``reason`` says why
    ├── JudgeTimeout            no reply within the per-call timeout ("judge timeout")
    ├── JudgeHTTPError          the judge answered with an HTTP error ("judge error 500")
    ├── JudgeConnectionError    refused, reset, half-written reply ("judge connection error")
    ├── JudgeBlocked            the judge's safety filter blocked the prompt or reply
    ├── JudgeEmptyReply         no candidate / no text in the reply ("empty reply")
    ├── JudgeUnparsableReply    the reply is not JSON of the requested schema ("unparsable reply")
    ├── JudgeUnavailable        the circuit breaker is open: not called ("judge unavailable")
    └── BudgetExhausted         the daily spend cap is reached: not called ("budget exhausted")
```

A ``JudgeError`` never escapes a criterion: it becomes NOT_EVALUATED with its ``reason``.

The CLI turns each of them into one line on stderr and an exit code; a traceback is
only ever shown for a bug in tracescore itself.
"""

from __future__ import annotations

__all__ = [
    "BudgetExhausted",
    "ConfigError",
    "InputError",
    "JudgeBlocked",
    "JudgeConnectionError",
    "JudgeEmptyReply",
    "JudgeError",
    "JudgeHTTPError",
    "JudgeTimeout",
    "JudgeUnavailable",
    "JudgeUnparsableReply",
    "OutputError",
    "TraceFormatError",
    "TracescoreError",
]


class TracescoreError(Exception):
    """Base class of every error tracescore raises deliberately."""


class ConfigError(TracescoreError):
    """A setting, flag or configuration file is wrong; the message says where and why."""


class InputError(TracescoreError):
    """Input cannot be opened or read at all (as opposed to one bad record in it)."""


class OutputError(TracescoreError):
    """An output file cannot be written; the message names the file and the reason."""


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


class JudgeError(TracescoreError):
    """A judge call gave no usable verdict.

    Attributes:
        reason: Short, bounded text used as the NOT_EVALUATED reason and as a metric
            label value (``judge timeout``, ``judge error 429``, ...).
        retryable: Whether trying again later may succeed (timeouts, 429, 5xx, resets).

    """

    default_reason = "judge error"
    retryable = False

    def __init__(self, message: str = "", *, reason: str | None = None) -> None:
        self.reason = reason or self.default_reason
        super().__init__(message or self.reason)


class JudgeTimeout(JudgeError):
    """No reply within the per-call timeout."""

    default_reason = "judge timeout"
    retryable = True


class JudgeHTTPError(JudgeError):
    """The judge answered with an HTTP error status.

    Attributes:
        status: The HTTP status code.
        retry_after: Seconds the server asked us to wait (``Retry-After``), if it did.

    """

    def __init__(self, status: int, message: str = "", *, retry_after: float | None = None) -> None:
        self.status = status
        self.retry_after = retry_after
        super().__init__(message or f"HTTP {status}", reason=f"judge error {status}")

    @property
    def retryable(self) -> bool:  # type: ignore[override]
        """429, 408 and 5xx are worth retrying; other 4xx are our own mistake."""
        return self.status in (408, 429) or self.status >= 500


class JudgeConnectionError(JudgeError):
    """The connection failed (refused, reset, half-written reply)."""

    default_reason = "judge connection error"
    retryable = True


class JudgeBlocked(JudgeError):
    """The judge's safety filter blocked the prompt or the reply."""

    default_reason = "blocked by safety filter"


class JudgeEmptyReply(JudgeError):
    """The reply had no candidate or no text."""

    default_reason = "empty reply"


class JudgeUnparsableReply(JudgeError):
    """The reply is not JSON, or not JSON of the requested schema."""

    default_reason = "unparsable reply"


class JudgeUnavailable(JudgeError):
    """The circuit breaker is open: the judge is considered down and was not called."""

    default_reason = "judge unavailable"


class BudgetExhausted(JudgeError):
    """The daily spend cap is reached: the judge was not called."""

    default_reason = "budget exhausted"
