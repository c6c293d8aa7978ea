"""Grouping invocations into conversations: order by start, ties broken deterministically."""

from __future__ import annotations

import itertools

from tracescore.model import Invocation, group_conversations


def _inv(conv: str | None, start_ms: int, trace: str, root: str = "r") -> Invocation:
    return Invocation(
        trace_id=trace,
        invocation_id=f"{trace}-{root}",
        conversation_id=conv,
        user_content="q",
        start_ns=start_ms * 1_000_000,
        root_span_id=root,
    )


def _order(invocations: list[Invocation]) -> list[tuple[str, list[str]]]:
    return [
        (c.conversation_id, [i.invocation_id for i in c.invocations])
        for c in group_conversations(invocations)
    ]


def test_turns_and_conversations_are_ordered_by_start() -> None:
    invs = [_inv("s2", 5, "t4"), _inv("s1", 3, "t2"), _inv("s1", 1, "t1"), _inv(None, 2, "t3")]
    assert _order(invs) == [
        ("s1", ["t1-r", "t2-r"]),
        ("trace-t3-r", ["t3-r"]),
        ("s2", ["t4-r"]),
    ]


def test_equal_starts_give_one_order_whatever_the_input_order() -> None:
    # Millisecond clocks: two turns of one session, and two sessions, start together.
    invs = [
        _inv("s1", 7, "tb"),
        _inv("s1", 7, "ta", "r2"),
        _inv("s1", 7, "ta", "r1"),
        _inv("s2", 7, "t0"),
        _inv("s3", 7, "tc"),
    ]
    orders = {str(_order(list(p))) for p in itertools.permutations(invs)}
    assert len(orders) == 1
    assert _order(invs) == [
        ("s2", ["t0-r"]),
        ("s1", ["ta-r1", "ta-r2", "tb-r"]),
        ("s3", ["tc-r"]),
    ]


def test_recorded_runs_without_trace_ids_keep_their_order() -> None:
    # Turns of an evalset of recorded runs: no trace ids, and often no timestamps either.
    turns = [
        Invocation(trace_id="", invocation_id=f"e-{n}", conversation_id="case", user_content=n)
        for n in ("second", "first", "third")
    ]
    [conversation] = group_conversations(turns)
    assert [t.invocation_id for t in conversation.invocations] == ["e-second", "e-first", "e-third"]
