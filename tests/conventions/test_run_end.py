"""Which spans mark the end of a trace's run (``conventions/run_end.py``)."""

from __future__ import annotations

import pytest
from conv_helpers import TraceBuilder

from tracescore.conventions import llama_index
from tracescore.conventions.run_end import SCOPES, ends_run
from tracescore.spans import AttrValue

OL = llama_index.OL_SCOPE
STOP = '{"result": {"response": {"role": "assistant"}}}'


def _ol(kind: str, output: str | None = None) -> dict[str, AttrValue]:
    """An OpenLLMetry decorator span's attributes: its kind and JSON output."""
    attrs: dict[str, AttrValue] = {"traceloop.span.kind": kind}
    if output is not None:
        attrs["traceloop.entity.output"] = output
    return attrs


@pytest.mark.parametrize(
    ("scope", "attrs", "root", "ends"),
    [
        # Any other instrumentation: the root ends the run, nothing else does.
        ("opentelemetry.instrumentation.openai", {}, True, True),
        ("traceloop.sdk", _ol("task", STOP), False, False),
        (None, {}, False, False),
        # OpenLLMetry's LlamaIndex workflow span ends before its run (run() hands back
        # a handler) unless it writes the StopEvent: then it did end last.
        (OL, _ol("workflow"), True, False),
        (OL, _ol("workflow", STOP), True, True),
        # A root of that scope that is no workflow (a bare model call) ends its run.
        (OL, _ol("task"), True, True),
        # The step that returns the StopEvent ends it; other steps do not.
        (OL, _ol("task", STOP), False, True),
        (OL, _ol("task", '{"input": []}'), False, False),
        (OL, _ol("task", '"{\\"result\\""'), False, False),
        (OL, _ol("task"), False, False),
        (OL, _ol("workflow", STOP), False, False),
    ],
)
def test_ends_run(scope: str | None, attrs: dict[str, AttrValue], root: bool, ends: bool) -> None:
    span = TraceBuilder(scope=scope).span("s", attrs)
    assert ends_run(span, root=root) is ends
    # Callers skip the call for spans outside SCOPES: the rule there is the root.
    if scope not in SCOPES:
        assert ends is root
