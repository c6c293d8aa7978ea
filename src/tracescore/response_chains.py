"""Conversations threaded through OpenAI's Responses API: ``previous_response_id`` chains.

A Responses API conversation can live on the server: each request names the response it
continues (``previous_response_id``) instead of resending the history. Microsoft Agent
Framework (1.23, its default OpenAI client ``OpenAIChatClient``) then writes that
previous response's id as ``gen_ai.conversation.id``: on the second model call of a turn
(continuing the turn's first response) and on the agent span of the next turn
(continuing the last response of the turn before). Read as is, every turn had an id of
its own (``resp_0``, then ``resp_1``...), so a session's turns never formed one
conversation.

Here such an id is a pointer, not a name (:func:`response_chain`): a run pointing at a
response it did not make continues the run that made it; a run whose pointers all lead
to its own responses starts a chain, named by its first response's id. The run it
continues may be in another trace, so the turns are joined where every run is at hand:
when invocations are grouped into conversations (:func:`tracescore.model.group_conversations`)
and in the live scorer's conversation history (which ``by = "conversation"`` sampling
follows too). For that an invocation keeps the ids of
its own responses (``Invocation.response_ids``); a first turn that made one model call
points nowhere, and is found by them.

A ``gen_ai.conversation.id`` that is no response id (a session id, an OpenAI
``conv_...`` conversation) is a name, as before. Grouped outputs (``import -o
x.evalset.json``, ``replay``) show a chain's turns under the chain's id; ``import
--format jsonl``, which writes each trace as it is rebuilt, shows each turn's own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, TypeGuard

from tracescore.spans import SpanRecord

__all__ = ["CONVERSATION_KEY", "is_response_id", "response_chain"]

#: The attribute that may hold a previous response's id.
CONVERSATION_KEY: Final = "gen_ai.conversation.id"
_RESPONSE_ID: Final = "gen_ai.response.id"
#: How OpenAI's Responses API ids begin (``resp_`` followed by hex).
_RESPONSE_PREFIX: Final = "resp_"


def is_response_id(value: object) -> TypeGuard[str]:
    """True for a Responses API response id (``resp_...``)."""
    return isinstance(value, str) and value.startswith(_RESPONSE_PREFIX)


def response_chain(
    holders: Sequence[SpanRecord], model_spans: Iterable[SpanRecord]
) -> tuple[str | None, tuple[str, ...]]:
    """A run's place in a response chain: the conversation id it implies and its responses.

    Args:
        holders: The run's spans that carry an id attribute, in span order (the first
            pointer found to a response the run did not make wins).
        model_spans: The run's model-call spans, in call order.

    Returns:
        The conversation id (the response it continues, else its own first response when
        some ``gen_ai.conversation.id`` points at one, else None) and the ids of its own
        responses in call order (empty for a run on another API).

    """
    own = tuple(
        dict.fromkeys(
            value
            for span in model_spans
            if is_response_id(value := span.attributes.get(_RESPONSE_ID))
        )
    )
    pointers = [
        value for span in holders if is_response_id(value := span.attributes.get(CONVERSATION_KEY))
    ]
    if not pointers:
        return None, own
    continued = next((p for p in pointers if p not in own), None)
    if continued is not None:
        return continued, own
    return (own[0] if own else pointers[0]), own
