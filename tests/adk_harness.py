"""Run real google-adk agents against a scripted model and capture telemetry.

This module is a reusable test helper (not a test file). It builds small
agent trees, drives them with :class:`ScriptedLlm` (a ``BaseLlm`` that replays
pre-scripted ``LlmResponse`` objects, never a real model), runs them with
ADK's ``InMemoryRunner`` and captures what ADK emits through OpenTelemetry:

* finished spans, via ``SimpleSpanProcessor(InMemorySpanExporter)``;
* log records (the GenAI "events" of ``EVENT_ONLY`` / ``SPAN_AND_EVENT`` and
  of schema v1), via ``SimpleLogRecordProcessor(InMemoryLogRecordExporter)``;
* ADK's own view of the run, ``EvaluationGenerator.
  convert_events_to_eval_invocations(session.events)``.

Typical use::

    from adk_harness import run_scenario

    run = run_scenario("two_sequential_tools", schema="v2", content="SPAN_ONLY")
    assert run.error is None
    names = [span.name for span in run.spans]

Mode switching. ADK 2.13 reads every telemetry knob from ``os.environ`` at
call time: ``resolve_schema_version()`` reads
``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN`` on each call, and every
``TelemetryConfig()`` (built per span/record when ``RunConfig.telemetry`` is
None, as here) snapshots ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``,
``OTEL_SEMCONV_STABILITY_OPT_IN``, ``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS`` and
the experimental knobs in its constructor. Nothing relevant is cached at import
time (the only ``functools.cache`` on the path,
``telemetry._genai_instrumentor._has_stable_mode``, depends on the installed
``opentelemetry-instrumentation-google-genai`` version, not on the env, and
only matters when that instrumentor is installed). :func:`run_scenario`
therefore sets the env vars of :data:`MANAGED_ENV_VARS` for the duration of one
run and restores them afterwards; runs are serialised by a lock because the
environment is process-global.

OpenTelemetry's global providers can be set only once per process, so
:func:`install_telemetry` installs them lazily on first use (or, if another
SDK provider is already global, adds the in-memory processors to it) and every
run clears the exporters first.

The module can also be executed to dump one JSON sample per scenario and mode::

    python tests/adk_harness.py /work/notes/adk_samples
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import enum
import json
import os
import sys
import threading
import warnings
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, Literal, get_args

from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.llm_agent import LlmAgent
from google.adk.agents.loop_agent import LoopAgent
from google.adk.agents.parallel_agent import ParallelAgent

# Where ADK's docs import it from (re-exported there, not listed in __all__).
from google.adk.agents.run_config import RunConfig, StreamingMode  # type: ignore[attr-defined]
from google.adk.agents.sequential_agent import SequentialAgent
from google.adk.evaluation.eval_case import Invocation, get_all_tool_calls_with_responses
from google.adk.evaluation.evaluation_generator import EvaluationGenerator
from google.adk.events.event import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.exit_loop_tool import exit_loop
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.adk.tools.mcp_tool import McpToolset, StreamableHTTPConnectionParams
from google.adk.tools.tool_context import ToolContext
from google.adk.workflow import START, Workflow
from google.genai import types
from opentelemetry import _logs as otel_logs
from opentelemetry import trace as otel_trace
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from pydantic import BaseModel, ConfigDict, Field

import mcp_server

__all__ = [
    "CONTENT_MODES",
    "MANAGED_ENV_VARS",
    "SCENARIOS",
    "TURN_ENDING_CALLS",
    "SCHEMAS",
    "AdkRun",
    "ContentMode",
    "ResponseQueue",
    "Scenario",
    "SchemaVersion",
    "ScriptExhaustedError",
    "ScriptedLlm",
    "call",
    "dump_samples",
    "env_for_mode",
    "install_telemetry",
    "log_to_dict",
    "model_response",
    "render_span_tree",
    "run_scenario",
    "run_scenario_async",
    "run_to_sample",
    "span_to_dict",
    "text",
]

SchemaVersion = Literal["v1", "v2"]
"""ADK telemetry schema: ``v1`` legacy, ``v2`` semconv-aligned (2.13 default)."""

ContentMode = Literal["default", "SPAN_ONLY", "SPAN_AND_EVENT", "EVENT_ONLY", "NO_CONTENT"]
"""Content-capture mode; see :func:`env_for_mode` for the exact env mapping."""

SCHEMAS: Final[tuple[SchemaVersion, ...]] = get_args(SchemaVersion)
CONTENT_MODES: Final[tuple[ContentMode, ...]] = get_args(ContentMode)

ENV_SCHEMA: Final = "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN"
ENV_CAPTURE: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
ENV_SEMCONV_OPT_IN: Final = "OTEL_SEMCONV_STABILITY_OPT_IN"
ENV_ADK_SPAN_CONTENT: Final = "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS"

MANAGED_ENV_VARS: Final[tuple[str, ...]] = (
    ENV_SCHEMA,
    ENV_CAPTURE,
    ENV_SEMCONV_OPT_IN,
    ENV_ADK_SPAN_CONTENT,
    "ADK_TELEMETRY_IGNORE_RUN_CONFIG",
    "ADK_EXPERIMENTAL_TELEMETRY",
    "ADK_EXPERIMENTAL_TELEMETRY_FEATURES",
)
"""Env vars :func:`run_scenario` pins per run (unset unless the mode sets them)."""

DEFAULT_MODEL: Final = "gemini-2.5-flash"
"""Model name reported by :class:`ScriptedLlm` (it never calls a real model)."""

USER_ID: Final = "test-user"


# ---------------------------------------------------------------------------
# Scripted model
# ---------------------------------------------------------------------------


class ScriptExhaustedError(AssertionError):
    """Raised when a scripted model is called more often than scripted."""


class ResponseQueue:
    """An ordered script of model responses, shareable between models.

    Each model call pops the next response. Agents may share one queue (the
    script is then the global order of model calls across agents) or each own
    one.

    Attributes:
        name: Label used in error messages.
        responses: Responses not yet served, in order.
        requests: Every ``LlmRequest`` received, in call order (references,
            for inspection only; the harness never asserts on them).
    """

    def __init__(self, responses: Sequence[LlmResponse], name: str = "script") -> None:
        """Initialises the queue.

        Args:
            responses: The responses to serve, in order.
            name: Label used in error messages.
        """
        self.name = name
        self.responses: list[LlmResponse] = list(responses)
        self.requests: list[LlmRequest] = []

    def pop(self, llm_request: LlmRequest) -> LlmResponse:
        """Records the request and returns a copy of the next response.

        Args:
            llm_request: The request ADK sent to the model.

        Returns:
            A deep copy of the next scripted response (ADK mutates the content
            it receives, e.g. to assign function-call ids).

        Raises:
            ScriptExhaustedError: If no scripted response is left.
        """
        self.requests.append(llm_request)
        if not self.responses:
            raise ScriptExhaustedError(
                f"{self.name}: model call #{len(self.requests)} has no scripted response"
            )
        return self.responses.pop(0).model_copy(deep=True)

    @property
    def remaining(self) -> int:
        """Number of responses not served yet."""
        return len(self.responses)


class ScriptedLlm(BaseLlm):
    """A ``BaseLlm`` that yields pre-scripted responses in order.

    Non-streaming: every call yields exactly one ``LlmResponse`` taken from
    :attr:`queue`. Nothing about the request is asserted.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str = DEFAULT_MODEL
    queue: ResponseQueue = Field(exclude=True)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Yields the next scripted response.

        Args:
            llm_request: The request ADK built (recorded on the queue).
            stream: Ignored; one complete response is yielded either way.

        Yields:
            The next scripted ``LlmResponse``.
        """
        del stream  # A scripted response is always complete.
        yield self.queue.pop(llm_request)


def text(value: str) -> types.Part:
    """Returns a text part.

    Args:
        value: The text.
    """
    return types.Part(text=value)


def call(name: str, **args: Any) -> types.Part:
    """Returns a ``function_call`` part (ADK assigns the ``adk-…`` id later).

    Args:
        name: Tool name.
        **args: Tool arguments.
    """
    return types.Part(function_call=types.FunctionCall(name=name, args=args))


def model_response(
    *parts: types.Part,
    input_tokens: int = 100,
    output_tokens: int = 20,
    finish_reason: types.FinishReason | None = types.FinishReason.STOP,
) -> LlmResponse:
    """Builds a complete model response, as Gemini would return it.

    Args:
        *parts: Content parts (text and/or function calls), in order.
        input_tokens: ``usage_metadata.prompt_token_count``.
        output_tokens: ``usage_metadata.candidates_token_count``.
        finish_reason: Finish reason. ADK ends the ``generate_content`` span at
            the first response that reports one, so keep ``STOP`` unless a
            test needs otherwise.

    Returns:
        The response.
    """
    return LlmResponse(
        content=types.Content(role="model", parts=list(parts)),
        finish_reason=finish_reason,
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=input_tokens,
            candidates_token_count=output_tokens,
            total_token_count=input_tokens + output_tokens,
        ),
    )


# ---------------------------------------------------------------------------
# Tools (plain Python functions; ADK wraps them in FunctionTool)
# ---------------------------------------------------------------------------

_WEATHER: Final[dict[str, tuple[float, str]]] = {
    "Paris": (21.5, "sunny"),
    "Tokyo": (18.0, "cloudy"),
    "Berlin": (15.5, "rainy"),
    "Rome": (26.0, "sunny"),
    "東京": (18.0, "曇り"),
}


def get_weather(city: str) -> dict[str, Any]:
    """Returns the current weather for a city.

    Args:
        city: City name.

    Returns:
        The temperature in Celsius and a condition.
    """
    temp_c, condition = _WEATHER.get(city, (20.0, "unknown"))
    return {"city": city, "temp_c": temp_c, "condition": condition}


def convert_temperature(celsius: float, precision: int) -> dict[str, Any]:
    """Converts Celsius to Fahrenheit.

    Args:
        celsius: Temperature in Celsius.
        precision: Number of decimals to round to.

    Returns:
        The temperature in Fahrenheit.
    """
    return {"fahrenheit": round(celsius * 9 / 5 + 32, precision)}


def lookup_order(order_id: int) -> dict[str, Any]:
    """Looks up an order; always fails (the order database is down).

    Args:
        order_id: Order number.

    Raises:
        ConnectionError: Always.
    """
    raise ConnectionError(f"order database unreachable while reading order {order_id}")


def tool_error_to_response(
    tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, error: Exception
) -> dict[str, Any]:
    """``on_tool_error_callback`` that turns an exception into a tool result.

    Args:
        tool: The failing tool.
        args: Its arguments.
        tool_context: The tool context.
        error: The exception it raised.

    Returns:
        A function response the model sees instead of the exception.
    """
    del tool, args, tool_context
    return {"error": f"{type(error).__name__}: {error}"}


# ---------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class Scenario:
    """An agent tree, its scripts and the user turns to send.

    Attributes:
        name: Scenario name (a key of :data:`SCENARIOS`).
        root_agent: The agent (or ADK 2 ``Workflow``) the runner starts at.
        user_messages: One user text per turn (= per ADK invocation), or what answers
            the session so far (a confirmation the framework asked for: ADK goes on
            with the same invocation).
        queues: Every response queue used; all must be empty after the run.
        expected_invocations: How many invocations ADK's
            ``convert_events_to_eval_invocations`` must report.
        expect_error: Whether the run is expected to raise (ADK 2.13 aborts the
            run when a tool raises and no ``on_tool_error_callback`` handles it).
        description: What the scenario exercises.
    """

    name: str
    root_agent: BaseAgent | Workflow
    user_messages: list[str | Callable[[Sequence[Event]], types.Content]]
    queues: list[ResponseQueue]
    expected_invocations: int = 1
    expect_error: bool = False
    description: str = ""


def _llm_agent(
    name: str,
    responses: Sequence[LlmResponse],
    *,
    instruction: str,
    tools: Sequence[Any] = (),
    sub_agents: Sequence[BaseAgent] = (),
    description: str = "",
    **kwargs: Any,
) -> tuple[LlmAgent, ResponseQueue]:
    queue = ResponseQueue(responses, name=f"{name} script")
    agent = LlmAgent(
        name=name,
        model=ScriptedLlm(queue=queue),
        instruction=instruction,
        description=description,
        tools=list(tools),
        sub_agents=list(sub_agents),
        **kwargs,
    )
    return agent, queue


def two_sequential_tools() -> Scenario:
    """Two dependent tool calls in consecutive model turns, then an answer."""
    agent, queue = _llm_agent(
        "weather_agent",
        [
            model_response(call("get_weather", city="Paris"), input_tokens=120, output_tokens=12),
            model_response(
                call("convert_temperature", celsius=21.5, precision=1),
                input_tokens=160,
                output_tokens=14,
            ),
            model_response(
                text("It is 70.7°F and sunny in Paris."), input_tokens=200, output_tokens=11
            ),
        ],
        instruction="Answer weather questions. Use the tools.",
        tools=[get_weather, convert_temperature],
        description="Answers weather questions.",
    )
    return Scenario(
        "two_sequential_tools",
        agent,
        ["What is the weather in Paris, in Fahrenheit?"],
        [queue],
        description="get_weather, then convert_temperature, then final text",
    )


def parallel_calls() -> Scenario:
    """Two function calls in one model response (run in parallel by ADK)."""
    agent, queue = _llm_agent(
        "weather_agent",
        [
            model_response(call("get_weather", city="Paris"), call("get_weather", city="Tokyo")),
            model_response(text("Paris: 21.5°C, sunny. Tokyo: 18°C, cloudy.")),
        ],
        instruction="Answer weather questions. Use the tools.",
        tools=[get_weather],
    )
    return Scenario(
        "parallel_calls",
        agent,
        ["Weather in Paris and Tokyo?"],
        [queue],
        description="one response with two function_call parts",
    )


def text_and_call() -> Scenario:
    """A response carrying text and a function call, then a final answer."""
    agent, queue = _llm_agent(
        "weather_agent",
        [
            model_response(
                text("Let me check Berlin for you."), call("get_weather", city="Berlin")
            ),
            model_response(text("Berlin is rainy at 15.5°C.")),
        ],
        instruction="Answer weather questions. Use the tools.",
        tools=[get_weather],
    )
    return Scenario(
        "text_and_call",
        agent,
        ["Is it raining in Berlin?"],
        [queue],
        description="text + function_call in one response (intermediate text)",
    )


def tool_raises() -> Scenario:
    """A tool raises; ADK 2.13 aborts the run (no second model call)."""
    agent, queue = _llm_agent(
        "order_agent",
        [model_response(call("lookup_order", order_id=42))],
        instruction="Help with orders.",
        tools=[lookup_order],
    )
    return Scenario(
        "tool_raises",
        agent,
        ["Where is my order 42?"],
        [queue],
        expect_error=True,
        description="tool raises ConnectionError; run errors out",
    )


def tool_error_handled() -> Scenario:
    """A tool raises but ``on_tool_error_callback`` feeds the error to the model."""
    agent, queue = _llm_agent(
        "order_agent",
        [
            model_response(call("lookup_order", order_id=42)),
            model_response(text("Sorry, the order system is unavailable right now.")),
        ],
        instruction="Help with orders.",
        tools=[lookup_order],
        on_tool_error_callback=tool_error_to_response,
    )
    return Scenario(
        "tool_error_handled",
        agent,
        ["Where is my order 42?"],
        [queue],
        description="tool raises, on_tool_error_callback returns {'error': ...}",
    )


def no_tools() -> Scenario:
    """A single text answer, no tools."""
    agent, queue = _llm_agent(
        "chat_agent",
        [
            model_response(
                text("Hello! How can I help you today?"), input_tokens=30, output_tokens=9
            )
        ],
        instruction="Be friendly.",
    )
    return Scenario("no_tools", agent, ["Hi there"], [queue], description="one text answer")


#: What Gemini's built-in Google Search returns beside a grounded answer (no tool call:
#: the search runs inside the model call).
SEARCH_GROUNDING: Final = types.GroundingMetadata(
    web_search_queries=["weather in Lima today"],
    grounding_chunks=[
        types.GroundingChunk(
            web=types.GroundingChunkWeb(uri="https://weather.example/lima", title="Lima weather")
        )
    ],
    grounding_supports=[
        types.GroundingSupport(
            segment=types.Segment(start_index=0, end_index=25, text="Lima is sunny, 21°C today."),
            grounding_chunk_indices=[0],
            confidence_scores=[0.9],
        )
    ],
)


def search_grounding() -> Scenario:
    """An answer grounded by the model's built-in Google Search (``grounding_metadata``)."""
    response = model_response(text("Lima is sunny, 21°C today."))
    response.grounding_metadata = SEARCH_GROUNDING
    agent, queue = _llm_agent(
        "search_agent", [response], instruction="Answer with up-to-date facts from the web."
    )
    return Scenario(
        "search_grounding",
        agent,
        ["What is the weather in Lima today?"],
        [queue],
        description="a text answer with grounding metadata",
    )


