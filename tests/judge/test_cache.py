"""Judge reply cache: keys, the in-memory LRU, the shared SQLite file and its failures."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from tracescore.exceptions import ConfigError
from tracescore.judge.cache import JudgeCache, cache_key
from tracescore.judge.types import JudgeReply

BASE_KEY: dict[str, Any] = {
    "criterion": "hallucinations",
    "version": "1",
    "model": "gemini-2.5-flash",
    "config": {"temperature": 0.0, "top_p": 1},
    "system": "You are a strict judge.",
    "prompt": "Question: ...\nAnswer: ...",
    "schema": {"type": "object", "properties": {"score": {"type": "number"}}},
    "sample": 0,
}

REPLY = JudgeReply(text='{"score": 1}', input_tokens=120, output_tokens=8, model_version="v-001")


def reply(n: int) -> JudgeReply:
    return JudgeReply(text=f'{{"score": {n}}}', input_tokens=n, output_tokens=1)


# ---------------------------------------------------------------- cache_key


def test_cache_key_is_stable_hex_sha256() -> None:
    key = cache_key(**BASE_KEY)
    assert key == cache_key(**dict(BASE_KEY))
    assert len(key) == 64
    assert int(key, 16) >= 0


def test_cache_key_ignores_mapping_order() -> None:
    shuffled = dict(BASE_KEY)
    shuffled["config"] = {"top_p": 1, "temperature": 0.0}
    shuffled["schema"] = {"properties": {"score": {"type": "number"}}, "type": "object"}
    assert cache_key(**shuffled) == cache_key(**BASE_KEY)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("criterion", "safety"),
        ("version", "2"),
        ("model", "gemini-2.5-pro"),
        ("config", {"temperature": 0.5, "top_p": 1}),
        ("config", {"temperature": 0.0, "top_p": True}),
        ("config", {}),
        ("system", "You are a lenient judge."),
        ("prompt", "Question: ...\nAnswer: ... "),
        ("schema", {"type": "object"}),
        ("sample", 1),
    ],
)
def test_cache_key_changes_with_every_field(field: str, value: object) -> None:
    changed = dict(BASE_KEY)
    changed[field] = value
    assert cache_key(**changed) != cache_key(**BASE_KEY)


def test_cache_key_fields_do_not_run_into_each_other() -> None:
    a = dict(BASE_KEY, system="ab", prompt="c")
    b = dict(BASE_KEY, system="a", prompt="bc")
    assert cache_key(**a) != cache_key(**b)


def test_cache_key_accepts_bytes_and_rejects_non_json() -> None:
    with_bytes = dict(BASE_KEY, config={"seed": b"\x00\x01"})
    assert cache_key(**with_bytes) != cache_key(**dict(BASE_KEY, config={"seed": b"\x00\x02"}))
    with pytest.raises(TypeError):
        cache_key(**dict(BASE_KEY, config={"x": object()}))


# ---------------------------------------------------------------- memory


def test_memory_only_hit_and_miss() -> None:
    async def scenario() -> None:
        cache = JudgeCache()
        assert cache.path is None
        assert cache.persistent is False
        assert await cache.get("k") is None
        await cache.put("k", REPLY)
        assert await cache.get("k") == REPLY
        assert (cache.hits, cache.misses) == (1, 1)
        await cache.aclose()

    asyncio.run(scenario())


def test_lru_is_bounded_and_keeps_recently_used() -> None:
    async def scenario() -> None:
        cache = JudgeCache(memory_entries=2)
        await cache.put("a", reply(1))
        await cache.put("b", reply(2))
        assert await cache.get("a") == reply(1)  # "a" is now the most recent
        await cache.put("c", reply(3))  # evicts "b", the least recently used
        assert await cache.get("b") is None
        assert await cache.get("a") == reply(1)
        assert await cache.get("c") == reply(3)
        await cache.put("d", reply(4))  # evicts "a"
        assert await cache.get("a") is None
        assert (cache.hits, cache.misses) == (3, 2)

    asyncio.run(scenario())


def test_put_replaces_an_existing_entry() -> None:
    async def scenario() -> None:
        cache = JudgeCache(memory_entries=1)
        await cache.put("a", reply(1))
        await cache.put("a", reply(2))
        assert await cache.get("a") == reply(2)

    asyncio.run(scenario())


def test_zero_memory_entries_keeps_nothing_in_memory() -> None:
    async def scenario() -> None:
        cache = JudgeCache(memory_entries=0)
        await cache.put("a", reply(1))
        assert await cache.get("a") is None

    asyncio.run(scenario())


def test_negative_memory_entries_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="memory_entries"):
        JudgeCache(memory_entries=-1)


# ---------------------------------------------------------------- SQLite file


def test_file_persists_across_instances(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "nested" / "dirs" / "judge-cache.sqlite"
    key = cache_key(**BASE_KEY)

    async def first() -> None:
        cache = JudgeCache(path)
        assert await cache.get(key) is None
        await cache.put(key, REPLY)
        assert cache.persistent is True
        await cache.aclose()

    async def second() -> None:
        cache = JudgeCache(path)
        assert await cache.get(key) == REPLY  # from the file
        assert await cache.get("other") is None
        assert (cache.hits, cache.misses) == (1, 1)
        await cache.aclose()
        # The file hit was promoted to memory: still served after the file is closed.
        assert await cache.get(key) == REPLY
        assert cache.hits == 2

    with caplog.at_level(logging.WARNING, logger="tracescore.judge.cache"):
        asyncio.run(first())
        asyncio.run(second())
    assert path.is_file()
    assert caplog.records == []


def test_file_uses_wal_and_the_documented_table(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"

    async def scenario() -> None:
        cache = JudgeCache(path)
        await cache.put("k", REPLY)
        await cache.aclose()

    asyncio.run(scenario())
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        columns = [row[1] for row in conn.execute("PRAGMA table_info(judge_replies)")]
        assert columns == [
            "key",
            "text",
            "input_tokens",
            "output_tokens",
            "model_version",
            "created_at",
        ]
        row = conn.execute(
            "SELECT text, input_tokens, output_tokens, model_version, created_at "
            "FROM judge_replies WHERE key = 'k'"
        ).fetchone()
    finally:
        conn.close()
    assert row[:4] == ('{"score": 1}', 120, 8, "v-001")
    assert row[4] > 0


def test_two_open_caches_share_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"

    async def scenario() -> None:
        writer, reader = JudgeCache(path), JudgeCache(path)
        await asyncio.gather(*(writer.put(f"k{i}", reply(i)) for i in range(20)))
        got = await asyncio.gather(*(reader.get(f"k{i}") for i in range(20)))
        assert got == [reply(i) for i in range(20)]
        assert reader.hits == 20
        await asyncio.gather(writer.aclose(), reader.aclose())

    asyncio.run(scenario())


def test_sqlite_work_does_not_block_the_event_loop(tmp_path: Path) -> None:
    async def scenario() -> None:
        cache = JudgeCache(tmp_path / "cache.sqlite")
        gate = threading.Event()
        assert cache._executor is not None
        cache._executor.submit(gate.wait, 30)  # occupy the worker thread
        lookup = asyncio.create_task(cache.get("k"))
        ticks = 0
        while ticks < 5:  # the loop keeps running other work meanwhile
            await asyncio.sleep(0)  # a yield, not a wait
            ticks += 1
        assert not lookup.done()
        gate.set()
        assert await lookup is None
        assert cache.misses == 1
        await cache.aclose()

    asyncio.run(scenario())


def test_corrupt_file_falls_back_to_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "cache.sqlite"
    garbage = b"this is not a database\x00\xff" * 200
    path.write_bytes(garbage)

    async def scenario() -> None:
        cache = JudgeCache(path)
        assert await cache.get("k") is None
        await cache.put("k", REPLY)
        assert await cache.get("k") == REPLY
        assert cache.persistent is False
        await cache.aclose()

    with caplog.at_level(logging.WARNING, logger="tracescore.judge.cache"):
        asyncio.run(scenario())
    assert any(
        "memory only" in record.getMessage() and str(path) in record.getMessage()
        for record in caplog.records
    )
    assert path.read_bytes() == garbage  # the user's file is left alone


def test_unopenable_path_falls_back_to_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        cache = JudgeCache(tmp_path)  # a directory, not a file
        await cache.put("k", REPLY)
        assert await cache.get("k") == REPLY
        assert cache.persistent is False
        await cache.aclose()

    with caplog.at_level(logging.WARNING, logger="tracescore.judge.cache"):
        asyncio.run(scenario())
    assert any("memory only" in record.getMessage() for record in caplog.records)


def test_foreign_table_falls_back_to_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "cache.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE judge_replies (key TEXT PRIMARY KEY, verdict TEXT)")
    conn.commit()
    conn.close()

    async def scenario() -> None:
        cache = JudgeCache(path)
        await cache.put("k", REPLY)
        assert await cache.get("k") == REPLY
        assert cache.persistent is False
        await cache.aclose()

    with caplog.at_level(logging.WARNING, logger="tracescore.judge.cache"):
        asyncio.run(scenario())
    assert any("memory only" in record.getMessage() for record in caplog.records)


def test_aclose_is_idempotent_and_cache_stays_usable(tmp_path: Path) -> None:
    async def scenario() -> None:
        cache = JudgeCache(tmp_path / "cache.sqlite")
        await cache.put("a", reply(1))
        await cache.aclose()
        await cache.aclose()
        assert cache.persistent is False
        await cache.put("b", reply(2))  # memory only now, no error
        assert await cache.get("b") == reply(2)
        assert await cache.get("a") == reply(1)
        memory_only = JudgeCache()
        await memory_only.aclose()
        await memory_only.aclose()

    asyncio.run(scenario())
