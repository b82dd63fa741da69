"""MCP calls from the client's side: names that say what they do, the call inside its span, and a
run never silently unjudged. Real servers and clients (the MCP SDK's and fastmcp's), in process
and over stdio.

The laws under test: the server hook that judges results is named for it (``judge_results``,
``enforce`` kept as its alias); a server is named by the ``serverInfo.name`` of its initialize
result, whatever client reached it; ``MCPServer(log_level=...)`` configuring the root logger does
not silence the library's warnings; ``run.tool_call(...)`` opens ``execute_tool`` before the call,
so the MCP client's and server's spans nest under it, and its ``.result(value)`` judges and
returns what the model reads; a pre-run listing that failed is retried at the first call of that
server's tools, and a tool whose declarations could not be read reads ``unreachable``.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.contracts.meta import META_KEY, WARNED
from context_integrity.telemetry.schema import names

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
LUN_COLUMNS = {"lun": "number", "host_group": "string"}
LUN_ROWS: list[dict[str, Any]] = [{"lun": "", "host_group": "vdi-a"}, {"lun": 1, "host_group": "vdi-a"}]
MALFORMED = {META_KEY: {"result_columns": {"lun": "integer"}}}
SRC = str(Path(ci.__file__).resolve().parents[1])


def _sdk_server(name: str, meta: dict[str, Any] | None = None) -> MCPServer:
    server = MCPServer(name, log_level="CRITICAL")

    @server.tool(name=TOOL, meta=meta)
    def lun_mappings(host_group: str) -> list[dict[str, Any]]:
        return LUN_ROWS

    return server


def _fastmcp_server(name: str, meta: dict[str, Any] | None = None) -> fastmcp.FastMCP:
    server = fastmcp.FastMCP(name)

    @server.tool(name=TOOL, meta=meta)
    def lun_mappings(host_group: str) -> list[dict[str, Any]]:
        return LUN_ROWS

    return server


def _python(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": SRC},
        check=False,
    )


# ── 6. names that say what they do ───────────────────────────────────────


@pytest.mark.parametrize("make_server", [_sdk_server, _fastmcp_server], ids=["mcp-sdk", "fastmcp"])
async def test_judge_results_is_the_judging_hook_and_enforce_its_alias(
    telemetry: Telemetry, make_server: Any
) -> None:
    telemetry.configure(check_column_types="warn")
    ci.declare_tool(TOOL, result_columns=LUN_COLUMNS)
    assert ci_mcp.enforce is ci_mcp.judge_results
    server = ci_mcp.judge_results(make_server("storage"))
    assert ci_mcp.enforce(server) is server  # the same hook, installed once
    if isinstance(server, fastmcp.FastMCP):
        async with fastmcp.Client(server) as fast_client:
            await fast_client.call_tool_mcp(TOOL, {"host_group": "vdi-a"})
    else:
        async with mcp_sdk.Client(server) as client:
            await client.call_tool(TOOL, {"host_group": "vdi-a"})
    findings = [e for s in telemetry.finished() for e in s.events if e.name == names.FINDING_EVENT]
    assert len(findings) == 1  # judged once, in warn as in enforce: the name says what it does


@pytest.mark.parametrize(
    ("make_server", "client_kind"),
    [
        (_sdk_server, "mcp.Client"),
        (_sdk_server, "ClientSession"),
        (_sdk_server, "fastmcp.Client"),
        (_fastmcp_server, "fastmcp.Client"),
    ],
    ids=["mcp-sdk/mcp.Client", "mcp-sdk/ClientSession", "mcp-sdk/fastmcp.Client", "fastmcp/fastmcp.Client"],
)
async def test_a_server_is_named_by_its_server_info_whatever_client_reached_it(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture, make_server: Any, client_kind: str
) -> None:
    telemetry.configure()
    server = make_server("storage-by-itself", MALFORMED)
    WARNED.seen.clear()
    with caplog.at_level(logging.WARNING, logger="context_integrity"):
        if client_kind == "fastmcp.Client":
            async with fastmcp.Client(server) as fast_client:
                await ci_mcp.ingest_client(fast_client)
        else:
            async with mcp_sdk.Client(server) as client:
                await ci_mcp.ingest_client(client if client_kind == "mcp.Client" else client.session)
    (warned,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "MCP server 'storage-by-itself'" in warned
    from context_integrity.telemetry.setup import CONTRACTS

    assert CONTRACTS.served("storage-by-itself", TOOL) is not None


STDIO_NAMED = """
import sys
from typing import Any
from mcp.server.mcpserver import MCPServer

