"""Real pydantic-ai runs of many shapes, and what pydantic-ai itself recorded of each.

Each scenario runs real pydantic-ai agents (a scripted ``FunctionModel``, streamed or
not) under pydantic-ai's own instrumentation. :func:`recorded_runs` writes each
scenario's spans through the real OTLP encoder (``<scenario>.jsonl``, as the Collector's
``file`` exporter writes a batch) and ``expected.json``: each run as pydantic-ai kept it
in its messages (``new_messages()``, or ``capture_run_messages()`` for a run that
raised), in ``conv_helpers.run_view``'s shape plus its error. pydantic-ai patches nothing
process-wide but ``Agent.instrument_all``, which is reset after, so the runs happen in
the calling process.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, Literal, cast

from openinference.instrumentation.pydantic_ai import OpenInferenceSpanProcessor
from opentelemetry.sdk.trace import SpanProcessor
from pydantic import BaseModel
from pydantic_ai import (
    Agent,
    DeferredToolRequests,
    DeferredToolResults,
    ModelRetry,
    RunContext,
    capture_run_messages,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from recording import Recorder, record_scenarios

#: A tool call the scripted model makes: (name, arguments, call id).
Call = tuple[str, dict[str, Any], str]
#: One model turn: text and tool-call parts, or an exception to raise instead.
Turn = Sequence[str | Call] | Exception


def scripted(*turns: Turn) -> FunctionModel:
    """A model answering turn N of the current run with ``turns[N]``, streamed or not.

    Turns are counted from the run's last user prompt, so a run continuing a history
    starts at ``turns[0]`` again.
    """

    def turn(messages: list[ModelMessage]) -> Sequence[str | Call]:
        last_prompt = max(
            i
            for i, m in enumerate(messages)
            if isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts)
        )
        step = turns[sum(isinstance(m, ModelResponse) for m in messages[last_prompt:])]
        if isinstance(step, Exception):
            raise step
        return step

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del info
        return ModelResponse(
            parts=[
                TextPart(p) if isinstance(p, str) else ToolCallPart(p[0], p[1], tool_call_id=p[2])
                for p in turn(messages)
            ]
        )

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        del info
        for index, part in enumerate(turn(messages)):
            if isinstance(part, str):
                yield part
            else:
                name, args, call_id = part
                yield {index: DeltaToolCall(name, json.dumps(args), tool_call_id=call_id)}

    return FunctionModel(respond, stream_function=stream)


def weather_agent(model: FunctionModel, **kwargs: Any) -> Agent[None, Any]:
    agent: Agent[None, Any] = Agent(
        model, name="weather_agent", instructions="Answer about weather.", **kwargs
    )

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        if city == "Atlantis":
            raise ModelRetry("no such city")
        if city == "Boom":
            raise RuntimeError("weather backend down")
        return f"21C in {city}"

    return agent


def record(
    messages: Sequence[ModelMessage],
    agent: str,
    *,
    output: str | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    """One run as pydantic-ai recorded it, in ``run_view``'s shape (plus its error)."""
    user = None
    calls: list[dict[str, Any]] = []
    texts: list[str] = []
    results: dict[str, tuple[Any, bool]] = {}
    for message in messages:
        if isinstance(message, ModelResponse):
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            texts.append(text)
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    calls.append(
                        {
                            "name": part.tool_name,
                            "args": part.args_as_dict(),
                            "id": part.tool_call_id,
                        }
                    )
            continue
        for request_part in message.parts:
            if isinstance(request_part, UserPromptPart):
                user = cast("str", request_part.content)
            elif isinstance(request_part, ToolReturnPart):
                # pydantic-ai 2 records a ModelRetry as a return with outcome "retried".
                outcome = getattr(request_part, "outcome", "success")
                results[request_part.tool_call_id] = (request_part.content, outcome != "success")
            elif isinstance(request_part, RetryPromptPart) and request_part.tool_name:
                results[request_part.tool_call_id] = (request_part.content, True)
    for call in calls:
        # A call the run ended in (the tool raised) has no result and failed.
        call["result"], call["failed"] = results.get(call["id"], (None, error is not None))
    # The run answered when it ended on a response without calls (a run that raised may
    # end on the request that fed back what ran before the raise).
    last = messages[-1] if messages else None
    answered = isinstance(last, ModelResponse) and not any(
        isinstance(p, ToolCallPart) for p in last.parts
    )
    final = output if output is not None else (texts[-1] if answered else None)
    intermediate = [t for t in (texts[:-1] if answered else texts) if t]
    return {
        "agents": [agent],
        "user": user,
        "calls": calls,
        "intermediate": intermediate,
        "final": final,
        "error": error,
    }


