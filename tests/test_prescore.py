"""Scoring in the import workers: the parent takes a worker's verdicts only for whole
conversations, and a replay comes out exactly as one process scores it."""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from tracescore import parallel, parts
from tracescore.assembly import TraceAssembler
from tracescore.criteria import (
    Criterion,
    CriterionResult,
    EvalContext,
    Score,
    informational_criteria,
)
from tracescore.criteria.text import ContainsKeywords
from tracescore.eval_config import load_eval_config
from tracescore.evalset import conversations_to_evalset
from tracescore.goldens import GoldenCase, GoldenSet, load_goldens
from tracescore.importer import ImportStats, import_paths
from tracescore.model import Conversation, Invocation, group_conversations
from tracescore.prescore import Prescored, Prescoring, Verdict, prescore, score_prescored
from tracescore.replay import ReplayResult, read_runs, replay, score_runs
from tracescore.scoring import InvocationResult, golden_matcher, score_conversations

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import gen_traces


def _turn(trace: str, conversation: str, start: int, user: str, final: str) -> Invocation:
    return Invocation(
        trace_id=trace,
        invocation_id=f"inv-{trace}",
        conversation_id=conversation,
        user_content=user,
        final_response=final,
        start_ns=start,
        end_ns=start + 5,
        root_span_id=f"root-{trace}",
    )


def _golden(eval_id: str, *turns: tuple[str, str]) -> GoldenCase:
    return GoldenCase(
        eval_set_id="set",
        eval_id=eval_id,
        turns=tuple(
            Invocation(
                trace_id="", invocation_id=f"{eval_id}-{i}", user_content=u, final_response=f
            )
            for i, (u, f) in enumerate(turns)
        ),
    )


GOLDENS = (
    GoldenSet(
        path="set.evalset.json",
        eval_set_id="set",
        cases=(
            _golden("two", ("book a table", "booked for two"), ("and wine", "wine added")),
            _golden("one", ("what time is it", "it is noon")),
        ),
    ),
)


@dataclass(frozen=True, kw_only=True)
class _OwnThreshold(Criterion):
    """A user's criterion whose ``evaluate`` returns a result that is not its plain one."""

    name = "own_threshold"
    threshold: float | None = 0.5

    def score(self, ctx: EvalContext) -> Score:
        return Score(value=1.0)

    def evaluate(self, ctx: EvalContext) -> CriterionResult:
        return dataclasses.replace(super().evaluate(ctx), threshold=0.9, reason="own")


CRITERIA: tuple[Criterion, ...] = (
    *load_eval_config(None),
    ContainsKeywords(keywords=("booked", "wine")),  # details: the missing keywords
    _OwnThreshold(),
    *informational_criteria(),
)


def _plain(conversations: Sequence[Conversation], scoring: Prescoring) -> list[InvocationResult]:
    return score_conversations(conversations, CRITERIA, match=golden_matcher(scoring.index))


def test_a_worker_verdict_brings_back_exactly_what_the_parent_would_score() -> None:
    scoring = Prescoring.build(CRITERIA, GOLDENS)
    assert scoring is not None
    turns = [
        _turn("t1", "c1", 10, "book a table", "booked for two"),
        _turn("t2", "c1", 20, "and wine", "no wine, sorry"),
        _turn("t3", "c2", 15, "what time is it", "noon"),
        _turn("t4", "c3", 30, "no golden here", "hm"),
        dataclasses.replace(_turn("t5", "c4", 40, "x", "y"), status="not_evaluable", reason="off"),
    ]
    nested = dataclasses.replace(_turn("t6", "c1", 12, "sub", "agent"), parent_tool_span_id="s")
    invocations = [*turns, nested]
    verdicts = prescore(invocations, scoring)
    assert verdicts[-1] is None  # an agent run called as a tool is not a turn
    assert all(v is not None for v in verdicts[:-1])
    prescored = Prescored(scoring)
    prescored.add(0, invocations, verdicts)
    conversations = group_conversations(turns)
    got = score_prescored(conversations, CRITERIA, prescored)
    want = _plain(conversations, scoring)
    assert got == want
    assert [r.golden.eval_id if r.golden else None for r in got] == [
        "two",
        "two",
        "one",
        None,
        None,
    ]
    assert got[0].expected is GOLDENS[0].cases[0].turns[0]  # the parent's own goldens
    keywords = {r.invocation.trace_id: r.results[2] for r in got}
    assert keywords["t2"].details == {"missing": ["booked"]}
    assert keywords["t1"].details == {"missing": ["wine"]}
    own = got[0].results[3]
    assert (own.criterion, own.threshold, own.reason) == ("own_threshold", 0.9, "own")


