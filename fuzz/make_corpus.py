"""Write the seed corpora of the atheris harnesses into ``fuzz/corpus/<target>/``.

Seeds are the real telemetry in ``examples/traces`` (Collector JSON Lines from ADK) and
``tests/fixtures`` (recorded OpenInference-over-ADK samples), in every form a reader
accepts: lines, whole files, gzip, pretty-printed documents, Tempo/Jaeger wrappers,
Jaeger v1, snake_case keys, protobuf requests and length-prefixed files; and, for the
conventions harness, each trace in the harness's JSON form plus each content value
alone. Corpora are generated, never committed (``fuzz/corpus/`` is git-ignored).

Usage: ``python fuzz/make_corpus.py [--out fuzz/corpus]``
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import _common  # noqa: F401 - puts the shared helpers on sys.path
import orjson
from fuzz_helpers import (
    EXAMPLES_DIR,
    example_lines,
    jaeger_document,
    length_prefixed,
    logs_request,
    otlp_json_document,
    seed_traces,
    trace_request,
)
from fuzz_strategies import snake_case_keys

from tracescore.spans import LogRecord, SpanRecord

HERE = Path(__file__).resolve().parent
_CONTENT_LIMIT = 16 * 1024


def _write(directory: Path, seeds: Iterable[bytes]) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    count = 0
    for seed in seeds:
        name = hashlib.sha1(seed, usedforsecurity=False).hexdigest()
        path = directory / name
        if not path.exists():
            path.write_bytes(seed)
            count += 1
    return count


def json_seeds() -> Iterable[bytes]:
    """Files the JSON readers accept, and a protobuf file for the content sniffing."""
    yield from (b"", b"{}", b'{"resourceSpans":[]}', b'{"data":[]}', b"\n\n")
    lines = example_lines()
    yield from (line + b"\n" for line in lines)
    for path in sorted(EXAMPLES_DIR.glob("*.jsonl")):
        data = path.read_bytes()
        yield data
        yield gzip.compress(data)
    for line in lines:
        doc = orjson.loads(line)
        yield orjson.dumps(doc, option=orjson.OPT_INDENT_2)
        yield orjson.dumps({"result": doc})
        yield orjson.dumps({"trace": doc})
        yield orjson.dumps({"batches": doc.get("resourceSpans", [])})
        yield orjson.dumps(snake_case_keys(doc))
    for spans, logs in seed_traces():
        yield orjson.dumps(otlp_json_document(spans, logs)) + b"\n"
        yield orjson.dumps(jaeger_document(spans))
    yield length_prefixed(proto_seeds())


def proto_seeds() -> list[bytes]:
    """Serialized trace and logs export requests of every seed trace."""
    seeds = [b""]
    for spans, logs in seed_traces():
        seeds.append(trace_request(spans).SerializeToString())
        if logs:
            seeds.append(logs_request(logs).SerializeToString())
    return seeds


def _harness_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return "b:" + value.decode("utf-8", "replace")
    if isinstance(value, list):
        return [_harness_value(item) for item in value]
    if isinstance(value, dict):
        return {key: _harness_value(item) for key, item in value.items()}
    return value


def _harness_trace(spans: list[SpanRecord], logs: list[LogRecord]) -> dict[str, Any]:
    """A trace in ``fuzz_conventions.py``'s JSON form."""
    return {
        "spans": [
            {
                "span_id": s.span_id,
                "parent_span_id": s.parent_span_id,
                "name": s.name,
                "scope": s.scope,
                "kind": s.kind,
                "status": s.status_code,
                "start": s.start_ns,
                "end": s.end_ns,
                "attributes": _harness_value(s.attributes),
                "events": [
                    {"name": e.name, "time": e.time_ns, "attributes": _harness_value(e.attributes)}
                    for e in s.events
                ],
            }
            for s in spans
        ],
        "logs": [
            {
                "span_id": r.span_id,
                "event_name": r.event_name,
                "time": r.time_ns,
                "body": _harness_value(r.body),
                "attributes": _harness_value(r.attributes),
            }
            for r in logs
        ],
    }


def convention_seeds() -> Iterable[bytes]:
    """Seeds of the conventions harness.

    Each seed trace in the harness's JSON form; each span alone, with its parent and
    its logs (small seeds, for runs with a low ``-max_len``); each content value alone.
    """
    values: set[bytes] = set()
    for spans, logs in seed_traces():
        yield orjson.dumps(_harness_trace(spans, logs))
        by_id = {span.span_id: span for span in spans}
        for span in spans:
            parent = by_id.get(span.parent_span_id or "")
            family = [parent, span] if parent is not None else [span]
            own = [log for log in logs if log.span_id == span.span_id]
            yield orjson.dumps(_harness_trace(family, own))
        for span in spans:
            for value in span.attributes.values():
                if isinstance(value, str) and 2 < len(value) <= _CONTENT_LIMIT:
                    values.add(value.encode())
                elif isinstance(value, (list, dict)):
                    values.add(orjson.dumps(value))
        for log in logs:
            if log.body is not None:
                values.add(orjson.dumps(_harness_value(log.body)))
    yield from sorted(values)


def main() -> None:
    """Write every corpus; print how many new seeds each got."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "corpus")
    args = parser.parse_args()
    for target, seeds in (
        ("otlp_json", json_seeds()),
        ("otlp_proto", [*proto_seeds(), length_prefixed(proto_seeds())]),
        ("conventions", convention_seeds()),
    ):
        written = _write(args.out / target, seeds)
        print(f"{target}: {written} new seeds in {args.out / target}")


if __name__ == "__main__":
    main()
