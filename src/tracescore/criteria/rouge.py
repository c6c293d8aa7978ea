"""ROUGE-1 text similarity behind ``response_match_score``, scored exactly as google-adk 2.13.

ADK's ``response_match_score`` (``final_response_match_v1.RougeEvaluator``) rates the agent's
final answer against the golden one by the ROUGE-1 F-measure that rouge-score's
``RougeScorer`` computes over tokens from ADK's own Unicode-aware tokenizer
(``_UnicodeAwareTokenizer``, Porter stemming on). Here the tokenizer is re-derived from that
behaviour and stems with rouge-score's own tokenizer; counting and the F-measure repeat
rouge-score's ``_score_ngrams`` and ``scoring.fmeasure`` operation for operation for
unigrams (integer counts, then the same two divisions and the same formula), so the floats
are bit-for-bit ADK's: ``tests/criteria/test_rouge.py`` checks them against ADK side by
side. (Calling rouge-score's scorer cost more than half of a replay's scoring time: it
builds a tuple per n-gram in a generator.)

Tokenizer rules, applied in this order (the ADK helper each mirrors is in brackets):

1. NFKC-normalise the whole text, then lower-case it (``_UnicodeAwareTokenizer.tokenize``).
   Full-width forms, ligatures, styled letters and half-width katakana fold to their plain
   forms; ``"ＦＵＬＬ １２３"`` reads as ``"full 123"``.
2. Classify each character; the first matching class decides:

   a. CJK (``_is_cjk``): any code point of U+4E00-9FFF (unified ideographs), U+3040-309F
      (hiragana), U+30A0-30FF (katakana) or U+AC00-D7AF (hangul syllables) is a token by
      itself, whatever its category (``"・"`` and the kana sound marks too). Other CJK
      blocks (extension A/B ideographs, hangul jamo, ``"々"``) fall through to class c.
   b. Non-spaced scripts (``_is_non_spaced_script``): Thai U+0E00-0E7F, Lao U+0E80-0EFF,
      Myanmar U+1000-109F, Khmer U+1780-17FF. A combining mark (category ``M*``) extends
      the word being built; every other code point of these blocks (letters, digits,
      punctuation, unassigned) closes the current word and opens a new one. A cluster is
      therefore a base plus its marks, and it also absorbs class-c characters right after
      it (``"กabc"`` is one word).
   c. Word characters (``_is_word_char``): ``str.isalnum()`` or a combining mark extends
      the current word.
   d. Everything else (spaces, punctuation, symbols, emoji, format characters) ends it.
3. An all-ASCII word (necessarily ``[a-z0-9]+`` by now) goes through rouge-score's
   ``DefaultTokenizer(use_stemmer=True)``: it stays one token, Porter-stemmed when longer
   than 3 characters. Any other word is one token as is: no stemming and no accent
   folding, so ``"café"`` never matches ``"cafe"``.

Classification relies on the running interpreter's Unicode database, as ADK's does.
"""

from __future__ import annotations

import collections
import threading
import unicodedata
from collections.abc import Callable, Iterable
from typing import Final

from rouge_score.tokenize import tokenize as rouge_tokenize

from tracescore.criteria.stemmer import porter_stemmer
from tracescore.unicode_case import lower

__all__ = ["rouge1_f", "tokenize"]

# Blocks ADK splits into one-character tokens (rule 2a), as inclusive code-point ranges.
_CJK_BLOCKS = (
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0x3040, 0x309F),  # Hiragana
    (0x30A0, 0x30FF),  # Katakana
    (0xAC00, 0xD7AF),  # Hangul Syllables
)
# Blocks ADK cuts into base-plus-marks clusters (rule 2b).
_CLUSTER_BLOCKS = (
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
)
# On ASCII input the rules reduce to: words are maximal runs of [a-z0-9] after lower-casing,
# i.e. what split() leaves once every other byte is a space. Done on the text's bytes: one
# bytes.translate (upper to lower case, non-word bytes to spaces) and bytes.split take half
# the time of str.lower, str.translate and str.split, and a regex findall is slower still.
_ASCII_FOLD: Final = bytes(
    c + 32 if 65 <= c <= 90 else c if 48 <= c <= 57 or 97 <= c <= 122 else 32 for c in range(256)
)


def _ascii_words(text: str) -> list[bytes]:
    """The ``[a-z0-9]+`` words of ASCII ``text``, lower-cased (rules 1-2 on ASCII)."""
    return text.encode().translate(_ASCII_FOLD).split()


def _in_blocks(code: int, blocks: tuple[tuple[int, int], ...]) -> bool:
    return any(low <= code <= high for low, high in blocks)


def _is_mark(char: str) -> bool:
    return unicodedata.category(char)[0] == "M"


