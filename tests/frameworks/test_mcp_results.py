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
from pydantic import BaseModel
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.contracts import read_result
from context_integrity.contracts.meta import RESULT_META_KEY, is_marked_semantic, read_server_verdict
from context_integrity.contracts.results import judged_value
from context_integrity.telemetry.schema import names
from context_integrity.telemetry.schema.summary import decode_summary
from context_integrity.telemetry.setup import CONTRACTS

try:
    import fastmcp
    import mcp as mcp_sdk
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


# ── 2. one defect, one finding ───────────────────────────────────────────


def _judging_server(kind: str) -> Any:
    """A server that publishes its contract and judges its own results (in whatever mode is set).

    Server and client share this process's contract book: the client's contract for the tool is
    the server's own, as it is when a client ingests what its server published.
    """
    ci.declare_tool(TOOL, result_columns=LUN_COLUMNS)
    server = _sdk_server() if kind == "mcp-sdk" else _fastmcp_server()
    return ci_mcp.judge_results(ci_mcp.serve_contracts(server))


def _client(server: Any) -> Any:
    return fastmcp.Client(server) if isinstance(server, fastmcp.FastMCP) else mcp_sdk.Client(server)


async def _hand_loop(client: Any) -> tuple[ci.Run, Any]:
    """The hand-written loop's one call, the client's connection opened before the run."""
    with ci.run("What does vdi-a map?") as agent_run:
        async with agent_run.tool_call(TOOL, "call_1", {"host_group": "vdi-a"}) as call:
            delivered = call.result(await client.call_tool(TOOL, {"host_group": "vdi-a"}))
    return agent_run, delivered


def _finding_spans(telemetry: Telemetry) -> list[Any]:
    return [s for s in telemetry.finished() for e in s.events if e.name == names.FINDING_EVENT]


def _summary_row(telemetry: Telemetry, field: str) -> object:
    (summary,) = telemetry.summaries()
    return dict(summary.attributes or {}).get(names.row_attribute("column-type-mismatch", "write", field))


@pytest.mark.parametrize("kind", ["mcp-sdk", "fastmcp"])
async def test_a_defect_judged_at_the_server_is_one_finding_in_the_trace(
    telemetry: Telemetry, kind: str
) -> None:
    telemetry.configure(check_column_types="warn")
    server = _judging_server(kind)
    async with _client(server) as client:
        await ci_mcp.ingest_client(client)
        agent_run, delivered = await _hand_loop(client)
    meta = delivered.meta
    assert meta[RESULT_META_KEY]["judged"]["findings"][0]["kind"] == "column-type-mismatch"
    (span,) = _finding_spans(telemetry)  # the server's, the one span that holds the finding
    assert dict(span.attributes or {}).get(names.JUDGED_AT_SERVER) is None
    (client_span,) = [
        s
        for s in telemetry.named(names.tool_span_name(TOOL))
        if names.JUDGED_AT_SERVER in (s.attributes or {})
    ]
    assert dict(client_span.attributes or {})[names.JUDGED_AT_SERVER] == server.name
    assert sum(value for _, value in telemetry.findings_metric()) == 1  # counted once, by the server
    row = next(r for r in agent_run.ledger() if r.check == "column-type-mismatch")
    assert (row.checked, row.findings, row.judged_at_server) == (1, 1, 1)
    assert _summary_row(telemetry, "judged_at_server") == 1
    assert agent_run.findings == []  # filed at the server, not in this run
    # The summary reads back as the ledger wrote it, the count beside the row's fields.
    (summary,) = telemetry.summaries()
    problems: list[str] = []
    decoded = decode_summary(dict(summary.attributes or {}), problems)
    assert decoded.rows == [r.as_dict() for r in agent_run.ledger()] and problems == []
    assert decoded.totals["judged_at_server"] == 2  # both rows of the column check


@pytest.mark.parametrize("kind", ["mcp-sdk", "fastmcp"])
async def test_a_result_refused_at_the_server_reads_judged_there_not_not_applicable(
    telemetry: Telemetry, kind: str
) -> None:
    telemetry.configure(check_column_types="enforce")
    server = _judging_server(kind)
    async with _client(server) as client:
        await ci_mcp.ingest_client(client)
        if isinstance(client, fastmcp.Client):
            with ci.run("q") as agent_run:
                async with agent_run.tool_call(TOOL, "call_1", {"host_group": "vdi-a"}) as call:
                    raw = await client.call_tool(TOOL, {"host_group": "vdi-a"}, raise_on_error=False)
                    call.result(raw)
        else:
            agent_run, raw = await _hand_loop(client)
    (block,) = raw.content
    assert raw.is_error and isinstance(block, mt.TextContent) and block.text.startswith("Result rejected")
    row = next(r for r in agent_run.ledger() if r.check == "column-type-mismatch")
    assert (row.checked, row.findings, row.not_applicable, row.judged_at_server) == (1, 1, 0, 1)
    assert len(_finding_spans(telemetry)) == 1