def _bogus(size: int) -> Verdict:
    """A verdict no scoring gives: it shows where the parent took a worker's verdict."""
    return (size, -1, -1, "judge_error", "from the worker", ())


def test_the_parent_takes_verdicts_only_for_conversations_a_worker_saw_whole() -> None:
    scoring = Prescoring.build(CRITERIA, GOLDENS)
    assert scoring is not None
    whole = [_turn("a1", "A", 1, "book a table", "x"), _turn("a2", "A", 2, "and wine", "y")]
    split = [_turn("b1", "B", 3, "book a table", "x"), _turn("b2", "B", 4, "and wine", "y")]
    partial = [_turn("c1", "C", 5, "what time is it", "noon")]
    twin = [_turn("d1", "D", 6, "what time is it", "noon")]
    missing = [_turn("e1", "E", 7, "what time is it", "noon")]
    prescored = Prescored(scoring)
    prescored.add(0, [*whole, split[0]], [_bogus(2), _bogus(2), _bogus(2)])
    prescored.add(1, [split[1]], [_bogus(2)])  # the same conversation, another part
    prescored.add(0, partial, [_bogus(2)])  # the worker saw a turn the parent does not have
    # An id another object had (freed since) must not pass for this one's.
    prescored.verdicts[id(twin[0])] = (dataclasses.replace(twin[0]), 0, _bogus(1))
    conversations = group_conversations([*whole, *split, *partial, *twin, *missing])
    got = score_prescored(conversations, CRITERIA, prescored)
    taken = {r.invocation.trace_id for r in got if r.reason == "from the worker"}
    assert taken == {"a1", "a2"}
    rest = [c for c in conversations if c.conversation_id != "A"]
    assert [r for r in got if r.invocation.trace_id not in taken] == _plain(rest, scoring)


def test_judged_criteria_and_other_criteria_or_goldens_are_scored_in_the_parent() -> None:
    from tracescore.criteria.registry import criterion_class

    judged = criterion_class("hallucinations_v1")()
    assert Prescoring.build([*CRITERIA, judged], GOLDENS) is None
    scoring = Prescoring.build(CRITERIA, GOLDENS)
    assert scoring is not None
    assert scoring.serves(list(CRITERIA), list(GOLDENS))
    assert not scoring.serves(CRITERIA[:2], GOLDENS)
    assert not scoring.serves(CRITERIA, [dataclasses.replace(GOLDENS[0])])  # equal, not the same
    assert not scoring.serves(CRITERIA, ())


def test_cases_sharing_their_ids_are_left_to_the_parent() -> None:
    again = dataclasses.replace(GOLDENS[0], path="copy.evalset.json")
    scoring = Prescoring.build(CRITERIA, [*GOLDENS, again])
    assert scoring is not None
    assert scoring.positions == {}  # both cases of the set are in it twice
    only = Prescoring.build(CRITERIA, GOLDENS)
    assert only is not None
    assert only.positions == {("set", "two"): 0, ("set", "one"): 1}


@pytest.fixture(scope="module")
def traffic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[GoldenSet]]:
    """Generated agent traffic and an evalset of its own turns (a golden for each)."""
    base = tmp_path_factory.mktemp("prescore")
    path = base / "traffic.jsonl"
    gen_traces.generate(4000, path, seed=11)
    stats = ImportStats()
    turns = [
        i
        for i in import_paths([str(path)], stats, assembler=TraceAssembler(idle_records=400))
        if i.parent_tool_span_id is None
    ]
    conversations = group_conversations(turns)
    assert sum(len(c.invocations) > 1 for c in conversations) > 20
    doc, _, _ = conversations_to_evalset(conversations, eval_set_id="own")
    goldens = base / "own.evalset.json"
    goldens.write_bytes(orjson.dumps(doc))
    return path, load_goldens([str(goldens)])