server = MCPServer("stdio-storage", log_level="ERROR")

@server.tool(meta={"io.github.context-integrity/contract": {"result_columns": {"lun": "integer"}}})
def lun_mappings(host_group: str) -> list[dict[str, Any]]:
    return []

server.run("stdio")
"""


async def test_over_stdio_the_server_is_named_by_its_server_info(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    telemetry.configure()
    script = tmp_path / "server.py"
    script.write_text(STDIO_NAMED)
    params = mcp_sdk.StdioServerParameters(command=sys.executable, args=[str(script)], env=dict(os.environ))
    WARNED.seen.clear()
    with caplog.at_level(logging.WARNING, logger="context_integrity"):
        async with mcp_sdk.Client(params) as client:
            await ci_mcp.ingest_client(client)
        async with fastmcp.Client(
            fastmcp.client.transports.StdioTransport(sys.executable, [str(script)])
        ) as fast:
            await ci_mcp.ingest_client(fast)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "MCP server 'stdio-storage'" in warned[0]  # one server, both times


def test_the_sdk_servers_root_logging_does_not_silence_our_warnings() -> None:
    # MCPServer(log_level=...) calls logging.basicConfig on the root logger: at CRITICAL, every
    # warning and error of ours was dropped in that process.
    result = _python(
        """
        import context_integrity as ci
        from context_integrity.integrations import mcp as ci_mcp
        from mcp.server.mcpserver import MCPServer

        server = MCPServer("quiet", log_level="CRITICAL")
        ci_mcp.judge_results(ci_mcp.serve_contracts(server))
        ci.declare_tool("lookup", arguments_from=["nowhere"])
        with ci.run("q"):
            pass
        """
    )
    assert result.returncode == 0, result.stderr
    assert "no tool 'nowhere' is declared" in result.stderr


def test_an_application_that_set_our_level_keeps_it() -> None:
    result = _python(
        """
        import logging
        import context_integrity as ci
        from context_integrity.integrations import mcp as ci_mcp
        from mcp.server.mcpserver import MCPServer

        logging.getLogger("context_integrity").setLevel(logging.CRITICAL)
        ci_mcp.serve_contracts(MCPServer("quiet", log_level="CRITICAL"))
        ci.declare_tool("lookup", arguments_from=["nowhere"])
        with ci.run("q"):
            pass
        """
    )
    assert result.returncode == 0, result.stderr
    assert "nowhere" not in result.stderr


# ── 4. the call inside its span ──────────────────────────────────────────

# The hand-written loop as an application writes it, in a process whose global tracer provider is
# the application's (the MCP SDK and fastmcp trace into the global one): prints every span.
NESTED_CALL = """
import asyncio, json, sys
from typing import Any
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import context_integrity as ci
from context_integrity.integrations import mcp as ci_mcp

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
ci.setup(check_column_types="enforce")

ROWS = [{"lun": "", "host_group": "vdi-a"}, {"lun": 1, "host_group": "vdi-a"}]
kind = sys.argv[1]
if kind == "fastmcp":
    import fastmcp
    server = fastmcp.FastMCP("storage")
    @server.tool(name="lun_mappings")
    def fast_lun_mappings(host_group: str) -> list[dict[str, Any]]:
        return ROWS
    client = fastmcp.Client(server)
    call_tool = client.call_tool
else:
    import mcp
    from mcp.server.mcpserver import MCPServer
    server = MCPServer("storage", log_level="CRITICAL")
    @server.tool(name="lun_mappings")
    def lun_mappings(host_group: str) -> list[dict[str, Any]]:
        return ROWS
    client = mcp.Client(server)
    call_tool = client.call_tool
ci_mcp.serve_contracts(server)
ci.declare_tool("lun_mappings", result_columns={"lun": "number", "host_group": "string"})

async def main():
    async with client:
        with ci.run("Which LUNs does vdi-a see?") as run:
            async with run.tool_call("lun_mappings", "call_1", {"host_group": "vdi-a"}) as call:
                raw = await call_tool("lun_mappings", {"host_group": "vdi-a"})
                delivered = call.result(raw)
    spans = [
        {
            "name": s.name,
            "kind": s.kind.name,
            "id": s.context.span_id,
            "parent": s.parent.span_id if s.parent else None,
            "start": s.start_time,
            "end": s.end_time,
            "findings": sum(e.name == "context_integrity.finding" for e in s.events),
        }
        for s in exporter.get_finished_spans()
    ]
    print(json.dumps({"delivered": delivered if isinstance(delivered, str) else None, "spans": spans}))

