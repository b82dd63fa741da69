"""LangChain's MCP adapter, offline: a real MCP SDK server over stdio, the real adapter, a scripted model.

The adapter requires the MCP SDK's 1.x line, which cannot be installed beside the 2.x line the rest of
the suite uses: this directory is collected only where mcp 1.x is installed (``tests/conftest.py``),
and ``.ci/run`` runs it in a second environment made for it.

The laws under test: a tool ``load_mcp_tools`` made arms the checks from the declarations its server
published in ``_meta`` (nothing is declared in this process, no ingest call is written), under the
LangChain name the model calls, prefixed or not; the rows are judged in the structured content, not
in the text LangChain makes of the content blocks; warn files the finding on the tool span and hands
the model the rows; enforce hands the model the refusal sentence as the tool's result; a malformed
declaration is warned about once and the tool still works; a server enforcing on its own side (SDK
1.x, no middleware) sends the refusal as an error result, which the model reads.
NEUTRALIZE-PROOFS: not declaring adapter tools in ``declare_tools`` leaves the LUN tests without a
finding; judging the artifact as it comes (``{"structured_content": ...}``) does too (no rowset).
"""

from __future__ import annotations

import logging
import os
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.contracts import read_result
from context_integrity.contracts.meta import META_KEY, WARNED
from context_integrity.contracts.results import judged_value
from context_integrity.telemetry.schema import names
from context_integrity.telemetry.setup import CONTRACTS

try:
    import mcp.types as mt
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_mcp_adapters.tools import load_mcp_tools
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
except ImportError:  # pragma: no cover - collected only beside mcp 1.x, where CI installs the adapter
    if os.environ.get("CI"):
        raise
    pytest.skip("the [langchain-mcp] extra is not installed", allow_module_level=True)

from opentelemetry.trace import StatusCode
from tests.frameworks.test_langchain import QUESTION, ScriptedModel, call, kinds, scripted, tool_messages

from context_integrity.integrations import langchain as integration
from context_integrity.integrations import mcp as ci_mcp

TOOL = "mcp_lun_mappings"
LUN_ROWS = [{"logical_unit_number": ""}, {"logical_unit_number": 3}]
LUN_COLUMNS = {"logical_unit_number": "number"}
FOREIGN_META = {
    META_KEY: {"result_columns": {"logical_unit_number": "integer"}, "result_kind": "dataset/rows"}
}

SERVER = textwrap.dedent(
    f"""
    import sys
    from typing import Any
    import context_integrity as ci
    from context_integrity.integrations import mcp as ci_mcp
    from mcp.server.fastmcp import FastMCP

    ci.setup(check_column_types=sys.argv[2], recording_path=sys.argv[1])
    ci.declare_tool({TOOL!r}, result_columns={LUN_COLUMNS!r})
    ci.declare_tool("mcp_host_paths", arguments_from=[{TOOL!r}], result_kind="dataset/rows")
    server = FastMCP("storage", log_level="ERROR")

    @server.tool()
    def {TOOL}(host_group: str) -> list[dict[str, Any]]:
        \"\"\"The LUN mappings of a host group.\"\"\"
        return {LUN_ROWS!r}

    @server.tool()
    def mcp_host_paths(logical_unit_number: int) -> str:
        return "path a"

    @server.tool(meta={FOREIGN_META!r})
    def foreign_luns(host_group: str) -> list[dict[str, Any]]:
        return {LUN_ROWS!r}

    ci_mcp.enforce(ci_mcp.serve_contracts(server))
    server.run("stdio")
    """
)


@pytest.fixture
def armed(telemetry: Telemetry) -> Iterator[Telemetry]:
    integration.instrument_all()
    yield telemetry
    integration.uninstrument_all()


