"""A cache of judge replies, in memory and in an embedded SQLite file.

Re-running a replay (or several scorer replicas judging the same traces) pays for each
judge call once: a reply is stored under :func:`cache_key`, a hash of everything that
shapes it, and served from a bounded in-memory LRU first, then from the SQLite file.

Threading: the ``sqlite3`` connection lives on one dedicated worker thread
(a ``ThreadPoolExecutor`` with one worker) and is only ever touched there; coroutines
hand it work with ``loop.run_in_executor``, so disk I/O never blocks the event loop.
The in-memory LRU and the counters are only touched by the event loop's thread, so a
:class:`JudgeCache` must be used from one event loop at a time.

Failure: the cache never breaks scoring. A file that cannot be opened or is not a
database logs a warning and the cache carries on in memory only; a failed read is a miss
and a failed write is skipped. The file is never deleted or rewritten.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import os
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import orjson

from tracescore.conventions.messages import JsonValue
from tracescore.exceptions import ConfigError
from tracescore.judge.types import JudgeReply

__all__ = ["JudgeCache", "cache_key"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

#: Bumped when the key's encoding changes, so old entries are simply never hit again.
_KEY_FORMAT = "tracescore.judge-cache/1"
#: How long a writer waits for another process's lock before giving up on one write.
_BUSY_TIMEOUT_MS = 5_000
#: Tries to switch a shared file to WAL while another process holds it.
_OPEN_ATTEMPTS = 50

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS judge_replies (
    key           TEXT PRIMARY KEY,
    text          TEXT NOT NULL,
    input_tokens  INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    model_version TEXT,
    created_at    REAL NOT NULL
)
"""
_CHECK_TABLE = (
    "SELECT key, text, input_tokens, output_tokens, model_version, created_at "
    "FROM judge_replies LIMIT 0"
)
_SELECT = "SELECT text, input_tokens, output_tokens, model_version FROM judge_replies WHERE key = ?"
_UPSERT = (
    "INSERT OR REPLACE INTO judge_replies "
    "(key, text, input_tokens, output_tokens, model_version, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)


def _encode_extra(value: object) -> object:
    """Encode what orjson does not know by itself: bytes and non-dict mappings."""
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def cache_key(
    *,
    criterion: str,
    version: str,
    model: str,
    config: Mapping[str, JsonValue],
    system: str,
    prompt: str,
    schema: Mapping[str, JsonValue],
    sample: int,
) -> str:
    """The cache key of one judge call: SHA-256 (hex) of a canonical encoding of its inputs.

    Args:
        criterion: Criterion name.
        version: Criterion (prompt template) version; bumping it invalidates old replies.
        model: Judge model name.
        config: Generation options (temperature, ...); key order does not matter.
        system: System instructions sent.
        prompt: Prompt sent (already redacted).
        schema: JSON schema of the reply.
        sample: Index of the sample when a criterion asks the judge several times.

    Returns:
        64 hex characters. Equal inputs give equal keys in every process; a change in any
        field gives a different key.

    Raises:
        TypeError: ``config`` or ``schema`` holds something that is not a JSON value.

    """
    payload = {
        "format": _KEY_FORMAT,
        "criterion": criterion,
        "version": version,
        "model": model,
        "config": config,
        "system": system,
        "prompt": prompt,
        "schema": schema,
        "sample": sample,
    }
    try:
        encoded = orjson.dumps(payload, default=_encode_extra, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError as exc:
        raise TypeError(f"judge cache key: {exc}") from exc
    return hashlib.sha256(encoded).hexdigest()


def _is_busy(exc: sqlite3.Error) -> bool:
    message = str(exc).lower()
    return "locked" in message or "busy" in message


class JudgeCache:
    """Judge replies by :func:`cache_key`: an in-memory LRU in front of a SQLite file.

    Several processes may share one file (SQLite in WAL mode with a busy timeout). After
    :meth:`aclose` the cache keeps answering from memory only.
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, memory_entries: int = 10_000
    ) -> None:
        """Create the cache; the file is opened on the worker thread, not here.

        Args:
            path: The SQLite file (parent folders are created), or None for a cache in
                memory only.
            memory_entries: How many replies the in-memory LRU keeps (0 for none).

        Raises:
            ConfigError: ``memory_entries`` is negative.

        """
        if memory_entries < 0:
            raise ConfigError(f"judge cache memory_entries must be >= 0, got {memory_entries}")
        self._memory: OrderedDict[str, JudgeReply] = OrderedDict()
        self._memory_entries = memory_entries
        self._hits = 0
        self._misses = 0
        self._closed = False
        self._path = None if path is None else Path(path)
        # Only ever read or written on the worker thread.
        self._conn: sqlite3.Connection | None = None
        self._executor: ThreadPoolExecutor | None = None
        if self._path is not None:
            self._executor = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="tracescore-judge-cache"
            )
            # Queued first: every later task on the single worker runs after it.
            self._executor.submit(self._open)

    @property
    def path(self) -> Path | None:
        """The SQLite file, or None for a memory-only cache."""
        return self._path

    @property
    def hits(self) -> int:
        """Lookups answered from memory or from the file."""
        return self._hits

    @property
    def misses(self) -> int:
        """Lookups that found nothing."""
        return self._misses

    @property
    def persistent(self) -> bool:
        """Whether the SQLite file is in use (settled once a get or put has returned)."""
        return self._conn is not None

    async def get(self, key: str) -> JudgeReply | None:
        """The reply stored under ``key``, or None; a hit in the file is kept in memory."""
        reply = self._memory.get(key)
        if reply is not None:
            self._memory.move_to_end(key)
            self._hits += 1
            return reply
        if self._executor is not None and not self._closed:
            reply = await self._on_worker(self._read, key)
            if reply is not None:
                self._remember(key, reply)
                self._hits += 1
                return reply
        self._misses += 1
        return None

    async def put(self, key: str, reply: JudgeReply) -> None:
        """Store ``reply`` under ``key`` in memory and (awaiting the write) in the file."""
        self._remember(key, reply)
        if self._executor is not None and not self._closed:
            await self._on_worker(self._write, key, reply)

    async def aclose(self) -> None:
        """Close the file and stop the worker thread; idempotent.

        Writes already handed to the worker are finished first.
        """
        if self._closed:
            return
        self._closed = True
        executor = self._executor
        if executor is None:
            return
        try:
            await asyncio.get_running_loop().run_in_executor(executor, self._close_connection)
        finally:
            executor.shutdown(wait=False)

    # ------------------------------------------------------------ event-loop side

    def _remember(self, key: str, reply: JudgeReply) -> None:
        if self._memory_entries == 0:
            return
        self._memory[key] = reply
        self._memory.move_to_end(key)
        while len(self._memory) > self._memory_entries:
            self._memory.popitem(last=False)

    async def _on_worker(self, func: Callable[..., _T], *args: object) -> _T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, func, *args)

    # ------------------------------------------------------------ worker thread only

    def _open(self) -> None:
        assert self._path is not None
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self._path, isolation_level=None)  # autocommit
        except (OSError, sqlite3.Error) as exc:
            logger.warning(
                "judge cache %s cannot be opened (%s); caching in memory only", self._path, exc
            )
            return
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            # Switching to WAL takes an exclusive lock and SQLite does not run the busy
            # handler for it: when another process (replica) opens the file at the same
            # moment, wait a little and try again instead of giving up on the file.
            for attempt in range(_OPEN_ATTEMPTS):
                try:
                    (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
                    break
                except sqlite3.OperationalError as exc:
                    if not _is_busy(exc) or attempt == _OPEN_ATTEMPTS - 1:
                        raise
                    time.sleep(0.01 * (attempt + 1))  # worker thread, never the event loop
            if str(mode).lower() != "wal":
                logger.info("judge cache %s: journal mode %s, not WAL", self._path, mode)
            conn.execute("PRAGMA synchronous = NORMAL")  # durable enough with WAL, faster
            conn.execute(_CREATE_TABLE)
            conn.execute(_CHECK_TABLE)
        except sqlite3.Error as exc:
            conn.close()
            logger.warning(
                "judge cache %s is not a usable cache database (%s); caching in memory only",
                self._path,
                exc,
            )
            return
        self._conn = conn
        logger.debug("judge cache %s opened", self._path)

    def _read(self, key: str) -> JudgeReply | None:
        conn = self._conn
        if conn is None:
            return None
        try:
            row = conn.execute(_SELECT, (key,)).fetchone()
        except sqlite3.Error as exc:
            self._failed("read", exc)
            return None
        if row is None:
            return None
        text, input_tokens, output_tokens, model_version = row
        if not (
            isinstance(text, str)
            and isinstance(input_tokens, int)
            and isinstance(output_tokens, int)
            and (model_version is None or isinstance(model_version, str))
        ):
            logger.warning("judge cache %s: malformed entry ignored", self._path)
            return None
        return JudgeReply(
            text=text,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            model_version=model_version,
        )

    def _write(self, key: str, reply: JudgeReply) -> None:
        conn = self._conn
        if conn is None:
            return
        row = (
            key,
            reply.text,
            reply.input_tokens,
            reply.output_tokens,
            reply.model_version,
            time.time(),
        )
        try:
            conn.execute(_UPSERT, row)
        except sqlite3.Error as exc:
            self._failed("write", exc)

    def _failed(self, operation: str, exc: sqlite3.Error) -> None:
        if _is_busy(exc):
            # Another replica held the lock past the busy timeout: skip this one.
            logger.warning("judge cache %s: %s skipped, file busy (%s)", self._path, operation, exc)
            return
        logger.warning(
            "judge cache %s: %s failed (%s); caching in memory only from now on",
            self._path,
            operation,
            exc,
        )
        self._close_connection()

    def _close_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            conn.close()
        except sqlite3.Error as exc:  # pragma: no cover - close rarely fails
            logger.warning("judge cache %s: close failed (%s)", self._path, exc)
