"""OpenAI Agents SDK runs calling a tool served over MCP, traced, recorded as OTLP JSON Lines.

The agent reaches ``mcp_server``'s ``forecast`` tool through the SDK's
``MCPServerStreamableHttp``; its model is the real ``openai`` client against
:class:`fake_openai.FakeOpenAI` (Responses API). The run is traced by OpenInference's
instrumentation (default) or OpenLLMetry's (``openllmetry`` argument), and the MCP SDK
traces its own client and server spans of each call into the global tracer provider,
here the recorder's. Run in a child process (the instrumentations patch the SDK
process-wide)::

    python mcp_harness.py [openinference|openllmetry] OUT_DIR

writes ``<scenario>.jsonl`` and ``expected.json``: each run as the SDK recorded it
(``openai_agents_harness.view``), each call flagged ``failed`` when the server reported
an error (what the SDK handed the model says so).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import openai
from agents import Agent, Model, OpenAIResponsesModel, Runner
from agents.mcp import MCPServerStreamableHttp
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry import trace
from opentelemetry.instrumentation.openai_agents import (
    OpenAIAgentsInstrumentor as OpenLLMetryAgentsInstrumentor,
)

import mcp_server
from fake_openai import MODEL, FakeOpenAI
from openai_agents_harness import Call, Turn, _agents, _responses_body, view
from recording import Recorder

INSTRUMENTATIONS = ("openinference", "openllmetry")
#: What the MCP SDK's server answers for a tool that raised.
SERVER_ERROR = "Error executing tool forecast"

SCRIPTS: dict[str, list[Turn]] = {
    # Parallel calls, the second failing on the server.
    "parallel_calls": [
        [
            Call("forecast", {"city": "Lisbon", "days": 2}, "m1"),
            Call("forecast", {"city": "Atlantis", "days": 1}, "m2"),
        ],
        ["Lisbon: sunny in two days. Atlantis has no forecast."],
    ],
    # One call that fails, then one that succeeds, in consecutive turns.
    "failed_then_retried": [
        [Call("forecast", {"city": "Atlantis", "days": 1}, "r1")],
        [Call("forecast", {"city": "Lisbon", "days": 1}, "r2")],
        ["No forecast for Atlantis; Lisbon is sunny tomorrow."],
    ],
}
PROMPTS = {
    "parallel_calls": "Forecasts for Lisbon in 2 days and Atlantis tomorrow?",
    "failed_then_retried": "Forecast for Atlantis tomorrow, else Lisbon?",
}


def _text(result: Any) -> str:
    """The text the SDK handed the model for an MCP tool's result (a list of blocks)."""
    if isinstance(result, list):
        return "".join(str(block.get("text", "")) for block in result)
    return str(result)


async def _run(name: str, model: Model, url: str) -> dict[str, Any]:
    async with MCPServerStreamableHttp(params={"url": url}, name="forecasts") as server:
        agent = Agent(
            name="forecaster", instructions="Use the tools.", mcp_servers=[server], model=model
        )
        result = await Runner.run(agent, PROMPTS[name])
    run = {"agents": _agents(result), **view(result)}
    for call in run["calls"]:
        call["result"] = _text(call["result"])
        call["failed"] = call["result"] == SERVER_ERROR
    return run


async def main(instrumentation: str, out_dir: Path) -> None:
    recorder = Recorder()
    trace.set_tracer_provider(recorder.provider)  # the MCP SDK traces into the global one
    if instrumentation == "openllmetry":
        OpenLLMetryAgentsInstrumentor().instrument(tracer_provider=recorder.provider)
    else:
        OpenAIAgentsInstrumentor().instrument(
            tracer_provider=recorder.provider, exclusive_processor=True
        )
    url = mcp_server.url()
    expected = {}
    for name, turns in SCRIPTS.items():
        bodies = [_responses_body(turn, i) for i, turn in enumerate(turns)]
        with FakeOpenAI(bodies) as fake:
            client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="test", max_retries=0)
            model = OpenAIResponsesModel(model=MODEL, openai_client=client)
            expected[name] = [await _run(name, model, url)]
            await client.close()
        recorder.write(out_dir / f"{name}.jsonl")
    (out_dir / "expected.json").write_text(json.dumps(expected, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2])))