@asynccontextmanager
async def served(tmp_path: Path, server_mode: str = "warn") -> AsyncIterator[ClientSession]:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    env = {**os.environ, "PYTHONPATH": str(Path(ci.__file__).resolve().parents[1])}
    params = StdioServerParameters(
        command=sys.executable, args=[str(script), str(tmp_path / "rec.jsonl"), server_mode], env=env
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def _ask(session: ClientSession, tool: str = TOOL, **load: Any) -> tuple[ScriptedModel, ToolMessage]:
    tools = await load_mcp_tools(session, **load)
    model = scripted(call(tool, {"host_group": "vdi-a"}, "call_lun"), AIMessage(content="done"))
    result = await create_agent(model, tools=tools).ainvoke({"messages": QUESTION})
    assert result["messages"][-1].content == "done"
    (delivered,) = tool_messages(model.received[1])
    assert delivered.tool_call_id == "call_lun"
    return model, delivered


def _text(message: ToolMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(block["text"] if isinstance(block, dict) else str(block) for block in content)


async def test_warn_the_published_contract_arms_the_check_and_the_model_gets_the_rows(
    armed: Telemetry, tmp_path: Path
) -> None:
    armed.configure(check_column_types="warn")
    assert CONTRACTS.get(TOOL) is None, "the declaration must come from the server"
    async with served(tmp_path) as session:
        _, delivered = await _ask(session)
    assert delivered.status == "success"
    assert '"logical_unit_number": ""' in _text(delivered), "warn hands over the rows"
    span = armed.one(names.tool_span_name(TOOL))
    assert kinds(span) == ["column-type-mismatch"]
    assert dict(span.attributes or {})[names.GEN_AI_TOOL_CALL_ID] == "call_lun"
    assert span.status.status_code is not StatusCode.ERROR


async def test_enforce_hands_the_model_the_refusal_as_the_tool_result_and_no_rows(
    armed: Telemetry, tmp_path: Path
) -> None:
    armed.configure(check_column_types="enforce")
    async with served(tmp_path) as session:
        model, delivered = await _ask(session)
    read = _text(delivered)
    assert delivered.status == "success", "a refusal is the tool's result, not an error to retry"
    assert read.startswith(f"Result rejected: tool {TOOL!r}") and read.endswith("No data was returned.")
    assert "logical_unit_number" in read and '"logical_unit_number": 3' not in read
    assert delivered.artifact is None, "the structured rows do not ride along either"
    assert len(model.received) == 2
    span = armed.one(names.tool_span_name(TOOL))
    assert kinds(span) == ["column-type-mismatch"]
    assert span.status.status_code is StatusCode.ERROR


async def test_declarations_round_trip_under_the_prefixed_name_the_model_calls(
    armed: Telemetry, tmp_path: Path
) -> None:
    armed.configure(check_column_types="warn")
    prefixed = f"storage_{TOOL}"
    async with served(tmp_path) as session:
        tools = await load_mcp_tools(session, server_name="storage", tool_name_prefix=True)
        create_agent(scripted(AIMessage(content="done")), tools=tools)  # armed at creation: no call
        lun = CONTRACTS.get(prefixed)
        paths = CONTRACTS.get("storage_mcp_host_paths")
        assert lun is not None and paths is not None
        assert {c.name: c.type for c in lun.result_columns or ()} == LUN_COLUMNS
        assert lun.result_wrapped, "the SDK wraps a list result as {'result': [...]}"
        assert paths.arguments_from == (TOOL,) and paths.result_kind == "dataset/rows"
        assert CONTRACTS.get(TOOL) is None, "declared under the name the model calls, only"
        _, delivered = await _ask(session, prefixed, server_name="storage", tool_name_prefix=True)
        declared = await ci_mcp.ingest_client(session, server="storage")  # the explicit call, on 1.x
    assert delivered.status == "success"
    assert kinds(armed.one(names.tool_span_name(prefixed))) == ["column-type-mismatch"]
    assert [c.name for c in declared if c.result_columns] == [TOOL]


def test_the_sdk_1x_call_tool_result_is_judged_on_its_structured_content() -> None:
    """SDK 1.x models name their fields as the wire does (``structuredContent``, ``isError``)."""
    listed = mt.CallToolResult(
        content=[mt.TextContent(type="text", text="rows")],
        structuredContent={"result": LUN_ROWS},
        isError=False,
    )
    assert read_result(judged_value(listed, wrapped=True)).rows == tuple(LUN_ROWS)
    failed = mt.CallToolResult(content=[], structuredContent={"result": LUN_ROWS}, isError=True)
    assert read_result(judged_value(failed, wrapped=True)).shape == "other"


async def test_a_malformed_declaration_is_warned_about_once_and_the_tool_still_works(
    armed: Telemetry, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    armed.configure(check_column_types="enforce")
    WARNED.seen.clear()
    with caplog.at_level(logging.WARNING, logger="context_integrity"):
        async with served(tmp_path) as session:
            for _ in range(2):
                _, delivered = await _ask(session, "foreign_luns", server_name="foreign")
                assert delivered.status == "success"
                assert '"logical_unit_number": 3' in _text(delivered), "undeclared columns: rows pass"
    dropped = [r.getMessage() for r in caplog.records if "dropped the declaration" in r.getMessage()]
    assert len(dropped) == 1
    assert "'foreign'" in dropped[0] and "'foreign_luns'" in dropped[0] and "'integer'" in dropped[0]
    contract = CONTRACTS.get("foreign_luns")
    assert contract is not None and contract.result_columns is None
    assert contract.result_kind == "dataset/rows", "the rest of the contract landed"
    assert all(kinds(s) == [] for s in armed.named(names.tool_span_name("foreign_luns")))


async def test_a_server_enforcing_on_its_side_sends_the_refusal_the_model_reads(
    armed: Telemetry, tmp_path: Path
) -> None:
    armed.configure(check_column_types="warn")
    async with served(tmp_path, server_mode="enforce") as session:
        _, delivered = await _ask(session)
    read = _text(delivered)
    assert delivered.status == "error", "the server's refusal arrives as an MCP error result"
    assert read.startswith(f"Result rejected: tool {TOOL!r}") and '"logical_unit_number": 3' not in read
    span = armed.one(names.tool_span_name(TOOL))
    assert span.status.status_code is StatusCode.ERROR
