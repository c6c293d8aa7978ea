"""ROUGE-1 of response_match_score: fixed examples, then exact equality with google-adk 2.13.

ADK is the oracle: scores come from its own `RougeEvaluator.evaluate_invocations` on real
`Invocation`s, and tokens from its (private) `_UnicodeAwareTokenizer`, so a mismatch shows
which token differs, not only that a float does.
"""

from __future__ import annotations

import itertools
import sys
import unicodedata

import pytest
from google.adk.evaluation.eval_case import Invocation
from google.adk.evaluation.eval_metrics import EvalMetric
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator, _UnicodeAwareTokenizer
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracescore.criteria.rouge import rouge1_f, tokenize

ADK_TOKENIZER = _UnicodeAwareTokenizer(use_stemmer=True)


def _invocation(final_text: str | None) -> Invocation:
    final = (
        None
        if final_text is None
        else types.Content(role="model", parts=[types.Part(text=final_text)])
    )
    return Invocation(
        user_content=types.Content(role="user", parts=[types.Part(text="q")]), final_response=final
    )


def adk_scores(pairs: list[tuple[str | None, str | None]]) -> list[float]:
    """ADK's per-invocation response_match_score for (candidate, reference) pairs."""
    evaluator = RougeEvaluator(
        eval_metric=EvalMetric(metric_name="response_match_score", threshold=0.8)
    )
    result = evaluator.evaluate_invocations(
        actual_invocations=[_invocation(c) for c, _ in pairs],
        expected_invocations=[_invocation(r) for _, r in pairs],
    )
    scores: list[float] = []
    for per_invocation in result.per_invocation_results:
        assert isinstance(per_invocation.score, float)  # never None per invocation
        scores.append(per_invocation.score)
    return scores


def assert_same_as_adk(pairs: list[tuple[str, str]]) -> None:
    ours = [rouge1_f(c, r) for c, r in pairs]
    theirs = adk_scores(list(pairs))
    for (c, r), mine, adk in zip(pairs, ours, theirs, strict=True):
        assert tokenize(c) == ADK_TOKENIZER.tokenize(c), c
        assert tokenize(r) == ADK_TOKENIZER.tokenize(r), r
        assert mine == adk, (c, r, mine, adk)  # exact float equality, no tolerance


# --- fixed examples (values produced by ADK 2.13) -----------------------------------------


@pytest.mark.parametrize(
    ("candidate", "reference", "expected"),
    [
        ("It's sunny in London today", "The weather in London is sunny", 0.5),
        ("The answer is 4", "4", 0.4),
        ("Café naïve résumé", "cafe naive resume", 0.0),
        ("ＦＵＬＬＷＩＤＴＨ text １２３", "fullwidth text 123", 1.0),
        ("the the the", "the cat", 0.4),
        ("", "", 0.0),
        ("", "anything", 0.0),
        ("anything", "", 0.0),
        ("!!! 😀", "!!! 😀", 0.0),
        ("running runs", "run", 2 * 1.0 * 0.5 / 1.5),
    ],
)
def test_fixed_examples(candidate: str, reference: str, expected: float) -> None:
    assert rouge1_f(candidate, reference) == expected
    assert adk_scores([(candidate, reference)]) == [expected]