def two_turn_session() -> Scenario:
    """Two user turns in one session (two invocations, two traces)."""
    agent, queue = _llm_agent(
        "weather_agent",
        [
            model_response(call("get_weather", city="Paris")),
            model_response(text("Paris: 21.5°C and sunny.")),
            model_response(call("get_weather", city="Rome")),
            model_response(text("Rome: 26°C and sunny.")),
        ],
        instruction="Answer weather questions. Use the tools.",
        tools=[get_weather],
    )
    return Scenario(
        "two_turn_session",
        agent,
        ["Weather in Paris?", "And in Rome?"],
        [queue],
        expected_invocations=2,
        description="two turns sharing a session",
    )


def transfer_to_sub_agent() -> Scenario:
    """The root agent transfers to a sub-agent that calls a tool and answers."""
    weather, weather_queue = _llm_agent(
        "weather_agent",
        [
            model_response(call("get_weather", city="Tokyo")),
            model_response(text("Tokyo is cloudy at 18°C.")),
        ],
        instruction="Answer weather questions. Use the tools.",
        tools=[get_weather],
        description="Answers weather questions.",
    )
    root, root_queue = _llm_agent(
        "coordinator",
        [
            model_response(
                text("Transferring you to the weather agent."),
                call("transfer_to_agent", agent_name="weather_agent"),
            )
        ],
        instruction="Route the user to the right agent.",
        sub_agents=[weather],
        description="Routes requests.",
    )
    return Scenario(
        "transfer_to_sub_agent",
        root,
        ["What's the weather in Tokyo?"],
        [root_queue, weather_queue],
        description="transfer_to_agent(weather_agent), sub-agent uses a tool",
    )


