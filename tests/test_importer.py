"""The importer's use of parking (tracescore.assembly): faster, and never different."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from otlp_helpers import agent_spans, spans_to_otlp_json_lines

from tracescore.assembly import TraceAssembler
from tracescore.formats.files import read_file
from tracescore.importer import ImportStats, invocations_from_batches
from tracescore.model import Invocation


def _import(path: str, *, parking: bool) -> tuple[list[Invocation], ImportStats, TraceAssembler]:
    stats = ImportStats()
    asm = TraceAssembler(idle_records=4)  # traces are released along the way, not at the end
    batches = read_file(path)
    if not parking:  # batches that cannot be read again: nothing can be parked
        batches = (replace(b, reread=None) for b in batches)
    return list(invocations_from_batches(batches, stats, assembler=asm)), stats, asm


@pytest.mark.parametrize("order", ["as exported", "parents first"])
def test_parked_traces_give_the_invocations_and_counts_of_an_import_without(
    tmp_path: Path, order: str
) -> None:
    spans = agent_spans(runs=6)
    if order == "parents first":  # every parked trace gets records after its root
        spans = sorted(spans, key=lambda s: s.start_time or 0)
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(spans_to_otlp_json_lines(spans, batch_size=3)) + "\n")
    got, got_stats, asm = _import(str(path), parking=True)
    want, want_stats, plain = _import(str(path), parking=False)
    assert len(want) == 6
    assert all(inv.user_content and len(inv.tool_calls) == 2 for inv in want)
    assert got == want
    assert got_stats == want_stats
    assert plain.parks == 0
    if order == "as exported":  # the root span is each trace's last
        assert (asm.parks, asm.restores) == (6, 0)
    else:
        assert asm.restores == asm.parks > 0
