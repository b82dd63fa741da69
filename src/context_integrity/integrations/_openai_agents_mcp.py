"""The Agents SDK's MCP servers: each tool's declarations ingested as the SDK converts it into a
``FunctionTool``, and each call's raw ``CallToolResult`` kept for the guardrail to judge.

The SDK hands the model (and its output guardrails) text made from the content blocks; the rows
live in the result's structured content, which only the SDK's custom-data step still sees, in the
tool call's own task. That step is wrapped: the result is kept by call id and the guardrail judges
it in place of the text.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agents.mcp.util import MCPUtil

from ..telemetry.emit import record_internal_error
from ..telemetry.setup import CONTRACTS

_originals: dict[str, Any] = {}
# call id -> the raw CallToolResult of an MCP tool call, until the guardrail takes it.
_raw: dict[str, object] = {}


def _ingest(tool: object, server: object, function_tool: Any) -> None:
    from .mcp import ingest_tools, server_name

    label = server_name(server)
    for contract in ingest_tools([tool], server=label):
        # A prefixed or overridden name is the one the model calls: the declaration follows it,
        # as the server's (a declaration this process made for that name stands).
        public = getattr(function_tool, "name", None)
        if isinstance(public, str) and public != contract.name:
            CONTRACTS.declare_served(replace(contract, name=public), label)


async def ingest_servers(agent: object) -> None:
    """Ingest the tools of ``agent``'s MCP servers before its run begins. Never raises.

    A run arms its checks once, at its start: a declaration first seen when the SDK lists the tools
    mid-run would only arm the next run. One listing per server and run (the SDK's own tool-list
    cache, ``cache_tools_list=True``, serves both).
    """
    from .mcp import ingest_tools, server_name

    for server in list(getattr(agent, "mcp_servers", None) or ()):
        try:
            listed = await server.list_tools()
            ingest_tools(listed, server=server_name(server))
        except Exception as ours:
            record_internal_error(None, "listing an Agents SDK MCP server's tools", ours)


def _keep(context: object, result: object) -> None:
    call_id = getattr(context, "tool_call_id", None)
    if isinstance(call_id, str):
        _raw[call_id] = result


def take_raw(call_id: object) -> object | None:
    """The raw result of MCP call ``call_id``, once (None for a tool that is not an MCP tool)."""
    return _raw.pop(call_id, None) if isinstance(call_id, str) else None


def patch() -> None:
    from ._openai_agents_hooks import _ours

    if _originals:
        return
    to_function_tool = MCPUtil.__dict__["to_function_tool"].__func__
    extract = MCPUtil.__dict__["_extract_custom_data"].__func__
    _originals["to_function_tool"] = MCPUtil.__dict__["to_function_tool"]
    _originals["_extract_custom_data"] = MCPUtil.__dict__["_extract_custom_data"]

    def converted(cls: Any, tool: Any, server: Any, *args: Any, **kwargs: Any) -> Any:
        function_tool = to_function_tool(cls, tool, server, *args, **kwargs)
        _ours("ingesting an MCP tool's declarations", lambda: _ingest(tool, server, function_tool))
        return function_tool

    async def extracted(cls: Any, *args: Any, **kwargs: Any) -> Any:
        context, result = kwargs.get("context"), kwargs.get("result")
        _ours("keeping an MCP tool's raw result", lambda: _keep(context, result))
        return await extract(cls, *args, **kwargs)

    MCPUtil.to_function_tool = classmethod(converted)  # type: ignore[assignment,method-assign]
    MCPUtil._extract_custom_data = classmethod(extracted)  # type: ignore[assignment,method-assign]


def unpatch() -> None:
    for name, original in list(_originals.items()):
        setattr(MCPUtil, name, original)
    _originals.clear()
    _raw.clear()
