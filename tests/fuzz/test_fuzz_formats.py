"""Fuzzing the file readers and the OTLP/JSON decoders (JSON Lines, documents, wrappers, gzip).

Contract (see ``fuzz_helpers``): for any bytes, :func:`read_file` yields batches of
well-formed records and located errors (or raises ``InputError``), within a time limit;
the import pipeline counts every record and error; a bad span costs only itself.
"""

from __future__ import annotations

import gzip
from typing import Any

import orjson
import pytest
from fuzz_helpers import (
    ContractViolation,
    check_batch,
    check_log,
    check_span,
    example_lines,
    fuzz_settings,
    jaeger_document,
    json_attributes,
    read_bytes,
    run_import,
    seed_traces,
    time_limit,
)
from fuzz_strategies import (
    INT64,
    JSON_SCALARS,
    get_at,
    mutated_bytes,
    mutated_tree,
    one_of_seeds,
    snake_case_keys,
    tree_paths,
)
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry._logs import LogRecord as APILogRecord
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext

from tracescore.formats.files import is_json_lines, read_json_lines
from tracescore.formats.jaeger import decode_jaeger_v1
from tracescore.formats.otlp_json import decode_json_document
from tracescore.formats.sdk import from_readable_span, from_sdk_log
from tracescore.importer import ImportStats, import_paths
from tracescore.server.decoding import MalformedRequest, decode_json_request
from tracescore.spans import Origin

ORIGIN = Origin("fuzz.jsonl", 3)
LINES = example_lines()
DOCS = [orjson.loads(line) for line in LINES]


_settings = fuzz_settings


def _span_positions() -> list[tuple[int, tuple[Any, ...]]]:
    """(document index, path of a span) for every span of every seed document."""
    out = []
    for index, doc in enumerate(DOCS):
        for path in tree_paths(doc):
            if len(path) >= 2 and path[-2] == "spans" and isinstance(path[-1], int):
                out.append((index, path))
    return out


SPANS = _span_positions()


def _decode(doc: object) -> Any:
    with time_limit():
        batch = decode_json_document(doc, origin=ORIGIN)
    check_batch(batch, path=ORIGIN.path)
    return batch


# --------------------------------------------------------------------------- bytes


@_settings(150)
@given(one_of_seeds([line + b"\n" for line in LINES], mutated_bytes))
def test_mutated_lines(data: bytes) -> None:
    with time_limit():
        run_import(read_bytes(data))


@_settings(60)
@given(
    st.lists(st.sampled_from(LINES), min_size=1, max_size=4).flatmap(
        lambda lines: mutated_bytes(b"\n".join(lines))
    ),
    st.booleans(),
)
def test_mutated_files(data: bytes, compress: bool) -> None:
    """Several lines, maybe gzip-compressed, then mutated (a corrupt gzip stream too)."""
    if compress:
        data = gzip.compress(data)
    with time_limit():
        run_import(read_bytes(data))


@_settings(150)
@given(st.binary(max_size=300), st.sampled_from([b"", b"{", b"[", b"\xef\xbb\xbf{", b"\x1f\x8b"]))
def test_random_bytes(data: bytes, prefix: bytes) -> None:
    with time_limit():
        run_import(read_bytes(prefix + data))


# --------------------------------------------------------------------------- structure


@_settings(200)
@given(
    st.sampled_from(SPANS).flatmap(
        lambda pos: st.tuples(st.just(pos), mutated_tree(DOCS[pos[0]], under=pos[1]))
    )
)
def test_bad_span_costs_only_itself(case: tuple[tuple[int, Any], Any]) -> None:
    """Mutate one span: it decodes or is one located error; every other span is kept."""
    (index, path), doc = case
    original = _decode(DOCS[index])
    assert not original.errors
    batch = _decode(doc)
    assert len(batch.spans) + len(batch.errors) == len(original.spans)
    assert len(batch.errors) <= 1
    untouched = {s.span_id for s in original.spans} - {get_at(DOCS[index], path)["spanId"]}
    assert untouched <= {s.span_id for s in batch.spans}
    for error in batch.errors:
        assert (error.path, error.line) == (ORIGIN.path, ORIGIN.line)
        assert ".spans[" in error.detail
    run_import([batch])


@_settings(200)
@given(st.sampled_from(DOCS).flatmap(lambda doc: mutated_tree(doc, ops=4)))
def test_mutated_documents(doc: Any) -> None:
    """Mutate anything (blocks, scopes, wrappers, keys); also read it back from bytes."""
    run_import([_decode(doc)])
    try:
        data = orjson.dumps(doc)
    except orjson.JSONEncodeError:  # nested deeper than orjson writes (it reads 1024 levels)
        return
    with time_limit():
        run_import(read_bytes(data + b"\n"))


_WRAPPERS = [
    lambda d: d,
    snake_case_keys,
    lambda d: {"result": d},
    lambda d: {"trace": d},
    lambda d: {"batches": d.get("resourceSpans")} if isinstance(d, dict) else d,
    lambda d: {"data": [d]},
]


@_settings(100)
@given(
    st.sampled_from(DOCS).flatmap(lambda doc: mutated_tree(doc, ops=2)),
    st.sampled_from(_WRAPPERS),
)
def test_wrapped_documents(doc: Any, wrap: Any) -> None:
    """Tempo / Jaeger v3 / snake_case spellings of mutated documents, as files and requests."""
    wrapped = wrap(doc)
    run_import([_decode(wrapped)])
    try:
        data = orjson.dumps(wrapped)
    except orjson.JSONEncodeError:
        return
    pretty = orjson.dumps(wrapped, option=orjson.OPT_INDENT_2)  # one document, many lines
    with time_limit():
        run_import(read_bytes(pretty))
        for signal in ("traces", "logs"):
            try:
                batch = decode_json_request(signal, data, origin=ORIGIN)
            except MalformedRequest:
                continue
            check_batch(batch, path=ORIGIN.path)


