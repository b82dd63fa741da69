"""pydantic-ai's MCP toolset (``pydantic_ai.mcp.MCPToolset``, on the fastmcp client): each server's
declarations ingested as a run starts, each call judged on its raw ``CallToolResult``.

pydantic-ai 2 ships this one MCP toolset (``MCPServerStdio``, ``MCPServerStreamableHTTP`` and
their siblings are gone, their names point at it); it takes a URL, a script path, a fastmcp
transport or client, or an in-process fastmcp or MCP SDK server.

- Ingesting: a run arms its checks once, at its start, so the tools of every MCP toolset the run
  holds are listed before the run opens. The toolset is entered for that (its connection is
  counted, so the run's own entering reuses it instead of opening a second one) and the list it
  caches (``cache_tools=True``, the default) is the very one the run then offers the model. Each
  server's contracts are kept apart by the name it gave itself (``serverInfo.name``): the run
  judges a tool by the contract of the server it belongs to, whatever another server or run lists
  under the same name. A listing that fails before the run (a server slow to start) is retried at
  the first call of one of that server's tools, when the run's own connection is up; a retry that
  fails too leaves the tool's declarations unread, so its checks read ``unreachable`` with the
  reason, never ``not-applicable``.
- Judging: pydantic-ai hands the model what it makes of a result (the structured content
  unwrapped from ``{"result": ...}`` when every content block is text, else the blocks
  themselves); the rows live in the structured content. The toolset's checked call is wrapped:
  inside a tool execution the capability judges, the raw result is kept, and judged in place of
  the value when that value is what pydantic-ai made of it (a ``process_tool_call`` hook that
  changed it is judged on what it returned).

Nothing here imports ``pydantic_ai.mcp`` (it imports fastmcp): an ``MCPToolset`` exists only once
the application imported it, so until then there is nothing to read and nothing costs.
"""

from __future__ import annotations

import contextvars
import functools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from pydantic_ai.toolsets import (
    AbstractToolset,
    CombinedToolset,
    PrefixedToolset,
    RenamedToolset,
    WrapperToolset,
)

from ..contracts import ToolContract
from ..contracts.meta import TRAVELLING_FIELDS
from ..telemetry.emit import record_internal_error
from ..telemetry.setup import CONTRACTS
from ..text import exception_message, repr_clipped

_MODULE = "pydantic_ai.mcp"
_CHECKED = "_call_tool_checked"
_originals: dict[str, Any] = {}


class Kept(NamedTuple):
    """One MCP call made within a tool execution: the toolset, the tool as its server names it, the raw result."""

    toolset: Any
    name: str
    result: object


# Within one tool execution the capability judges: every MCP call made; None outside one, so other
# calls keep nothing.
_kept: contextvars.ContextVar[list[Kept] | None] = contextvars.ContextVar(
    "context_integrity_pydantic_ai_mcp_kept", default=None
)


def _toolset_class() -> type[Any] | None:
    cls = getattr(sys.modules.get(_MODULE), "MCPToolset", None)
    return cls if isinstance(cls, type) else None


def patch() -> None:
    """Wrap the toolset's checked call, once ``pydantic_ai.mcp`` is loaded. Idempotent, cheap; never raises."""
    if _originals:
        return
    try:
        _patch()
    except Exception as ours:
        record_internal_error(None, "wrapping pydantic-ai's MCP tool call", ours)


