"""The registry asks only the readers that answer a question, with the same answers."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tracescore.conventions import registry
from tracescore.conventions.base import ConventionReader, Found, SpanView, Usage
from tracescore.conventions.messages import Message, TextPart
from tracescore.conventions.registry import (
    MODEL_IO_READERS,
    all_found,
    first_found,
    merged_usage,
    model_called,
    register_reader,
)
from tracescore.formats.files import read_file
from tracescore.spans import LogRecord, SpanRecord
from tracescore.trace_tree import split_runs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traces"

QUESTIONS = (
    ConventionReader.llm_input,
    ConventionReader.llm_output,
    ConventionReader.history,
    ConventionReader.task,
    ConventionReader.system_instructions,
    ConventionReader.tool_definitions,
    ConventionReader.retrieved,
    ConventionReader.grounding,
    ConventionReader.read_reply,
)


def _views() -> Iterator[SpanView]:
    """Every span of the bundled ADK example traces, as the trajectory builder sees them."""
    spans: dict[str, list[SpanRecord]] = defaultdict(list)
    logs: dict[str, list[LogRecord]] = defaultdict(list)
    for path in sorted(EXAMPLES.glob("*.jsonl")):
        for batch in read_file(str(path)):
            for span in batch.spans:
                spans[span.trace_id].append(span)
            for log in batch.logs:
                if log.trace_id:
                    logs[log.trace_id].append(log)
    for trace_id, trace in spans.items():
        for run in split_runs(trace, logs[trace_id]):
            yield from run.agent_views
            for step in run.llm_steps:
                yield from step.views
            for tool in run.tool_steps:
                yield tool.view


def _every_reader(name: str) -> Callable[[ConventionReader, SpanView], Any]:
    """The question as a lambda: the registry then asks every model-I/O reader."""
    return lambda reader, view: getattr(reader, name)(view)


@pytest.mark.parametrize("question", QUESTIONS, ids=lambda q: q.__name__)
def test_asking_only_the_readers_that_answer_finds_what_asking_all_of_them_finds(
    question: Callable[[ConventionReader, SpanView], Found[Any] | None],
) -> None:
    views = list(_views())
    assert len(views) > 20
    asked_all = _every_reader(question.__name__)
    answered = 0
    for view in views:
        found = first_found([view], question)
        assert found == first_found([view], asked_all)
        assert list(all_found([view], question)) == list(all_found([view], asked_all))
        answered += found is not None
    if question in (ConventionReader.llm_input, ConventionReader.llm_output):
        assert answered > 0  # the comparison saw real answers, not only None


def test_usage_and_model_called_ask_the_readers_that_answer_them() -> None:
    views = list(_views())
    usages = [merged_usage([view]) for view in views]
    assert any(u is not None for u in usages)
    for view, usage in zip(views, usages, strict=True):
        every = [r.usage(view) for r in MODEL_IO_READERS]
        first = next((u for u in every if u is not None), None)
        if first is not None and first.input_tokens is not None and first.output_tokens is not None:
            assert usage == first
        assert model_called([view]) == (
            not any(r.replied_without_model(view) for r in MODEL_IO_READERS)
        )


class _Canned(ConventionReader):
    """A user's reader: answers the model's output and usage of every span."""

    name = "canned"

    def llm_output(self, view: SpanView) -> Found[list[Message]] | None:
        return Found([Message(role="assistant", parts=(TextPart(text="canned"),))], "canned.out")

    def usage(self, view: SpanView) -> Usage | None:
        return Usage(input_tokens=7, output_tokens=11)

    def replied_without_model(self, view: SpanView) -> bool:
        return True


def test_a_reader_registered_later_is_asked_its_questions_first() -> None:
    view = next(v for v in _views() if first_found([v], ConventionReader.llm_output))
    before = first_found([view], ConventionReader.llm_output)
    assert before is not None and before.source != "canned.out"
    reader = _Canned()
    register_reader(reader, model_io=0)
    try:
        found = first_found([view], ConventionReader.llm_output)
        assert found is not None and found.source == "canned.out"
        assert next(all_found([view], ConventionReader.llm_output)).source == "canned.out"
        assert merged_usage([view]) == Usage(input_tokens=7, output_tokens=11)
        assert not model_called([view])
        # Questions it does not override are answered as before.
        assert first_found([view], ConventionReader.llm_input) == first_found(
            [view], _every_reader("llm_input")
        )
    finally:
        MODEL_IO_READERS.remove(reader)
        registry._refresh_markers()
    assert first_found([view], ConventionReader.llm_output) == before
    assert model_called([view])
