"""The private Porter stemmer is nltk's, loaded without the nltk package."""

from __future__ import annotations

import importlib.util
import logging
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.stem.porter import PorterStemmer
from rouge_score.tokenizers import DefaultTokenizer

from tracescore.criteria import rouge, stemmer
from tracescore.criteria.stemmer import porter_stemmer

ROOT = Path(__file__).resolve().parents[2]
NLTK = PorterStemmer()

# Every suffix a Porter rule looks at, on stems that do and do not satisfy its conditions.
SUFFIXES = (
    "sses ies ss s eed ed ing y ational tional enci anci izer bli alli entli eli ousli "
    "ization ation ator alism iveness fulness ousness aliti iviti biliti logi icate ative "
    "alize iciti ical ful ness al ance ence er ic able ible ant ement ment ent ion ou ism ate "
    "iti ous ive ize e l ly li ally fulli lessli at bl iz"
)
STEMS = "a b at be hop fil tann sky cry agree feed plaster conflat troubl siz fail ident gener"


def vocabulary() -> set[str]:
    """Words of this repository's texts plus every stem x suffix pair above."""
    words: set[str] = set()
    for path in [
        *ROOT.glob("*.md"),
        *(ROOT / "src").rglob("*.py"),
        *(ROOT / "tests").rglob("*.py"),
    ]:
        words.update(re.findall(r"[a-z0-9]+", path.read_text("utf-8", errors="replace").lower()))
    words.update(stem + suffix for stem in STEMS.split() for suffix in SUFFIXES.split())
    return words


def test_the_private_stemmer_stems_every_word_as_nltk_does() -> None:
    words = vocabulary()
    assert len(words) > 5000
    ours = porter_stemmer()
    different = {w: (ours.stem(w), NLTK.stem(w)) for w in words if ours.stem(w) != NLTK.stem(w)}
    assert different == {}
    assert type(ours).__module__ == "nltk.stem.porter"
    assert type(ours) is not PorterStemmer  # the private copy, not the imported class


@settings(max_examples=400, deadline=None)
@given(st.from_regex(r"[a-z0-9]{1,18}", fullmatch=True))
def test_any_ascii_word_tokenizes_as_rouge_score_does(word: str) -> None:
    assert rouge._stem(word.encode()) == tuple(DefaultTokenizer(use_stemmer=True).tokenize(word))


def test_scoring_rouge_does_not_import_nltk_or_numpy() -> None:
    code = textwrap.dedent(
        """
        import sys
        from tracescore.criteria.rouge import rouge1_f
        score = rouge1_f("the cats were running home", "a cat runs home")
        print(score, "nltk" in sys.modules, "numpy" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    assert out == [str(2 * 0.6 * 0.75 / (0.6 + 0.75)), "False", "False"]


def test_demo_helpers_refuse_to_run() -> None:
    standins = stemmer._Standins("nltk")
    with pytest.raises(RuntimeError, match=r"nltk\.redos\.sub is not available"):
        standins.redos.sub("a", "b", "c")
    with pytest.raises(RuntimeError, match="safe_print"):
        standins.safe_print("x")


def test_a_file_importing_more_of_nltk_is_not_run_privately(tmp_path: Path) -> None:
    (tmp_path / "stem").mkdir()
    (tmp_path / "stem" / "api.py").write_text("class StemmerI:\n    pass\n")
    (tmp_path / "stem" / "porter.py").write_text("from nltk.corpus import words\n")
    with pytest.raises(ImportError, match=r"porter\.py imports 'nltk\.corpus'"):
        stemmer._exec_file(tmp_path / "stem" / "porter.py", "x", {})
    # A relative import is refused too: the file is not in a package here.
    (tmp_path / "rel.py").write_text("from . import api\n")
    with pytest.raises(ImportError, match=r"rel\.py imports"):
        stemmer._exec_file(tmp_path / "rel.py", "x", {})


def test_without_the_files_the_ordinary_import_is_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def nltk_elsewhere(name: str) -> SimpleNamespace:
        return SimpleNamespace(submodule_search_locations=[str(tmp_path)])

    porter_stemmer.cache_clear()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(importlib.util, "find_spec", nltk_elsewhere)
            with caplog.at_level(logging.INFO, logger="tracescore.criteria.stemmer"):
                fallback = porter_stemmer()
        assert type(fallback) is PorterStemmer
        assert fallback.stem("generalizations") == "gener"
        assert "importing nltk" in caplog.text
    finally:
        porter_stemmer.cache_clear()
    assert type(porter_stemmer()) is not PorterStemmer  # private again once the files are back