def _split_words(folded: str) -> list[str]:
    """Cut NFKC-folded, lower-cased text into words by rules 2a-2d of the module docstring.

    Args:
        folded: Text already normalised and lower-cased (rule 1).

    Returns:
        The words in order; CJK characters come out as one-character words.

    """
    words: list[str] = []
    current: list[str] = []

    def close() -> None:
        if current:
            words.append("".join(current))
            current.clear()

    for char in folded:
        if char.isascii():
            # Shortcut: no ASCII character is CJK, clustered or a mark.
            if char.isalnum():
                current.append(char)
            else:
                close()
            continue
        code = ord(char)
        if _in_blocks(code, _CJK_BLOCKS):
            close()
            words.append(char)
        elif _in_blocks(code, _CLUSTER_BLOCKS):
            if not _is_mark(char):
                close()
            current.append(char)
        elif char.isalnum() or _is_mark(char):
            current.append(char)
        else:
            close()
    close()
    return words


#: Stemming cache: each all-ASCII word seen so far (as bytes) -> its one token (in practice
#: every such word gives exactly one). Porter stemming dominates tokenizing and is a pure
#: function of the word. Cleared when it would exceed :data:`_MAX_CACHED_WORDS`.
_ONE_TOKEN: dict[bytes, str] = {}
#: The words that do not give exactly one token, with their tokens (kept for correctness).
_OTHER_TOKENS: dict[bytes, tuple[str, ...]] = {}
#: Each word of :data:`_ONE_TOKEN` -> a small integer naming its token (words with the same
#: stem share it), for counting in a list instead of a dict (:func:`_id_overlap`).
_WORD_IDS: dict[bytes, int] = {}
#: Each token of :data:`_ONE_TOKEN`'s values -> its id.
_TOKEN_IDS: dict[str, int] = {}
#: Bumped at every clear: ids read across a clear (another thread's) may not be mixed.
_generation: int = 0
#: Not Final: compiled, a Final is inlined where it is read, and a test lowers this one.
_MAX_CACHED_WORDS: int = 1 << 16


def _clear_word_cache() -> None:
    """Forget every stemmed word (benchmarks start from an empty cache, as a fresh run)."""
    global _generation  # noqa: PLW0603 - the cache's one counter
    _generation += 1
    _ONE_TOKEN.clear()
    _OTHER_TOKENS.clear()
    _WORD_IDS.clear()
    _TOKEN_IDS.clear()


def _stem(word: bytes) -> tuple[str, ...]:
    # rouge-score's DefaultTokenizer(use_stemmer=True).tokenize, with the same stemmer
    # made without importing all of nltk (see tracescore.criteria.stemmer).
    return tuple(rouge_tokenize(word.decode("ascii"), porter_stemmer()))


#: Held while the cache is filled: a new token's id is the count of tokens before it,
#: which two threads filling at once could both take.
_FILLING: Final = threading.Lock()


def _ensure_cached(words: set[bytes]) -> None:
    """Stem those of the all-ASCII ``words`` not cached yet."""
    if not words.difference(_ONE_TOKEN, _OTHER_TOKENS):
        return
    with _FILLING:
        _fill(words)


def _fill(words: set[bytes]) -> None:
    missing = words.difference(_ONE_TOKEN, _OTHER_TOKENS)
    if not missing:
        return
    if len(_ONE_TOKEN) + len(missing) > _MAX_CACHED_WORDS:
        _clear_word_cache()
        missing = words
    for word in missing:
        tokens = _stem(word)
        if len(tokens) == 1:
            token = tokens[0]
            _ONE_TOKEN[word] = token
            _WORD_IDS[word] = _TOKEN_IDS.setdefault(token, len(_TOKEN_IDS))
        else:
            _OTHER_TOKENS[word] = tokens


def _word_tokens(words: list[str | bytes]) -> list[str]:
    """Tokens of ``words`` in order: all-ASCII words (as bytes) stemmed, others (str) as is.

    Safe when another thread clears the cache meanwhile (two scorers in one process): a
    word that went missing is stemmed again here.
    """
    _ensure_cached({word for word in words if isinstance(word, bytes)})
    tokens: list[str] = []
    for word in words:
        if isinstance(word, str):
            tokens.append(word)
            continue
        token = _ONE_TOKEN.get(word)
        if token is not None:
            tokens.append(token)
            continue
        other = _OTHER_TOKENS.get(word)
        tokens.extend(_stem(word) if other is None else other)
    return tokens


def _non_ascii_tokens(text: str) -> list[str]:
    words = _split_words(lower(unicodedata.normalize("NFKC", text)))
    return _word_tokens([word.encode() if word.isascii() else word for word in words])


def tokenize(text: str) -> list[str]:
    """Tokenize text the way google-adk 2.13's ``response_match_score`` does.

    Reproduces ADK's ``_UnicodeAwareTokenizer(use_stemmer=True).tokenize``; the rules are
    listed in the module docstring.

    Args:
        text: Any text, empty included.

    Returns:
        The tokens in order (possibly none, e.g. for punctuation- or emoji-only text).

    """
    if not text.isascii():
        return _non_ascii_tokens(text)
    # NFKC leaves ASCII unchanged, so only lower-casing and [a-z0-9] runs remain.
    words = _ascii_words(text)
    try:
        return list(map(_ONE_TOKEN.__getitem__, words))
    except KeyError:  # a word not stemmed yet, or one of _OTHER_TOKENS
        return _word_tokens(list(words))


