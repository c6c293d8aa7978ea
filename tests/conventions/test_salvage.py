from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracescore.conventions.salvage import salvage_json


def test_valid_json_is_not_truncated() -> None:
    assert salvage_json('{"a": [1, 2]}') == ({"a": [1, 2]}, False)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": "hel', {"a": "hel"}),
        ('{"a": 1, "b": [1, 2', {"a": 1, "b": [1, 2]}),
        ('{"a": 1, "ke', {"a": 1}),
        ('[{"x": "\\u00e9t\\u00', [{"x": "ét"}]),
        ('{"a": "tab\\', {"a": "tab"}),
        ('{"a": {"b": true, "c": nul', {"a": {"b": True}}),
    ],
)
def test_truncated_prefixes_are_salvaged(text: str, expected: object) -> None:
    value, truncated = salvage_json(text)
    assert truncated
    assert value == expected


def test_not_json_raises() -> None:
    with pytest.raises(ValueError, match="not JSON"):
        salvage_json("hello")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(value=st.dictionaries(st.text(), json_values, min_size=1), cut=st.integers(min_value=1))
def test_any_cut_of_a_json_object_never_crashes(value: dict[str, object], cut: int) -> None:
    text = orjson.dumps(value).decode()
    prefix = text[: 1 + cut % len(text)]
    try:
        parsed, truncated = salvage_json(prefix)
    except ValueError:
        return
    assert isinstance(parsed, dict)
    assert truncated == (prefix != text)
