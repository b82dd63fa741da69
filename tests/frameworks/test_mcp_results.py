"""MCP results on the client: every shape a client hands back is judged, one defect is one finding
across client and server, and claims cross the wire. Real servers and clients (the MCP SDK's and
fastmcp's), in process and over stdio.

The laws under test: fastmcp's ``CallToolResult`` (a dataclass: ``structured_content``,
``is_error``, ``data``) is read as the SDK's model and the wire dict are, ``data`` where the
structured content is absent, so ``fastmcp.Client.call_tool()``'s result is judged and refused
like the others (a property holds the three shapes equal); a server that judged a result says so
in its ``_meta`` (the verdict and the findings it filed), and a client whose contract for the tool
is the same records it in its ledger as judged at the server without filing the finding again,
while one whose contract differs files its own and says so; a ``ci.semantic`` envelope a tool
returns travels as structured content marked in ``_meta`` and settles its facts on the client, so
``unsupported-claim`` judges an MCP client's answer as it judges a local tool's.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.contracts import read_result
from context_integrity.contracts.results import judged_value
from context_integrity.telemetry.setup import CONTRACTS

try:
    import fastmcp
    import mcp.types as mt
    from fastmcp.client.client import CallToolResult as FastResult
    from fastmcp.client.transports import StdioTransport
    from mcp.server.mcpserver import MCPServer
except ImportError:  # pragma: no cover - CI installs the [mcp] extra, so there this never skips
    if os.environ.get("CI"):
        raise
    pytest.skip("the [mcp] extra is not installed", allow_module_level=True)

from context_integrity.integrations import mcp as ci_mcp

TOOL = "lun_mappings"
LUN_COLUMNS = {"lun": "number", "host_group": "string"}
LUN_ROWS: list[dict[str, Any]] = [{"lun": "", "host_group": "vdi-a"}, {"lun": 1, "host_group": "vdi-a"}]
SRC = str(Path(ci.__file__).resolve().parents[1])


def _sdk_server() -> MCPServer:
    server = MCPServer("storage-sdk", log_level="CRITICAL")

    @server.tool(name=TOOL)
    def lun_mappings(host_group: str) -> list[dict[str, Any]]:
        return LUN_ROWS

    return server


def _fastmcp_server() -> fastmcp.FastMCP:
    server = fastmcp.FastMCP("storage-fastmcp")

    @server.tool(name=TOOL)
    def lun_mappings(host_group: str) -> list[dict[str, Any]]:
        return LUN_ROWS

    return server


SERVERS = pytest.mark.parametrize("make_server", [_sdk_server, _fastmcp_server], ids=["mcp-sdk", "fastmcp"])


def _row(agent_run: ci.Run, kind: str) -> ci.LedgerRow:
    return next(r for r in agent_run.ledger() if r.check == kind)


# ── 1. every MCP result shape is judged ──────────────────────────────────


@SERVERS
@pytest.mark.parametrize("mode", ["warn", "enforce"])
async def test_fastmcp_clients_own_result_is_judged(
    telemetry: Telemetry, make_server: Any, mode: str
) -> None:
    telemetry.configure(check_column_types=mode)
    server = ci_mcp.serve_contracts(make_server())
    ci.declare_tool(TOOL, result_columns=LUN_COLUMNS)
    async with fastmcp.Client(server) as client:
        listed = await client.list_tools()
        CONTRACTS.forget(TOOL)
        ci_mcp.ingest_tools(listed, server="storage")  # the client knows only what the server published
        result = await client.call_tool(TOOL, {"host_group": "vdi-a"})
    assert isinstance(result, FastResult)  # fastmcp's dataclass, not the SDK's model
    with ci.run("what does vdi-a map?") as agent_run:
        delivered = agent_run.tool_result(TOOL, "c1", result, arguments={"host_group": "vdi-a"})
    assert [f.kind for f in agent_run.findings] == ["column-type-mismatch"]
    if mode == "enforce":
        assert isinstance(delivered, str) and delivered.startswith("Result rejected")
    else:
        assert delivered is result


STDIO_SERVER = textwrap.dedent(
    f"""
    from typing import Any
    import context_integrity as ci
    from context_integrity.integrations import mcp as ci_mcp
    from mcp.server.mcpserver import MCPServer

    ci.declare_tool({TOOL!r}, result_columns={LUN_COLUMNS!r})
    server = MCPServer("stdio-storage", log_level="ERROR")

    @server.tool()
    def {TOOL}(host_group: str) -> list[dict[str, Any]]:
        return {LUN_ROWS!r}

    ci_mcp.serve_contracts(server)
    server.run("stdio")
    """
)


async def test_over_stdio_fastmcp_clients_result_is_refused_in_enforce(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    telemetry.configure(check_column_types="enforce")
    script = tmp_path / "server.py"
    script.write_text(STDIO_SERVER)
    transport = StdioTransport(sys.executable, [str(script)], env={**os.environ, "PYTHONPATH": SRC})
    async with fastmcp.Client(transport) as client:
        await ci_mcp.ingest_client(client)
        result = await client.call_tool(TOOL, {"host_group": "vdi-a"})
    with ci.run("q") as agent_run:
        delivered = agent_run.tool_result(TOOL, "c1", result)
    assert isinstance(delivered, str) and delivered.startswith(f"Result rejected: tool '{TOOL}'")


def test_fastmcp_data_is_judged_where_structured_content_is_absent() -> None:
    columns = ci.declare_tool("parsed_only", result_columns=LUN_COLUMNS).result_columns
    assert columns is not None
    parsed = FastResult(content=[], structured_content=None, meta=None, data=LUN_ROWS)
    reading = read_result(judged_value(parsed, wrapped=True))  # data is already unwrapped
    assert reading.is_rowset and reading.row_count == 2
    error = FastResult(content=[], structured_content=None, meta=None, data=LUN_ROWS, is_error=True)
    assert read_result(judged_value(error, wrapped=True)).shape == "other"
    CONTRACTS.forget("parsed_only")


_cells = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=6), st.floats(allow_nan=True))
_rows = st.lists(st.dictionaries(st.sampled_from(["lun", "host_group", "x"]), _cells, max_size=3), max_size=4)
_structured = st.one_of(
    st.none(),
    _rows.map(lambda rows: {"result": rows}),
    st.dictionaries(st.text(max_size=5), _cells, max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(structured=_structured, is_error=st.booleans(), wrapped=st.booleans())
def test_the_three_shapes_of_one_result_read_alike(
    structured: dict[str, Any] | None, is_error: bool, wrapped: bool
) -> None:
    blocks: list[mt.ContentBlock] = [mt.TextContent(type="text", text="rows")]
    sdk = mt.CallToolResult(content=blocks, structured_content=structured, is_error=is_error)
    wire = sdk.model_dump(by_alias=True, exclude_none=True)
    wire.setdefault("isError", is_error)
    fast = FastResult(content=list(blocks), structured_content=structured, meta=None, is_error=is_error)
    readings = [read_result(judged_value(shape, wrapped=wrapped)) for shape in (sdk, wire, fast)]
    assert readings[0] == readings[1] == readings[2]
    if is_error or structured is None:
        assert readings[0].shape == "other"  # not-applicable, for each of the three alike


@settings(max_examples=200, deadline=None)
@given(rows=_rows, is_error=st.booleans())
def test_fastmcp_data_reads_as_the_structured_content_it_was_parsed_from(
    rows: list[dict[str, object]], is_error: bool
) -> None:
    sdk = mt.CallToolResult(content=[], structured_content={"result": rows}, is_error=is_error)
    parsed = FastResult(content=[], structured_content=None, meta=None, data=rows, is_error=is_error)
    assert read_result(judged_value(parsed, wrapped=True)) == read_result(judged_value(sdk, wrapped=True))


def test_a_dataclass_that_is_no_mcp_result_is_itself() -> None:
    @dataclasses.dataclass
    class Row:
        content: str
        is_error: bool

    row = Row("x", False)
    assert judged_value(row) is row
    assert judged_value([row]) == [row]