def _patch() -> None:
    cls = _toolset_class()
    checked = cls.__dict__.get(_CHECKED) if cls is not None else None
    if cls is None or not callable(checked):
        # Not loaded yet (or a pydantic-ai without the call): MCP results are judged on the
        # value the model receives, like any tool's.
        return

    @functools.wraps(checked)
    async def call_tool_checked(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        result = await checked(self, name, *args, **kwargs)
        kept = _kept.get()
        if kept is not None:
            kept.append(Kept(self, name, result))
        return result

    setattr(cls, _CHECKED, call_tool_checked)
    _originals[_CHECKED] = checked


def unpatch() -> None:
    cls = _toolset_class()
    original = _originals.pop(_CHECKED, None)
    if cls is not None and original is not None:
        setattr(cls, _CHECKED, original)


# ── the run's MCP toolsets and their declarations ───────────────────────


# How the model names a tool of an MCP toolset: the server's name through the prefixes and renames
# of the toolsets wrapped around it.
Naming = Callable[[str], str]


def _as_served(name: str) -> str:
    return name


def mcp_toolsets(ctx: object) -> list[tuple[Any, Naming]]:
    """Every ``MCPToolset`` the run holds, with how the model names its tools: the run's own toolset
    tree (per-run copies, run-level and capability toolsets included), else the agent's."""
    cls = _toolset_class()
    if cls is None:
        return []
    root = getattr(getattr(ctx, "tool_manager", None), "toolset", None)
    roots: Sequence[object] = (
        [root]
        if isinstance(root, AbstractToolset)
        else list(getattr(getattr(ctx, "agent", None), "toolsets", ()) or ())
    )
    found: list[tuple[Any, Naming]] = []

    def walk(toolset: object, naming: Naming) -> None:
        if isinstance(toolset, cls):
            if not any(toolset is seen for seen, _ in found):
                found.append((toolset, naming))
        elif isinstance(toolset, PrefixedToolset):
            prefix = toolset.prefix
            walk(toolset.wrapped, lambda name: naming(f"{prefix}_{name}"))
        elif isinstance(toolset, RenamedToolset):
            public = {served: new for new, served in toolset.name_map.items()}
            walk(toolset.wrapped, lambda name: naming(public.get(name, name)))
        elif isinstance(toolset, WrapperToolset):
            walk(toolset.wrapped, naming)
        elif isinstance(toolset, CombinedToolset):
            for inner in toolset.toolsets:
                walk(inner, naming)
        elif isinstance(toolset, AbstractToolset):
            toolset.apply(lambda leaf: walk(leaf, naming) if leaf is not toolset else None)

    for toolset in roots:
        walk(toolset, _as_served)
    return found


def _label(toolset: Any) -> str:
    """The server's own name (``serverInfo.name``), else the toolset's id."""
    from .mcp import server_name

    fallback = getattr(toolset, "id", None)
    return server_name(toolset, fallback=fallback if isinstance(fallback, str) else None)


@dataclass(slots=True)
class Ingested:
    """What listing a run's MCP toolsets left: the toolsets entered for it (to :func:`release` when
    the run ends), the server names the model knows under another name, the contract of each tool
    by the name the model calls it (its own server's), and the toolsets whose listing failed, with
    how the model names their tools and why (retried at the first call of one of their tools)."""

    entered: list[Any] = field(default_factory=list)
    renamed: set[str] = field(default_factory=set)
    contracts: dict[str, ToolContract] = field(default_factory=dict)
    unlisted: list[tuple[Any, Naming, str]] = field(default_factory=list)

    def take(self, toolset: Any, naming: Naming, listed: Sequence[object]) -> None:
        """Ingest one toolset's listing, each tool as its server's and under the name the model calls it."""
        from .mcp import ingest_tools

        server = _label(toolset)
        for contract in ingest_tools(listed, server=server):
            public = naming(contract.name)
            if public != contract.name:
                self.renamed.add(contract.name)
                contract = CONTRACTS.declare_served(replace(contract, name=public), server) or contract
            self.contracts[public] = contract

    async def relist(self, toolset: Any, public: str) -> ToolContract | None:
        """The contract of tool ``public`` of ``toolset`` when the toolset's listing failed before
        the run: listed again now, at the first call of one of its tools (the run's own connection is
        up). A retry that fails too leaves the tool's declarations unread, with the reason, and is
        not tried again this run. ``None`` when the toolset was listed before the run. Never raises."""
        found = next((entry for entry in self.unlisted if entry[0] is toolset), None)
        if found is None:
            return None
        self.unlisted.remove(found)
        _, naming, before = found
        server = _label(toolset)
        try:
            self.take(toolset, naming, await toolset.list_tools())
            return self.contracts.get(public)
        except Exception as ours:
            record_internal_error(None, "listing a pydantic-ai MCP toolset's tools again", ours)
            why = (
                f"the tools of MCP server {repr_clipped(server)} could not be listed, so what they declare "
                f"is unknown: before the run ({before}) and at its first call ({repr_clipped(exception_message(ours))})"
            )
            unread = ToolContract(name=public, unread=tuple((name, why) for name in TRAVELLING_FIELDS))
            self.contracts[public] = CONTRACTS.declare_served(unread, server) or unread
            return self.contracts[public]


async def ingest_toolsets(ctx: object) -> Ingested:
    """List and ingest the tools of the run's MCP toolsets, each declaration also under the name the
    model calls the tool by. Never raises (a cancellation passes through)."""
    out = Ingested()
    try:
        toolsets = mcp_toolsets(ctx)
    except Exception as ours:
        record_internal_error(None, "finding a pydantic-ai run's MCP toolsets", ours)
        return out
    for toolset, naming in toolsets:
        if getattr(toolset, "_resolves_per_run", False):
            continue  # a template for per-run copies: it cannot connect, the run's copy is in the tree
        try:
            await toolset.__aenter__()
            out.entered.append(toolset)
            out.take(toolset, naming, await toolset.list_tools())
        except Exception as ours:  # the run meets the same failure on its own, as it would without us
            record_internal_error(None, "listing a pydantic-ai MCP toolset's tools", ours)
            out.unlisted.append((toolset, naming, repr_clipped(exception_message(ours))))
    return out


async def release(entered: Sequence[Any]) -> None:
    """Leave the toolsets :func:`ingest_toolsets` entered (the last one out closes the connection)."""
    for toolset in reversed(entered):
        try:
            await toolset.__aexit__(None, None, None)
        except Exception as ours:
            record_internal_error(None, "leaving a pydantic-ai MCP toolset", ours)


# ── the raw result of a call ─────────────────────────────────────────────


class keeping:
    """Keep the raw results of the MCP calls made within this block (one tool execution).

    A class rather than a generator context manager: it runs around every tool call.
    """

    __slots__ = ("_kept", "_token")

    def __init__(self) -> None:
        self._kept: list[Kept] = []
        self._token: contextvars.Token[list[Kept] | None] | None = None

    def __enter__(self) -> list[Kept]:
        self._token = _kept.set(self._kept)
        return self._kept

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _kept.reset(self._token)


def judged_result(kept: Sequence[Kept], returned: object) -> object | None:
    """The raw result to judge in place of ``returned``, as an MCP ``CallToolResult``; ``None``
    when ``returned`` is not what pydantic-ai made of the last MCP result kept. Never raises."""
    if not kept:
        return None
    try:
        result = kept[-1].result
        mapper = getattr(sys.modules.get(_MODULE), "_map_mcp_call_tool_result", None)
        if not callable(mapper) or mapper(result) != returned:
            return None
        import mcp.types as mt

        # Built unvalidated: the client already validated the result it parsed.
        return mt.CallToolResult.model_construct(
            content=list(getattr(result, "content", None) or ()),
            structured_content=getattr(result, "structured_content", None),
            is_error=bool(getattr(result, "is_error", False)),
            meta=getattr(result, "meta", None),  # what the server said of its result, judged or settled
        )
    except Exception as ours:
        record_internal_error(None, "reading a pydantic-ai MCP tool's raw result", ours)
        return None