def _researcher_and_writer() -> tuple[LlmAgent, ResponseQueue, LlmAgent, ResponseQueue]:
    """A researcher (one tool call, then notes) and a writer (a report from the notes)."""
    researcher, researcher_queue = _llm_agent(
        "researcher",
        [
            model_response(call("get_weather", city="Paris")),
            model_response(text("Research notes: Paris 21.5°C, sunny.")),
        ],
        instruction="Collect the facts with the tools.",
        tools=[get_weather],
    )
    writer, writer_queue = _llm_agent(
        "writer",
        [model_response(text("Report: Paris is sunny today at 21.5°C."))],
        instruction="Write a one-line report from the research notes.",
    )
    return researcher, researcher_queue, writer, writer_queue


def sequential_pipeline() -> Scenario:
    """A SequentialAgent running two LlmAgents one after the other."""
    researcher, researcher_queue, writer, writer_queue = _researcher_and_writer()
    with warnings.catch_warnings():
        # 2.13 deprecates SequentialAgent in favour of Workflow; it still works.
        warnings.simplefilter("ignore", DeprecationWarning)
        pipeline = SequentialAgent(
            name="pipeline", sub_agents=[researcher, writer], description="Research then write."
        )
    return Scenario(
        "sequential_pipeline",
        pipeline,
        ["Write a weather report for Paris."],
        [researcher_queue, writer_queue],
        description="SequentialAgent(researcher -> writer)",
    )