asyncio.run(main())
"""


@pytest.mark.parametrize("kind", ["mcp-sdk", "fastmcp"])
def test_the_mcp_client_and_server_spans_nest_under_the_tool_call(kind: str) -> None:
    import json

    result = _python(NESTED_CALL, kind)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["delivered"] is not None and out["delivered"].startswith("Result rejected")
    spans = out["spans"]
    (ours,) = [s for s in spans if s["name"] == names.tool_span_name(TOOL)]
    assert ours["findings"] == 1
    by_id = {s["id"]: s for s in spans}

    def under(span: dict[str, Any]) -> bool:
        while span["parent"] in by_id:
            span = by_id[span["parent"]]
            if span is ours:
                return True
        return False

    # Every span of the call itself (fastmcp's client span, the SDK's request, the server's handling)
    # is inside ours, in the tree and in time.
    calls = [s for s in spans if "tools/call" in s["name"]]
    assert any(s["kind"] == "SERVER" for s in calls), [s["name"] for s in spans]
    for span in calls:
        assert under(span), span["name"]
        assert ours["start"] <= span["start"] and span["end"] <= ours["end"]


STDIO_TRACED = """
import json, sys
from typing import Any
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from mcp.server.mcpserver import MCPServer

class Lines(SpanExporter):
    def export(self, spans):
        with open(sys.argv[1], "a") as out:
            for s in spans:
                parent = s.parent.span_id if s.parent else None
                out.write(json.dumps({"name": s.name, "trace": s.context.trace_id, "parent": parent}) + "\\n")
        return SpanExportResult.SUCCESS

provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(Lines()))
trace.set_tracer_provider(provider)
server = MCPServer("stdio-storage", log_level="ERROR")

@server.tool()
def lun_mappings(host_group: str) -> list[dict[str, Any]]:
    return [{"lun": 0, "host_group": host_group}]

