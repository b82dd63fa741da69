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