def test_argument_order_matches_adk_roles() -> None:
    # candidate = ADK's prediction (actual), reference = its target (expected). ROUGE-1 F is
    # symmetric in P and R, so swapping them must not change the value either way.
    for cand, ref in [("the the the", "the cat"), ("The answer is 4", "4")]:
        assert [rouge1_f(cand, ref), rouge1_f(ref, cand)] == adk_scores([(cand, ref), (ref, cand)])
        assert rouge1_f(cand, ref) == rouge1_f(ref, cand)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("It's RUNNING", ["it", "s", "run"]),
        ("ＦＵＬＬ１２３", ["full123"]),
        ("東京タワーは333m", ["東", "京", "タ", "ワ", "ー", "は", "333m"]),
        ("ﾃｽﾄ", ["テ", "ス", "ト"]),
        ("ง่าย", ["ง่", "า", "ย"]),
        ("กabc", ["กabc"]),
        ("中\u0e31", ["中", "\u0e31"]),
        ("e\u0301cole naïve", ["école", "naïve"]),
        ("a\u200bb", ["a", "b"]),
        ("𠀀𠀁 々", ["𠀀𠀁", "々"]),
        ("½ x²", ["1", "2", "x2"]),
        ("٤٢ 42", ["٤٢", "42"]),
        ("İstanbul", ["i\u0307stanbul"]),
        ("", []),
    ],
)
def test_tokenize_rules(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens
    assert ADK_TOKENIZER.tokenize(text) == tokens


def test_missing_final_response_reads_as_empty_text() -> None:
    # ADK turns a missing final response (or one without text parts) into "" and scores 0.0.
    assert adk_scores([(None, "hello"), ("hello", None), (None, None)]) == [0.0, 0.0, 0.0]
    assert rouge1_f("", "hello") == rouge1_f("hello", "") == rouge1_f("", "") == 0.0


# --- side-by-side equality with ADK -------------------------------------------------------

TRICKY = [
    "",
    " ",
    "\n\t \r\n",
    "!!!",
    "😀😀 👍🏽 🇬🇧 flag",
    "It's don't won't y'all",
    "running runner runs ran easily",
    "U.S.A. e-mail 3.14 1,000 100% $5",
    "CAPS Lowercase MiXeD ǅ",
    "ß STRASSE straße ΣΑΣ Ω",
    "ﬁnance ﬂow 𝐇𝐞𝐥𝐥𝐨 Ⓐ K Ⅻ ① ② ③ ㍿ ﷺ",
    "½ x²+y² ٤٢ 42 ４２",
    "ＦＵＬＬＷＩＤＴＨ　text　１２３",
    "ﾃｽﾄ テスト ひらがな・カタカナ ゛゜",
    "東京タワーは333mです 中文测试 𠀀𠀁 々 〇",
    "가나다 한국어 \u1100\u1161 ᄀ",
    "ภาษาไทย ง่ายมาก ฿100 ๑๒๓ ฯ",
    "ສະບາຍດີ ພາສາລາວ",
    "ភាសាខ្មែរ \u17b4\u17b5",
    "မြန်မာ ၊ ။",
    "กabc abcก 中\u0e31 \u0e31",
    "Привет, мир! Бегущий бегущий",
    "مرحبا بالعالم، كيف الحال؟",
    "नमस्ते दुनिया। हिन्दी",
    "e\u0301cole école x\u0301 \u0301start",
    "Café naïve résumé cafe naive resume",
    "İstanbul ISTANBUL istanbul",
    "a\u200bb a\u200db a\u00adb a\u2060b",
    "\u00a0nbsp\u2003em\u3000ideographic",
    "the the the cat cat",
    "a\ud800b lone surrogate",
]


def test_tricky_table_against_adk() -> None:
    pairs = list(itertools.product(TRICKY, TRICKY))
    assert len(pairs) == len(TRICKY) ** 2
    assert_same_as_adk(pairs)


def test_tokenizer_over_every_assigned_code_point() -> None:
    # Every assigned code point (private-use and unassigned ones only inside the BMP, where
    # ADK's special blocks live): between ASCII letters, after a Thai base and after a CJK
    # ideograph, so each classification branch sees it. Chunked to keep strings moderate.
    codes = [
        c
        for c in range(sys.maxunicode + 1)
        if c <= 0xFFFF or unicodedata.category(chr(c)) not in ("Cn", "Co")
    ]
    assert len(codes) > 140_000
    for start in range(0, len(codes), 1 << 14):
        text = " ".join(
            f"q{chr(c)}z ก{chr(c)} 中{chr(c)}" for c in codes[start : start + (1 << 14)]
        )
        assert tokenize(text) == ADK_TOKENIZER.tokenize(text), hex(codes[start])


VOCAB = [
    "the", "The", "THE", "running", "runs", "ran", "It's", "don't", "won't", "London",
    "sunny", "weather", "answer", "4", "42", "3.14", "1,000", "U.S.A.", "e-mail", "café",
    "cafe", "naïve", "naive", "résumé", "Привет", "мир", "бегущий", "مرحبا", "بالعالم",
    "नमस्ते", "दुनिया", "東京", "タワー", "ひらがな", "한국어", "가나다", "ภาษาไทย", "ง่ายมาก",
    "ສະບາຍດີ", "ភាសាខ្មែរ", "မြန်မာ", "ＦＵＬＬ", "１２３", "ﬁnance", "𝐇𝐞𝐥𝐥𝐨", "😀", "🇬🇧",
    "👍🏽", "e\u0301cole", "école", "x\u0301", "\u0301", "İstanbul", "straße", "ΣΑΣ", "٤٢",
    "Ⅻ", "½", "x²", "ﾃｽﾄ", "々", "𠀀", "中\u0e31", "กabc", "generously", "organization",
]  # fmt: skip
SEPARATORS = [
    " ", "  ", "\t", "\n", "\r\n", "\u3000", "\u00a0", "\u200b", "", ".", ", ", "!", "?",
    "...", "-", "'", '"', "(", ")", "/", "—", "。", "、", "،", "।",
]  # fmt: skip

vocab_text = st.lists(
    st.tuples(st.sampled_from(VOCAB), st.sampled_from(SEPARATORS)), max_size=12
).map(lambda parts: "".join(word + sep for word, sep in parts))
script_text = st.text(
    alphabet=st.one_of(
        st.sampled_from("aAbBzZ019 .,'-!?\t\n"),
        st.characters(min_codepoint=0x0E00, max_codepoint=0x0EFF),  # Thai, Lao
        st.characters(min_codepoint=0x1000, max_codepoint=0x109F),  # Myanmar
        st.characters(min_codepoint=0x1780, max_codepoint=0x17FF),  # Khmer
        st.characters(min_codepoint=0x3000, max_codepoint=0x30FF),  # CJK punctuation, kana
        st.characters(min_codepoint=0x4E00, max_codepoint=0x4E40),  # a few ideographs
        st.characters(min_codepoint=0x1100, max_codepoint=0x11FF),  # hangul jamo
        st.characters(min_codepoint=0xAC00, max_codepoint=0xAC40),  # hangul syllables
        st.characters(min_codepoint=0xFF00, max_codepoint=0xFFEF),  # full/half-width forms
        st.characters(min_codepoint=0x0400, max_codepoint=0x04FF),  # Cyrillic
        st.characters(min_codepoint=0x0600, max_codepoint=0x06FF),  # Arabic
        st.characters(min_codepoint=0x0900, max_codepoint=0x097F),  # Devanagari
        st.characters(min_codepoint=0x1F300, max_codepoint=0x1FAFF),  # emoji
        st.characters(categories=["Mn", "Mc", "Me"]),  # combining marks
        st.characters(categories=["Zs", "Zl", "Zp", "Cc", "Cf"]),  # whitespace, controls
    ),
    max_size=25,
)
any_text = st.text(max_size=25)
texts = st.one_of(vocab_text, vocab_text, script_text, any_text, st.just(""))


@st.composite
def overlapping_pair(draw: st.DrawFn) -> tuple[str, str]:
    """A candidate and a reference sharing some words (partial scores, not just 0 or 1)."""
    words = draw(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=10))
    kept = draw(st.lists(st.sampled_from(words), max_size=10))
    extra = draw(st.lists(st.sampled_from(VOCAB), max_size=4))
    seps = st.sampled_from(SEPARATORS)
    candidate = "".join(w + draw(seps) for w in words)
    reference = "".join(w + draw(seps) for w in draw(st.permutations(kept + extra)))
    return candidate, reference