STDIO_JUDGING = textwrap.dedent(
    f"""
    import sys
    from typing import Any
    import context_integrity as ci
    from context_integrity.integrations import mcp as ci_mcp
    from mcp.server.mcpserver import MCPServer

    ci.setup(check_column_types="warn", recording_path=sys.argv[1])
    ci.declare_tool({TOOL!r}, result_columns={LUN_COLUMNS!r})
    server = MCPServer("stdio-storage", log_level="ERROR")

    @server.tool()
    def {TOOL}(host_group: str) -> list[dict[str, Any]]:
        return {LUN_ROWS!r}

    ci_mcp.judge_results(ci_mcp.serve_contracts(server))
    server.run("stdio")
    """
)


def _stdio_judging(tmp_path: Path) -> Any:
    script = tmp_path / "server.py"
    script.write_text(STDIO_JUDGING)
    recording = tmp_path / "server.jsonl"
    return recording, mcp_sdk.StdioServerParameters(
        command=sys.executable, args=[str(script), str(recording)], env={**os.environ, "PYTHONPATH": SRC}
    )


async def test_a_client_whose_contract_differs_judges_for_itself_and_says_so(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    import logging

    telemetry.configure(check_column_types="warn")
    # This process's own declaration of the tool, which a server's never replaces: one more column.
    ci.declare_tool(TOOL, result_columns={**LUN_COLUMNS, "size_gb": "number"})
    _, params = _stdio_judging(tmp_path)
    async with mcp_sdk.Client(params) as client:
        with caplog.at_level(logging.WARNING, logger="context_integrity"):
            await ci_mcp.ingest_client(client)
            agent_run, _ = await _hand_loop(client)
    kinds = sorted(f.kind for f in agent_run.findings)
    assert kinds == ["column-type-mismatch", "missing-column"]  # its own, by its own contract
    assert len(_finding_spans(telemetry)) == 2  # the client's two (the server's is in its own service)
    (client_span,) = telemetry.named(names.tool_span_name(TOOL))
    assert dict(client_span.attributes or {})[names.SERVER_CONTRACT_DIFFERS] == "stdio-storage"
    assert any(
        "judged tool 'lun_mappings' by a contract that differs" in r.getMessage() for r in caplog.records
    )
    row = next(r for r in agent_run.ledger() if r.check == "column-type-mismatch")
    assert row.judged_at_server == 0


async def test_over_stdio_the_finding_lives_in_the_servers_service_only(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    telemetry.configure(check_column_types="warn")
    recording, params = _stdio_judging(tmp_path)
    async with mcp_sdk.Client(params) as client:
        await ci_mcp.ingest_client(client)
        agent_run, _ = await _hand_loop(client)
    assert _finding_spans(telemetry) == [] and telemetry.findings_metric() == []
    row = next(r for r in agent_run.ledger() if r.check == "column-type-mismatch")
    assert (row.checked, row.findings, row.judged_at_server) == (1, 1, 1)
    assert recording.read_text().count('"column-type-mismatch"') >= 1  # the server's own record of it


async def test_through_pydantic_ai_a_defect_judged_at_the_server_is_one_finding(telemetry: Telemetry) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from tests.frameworks.test_pydantic_ai import Script, call, instrumented, text

    from context_integrity.integrations import pydantic_ai as integration

    telemetry.configure(check_column_types="warn")
    server = _judging_server("mcp-sdk")
    script = Script.of(call(TOOL, "call_lun", host_group="vdi-a"), text("mapped"))
    agent: Any = Agent(script.model(), name="storage", toolsets=[MCPToolset(server)])
    agent.instrument = instrumented(telemetry)
    try:
        await agent.run("Map vdi-a.")
    finally:
        integration.uninstrument_all()
    assert len(_finding_spans(telemetry)) == 1
    assert _summary_row(telemetry, "judged_at_server") == 1


_junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=16,
)


@settings(max_examples=300, deadline=None)
@given(
    stamp=st.one_of(
        _junk,
        st.fixed_dictionaries({RESULT_META_KEY: st.one_of(_junk, st.fixed_dictionaries({"judged": _junk}))}),
        st.fixed_dictionaries(
            {
                RESULT_META_KEY: st.fixed_dictionaries(
                    {
                        "judged": st.fixed_dictionaries(
                            {"server": _junk, "contract": _junk, "rows": _junk, "findings": _junk}
                        ),
                        "semantic": _junk,
                    }
                )
            }
        ),
    )
)
def test_no_stamp_a_server_hands_back_raises(stamp: object) -> None:
    verdict = read_server_verdict(stamp)
    assert verdict is None or len(verdict.filed) <= 64
    is_marked_semantic(stamp)
    with ci.run("q") as agent_run:
        agent_run.tool_result(
            TOOL,
            "c1",
            {"content": [], "structuredContent": {"result": LUN_ROWS}, "_meta": stamp, "isError": False},
        )


# ── 3. claims across MCP ─────────────────────────────────────────────────


class PortAnswer(BaseModel):
    port: str
    status: str


PORT_TOOL = "port_status"


def _port_server(kind: str) -> Any:
    if kind == "fastmcp":
        fast = fastmcp.FastMCP("fabric-fastmcp")

        @fast.tool(name=PORT_TOOL)
        def fast_port_status(port: str) -> dict[str, Any]:
            return ci.semantic(facts=[{"entity": port, "status": "down"}])

        return ci_mcp.serve_contracts(fast)
    server = MCPServer("fabric-sdk", log_level="CRITICAL")

    @server.tool(name=PORT_TOOL)
    def port_status(port: str) -> dict[str, Any]:
        return ci.semantic(facts=[{"entity": port, "status": "down"}])

    return ci_mcp.serve_contracts(server)


def _claim_rows(telemetry: Telemetry) -> dict[str, object]:
    (summary,) = telemetry.summaries()
    attributes = dict(summary.attributes or {})
    return {
        field: attributes.get(names.row_attribute("unsupported-claim", "claim", field), 0)
        for field in ("checked", "findings", "unreachable")
    }


@pytest.mark.parametrize("kind", ["mcp-sdk", "fastmcp"])
async def test_the_hand_loop_settles_facts_an_mcp_tool_returned(telemetry: Telemetry, kind: str) -> None:
    telemetry.configure()
    server = _port_server(kind)
    ci.declare_claims(PortAnswer, {"status": ("fc1/3", "status")})
    async with _client(server) as client:
        with ci.run("Is fc1/3 up?") as agent_run:
            async with agent_run.tool_call(PORT_TOOL, "call_1", {"port": "fc1/3"}) as call:
                raw = call.result(await client.call_tool(PORT_TOOL, {"port": "fc1/3"}))
            found = agent_run.answer(output=PortAnswer(port="fc1/3", status="up"))
    assert raw.meta[RESULT_META_KEY] == {"semantic": True}  # travelled marked
    assert raw.structured_content == {"facts": [{"entity": "fc1/3", "status": "down"}]}
    (finding,) = found
    assert (finding.kind, finding.predicate) == ("unsupported-claim", "status")
    assert _claim_rows(telemetry) == {"checked": 1, "findings": 1, "unreachable": 0}


STDIO_FABRIC = textwrap.dedent(
    f"""
    from typing import Any
    import context_integrity as ci
    from context_integrity.integrations import mcp as ci_mcp
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("stdio-fabric", log_level="ERROR")

    @server.tool()
    def {PORT_TOOL}(port: str) -> dict[str, Any]:
        return ci.semantic(facts=[{{"entity": port, "status": "down"}}])

    ci_mcp.serve_contracts(server)
    server.run("stdio")
    """
)


async def test_through_the_agents_sdk_an_mcp_tools_facts_judge_the_answer(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    from agents import Agent, Runner, set_trace_processors
    from agents.mcp import MCPServerStdio
    from agents.testing import ScriptedModel, assistant_message, function_call

    from context_integrity.integrations import openai_agents

    set_trace_processors([])
    os.environ.setdefault("OPENAI_API_KEY", "sk-offline-never-used")
    openai_agents.instrument_all()
    try:
        telemetry.configure()
        ci.declare_claims(PortAnswer, {"status": ("fc1/3", "status")})
        script = tmp_path / "server.py"
        script.write_text(STDIO_FABRIC)
        model = ScriptedModel(
            [
                [function_call(PORT_TOOL, {"port": "fc1/3"}, call_id="call_port")],
                [assistant_message('{"port": "fc1/3", "status": "up"}')],
            ]
        )
        params = {"command": sys.executable, "args": [str(script)], "env": {**os.environ, "PYTHONPATH": SRC}}
        async with MCPServerStdio(params, name="fabric", client_session_timeout_seconds=30) as server:  # type: ignore[arg-type]
            agent = Agent(name="fabric", model=model, mcp_servers=[server], output_type=PortAnswer)
            result = await Runner.run(agent, "Is fc1/3 up?")
    finally:
        openai_agents.uninstrument_all()
    assert result.final_output == PortAnswer(port="fc1/3", status="up")  # detection only
    assert _claim_rows(telemetry) == {"checked": 1, "findings": 1, "unreachable": 0}


async def test_through_pydantic_ai_an_mcp_tools_facts_judge_the_answer(telemetry: Telemetry) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from tests.frameworks.test_pydantic_ai import Script, call

    from context_integrity.integrations import pydantic_ai as integration

    telemetry.configure()
    ci.declare_claims(PortAnswer, {"status": ("fc1/3", "status")})
    script = Script.of(
        call(PORT_TOOL, "call_port", port="fc1/3"),
        call("final_result", "call_answer", port="fc1/3", status="up"),
    )
    agent: Any = Agent(script.model(), toolsets=[MCPToolset(_port_server("mcp-sdk"))], output_type=PortAnswer)
    try:
        result = await agent.run("Is fc1/3 up?")
    finally:
        integration.uninstrument_all()
    assert result.output == PortAnswer(port="fc1/3", status="up")
    assert _claim_rows(telemetry) == {"checked": 1, "findings": 1, "unreachable": 0}
