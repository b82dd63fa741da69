"""The Agents SDK's MCP servers, offline: a real MCP SDK server over stdio, the SDK's ScriptedModel.

The laws under test: a tool listed from an MCP server arms the checks from the declarations its
``_meta`` carried (nothing is declared in this process); the rows are judged from the
``CallToolResult``'s structured content, not the text the SDK makes of it; warn files the finding
on the tool span and leaves the model's text alone; enforce makes the model read the refusal.
NEUTRALIZE-PROOFS: not ingesting in ``to_function_tool`` leaves both tests without a finding;
judging the SDK's text instead of the kept result does too (the text is no rowset).
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.telemetry.schema import names
from context_integrity.telemetry.setup import CONTRACTS

if os.environ.get("CI"):
    import agents  # noqa: F401
    import mcp  # noqa: F401
else:
    pytest.importorskip("agents")
    pytest.importorskip("mcp")

from agents import Agent, Runner, set_trace_processors
from agents.mcp import MCPServerStdio, MCPServerStdioParams
from agents.testing import ScriptedModel, assistant_message, function_call

from context_integrity.integrations import openai_agents

set_trace_processors([])
os.environ.setdefault("OPENAI_API_KEY", "sk-offline-never-used")

TOOL = "mcp_lun_mappings"
SERVER = textwrap.dedent(
    """
    import sys
    from typing import Any
    import context_integrity as ci
    from context_integrity.integrations import mcp as ci_mcp
    from mcp.server.mcpserver import MCPServer

    ci.setup(recording_path=sys.argv[1])
    ci.declare_tool("mcp_lun_mappings", result_columns={"lun": "number", "host_group": "string"})
    server = MCPServer("storage", log_level="ERROR")

    @server.tool()
    def mcp_lun_mappings(host_group: str) -> list[dict[str, Any]]:
        return [{"lun": "", "host_group": host_group}, {"lun": 1, "host_group": host_group}]

    ci_mcp.serve_contracts(server)
    server.run("stdio")
    """
)


@pytest.fixture
def armed(telemetry: Telemetry) -> Iterator[Telemetry]:
    openai_agents.instrument_all()
    yield telemetry
    openai_agents.uninstrument_all()


async def _run(telemetry: Telemetry, mode: str, tmp_path: Path) -> tuple[ScriptedModel, Any]:
    telemetry.configure(check_column_types=mode)
    assert CONTRACTS.get(TOOL) is None, "the declaration must come from the server"
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    env = {**os.environ, "PYTHONPATH": str(Path(ci.__file__).resolve().parents[1])}
    params: MCPServerStdioParams = {
        "command": sys.executable,
        "args": [str(script), str(tmp_path / "rec.jsonl")],
        "env": env,
    }
    model = ScriptedModel(
        [[function_call(TOOL, {"host_group": "vdi-a"}, call_id="call_lun")], [assistant_message("mapped")]]
    )
    async with MCPServerStdio(params, name="storage", client_session_timeout_seconds=30) as server:
        agent = Agent(name="storage", instructions="Map the LUNs.", model=model, mcp_servers=[server])
        result = await Runner.run(agent, "Which LUNs does vdi-a see?")
    return model, result


def _read(model: ScriptedModel) -> str:
    for item in model.calls[1].input:
        data = item if isinstance(item, dict) else item.model_dump()
        if data.get("type") == "function_call_output" and data["call_id"] == "call_lun":
            return str(data["output"])
    raise AssertionError("the model never read the call's output")


def _findings(telemetry: Telemetry) -> list[tuple[str, dict[str, Any]]]:
    return [
        (s.name, dict(e.attributes or {}))
        for s in telemetry.finished()
        for e in s.events
        if e.name == names.FINDING_EVENT
    ]


async def test_warn_the_served_contract_arms_the_check_on_the_structured_rows(
    armed: Telemetry, tmp_path: Path
) -> None:
    model, result = await _run(armed, "warn", tmp_path)
    assert result.final_output == "mapped"
    assert '"lun": ""' in _read(model), "warn leaves the SDK's text alone"
    ((span_name, finding),) = _findings(armed)
    assert span_name == names.tool_span_name(TOOL)
    assert finding[names.FINDING_KIND] == "column-type-mismatch"
    assert finding[names.GEN_AI_TOOL_CALL_ID] == "call_lun"


async def test_enforce_the_model_reads_the_refusal_and_no_rows(armed: Telemetry, tmp_path: Path) -> None:
    model, result = await _run(armed, "enforce", tmp_path)
    assert result.final_output == "mapped"
    read = _read(model)
    assert TOOL in read and "vdi-a" not in read
    ((_, finding),) = _findings(armed)
    assert finding[names.FINDING_KIND] == "column-type-mismatch"
    assert len(model.calls) == 2, "a refusal is the result, not a retry prompt"
