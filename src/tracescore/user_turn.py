"""The user's side of an agent run: what they asked, and whether the run resumed a turn.

The user's text is the last user text in the first model call's input, unless a span
states the task the run was given (see :func:`user_text`). A run can also go on with a
turn an earlier run began: a run resumed after it paused for a human (LangGraph's
``Command(resume=...)``, agno's ``continue_run``, Strands' interrupt responses, Agent
Framework's approval) is a trace of its own whose first model call already holds the
reply that called the tool, and its result.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracescore.conventions.base import ConventionReader, Found, SpanView
from tracescore.conventions.messages import Message
from tracescore.conventions.registry import all_found, classify, first_found
from tracescore.history import last_user_text, run_start
from tracescore.run_records import AgentRun, LlmStep

__all__ = ["user_text"]


def user_text(
    run: AgentRun, llm_steps: list[LlmStep], provenance: dict[str, str]
) -> tuple[str | None, bool]:
    """The last user text in the first model call's input, and whether the run resumed.

    A first model call whose input holds, after that text, a reply that called tools
    continues a turn begun before it: the run resumed one that paused for a human (it
    holds the call that paused and its result), or the spans of the turn's earlier
    model calls were lost or written onto one (OpenInference over ADK schema 2); either
    way those replies are read from that input. So does one whose input holds no user
    text but tool results: it names the earlier run's response instead.

    Later calls of agents other than the first see other agents' turns rewritten as
    user text (ADK's "For context:"), so only the first agent's calls are asked. Later
    inputs and other sources are tried only when the first answer holds no user text
    (e.g. a request truncated by the backend before its ``contents``).

    A run whose agent span states the task it was given (smolagents: the model sees it
    after "New task:") takes it from there, and so does a multi-agent run whose root
    span records it (Strands' swarm and graph): its first agent may see it rewritten
    (Strands' swarm wraps it in a "Context:" block). A run without agent spans takes
    the question a span that asked its first model call states (a LlamaIndex query
    engine's: the model sees it in a prompt template, after the retrieved context).
    """
    stated = _stated_task(run, llm_steps)
    if stated is not None:
        provenance["user_content"] = stated.source
        return stated.value, False
    if run.agent_views and classify(run.root) == "workflow":
        for found in all_found(run.agent_views[:1], ConventionReader.llm_input):
            text = last_user_text(found.value)
            if text is not None:
                provenance["user_content"] = found.source
                return text, False
    if not llm_steps:
        return None, False
    first_agent = llm_steps[0].agent
    for index, step in enumerate(llm_steps):
        if step.agent != first_agent:
            continue
        for found in all_found(step.views, ConventionReader.llm_input):
            text = last_user_text(found.value)
            if text is not None:
                provenance["user_content"] = found.source
                return text, index == 0 and _continues_a_turn(found.value)
    # No user text anywhere: a first call that starts with tool results resumed a turn
    # whose user message went to the model in an earlier run (its request names that
    # run's response, the OpenAI Responses API's way).
    return None, _starts_with_results(llm_steps[0])


def _starts_with_results(step: LlmStep) -> bool:
    """Whether the model call's input holds tool results and no user text at all."""
    found = first_found(step.views, ConventionReader.llm_input)
    return found is not None and any(m.tool_results() for m in found.value)


def _continues_a_turn(messages: Sequence[Message]) -> bool:
    """Whether a reply that called tools follows the last user text of ``messages``."""
    return any(m.is_assistant and m.tool_calls() for m in messages[run_start(messages) :])


def _stated_task(run: AgentRun, llm_steps: list[LlmStep]) -> Found[str] | None:
    """The task the run's first agent span states, if it has agent spans.

    Without one: the question the outermost span before the first model call states
    (in tree order, that is the call's ancestors and the steps before it).
    """
    if run.agent_views:
        return first_found(run.agent_views[:1], ConventionReader.task)
    if not llm_steps:
        return None
    first_call = llm_steps[0].view.span
    for span in run.spans:
        if span is first_call:
            break
        stated = first_found((SpanView(span),), ConventionReader.task)
        if stated is not None:
            return stated
    return None
