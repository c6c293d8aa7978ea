"""Which reader answers which question first: the precedence of REFERENCE §5.5.

Step kind: OpenInference → GenAI operation → Traceloop → ADK legacy marks → pydantic-ai
→ heuristics. Model I/O: GenAI attributes → GenAI events/logs (≥1.37) → OpenInference
→ framework histories (pydantic-ai, ADK ``llm_request``/``llm_response``) → Traceloop
indexed keys → legacy GenAI events (≤1.36) → generic ``input.value``/``output.value``.
Tool I/O: ``gen_ai.tool.call.*`` (attributes, then ≥1.37 events) → ADK → OpenInference
→ Traceloop → pydantic-ai v2 → legacy GenAI events (Strands' ``execute_tool`` events).

Each field is resolved on its own: a span may get its tool name from one convention and
its result from another (mixed instrumentation is normal).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Final, TypeVar, cast

from tracescore.conventions.adk import AdkLegacy
from tracescore.conventions.base import ConventionReader, Found, SpanView, StepKind, ToolIO, Usage
from tracescore.conventions.genai import GenAIAttributes
from tracescore.conventions.genai_events import GenAIEvents, GenAILegacyEvents
from tracescore.conventions.generic_io import GenericIO
from tracescore.conventions.openinference import OpenInference
from tracescore.conventions.pydantic_ai import PydanticAI
from tracescore.conventions.strands import Strands
from tracescore.conventions.traceloop import Traceloop
from tracescore.spans import SpanRecord

__all__ = [
    "KIND_READERS",
    "RUN_READERS",
    "acts_in_code",
    "all_found",
    "final_output",
    "MODEL_IO_READERS",
    "TOOL_IO_READERS",
    "capture_hint",
    "classify",
    "first_found",
    "merged_tool_io",
    "merged_usage",
    "model_called",
    "paused_for",
    "register_reader",
    "stated_answer",
    "stopped_by",
]

T = TypeVar("T")

_GENAI = GenAIAttributes()
_ADK = AdkLegacy()
_GENAI_EVENTS = GenAIEvents()
_LEGACY_EVENTS = GenAILegacyEvents()
_OPENINFERENCE = OpenInference()
_GENERIC = GenericIO()
_TRACELOOP = Traceloop()
_PYDANTIC_AI = PydanticAI()
_STRANDS = Strands()

#: Readers asked for a span's step kind, in order.
KIND_READERS: list[ConventionReader] = [_OPENINFERENCE, _GENAI, _TRACELOOP, _ADK, _PYDANTIC_AI]
#: Readers asked for model input/output, instructions, tool definitions and usage.
MODEL_IO_READERS: list[ConventionReader] = [
    _GENAI,
    _GENAI_EVENTS,
    _OPENINFERENCE,
    _PYDANTIC_AI,
    _ADK,
    _TRACELOOP,
    _LEGACY_EVENTS,
    _GENERIC,
]
#: Readers asked about tool executions. OpenLLMetry's answers only for its own tool spans
#: (``traceloop.span.kind``), whose ``gen_ai.tool.call.*`` (LangChain instrumentation
#: 0.62) repeat its entity input and output, callback envelopes included: it unwraps them.
TOOL_IO_READERS: list[ConventionReader] = [
    _TRACELOOP,
    _GENAI,
    _GENAI_EVENTS,
    _ADK,
    _OPENINFERENCE,
    _PYDANTIC_AI,
    _LEGACY_EVENTS,
]
#: Readers asked only the run-level questions of an agent span (its answer, a pause, a
#: stop), before the model-I/O readers: Strands' run span states how the run ended.
RUN_READERS: list[ConventionReader] = [_STRANDS]
#: Readers asked for the switch that turns content capture on.
HINT_READERS: list[ConventionReader] = [
    _ADK,
    _OPENINFERENCE,
    _TRACELOOP,
    _PYDANTIC_AI,
    _LEGACY_EVENTS,
    _GENAI,
]

#: ``gen_ai.tool.name`` of ADK's ``execute_tool (merged)`` span.
MERGED_TOOLS: Final = "(merged tools)"
_MODEL_ATTRS: Final = ("gen_ai.request.model", "llm.model_name", "gen_ai.response.model")


_HEURISTIC_MARKERS: Final = frozenset({"gen_ai.tool.name", *_MODEL_ATTRS})
_markers: frozenset[str] = frozenset()
_scopes: frozenset[str | None] = frozenset()


#: The run and model-I/O readers that answer each run-level question, in precedence
#: order: the others inherit the base class's "no", which is not worth a call per run.
_ANSWERING: dict[str, list[ConventionReader]] = {}
_RUN_QUESTIONS: Final = (
    "final_output",
    "stated_answer",
    "paused_for",
    "stopped_by",
    "acts_in_code",
)


#: Each model-I/O question (a :class:`ConventionReader` method) -> the bound methods of
#: the model-I/O readers that override it, in precedence order. The others would give
#: the base class's "no" (None or False): asking only these gives the same answers with
#: a Python call or two fewer per reader, view and question (llm_input and llm_output
#: are asked of every model call; usage, task, history or read_reply of only half of
#: the readers or fewer). Rebuilt when a reader registers, which is when its methods
#: are looked up.
_ASKS: dict[object, list[Callable[[SpanView], object]]] = {}


def _refresh_markers() -> None:
    global _markers, _scopes, _ASKS  # noqa: PLW0603 - derived from the reader lists, rebuilt on change
    _markers = _HEURISTIC_MARKERS.union(*(r.markers for r in KIND_READERS))
    _scopes = frozenset().union(*(r.scopes for r in KIND_READERS))
    for name in _RUN_QUESTIONS:
        base = getattr(ConventionReader, name)
        _ANSWERING[name] = [
            r for r in (*RUN_READERS, *MODEL_IO_READERS) if getattr(type(r), name) is not base
        ]
    # Built whole, then swapped in: a scorer thread asking meanwhile sees one or the other.
    _ASKS = {
        base: [getattr(r, name) for r in MODEL_IO_READERS if getattr(type(r), name) is not base]
        for name, base in vars(ConventionReader).items()
        if not name.startswith("_") and callable(base)
    }


def register_reader(
    reader: ConventionReader,
    *,
    kind: int | None = None,
    model_io: int | None = None,
    tool_io: int | None = None,
    hint: int | None = None,
    run: int | None = None,
) -> None:
    """Insert ``reader`` into the precedence lists at the given positions (None = not at all).

    Built-in readers register themselves this way; a user's own convention reader can too.
    A model-I/O reader is asked the run-level questions too; ``run`` is for a reader that
    answers only those (how an agent span says its run ended).
    """
    for position, readers in (
        (kind, KIND_READERS),
        (model_io, MODEL_IO_READERS),
        (tool_io, TOOL_IO_READERS),
        (hint, HINT_READERS),
        (run, RUN_READERS),
    ):
        if position is not None and reader not in readers:
            readers.insert(position, reader)
    _refresh_markers()


_refresh_markers()


def classify(span: SpanRecord) -> StepKind:
    """The step kind of ``span``: the first reader that recognises it, else heuristics."""
    attrs = span.attributes
    if span.scope not in _scopes and _markers.isdisjoint(attrs):
        return "other"
    if attrs.get("gen_ai.tool.name") == MERGED_TOOLS:
        # ADK's summary span for parallel calls repeats calls that have their own spans.
        return "other"
    for reader in KIND_READERS:
        kind = reader.step_kind(span)
        if kind is not None:
            return kind
    if "gen_ai.tool.name" in attrs:
        return "tool"
    for key in _MODEL_ATTRS:
        if key in attrs:
            return "llm"
    return "other"


def agent_name(span: SpanRecord) -> str | None:
    """The agent name a span states, by reader precedence."""
    for reader in KIND_READERS:
        name = reader.agent_name(span)
        if name:
            return name
    return None


def first_found(
    views: Sequence[SpanView],
    question: Callable[[ConventionReader, SpanView], Found[T] | None],
) -> Found[T] | None:
    """Ask each view (outer span first) each model-I/O reader in order; first answer wins.

    ``question`` is best a :class:`ConventionReader` method (``ConventionReader.llm_input``):
    only the readers that override it are asked. Any other callable is asked of every
    reader.
    """
    asks = _ASKS.get(question)
    if asks is None:
        return next(all_found(views, question), None)
    for view in views:
        for ask in asks:
            found = ask(view)
            if found is not None:
                return cast("Found[T]", found)
    return None


def all_found(
    views: Sequence[SpanView],
    question: Callable[[ConventionReader, SpanView], Found[T] | None],
) -> Iterator[Found[T]]:
    """Every answer, in precedence order, asked lazily (for fallbacks past a bad answer).

    ``question`` as in :func:`first_found`.
    """
    asks = _ASKS.get(question)
    if asks is None:
        for view in views:
            for reader in MODEL_IO_READERS:
                found = question(reader, view)
                if found is not None:
                    yield found
        return
    for view in views:
        for ask in asks:
            answer = ask(view)
            if answer is not None:
                yield cast("Found[T]", answer)


def final_output(views: Sequence[SpanView]) -> Found[str] | None:
    """The run's output as an agent span states it, where no reply is its answer."""
    readers = _ANSWERING["final_output"]
    return next((f for v in views for r in readers if (f := r.final_output(v)) is not None), None)


