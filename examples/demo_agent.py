"""A demo weather agent for the compose stack: real OTel SDK, GenAI semconv (>= 1.37) spans.

It answers the user questions of ``examples/goldens/weather.evalset.json`` (the cases of
``weather_agent``), so ``tracescore serve`` matches every run to its golden by user text.
Each turn is one trace::

    invoke_agent weather_agent            gen_ai.agent.name, gen_ai.conversation.id
    ├── chat demo-model                   the model asks for tools (gen_ai.*.messages JSON)
    ├── execute_tool get_weather          gen_ai.tool.name / .call.arguments / .call.result
    ├── ...                               (more model steps and tool calls)
    └── chat demo-model                   the final answer

Some runs deliberately deviate: the first ``get_weather`` call asks for the wrong city, so
the tool trajectory (and usually the answer) no longer matches the golden and scores vary.

Spans go over OTLP/gRPC to ``OTEL_EXPORTER_OTLP_ENDPOINT`` (the SDK reads it; an
``http://`` endpoint means plaintext), through a ``BatchSpanProcessor``::

    OTEL_EXPORTER_OTLP_ENDPOINT=http://otel-collector:4317 python examples/demo_agent.py

Flags: ``--count N`` runs (default: forever), ``--interval S`` seconds between runs,
``--seed`` (which runs deviate, and the order of the questions), ``--deviation-rate``.
SIGTERM/SIGINT stop the loop and flush what is buffered.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import signal
import sys
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from types import FrameType
from typing import Any

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Tracer

__all__ = ["SCENARIOS", "Run", "Scenario", "ToolCall", "Turn", "emit_run", "main", "plan"]

AGENT = "weather_agent"
MODEL = "demo-model"

#: What the fake ``get_weather`` tool knows (the deviations ask for the neighbours).
WEATHER: dict[str, dict[str, Any]] = {
    "Paris": {"city": "Paris", "temp_c": 21.5, "condition": "sunny"},
    "Tokyo": {"city": "Tokyo", "temp_c": 18.0, "condition": "cloudy"},
    "Rome": {"city": "Rome", "temp_c": 26.0, "condition": "sunny"},
    "Berlin": {"city": "Berlin", "temp_c": 15.5, "condition": "rainy"},
    "東京": {"city": "東京", "temp_c": 18.0, "condition": "曇り"},
    "Lyon": {"city": "Lyon", "temp_c": 19.0, "condition": "cloudy"},
    "Osaka": {"city": "Osaka", "temp_c": 20.0, "condition": "rainy"},
    "Milan": {"city": "Milan", "temp_c": 24.0, "condition": "sunny"},
    "Hamburg": {"city": "Hamburg", "temp_c": 13.0, "condition": "rainy"},
    "大阪": {"city": "大阪", "temp_c": 20.0, "condition": "雨"},
}
#: The wrong city a deviating run asks for instead.
WRONG_CITY: dict[str, str] = {
    "Paris": "Lyon",
    "Tokyo": "Osaka",
    "Rome": "Milan",
    "Berlin": "Hamburg",
    "東京": "大阪",
}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the model asks for."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Turn:
    """One user turn: the model's tool-calling steps, then its answer."""

    user: str
    steps: tuple[tuple[ToolCall, ...], ...]
    answer: str


@dataclass(frozen=True, slots=True)
class Scenario:
    """A conversation, named after the golden case it plays (``eval_id``)."""

    eval_id: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Run:
    """One planned conversation; ``deviate`` asks for the wrong city in its last turn."""

    scenario: Scenario
    deviate: bool


def _weather(city: str) -> ToolCall:
    return ToolCall("get_weather", {"city": city})


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "two_sequential_tools-session",
        (
            Turn(
                "What is the weather in Paris, in Fahrenheit?",
                (
                    (_weather("Paris"),),
                    (ToolCall("convert_temperature", {"celsius": 21.5, "precision": 2}),),
                ),
                "It is 70.7°F and sunny in Paris.",
            ),
        ),
    ),
    Scenario(
        "parallel_calls-session",
        (
            Turn(
                "Weather in Paris and Tokyo?",
                ((_weather("Tokyo"), _weather("Paris")),),
                "Paris: 21.5°C, sunny. Tokyo: 18°C, cloudy.",
            ),
        ),
    ),
    Scenario(
        "two_turn_session-session",
        (
            Turn("Weather in Paris?", ((_weather("Paris"),),), "Paris: 21.5°C and sunny."),
            Turn("And in Rome?", ((_weather("Rome"),),), "Rome: 26°C and sunny."),
        ),
    ),
    Scenario(
        "text_and_call-session",
        (
            Turn(
                "Is it raining in Berlin?",
                ((_weather("Berlin"),),),
                "Expect rain in Berlin, around 15 degrees.",
            ),
        ),
    ),
    Scenario(
        "non_ascii-session",
        (
            Turn(
                "東京の天気は？ ما هو الطقس في طوكيو؟ 🌤️",
                ((_weather("東京"),),),
                "東京は曇り、18°C です ☁️ — الطقس غائم",
            ),
        ),
    ),
)


def plan(seed: int | None, deviation_rate: float) -> Iterator[Run]:
    """The runs to play, endlessly: every scenario once per round, in a shuffled order.

    The same seed gives the same runs (``random.Random`` is stable across Python versions
    for integer seeds).
    """
    rng = random.Random(seed)
    while True:
        order = list(SCENARIOS)
        rng.shuffle(order)
        for scenario in order:
            yield Run(scenario, rng.random() < deviation_rate)