def _tally_in_python(counts: dict[str, int], tokens: Iterable[str]) -> None:
    get = counts.get
    for token in tokens:
        counts[token] = get(token, 0) + 1


#: Adds each token's count to a plain dict: CPython's C helper behind ``Counter``, else
#: the same loop in Python. Called directly, not through ``Counter(...)``: the
#: constructor's Python frames and its ``isinstance(iterable, Mapping)`` check (an ABC)
#: cost 42k of the 278k instructions of a pair of 75-word texts (cachegrind).
_tally: Callable[[dict[str, int], Iterable[str]], None] = getattr(
    collections, "_count_elements", _tally_in_python
)


def _counts(text: str) -> tuple[dict[str, int], int]:
    """The token counts of ``text`` (as :func:`tokenize`) and the number of tokens."""
    counts: dict[str, int] = {}
    if text.isascii():
        words = _ascii_words(text)
        try:
            # Usually every word is cached already: counted straight from the lookups.
            _tally(counts, map(_ONE_TOKEN.__getitem__, words))
            return counts, len(words)
        except KeyError:  # a word not stemmed yet, or one of _OTHER_TOKENS
            counts.clear()  # the helper may have counted the words before the missing one
    tokens = tokenize(text)
    _tally(counts, tokens)
    return counts, len(tokens)


#: Each thread's token counts by id, all zero between calls (:func:`_id_overlap`).
_LOCAL: Final = threading.local()


def _id_overlap(candidate: str, reference: str) -> tuple[int, int, int] | None:
    """The overlap and both token counts of two ASCII texts, or None to take the long way.

    Counts tokens by id in a per-thread list instead of a dict: no hashing, no growing
    dict. None when a word is not stemmed yet (or stems to other than one token), or when
    the cache was cleared meanwhile (its ids would not match).
    """
    generation = _generation
    ids = _WORD_IDS
    try:
        target = [ids[word] for word in _ascii_words(reference)]
        prediction = [ids[word] for word in _ascii_words(candidate)]
    except KeyError:
        return None
    size = len(_TOKEN_IDS)
    if generation != _generation:
        return None
    counts: list[int] | None = getattr(_LOCAL, "counts", None)
    if counts is None or len(counts) < size:
        # Twice what is needed: a cache still filling would otherwise regrow it per pair.
        counts = [0] * max(2 * size, 1024)
        _LOCAL.counts = counts
    for token in target:
        counts[token] += 1
    overlap = 0
    for token in prediction:
        if counts[token]:
            counts[token] -= 1
            overlap += 1
    for token in target:
        counts[token] = 0
    return overlap, len(prediction), len(target)


def rouge1_f(candidate: str, reference: str) -> float:
    """ROUGE-1 F-measure of ``candidate`` against ``reference``, identical to google-adk 2.13.

    This is the per-invocation score of ADK's ``response_match_score``: the agent's final
    response is rouge-score's *prediction* and the golden response its *target*. Unigram
    counts are clipped (``"the the the"`` vs ``"the cat"`` gives 0.4), and the result is
    ``2PR / (P + R)``, or 0.0 when nothing overlaps.

    Empty input: ADK never yields None per invocation. A missing final response or one
    without text parts reads as ``""`` there, and text with no tokens (empty, spaces,
    punctuation or emoji only) scores 0.0 on either side, even when both sides are empty.
    This function returns exactly that 0.0. (ADK's ``overall_score`` is None only when
    there are no invocations at all, which the caller handles.)

    Args:
        candidate: The agent's final response text. ADK joins its text parts with newlines.
        reference: The expected (golden) final response text.

    Returns:
        The F-measure in [0, 1].

    """
    if candidate.isascii() and reference.isascii():
        found = _id_overlap(candidate, reference)
        if found is not None:
            return _fmeasure(*found)
    target, target_len = _counts(reference)
    prediction = tokenize(candidate)
    # rouge-score's _score_ngrams: the sum over the target's n-grams of min(target count,
    # prediction count). Counted by taking each prediction token from the target's counts
    # while any are left: integers, so exact, and twice as quick as counting the
    # prediction too and summing min(x, y) over the common tokens (-12% per pair on
    # 75-word texts). ``target`` is this call's own, so it is used up in place.
    overlap = 0
    left = target.get
    for token in prediction:
        if n := left(token):
            target[token] = n - 1
            overlap += 1
    return _fmeasure(overlap, len(prediction), target_len)


def _fmeasure(overlap: int, prediction_len: int, target_len: int) -> float:
    """rouge-score's precision, recall and ``scoring.fmeasure``, operation for operation."""
    precision = overlap / max(prediction_len, 1)
    recall = overlap / max(target_len, 1)
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0