# --------------------------------------------------------------------------- Jaeger v1


JAEGER = [jaeger_document(spans) for spans, _ in seed_traces()]


@_settings(150)
@given(st.sampled_from(JAEGER).flatmap(lambda doc: mutated_tree(doc, ops=3)))
def test_mutated_jaeger(doc: Any) -> None:
    with time_limit():
        batch = decode_jaeger_v1(doc, origin=ORIGIN)
    check_batch(batch, path=ORIGIN.path)
    run_import([batch])
    run_import([_decode(doc)])


# --------------------------------------------------------------------------- counting


@_settings(40)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(LINES).map(lambda line: ("good", line)),
            st.sampled_from(LINES).flatmap(
                lambda line: st.integers(1, len(line) - 1).map(lambda cut: ("bad", line[:cut]))
            ),
            st.just(("blank", b"   ")),
        ),
        max_size=8,
    ),
    st.booleans(),
)
def test_bad_lines_counted_and_located(tmp_path_factory: Any, lines: Any, compress: bool) -> None:
    """Truncated lines are one located error each; every span of the good lines is kept."""
    lines = [("good", LINES[0]), *lines]  # a bad first line could mean "one JSON document"
    path = tmp_path_factory.mktemp("fuzz") / "traces.jsonl"
    data = b"\n".join(line for _, line in lines) + b"\n"
    path.write_bytes(gzip.compress(data) if compress else data)
    stats = ImportStats()
    with time_limit():
        invocations = list(import_paths([str(path)], stats))
    bad = [number for number, (kind, _) in enumerate(lines, 1) if kind == "bad"]
    good = [line for kind, line in lines if kind == "good"]
    assert stats.bad_records == len(bad)
    assert [(e.path, e.line) for e in stats.errors] == [(str(path), line) for line in bad]
    assert all(e.detail.startswith("invalid JSON") for e in stats.errors)
    expected = sum(len(decode_json_document(orjson.loads(g), origin=None).spans) for g in good)
    assert stats.spans == expected
    assert stats.records == len(lines) - sum(kind == "blank" for kind, _ in lines)
    assert stats.invocations == len(invocations)
    if not compress:  # the parallel import reads line ranges: same batches, same places
        assert is_json_lines(str(path))
        middle = len(data) // 2
        middle = data.index(b"\n", middle) + 1 if b"\n" in data[middle:] else len(data)
        first_line = data[:middle].count(b"\n") + 1
        parts = [
            *read_json_lines(str(path), 0, middle, 1),
            *read_json_lines(str(path), middle, len(data), first_line),
        ]
        assert [(e.path, e.line) for b in parts for e in b.errors] == [
            (e.path, e.line) for e in stats.errors
        ]
        assert sum(len(b.spans) for b in parts) == expected


# --------------------------------------------------------------------------- SDK spans


_SDK_SCALARS = st.one_of(
    st.booleans(), INT64, st.floats(), st.text(max_size=6), st.binary(max_size=4)
)
_SDK_VALUES = st.one_of(
    st.none(), _SDK_SCALARS, *(st.lists(s, max_size=3) for s in (st.booleans(), INT64, st.text()))
)


@_settings(100)
@given(
    st.dictionaries(st.text(max_size=6), _SDK_VALUES, max_size=4),
    JSON_SCALARS | st.lists(JSON_SCALARS, max_size=3) | st.dictionaries(st.text(), JSON_SCALARS),
)
def test_sdk_records_with_any_values(attributes: dict[str, Any], body: Any) -> None:
    """What the SDK lets through (its attribute cleaning; any log body) converts cleanly.

    Deeper values than the SDK admits are the live engine's business: it counts a record
    its converter cannot read as dropped ("unreadable").
    """
    context = SpanContext(trace_id=0x5B8EFFF798038103D269B633813FC60C, span_id=1, is_remote=False)
    cleaned = BoundedAttributes(attributes=attributes, immutable=False)
    check_span(from_readable_span(ReadableSpan(name="s", context=context, attributes=cleaned)))
    log = APILogRecord(timestamp=1, trace_id=5, span_id=1, body=body, attributes=cleaned)
    check_log(from_sdk_log(log))


def test_contract_catches_internal_errors() -> None:
    """The oracle is strict: the decoders' catch-all "internal error" fails a fuzz run."""
    batch = decode_json_document({"resourceSpans": [{"scopeSpans": [1]}]}, origin=ORIGIN)
    check_batch(batch, path=ORIGIN.path)  # one located error, not an internal one
    bogus = decode_json_document({}, origin=ORIGIN)
    bogus.errors.append(
        type(batch.errors[0])("internal error while decoding: boom", path=ORIGIN.path)
    )
    with pytest.raises(ContractViolation):
        check_batch(bogus, path=ORIGIN.path)


def test_seed_documents_round_trip() -> None:
    """The seeds themselves decode cleanly (a mutation test of garbage proves nothing)."""
    for doc in DOCS:
        assert not _decode(doc).errors
    assert json_attributes({"a": 1})
    run_import(read_bytes(b"".join(line + b"\n" for line in LINES)))