def failed_run(agent: Agent[None, Any], prompt: str) -> dict[str, Any]:
    """Run ``agent`` to the exception it raises; its record from the captured messages."""
    with capture_run_messages() as messages:
        try:
            agent.run_sync(prompt)
        except RuntimeError as exc:
            return record(messages, cast("str", agent.name), error=f"RuntimeError: {exc}")
    raise AssertionError("the run was expected to raise")


def answered(agent: Agent[None, Any], prompt: str, **kwargs: Any) -> dict[str, Any]:
    result = agent.run_sync(prompt, **kwargs)
    return record(result.new_messages(), cast("str", agent.name))


def sequential_tools() -> list[dict[str, Any]]:
    model = scripted(
        [("get_weather", {"city": "Paris"}, "c1")],
        [("get_weather", {"city": "Rome"}, "c2")],
        ["Paris and Rome: 21C."],
    )
    return [answered(weather_agent(model), "Paris, then Rome?")]


def parallel_tools() -> list[dict[str, Any]]:
    model = scripted(
        [("get_weather", {"city": "Paris"}, "c1"), ("get_weather", {"city": "Rome"}, "c2")],
        ["Both 21C."],
    )
    return [answered(weather_agent(model), "Paris and Rome?")]


def text_and_call() -> list[dict[str, Any]]:
    model = scripted(["Let me check.", ("get_weather", {"city": "Oslo"}, "c1")], ["Oslo: 21C."])
    return [answered(weather_agent(model), "Oslo?")]


def tool_retry() -> list[dict[str, Any]]:
    model = scripted(
        [("get_weather", {"city": "Atlantis"}, "c1")],
        [("get_weather", {"city": "Paris"}, "c2")],
        ["Atlantis is unknown; Paris: 21C."],
    )
    return [answered(weather_agent(model), "Weather in Atlantis?")]


def unknown_tool() -> list[dict[str, Any]]:
    """The model calls a tool that does not exist: pydantic-ai runs nothing (no tool span)
    and asks for a retry ("Unknown tool name: 'get_wether'. …"), a failed call."""
    model = scripted(
        [("get_wether", {"city": "Paris"}, "u1")],
        [("get_weather", {"city": "Paris"}, "u2")],
        ["Paris: 21C."],
    )
    return [answered(weather_agent(model), "Weather in Paris?")]


def bad_arguments() -> list[dict[str, Any]]:
    """Arguments the tool's schema refuses: pydantic-ai runs nothing and asks for a
    retry with the validation errors, a failed call."""
    model = scripted(
        [("get_weather", {"town": "Paris"}, "b1")],
        [("get_weather", {"city": "Paris"}, "b2")],
        ["Paris: 21C."],
    )
    return [answered(weather_agent(model), "How warm is Paris?")]


def tool_raises() -> list[dict[str, Any]]:
    model = scripted([("get_weather", {"city": "Boom"}, "c1")], ["never said"])
    return [failed_run(weather_agent(model), "Weather in Boom?")]


def model_error() -> list[dict[str, Any]]:
    model = scripted(RuntimeError("model endpoint down"))
    return [failed_run(weather_agent(model), "Anyone there?")]


def no_tools() -> list[dict[str, Any]]:
    return [answered(weather_agent(scripted(["Hello!"])), "Hello, anyone there?")]


class Forecast(BaseModel):
    city: str
    temp: int


