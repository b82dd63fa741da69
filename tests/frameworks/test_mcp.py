"""MCP: declarations travel with the tool, results are read the way MCP carries them, enforcement
works on both ends — against a real server and client pair, in process and over stdio, with the
official MCP Python SDK and with fastmcp.

The laws under test: a declared tool's contract round-trips through ``_meta`` and arms the client
exactly as a local declaration does; a malformed declaration from a server is dropped with one
warning and the tool keeps the rest; an output schema describing rows becomes a column declaration
on request; the LUN field case is judged on the client and refused at the server in enforce, the
refusal text reaching the client as an error result; content blocks are never rows; and no garbage
``_meta`` or result shape raises.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sys
import textwrap
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.contracts import read_result
from context_integrity.contracts.meta import (
    META_KEY,
    WARNED,
    columns_from_output_schema,
    read_contract_meta,
)
from context_integrity.contracts.results import judged_value
from context_integrity.telemetry.schema import names
from context_integrity.telemetry.setup import CONTRACTS

try:
    import fastmcp
    import mcp as mcp_sdk
    import mcp.types as mt
    from mcp.server.mcpserver import MCPServer
except ImportError:  # pragma: no cover - CI installs the [mcp] extra, so there this never skips
    if os.environ.get("CI"):
        raise
    pytest.skip("the [mcp] extra is not installed", allow_module_level=True)

from context_integrity.integrations import mcp as ci_mcp

LUN_COLUMNS = {"lun": "number", "host_group": "string", "comment": {"type": "string", "nullable": True}}
GOOD_ROWS = [
    {"lun": 0, "host_group": "vdi-a", "comment": None},
    {"lun": 1, "host_group": "vdi-a", "comment": "x"},
]
LUN_ROWS = [
    {"lun": "", "host_group": "vdi-a", "comment": None},
    {"lun": 1, "host_group": "vdi-a", "comment": None},
]


class Row(BaseModel):
    lun: int
    size_gb: float | None
    measured: dt.date
    healthy: bool
    tags: list[str]


def _sdk_server(rows: list[dict[str, Any]]) -> MCPServer:
    server = MCPServer("storage-sdk", log_level="CRITICAL")

    @server.tool()
    def mcp_lun_mappings(host_group: str) -> list[dict[str, Any]]:
        """The LUN mappings of a host group."""
        return rows

    @server.tool()
    def plain_note() -> str:
        return "nothing declared here"

    @server.tool()
    def disk_rows() -> list[Row]:
        return [Row(lun=0, size_gb=None, measured=dt.date(2026, 1, 2), healthy=True, tags=[])]

    return server


def _fastmcp_server(rows: list[dict[str, Any]]) -> fastmcp.FastMCP:
    server = fastmcp.FastMCP("storage-fastmcp")

    @server.tool
    def mcp_lun_mappings(host_group: str) -> list[dict[str, Any]]:
        """The LUN mappings of a host group."""
        return rows

    @server.tool
    def plain_note() -> str:
        return "nothing declared here"

    @server.tool
    def disk_rows() -> list[Row]:
        return [Row(lun=0, size_gb=None, measured=dt.date(2026, 1, 2), healthy=True, tags=[])]

    return server


def _declare() -> None:
    ci.declare_tool(
        "mcp_lun_mappings",
        result_columns=LUN_COLUMNS,
        arguments_from=["list_host_groups"],
        result_kind="dataset/rows",
    )


async def _list(server: Any) -> list[mt.Tool]:
    if isinstance(server, fastmcp.FastMCP):
        async with fastmcp.Client(server) as client:
            return list(await client.list_tools())
    async with mcp_sdk.Client(server) as client:
        return list((await client.list_tools()).tools)


async def _call(server: Any, name: str, args: dict[str, Any]) -> mt.CallToolResult:
    if isinstance(server, fastmcp.FastMCP):
        async with fastmcp.Client(server) as client:
            # fastmcp's Client.__aenter__ is unannotated (Any); call_tool_mcp returns a CallToolResult
            return cast(mt.CallToolResult, await client.call_tool_mcp(name, args))
    async with mcp_sdk.Client(server) as client:
        return await client.call_tool(name, args)


SERVERS = pytest.mark.parametrize("make_server", [_sdk_server, _fastmcp_server], ids=["mcp-sdk", "fastmcp"])


@SERVERS
async def test_declarations_round_trip_through_meta(telemetry: Telemetry, make_server: Any) -> None:
    telemetry.configure()
    _declare()
    published = CONTRACTS.get("mcp_lun_mappings")
    server = ci_mcp.serve_contracts(make_server(GOOD_ROWS))
    listed = {tool.name: tool for tool in await _list(server)}
    meta = listed["mcp_lun_mappings"].meta
    assert meta is not None
    bag = meta[META_KEY]
    assert bag == {
        "result_columns": {
            "lun": "number",
            "host_group": "string",
            "comment": {"type": "string", "nullable": True},
        },
        "arguments_from": ["list_host_groups"],
        "result_kind": "dataset/rows",
    }
    # a tool without declarations publishes no key
    assert META_KEY not in (listed["plain_note"].meta or {})
    CONTRACTS.forget("mcp_lun_mappings")
    ci_mcp.ingest_tools(listed.values(), server="storage")
    ingested = CONTRACTS.get("mcp_lun_mappings")
    assert ingested is not None and published is not None
    assert ingested.result_columns == published.result_columns
    assert ingested.arguments_from == published.arguments_from
    assert ingested.result_kind == "dataset/rows"
    assert ingested.result_wrapped  # the list result arrives as {"result": [...]}


async def test_a_malformed_declaration_is_dropped_with_one_warning_and_the_tool_still_works(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    telemetry.configure(check_column_types="warn")
    server = MCPServer("foreign", log_level="CRITICAL")
    bad = {
        META_KEY: {"result_columns": {"lun": "integer"}, "arguments_from": ["list_host_groups"], "future": 1}
    }

    @server.tool(meta=bad)
    def mcp_lun_mappings(host_group: str) -> list[dict[str, Any]]:
        return GOOD_ROWS

    WARNED.seen.clear()
    tools = await _list(server)
    with caplog.at_level(logging.WARNING, logger="context_integrity"):
        ci_mcp.ingest_tools(tools, server="foreign")
        ci_mcp.ingest_tools(tools, server="foreign")  # the same bad field again: no second warning
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert (
        "'foreign'" in warnings[0] and "'mcp_lun_mappings'" in warnings[0] and "result_columns" in warnings[0]
    )
    assert "'integer'" in warnings[0]  # the rule broken, in the definition-time assert's own words
    contract = CONTRACTS.get("mcp_lun_mappings")
    assert contract is not None
    assert contract.result_columns is None  # dropped
    assert contract.arguments_from == ("list_host_groups",)  # the rest landed; "future" ignored
    result = await _call(server, "mcp_lun_mappings", {"host_group": "vdi-a"})
    assert not result.is_error


@SERVERS
async def test_an_output_schema_becomes_a_column_declaration_on_request(
    telemetry: Telemetry, make_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    telemetry.configure()
    tools = await _list(make_server(GOOD_ROWS))
    ci_mcp.ingest_tools(tools, server="s")
    assert CONTRACTS.get("disk_rows").result_columns is None  # type: ignore[union-attr]  # not unasked
    with caplog.at_level(logging.INFO, logger="context_integrity"):
        ci_mcp.ingest_tools(tools, server="s", columns_from_output_schema=True)
    columns = {c.name: (c.type, c.nullable) for c in CONTRACTS.get("disk_rows").result_columns or ()}  # type: ignore[union-attr]
    assert columns == {
        "lun": ("number", False),
        "size_gb": ("number", True),
        "measured": ("date", False),
        "healthy": ("boolean", False),
    }
    assert any("'tags'" in r.getMessage() and "undeclared" in r.getMessage() for r in caplog.records)


@SERVERS
async def test_the_lun_field_case_is_judged_on_the_client(telemetry: Telemetry, make_server: Any) -> None:
    telemetry.configure(check_column_types="enforce")
    server = ci_mcp.serve_contracts(make_server(LUN_ROWS))
    _declare()
    listed = await _list(server)
    CONTRACTS.forget("mcp_lun_mappings")
    ci_mcp.ingest_tools(listed, server="storage")  # the client knows only what the server published
    result = await _call(server, "mcp_lun_mappings", {"host_group": "vdi-a"})
    with ci.run("what does vdi-a map?") as agent_run:
        delivered = agent_run.tool_result("mcp_lun_mappings", "c1", result, arguments={"host_group": "vdi-a"})
    assert isinstance(delivered, str) and delivered.startswith("Result rejected")
    assert [f.kind for f in agent_run.findings] == ["column-type-mismatch"]
    tool_span = telemetry.one(names.tool_span_name("mcp_lun_mappings"))
    assert tool_span.attributes is not None
    assert tool_span.attributes[names.RESULT_REFUSED] is True


@SERVERS
async def test_enforce_at_the_server_sends_the_refusal_as_an_error_result(
    telemetry: Telemetry, make_server: Any
) -> None:
    telemetry.configure(check_column_types="enforce")
    _declare()
    server = ci_mcp.enforce(make_server(LUN_ROWS))
    result = await _call(server, "mcp_lun_mappings", {"host_group": "vdi-a"})
    assert result.is_error is True
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith("Result rejected: tool 'mcp_lun_mappings'") and "'lun'" in text
    # clean rows pass through untouched, structured content and all
    clean = await _call(ci_mcp.enforce(make_server(GOOD_ROWS)), "mcp_lun_mappings", {"host_group": "vdi-a"})
    assert not clean.is_error
    assert clean.structured_content == {"result": GOOD_ROWS}


@SERVERS
async def test_warn_at_the_server_passes_the_result_and_records_the_finding(
    telemetry: Telemetry, make_server: Any
) -> None:
    telemetry.configure(check_column_types="warn")
    _declare()
    server = ci_mcp.enforce(make_server(LUN_ROWS))
    result = await _call(server, "mcp_lun_mappings", {"host_group": "vdi-a"})
    assert not result.is_error and result.structured_content == {"result": LUN_ROWS}
    spans = telemetry.named(names.tool_span_name("mcp_lun_mappings"))
    events = [e for s in spans for e in s.events if e.name == names.FINDING_EVENT]
    assert [dict(e.attributes or {})[names.FINDING_KIND] for e in events] == ["column-type-mismatch"]


async def test_content_blocks_are_never_judged_as_rows(telemetry: Telemetry) -> None:
    telemetry.configure(check_column_types="enforce")
    _declare()
    result = await _call(_sdk_server(GOOD_ROWS), "mcp_lun_mappings", {"host_group": "vdi-a"})
    blocks = result.content
    assert blocks and all(isinstance(b, mt.TextContent) for b in blocks)
    assert read_result(blocks).shape == "items"
    assert read_result([b.model_dump() for b in blocks]).shape == "items"
    with ci.run("q") as agent_run:
        delivered = agent_run.tool_result("mcp_lun_mappings", "c1", blocks)
    assert delivered is blocks
    assert agent_run.findings == []
    row = next(r for r in agent_run.ledger() if r.check == "missing-column")
    assert (row.checked, row.findings, row.not_applicable) == (0, 0, 1)


async def test_an_error_result_is_not_applicable(telemetry: Telemetry) -> None:
    telemetry.configure(check_column_types="enforce")
    _declare()
    error = mt.CallToolResult(content=[mt.TextContent(type="text", text="boom")], is_error=True)
    with ci.run("q") as agent_run:
        assert agent_run.tool_result("mcp_lun_mappings", "c1", error) is error
        wire = {"content": [{"type": "text", "text": "boom"}], "isError": True}
        assert agent_run.tool_result("mcp_lun_mappings", "c2", wire) is wire
    row = next(r for r in agent_run.ledger() if r.check == "column-type-mismatch")
    assert (row.checked, row.not_applicable) == (0, 2)


def test_results_reaching_the_model_as_content_blocks_are_ground() -> None:
    from context_integrity.loop import content_text

    result = mt.CallToolResult(content=[mt.TextContent(type="text", text="host group vdi-a-gold")])
    assert "vdi-a-gold" in content_text(result)
    assert "vdi-a-gold" in content_text(list(result.content))


STDIO_SERVER = textwrap.dedent(
    """
    import sys
    from typing import Any
    import context_integrity as ci
    from context_integrity.integrations import mcp as ci_mcp
    from mcp.server.mcpserver import MCPServer

    ci.setup(check_column_types="enforce", recording_path=sys.argv[1])
    ci.declare_tool("mcp_lun_mappings", result_columns={"lun": "number", "host_group": "string"})
    server = MCPServer("stdio-storage", log_level="ERROR")

    @server.tool()
    def mcp_lun_mappings(host_group: str) -> list[dict[str, Any]]:
        return [{"lun": "", "host_group": host_group}]

    ci_mcp.enforce(ci_mcp.serve_contracts(server))
    server.run("stdio")
    """
)


async def test_over_stdio_the_contract_travels_and_the_server_refuses(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    telemetry.configure(check_column_types="enforce")
    script = tmp_path / "server.py"
    script.write_text(STDIO_SERVER)
    env = {**os.environ, "PYTHONPATH": str(Path(ci.__file__).resolve().parents[1])}
    params = mcp_sdk.StdioServerParameters(
        command=sys.executable, args=[str(script), str(tmp_path / "rec.jsonl")], env=env
    )
    async with mcp_sdk.Client(params) as client:
        declared = await ci_mcp.ingest_client(client, server="stdio-storage")
        result = await client.call_tool("mcp_lun_mappings", {"host_group": "vdi-a"})
    assert [c.name for c in declared if c.result_columns] == ["mcp_lun_mappings"]
    assert result.is_error is True
    assert result.content[0].text.startswith("Result rejected")  # type: ignore[union-attr]


# ── nothing a server or a result hands us raises ───────────────────────

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
_bags = st.dictionaries(
    st.sampled_from(["result_columns", "arguments_from", "result_kind", "other"]), _json, max_size=4
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(meta=st.one_of(_json, st.dictionaries(st.just(META_KEY), _bags | _json, max_size=1)), schema=_json)
def test_no_garbage_meta_or_schema_raises(meta: object, schema: object, isolated_contracts: None) -> None:
    read_contract_meta(meta, server="fuzz", tool="t")
    columns_from_output_schema("t", schema)
    ci_mcp.ingest_tools([{"name": "fuzzed", "_meta": meta, "outputSchema": schema}], server="fuzz")
    ci_mcp.ingest_tools([meta, schema], server="fuzz", columns_from_output_schema=True)


@settings(max_examples=300, deadline=None)
@given(
    result=st.one_of(
        _json,
        st.fixed_dictionaries({"content": _json, "structuredContent": _json, "isError": _json}),
        st.builds(
            lambda s: mt.CallToolResult(content=[], structured_content=s),
            st.dictionaries(st.text(max_size=5), _json),
        ),
    ),
    wrapped=st.booleans(),
)
def test_no_result_shape_raises(result: object, wrapped: bool) -> None:
    read_result(judged_value(result, wrapped=wrapped))