def non_ascii() -> Scenario:
    """CJK / Arabic / emoji in user text, tool args, tool results and answers."""
    agent, queue = _llm_agent(
        "weather_agent",
        [
            model_response(text("確認します 🔍"), call("get_weather", city="東京")),
            model_response(text("東京は曇り、18°C です ☁️ — الطقس غائم")),
        ],
        instruction="Answer weather questions. Use the tools. 日本語で答えてください。",
        tools=[get_weather],
    )
    return Scenario(
        "non_ascii",
        agent,
        ["東京の天気は？ ما هو الطقس في طوكيو؟ 🌤️"],
        [queue],
        description="non-ASCII text and args",
    )


def parallel_fanout() -> Scenario:
    """SequentialAgent(ParallelAgent(two agents, a tool each) -> a merger): branches run
    concurrently, one invocation."""
    paris, paris_queue = _llm_agent(
        "paris_agent",
        [model_response(call("get_weather", city="Paris")), model_response(text("Paris: sunny."))],
        instruction="Report the weather in Paris.",
        tools=[get_weather],
    )
    tokyo, tokyo_queue = _llm_agent(
        "tokyo_agent",
        [model_response(call("get_weather", city="Tokyo")), model_response(text("Tokyo: cloudy."))],
        instruction="Report the weather in Tokyo.",
        tools=[get_weather],
    )
    merger, merger_queue = _llm_agent(
        "merger",
        [model_response(text("Paris is sunny and Tokyo cloudy."))],
        instruction="Merge the reports into one sentence.",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # as SequentialAgent
        fanout = ParallelAgent(name="fanout", sub_agents=[paris, tokyo])
        pipeline = SequentialAgent(name="pipeline", sub_agents=[fanout, merger])
    return Scenario(
        "parallel_fanout",
        pipeline,
        ["Weather in Paris and Tokyo, in one sentence?"],
        [paris_queue, tokyo_queue, merger_queue],
        description="ParallelAgent branches, then a merger",
    )


def loop_until_exit() -> Scenario:
    """LoopAgent(worker) until the worker calls ``exit_loop`` (with text beside it)."""
    worker, queue = _llm_agent(
        "worker",
        [
            model_response(call("get_weather", city="Paris")),
            model_response(text("Draft 1: Paris is sunny.")),
            model_response(text("Draft 2: Paris is sunny, 21.5°C."), call("exit_loop")),
        ],
        instruction="Draft a report; call exit_loop when it is good.",
        tools=[get_weather, exit_loop],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        loop = LoopAgent(name="looper", sub_agents=[worker], max_iterations=3)
    return Scenario(
        "loop_until_exit",
        loop,
        ["Draft a weather report for Paris."],
        [queue],
        description="two loop iterations; the second ends with exit_loop",
    )


def workflow_graph() -> Scenario:
    """An ADK 2 ``Workflow`` graph: START -> researcher -> writer (what replaces
    SequentialAgent in 2.13)."""
    researcher, researcher_queue, writer, writer_queue = _researcher_and_writer()
    flow = Workflow(name="report_flow", edges=[(START, researcher, writer)])
    return Scenario(
        "workflow_graph",
        flow,
        ["Write the Paris weather report."],
        [researcher_queue, writer_queue],
        description="Workflow(START -> researcher -> writer)",
    )


def mcp_tools() -> Scenario:
    """Two calls of a tool served over MCP (``mcp_server``), one of which fails.

    ADK's ``execute_tool`` span holds the SDK's client and server spans of the same call.
    """
    toolset = McpToolset(connection_params=StreamableHTTPConnectionParams(url=mcp_server.url()))
    agent, queue = _llm_agent(
        "forecast_agent",
        [
            model_response(
                call("forecast", city="Lisbon", days=2), call("forecast", city="Atlantis", days=1)
            ),
            model_response(text("Lisbon: sunny in two days. Atlantis has no forecast.")),
        ],
        instruction="Answer with the forecast tool.",
        tools=[toolset],
    )
    return Scenario(
        "mcp_tools",
        agent,
        ["Forecasts for Lisbon in 2 days and Atlantis tomorrow?"],
        [queue],
        description="two parallel calls of an MCP tool; the second fails on the server",
    )


def agent_tool() -> Scenario:
    """An AgentTool wrapping another LlmAgent (a nested runner invocation)."""
    translator, translator_queue = _llm_agent(
        "translator",
        [model_response(text("Bonjour le monde"), input_tokens=40, output_tokens=5)],
        instruction="Translate the request into French.",
        description="Translates text into French.",
    )
    root, root_queue = _llm_agent(
        "assistant",
        [
            model_response(call("translator", request="Hello world")),
            model_response(text("In French: Bonjour le monde")),
        ],
        instruction="Use the translator tool for translations.",
        tools=[AgentTool(agent=translator)],
    )
    return Scenario(
        "agent_tool",
        root,
        ["Translate 'Hello world' into French."],
        [root_queue, translator_queue],
        description="AgentTool(translator) called by the root agent",
    )


def _refuse_unsafe(callback_context: Any, llm_request: LlmRequest) -> LlmResponse | None:
    """``before_model_callback``: a guardrail that answers in place of the model."""
    del callback_context
    asked = "".join(
        p.text or "" for c in llm_request.contents for p in (c.parts or []) if c.role == "user"
    )
    if "password" in asked.lower():
        return LlmResponse(
            content=types.Content(role="model", parts=[text("I can't help with passwords.")])
        )
    return None


def guardrail_before_model() -> Scenario:
    """A ``before_model_callback`` answers instead of the model (no model call)."""
    agent, queue = _llm_agent(
        "guarded_agent",
        [],
        instruction="Help with accounts.",
        before_model_callback=_refuse_unsafe,
    )
    return Scenario(
        "guardrail_before_model",
        agent,
        ["What is the admin password?"],
        [queue],
        description="before_model_callback returns the response; the model is never called",
    )


def _redact_digits(callback_context: Any, llm_response: LlmResponse) -> LlmResponse | None:
    """``after_model_callback``: replaces digits in the model's text with ``#``."""
    del callback_context
    if llm_response.content is None or not llm_response.content.parts:
        return None
    parts = [
        types.Part(text="".join("#" if ch.isdigit() else ch for ch in p.text))
        if p.text is not None
        else p
        for p in llm_response.content.parts
    ]
    return llm_response.model_copy(update={"content": types.Content(role="model", parts=parts)})


def after_model_rewrite() -> Scenario:
    """An ``after_model_callback`` rewrites every reply (text and call turns)."""
    agent, queue = _llm_agent(
        "redacting_agent",
        [
            model_response(text("Checking order 42."), call("get_weather", city="Paris")),
            model_response(text("Your card 4111 is on file; Paris is 21.5°C.")),
        ],
        instruction="Help, but never show numbers.",
        tools=[get_weather],
        after_model_callback=_redact_digits,
    )
    return Scenario(
        "after_model_rewrite",
        agent,
        ["Which card do I have on file, and the weather in Paris?"],
        [queue],
        description="after_model_callback replaces digits in every reply",
    )


def _cached_weather(tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> Any:
    """``before_tool_callback``: answers ``get_weather`` from a cache (the tool is not run)."""
    del tool_context
    if tool.name == "get_weather" and args.get("city") == "Paris":
        return {"city": "Paris", "temperature_c": 20.0, "conditions": "cached"}
    return None


def _round_temperature(
    tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, tool_response: Any
) -> Any:
    """``after_tool_callback``: rounds the temperature of a weather result."""
    del tool, args, tool_context
    if isinstance(tool_response, dict) and "temperature_c" in tool_response:
        return {**tool_response, "temperature_c": round(tool_response["temperature_c"])}
    return None


def tool_callbacks() -> Scenario:
    """A ``before_tool_callback`` answers one call from a cache, an ``after_tool_callback``
    rewrites the other call's result."""
    agent, queue = _llm_agent(
        "weather_agent",
        [
            model_response(call("get_weather", city="Paris"), call("get_weather", city="Tokyo")),
            model_response(text("Paris 20°C, Tokyo 18°C.")),
        ],
        instruction="Report the weather.",
        tools=[get_weather],
        before_tool_callback=_cached_weather,
        after_tool_callback=_round_temperature,
    )
    return Scenario(
        "tool_callbacks",
        agent,
        ["How warm is it in Paris and in Tokyo?"],
        [queue],
        description="before_tool_callback short-circuits one call, after_tool_callback rewrites",
    )


def thinking() -> Scenario:
    """Replies carrying thought parts (a thinking model) before the call and the answer."""
    thought = types.Part(text="The user wants Paris; call the weather tool.", thought=True)
    agent, queue = _llm_agent(
        "thinking_agent",
        [
            model_response(thought, call("get_weather", city="Paris")),
            model_response(
                types.Part(text="It is sunny, so say so.", thought=True),
                text("Paris is sunny, 21.5°C."),
            ),
        ],
        instruction="Think, then answer.",
        tools=[get_weather],
    )
    return Scenario(
        "thinking",
        agent,
        ["How is Paris today?"],
        [queue],
        description="thought parts beside a call and beside the answer",
    )


def code_execution() -> Scenario:
    """Gemini's built-in code execution: code and its result are parts of the reply."""
    agent, queue = _llm_agent(
        "calc_agent",
        [
            model_response(
                text("Let me compute that."),
                types.Part(
                    executable_code=types.ExecutableCode(
                        code="print(sum(range(101)))", language=types.Language.PYTHON
                    )
                ),
                types.Part(
                    code_execution_result=types.CodeExecutionResult(
                        outcome=types.Outcome.OUTCOME_OK, output="5050\n"
                    )
                ),
                text("The sum of 1 to 100 is 5050."),
            )
        ],
        instruction="Use code to compute.",
    )
    return Scenario(
        "code_execution",
        agent,
        ["What is the sum of 1 to 100?"],
        [queue],
        description="executable_code and code_execution_result parts between texts",
    )


def ask_for_approval(amount: int) -> dict[str, Any]:
    """Files a refund for a person to approve; the answer comes later.

    Args:
        amount: Refund amount in euros.

    Returns:
        The ticket the approval goes through.
    """
    return {"status": "pending", "ticket": f"refund-{amount}"}


def long_running_tool() -> Scenario:
    """A ``LongRunningFunctionTool`` (human in the loop): its pending result, then text."""
    agent, queue = _llm_agent(
        "refund_agent",
        [
            model_response(call("ask_for_approval", amount=40)),
            model_response(text("Your refund of 40 euros is waiting for approval.")),
        ],
        instruction="File refunds for approval.",
        tools=[LongRunningFunctionTool(ask_for_approval)],
    )
    return Scenario(
        "long_running_tool",
        agent,
        ["Please refund my 40 euros."],
        [queue],
        description="a long-running tool returns a pending status; the model answers",
    )


def include_contents_none() -> Scenario:
    """A pipeline whose second agent sees no history (``include_contents='none'``)."""
    researcher, r_queue = _llm_agent(
        "researcher",
        [
            model_response(call("get_weather", city="Rome")),
            model_response(text("Rome: 26.0°C, sunny.")),
        ],
        instruction="Find the weather.",
        tools=[get_weather],
        output_key="notes",
    )
    writer, w_queue = _llm_agent(
        "writer",
        [model_response(text("Rome is sunny and warm today, 26°C."))],
        instruction="Write one sentence from these notes: {notes}",
        include_contents="none",
    )
    root = SequentialAgent(name="report_pipeline", sub_agents=[researcher, writer])
    return Scenario(
        "include_contents_none",
        root,
        ["Weather report for Rome, please."],
        [r_queue, w_queue],
        description="SequentialAgent whose writer is given only its instruction",
    )


class WeatherReport(BaseModel):
    """The structured answer of ``structured_output``."""

    city: str
    celsius: float


def structured_output() -> Scenario:
    """An agent with an ``output_schema`` answers in JSON (and ``output_key`` keeps it)."""
    agent, queue = _llm_agent(
        "report_agent",
        [model_response(text('{"city": "Oslo", "celsius": 4.5}'))],
        instruction="Answer as a weather report.",
        output_schema=WeatherReport,
        output_key="report",
    )
    return Scenario(
        "structured_output",
        agent,
        ["Report the weather for Oslo."],
        [queue],
        description="output_schema: the answer is JSON text",
    )


def refund(amount: int) -> dict[str, Any]:
    """Refunds an amount to the customer, once a person confirms it.

    Args:
        amount: Refund amount in euros.

    Returns:
        The refund made.
    """
    return {"status": "refunded", "amount": amount}


#: The call ADK makes to ask the user for a tool's confirmation (its own name for it).
REQUEST_CONFIRMATION_FUNCTION_CALL_NAME: Final = "adk_request_confirmation"


def _confirm(events: Sequence[Event]) -> types.Content:
    """The user's answer to the confirmation ADK asked for last: yes."""
    [asked] = [
        fc
        for event in events
        for fc in event.get_function_calls()
        if fc.name == REQUEST_CONFIRMATION_FUNCTION_CALL_NAME
    ][-1:]
    answer = types.FunctionResponse(
        id=asked.id, name=REQUEST_CONFIRMATION_FUNCTION_CALL_NAME, response={"confirmed": True}
    )
    return types.Content(role="user", parts=[types.Part(function_response=answer)])


def tool_confirmation() -> Scenario:
    """A tool that needs a person's confirmation (``require_confirmation=True``): ADK
    answers the call with an error, asks with ``adk_request_confirmation`` and ends the
    run; the user's confirmation (a function response) goes on with the same ADK
    invocation, in a run (a trace) of its own, which runs the tool."""
    agent, queue = _llm_agent(
        "refund_agent",
        [
            model_response(call("refund", amount=40)),
            model_response(text("Your 40 euros are refunded.")),
        ],
        instruction="Refund what the customer asks for.",
        tools=[FunctionTool(refund, require_confirmation=True)],
    )
    return Scenario(
        "tool_confirmation",
        agent,
        ["Please refund my 40 euros.", _confirm],
        [queue],
        description="a tool needs confirmation: the run pauses, the confirmation resumes it",
    )


def ask_manager(amount: int) -> None:
    """Asks a manager to approve a refund; the answer comes later, from the user.

    Args:
        amount: Refund amount in euros.
    """


def _manager_approves(events: Sequence[Event]) -> types.Content:
    """The long-running call's result, as the user sends it later: approved."""
    [call_id] = [i for event in events for i in event.long_running_tool_ids or ()][-1:]
    answer = types.FunctionResponse(id=call_id, name="ask_manager", response={"approved": True})
    return types.Content(role="user", parts=[types.Part(function_response=answer)])


def long_running_pause() -> Scenario:
    """A ``LongRunningFunctionTool`` that gives no result yet (returns None): ADK ends
    the run and waits; the user's function response, later, brings the result and goes
    on with the same ADK invocation, in a run of its own."""
    agent, queue = _llm_agent(
        "refund_agent",
        [
            model_response(call("ask_manager", amount=40)),
            model_response(text("Approved: your 40 euros are refunded.")),
        ],
        instruction="Ask a manager before refunding.",
        tools=[LongRunningFunctionTool(ask_manager)],
    )
    return Scenario(
        "long_running_pause",
        agent,
        ["Refund my 40 euros, please.", _manager_approves],
        [queue],
        description="a long-running tool with no result yet: the run waits, the result resumes it",
    )


#: Runs that pause for a person, then go on: ADK's eval reads each as one invocation whose
#: user content is the user's function response (a confirmation, a long-running tool's
#: result), with the framework's own ``adk_request_confirmation`` call among the model's;
#: compared on their own, not in the agreement tests.
PAUSING: Final[dict[str, Callable[[], Scenario]]] = {
    "tool_confirmation": tool_confirmation,
    "long_running_pause": long_running_pause,
}

SCENARIOS: Final[dict[str, Callable[[], Scenario]]] = {
    "two_sequential_tools": two_sequential_tools,
    "parallel_calls": parallel_calls,
    "text_and_call": text_and_call,
    "tool_raises": tool_raises,
    "tool_error_handled": tool_error_handled,
    "no_tools": no_tools,
    "search_grounding": search_grounding,
    "two_turn_session": two_turn_session,
    "transfer_to_sub_agent": transfer_to_sub_agent,
    "sequential_pipeline": sequential_pipeline,
    "non_ascii": non_ascii,
    "agent_tool": agent_tool,
    "parallel_fanout": parallel_fanout,
    "loop_until_exit": loop_until_exit,
    "workflow_graph": workflow_graph,
    "mcp_tools": mcp_tools,
    "guardrail_before_model": guardrail_before_model,
    "after_model_rewrite": after_model_rewrite,
    "tool_callbacks": tool_callbacks,
    "thinking": thinking,
    "code_execution": code_execution,
    "long_running_tool": long_running_tool,
    "include_contents_none": include_contents_none,
    "structured_output": structured_output,
}
"""Scenario builders by name; each call builds a fresh agent tree and script."""

#: Scenarios whose call that ends an agent's turn (``transfer_to_agent``, ``exit_loop``)
#: has no result where results come only from the next model request (no request shows
#: it): the call's index among the turn's calls.
TURN_ENDING_CALLS: Final[dict[str, int]] = {"transfer_to_sub_agent": 0, "loop_until_exit": 1}


# ---------------------------------------------------------------------------
# Telemetry capture
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Capture:
    spans: InMemorySpanExporter
    logs: InMemoryLogRecordExporter
    tracer_provider: TracerProvider
    logger_provider: LoggerProvider


class _CaptureState:
    """Holds the process-wide capture once installed."""

    capture: _Capture | None = None


_state = _CaptureState()
_install_lock = threading.Lock()
_run_lock = threading.Lock()


def install_telemetry() -> tuple[InMemorySpanExporter, InMemoryLogRecordExporter]:
    """Installs in-memory span and log capture once per process.

    If no SDK provider is global yet, installs a ``TracerProvider`` /
    ``LoggerProvider`` as the global one. If an SDK provider is already global
    (another test set one), the in-memory processors are added to it instead,
    since OpenTelemetry refuses to replace a global provider.

    Returns:
        The span exporter and the log-record exporter.

    Raises:
        RuntimeError: If a non-SDK provider is already global (it cannot be
            replaced).
    """
    with _install_lock:
        if _state.capture is None:
            span_exporter = InMemorySpanExporter()
            log_exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]

            current_tp = otel_trace.get_tracer_provider()
            if isinstance(current_tp, TracerProvider):
                tracer_provider = current_tp
            else:
                tracer_provider = TracerProvider()
                otel_trace.set_tracer_provider(tracer_provider)
                if otel_trace.get_tracer_provider() is not tracer_provider:
                    raise RuntimeError(f"cannot replace global TracerProvider {current_tp!r}")
            tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))

            current_lp = otel_logs.get_logger_provider()
            if isinstance(current_lp, LoggerProvider):
                logger_provider = current_lp
            else:
                logger_provider = LoggerProvider()
                otel_logs.set_logger_provider(logger_provider)
                if otel_logs.get_logger_provider() is not logger_provider:
                    raise RuntimeError(f"cannot replace global LoggerProvider {current_lp!r}")
            logger_provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))

            _state.capture = _Capture(span_exporter, log_exporter, tracer_provider, logger_provider)
        return _state.capture.spans, _state.capture.logs


