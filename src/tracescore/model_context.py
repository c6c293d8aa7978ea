"""What a run's model was given besides the conversation: its context.

The developer instructions and tool declarations of the run's first model call, the
documents its retrievals found (a RAG pipeline's, or the model provider's own file
search) and the grounding metadata of replies a model's built-in search grounded. No
deterministic criterion reads them; the judges do
(:attr:`tracescore.criteria.Criterion.needs_model_context`), so they are read only when a
judged criterion is configured (decoding instructions and tool declarations alone is
~6% of rebuilding a run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tracescore.conventions.base import ConventionReader, SpanView
from tracescore.conventions.messages import JsonValue
from tracescore.conventions.registry import first_found
from tracescore.model import AgentGrounding
from tracescore.run_records import AgentRun, LlmStep

__all__ = ["NO_CONTEXT", "ModelContext", "read_model_context"]


@dataclass(frozen=True, slots=True)
class ModelContext:
    """A run's model context, as :class:`tracescore.model.Invocation` carries it."""

    system_instructions: str | None = None
    tool_definitions: JsonValue = None
    retrieved: tuple[str, ...] = ()
    grounding: tuple[AgentGrounding, ...] = ()


#: The context of a run read without it.
NO_CONTEXT = ModelContext()


def read_model_context(
    run: AgentRun, llm_steps: Sequence[LlmStep], provenance: dict[str, str]
) -> ModelContext:
    """Read ``run``'s model context; ``llm_steps`` in reply order.

    Records where each part was read in ``provenance``.
    """
    system = tools = None
    if llm_steps:
        first_views = llm_steps[0].views
        found_sys = first_found(first_views, ConventionReader.system_instructions)
        if found_sys is not None:
            system = found_sys.value
            provenance["system_instructions"] = found_sys.source
        found_tools = first_found(first_views, ConventionReader.tool_definitions)
        if found_tools is not None:
            tools = found_tools.value
            provenance["tool_definitions"] = found_tools.source
    return ModelContext(
        system_instructions=system,
        tool_definitions=tools,
        retrieved=_retrieved(_searched(run, llm_steps), provenance),
        grounding=_grounding(llm_steps, provenance),
    )


def _searched(run: AgentRun, llm_steps: Sequence[LlmStep]) -> list[SpanView]:
    """The views that may say what was found, by start.

    The retrievals, and the model calls: a provider's own file search runs inside one.
    """
    views = [*run.retrievals, *(v for step in llm_steps for v in step.views)]
    return sorted(views, key=lambda v: v.span.start_ns)


def _retrieved(views: Sequence[SpanView], provenance: dict[str, str]) -> tuple[str, ...]:
    """What the run's retrievals found, each text once, in the order they found it.

    A retriever's spans nest (OpenLLMetry writes a LlamaIndex retriever's ``retrieve``
    and the ``_retrieve`` inside it with the same nodes), and two searches may find the
    same document.
    """
    texts: dict[str, None] = {}
    for view in views:
        found = first_found((view,), ConventionReader.retrieved)
        if found is not None:
            provenance.setdefault("retrieved", found.source)
            texts.update(dict.fromkeys(found.value))
    return tuple(texts)


def _grounding(
    llm_steps: Sequence[LlmStep], provenance: dict[str, str]
) -> tuple[AgentGrounding, ...]:
    """The grounding metadata of each model call that has any, in reply order."""
    out: list[AgentGrounding] = []
    for step in llm_steps:
        found = first_found(step.views, ConventionReader.grounding)
        if found is not None:
            provenance.setdefault("grounding", found.source)
            out.append(AgentGrounding(author=step.agent or "", metadata=found.value))
    return tuple(out)
