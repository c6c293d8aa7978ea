"""What a run's spans state about its identity: conversation and invocation ids, tags.

* conversation id: the first of :data:`CONVERSATION_KEYS` any span of the run (or its
  resource) carries, in key order; else, or when that is a Responses API response id,
  the chain the run's model calls continue (:mod:`tracescore.response_chains`);
* invocation id: ADK's, else ``<trace id>:<root span id>``;
* tags: the ``tracescore.*`` attributes of the run's root and agent spans and of their
  resources (where an application sets them, as attributes, resource or baggage).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tracescore.response_chains import CONVERSATION_KEY, is_response_id, response_chain
from tracescore.run_records import AgentRun
from tracescore.spans import SpanRecord

__all__ = ["CONVERSATION_KEYS", "RunIds", "run_ids"]

CONVERSATION_KEYS = (
    "gen_ai.conversation.id",
    "session.id",
    "gcp.vertex.agent.session_id",
    "traceloop.association.properties.session_id",
    "traceloop.association.properties.conversation_id",
    "traceloop.association.properties.thread_id",
    "traceloop.association.properties.chat_id",
)
_INVOCATION_KEYS = ("gcp.vertex.agent.invocation_id",)
#: Every key :func:`_holders` looks for.
_ID_KEYS = frozenset((*CONVERSATION_KEYS, *_INVOCATION_KEYS))
_TAG_PREFIX = "tracescore."
_TAG_MARK = "\n" + _TAG_PREFIX


@dataclass(slots=True, frozen=True)
class RunIds:
    """The ids and tags of one agent run."""

    conversation_id: str | None
    invocation_id: str
    #: The Responses API response ids of the run's model calls (empty for other APIs).
    response_ids: tuple[str, ...]
    tags: dict[str, str]


def run_ids(run: AgentRun, model_calls: Iterable[SpanRecord], provenance: dict[str, str]) -> RunIds:
    """The ids and tags ``run`` states; ``model_calls`` are its model-call spans in order.

    Each id's source is recorded in ``provenance`` (``conversation_id``, ``invocation_id``).
    """
    root = run.root
    holders = _holders(run.spans)
    conversation_id = _first_attr(holders, CONVERSATION_KEYS, provenance, "conversation_id")
    response_ids: tuple[str, ...] = ()
    if conversation_id is None or is_response_id(conversation_id):
        chained, response_ids = response_chain(holders, model_calls)
        if chained is not None:
            conversation_id = chained
            provenance["conversation_id"] = f"{CONVERSATION_KEY} (response chain)"
    invocation_id = (
        _first_attr(holders, _INVOCATION_KEYS, provenance, "invocation_id")
        or f"{root.trace_id}:{root.span_id}"
    )
    return RunIds(conversation_id, invocation_id, response_ids, _tags(run))


def _holders(spans: Sequence[SpanRecord]) -> list[SpanRecord]:
    """The spans whose attributes or resource carry a conversation or invocation id key.

    Most spans carry none: one C-level scan per attribute map finds the few that do,
    instead of a lookup per key, span and map. Resources are shared by the spans of one
    process, so each is scanned once.
    """
    wanted = _ID_KEYS
    seen: dict[int, bool] = {}
    holders: list[SpanRecord] = []
    for span in spans:
        resource = span.resource
        in_resource = seen.get(id(resource))
        if in_resource is None:
            in_resource = seen[id(resource)] = not wanted.isdisjoint(resource)
        if in_resource or not wanted.isdisjoint(span.attributes):
            holders.append(span)
    return holders


def _first_attr(
    holders: Sequence[SpanRecord],
    keys: Sequence[str],
    provenance: dict[str, str],
    field_name: str,
) -> str | None:
    """The first non-empty value of ``keys`` (in key order, then span order)."""
    for key in keys:
        for span in holders:
            value = span.attributes.get(key)
            if value is None:
                value = span.resource.get(key)
            if value not in (None, ""):
                provenance[field_name] = key
                return str(value)
    return None


def _tags(run: AgentRun) -> dict[str, str]:
    """``tracescore.*`` attributes of the run's root and agent spans and their resources.

    Tags are set by the application on its agent span, on the resource, or as baggage
    copied onto every span; the root and agent spans see all three, so the (many) other
    spans need not be scanned.
    """
    tags: dict[str, str] = {}
    seen: set[int] = set()
    for span in (run.root, *(v.span for v in run.agent_views)):
        sources = (
            (span.attributes,) if id(span.resource) in seen else (span.attributes, span.resource)
        )
        seen.add(id(span.resource))
        for source in sources:
            # Most maps hold no tag: one C-level search of their joined keys says so.
            if _TAG_MARK not in "\n".join(("", *source)):
                continue
            for key in [k for k in source if k.startswith(_TAG_PREFIX)]:
                value = source[key]
                if value is not None:
                    tags.setdefault(key, str(value))
    return tags
