"""ROUGE-1 benchmark: ADK's ``response_match_score`` path against ours, same pairs, one run.

Issue target: the same >= 10k (candidate, reference) pairs through ADK's
``RougeEvaluator`` and through tracescore, in one run: identical numbers, ours >= 10x faster.

Pairs are generated deterministically (``--seed``): English answers of 5-80 words whose
reference is a perturbed copy (words dropped, swapped, re-inflected, re-cased, re-punctuated,
so scores spread over [0, 1]), plus about a quarter multilingual (Chinese, Japanese, Korean,
Thai, Cyrillic, Arabic, full-width forms, punctuation and emoji runs) and a few edge cases
(empty, punctuation only, identical).

What is timed, per side (each side gets its data in its own data model, built beforehand,
since in a real run both tools already hold it when they score):

* **ADK**: one ``RougeEvaluator.evaluate_invocations(actual_invocations=...,
  expected_invocations=...)`` call over all pairs, on ``google.adk`` ``Invocation``
  objects built before the clock starts (as ``adk eval`` holds them). Inside: text
  extraction from ``Content`` parts, a ``RougeScorer`` built per pair (ADK does this in
  ``_calculate_rouge_1_scores``), tokenizing, scoring, one ``PerInvocationResult`` per
  pair and the ``EvaluationResult``. One call for all pairs is the cheapest way to drive
  ADK (``adk eval`` calls it once per eval case), so the ratio is a lower bound.
* **ours, criterion**: ``evaluator.evaluate(EvalContext(actual=..., expected=...))`` per
  pair, the criterion's evaluator (``ResponseMatchScore().evaluator()``, made once, as
  the scoring loop makes it) on ``tracescore.model.Invocation`` objects built
  beforehand: the call ``replay`` makes per invocation (status and ``CriterionResult``
  included).
* **ours, rouge1_f**: ``rouge1_f(candidate, reference)`` per pair on the strings.

Ours starts every repetition with an empty stemming cache (``_clear_word_cache``), as a
fresh replay does; the scorer itself is built once per process (the cold numbers cover it).
Best of ``--repeat`` for each. Every score must be equal to ADK's (``==`` on the floats).

Cold first call: in a fresh process per side (best of ``--repeat`` processes), the time to
import the scoring module, then to build the scorer and score the first pair (ours builds
it lazily on its first call; ADK imports rouge-score when its module is imported).

Usage::

    python benchmarks/bench_rouge.py [--pairs 10000] [--repeat 3] [--seed 7]

Exit status 1 when a score differs from ADK's or ours is less than 10x faster.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import EvalMetric
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
from google.genai import types

from tracescore.criteria.base import EvalContext
from tracescore.criteria.evaluators import Evaluator
from tracescore.criteria.rouge import _clear_word_cache, rouge1_f
from tracescore.criteria.text import ResponseMatchScore
from tracescore.model import Invocation

TARGET = 10.0

# --- deterministic pairs ---------------------------------------------------------------

_VOCABULARY = """
the a an and or but to of in on for with at by from about as into over after before
is are was were be been being has have had do does did will would can could should may
your you we our it its this that these those there here which who what when where how
order orders ordered ordering shipment shipped shipping delivery delivered deliveries
refund refunded refunds refunding account accounts password reset resetting email
invoice invoices payment payments paid charge charged charges card cards subscription
plan plans upgrade upgraded downgrade cancel cancelled cancellation renewal renewed
weather forecast sunny cloudy rain raining temperature degrees celsius tomorrow today
London Paris Tokyo Berlin Madrid New York city cities flight flights booked booking
hotel hotels room rooms reservation reservations check checked available availability
price prices cost costs total discount discounts coupon tax taxes fee fees
customer customers support agent agents ticket tickets issue issues problem problems
resolved resolving escalated escalation team manager request requests requested
product products item items stock warehouse tracking number numbers status updated
running runs ran run quickly easily generously organization organizations information
search searched searching results result found finding database query queries
calendar meeting meetings scheduled scheduling Monday Tuesday Wednesday Thursday Friday
please thanks thank sorry unfortunately however currently already still just also
I've I'm you're it's don't can't won't isn't aren't wasn't we'll they're
"""
WORDS = _VOCABULARY.split()
NUMBERS = ["4", "42", "3.14", "1,000", "100%", "$5", "$129.99", "2024-06-01", "10:30", "#A-1234"]
SEPARATORS = [" "] * 30 + [", ", ". ", "; ", ": ", " - ", "! ", "? ", "\n", " (", ") ", ' "', '" ']

MULTILINGUAL = {
    "zh": [
        "您的订单已经发货，预计三天内送达。",
        "东京明天多云，最高气温二十三度。",
        "我们已为您办理退款，金额为一百二十元。",
        "请重新设置密码后再登录账户。",
    ],
    "ja": [
        "ご注文の商品は明日発送されます。",
        "東京タワーは333mです。ひらがなとカタカナ・テスト",
        "パスワードをリセットしてください。ﾃｽﾄ用の半角カナ",
        "予約は月曜日の午前十時に確定しました。",
    ],
    "ko": [
        "주문하신 상품이 내일 배송됩니다.",
        "서울의 날씨는 맑고 기온은 이십도입니다.",
        "환불이 처리되었습니다. 감사합니다!",
    ],
    "th": [
        "คำสั่งซื้อของคุณจัดส่งแล้ว ง่ายมาก",
        "พรุ่งนี้อากาศแจ่มใส อุณหภูมิสามสิบองศา",
        "เราได้คืนเงินให้คุณเรียบร้อยแล้ว ฿100 ๑๒๓",
    ],
    "ru": [
        "Ваш заказ отправлен и будет доставлен в пятницу.",
        "Привет, мир! Бегущий человек бегущий быстро.",
        "Пароль сброшен, проверьте электронную почту.",
    ],
    "ar": [
        "تم شحن طلبك وسيصل خلال ثلاثة أيام.",
        "مرحبا بالعالم، كيف الحال؟",
        "تم استرداد المبلغ إلى بطاقتك ٤٢ دولارا.",
    ],
    "fullwidth": [
        "ＦＵＬＬＷＩＤＴＨ　ｔｅｘｔ　１２３　ＯＲＤＥＲ",
        "ｙｏｕｒ　ｏｒｄｅｒ　ｈａｓ　ｓｈｉｐｐｅｄ！",
        "ﬁnance ﬂow 𝐇𝐞𝐥𝐥𝐨 Ⓐ Ⅻ ① ② ½ x²",
    ],
    "punct": [
        "!!! ... ??? --- ***",
        "😀😀 👍🏽 🇬🇧 — ok!",
        "«quoted» “smart” ‘quotes’ … (parens) [brackets] {braces}",
        "e\u0301cole café naïve résumé İstanbul straße",
    ],
}


def _english(rng: random.Random, n: int) -> str:
    out: list[str] = []
    for i in range(n):
        word = rng.choice(NUMBERS) if rng.random() < 0.05 else rng.choice(WORDS)
        if i == 0 or out[-1].endswith((". ", "! ", "? ", "\n")):
            word = word[:1].upper() + word[1:]
        out.append(word)
        out.append(rng.choice(SEPARATORS) if i < n - 1 else rng.choice([".", "!", "", "?"]))
    return "".join(out)


def _perturb_words(rng: random.Random, text: str) -> str:
    """A reference close to ``text``: some words dropped, replaced, re-cased, reordered."""
    words = text.split()
    out = []
    for word in words:
        w, r = word, rng.random()
        if r < 0.12:
            continue
        if r < 0.25:
            w = rng.choice(WORDS)
        elif r < 0.32:
            w = w.upper()
        elif r < 0.38:
            w = w.rstrip(".,!?") + rng.choice(["s", "ed", "ing", ""])
        out.append(w)
    if len(out) > 3 and rng.random() < 0.3:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    if rng.random() < 0.3:
        out.extend(rng.choice(WORDS) for _ in range(rng.randint(1, 8)))
    return " ".join(out)


def _perturb_chars(rng: random.Random, text: str) -> str:
    """A reference close to a non-spaced text: characters dropped or repeated."""
    out = []
    for ch in text:
        r = rng.random()
        if r < 0.1:
            continue
        out.append(ch)
        if r > 0.95:
            out.append(ch)
    return "".join(out)


def _multilingual(rng: random.Random) -> tuple[str, str]:
    lang = rng.choice(list(MULTILINGUAL))
    pool = MULTILINGUAL[lang]
    cand = " ".join(rng.sample(pool, rng.randint(1, len(pool))))
    if rng.random() < 0.3:  # mixed with English, as agents answer
        cand = _english(rng, rng.randint(3, 15)) + " " + cand
    if rng.random() < 0.15:
        ref = cand
    elif lang in ("zh", "ja", "ko", "th"):
        ref = _perturb_chars(rng, cand)
    else:
        ref = _perturb_words(rng, cand)
    if rng.random() < 0.1:  # answered in another language than the golden
        ref = rng.choice(MULTILINGUAL[rng.choice(list(MULTILINGUAL))])
    return cand, ref


EDGE = ["", " ", "\n\t", "!!!", "😀", "OK", "ok.", "4", "The answer is 4"]


def make_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` deterministic (candidate, reference) pairs."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        r = rng.random()
        if r < 0.02:
            pairs.append((rng.choice(EDGE), rng.choice([*EDGE, _english(rng, 6)])))
        elif r < 0.27:
            pairs.append(_multilingual(rng))
        else:
            cand = _english(rng, rng.randint(5, 80))
            if r < 0.32:
                ref = cand
            elif r < 0.37:
                ref = _english(rng, rng.randint(5, 80))  # unrelated answer
            else:
                ref = _perturb_words(rng, cand)
            pairs.append((cand, ref))
    return pairs


# --- the two paths ------------------------------------------------------------------------


def _adk_invocation(text: str) -> AdkInvocation:
    return AdkInvocation(
        user_content=types.Content(role="user", parts=[types.Part(text="q")]),
        final_response=types.Content(role="model", parts=[types.Part(text=text)]),
    )


def _our_invocation(i: int, text: str) -> Invocation:
    return Invocation(
        trace_id=f"{i:032x}", invocation_id=str(i), user_content="q", final_response=text
    )


def adk_scores(
    evaluator: RougeEvaluator, actual: list[AdkInvocation], expected: list[AdkInvocation]
) -> list[float | None]:
    result = evaluator.evaluate_invocations(
        actual_invocations=actual, expected_invocations=expected
    )
    return [r.score for r in result.per_invocation_results]


def ours_criterion(evaluator: Evaluator, contexts: list[EvalContext]) -> list[float | None]:
    return [evaluator.evaluate(ctx).score for ctx in contexts]


def ours_rouge(pairs: list[tuple[str, str]]) -> list[float]:
    return [rouge1_f(c, r) for c, r in pairs]


def best_of(
    repeat: int, fn: Callable[[], list[Any]], before: Callable[[], None] = lambda: None
) -> tuple[float, list[Any]]:
    best, result = float("inf"), []
    for _ in range(repeat):
        before()
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


_COLD_ADK = """
import json, sys, time
t0 = time.perf_counter()
from google.adk.evaluation.eval_case import Invocation
from google.adk.evaluation.eval_metrics import EvalMetric
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
from google.genai import types
t1 = time.perf_counter()
c, r = json.loads(sys.argv[1])
inv = lambda t: Invocation(user_content=types.Content(role="user", parts=[types.Part(text="q")]),
                           final_response=types.Content(role="model", parts=[types.Part(text=t)]))
