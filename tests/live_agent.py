"""A tiny agent loop on the real OTel SDK, emitting GenAI semconv (>= 1.37) spans.

Each run is one trace: ``invoke_agent`` › ``chat`` (+ ``execute_tool``) › ``chat``, with the
messages as JSON attributes on the chat spans, as OTel GenAI instrumentations write them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from opentelemetry.trace import Status, StatusCode, Tracer


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def run_agent(
    tracer: Tracer,
    *,
    agent: str = "weather_agent",
    user: str = "What is the weather in Paris?",
    tools: Sequence[tuple[str, dict[str, Any], str]] = (("get_weather", {"city": "Paris"}, "21C"),),
    answer: str = "It is 21C in Paris.",
    conversation_id: str | None = None,
    error: bool = False,
    extra: dict[str, Any] | None = None,
    instructions: str | None = None,
    response_id: str | None = None,
) -> str:
    """Run one simulated agent invocation; returns its trace id (hex).

    ``instructions`` go on every model call as ``gen_ai.system_instructions``;
    ``response_id`` is the last model call's ``gen_ai.response.id``.
    """
    model = {"gen_ai.system_instructions": instructions} if instructions else {}
    attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}
    if conversation_id:
        attrs["gen_ai.conversation.id"] = conversation_id
    attrs.update(extra or {})
    with tracer.start_as_current_span(f"invoke_agent {agent}", attributes=attrs) as root:
        history = [_text("user", user)]
        calls = [
            {"type": "tool_call", "id": f"call_{i}", "name": name, "arguments": args}
            for i, (name, args, _) in enumerate(tools)
        ]
        if calls:
            with tracer.start_as_current_span(
                "chat m",
                attributes={
                    **model,
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "m",
                    "gen_ai.usage.input_tokens": 10,
                    "gen_ai.usage.output_tokens": 5,
                    "gen_ai.input.messages": json.dumps(history),
                    "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": calls}]),
                },
            ):
                pass
            history.append({"role": "assistant", "parts": calls})
            for i, (name, args, result) in enumerate(tools):
                with tracer.start_as_current_span(
                    f"execute_tool {name}",
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": name,
                        "gen_ai.tool.call.id": f"call_{i}",
                        "gen_ai.tool.call.arguments": json.dumps(args),
                        "gen_ai.tool.call.result": result,
                    },
                ):
                    pass
                history.append(
                    {
                        "role": "tool",
                        "parts": [
                            {"type": "tool_call_response", "id": f"call_{i}", "response": result}
                        ],
                    }
                )
        with tracer.start_as_current_span(
            "chat m",
            attributes={
                **model,
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "m",
                "gen_ai.usage.input_tokens": 20,
                "gen_ai.usage.output_tokens": 8,
                "gen_ai.input.messages": json.dumps(history),
                "gen_ai.output.messages": json.dumps([_text("assistant", answer)]),
                **({"gen_ai.response.id": response_id} if response_id else {}),
            },
        ):
            pass
        if error:
            root.set_status(Status(StatusCode.ERROR, "boom"))
        return f"{root.get_span_context().trace_id:032x}"