def stated_answer(views: Sequence[SpanView]) -> Found[str] | None:
    """The run's answer as an agent span states it, over any reply (outer span first)."""
    readers = _ANSWERING["stated_answer"]
    return next((f for v in views for r in readers if (f := r.stated_answer(v)) is not None), None)


def paused_for(views: Sequence[SpanView]) -> str | None:
    """What the run waits for, when an agent span says it paused for input."""
    readers = _ANSWERING["paused_for"]
    return next((p for v in views for r in readers if (p := r.paused_for(v)) is not None), None)


def stopped_by(views: Sequence[SpanView]) -> str | None:
    """The run's error, when an agent span says the framework stopped it unanswered."""
    readers = _ANSWERING["stopped_by"]
    return next((e for v in views for r in readers if (e := r.stopped_by(v)) is not None), None)


def acts_in_code(views: Sequence[SpanView]) -> bool:
    """Whether an agent span says its model may act by code that calls the tools."""
    readers = _ANSWERING["acts_in_code"]
    return any(r.acts_in_code(v) for v in views for r in readers)


def model_called(views: Sequence[SpanView]) -> bool:
    """False when a reader says the step's reply came from the framework, not a model."""
    asks = _ASKS[ConventionReader.replied_without_model]
    return not any(ask(v) for v in views for ask in asks)


