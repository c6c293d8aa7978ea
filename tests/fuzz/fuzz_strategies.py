"""Hypothesis strategies for the fuzz tests: hostile leaves, JSON tree and byte mutations."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from hypothesis import strategies as st

# --------------------------------------------------------------------------- leaves

#: Strings that mean something to some reader: ids, enum names, numbers, markers.
TRICKY_TEXT = st.sampled_from(
    [
        "",
        " ",
        "0" * 32,
        "0" * 16,
        "g" * 32,
        "5B8EFFF798038103D269B633813FC60C",
        "AAAAAAAAAAAAAAAAAAAAAA==",
        "W47/95gDgQPSabYzgT/GDA",
        "CazD2SM5RfA",
        "CazD2SM5RfA=",
        "-_-_-_-_-_-",
        "²",
        "٣",
        "12²",
        "9" * 5000,
        "-1",
        " 3 ",
        "1e3",
        "1.5",
        "NaN",
        "Infinity",
        "-Infinity",
        "SPAN_KIND_SERVER",
        "span_kind_consumer",
        "STATUS_CODE_ERROR",
        "error",
        "CHILD_OF",
        "FOLLOWS_FROM",
        "__REDACTED__",
        "<elided>",
        "{}",
        "[]",
        "{",
        "[{",
        '{"role": "user", "parts": [{"type": "text", "content": "hi"',
        '[{"role":"assistant","content":null,"tool_calls":[{"id":1,"function":"x"}]}]',
        "\\u12",
        '"\\ud800"',
        "\x00",
        "\ud800",
        "true",
        "null",
    ]
)

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
#: Integers orjson can produce (it reads larger ones as floats).
JSON_INTS = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.sampled_from([0, -1, 1, 5, 6, 2**31, 2**63 - 1, -(2**63), 2**63, 2**64 - 1]),
)
JSON_FLOATS = st.floats(allow_nan=False, allow_infinity=False)
TEXT = st.one_of(TRICKY_TEXT, st.text(max_size=12))
#: Text that protobuf accepts in a ``string`` field (valid UTF-8: no lone surrogates).
PROTO_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"]), max_size=12
) | st.sampled_from(["", "²", "9" * 50, "{", "__REDACTED__", "<elided>"])


def deep_list(depth: int, leaf: Any = None) -> Any:
    """``depth`` nested one-element lists around ``leaf`` (built without recursion)."""
    value = [] if leaf is None else [leaf]
    for _ in range(depth):
        value = [value]
    return value


def deep_json_text(depth: int) -> str:
    """A JSON string of ``depth`` nested arrays and objects (orjson stops at 1024)."""
    return '[{"a":' * (depth // 2) + "1" + "}]" * (depth // 2)


JSON_SCALARS = st.one_of(st.none(), st.booleans(), JSON_INTS, JSON_FLOATS, TEXT)

#: Values orjson could have produced: what a JSON reader must survive in any field.
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
) | st.one_of(  # built per draw: mutations must never change a shared constant
    st.builds(deep_list, st.sampled_from([300, 1000])),
    st.builds(lambda: {"arrayValue": {"values": deep_list(200, {})}}),
)


# --------------------------------------------------------------------------- JSON trees

Path = tuple[Any, ...]


def tree_paths(node: Any, prefix: Path = ()) -> list[Path]:
    """Every node position under ``node`` (itself included), iteratively."""
    out: list[Path] = []
    stack: list[tuple[Any, Path]] = [(node, prefix)]
    while stack:
        item, path = stack.pop()
        out.append(path)
        if isinstance(item, dict):
            stack.extend((value, (*path, key)) for key, value in item.items())
        elif isinstance(item, list):
            stack.extend((value, (*path, index)) for index, value in enumerate(item))
    return out


def get_at(node: Any, path: Path) -> Any:
    """The node at ``path``."""
    for step in path:
        node = node[step]
    return node


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()


def json_copy(node: Any, key: Callable[[str], str] = str) -> Any:
    """A deep copy of a JSON tree with ``key`` applied to object keys; iterative (any depth)."""
    if not isinstance(node, (dict, list)):
        return node
    root: Any = {} if isinstance(node, dict) else []
    stack = [(node, root)]
    while stack:
        source, target = stack.pop()
        items: Iterable[tuple[Any, Any]] = (
            source.items() if isinstance(source, dict) else enumerate(source)
        )
        for name, value in items:
            if isinstance(value, (dict, list)):
                new: Any = {} if isinstance(value, dict) else []
                stack.append((value, new))
            else:
                new = value
            if isinstance(target, dict):
                target[key(name)] = new
            else:
                target.append(new)
    return root


def snake_case_keys(node: Any) -> Any:
    """A copy of ``node`` with every object key in snake_case (``traceId`` → ``trace_id``)."""
    return json_copy(node, _snake)


def _replace(root: Any, path: Path, value: Any) -> Any:
    if not path:
        return value
    get_at(root, path[:-1])[path[-1]] = value
    return root


@st.composite
def mutated_tree(draw: st.DrawFn, doc: Any, *, under: Path = (), ops: int = 3) -> Any:
    """A deep copy of ``doc`` with up to ``ops`` mutations of nodes at or below ``under``."""
    root = json_copy(doc)
    for _ in range(draw(st.integers(1, ops))):
        paths = tree_paths(get_at(root, under), under)
        path = draw(st.sampled_from(paths))
        node = get_at(root, path)
        parent = get_at(root, path[:-1]) if path else None
        op = draw(
            st.sampled_from(
                ["replace", "replace", "delete", "rename", "snake", "wrap", "dup", "number"]
            )
        )
        if op == "replace" or (op in ("delete", "rename") and path == under):
            root = _replace(root, path, draw(JSON_VALUES))
        elif op == "delete":
            assert parent is not None  # path != under, so it has a parent
            del parent[path[-1]]
        elif op == "rename" and isinstance(parent, dict):
            value = parent.pop(path[-1])
            parent[draw(TEXT | st.just(_snake(str(path[-1]))))] = value
        elif op == "snake":
            root = _replace(root, path, snake_case_keys(node))
        elif op == "wrap":
            root = _replace(root, path, draw(st.sampled_from([[node], {"value": node}])))
        elif op == "dup" and isinstance(node, list) and node:
            node.append(json_copy(draw(st.sampled_from(node))))
        elif op == "number" and isinstance(node, str):
            root = _replace(root, path, draw(JSON_INTS | JSON_FLOATS))
        if not _exists(root, under):
            break
    return root


def _exists(root: Any, path: Path) -> bool:
    try:
        get_at(root, path)
    except (KeyError, IndexError, TypeError):
        return False
    return True


# --------------------------------------------------------------------------- bytes

INTERESTING_BYTES = b'\x00\xff\x7f\x80"{}[],:\\\n 09e-+.ntf\x1f\x8b\xef'


@st.composite
def mutated_bytes(draw: st.DrawFn, data: bytes, *, others: tuple[bytes, ...] = ()) -> bytes:
    """``data`` after 1-4 byte-level mutations (libFuzzer-style: flip, splice, cut...)."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        size = len(buf)
        at = draw(st.integers(0, size))
        op = draw(st.sampled_from(["flip", "set", "delete", "insert", "dup", "truncate", "splice"]))
        if op == "flip" and at < size:
            buf[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and at < size:
            buf[at] = draw(st.sampled_from(INTERESTING_BYTES))
        elif op == "delete":
            del buf[at : at + draw(st.integers(1, 64))]
        elif op == "insert":
            buf[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif op == "dup" and at < size:
            buf[at:at] = buf[at : at + draw(st.integers(1, 256))]
        elif op == "truncate":
            del buf[at:]
        elif op == "splice" and others:
            other = draw(st.sampled_from(others))
            cut = draw(st.integers(0, len(other)))
            buf[at:] = other[cut:]
    return bytes(buf)


def one_of_seeds(seeds: list[bytes], mutate: Callable[..., st.SearchStrategy[bytes]]) -> Any:
    """A seed, mutated, with the other seeds available for splicing."""
    others = tuple(seeds)
    return st.sampled_from(seeds).flatmap(lambda seed: mutate(seed, others=others))