def deviated(turn: Turn) -> Turn:
    """The turn with its first ``get_weather`` call asking for the wrong city."""
    steps = [list(step) for step in turn.steps]
    for step in steps:
        for i, call in enumerate(step):
            city = call.arguments.get("city")
            if call.name == "get_weather" and city in WRONG_CITY:
                wrong = WRONG_CITY[city]
                step[i] = replace(call, arguments={**call.arguments, "city": wrong})
                return Turn(
                    turn.user,
                    tuple(tuple(s) for s in steps),
                    turn.answer.replace(city, wrong),
                )
    return turn


def call_tool(call: ToolCall) -> dict[str, Any]:
    """The fake tools."""
    if call.name == "get_weather":
        return WEATHER.get(call.arguments["city"], {"error": "unknown city"})
    if call.name == "convert_temperature":
        fahrenheit = call.arguments["celsius"] * 9 / 5 + 32
        return {"fahrenheit": round(fahrenheit, call.arguments.get("precision", 1))}
    return {"error": f"unknown tool {call.name}"}


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _chat(
    tracer: Tracer, inputs: Sequence[dict[str, Any]], output: dict[str, Any], tokens: int
) -> None:
    attributes: dict[str, str | int] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "demo",
        "gen_ai.request.model": MODEL,
        "gen_ai.response.model": MODEL,
        "gen_ai.usage.input_tokens": tokens,
        "gen_ai.usage.output_tokens": 12,
        "gen_ai.input.messages": json.dumps(list(inputs), ensure_ascii=False),
        "gen_ai.output.messages": json.dumps([output], ensure_ascii=False),
    }
    with tracer.start_as_current_span(f"chat {MODEL}", kind=SpanKind.CLIENT, attributes=attributes):
        pass


def emit_turn(
    tracer: Tracer, turn: Turn, *, conversation_id: str, history: list[dict[str, Any]]
) -> str:
    """Play one turn as one trace; ``history`` (earlier turns' messages) is extended.

    Returns the trace id (hex).
    """
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": AGENT,
        "gen_ai.provider.name": "demo",
        "gen_ai.conversation.id": conversation_id,
    }
    with tracer.start_as_current_span(f"invoke_agent {AGENT}", attributes=attributes) as root:
        messages = [*history, _text("user", turn.user)]
        call_ids = itertools.count()
        for step in turn.steps:
            ids = [f"call_{next(call_ids)}" for _ in step]
            parts = [
                {"type": "tool_call", "id": cid, "name": c.name, "arguments": c.arguments}
                for cid, c in zip(ids, step)
            ]
            request = {"role": "assistant", "parts": parts}
            _chat(tracer, messages, request, tokens=40 + 10 * len(messages))
            messages.append(request)
            for cid, call in zip(ids, step):
                result = call_tool(call)
                tool_attributes = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": call.name,
                    "gen_ai.tool.type": "function",
                    "gen_ai.tool.call.id": cid,
                    "gen_ai.tool.call.arguments": json.dumps(call.arguments, ensure_ascii=False),
                    "gen_ai.tool.call.result": json.dumps(result, ensure_ascii=False),
                }
                with tracer.start_as_current_span(
                    f"execute_tool {call.name}", attributes=tool_attributes
                ):
                    pass
                messages.append(
                    {
                        "role": "tool",
                        "parts": [{"type": "tool_call_response", "id": cid, "response": result}],
                    }
                )
        _chat(tracer, messages, _text("assistant", turn.answer), tokens=40 + 10 * len(messages))
        history.extend([_text("user", turn.user), _text("assistant", turn.answer)])
        return f"{root.get_span_context().trace_id:032x}"


def emit_run(tracer: Tracer, run: Run) -> list[str]:
    """Play one conversation (its last turn deviated if planned); returns its trace ids."""
    turns = list(run.scenario.turns)
    if run.deviate:
        turns[-1] = deviated(turns[-1])
    conversation_id = str(uuid.uuid4())
    history: list[dict[str, Any]] = []
    return [
        emit_turn(tracer, turn, conversation_id=conversation_id, history=history) for turn in turns
    ]


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--count", type=int, default=None, help="conversations to play (default: forever)"
    )
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between conversations")
    parser.add_argument("--seed", type=int, default=None, help="seed (default: random)")
    parser.add_argument(
        "--deviation-rate",
        type=float,
        default=0.25,
        help="share of conversations that call get_weather with the wrong city",
    )
    args = parser.parse_args(argv)
    if args.count is not None and args.count < 0:
        parser.error("--count must be >= 0")
    if args.interval < 0:
        parser.error("--interval must be >= 0")
    if not 0 <= args.deviation_rate <= 1:
        parser.error("--deviation-rate must be between 0 and 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Play conversations until ``--count`` is reached or a signal arrives."""
    args = _parse(argv)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "demo-agent")})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("tracescore.examples.demo_agent")
    played = deviations = 0
    try:
        for run in itertools.islice(plan(args.seed, args.deviation_rate), args.count):
            if stop.is_set():
                break
            emit_run(tracer, run)
            played += 1
            deviations += run.deviate
            print(
                f"run {played}: {run.scenario.eval_id}{' (deviating)' if run.deviate else ''}",
                flush=True,
            )
            if played == args.count or stop.wait(args.interval):
                break
    finally:
        provider.shutdown()  # flushes the batch processor
    print(f"played {played} conversation(s), {deviations} deviating", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
