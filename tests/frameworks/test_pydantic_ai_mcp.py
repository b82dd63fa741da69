"""pydantic-ai's MCP toolset, offline: a real MCP server (the MCP SDK's and fastmcp's, in process;
the SDK's over stdio) behind ``pydantic_ai.mcp.MCPToolset``, pydantic-ai's scripted FunctionModel.

The laws under test: the tools of a run's MCP toolset are ingested before the run opens, from
their ``_meta`` alone (nothing is declared in this process), and arm the checks exactly as a local
declaration does; the rows are judged on the raw ``CallToolResult``'s structured content, never on
what pydantic-ai made of it, so content blocks are never rows; warn files the finding on
pydantic-ai's ``execute_tool`` span (ours when its instrumentation is off) and hands the rows over;
enforce hands the model the refusal sentence as the call's result; a malformed ``_meta`` is warned
about once and the tool still works.
NEUTRALIZE-PROOFS: not ingesting at the run's start leaves the LUN tests without a finding; judging
the value pydantic-ai made instead of the kept result finds (and refuses) the rows the
content-blocks test hands over as text.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.telemetry.schema import names
from context_integrity.telemetry.setup import CONTRACTS

try:
    import fastmcp
    import mcp.types as mt
    from fastmcp.client.transports import StdioTransport
    from fastmcp.tools import ToolResult
    from mcp.server.mcpserver import MCPServer
    from pydantic_ai.mcp import MCPToolset
except ImportError:  # pragma: no cover - CI installs pydantic-ai and the [mcp] extra
    if os.environ.get("CI"):
        raise
    pytest.skip("pydantic-ai's MCP toolset or the [mcp] extra is not installed", allow_module_level=True)

from tests.frameworks.test_pydantic_ai import (
    Script,
    all_findings,
    attrs,
    call,
    instrumented,
    is_pydantic_ai,
    operation,
    returns,
    text,
)

from context_integrity.contracts.meta import META_KEY, WARNED
from context_integrity.integrations import mcp as ci_mcp
from context_integrity.integrations import pydantic_ai as integration
from context_integrity.integrations._pydantic_ai_mcp import Kept, judged_result

TOOL = "lun_mappings"
BLOCKS_TOOL = "lun_blocks"
CHART_TOOL = "lun_chart"
WRAPPED_ROWS = {
    "type": "object",
    "properties": {"result": {"type": "array", "items": {"type": "object"}}},
    "required": ["result"],
}
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
LUN_COLUMNS = {"logical_unit_number": "number", "host_group": "string"}
LUN_ROWS: list[dict[str, Any]] = [
    {"logical_unit_number": "", "host_group": "vdi-a"},
    {"logical_unit_number": 3, "host_group": "vdi-a"},
]


def _served_meta() -> dict[str, Any]:
    """The ``_meta`` a server publishes for the declared tool, declared here only to build it."""
    ci.declare_tool(TOOL, result_columns=LUN_COLUMNS)
    meta = ci_mcp.tool_meta(TOOL)
    CONTRACTS.forget(TOOL)  # the client side knows only what the server published
    assert meta is not None
    return meta


def _blocks() -> list[mt.TextContent]:
    return [mt.TextContent(type="text", text=json.dumps(row)) for row in LUN_ROWS]


def _sdk_server(meta: dict[str, Any]) -> MCPServer:
    server = MCPServer("storage-sdk", log_level="CRITICAL")

    @server.tool(name=TOOL, meta=meta)
    def lun_mappings(host_group: str) -> list[dict[str, Any]]:
        return LUN_ROWS

    @server.tool(name=BLOCKS_TOOL, meta={META_KEY: {"result_columns": LUN_COLUMNS}}, structured_output=False)
    def lun_blocks(host_group: str) -> list[mt.TextContent]:
        return _blocks()

    return server


def _fastmcp_server(meta: dict[str, Any]) -> fastmcp.FastMCP:
    server = fastmcp.FastMCP("storage-fastmcp")

    @server.tool(name=TOOL, meta=meta)
    def lun_mappings(host_group: str) -> list[dict[str, Any]]:
        return LUN_ROWS

    @server.tool(name=BLOCKS_TOOL, meta={META_KEY: {"result_columns": LUN_COLUMNS}}, output_schema=None)
    def lun_blocks(host_group: str) -> list[mt.TextContent]:
        return _blocks()

    @server.tool(name=CHART_TOOL, meta=meta, output_schema=WRAPPED_ROWS)
    def lun_chart(host_group: str) -> ToolResult:
        # Rows and a chart: pydantic-ai hands the model the blocks, the rows stay structured.
        return ToolResult(
            content=[
                mt.TextContent(type="text", text="two LUNs"),
                mt.ImageContent(type="image", data=PNG, mime_type="image/png"),
            ],
            structured_content={"result": LUN_ROWS},
        )

    return server


SERVERS = pytest.mark.parametrize("make_server", [_sdk_server, _fastmcp_server], ids=["mcp-sdk", "fastmcp"])
Make = Callable[[dict[str, Any]], Any]


@pytest.fixture
def armed(telemetry: Telemetry) -> Iterator[Telemetry]:
    yield telemetry
    integration.uninstrument_all()


def _agent(toolset: Any, script: Script, telemetry: Telemetry, *, host_spans: bool = True) -> Any:
    from pydantic_ai import Agent

    agent: Any = Agent(script.model(), name="storage", toolsets=[toolset])
    if host_spans:
        agent.instrument = instrumented(telemetry)
    return agent


def _lun_script(tool: str = TOOL) -> Script:
    return Script.of(call(tool, "call_lun", host_group="vdi-a"), text("vdi-a maps two LUNs."))


def _delivered(script: Script) -> Any:
    (delivered,) = returns(script.received[1])
    assert delivered.tool_call_id == "call_lun"
    return delivered


def _ledger_row(telemetry: Telemetry, kind: str, count: str) -> object:
    (summary,) = telemetry.summaries()
    return attrs(summary).get(names.row_attribute(kind, "write", count))


# ── in process ───────────────────────────────────────────────────────────


@SERVERS
async def test_warn_the_served_declaration_arms_the_check_and_the_rows_go_through(
    armed: Telemetry, make_server: Make
) -> None:
    armed.configure(check_column_types="warn")
    script = _lun_script()
    result = await _agent(MCPToolset(make_server(_served_meta())), script, armed).run("Map vdi-a.")
    assert result.output == "vdi-a maps two LUNs."
    assert _delivered(script).content == LUN_ROWS  # warn hands the rows over as pydantic-ai made them
    ((span, finding),) = all_findings(armed)
    assert is_pydantic_ai(span) and attrs(span)[names.GEN_AI_OPERATION_NAME] == names.OPERATION_EXECUTE_TOOL
    assert finding[names.FINDING_KIND] == "column-type-mismatch"
    assert finding[names.GEN_AI_TOOL_NAME] == TOOL
    assert finding[names.GEN_AI_TOOL_CALL_ID] == "call_lun"
    assert len(operation(armed, names.OPERATION_EXECUTE_TOOL)) == 1  # no span of ours beside the host's
    ingested = CONTRACTS.get(TOOL)
    assert ingested is not None and ingested.result_wrapped  # the list result arrives as {"result": [...]}
    assert {c.name: c.type for c in ingested.result_columns or ()} == LUN_COLUMNS


@SERVERS
async def test_enforce_the_model_reads_the_refusal_as_the_calls_result_and_no_rows(
    armed: Telemetry, make_server: Make
) -> None:
    armed.configure(check_column_types="enforce")
    script = _lun_script()
    await _agent(MCPToolset(make_server(_served_meta())), script, armed).run("Map vdi-a.")
    delivered = _delivered(script)
    assert delivered.outcome == "success" and len(script.received) == 2  # the result, not a retry prompt
    assert isinstance(delivered.content, str) and delivered.content.startswith("Result rejected")
    assert "vdi-a" not in delivered.content and "logical_unit_number" in delivered.content
    ((span, finding),) = all_findings(armed)
    assert is_pydantic_ai(span) and finding[names.FINDING_KIND] == "column-type-mismatch"
    assert attrs(span)[names.ERROR_TYPE] == names.ERROR_RESULT_REJECTED


HOLDINGS = ["run toolsets=", "MCP capability", "prefixed", "renamed"]


@pytest.mark.parametrize("how", HOLDINGS)
async def test_every_way_the_run_holds_the_toolset_is_ingested_under_the_name_the_model_calls(
    armed: Telemetry, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import MCP

    armed.configure(check_column_types="enforce")
    toolset = MCPToolset(_sdk_server(_served_meta()))
    public = {"prefixed": f"storage_{TOOL}", "renamed": "luns"}.get(how, TOOL)
    script = _lun_script(public)
    held = {"prefixed": toolset.prefixed("storage"), "renamed": toolset.renamed({"luns": TOOL})}
    capabilities = [MCP(local=toolset)] if how == "MCP capability" else []
    agent: Any = Agent(script.model(), capabilities=capabilities)
    agent.instrument = instrumented(armed)
    with caplog.at_level(logging.WARNING, logger="context_integrity"):
        await agent.run("Map vdi-a.", toolsets=[] if capabilities else [held.get(how, toolset)])
    delivered = _delivered(script)
    assert isinstance(delivered.content, str)
    assert delivered.content.startswith(f"Result rejected: tool '{public}'")
    ((_, finding),) = all_findings(armed)
    assert finding[names.GEN_AI_TOOL_NAME] == public
    assert not [r for r in caplog.records if "not offered" in r.getMessage()]


async def test_without_pydantic_ais_instrumentation_the_finding_is_on_our_tool_span(
    armed: Telemetry,
) -> None:
    armed.configure(check_column_types="warn")
    script = _lun_script()
    await _agent(MCPToolset(_sdk_server(_served_meta())), script, armed, host_spans=False).run("Map vdi-a.")
    ((span, finding),) = all_findings(armed)
    assert span.name == names.tool_span_name(TOOL) and not is_pydantic_ai(span)
    assert finding[names.GEN_AI_TOOL_CALL_ID] == "call_lun"


@SERVERS
async def test_content_blocks_are_never_judged_as_rows(armed: Telemetry, make_server: Make) -> None:
    armed.configure(check_column_types="enforce")
    script = _lun_script(BLOCKS_TOOL)
    await _agent(MCPToolset(make_server(_served_meta())), script, armed).run("Map vdi-a.")
    # pydantic-ai parses each JSON text block, so the model reads what looks like LUN rows; they
    # are text the server sent, not a rowset it declared: nothing is refused, nothing found.
    assert _delivered(script).content == LUN_ROWS
    assert all_findings(armed) == []
    assert _ledger_row(armed, "column-type-mismatch", "not_applicable") == 1


async def test_the_structured_rows_are_judged_when_the_model_gets_the_blocks(armed: Telemetry) -> None:
    armed.configure(check_column_types="enforce")
    script = _lun_script(CHART_TOOL)
    await _agent(MCPToolset(_fastmcp_server(_served_meta())), script, armed).run("Chart vdi-a.")
    delivered = _delivered(script)
    assert isinstance(delivered.content, str) and delivered.content.startswith(
        f"Result rejected: tool '{CHART_TOOL}'"
    )
    ((_, finding),) = all_findings(armed)
    assert (
        finding[names.FINDING_KIND] == "column-type-mismatch"
        and finding[names.GEN_AI_TOOL_NAME] == CHART_TOOL
    )


async def test_a_malformed_meta_is_warned_once_and_the_tool_still_works(
    armed: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    armed.configure(check_column_types="enforce")
    bad = {META_KEY: {"result_columns": {"logical_unit_number": "integer"}, "result_kind": "dataset/rows"}}
    toolset = MCPToolset(_sdk_server(bad))
    WARNED.seen.clear()
    with caplog.at_level(logging.WARNING, logger="context_integrity"):
        for _ in range(2):  # every run lists the tools again: still one warning
            script = _lun_script()
            await _agent(toolset, script, armed).run("Map vdi-a.")
            assert _delivered(script).content == LUN_ROWS  # the tool works, its rows unjudged
    warned = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and r.name == "context_integrity"
    ]
    assert len(warned) == 1 and "'storage-sdk'" in warned[0] and f"'{TOOL}'" in warned[0]
    assert "result_columns" in warned[0] and "'integer'" in warned[0]
    contract = CONTRACTS.get(TOOL)
    assert contract is not None and contract.result_columns is None
    assert contract.result_kind == "dataset/rows"  # the rest of its contract landed
    assert all_findings(armed) == []


# ── over stdio ───────────────────────────────────────────────────────────

STDIO_SERVER = textwrap.dedent(
    f"""
    import sys
    from typing import Any
    import context_integrity as ci
    from context_integrity.integrations import mcp as ci_mcp
    from mcp.server.mcpserver import MCPServer

    with open(sys.argv[2], "a") as starts:
        starts.write("started\\n")
    ci.setup(recording_path=sys.argv[1])
    ci.declare_tool({TOOL!r}, result_columns={LUN_COLUMNS!r}, result_kind="dataset/rows")
    server = MCPServer("stdio-storage", log_level="ERROR")

    @server.tool()
    def {TOOL}(host_group: str) -> list[dict[str, Any]]:
        return {LUN_ROWS!r}

    ci_mcp.serve_contracts(server)
    server.run("stdio")
    """
)


def _stdio_toolset(tmp_path: Path) -> Any:
    script = tmp_path / "server.py"
    script.write_text(STDIO_SERVER)
    env = {**os.environ, "PYTHONPATH": str(Path(ci.__file__).resolve().parents[1])}
    transport = StdioTransport(
        command=sys.executable,
        args=[str(script), str(tmp_path / "rec.jsonl"), str(tmp_path / "starts")],
        env=env,
        keep_alive=False,
    )
    return MCPToolset(transport, init_timeout=60)


@pytest.mark.parametrize("mode", ["warn", "enforce"])
async def test_over_stdio_the_declarations_round_trip_and_arm_the_run(
    armed: Telemetry, tmp_path: Path, mode: str
) -> None:
    armed.configure(check_column_types=mode)
    assert CONTRACTS.get(TOOL) is None, "the declaration must come from the server"
    script = _lun_script()
    result = await _agent(_stdio_toolset(tmp_path), script, armed).run("Map vdi-a.")
    assert result.output == "vdi-a maps two LUNs."
    ingested = CONTRACTS.get(TOOL)
    assert ingested is not None
    assert {c.name: c.type for c in ingested.result_columns or ()} == LUN_COLUMNS
    assert ingested.result_kind == "dataset/rows"
    delivered = _delivered(script)
    if mode == "warn":
        assert delivered.content == LUN_ROWS
    else:
        assert isinstance(delivered.content, str) and delivered.content.startswith("Result rejected")
        assert "vdi-a" not in delivered.content
    ((span, finding),) = all_findings(armed)
    assert is_pydantic_ai(span) and finding[names.FINDING_KIND] == "column-type-mismatch"
    assert len(operation(armed, names.OPERATION_INVOKE_AGENT)) == 1
    # Listing before the run opened reused the run's connection: one server process, not two.
    assert (tmp_path / "starts").read_text().splitlines() == ["started"]


# ── nothing a call hands back raises ─────────────────────────────────────

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


class _Raising:
    @property
    def content(self) -> object:
        raise RuntimeError("a result whose own code raises")

    structured_content = None


@settings(max_examples=200, deadline=None)
@given(
    result=st.one_of(
        _json,
        st.just(_Raising()),
        st.builds(
            lambda s: mt.CallToolResult(content=[], structured_content=s),
            st.dictionaries(st.text(max_size=5), _json),
        ),
    ),
    returned=_json,
)
def test_no_kept_result_or_returned_value_raises(result: object, returned: object) -> None:
    judged = judged_result([Kept(None, "t", result)], returned)
    assert judged is None or isinstance(judged, mt.CallToolResult)
