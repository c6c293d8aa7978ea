"""How a Strands Agents run ended, from its ``invoke_agent`` span.

Strands (``strands-agents`` 1.x) ends its agent span with the run's result: the text of
``AgentResult`` and its ``stop_reason``, written as the span's output message and its
finish reason. Where depends on the content mode (checked with Strands 1.62):

* GenAI ≤ 1.36 events (the default): a ``gen_ai.choice`` event, ``message`` and
  ``finish_reason``;
* ``gen_ai_latest_experimental``: ``gen_ai.output.messages`` in a
  ``gen_ai.client.inference.operation.details`` event (or, with
  ``gen_ai_span_attributes_only``, a span attribute), one assistant message with one
  text part and ``finish_reason``;
* under OpenInference's span processor for Strands:
  ``llm.output_messages.0.message.content`` / ``.finish_reason`` (dropped with the
  message when the text is empty, in the default mode).

The stop reasons read here are the ones that say the run ended without the model's last
word:

* ``interrupt``: a hook or a tool called ``interrupt()`` for a human's input; the text is
  the list of interrupts (a Python repr: ``[{'id': ..., 'name': 'approve', ...}]``). The
  caller resumes the agent with the responses, in a new run whose model calls see the
  whole turn: that run is the turn, this one paused (``checkpoint``, a durable agent's
  pause between cycles, likewise);
* ``limit_turns``, ``limit_total_tokens``, ``limit_output_tokens`` (the run's
  ``limits``) and ``cancelled`` (``agent.cancel()`` or a ``cancel_signal``): Strands
  stopped the run and returns normally, the span OK, the text empty. The run failed to
  answer; the stop reason says why.

Otherwise the text is the run's answer as the caller got it: with
``structured_output_model``, the model answers by calling the output model's tool, no
reply has text, and the text is the structured output's JSON.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from tracescore.conventions.base import ConventionReader, Found, SpanView
from tracescore.conventions.genai_events import event_payloads
from tracescore.conventions.messages import decoded_json, is_not_captured

__all__ = ["SCOPE", "Stop", "Strands", "stop"]

SCOPE: Final = "strands.telemetry.tracer"
_CHOICE: Final = "gen_ai.choice"
_DETAILS: Final = "gen_ai.client.inference.operation.details"
_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
_RESULT_EVENTS: Final = frozenset({_CHOICE, _DETAILS})
_OI_TEXT: Final = "llm.output_messages.0.message.content"
_OI_REASON: Final = "llm.output_messages.0.message.finish_reason"

#: Stop reasons of a run that paused for input; the run that resumes it is the turn.
PAUSES: Final = frozenset({"interrupt", "checkpoint"})
#: Stop reasons of a run Strands stopped before the model answered, and what they mean.
STOPS: Final = {
    "limit_turns": "it reached its turn limit (limits['turns'])",
    "limit_total_tokens": "it reached its token limit (limits['total_tokens'])",
    "limit_output_tokens": "it reached its output token limit (limits['output_tokens'])",
    "cancelled": "it was cancelled (agent.cancel() or its cancel_signal)",
}
#: An interrupt's name in the repr of the interrupts' list.
_INTERRUPT_NAME: Final = re.compile(r"""'name': (?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")""")


@dataclass(frozen=True, slots=True)
class Stop:
    """How a run ended: its result's text (None when absent) and stop reason, and where."""

    text: str | None
    reason: str | None
    source: str


def _is_run(view: SpanView) -> bool:
    span = view.span
    return span.scope == SCOPE and span.name.startswith("invoke_agent")


def stop(view: SpanView) -> Stop | None:
    """How the Strands run of ``view`` (an ``invoke_agent`` span) ended, read once per view.

    None for any other span, or one that says nothing of it.
    """
    if not _is_run(view):
        return None
    return view.cached("strands.stop", lambda: _read_stop(view))


def _read_stop(view: SpanView) -> Stop | None:
    attrs = view.span.attributes
    if _OI_TEXT in attrs or _OI_REASON in attrs:
        return _stop(attrs.get(_OI_TEXT), attrs.get(_OI_REASON), _OI_TEXT)
    if _OUTPUT_MESSAGES in attrs:
        return _from_messages(attrs[_OUTPUT_MESSAGES], _OUTPUT_MESSAGES)
    for _, name, payload in event_payloads(view, _RESULT_EVENTS):
        if name == _CHOICE and ("message" in payload or "finish_reason" in payload):
            return _stop(payload.get("message"), payload.get("finish_reason"), f"event:{_CHOICE}")
        if name == _DETAILS and _OUTPUT_MESSAGES in payload:
            return _from_messages(payload[_OUTPUT_MESSAGES], f"event:{_DETAILS}")
    return None


def _stop(text: object, reason: object, source: str) -> Stop:
    return Stop(
        text if isinstance(text, str) and not is_not_captured(text) else None,
        reason if isinstance(reason, str) and reason else None,
        source,
    )


def _from_messages(value: object, source: str) -> Stop | None:
    """The one assistant message Strands writes: its text parts, its finish reason."""
    messages = decoded_json(value)
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return None
    message = messages[-1]
    parts = message.get("parts")
    texts = [
        p["content"]
        for p in (parts if isinstance(parts, list) else [])
        if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("content"), str)
    ]
    return _stop("".join(texts) if texts else None, message.get("finish_reason"), source)


class Strands(ConventionReader):
    """What a Strands run's agent span says of its end: its answer, a pause, a stop."""

    name = "strands"

    def final_output(self, view: SpanView) -> Found[str] | None:
        """The run's result text, when it is an answer (a structured output's JSON)."""
        ended = stop(view)
        if ended is None or ended.reason in PAUSES or ended.reason in STOPS:
            return None
        if ended.text is None or not ended.text.strip():
            return None
        return Found(ended.text, ended.source)

    def paused_for(self, view: SpanView) -> str | None:
        """``"Strands interrupt approve_refund"``: the interrupts a stopped run waits on."""
        ended = stop(view)
        if ended is None or ended.reason not in PAUSES:
            return None
        if ended.reason != "interrupt":
            return f"Strands {ended.reason}"
        names = [a or b for a, b in _INTERRUPT_NAME.findall(ended.text or "")]
        return f"Strands interrupt {', '.join(names)}" if names else "Strands interrupt"

    def stopped_by(self, view: SpanView) -> str | None:
        """The run's error when Strands stopped it: a limit it reached, a cancellation."""
        ended = stop(view)
        if ended is None or ended.reason not in STOPS:
            return None
        return f"Strands stopped the run: {STOPS[ended.reason]}; stop reason {ended.reason}"