def output_retry() -> list[dict[str, Any]]:
    """An output validator refuses the first answer (``ModelRetry``): pydantic-ai asks
    the model again, and the second answer is the run's output."""
    answers = iter(["Somewhere warm.", "Paris: 21C."])  # the retry reads as a user prompt

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del messages, info
        return ModelResponse(parts=[TextPart(next(answers))])

    agent = weather_agent(FunctionModel(respond))

    @agent.output_validator
    def name_a_city(output: str) -> str:
        if "Paris" not in output:
            raise ModelRetry("name the city")
        return output

    return [answered(agent, "Weather in Paris, by name?")]


def structured_retry() -> list[dict[str, Any]]:
    """The output tool's arguments fail validation: a retry, then valid ones."""
    model = scripted(
        [("final_result", {"city": "Paris", "temp": "warm"}, "o1")],
        [("final_result", {"city": "Paris", "temp": 21}, "o2")],
    )
    result = weather_agent(model, output_type=Forecast).run_sync("Paris as data, please?")
    return [record(result.new_messages(), "weather_agent", output=result.output.model_dump_json())]


def structured_validator_retry() -> list[dict[str, Any]]:
    """An output validator refuses valid structured output (``ModelRetry``): a retry of
    the output tool's call, then an output it accepts."""
    model = scripted(
        [("final_result", {"city": "Paris", "temp": 99}, "v1")],
        [("final_result", {"city": "Paris", "temp": 21}, "v2")],
    )
    agent = weather_agent(model, output_type=Forecast)

    @agent.output_validator
    def plausible(output: Forecast) -> Forecast:
        if output.temp > 60:
            raise ModelRetry("temp too high")
        return output

    result = agent.run_sync("Paris as plausible data?")
    return [record(result.new_messages(), "weather_agent", output=result.output.model_dump_json())]


def structured_output() -> list[dict[str, Any]]:
    model = scripted(
        [("get_weather", {"city": "Paris"}, "c1")],
        [("final_result", {"city": "Paris", "temp": 21}, "c2")],
    )
    result = weather_agent(model, output_type=Forecast).run_sync("Paris, as data?")
    return [record(result.new_messages(), "weather_agent", output=result.output.model_dump_json())]


def two_turns() -> list[dict[str, Any]]:
    first = weather_agent(scripted(["Hello!"])).run_sync("Hi", conversation_id="pai-conv-1")
    second = weather_agent(scripted(["Goodbye!"])).run_sync(
        "Bye", message_history=first.all_messages(), conversation_id="pai-conv-1"
    )
    return [
        record(first.new_messages(), "weather_agent"),
        record(second.new_messages(), "weather_agent"),
    ]


def delegation() -> list[dict[str, Any]]:
    researcher: Agent[None, str] = Agent(scripted(["It is 42."]), name="researcher")
    boss: Agent[None, str] = Agent(
        scripted([("ask_researcher", {"question": "Meaning?"}, "c1")], ["The answer is 42."]),
        name="boss",
    )
    nested: list[dict[str, Any]] = []

    @boss.tool
    async def ask_researcher(ctx: RunContext[None], question: str) -> str:
        """Ask the researcher agent."""
        result = await researcher.run(question, usage=ctx.usage)
        nested.append(record(result.new_messages(), "researcher"))
        return result.output

    return [answered(boss, "What is the meaning of life?"), *nested]


def streamed() -> list[dict[str, Any]]:
    agent = weather_agent(scripted([("get_weather", {"city": "Lima"}, "c1")], ["Lima: 21C."]))

    async def run() -> list[ModelMessage]:
        async with agent.run_stream("Lima?") as result:
            await result.get_output()
            return result.new_messages()

    return [record(asyncio.run(run()), "weather_agent")]