pairs_strategy = st.one_of(
    overlapping_pair(),
    overlapping_pair(),
    st.tuples(texts, texts),
    texts.map(lambda t: (t, t)),
    vocab_text.flatmap(
        lambda t: st.tuples(st.just(t), st.sampled_from([t.upper(), t[::-1], t.swapcase(), t + t]))
    ),
)


@settings(
    max_examples=600,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(pairs_strategy, min_size=1, max_size=6))
def test_generated_texts_score_exactly_as_adk(pairs: list[tuple[str, str]]) -> None:
    assert_same_as_adk(pairs)


# --- the stemming cache ------------------------------------------------------------------


def test_word_cache_overflow_starts_over_without_changing_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tracescore.criteria import rouge

    monkeypatch.setattr(rouge, "_MAX_CACHED_WORDS", 4)
    rouge._clear_word_cache()
    texts = [
        "Running runners ran quickly home",
        "The cats were running and jumping",
        "Ｒunning 東京 cats jumped",  # non-ASCII path, ASCII words inside
        "running running running",
    ]
    for text in texts:
        assert tokenize(text) == ADK_TOKENIZER.tokenize(text)
        assert len(rouge._ONE_TOKEN) <= max(4, len(set(tokenize(text))))
    assert rouge1_f(texts[0], texts[1]) == adk_scores([(texts[0], texts[1])])[0]
    rouge._clear_word_cache()


def test_a_word_stemming_to_other_than_one_token_is_kept_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No [a-z0-9]+ word is known to stem to zero or two tokens; the path exists so that a
    # future rouge-score could not silently shift every later token. Planted here.
    from tracescore.criteria import rouge

    rouge._clear_word_cache()
    monkeypatch.setitem(rouge._OTHER_TOKENS, b"weird", ("we", "ird"))
    monkeypatch.setitem(rouge._OTHER_TOKENS, b"gone", ())
    assert tokenize("a weird cat is gone") == ["a", "we", "ird", "cat", "is"]
    assert tokenize("a weird 猫 gone") == ["a", "we", "ird", "猫"]
    assert rouge1_f("weird cat", "we cat") == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))
    assert rouge1_f("cat gone", "cat") == 1.0  # two words, one token: precision 1/1
    rouge._clear_word_cache()


