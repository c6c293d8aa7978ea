"""agno's runs as OpenInference's instrumentation writes them: a run that paused.

``openinference-instrumentation-agno`` (1.0) writes a run as an AGENT span
``<agent>.run`` (``<agent>.continue_run`` for a resumed one), its ``output.value`` the
run's ``content``. When a tool needs a human (``requires_confirmation``,
``requires_user_input``) or runs elsewhere (``external_execution``), agno pauses the run
before the tool runs (``RunStatus.paused``) and sets its content to a fixed sentence
(``agno.utils.response.get_paused_content``; a team's, ``"Team run paused."`` and what
each member waits for). Nothing else on the span says the run paused: the sentence is
the sign, and no answer. ``continue_run`` resumes it, in a trace of its own whose model
calls see the whole turn. Checked with agno 3.1.
"""

from __future__ import annotations

from typing import Final

from tracescore.spans import SpanRecord

__all__ = ["SCOPE", "paused_for"]

SCOPE: Final = "openinference.instrumentation.agno"
#: What ``get_paused_content`` sets a paused agent run's content to.
_AGENT_PAUSED: Final = frozenset(
    {
        "I have tools to execute, but I need confirmation, user input, or external execution.",
        "I have tools to execute, but I need confirmation or user input.",
        "I have tools to execute, but I need confirmation or external execution.",
        "I have tools to execute, but I need user input or external execution.",
        "I have tools to execute, but I need confirmation.",
        "I have tools to execute, but I need user input.",
        "I have tools to execute, but it needs external execution.",
    }
)
#: How a paused team run's content starts.
_TEAM_PAUSED: Final = "Team run paused."


def paused_for(span: SpanRecord) -> str | None:
    """What an agno run span that paused says it waits for, None for any other span.

    ``"agno: I have tools to execute, but I need confirmation"``; a team's, ``"agno: Team
    run paused (billing: refund requires confirmation)"``.
    """
    attrs = span.attributes
    if span.scope != SCOPE or attrs.get("openinference.span.kind") != "AGENT":
        return None
    output = attrs.get("output.value")
    if not isinstance(output, str):
        return None
    if output in _AGENT_PAUSED:
        return f"agno: {output.rstrip('.')}"
    if output.startswith(_TEAM_PAUSED):
        waits = [line[2:] for line in output.splitlines()[1:] if line.startswith("- ")]
        return "agno: Team run paused" + (f" ({'; '.join(waits)})" if waits else "")
    return None
