"""A ``gen_ai.conversation.id`` that is a Responses API response id points, it names nothing."""

from __future__ import annotations

from spanbuilder import TraceBuilder
from tracescore.response_chains import is_response_id, response_chain
from tracescore.spans import SpanRecord


def _spans(*attrs: dict[str, str]) -> list[SpanRecord]:
    tb = TraceBuilder()
    return [tb.span(f"s{i}", attrs=a) for i, a in enumerate(attrs)]


def test_response_ids_are_told_by_their_prefix() -> None:
    assert is_response_id("resp_68af")
    assert not is_response_id("conv_68af")
    assert not is_response_id("session-1")
    assert not is_response_id(None)
    assert not is_response_id(7)


def test_a_run_on_another_api_has_no_chain() -> None:
    model = _spans({"gen_ai.response.id": "chatcmpl-1"})
    assert response_chain([], model) == (None, ())


def test_a_first_turn_of_one_call_points_nowhere_but_keeps_its_response() -> None:
    model = _spans({"gen_ai.response.id": "resp_1"})
    assert response_chain([], model) == (None, ("resp_1",))


def test_a_turn_pointing_at_its_own_response_starts_a_chain() -> None:
    # Agent Framework: the turn's second call continues its first.
    first, second = _spans(
        {"gen_ai.response.id": "resp_1"},
        {"gen_ai.response.id": "resp_2", "gen_ai.conversation.id": "resp_1"},
    )
    assert response_chain([second], [first, second]) == ("resp_1", ("resp_1", "resp_2"))


def test_a_turn_pointing_at_another_turns_response_continues_it() -> None:
    agent, first, second = _spans(
        {"gen_ai.conversation.id": "resp_2"},
        {"gen_ai.response.id": "resp_3"},
        {"gen_ai.response.id": "resp_4", "gen_ai.conversation.id": "resp_3"},
    )
    # Its own pointer (resp_3) is skipped, whatever the span order.
    assert response_chain([second, agent], [first, second]) == ("resp_2", ("resp_3", "resp_4"))


def test_a_response_id_repeated_by_two_spans_of_one_call_counts_once() -> None:
    outer, inner = _spans({"gen_ai.response.id": "resp_1"}, {"gen_ai.response.id": "resp_1"})
    assert response_chain([], [outer, inner]) == (None, ("resp_1",))


def test_a_pointer_with_no_response_of_the_run_is_the_conversation() -> None:
    [agent] = _spans({"gen_ai.conversation.id": "resp_9"})
    assert response_chain([agent], []) == ("resp_9", ())