def env_for_mode(schema: SchemaVersion, content: ContentMode) -> dict[str, str | None]:
    """Returns the env vars pinned for a mode (``None`` = unset).

    Mapping:

    * schema ``v1`` -> ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``; ``v2`` -> ``2``.
    * ``default`` -> ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
      unset and ``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS`` unset (legacy v1 span
      content on; v2 content off, since the OTel knob defaults to NO_CONTENT).
    * ``SPAN_ONLY`` / ``SPAN_AND_EVENT`` / ``EVENT_ONLY`` -> the OTel knob set
      to that value (legacy v1 span content stays at its default, on).
    * ``NO_CONTENT`` -> the OTel knob ``NO_CONTENT`` and
      ``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false``: capture off everywhere.
    * Every other var of :data:`MANAGED_ENV_VARS` is unset
      (``OTEL_SEMCONV_STABILITY_OPT_IN`` included).

    Args:
        schema: Telemetry schema.
        content: Content-capture mode.
    """
    if schema not in SCHEMAS:
        raise ValueError(f"unknown schema {schema!r}; expected one of {SCHEMAS}")
    if content not in CONTENT_MODES:
        raise ValueError(f"unknown content mode {content!r}; expected one of {CONTENT_MODES}")
    env: dict[str, str | None] = dict.fromkeys(MANAGED_ENV_VARS)
    env[ENV_SCHEMA] = "1" if schema == "v1" else "2"
    if content != "default":
        env[ENV_CAPTURE] = content
    if content == "NO_CONTENT":
        env[ENV_ADK_SPAN_CONTENT] = "false"
    return env