actual, expected = [inv(c)], [inv(r)]
t2 = time.perf_counter()
ev = RougeEvaluator(eval_metric=EvalMetric(metric_name="response_match_score", threshold=0.8))
score = ev.evaluate_invocations(actual_invocations=actual, expected_invocations=expected
                                ).per_invocation_results[0].score
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "first": t3 - t2, "score": score}))
"""

_COLD_OURS = """
import json, sys, time
t0 = time.perf_counter()
from tracescore.criteria.rouge import rouge1_f
t1 = time.perf_counter()
c, r = json.loads(sys.argv[1])
t2 = time.perf_counter()
score = rouge1_f(c, r)
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "first": t3 - t2, "score": score}))
"""


def cold(code: str, pair: tuple[str, str], repeat: int) -> dict[str, float]:
    """Best (by import + first call) of ``repeat`` fresh processes."""
    runs = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", code, json.dumps(pair)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    return min(runs, key=lambda r: r["import"] + r["first"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)

    print(
        f"python {platform.python_version()}, google-adk {version('google-adk')}, "
        f"rouge-score {version('rouge-score')}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"best of {args.repeat}",
        flush=True,
    )
    pairs = make_pairs(args.pairs, args.seed)
    non_ascii = sum(1 for c, r in pairs if not (c + r).isascii())
    words = sum(len(c.split()) for c, _ in pairs) / len(pairs)
    print(
        f"{len(pairs)} pairs (seed {args.seed}): {non_ascii} with non-ASCII text, "
        f"{words:.1f} whitespace-separated words per candidate on average",
        flush=True,
    )

    # Cold first: fresh processes, before this one warms any cache.
    cold_pair = pairs[0]
    cold_adk = cold(_COLD_ADK, cold_pair, args.repeat)
    cold_ours = cold(_COLD_OURS, cold_pair, args.repeat)

    # Each side's data model, built outside the timed region.
    adk_actual = [_adk_invocation(c) for c, _ in pairs]
    adk_expected = [_adk_invocation(r) for _, r in pairs]
    contexts = [
        EvalContext(actual=_our_invocation(i, c), expected=_our_invocation(i, r))
        for i, (c, r) in enumerate(pairs)
    ]
    evaluator = RougeEvaluator(
        eval_metric=EvalMetric(metric_name="response_match_score", threshold=0.8)
    )
    criterion = ResponseMatchScore(threshold=0.8)
    rouge1_f("warm", "up")  # builds our scorer (the cold run times that)
    clear = _clear_word_cache

    t_adk, adk = best_of(args.repeat, lambda: adk_scores(evaluator, adk_actual, adk_expected))
    scorer = criterion.evaluator()
    t_crit, crit = best_of(args.repeat, lambda: ours_criterion(scorer, contexts), clear)
    t_rouge, rouge = best_of(args.repeat, lambda: ours_rouge(pairs), clear)

    mismatches = [
        (i, pairs[i], a, b, c)
        for i, (a, b, c) in enumerate(zip(adk, crit, rouge, strict=True))
        if not (type(a) is float and a == b == c)
    ]
    n = len(pairs)
    print()
    print(f"{'warm, ' + str(n) + ' pairs':<52}{'s':>8}{'pairs/s':>11}{'vs ADK':>9}")
    rows = (
        ("ADK RougeEvaluator.evaluate_invocations", t_adk),
        ("ours ResponseMatchScore evaluator per invocation", t_crit),
        ("ours rouge1_f per pair", t_rouge),
    )
    for label, t in rows:
        print(f"{label:<52}{t:>8.3f}{n / t:>11,.0f}{t_adk / t:>8.1f}x")

    print()
    print(f"{'cold, fresh process, first pair':<52}{'import s':>9}{'first call s':>14}")
    for label, c in (
        ("ADK (RougeEvaluator + first evaluate)", cold_adk),
        ("ours (first rouge1_f)", cold_ours),
    ):
        print(f"{label:<52}{c['import']:>9.3f}{c['first']:>14.4f}")
    if cold_adk["score"] != cold_ours["score"]:
        mismatches.append((0, cold_pair, cold_adk["score"], cold_ours["score"], None))

    print()
    if mismatches:
        print(f"scores: {len(mismatches)} of {n} differ from ADK; first ones:")
        for m in mismatches[:5]:
            print(f"  #{m[0]} {m[1]!r}: ADK {m[2]!r}, criterion {m[3]!r}, rouge1_f {m[4]!r}")
    else:
        spread = sorted(adk)
        print(
            f"scores: all {n} identical to ADK's (exact float equality); "
            f"min {spread[0]:.3f}, median {spread[n // 2]:.3f}, max {spread[-1]:.3f}, "
            f"{sum(s == 0.0 for s in adk)} zero, {sum(s == 1.0 for s in adk)} one"
        )
    speedup = min(t_adk / t_crit, t_adk / t_rouge)
    verdict = "PASS" if speedup >= TARGET else "FAIL"
    print(f"speed-up (slower of our two paths): {speedup:.1f}x, target >= {TARGET:g}x: {verdict}")
    return 1 if mismatches or speedup < TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