def test_a_cache_cleared_by_another_thread_mid_call_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two scorers in one process share the cache; one may clear it (overflow) between the
    # other's stemming and its lookups. Emulated: every fill is followed by a clear.
    from tracescore.criteria import rouge

    fill = rouge._ensure_cached

    def fill_then_lose(words: set[bytes]) -> None:
        fill(words)
        rouge._clear_word_cache()

    monkeypatch.setattr(rouge, "_ensure_cached", fill_then_lose)
    for text in ("Running runners ran quickly", "Ｒunning 東京 cats jumped"):
        assert tokenize(text) == ADK_TOKENIZER.tokenize(text)


def test_counting_without_cpythons_helper_scores_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Counts come from collections' C helper where there is one; the Python loop that
    # stands in for it elsewhere must count alike, from a cold cache and a warm one.
    from tracescore.criteria import rouge

    pairs = [
        ("the the the", "the cat"),
        ("Running runners ran quickly home", "The cats were running and jumping home"),
        ("Ｒunning 東京 cats jumped", "running 東京 東京 cat"),
        ("", "anything"),
    ]
    with_helper = [rouge1_f(c, r) for c, r in pairs]
    monkeypatch.setattr(rouge, "_tally", rouge._tally_in_python)
    rouge._clear_word_cache()
    assert [rouge1_f(c, r) for c, r in pairs] == with_helper == adk_scores(list(pairs))
    assert [rouge1_f(c, r) for c, r in pairs] == with_helper  # the cache warm now
    rouge._clear_word_cache()


# --- counting by token id ----------------------------------------------------------------

ASCII_PAIRS = [
    ("the the the", "the cat"),
    ("Running runners ran quickly home", "The cats were running and jumping home"),
    ("updates updated updating", "update the updates"),
    ("", "anything"),
    ("   ", "...!"),
    ("Order 66 shipped, 66 left", "order 66 left; 67 shipped"),
]


def test_ascii_texts_score_alike_from_a_cold_and_a_warm_cache() -> None:
    from tracescore.criteria import rouge

    rouge._clear_word_cache()
    expected = adk_scores(list(ASCII_PAIRS))
    # Cold: words not stemmed yet take the long way (and are stemmed on it).
    assert rouge._id_overlap(*ASCII_PAIRS[1]) is None
    assert [rouge1_f(c, r) for c, r in ASCII_PAIRS] == expected
    # Warm: counted by id; words with one stem ("updates", "updated") share an id.
    assert rouge._id_overlap(*ASCII_PAIRS[2]) == (2, 3, 3)
    assert [rouge1_f(c, r) for c, r in ASCII_PAIRS] == expected
    assert not any(rouge._LOCAL.counts)  # the counts are zero again between calls
    rouge._clear_word_cache()


def test_threads_sharing_an_overflowing_cache_score_exactly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two scorers in one process: with a tiny cache, one clears it while the other counts
    # by ids of the generation it read; neither may mix ids of two generations.
    import threading

    from tracescore.criteria import rouge

    monkeypatch.setattr(rouge, "_MAX_CACHED_WORDS", 6)
    rouge._clear_word_cache()
    expected = adk_scores(list(ASCII_PAIRS))
    got: dict[int, list[list[float]]] = {0: [], 1: []}

    def score(key: int) -> None:
        for _ in range(300):
            got[key].append([rouge1_f(c, r) for c, r in ASCII_PAIRS])

    threads = [threading.Thread(target=score, args=(k,)) for k in got]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(scores == expected for run in got.values() for scores in run)
    assert sum(len(run) for run in got.values()) == 600
    rouge._clear_word_cache()


def test_the_per_thread_counts_grow_ahead_of_the_cache() -> None:
    # Grown to twice the tokens known, not to just enough: a cache still filling (new
    # words in most pairs) would otherwise allocate a vocabulary-sized list per pair.
    from tracescore.criteria import rouge

    rouge._clear_word_cache()
    rouge._LOCAL.counts = [0] * 4
    words = " ".join(f"w{n}x" for n in range(3000))
    rouge1_f(words, words)  # stems the words (the long way)
    assert rouge1_f(words, words) == 1.0  # counted by id now
    grown = rouge._LOCAL.counts
    assert len(grown) >= 2 * len(rouge._TOKEN_IDS) >= 6000
    assert rouge1_f("w1x w2x", "w2x w7x") == 0.5
    assert rouge._LOCAL.counts is grown and not any(grown)
    rouge._clear_word_cache()