server.run("stdio")
"""


async def test_over_stdio_the_servers_span_is_a_child_of_the_tool_calls_request(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    from opentelemetry import trace

    telemetry.configure()
    script = tmp_path / "server.py"
    script.write_text(STDIO_TRACED)
    lines = tmp_path / "server-spans.jsonl"
    params = mcp_sdk.StdioServerParameters(
        command=sys.executable, args=[str(script), str(lines)], env=dict(os.environ)
    )
    async with mcp_sdk.Client(params) as client:
        with ci.run("q") as agent_run:
            async with agent_run.tool_call(TOOL, "call_1", {"host_group": "vdi-a"}) as call:
                assert call.span is not None
                ours = call.span.get_span_context()
                # What the client sends inside the block carries our span as its parent (W3C trace
                # context in the request's _meta): the server's span joins the call's trace.
                assert trace.get_current_span().get_span_context().span_id == ours.span_id
                call.result(await client.call_tool(TOOL, {"host_group": "vdi-a"}))
    import json

    server_spans = [json.loads(line) for line in lines.read_text().splitlines()]
    (handled,) = [s for s in server_spans if s["name"] == f"tools/call {TOOL}"]
    # In our trace, under our span: directly, or through the client's request span when the process's
    # global provider records the MCP SDK's own spans.
    assert handled["trace"] == ours.trace_id and handled["parent"] is not None


def test_the_sync_context_manager_holds_the_call_and_judges_its_result(telemetry: Telemetry) -> None:
    from opentelemetry import trace

    telemetry.configure(check_column_types="enforce")
    ci.declare_tool(TOOL, result_columns=LUN_COLUMNS)
    tracer = telemetry.provider.get_tracer("storage-client")
    with ci.run("q") as agent_run:
        with agent_run.tool_call(TOOL, "call_1", {"host_group": "vdi-a"}) as call:
            with tracer.start_as_current_span("GET /luns"):
                rows = LUN_ROWS
            delivered = call.result(rows)
            assert call.result(rows) == delivered  # reported once
        assert trace.get_current_span() is not call.span
    assert isinstance(delivered, str) and delivered.startswith("Result rejected")
    ours = telemetry.one(names.tool_span_name(TOOL))
    (request,) = telemetry.named("GET /luns")
    assert request.parent is not None and request.parent.span_id == ours.context.span_id
    assert ours.attributes is not None and ours.attributes[names.GEN_AI_TOOL_CALL_ID] == "call_1"
    assert [f.kind for f in agent_run.findings] == ["column-type-mismatch"]


def test_a_call_that_raises_or_reports_nothing_is_never_silently_judged(telemetry: Telemetry) -> None:
    telemetry.configure(check_column_types="warn")
    ci.declare_tool(TOOL, result_columns=LUN_COLUMNS)
    with ci.run("q") as agent_run:
        with pytest.raises(ConnectionError), agent_run.tool_call(TOOL, "call_1"):
            raise ConnectionError("the server went away")
        with agent_run.tool_call(TOOL, "call_2"):
            pass  # closed without a result
    spans = telemetry.named(names.tool_span_name(TOOL))
    assert len(spans) == 2 and spans[0].status.status_code.name == "ERROR"
    row = next(r for r in agent_run.ledger() if r.check == "column-type-mismatch")
    assert (row.checked, row.unreachable) == (0, 1)  # the raising call judged nothing; the silent one said so


# ── 5. never silently unjudged ───────────────────────────────────────────

SERVED_META = {META_KEY: {"result_columns": LUN_COLUMNS}}


def _flaky(server: Any, fails: Any) -> Any:
    """``server``, whose ``tools/list`` fails on the listings ``fails(n)`` picks (n counts from 1)."""
    listings = [0]

    def failing() -> bool:
        listings[0] += 1
        return bool(fails(listings[0]))

    if isinstance(server, fastmcp.FastMCP):
        from fastmcp.server.middleware import Middleware

        class Flaky(Middleware):
            async def on_list_tools(self, context: Any, call_next: Any) -> Any:
                if failing():
                    raise RuntimeError("the server is still starting")
                return await call_next(context)

        server.add_middleware(Flaky())
    else:

        async def flaky(ctx: Any, call_next: Any) -> Any:
            if getattr(ctx, "method", None) == "tools/list" and failing():
                raise RuntimeError("the server is still starting")
            return await call_next(ctx)

        server.middleware.append(flaky)
    return server


def _pydantic_ai_run(telemetry: Telemetry, toolset: Any) -> tuple[Any, Any]:
    """An agent holding ``toolset`` that calls the LUN tool once; (the script, the run's coroutine)."""
    from pydantic_ai import Agent
    from tests.frameworks.test_pydantic_ai import Script, call, instrumented, text

    script = Script.of(call(TOOL, "call_lun", host_group="vdi-a"), text("vdi-a maps two LUNs."))
    agent: Any = Agent(script.model(), name="storage", toolsets=[toolset])
    agent.instrument = instrumented(telemetry)
    return script, agent.run("Map vdi-a.")


def _column_rows(telemetry: Telemetry) -> dict[str, object]:
    (summary,) = telemetry.summaries()
    attributes = dict(summary.attributes or {})
    return {
        field: attributes.get(names.row_attribute("column-type-mismatch", "write", field), 0)
        for field in ("checked", "findings", "not_applicable", "unreachable")
    }


@pytest.fixture
def pydantic_ai_armed(telemetry: Telemetry) -> Any:
    from context_integrity.integrations import pydantic_ai as integration

    yield telemetry
    integration.uninstrument_all()


@pytest.mark.parametrize("make_server", [_sdk_server, _fastmcp_server], ids=["mcp-sdk", "fastmcp"])
@pytest.mark.parametrize("mode", ["warn", "enforce"])
async def test_a_failed_pre_run_listing_is_retried_at_the_servers_first_call(
    pydantic_ai_armed: Telemetry, caplog: pytest.LogCaptureFixture, make_server: Any, mode: str
) -> None:
    from pydantic_ai.mcp import MCPToolset
    from tests.frameworks.test_pydantic_ai import returns

    telemetry = pydantic_ai_armed
    telemetry.configure(check_column_types=mode)
    server = _flaky(make_server("slow-storage", SERVED_META), lambda n: n == 1)  # only the first fails
    script, running = _pydantic_ai_run(telemetry, MCPToolset(server))
    with caplog.at_level(logging.DEBUG, logger="context_integrity"):  # logged at error once a process
        await running
    assert any("listing a pydantic-ai MCP toolset's tools" in r.getMessage() for r in caplog.records)
    (delivered,) = returns(script.received[1])
    if mode == "enforce":
        assert isinstance(delivered.content, str) and delivered.content.startswith("Result rejected")
    else:
        assert delivered.content == LUN_ROWS
    findings = [e for s in telemetry.finished() for e in s.events if e.name == names.FINDING_EVENT]
    assert len(findings) == 1
    # Armed at the call: the run's start did not count it not-applicable after all.
    assert _column_rows(telemetry) == {"checked": 1, "findings": 1, "not_applicable": 0, "unreachable": 0}


async def test_a_tool_whose_server_cannot_be_listed_reads_unreachable_with_the_reason(
    pydantic_ai_armed: Telemetry,
) -> None:
    from pydantic_ai.mcp import MCPToolset
    from tests.frameworks.test_pydantic_ai import returns

    telemetry = pydantic_ai_armed
    telemetry.configure(check_column_types="warn")
    # Every other listing fails: before the run and at our retry; the run's own listings succeed.
    server = _flaky(_sdk_server("flaky-storage", SERVED_META), lambda n: n % 2 == 1)
    script, running = _pydantic_ai_run(telemetry, MCPToolset(server, cache_tools=False))
    await running
    (delivered,) = returns(script.received[1])
    assert delivered.content == LUN_ROWS  # warn: the tool works, unjudged
    assert _column_rows(telemetry) == {"checked": 0, "findings": 0, "not_applicable": 0, "unreachable": 1}
    reasons = [
        str(dict(e.attributes or {})[names.UNREACHABLE_REASON])
        for s in telemetry.finished()
        for e in s.events
        if e.name == names.UNREACHABLE_EVENT
    ]
    assert reasons and all("'flaky-storage'" in r and "could not be listed" in r for r in reasons)


STARTS_SLOWLY = """
import os, sys
from typing import Any
from mcp.server.mcpserver import MCPServer

marker = sys.argv[1]
if not os.path.exists(marker):  # the first start fails, as a server still warming up would
    open(marker, "w").close()
    sys.exit(3)
server = MCPServer("late-storage", log_level="ERROR")

@server.tool(meta={"io.github.context-integrity/contract": {"result_columns": {"lun": "number", "host_group": "string"}}})
def lun_mappings(host_group: str) -> list[dict[str, Any]]:
    return [{"lun": "", "host_group": host_group}, {"lun": 1, "host_group": host_group}]

server.run("stdio")
"""


async def test_over_stdio_a_server_that_failed_its_first_start_is_judged_at_its_first_call(
    pydantic_ai_armed: Telemetry, tmp_path: Path
) -> None:
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai.mcp import MCPToolset

    telemetry = pydantic_ai_armed
    telemetry.configure(check_column_types="enforce")
    script_path = tmp_path / "server.py"
    script_path.write_text(STARTS_SLOWLY)
    transport = StdioTransport(
        command=sys.executable, args=[str(script_path), str(tmp_path / "started")], keep_alive=False
    )
    script, running = _pydantic_ai_run(telemetry, MCPToolset(transport, init_timeout=60))
    await running
    from tests.frameworks.test_pydantic_ai import returns

    (delivered,) = returns(script.received[1])
    assert isinstance(delivered.content, str) and delivered.content.startswith("Result rejected")
    assert _column_rows(telemetry)["findings"] == 1


@pytest.mark.parametrize("make_server", [_sdk_server, _fastmcp_server], ids=["mcp-sdk", "fastmcp"])
async def test_a_malformed_declaration_reads_unreachable_not_not_applicable(
    telemetry: Telemetry, make_server: Any
) -> None:
    telemetry.configure(check_column_types="enforce")
    server = make_server("typo-storage", MALFORMED)
    async with fastmcp.Client(server) as client:
        await ci_mcp.ingest_client(client)
        with ci.run("q") as agent_run:
            async with agent_run.tool_call(TOOL, "call_1", {"host_group": "vdi-a"}) as call:
                raw = await client.call_tool(TOOL, {"host_group": "vdi-a"})
                delivered = call.result(raw)
    assert delivered is raw  # nothing declared could be read, so nothing is enforced: the tool works
    row = next(r for r in agent_run.ledger() if r.check == "column-type-mismatch")
    assert (row.checked, row.not_applicable, row.unreachable) == (0, 0, 1)
    (span,) = telemetry.named(names.tool_span_name(TOOL))
    (reason,) = {
        str(dict(e.attributes or {})[names.UNREACHABLE_REASON])
        for e in span.events
        if e.name == names.UNREACHABLE_EVENT
    }
    assert "'typo-storage'" in reason and "'integer'" in reason  # the server, and the rule it broke
