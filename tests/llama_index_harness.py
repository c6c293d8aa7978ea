"""Real LlamaIndex agent runs against the fake Ollama server, as OTLP JSON Lines.

LlamaIndex (``llama-index-core``) agents are workflows: ``FunctionAgent`` (native tool
calling), ``ReActAgent`` (tool use written as text) and ``AgentWorkflow`` (agents that
hand off to each other through a ``handoff`` tool). Neither LlamaIndex nor its Ollama
integration traces anything; two instrumentations read LlamaIndex's own instrumentation
events and write spans:

* ``openinference``: ``openinference-instrumentation-llama-index``, a span per
  instrumented method (the workflow's steps, each model call, each tool call);
* ``openllmetry``: ``opentelemetry-instrumentation-llamaindex`` (OpenLLMetry), the same
  methods as ``traceloop`` task spans, the model calls with GenAI attributes.

The model is LlamaIndex's ``Ollama`` LLM on the real ``ollama`` client against
:class:`fake_ollama.FakeOllama` (Ollama's tool calls carry no ids: LlamaIndex uses the
tool's name as the call id). The instrumentations patch LlamaIndex process-wide, so the
runs happen in a child process: ``python llama_index_harness.py MODE OUT_DIR`` writes one
OTLP JSON Lines file per scenario and ``expected.json``: each run as LlamaIndex reported
it in its event stream (the agents in the order they answered, every ``ToolCallResult``:
the tool, its arguments, what it returned and whether it failed; the texts the model wrote
beside its tool calls; the answer), which the rebuilt invocations must equal.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.agent.workflow import (
    AgentOutput,
    AgentWorkflow,
    FunctionAgent,
    ReActAgent,
    ToolCallResult,
)
from llama_index.core.chat_engine.types import ChatMode
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.workflow import Context
from llama_index.llms.ollama import Ollama

from fake_ollama import FakeOllama, Reply
from recording import Recorder, record_scenarios, weather

MODES = ("openinference", "openllmetry")
SESSION = "li-session-1"


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return weather(city)


def get_time(city: str) -> str:
    """Local time in a city."""
    return f"12:00 in {city}"


def _no_session(_: str) -> AbstractContextManager[object]:
    return nullcontext()


#: What wraps each scenario's runs, by name: OpenInference's ``using_session`` in that
#: mode (OpenLLMetry's instrumentation has no session switch of its own).
SESSION_SCOPE: dict[str, Callable[[str], AbstractContextManager[object]]] = {"scope": _no_session}


def _llm(fake: FakeOllama) -> Ollama:
    # context_window given: else the client first asks the server about the model.
    return Ollama(model="llama3.1", base_url=fake.base_url, request_timeout=10, context_window=8192)


async def _record(agent: Any, user: str, ctx: Context | None = None) -> dict[str, Any]:
    """Run ``agent`` on ``user``; the run as its event stream and result report it."""
    handler = agent.run(user_msg=user, ctx=ctx)
    agents: list[str] = []
    calls: list[dict[str, Any]] = []
    call_agents: list[str] = []  # the agent whose reply asked for each call
    intermediate: list[list[str]] = []  # [agent, text]
    final: str | None = None
    try:
        async for event in handler.stream_events():
            if isinstance(event, AgentOutput):
                if not agents or agents[-1] != event.current_agent_name:
                    agents.append(event.current_agent_name)
                text = event.response.content or ""
                if event.tool_calls and text.strip():
                    intermediate.append([event.current_agent_name, text])
            elif isinstance(event, ToolCallResult):
                call_agents.append(agents[-1])
                calls.append(
                    {
                        "name": event.tool_name,
                        "args": event.tool_kwargs,
                        "id": event.tool_id,
                        # A failed call's is the exception's message, as the model saw it.
                        "result": event.tool_output.raw_output,
                        "failed": event.tool_output.is_error,
                    }
                )
        final = (await handler).response.content
        run_failed = False
    except Exception:  # the run failed: what it did until then
        run_failed = True
    return {
        "agents": agents,
        "user": user,
        "calls": calls,
        "intermediate": intermediate,
        "final": final,
        "call_agents": call_agents,
        "run_failed": run_failed,
    }


def _run(
    script: Sequence[Reply], build: Callable[[Ollama], Any], *users: str
) -> list[dict[str, Any]]:
    """Run the agent ``build`` makes on each of ``users`` in turn, in one session."""

    async def turns(agent: Any) -> list[dict[str, Any]]:
        ctx = Context(agent)
        return [await _record(agent, user, ctx) for user in users]

    with FakeOllama(script) as fake, SESSION_SCOPE["scope"](SESSION):
        return asyncio.run(turns(build(_llm(fake))))


def _weather_agent(llm: Ollama, **options: Any) -> FunctionAgent:
    return FunctionAgent(
        name="weather_agent",
        description="Tells the weather.",
        tools=[get_weather, get_time],
        llm=llm,
        system_prompt="You tell the weather.",
        **options,
    )


def parallel_calls() -> list[dict[str, Any]]:
    """Two calls in one reply, one of which raises; the same tool, so the same call id."""
    script: list[Reply] = [
        (None, [("get_weather", {"city": "Zürich"}), ("get_weather", {"city": "Atlantis"})]),
        ("Zürich is sunny; Atlantis has no station.", ()),
    ]
    return _run(script, _weather_agent, "Wetter in Zürich und Atlantis?")


def unknown_tool() -> list[dict[str, Any]]:
    """The model calls a tool the agent does not have: LlamaIndex runs nothing and answers
    "Tool get_wether not found. …", a ``ToolOutput`` with ``is_error`` and no
    ``raw_output``; the next reply calls the right tool."""
    script: list[Reply] = [
        (None, [("get_wether", {"city": "Paris"})]),
        (None, [("get_weather", {"city": "Paris"})]),
        ("Paris is sunny.", ()),
    ]
    return _run(script, _weather_agent, "Weather in Paris?")


def sequential_tools() -> list[dict[str, Any]]:
    """Text beside a call, then a second call to another tool, then the answer."""
    script: list[Reply] = [
        ("Let me check Paris.", [("get_weather", {"city": "Paris"})]),
        (None, [("get_time", {"city": "Paris"})]),
        ("Sunny and noon in Paris.", ()),
    ]
    return _run(script, _weather_agent, "Weather and time in Paris?")


def not_streamed() -> list[dict[str, Any]]:
    """``streaming=False``: each model call is one ``achat`` request."""
    script: list[Reply] = [
        (None, [("get_weather", {"city": "Oslo"})]),
        ("Oslo is sunny.", ()),
    ]
    return _run(script, lambda llm: _weather_agent(llm, streaming=False), "Weather in Oslo?")


def thinking() -> list[dict[str, Any]]:
    """A thinking model (Ollama's ``message.thinking``, a ``ThinkingBlock`` to LlamaIndex)
    before a call and before the answer: the answer is the reply's text."""
    script: list[Reply] = [
        (None, [("get_weather", {"city": "Lima"})], "They want Lima."),
        ("Lima is sunny.", (), "Sunny; say so."),
    ]
    return _run(script, _weather_agent, "Lima: sunny or not today?")


def direct_answer() -> list[dict[str, Any]]:
    return _run([("Bonjour ! Ça va ? 👋", ())], _weather_agent, "Dis bonjour.")


def two_turn_session() -> list[dict[str, Any]]:
    """Two runs sharing one ``Context`` (the chat memory), in one session."""
    script: list[Reply] = [
        (None, [("get_weather", {"city": "Rome"})]),
        ("Rome is sunny.", ()),
        ("You're welcome!", ()),
    ]
    return _run(script, _weather_agent, "Weather in Rome?", "Thanks!")


def react_agent() -> list[dict[str, Any]]:
    """A ``ReActAgent``: the model writes its tool call as text, and its answer."""
    script: list[Reply] = [
        ('Thought: I need the weather.\nAction: get_weather\nAction Input: {"city": "Lima"}', ()),
        ("Thought: I can answer without more tools.\nAnswer: Lima is sunny.", ()),
    ]

    def build(llm: Ollama) -> ReActAgent:
        return ReActAgent(name="react_agent", tools=[get_weather], llm=llm)

    return _run(script, build, "Weather in Lima?")


def model_fails() -> list[dict[str, Any]]:
    """The model server fails on the call after a tool call: the run raises."""
    script: list[Reply] = [(None, [("get_weather", {"city": "Oslo"})])]  # then HTTP 500
    return _run(script, _weather_agent, "Weather in Oslo?")


def _index() -> VectorStoreIndex:
    documents = [Document(text="Lima weather: sunny, 21 C."), Document(text="Oslo: rain.")]
    return VectorStoreIndex.from_documents(documents, embed_model=MockEmbedding(embed_dim=8))


def _sources(response: Any) -> dict[str, list[str]]:
    """The texts of the nodes an engine's response was given, in the order it had them."""
    return {"retrieved": [n.node.get_content() for n in response.source_nodes]}


def query_engine() -> list[dict[str, Any]]:
    """No agent: a query engine over an index (a mock embedding model) answers a question.

    Its top span is no agent run, and ends last, as roots do. The model sees the question
    in LlamaIndex's prompt template, after the retrieved text.
    """
    with FakeOllama([("Lima is sunny today.", ())]) as fake:
        engine = _index().as_query_engine(llm=_llm(fake))
        question = "What is the weather in Lima?"
        response = engine.query(question)
        return [{"user": question, "final": str(response), **_sources(response)}]


def chat_engine() -> list[dict[str, Any]]:
    """No agent: a chat engine over the index, two turns.

    The second turn makes two model calls: the engine first has the model rewrite the
    message as a question that stands alone (in a template holding the chat so far), then
    asks it that question beside the retrieved text.
    """
    script: list[Reply] = [
        ("Lima is sunny today.", ()),
        ("What is the weather in Oslo?", ()),  # the rewritten question
        ("Oslo has rain.", ()),
    ]
    with FakeOllama(script) as fake:
        engine = _index().as_chat_engine(chat_mode=ChatMode.CONDENSE_PLUS_CONTEXT, llm=_llm(fake))
        runs = []
        for message in ("What is the weather in Lima?", "And Oslo?"):
            response = engine.chat(message)
            runs.append({"user": message, "final": str(response), **_sources(response)})
        return runs


def handoff() -> list[dict[str, Any]]:
    """An ``AgentWorkflow``: the triage agent hands off to the weather agent."""
    script: list[Reply] = [
        (None, [("handoff", {"to_agent": "weather_agent", "reason": "weather question"})]),
        (None, [("get_weather", {"city": "Kyiv"})]),
        ("Kyiv is sunny.", ()),
    ]

    def build(llm: Ollama) -> AgentWorkflow:
        triage = FunctionAgent(
            name="triage_agent",
            description="Routes questions.",
            tools=[],
            llm=llm,
            system_prompt="Route the question.",
            can_handoff_to=["weather_agent"],
        )
        weather_agent = FunctionAgent(
            name="weather_agent",
            description="Tells the weather.",
            tools=[get_weather],
            llm=llm,
            system_prompt="You tell the weather.",
        )
        return AgentWorkflow(agents=[triage, weather_agent], root_agent="triage_agent")

    return _run(script, build, "Weather in Kyiv?")


SCENARIOS: dict[str, Callable[[], list[dict[str, Any]]]] = {
    f.__name__: f
    for f in (
        parallel_calls,
        sequential_tools,
        unknown_tool,
        not_streamed,
        thinking,
        direct_answer,
        two_turn_session,
        react_agent,
        handoff,
        model_fails,
        query_engine,
        chat_engine,
    )
}


def _instrument(mode: str, recorder: Recorder) -> None:
    if mode == "openinference":
        from openinference.instrumentation import using_session
        from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

        LlamaIndexInstrumentor().instrument(tracer_provider=recorder.provider)
        SESSION_SCOPE["scope"] = using_session
    elif mode == "openllmetry":
        from opentelemetry.instrumentation.llamaindex import (
            LlamaIndexInstrumentor as OpenLLMetry,
        )

        OpenLLMetry().instrument(tracer_provider=recorder.provider)  # type: ignore[no-untyped-call]  # OpenLLMetry: unannotated __init__
    else:
        raise SystemExit(f"unknown mode {mode!r}: one of {', '.join(MODES)}")


def main(mode: str, out_dir: Path) -> None:
    """Run every scenario; write ``<scenario>.jsonl`` (OTLP JSON) and ``expected.json``."""
    recorder = Recorder()
    _instrument(mode, recorder)
    record_scenarios(recorder, SCENARIOS, out_dir)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