def _rows(result: ReplayResult) -> list[tuple[object, ...]]:
    # In the same order too: conversations and turns are ordered by start, whatever
    # order the import delivered them in.
    return [
        (inv.trace_id, inv.root_span_id, r.golden, r.expected, r.outcome, r.reason, r.results)
        for r in result.invocations
        for inv in (r.invocation,)
    ]


def _cases(result: ReplayResult) -> list[tuple[object, ...]]:
    return [(c.eval_set_id, c.eval_id, c.status, c.criteria) for c in result.cases]


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers forked, as from the CLI (the suite may run threads of its own)."""
    monkeypatch.setattr(parts, "_MIN_PART_BYTES", 1_000_000)  # the 10 MB input splits
    monkeypatch.setattr(parallel, "_mp_context", lambda: multiprocessing.get_context("fork"))


@pytest.mark.usefixtures("forked")
def test_a_replay_scored_in_forked_workers_equals_one_process(
    traffic: tuple[Path, list[GoldenSet]], caplog: pytest.LogCaptureFixture
) -> None:
    path, goldens = traffic
    one = replay([str(path)], CRITERIA, goldens=goldens, idle_records=400)
    runs = read_runs([str(path)], CRITERIA, idle_records=400, jobs=3, goldens=goldens)
    assert runs.prescored is not None
    turns = [i for i in runs.invocations if i.parent_tool_span_id is None]
    assert len(turns) - 20 < len(runs.prescored.verdicts) < len(turns)  # some cross a cut
    with caplog.at_level(logging.DEBUG, logger="tracescore.prescore"):
        three = score_runs(runs, CRITERIA, goldens=goldens)
    rescored = [r.getMessage() for r in caplog.records if "scored after the import" in r.message]
    count, total = rescored[0].split(" conversations")[0].split(" of ")
    assert 0 < int(count) < int(total) // 2  # conversations across a cut, and only those
    assert _rows(three) == _rows(one)
    assert _cases(three) == _cases(one)
    assert sum(r.outcome == "scored" for r in one.invocations) > 200
    # Other criteria than the workers scored: the parent scores everything itself.
    fewer = score_runs(runs, CRITERIA[:2], goldens=goldens)
    alone = replay([str(path)], CRITERIA[:2], goldens=goldens, idle_records=400)
    assert _cases(fewer) == _cases(alone)


_PARENT = os.getpid()


@dataclass(frozen=True, kw_only=True)
class _FailsInWorkers(Criterion):
    """A user's criterion whose ``evaluate`` raises, but only in an import worker."""

    name = "fails_in_workers"
    informational = True

    def score(self, ctx: EvalContext) -> Score:
        return Score(value=1.0)

    def evaluate(self, ctx: EvalContext) -> CriterionResult:
        if os.getpid() != _PARENT:
            raise RuntimeError("not here")
        return super().evaluate(ctx)


@pytest.mark.usefixtures("forked")
def test_a_part_the_worker_cannot_score_is_scored_by_the_parent(
    traffic: tuple[Path, list[GoldenSet]],
) -> None:
    path, goldens = traffic
    criteria = [*CRITERIA[:2], _FailsInWorkers()]
    runs = read_runs([str(path)], criteria, idle_records=400, jobs=3, goldens=goldens)
    assert runs.prescored is None  # no part sent verdicts
    alone = replay([str(path)], criteria, goldens=goldens, idle_records=400)
    assert _rows(score_runs(runs, criteria, goldens=goldens)) == _rows(alone)


def test_spawned_workers_are_not_given_the_scoring(
    traffic: tuple[Path, list[GoldenSet]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, goldens = traffic
    monkeypatch.setattr(parts, "_MIN_PART_BYTES", 1_000_000)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)  # another thread: workers are spawned
    other.start()
    try:
        runs = read_runs([str(path)], CRITERIA[:2], idle_records=400, jobs=2, goldens=goldens)
    finally:
        stop.set()
        other.join()
    assert runs.prescored is None
    assert len(runs.invocations) > 250