def native_tool() -> list[dict[str, Any]]:
    """A native tool (``WebSearchTool``): the provider searches inside the model call, and
    the reply carries the search's call and result beside its text. pydantic-ai runs no
    tool; its messages hold them as native parts, not as calls of the agent."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del messages, info
        search = NativeToolCallPart("web_search", {"query": "lima weather"}, tool_call_id="ws_1")
        found = {"status": "completed", "sources": [{"url": "https://weather.example/lima"}]}
        return ModelResponse(
            parts=[
                search,
                NativeToolReturnPart("web_search", found, tool_call_id="ws_1"),
                TextPart("Lima is sunny."),
            ]
        )

    agent: Agent[None, str] = Agent(FunctionModel(respond), name="searcher")
    return [answered(agent, "Weather in Lima?")]


def thinking() -> list[dict[str, Any]]:
    """A thinking model: each reply starts with its thinking, then a call or the answer."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del info
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ThinkingPart("The user wants Lima; look it up."),
                    ToolCallPart("get_weather", {"city": "Lima"}, tool_call_id="c1"),
                ]
            )
        return ModelResponse(parts=[ThinkingPart("Sunny, say so."), TextPart("Lima: 21C.")])

    return [answered(weather_agent(FunctionModel(respond)), "How is Lima today?")]


def non_ascii() -> list[dict[str, Any]]:
    model = scripted([("get_weather", {"city": "東京"}, "c1")], ["東京は21度です。Ça va ?"])
    return [answered(weather_agent(model), "東京の天気は？ — «météo»")]


SCENARIOS: dict[str, Callable[[], list[dict[str, Any]]]] = {
    f.__name__: f
    for f in (
        sequential_tools,
        parallel_tools,
        text_and_call,
        tool_retry,
        unknown_tool,
        bad_arguments,
        tool_raises,
        model_error,
        no_tools,
        structured_output,
        output_retry,
        structured_retry,
        structured_validator_retry,
        two_turns,
        delegation,
        streamed,
        non_ascii,
        native_tool,
        thinking,
    )
}


def approval() -> list[dict[str, Any]]:
    """A tool that needs a human's approval: the run ends with ``DeferredToolRequests``,
    and a second run, given the approval, goes on. One turn in two runs; pydantic-ai's
    record of the turn is the second run's ``all_messages()``."""
    model = scripted([("refund", {"order_id": 4}, "h1")], ["Order 4 is refunded."])
    agent = weather_agent(model, output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def refund(order_id: int) -> str:
        """Refund an order."""
        return f"order {order_id} refunded"

    paused = agent.run_sync("Refund order 4?", conversation_id="pai-approval")
    assert isinstance(paused.output, DeferredToolRequests)
    approved = DeferredToolResults(
        approvals={c.tool_call_id: True for c in paused.output.approvals}
    )
    resumed = agent.run_sync(
        message_history=paused.all_messages(),
        deferred_tool_results=approved,
        conversation_id="pai-approval",
    )
    return [record(resumed.all_messages(), "weather_agent")]


#: Runs that pause for a human: recorded with the scenarios, compared on their own.
PAUSING: dict[str, Callable[[], list[dict[str, Any]]]] = {"approval": approval}

#: Instrumentation versions pydantic-ai still emits (5 is its default).
VERSIONS = (2, 3, 5, 6)


def recorded_runs(
    out: Path,
    version: int,
    *,
    include_content: bool,
    openinference: bool = False,
    pausing: bool = False,
) -> dict[str, Any]:
    """Run every scenario; write ``<scenario>.jsonl`` each; what pydantic-ai recorded.

    ``openinference`` adds OpenInference's span processor for pydantic-ai (Arize
    Phoenix's way): it adds ``openinference.span.kind``, ``llm.*``, ``input.value`` … to
    the same spans before they are exported. ``pausing`` adds the :data:`PAUSING` runs
    (one turn in two runs, the first not evaluable).
    """
    processors: list[SpanProcessor] = [OpenInferenceSpanProcessor()] if openinference else []
    recorder = Recorder(*processors)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # versions 2-4 are deprecated
        settings = InstrumentationSettings(
            tracer_provider=recorder.provider,
            include_content=include_content,
            version=cast("Literal[2, 3, 4, 5, 6]", version),
        )
    Agent.instrument_all(settings)
    try:
        record_scenarios(recorder, {**SCENARIOS, **(PAUSING if pausing else {})}, out)
    finally:
        Agent.instrument_all(False)
    expected: dict[str, Any] = json.loads((out / "expected.json").read_text())
    return expected
