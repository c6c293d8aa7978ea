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
    ("scope", "name", "attrs", "root", "ends"),
    [
        # Any other instrumentation: the root ends the run, nothing else does.
        ("opentelemetry.instrumentation.openai", "chat", {}, True, True),
        ("traceloop.sdk", "t.task", _ol("task", STOP), False, False),
        (None, "s", {}, False, False),
        # OpenLLMetry's workflow span of an agent ends before its run (run() hands back
        # a handler) unless it writes the StopEvent: then it did end last.
        (OL, "FunctionAgent.workflow", _ol("workflow"), True, False),
        (OL, "ReActAgent.workflow", _ol("workflow"), True, False),
        (OL, "AgentWorkflow.workflow", _ol("workflow"), True, False),
        (OL, "FunctionAgent.workflow", _ol("workflow", STOP), True, True),
        # Its other top spans end last: an engine's, an index's, a user's workflow's.
        (OL, "RetrieverQueryEngine.workflow", _ol("workflow", '{"response": "x"}'), True, True),
        (OL, "MockEmbedding.workflow", _ol("workflow"), True, True),
        (OL, "MyFlow.workflow", _ol("workflow"), True, True),
        # A root of that scope that is no workflow (a bare model call) ends its run.
        (OL, "Ollama.task", _ol("task"), True, True),
        # The step that returns the StopEvent ends it; other steps do not.
        (OL, "BaseWorkflowAgent.task", _ol("task", STOP), False, True),
        (OL, "BaseWorkflowAgent.task", _ol("task", '{"input": []}'), False, False),
        (OL, "BaseWorkflowAgent.task", _ol("task", '"{\\"result\\""'), False, False),
        (OL, "BaseWorkflowAgent.task", _ol("task"), False, False),
        (OL, "FunctionAgent.workflow", _ol("workflow", STOP), False, False),
    ],
)
def test_ends_run(
    scope: str | None, name: str, attrs: dict[str, AttrValue], root: bool, ends: bool
) -> None:
    span = TraceBuilder(scope=scope).span(name, attrs)
    assert ends_run(span, root=root) is ends
    # Callers skip the call for spans outside SCOPES: the rule there is the root.
    if scope not in SCOPES:
        assert ends is root
