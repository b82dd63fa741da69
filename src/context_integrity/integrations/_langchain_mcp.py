"""LangChain's MCP adapter (``langchain-mcp-adapters``): its tools armed as a local tool is.

``load_mcp_tools(session)`` (or ``MultiServerMCPClient.get_tools()``) turns each tool a server
lists into a ``StructuredTool`` whose coroutine calls the server. Such a tool is recognised by that
coroutine, which the adapter defines: nothing of the adapter is imported here, so this module loads
(and finds nothing) where the adapter is not installed.

- **Declarations:** the listed MCP tool, ``_meta`` and output schema included, is what the coroutine
  closes over; it is ingested as :func:`~context_integrity.integrations.mcp.ingest_tools` would, under
  the LangChain name (a server-prefixed one included), when the agent is created and when its run
  opens. Should a later adapter keep it elsewhere, the ``_meta`` the adapter copies into the tool's
  ``metadata`` is read instead.
- **Results:** the coroutine returns ``(content blocks, {"structured_content": ...})`` (its
  ``content_and_artifact`` format); the write seam judges that pair read back as the
  ``CallToolResult`` it was made from, so the rows are judged in the structured content before
  LangChain turns the content blocks into the model's text. An error result never gets here: the
  adapter raises it, and the tool span ends in error as for any raising tool.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from langchain_core.tools import BaseTool

from ..telemetry.setup import CONTRACTS
from .mcp import read_tool

# The module the adapter's tool coroutines are defined in.
_ADAPTER_MODULE: Final = "langchain_mcp_adapters.tools"
# The adapter keeps the listed tool's ``_meta`` under this key of the LangChain tool's metadata.
_META: Final = "_meta"


def is_adapter_tool(tool: BaseTool) -> bool:
    """Whether ``tool`` was made by LangChain's MCP adapter (its coroutine is the adapter's)."""
    coroutine = getattr(tool, "coroutine", None)
    return getattr(coroutine, "__module__", None) == _ADAPTER_MODULE


def _closed_over(fn: object, name: str) -> object:
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None)
    names = getattr(code, "co_freevars", ())
    if cells is None or name not in names:
        return None
    try:
        return cells[names.index(name)].cell_contents
    except (ValueError, IndexError):  # an empty cell
        return None


def declare(tool: BaseTool) -> None:
    """Declare an adapter-made tool from what its server listed, as that server's. Never raises;
    never overrides a declaration made in this process."""
    coroutine = getattr(tool, "coroutine", None)
    label = _closed_over(coroutine, "server_name")
    server = label if isinstance(label, str) and label else "mcp"
    listed = _closed_over(coroutine, "tool")
    known_schema = listed is not None and hasattr(listed, "name")
    if not known_schema:
        metadata = tool.metadata if isinstance(tool.metadata, Mapping) else {}
        listed = {"name": tool.name, "_meta": metadata.get(_META)}
    contract = read_tool(listed, server=server, name=tool.name)
    if contract is None:
        return
    if not known_schema and contract.result_columns:
        # Without the output schema: MCP's structured content is always an object, so rows can
        # only arrive as the SDK's {"result": [...]} wrapping (the server-side judge reads it so too).
        contract = dataclasses.replace(contract, result_wrapped=True)
    CONTRACTS.declare_served(contract, server)


def call_result(raw: Any) -> object:
    """The adapter's ``(content blocks, artifact)`` read back as the ``CallToolResult`` (wire form)
    it was made from; anything else (an interceptor's ``ToolMessage``) carries no structured content."""
    content, artifact = raw if isinstance(raw, tuple) and len(raw) == 2 else (None, None)
    structured = artifact.get("structured_content") if isinstance(artifact, Mapping) else None
    return {
        "content": content if isinstance(content, list) else [],
        "structuredContent": structured,
        "isError": False,
    }