def merged_usage(views: Sequence[SpanView]) -> Usage | None:
    """Token usage of one model call, field by field from the first reader that has it."""
    inp: int | None = None
    out: int | None = None
    asks = cast("list[Callable[[SpanView], Usage | None]]", _ASKS[ConventionReader.usage])
    for view in views:
        for ask in asks:
            usage = ask(view)
            if usage is None:
                continue
            inp = usage.input_tokens if inp is None else inp
            out = usage.output_tokens if out is None else out
            if inp is not None and out is not None:
                return Usage(input_tokens=inp, output_tokens=out)
    if inp is None and out is None:
        return None
    return Usage(input_tokens=inp, output_tokens=out)


def merged_tool_io(view: SpanView) -> ToolIO:
    """Everything the readers say about one tool span, each field from the first that has it."""
    name = call_id = error = None
    args = result = None
    for reader in TOOL_IO_READERS:
        io = reader.tool_io(view)
        if io is None:
            continue
        name = name or io.name
        call_id = call_id or io.call_id
        args = args or io.args
        if result is None and error is None:
            result, error = io.result, io.error
        if name and call_id and args and (result or error):
            break
    return ToolIO(name=name, call_id=call_id, args=args, result=result, error=error)


def capture_hint(spans: Sequence[SpanRecord]) -> str | None:
    """How to enable content capture for the convention these spans follow."""
    for reader in HINT_READERS:
        for span in spans:
            hint = reader.capture_hint(span)
            if hint:
                return hint
    return None
