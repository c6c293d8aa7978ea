"""Lone UTF-16 surrogates in JSON text and in Python strings read as U+FFFD."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracescore.json_text import clean_text, loads

R = "\ufffd"
HIGH, LOW = "\ud83d", "\ude00"  # the halves of U+1F600
# Text with lone halves, pairs split across code points, and ordinary characters.
SURROGATE_TEXT = st.text(
    st.one_of(
        st.sampled_from([HIGH, LOW, "\ud800", "\udfff", "\\", '"', "é", "漢", "😀"]),
        st.characters(codec="utf-8"),
    ),
    max_size=20,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r'"\ud800"', R),
        (r'"\ud800x"', R + "x"),
        (r'"\udc00"', R),
        (r'"a\uDFFFb"', "a" + R + "b"),
        (r'"\ud800\ud800"', R + R),  # two highs: neither has its low half
        (r'"\udc00\ud800"', R + R),  # a low before a high is no pair
        (r'"\ud800\u0041"', R + "A"),
        (r'"\ud83d\ude00 \ud83d"', "😀 " + R),  # the pair is kept, the cut half is not
        (r'["\\ud800", "\ud800"]', ["\\ud800", R]),  # an escaped backslash, then text
        (r'"\\\ud800"', "\\" + R),  # an escaped backslash, then a lone escape
        (r'{"k\udc00": ["\ud800", 1, null]}', {"k" + R: [R, 1, None]}),
    ],
)
def test_lone_surrogate_escapes_read_as_the_replacement_character(
    text: str, expected: object
) -> None:
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(text)  # what lost the whole value before
    assert loads(text) == expected
    assert loads(text.encode()) == expected
    assert loads(bytearray(text.encode())) == expected
    assert loads(memoryview(text.encode())) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'"a\xffb"', "a" + R + "b"),
        (b'["\xc3", "\xc3\xa9"]', [R, "é"]),  # a cut sequence, then a whole one
        (b'"\xed\xa0\x80"', R * 3),  # a surrogate encoded as UTF-8 is no UTF-8 either
        (b'{"\xf0\x9f\x98": "\\ud83d \xff"}', {R: R + " " + R}),  # both at once
    ],
)
def test_bytes_that_are_not_utf8_read_as_the_replacement_character(
    data: bytes, expected: object
) -> None:
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(data)
    assert loads(data) == expected


def test_raw_surrogates_in_a_str_are_replaced() -> None:
    assert loads('["\ud800", "' + HIGH + LOW + '"]') == [R, "😀"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (r'["\ud800", NaN]', "no low surrogate"),  # still strict about the rest
        (r'["\ud800"', "no low surrogate"),  # not JSON anyway: orjson's first error
        ('{"a": 1,}', "trailing comma"),
        (b'["\xff"', "not valid UTF-8"),  # not JSON once read either: orjson's first error
        ("", "Input is a zero-length"),
    ],
)
def test_other_errors_are_orjsons_own(text: str | bytes, message: str) -> None:
    with pytest.raises(orjson.JSONDecodeError) as caught:
        loads(text)
    assert message in str(caught.value)
    assert caught.value.pos == orjson_error_position(text)


def orjson_error_position(text: str | bytes) -> int:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return exc.pos
    raise AssertionError("orjson accepted it")


@given(SURROGATE_TEXT)
def test_any_text_that_python_writes_reads_back_cleaned(text: str) -> None:
    # json.dumps escapes lone halves (ensure_ascii) or keeps them raw (ensure_ascii=False);
    # either way the value read back is the text with its lone halves replaced.
    # The text is a value and (prefixed, so it never repeats the other key) a key.
    doc = {"t": text, "k" + text: [text]}
    expected = {"k" + clean_text(text): [clean_text(text)], "t": clean_text(text)}
    assert loads(json.dumps(doc)) == expected
    assert loads(json.dumps(doc).encode()) == expected
    assert loads(json.dumps(doc, ensure_ascii=False)) == expected
    assert orjson.dumps(loads(json.dumps(doc)))  # encodable again


@given(st.text(st.characters(codec="utf-8"), max_size=30))
def test_valid_json_is_read_exactly_as_orjson_reads_it(text: str) -> None:
    data = orjson.dumps({"t": text, "l": [text, 1.5, None]})
    assert loads(data) == orjson.loads(data)


def test_clean_text() -> None:
    plain = "plain ascii"
    assert clean_text(plain) is plain
    accented = "déjà vu 漢字 😀"
    assert clean_text(accented) is accented
    assert clean_text("a\ud800b") == "a" + R + "b"
    assert clean_text(HIGH + LOW) == "😀"  # two halves that make a pair are joined
    assert clean_text(LOW + HIGH) == R + R
    assert clean_text("\udcff.txt") == R + ".txt"  # surrogateescape's byte 0xff