@contextmanager
def _patched_env(values: Mapping[str, str | None]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    try:
        for key, value in values.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


@dataclasses.dataclass
class AdkRun:
    """Everything captured from one scenario run.

    Attributes:
        scenario: Scenario name.
        schema: Telemetry schema used.
        content: Content-capture mode used.
        spans: Finished OTel SDK spans, in end order.
        logs: OTel SDK log records, in emit order.
        adk_invocations: ``EvaluationGenerator.convert_events_to_eval_invocations
            (session.events)``.
        session_id: The session id (= ``gen_ai.conversation.id``).
        app_name: The runner's app name.
        user_id: The session's user id.
        events: The session's events after the run.
        errors: ``"<ExceptionType>: <message>"`` per turn that raised.
        env: The env vars pinned for the run (``None`` = unset).
        spec: The scenario that ran (its queues hold the requests received
            and any leftover responses).
    """

    scenario: str
    schema: SchemaVersion
    content: ContentMode
    spans: list[ReadableSpan]
    logs: list[ReadableLogRecord]
    adk_invocations: list[Invocation]
    session_id: str
    app_name: str
    user_id: str
    events: list[Event]
    errors: list[str]
    env: dict[str, str | None]
    spec: Scenario

    @property
    def queues(self) -> list[ResponseQueue]:
        """The scenario's response queues."""
        return self.spec.queues

    @property
    def error(self) -> str | None:
        """The first error raised by a turn, or None."""
        return self.errors[0] if self.errors else None

    @property
    def trace_ids(self) -> list[str]:
        """Distinct trace ids (hex), in order of first span end."""
        seen: dict[str, None] = {}
        for span in self.spans:
            if span.context is not None:
                seen[f"{span.context.trace_id:032x}"] = None
        return list(seen)

    def spans_named(self, prefix: str) -> list[ReadableSpan]:
        """Returns the spans whose name starts with ``prefix``.

        Args:
            prefix: Span-name prefix, e.g. ``"execute_tool"``.
        """
        return [span for span in self.spans if span.name.startswith(prefix)]


async def run_scenario_async(
    name: str,
    *,
    schema: SchemaVersion,
    content: ContentMode,
    extra_env: Mapping[str, str | None] | None = None,
    streaming: bool = False,
) -> AdkRun:
    """Async variant of :func:`run_scenario` for callers inside an event loop.

    The env is process-global: do not run two of these concurrently.

    Args:
        name: A key of :data:`SCENARIOS`.
        schema: Telemetry schema.
        content: Content-capture mode.
        extra_env: Extra env overrides applied after the mode's (``None`` =
            unset), e.g. ``{"OTEL_SEMCONV_STABILITY_OPT_IN":
            "gen_ai_latest_experimental"}``.
        streaming: Run with ``StreamingMode.SSE`` (as ``adk web`` does): a model that
            streams yields partial responses, then the aggregated one.

    Returns:
        The captured run.
    """
    builders = {**SCENARIOS, **PAUSING}
    if name not in builders:
        raise KeyError(f"unknown scenario {name!r}; known: {sorted(builders)}")
    span_exporter, log_exporter = install_telemetry()
    env = env_for_mode(schema, content)
    env.update(extra_env or {})
    scenario = builders[name]()
    app_name = f"tracescore_{name}"
    session_id = f"{name}-session"

    with _patched_env(env):
        span_exporter.clear()
        log_exporter.clear()
        root = scenario.root_agent
        runner = (
            InMemoryRunner(agent=root, app_name=app_name)
            if isinstance(root, BaseAgent)
            else InMemoryRunner(node=root, app_name=app_name)  # a 2.x Workflow
        )
        try:
            await runner.session_service.create_session(
                app_name=app_name, user_id=USER_ID, session_id=session_id
            )
            errors: list[str] = []
            mode = StreamingMode.SSE if streaming else StreamingMode.NONE
            run_config = RunConfig(streaming_mode=mode)
            for message in scenario.user_messages:
                if callable(message):
                    so_far = await runner.session_service.get_session(
                        app_name=app_name, user_id=USER_ID, session_id=session_id
                    )
                    assert so_far is not None
                    new_message = message(so_far.events)
                else:
                    new_message = types.Content(role="user", parts=[types.Part(text=message)])
                try:
                    async for _event in runner.run_async(
                        user_id=USER_ID,
                        session_id=session_id,
                        new_message=new_message,
                        run_config=run_config,
                    ):
                        pass
                except Exception as exc:  # recorded on the run, not re-raised
                    errors.append(f"{type(exc).__name__}: {exc}")
            session = await runner.session_service.get_session(
                app_name=app_name, user_id=USER_ID, session_id=session_id
            )
        finally:
            await runner.close()
        assert session is not None
        _capture_flush()
        spans = list(span_exporter.get_finished_spans())
        logs = list(log_exporter.get_finished_logs())
        span_exporter.clear()
        log_exporter.clear()

    events = list(session.events)
    invocations = EvaluationGenerator.convert_events_to_eval_invocations(events)
    return AdkRun(
        scenario=name,
        schema=schema,
        content=content,
        spans=spans,
        logs=logs,
        adk_invocations=invocations,
        session_id=session_id,
        app_name=app_name,
        user_id=USER_ID,
        events=events,
        errors=errors,
        env=env,
        spec=scenario,
    )


def _capture_flush() -> None:
    if _state.capture is not None:
        _state.capture.tracer_provider.force_flush()
        _state.capture.logger_provider.force_flush()


def run_scenario(
    name: str,
    *,
    schema: SchemaVersion,
    content: ContentMode,
    extra_env: Mapping[str, str | None] | None = None,
    streaming: bool = False,
) -> AdkRun:
    """Runs one scenario in a fresh event loop and captures its telemetry.

    Args:
        name: A key of :data:`SCENARIOS`.
        schema: ``"v1"`` (legacy) or ``"v2"`` (semconv-aligned).
        content: Content-capture mode (see :func:`env_for_mode`).
        extra_env: Extra env overrides applied after the mode's.
        streaming: Run with ``StreamingMode.SSE`` (see :func:`run_scenario_async`).

    Returns:
        The captured run. A turn that raised is recorded in
        :attr:`AdkRun.errors` rather than re-raised.

    Raises:
        RuntimeError: If called while an event loop is running in this thread
            (use :func:`run_scenario_async` there).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError("run_scenario() needs no running loop; await run_scenario_async()")
    with _run_lock:
        return asyncio.run(
            run_scenario_async(
                name, schema=schema, content=content, extra_env=extra_env, streaming=streaming
            )
        )


# ---------------------------------------------------------------------------
# JSON views (for samples and debugging)
# ---------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    """Converts OTel attribute/body values to JSON-compatible values."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, bytes):
        return {"__bytes_b64__": base64.b64encode(value).decode("ascii")}
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if isinstance(value, Mapping):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    return repr(value)


def _hex_span_id(span_id: int | None) -> str | None:
    return None if span_id is None else f"{span_id:016x}"


def span_to_dict(span: ReadableSpan) -> dict[str, Any]:
    """Returns a JSON-compatible view of a finished span.

    Args:
        span: The span.

    Returns:
        ``{name, span_id, parent_span_id, trace_id, scope, kind, status,
        start, end, attributes, events}``; ids are lowercase hex, times ns.
    """
    context = span.context
    scope = span.instrumentation_scope
    return {
        "name": span.name,
        "span_id": _hex_span_id(context.span_id if context else None),
        "parent_span_id": _hex_span_id(span.parent.span_id if span.parent else None),
        "trace_id": f"{context.trace_id:032x}" if context else None,
        "scope": {"name": scope.name, "version": scope.version} if scope else None,
        "kind": span.kind.name,
        "status": {"code": span.status.status_code.name, "description": span.status.description},
        "start": span.start_time,
        "end": span.end_time,
        "attributes": _jsonable(dict(span.attributes or {})),
        "events": [
            {
                "name": event.name,
                "timestamp": event.timestamp,
                "attributes": _jsonable(dict(event.attributes or {})),
            }
            for event in span.events
        ],
    }


def log_to_dict(record: ReadableLogRecord) -> dict[str, Any]:
    """Returns a JSON-compatible view of a log record.

    Args:
        record: The log record.

    Returns:
        ``{event_name, body, attributes, trace_id, span_id, severity_number,
        severity_text, scope, timestamp, observed_timestamp}``.
    """
    log = record.log_record
    scope = record.instrumentation_scope
    return {
        "event_name": log.event_name,
        "body": _jsonable(log.body),
        "attributes": _jsonable(dict(log.attributes or {})),
        "trace_id": f"{log.trace_id:032x}" if log.trace_id else None,
        "span_id": _hex_span_id(log.span_id) if log.span_id else None,
        "severity_number": log.severity_number.name if log.severity_number else None,
        "severity_text": log.severity_text,
        "scope": {"name": scope.name, "version": scope.version} if scope else None,
        "timestamp": log.timestamp,
        "observed_timestamp": log.observed_timestamp,
    }


def run_to_sample(run: AdkRun) -> dict[str, Any]:
    """Returns the JSON sample of a run (spans, logs, ADK invocations).

    Args:
        run: The run.
    """
    return {
        "scenario": run.scenario,
        "schema": run.schema,
        "content": run.content,
        "env": run.env,
        "session_id": run.session_id,
        "app_name": run.app_name,
        "errors": run.errors,
        "spans": [span_to_dict(span) for span in run.spans],
        "logs": [log_to_dict(record) for record in run.logs],
        "adk": [
            invocation.model_dump(mode="json", exclude_none=True)
            for invocation in run.adk_invocations
        ],
    }


def adk_view(inv: Invocation) -> dict[str, Any]:
    """ADK's invocation reduced to what the criteria compare."""
    events = inv.intermediate_data.invocation_events  # type: ignore[union-attr]
    intermediate = [
        (ev.author, part.text)
        for ev in events
        if ev.content is not None and ev.content.parts
        for part in ev.content.parts
        if part.text
    ]
    calls = get_all_tool_calls_with_responses(inv.intermediate_data)
    final = inv.final_response
    return {
        "user": "\n".join(p.text for p in inv.user_content.parts or [] if p.text is not None),
        "calls": [(c.name, c.args) for c, _ in calls],
        "results": [r.response if r is not None else None for _, r in calls],
        "intermediate": intermediate,
        "final": (
            "\n".join(p.text for p in final.parts or [] if p.text is not None)
            if final is not None and final.parts
            else None
        ),
    }


def render_span_tree(spans: Sequence[ReadableSpan], *, attributes: Sequence[str] = ()) -> str:
    """Renders spans as an indented tree, children in start order.

    Args:
        spans: Finished spans (several traces allowed).
        attributes: Attribute keys to print after each span name.

    Returns:
        One line per span.
    """
    by_id = {span.context.span_id: span for span in spans if span.context is not None}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None else None
        key = parent if parent in by_id else None
        children.setdefault(key, []).append(span)
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: s.start_time or 0):
            shown = [
                f"{key}={(span.attributes or {}).get(key)!r}"
                for key in attributes
                if key in (span.attributes or {})
            ]
            status = "" if span.status.is_unset else f" [{span.status.status_code.name}]"
            suffix = f"  ({', '.join(shown)})" if shown else ""
            lines.append(f"{'  ' * depth}{span.name}{status}{suffix}")
            if span.context is not None:
                walk(span.context.span_id, depth + 1)

    walk(None, 0)
    return "\n".join(lines)


def dump_samples(out_dir: Path, names: Sequence[str] = ()) -> list[Path]:
    """Runs every scenario x mode and writes ``<scenario>__<schema>_<content>.json``.

    Args:
        out_dir: Output directory (created if needed).
        names: Scenario names; all of :data:`SCENARIOS` when empty.

    Returns:
        The written paths.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name in names or list(SCENARIOS):
        for schema in SCHEMAS:
            for content in CONTENT_MODES:
                run = run_scenario(name, schema=schema, content=content)
                path = out_dir / f"{name}__{schema}_{content}.json"
                path.write_text(
                    json.dumps(run_to_sample(run), ensure_ascii=False, indent=1) + "\n",
                    encoding="utf-8",
                )
                written.append(path)
    return written


def _main(argv: Sequence[str]) -> int:
    if not argv:
        print("usage: adk_harness.py OUT_DIR [SCENARIO...]", file=sys.stderr)
        return 2
    for path in dump_samples(Path(argv[0]), argv[1:]):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
