"""Grouping invocations into conversations: order by start, ties broken deterministically,
Responses API chains joined."""

from __future__ import annotations

import itertools

from tracescore.model import Invocation, group_conversations


def _inv(
    conv: str | None, start_ms: int, trace: str, root: str = "r", responses: tuple[str, ...] = ()
) -> Invocation:
    return Invocation(
        trace_id=trace,
        invocation_id=f"{trace}-{root}",
        conversation_id=conv,
        user_content="q",
        start_ns=start_ms * 1_000_000,
        root_span_id=root,
        response_ids=responses,
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


def test_turns_of_a_response_chain_are_one_conversation_under_its_first_response() -> None:
    # Turn 1 made one call (no pointer); turn 2 continues it and points at its own first
    # response inside; turn 3 continues turn 2. A run on another API stays alone.
    first = _inv(None, 1, "t1", responses=("resp_1",))
    second = _inv("resp_1", 2, "t2", responses=("resp_2", "resp_3"))
    third = _inv("resp_3", 3, "t3", responses=("resp_4",))
    other = _inv(None, 4, "t4")
    conversations = group_conversations([third, other, second, first])
    assert _order([third, other, second, first]) == [
        ("resp_1", ["t1-r", "t2-r", "t3-r"]),
        ("trace-t4-r", ["t4-r"]),
    ]
    chain = conversations[0].invocations
    assert [i.conversation_id for i in chain] == ["resp_1"] * 3
    assert [i.response_ids for i in chain] == [("resp_1",), ("resp_2", "resp_3"), ("resp_4",)]
    # Copies with the chain's id; the turns given are left as they were.
    assert first.conversation_id is None and third.conversation_id == "resp_3"
    assert conversations[1].invocations[0] is other


def test_without_chains_the_invocations_themselves_are_grouped() -> None:
    # Callers that look invocations up by identity (workers' verdicts) rely on it.
    invs = [_inv("s1", 1, "t1"), _inv(None, 2, "t2")]
    grouped = [i for c in group_conversations(invs) for i in c.invocations]
    assert len(grouped) == 2 and all(a is b for a, b in zip(grouped, invs, strict=True))


def test_a_pointer_to_a_response_no_turn_made_names_its_own_conversation() -> None:
    # The chain's earlier turns are elsewhere (another file, before the export began).
    late = _inv("resp_7", 5, "t5", responses=("resp_8",))
    [conversation] = group_conversations([late])
    assert conversation.conversation_id == "resp_7"
    assert conversation.invocations[0] is late
