"""Agents calling a tool over MCP, rebuilt as the framework recorded the run.

``mcp_harness.py`` runs OpenAI Agents SDK agents whose tool lives on a real local MCP
server (``mcp_server.py``), traced by OpenInference or OpenLLMetry, with the MCP SDK's own
client and server spans in the same traces. Each call must come out once (the
framework's tool span, not the MCP SDK's ``tools/call`` SERVER span, which is an
``execute_tool`` too), and the call the server failed must be flagged failed although
both instrumentations record its tool span as a success: the server's span inside it
says so. (ADK's ``McpToolset`` and Strands' ``MCPClient`` run in their own harnesses'
``mcp_tools`` scenarios.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conv_helpers import imported, run_harness, run_view

import mcp_harness
from tracescore.model import Invocation

HARNESS = Path(mcp_harness.__file__)


@pytest.fixture(scope="module", params=mcp_harness.INSTRUMENTATIONS)
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    instrumentation: str = request.param
    return run_harness(HARNESS, tmp_path_factory.mktemp(f"mcp-{instrumentation}"), instrumentation)


def _view(inv: Invocation) -> dict[str, Any]:
    """``run_view`` with each result as its text.

    The instrumentations record the MCP content item (``{"type": "text", "text": …}``)
    where the SDK hands the model a list of ``input_text`` blocks: the same text.
    """
    view = run_view(inv, authors=True)
    for call in view["calls"]:
        result = call["result"]
        if isinstance(result, dict) and result.get("type") == "text":
            call["result"] = result["text"]
    return view


def _served_calls(path: Path) -> int:
    """How many ``tools/call`` SERVER spans (``execute_tool``) the MCP SDK wrote there."""
    count = 0
    for line in path.read_text().splitlines():
        for block in json.loads(line).get("resourceSpans", []):
            for scope in block["scopeSpans"]:
                for span in scope["spans"]:
                    attrs = {a["key"]: a["value"].get("stringValue") for a in span["attributes"]}
                    if attrs.get("gen_ai.operation.name") == "execute_tool" and (
                        attrs.get("mcp.method.name") == "tools/call"
                    ):
                        count += 1
    return count


@pytest.mark.parametrize("scenario", list(mcp_harness.SCRIPTS))
def test_each_mcp_call_counts_once_and_a_server_failure_is_flagged(
    recorded: Path, scenario: str
) -> None:
    expected = json.loads((recorded / "expected.json").read_text())[scenario]
    ours = imported(recorded / f"{scenario}.jsonl")  # the MCP session's own traces: none
    assert [_view(i) for i in ours] == expected
    [inv] = ours
    assert _served_calls(recorded / f"{scenario}.jsonl") == len(inv.tool_calls) == 2
    assert inv.status == "ok", inv.reason
    assert inv.warnings == ()
    assert [c.error for c in inv.tool_calls if c.error] == ["tool_error"]
