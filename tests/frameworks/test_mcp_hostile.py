"""A hostile MCP server cannot stall, flood or hijack a client: real servers (the MCP SDK's and
fastmcp's) listing what an attacker would list, a real client ingesting it.

The laws under test: ingest costs linear work in what a server lists (counted in comparisons, never
timed); a contract over a cap of ``limits.py`` is refused whole with one warning, and its tool's
declaration-armed checks read ``unreachable``; the findings one judged result files are bounded,
the last one naming some of the rest and counting them all; a contract from a server never
replaces or erases a declaration made in this process (in code or in a contracts file), a clash
being one warning naming both; two servers listing one name are kept apart by their ``serverInfo``
names, and where a host names only the tool the clash is refused, never one server's contract
applied to the other's rows; every quoted value in a log line is clipped.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import pytest
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity import limits
from context_integrity.checks.column_types import column_types_of
from context_integrity.contracts import ToolContract, normalize_columns, read_result
from context_integrity.contracts.grounds import assert_arguments_from
from context_integrity.contracts.meta import META_KEY, WARNED
from context_integrity.telemetry.schema import names
from context_integrity.telemetry.setup import CONTRACTS

try:
    import fastmcp
    import mcp as mcp_sdk
    from mcp.server.mcpserver import MCPServer
except ImportError:  # pragma: no cover - CI installs the [mcp] extra, so there this never skips
    if os.environ.get("CI"):
        raise
    pytest.skip("the [mcp] extra is not installed", allow_module_level=True)

from context_integrity.integrations import mcp as ci_mcp

TOOL = "lun_mappings"
BAD_ROWS: list[dict[str, Any]] = [{"lun": "", "host_group": "vdi-a"}, {"lun": 1, "host_group": "vdi-a"}]
GOOD_ROWS: list[dict[str, Any]] = [{"lun": 0, "host_group": "vdi-a"}, {"lun": 1, "host_group": "vdi-a"}]
TEXT_ROWS: list[dict[str, Any]] = [{"lun": "", "host_group": "vdi-a"}, {"lun": "1", "host_group": "vdi-a"}]


def _server(name: str, meta: dict[str, Any] | None, rows: list[dict[str, Any]], *, kind: str = "sdk") -> Any:
    """A real server named ``name`` listing one tool, ``lun_mappings``, with ``meta`` as its ``_meta``."""
    if kind == "fastmcp":
        fast = fastmcp.FastMCP(name)

        @fast.tool(name=TOOL, meta=meta)
        def fast_lun_mappings(host_group: str) -> list[dict[str, Any]]:
            return rows

        return fast
    server = MCPServer(name, log_level="CRITICAL")

    @server.tool(name=TOOL, meta=meta)
    def lun_mappings(host_group: str) -> list[dict[str, Any]]:
        return rows

    return server


async def _ingest(server: Any) -> list[ToolContract]:
    """What a client ingests from ``server``, named as it names itself (``serverInfo``)."""
    if isinstance(server, fastmcp.FastMCP):
        async with fastmcp.Client(server) as fast_client:
            return await ci_mcp.ingest_client(fast_client)
    async with mcp_sdk.Client(server) as client:
        return await ci_mcp.ingest_client(client)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def _row(agent_run: ci.Run, kind: str) -> ci.LedgerRow:
    return next(r for r in agent_run.ledger() if r.check == kind)


# ── ingest is linear ─────────────────────────────────────────────────────


class _CountedName(str):
    """A tool name that counts how often it is compared: the cost of ingest, without a clock."""

    comparisons = 0

    def __eq__(self, other: object) -> bool:
        _CountedName.comparisons += 1
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__


def test_arguments_from_is_vetted_in_linear_comparisons() -> None:
    count = limits.MAX_SERVED_GROUNDS
    grounds = [_CountedName(f"list_hosts_{i}") for i in range(count)]
    _CountedName.comparisons = 0
    assert assert_arguments_from("t", grounds) == tuple(grounds)
    # One comparison with the tool's own name per entry, and none against each other: a list
    # membership test made it count * (count - 1) / 2 (83 s for 100,000 names).
    assert _CountedName.comparisons <= 2 * count


@pytest.mark.parametrize("kind", ["sdk", "fastmcp"])
async def test_ingesting_a_served_arguments_from_is_linear(telemetry: Telemetry, kind: str) -> None:
    telemetry.configure()
    grounds = [f"list_hosts_{i}" for i in range(limits.MAX_SERVED_GROUNDS)]
    (tool,) = await _list(_server("grounds", {META_KEY: {"arguments_from": grounds}}, GOOD_ROWS, kind=kind))
    listed = tool.model_dump(by_alias=True)
    listed["_meta"][META_KEY]["arguments_from"] = [_CountedName(g) for g in grounds]
    _CountedName.comparisons = 0
    ci_mcp.ingest_tools([listed], server="grounds")
    # Vetted on arrival, then once more as the contract is made: a few comparisons per name each time.
    assert _CountedName.comparisons <= 4 * len(grounds)
    contract = CONTRACTS.get(TOOL)
    assert contract is not None and contract.arguments_from == tuple(grounds)


async def _list(server: Any) -> list[Any]:
    if isinstance(server, fastmcp.FastMCP):
        async with fastmcp.Client(server) as fast_client:
            return list(await fast_client.list_tools())
    async with mcp_sdk.Client(server) as client:
        return list((await client.list_tools()).tools)


# ── caps: a contract over one is refused whole, with one warning ─────────

# Each bag also declares a field within its cap: a refused contract declares none of its fields.
WITHIN = {"result_kind": "dataset/rows"}
TYPED = {"result_columns": {"lun": "number"}}
OVER_THE_CAPS: dict[str, dict[str, Any]] = {
    "columns": {
        "result_columns": {f"c{i}": "number" for i in range(limits.MAX_SERVED_COLUMNS + 1)},
        **WITHIN,
    },
    "grounds": {"arguments_from": [f"list_{i}" for i in range(limits.MAX_SERVED_GROUNDS + 1)], **TYPED},
    "column name": {"result_columns": {"x" * (limits.MAX_SERVED_NAME_CHARS + 1): "number"}, **WITHIN},
    "ground name": {"arguments_from": ["x" * (limits.MAX_SERVED_NAME_CHARS + 1)], **TYPED},
    "result kind": {"result_kind": "x" * (limits.MAX_SERVED_NAME_CHARS + 1), **TYPED},
}


@pytest.mark.parametrize("over", list(OVER_THE_CAPS))
@pytest.mark.parametrize("kind", ["sdk", "fastmcp"])
async def test_a_contract_over_a_cap_is_refused_whole_with_one_warning(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture, over: str, kind: str
) -> None:
    telemetry.configure(check_column_types="enforce")
    server = _server(f"hostile-{kind}", {META_KEY: OVER_THE_CAPS[over]}, BAD_ROWS, kind=kind)
    WARNED.seen.clear()
    with caplog.at_level(logging.WARNING, logger="context_integrity"):
        await _ingest(server)
        await _ingest(server)  # listed again: no second warning
    (warned,) = _warnings(caplog)
    assert f"'hostile-{kind}'" in warned and f"'{TOOL}'" in warned and "refused" in warned
    assert len(warned) < 1000
    contract = CONTRACTS.get(TOOL)
    assert contract is not None
    assert (contract.result_columns, contract.arguments_from, contract.result_kind) == (None, None, None)


async def test_a_tool_whose_contract_was_refused_reads_unreachable_not_not_applicable(
    telemetry: Telemetry,
) -> None:
    telemetry.configure(check_column_types="warn")
    server = _server("hostile", {META_KEY: OVER_THE_CAPS["columns"]}, BAD_ROWS)
    await _ingest(server)
    async with mcp_sdk.Client(server) as client:
        result = await client.call_tool(TOOL, {"host_group": "vdi-a"})
    with ci.run("q") as agent_run:
        delivered = agent_run.tool_result(TOOL, "c1", result)
    assert delivered is result  # warn: nothing was refused, the tool still works
    for kind in ("column-type-mismatch", "missing-column"):
        row = _row(agent_run, kind)
        assert (row.checked, row.not_applicable, row.unreachable) == (0, 0, 1), kind
    span = telemetry.one(names.tool_span_name(TOOL))
    reasons = [
        dict(e.attributes or {}).get(names.UNREACHABLE_REASON)
        for e in span.events
        if e.name == names.UNREACHABLE_EVENT
    ]
    assert reasons and all(isinstance(r, str) and "'hostile'" in r for r in reasons)


# ── amplification: findings per judged result are bounded ───────────────


def test_the_findings_one_result_files_are_bounded_and_the_last_counts_the_rest() -> None:
    declared = {f"c{i:04}": "number" for i in range(limits.MAX_SERVED_COLUMNS)}
    columns = normalize_columns("wide", {"present": "number", **declared})
    reading = read_result([{"present": 1}, {"present": 2}])
    encounter = column_types_of(reading, columns, tool_name="wide", call_id="c1", mode="enforce")
    assert len(encounter.missing) == limits.MAX_SERVED_COLUMNS  # every broken column is still counted
    missing = [f for f in encounter.findings if f.kind == "missing-column"]
    assert len(missing) == limits.MAX_COLUMN_FINDINGS_PER_KIND
    # One finding per column, then one that names some of the rest and counts them all.
    assert [f.predicate for f in missing[:-1]] == list(declared)[: len(missing) - 1]
    rest = limits.MAX_SERVED_COLUMNS - (len(missing) - 1)
    last = missing[-1]
    assert last.predicate == list(declared)[len(missing) - 1]
    assert f"{rest:,} declared columns" in last.message
    assert f"and {rest - limits.MAX_NAMED_IN_REFUSAL:,} more" in last.message
    assert encounter.refusal is not None and encounter.refusal.startswith("Result rejected")


def test_the_findings_of_a_few_broken_columns_are_unchanged() -> None:
    columns = normalize_columns("narrow", {"lun": "number", "host_group": "string", "size": "number"})
    reading = read_result([{"lun": "", "host_group": 3}])
    encounter = column_types_of(reading, columns, tool_name="narrow", call_id="c1")
    assert [(f.kind, f.predicate) for f in encounter.findings] == [
        ("column-type-mismatch", "lun"),
        ("column-type-mismatch", "host_group"),
        ("missing-column", "size"),
    ]
    assert all("more" not in f.message for f in encounter.findings)


async def test_a_judged_call_files_and_counts_a_bounded_number_of_findings(telemetry: Telemetry) -> None:
    telemetry.configure(check_column_types="warn")
    declared = {f"c{i}": "number" for i in range(limits.MAX_SERVED_COLUMNS)}
    server = _server("wide", {META_KEY: {"result_columns": declared}}, GOOD_ROWS)
    await _ingest(server)
    async with mcp_sdk.Client(server) as client:
        result = await client.call_tool(TOOL, {"host_group": "vdi-a"})
    with ci.run("q") as agent_run:
        agent_run.tool_result(TOOL, "c1", result)
    assert len(agent_run.findings) == limits.MAX_COLUMN_FINDINGS_PER_KIND
    span = telemetry.one(names.tool_span_name(TOOL))
    assert (
        len([e for e in span.events if e.name == names.FINDING_EVENT]) == limits.MAX_COLUMN_FINDINGS_PER_KIND
    )
    assert sum(value for _, value in telemetry.findings_metric()) == limits.MAX_COLUMN_FINDINGS_PER_KIND


# ── hijack: a server never replaces or erases a local declaration ────────


@pytest.mark.parametrize("kind", ["sdk", "fastmcp"])
async def test_a_server_listing_a_local_tools_name_never_replaces_its_contract(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    telemetry.configure(check_column_types="enforce")

    @ci.tool(result_columns={"lun": "number", "host_group": "string"})
    def lun_mappings(host_group: str) -> list[dict[str, Any]]:
        return GOOD_ROWS

    local = CONTRACTS.get(TOOL)
    hostile = _server(
        f"hijacker-{kind}", {META_KEY: {"result_columns": {"lun": "string"}}}, BAD_ROWS, kind=kind
    )
    eraser = _server(f"eraser-{kind}", None, BAD_ROWS, kind=kind)
    with caplog.at_level(logging.WARNING, logger="context_integrity"):
        await _ingest(hostile)
        await _ingest(hostile)  # listed again: still one warning
        await _ingest(eraser)
    assert CONTRACTS.get(TOOL) == local
    warned = _warnings(caplog)
    assert len(warned) == 2, warned
    for server_name, line in zip((f"hijacker-{kind}", f"eraser-{kind}"), warned, strict=True):
        assert f"'{server_name}'" in line and f"'{TOOL}'" in line and "this process" in line
    with ci.run("q") as agent_run:
        assert lun_mappings("vdi-a") == GOOD_ROWS  # the local tool's correct rows are not refused
    assert agent_run.findings == []


async def test_a_local_declaration_made_after_a_servers_stands_without_raising(telemetry: Telemetry) -> None:
    telemetry.configure(check_column_types="enforce")
    await _ingest(_server("first", {META_KEY: {"result_columns": {"lun": "string"}}}, BAD_ROWS))
    declared = ci.declare_tool(TOOL, result_columns={"lun": "number"})  # no DeclarationError
    assert CONTRACTS.get(TOOL) == declared
    await _ingest(_server("again", {META_KEY: {"result_columns": {"lun": "string"}}}, BAD_ROWS))
    assert CONTRACTS.get(TOOL) == declared


# ── two servers, one tool name ───────────────────────────────────────────


async def test_two_servers_are_named_by_their_server_info_and_kept_apart(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    telemetry.configure(check_column_types="enforce")
    typed = _server("storage-a", {META_KEY: {"result_columns": {"lun": "number"}}}, BAD_ROWS)
    loose = _server("storage-b", {META_KEY: {"result_columns": {"lun": "string"}}}, BAD_ROWS, kind="fastmcp")
    with caplog.at_level(logging.WARNING, logger="context_integrity"):
        await _ingest(typed)
        await _ingest(loose)
    a, b = CONTRACTS.served("storage-a", TOOL), CONTRACTS.served("storage-b", TOOL)
    assert a is not None and b is not None and a != b
    (warned,) = _warnings(caplog)
    assert "'storage-a'" in warned and "'storage-b'" in warned and f"'{TOOL}'" in warned
    # A host that names only the tool cannot tell whose rows these are: never judged by either
    # server's contract, and never silently not-applicable.
    async with mcp_sdk.Client(typed) as client:
        result = await client.call_tool(TOOL, {"host_group": "vdi-a"})
    with ci.run("q") as agent_run:
        agent_run.tool_result(TOOL, "c1", result)
    row = _row(agent_run, "column-type-mismatch")
    assert (row.checked, row.not_applicable, row.unreachable) == (0, 0, 1)


async def test_two_pydantic_ai_agents_on_two_servers_are_each_judged_by_their_own(
    telemetry: Telemetry,
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.models.function import FunctionModel
    from tests.frameworks.test_pydantic_ai import Script, call, text

    from context_integrity.integrations import pydantic_ai as integration

    telemetry.configure(check_column_types="warn")
    both_asked = asyncio.Event()
    asked: list[int] = []

    def meeting(script: Script, index: int) -> FunctionModel:
        async def answer(messages: Any, info: Any) -> Any:
            if not script.received:  # the first request of each run waits for the other's
                asked.append(index)
                if len(asked) == 2:
                    both_asked.set()
                await both_asked.wait()
            return script(messages, info)

        return FunctionModel(answer, model_name="scripted")

    try:
        typed = MCPToolset(_server("storage-a", {META_KEY: {"result_columns": {"lun": "number"}}}, TEXT_ROWS))
        loose = MCPToolset(_server("storage-b", {META_KEY: {"result_columns": {"lun": "string"}}}, TEXT_ROWS))
        agents: list[Any] = [
            Agent(
                meeting(Script.of(call(TOOL, f"call_{i}", host_group="vdi-a"), text("done")), i),
                name=f"agent-{i}",
                toolsets=[toolset],
            )
            for i, toolset in enumerate((typed, loose))
        ]
        # Both runs listed their servers (and are asking the model) before either calls its tool.
        await asyncio.gather(*(agent.run("Map vdi-a.") for agent in agents))
    finally:
        integration.uninstrument_all()
    findings = [
        (dict(e.attributes or {})[names.GEN_AI_TOOL_CALL_ID], dict(e.attributes or {})[names.FINDING_KIND])
        for s in telemetry.finished()
        for e in s.events
        if e.name == names.FINDING_EVENT
    ]
    # Both serve the same rows of strings: storage-a declared lun a number, so they are a finding;
    # storage-b declared it a string, so they are not. One contract for both would find both or none.
    assert findings == [("call_0", "column-type-mismatch")]


# ── flood: every quoted value in a log line is clipped ───────────────────

MEGABYTE = 1_000_000


@pytest.mark.parametrize(
    "bag",
    [
        {"result_columns": {"lun": "n" * MEGABYTE}},
        {"result_columns": {"lun": {"type": "number", "nullable": "y" * MEGABYTE}}},
        {"result_columns": {"lun": {"type": "number", "z" * MEGABYTE: 1}}},
        {"arguments_from": [7, "w" * MEGABYTE]},
        {"arguments_from": 7, "result_kind": ["k" * MEGABYTE]},
    ],
    ids=["column type", "nullable", "unknown field", "ground entry", "result kind"],
)
async def test_a_megabyte_value_makes_no_long_log_line(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture, bag: dict[str, Any]
) -> None:
    telemetry.configure()
    WARNED.seen.clear()
    with caplog.at_level(logging.DEBUG, logger="context_integrity"):
        await _ingest(_server("flood" * 2000, {META_KEY: bag}, GOOD_ROWS))
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("context_integrity")]
    assert lines
    assert max(map(len, lines)) < 2_000


async def test_a_megabyte_tool_name_is_refused_in_a_short_line(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    telemetry.configure()
    listed = [{"name": "t" * MEGABYTE, "_meta": {META_KEY: {"result_kind": "dataset/rows"}}}]
    with caplog.at_level(logging.DEBUG, logger="context_integrity"):
        assert ci_mcp.ingest_tools(listed, server="flood") == []
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("context_integrity")]
    assert len(lines) == 1 and len(lines[0]) < 2_000
    assert CONTRACTS.get("t" * MEGABYTE) is None
