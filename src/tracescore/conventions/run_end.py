"""Which spans mark the end of a trace's run: the assemblers' completeness rule.

A trace is complete once its run has ended and nothing new came for it during an idle
window; until its run has ended, it waits for the longer window of a trace whose root
never comes. Nearly always the root span says the run ended: spans are exported as they
end, and the root ends last.

Not under OpenLLMetry's LlamaIndex instrumentation (0.62) for an agent's run (a
``FunctionAgent``, ``ReActAgent``, ``AgentWorkflow``...): it wraps the agent workflow's
``run()``, which hands back a handler at once, so the workflow span (the root) ends
before the first step does, and every step ends after it. (Its other roots, a query or
chat engine's, an index's, end last as usual; so does a user's own ``Workflow``'s root
as far as this rule knows: its class name says nothing.) Taken as the end, it let a
live trace go after the first model call slower than the idle window, scored on the
spans of the run's first few milliseconds, the rest dropped as late. There the run ends
with the step that returns the workflow's ``StopEvent``, written ``{"result": ...}`` (or
with the workflow span itself, when it does end last and writes it). A run that fails
leaves no such step (the failing step's span never ends): its trace waits for the longer
window.

With content capture off, OpenLLMetry writes no ``StopEvent`` either: an agent's run
then never ends by this rule, and waits for the longer window too (its invocation is
not evaluable anyway: content not captured).

The rule is per span, without state or order: whether a trace's run has ended is whether
*some* span of it says so, so a file imported in parts (:mod:`tracescore.cuts`) reaches
the outcome of one process, and a ``StopEvent`` step that arrives before the workflow
span still counts.
"""

from __future__ import annotations

from typing import Final

from tracescore.conventions import llama_index
from tracescore.conventions.traceloop import ENTITY_OUTPUT, SPAN_KIND
from tracescore.spans import SpanRecord

__all__ = ["SCOPES", "ends_run"]

#: Instrumentation scopes with a rule of their own; any other span ends its run when it
#: is a root. Callers test membership first (spans are many, rules few).
SCOPES: Final = frozenset({llama_index.OL_SCOPE})
#: OpenLLMetry's name for a run's method (``FunctionAgent.workflow``).
_WORKFLOW: Final = "workflow"
#: How OpenLLMetry writes a LlamaIndex ``StopEvent`` (a JSON object of its fields).
_STOP_EVENT: Final = '{"result"'


def ends_run(span: SpanRecord, *, root: bool) -> bool:
    """True when ``span`` marks the end of its trace's run.

    Args:
        span: Any span of the trace.
        root: Whether ``span`` is a root of the trace (no parent, or a remote one).

    """
    if span.scope != llama_index.OL_SCOPE:
        return root
    attrs = span.attributes
    kind = attrs.get(SPAN_KIND)
    output = attrs.get(ENTITY_OUTPUT)
    stopped = isinstance(output, str) and output.startswith(_STOP_EVENT)
    if root:
        return stopped or kind != "workflow" or not llama_index.is_agent_run(span, _WORKFLOW)
    return kind == "task" and stopped
