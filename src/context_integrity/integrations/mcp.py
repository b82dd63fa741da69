"""MCP: declarations travel with the tool, results are read the way MCP carries them, and
enforcement works at both ends.

- **Serving** (`serve_contracts(server)`, one call per server, or `tool_meta(name)` per tool): a
  server built with the official MCP Python SDK (``mcp.server.mcpserver.MCPServer``) or with fastmcp
  publishes each declared tool's contract in its definition's ``_meta`` under
  :data:`~context_integrity.contracts.meta.META_KEY`. A tool without declarations publishes no key.
  A result whose structured content is a semantic envelope (``ci.semantic(...)``) is marked in its
  own ``_meta`` under :data:`~context_integrity.contracts.meta.RESULT_META_KEY`, so the client
  settles its facts.
- **Judging at the server** (`judge_results(server)`; `enforce` is its older name, kept as an
  alias): a middleware judges a tool's structured result against its own contract before it
  leaves the server, in warn as in enforce, and says what it found in the result's ``_meta`` (its
  name, the contract it judged by, each row's disposition, the findings it filed). In enforce, the
  client receives an error result (``isError: true``) whose text is the refusal sentence — never a
  non-error text result, which would fail the client's output-schema validation. In warn the result
  passes through and the server's own ``tools/call`` span carries the findings.
- **Ingesting** (`ingest_tools(tools, server=...)`, or `await ingest_client(client)`): a server's tool
  list becomes contracts, kept apart by the server's name (``serverInfo.name``); each known field is
  vetted by the same definition-time assert a local tool's declaration goes through, and a
  malformed one is dropped with one warning (a contract over a cap of ``limits.py``, refused whole).
  A declaration made in this process always stands. Never raises.
  ``columns_from_output_schema=True`` reads a row-describing output schema as the column declaration.
- **Judging at the client**: a result a server judged, by the same contract, is recorded in the
  run's ledger as judged at the server (``judged_at_server``) and its findings are not filed again:
  they live on the server's span. With a different contract the client judges by its own and says so.

The MCP SDK and fastmcp are imported lazily, inside the functions that need them.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from ..contracts import ToolContract, define_contract
from ..contracts.meta import (
    JUDGED,
    META_KEY,
    RESULT_META_KEY,
    SEMANTIC,
    WARNED,
    columns_from_output_schema,
    judged_stamp,
    over_a_cap,
    read_contract_meta,
    with_contract_meta,
    with_result_meta,
    wrapped_rows_schema,
)
from ..contracts.results import judged_value
from ..contracts.semantic import is_envelope
from ..limits import MAX_NAMED_IN_REFUSAL, MAX_SERVED_NAME_CHARS
from ..telemetry.emit import record_internal_error
from ..telemetry.run.tool_call import ToolScope
from ..telemetry.setup import CONTRACTS
from ..text import repr_clipped

logger = logging.getLogger("context_integrity")

__all__ = [
    "META_KEY",
    "RESULT_META_KEY",
    "enforce",
    "ingest_client",
    "ingest_tools",
    "judge_results",
    "read_tool",
    "serve_contracts",
    "server_name",
    "tool_meta",
]

_MARK: Final = "_context_integrity_mcp"


# ── serving declarations ────────────────────────────────────────────────


def tool_meta(name: str, meta: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The ``_meta`` to pass to a tool definition (``@server.tool(meta=ci_mcp.tool_meta("rows"))``).

    The declared contract of ``name`` under our key, beside any ``meta`` given; ``None`` when the
    tool declared nothing that travels and no ``meta`` was given.
    """
    return with_contract_meta(meta, CONTRACTS.get(name))


def _stamp_wire_tools(result: object) -> object:
    if isinstance(result, Mapping) and isinstance(result.get("tools"), list):
        for listed in result["tools"]:
            if isinstance(listed, dict) and isinstance(listed.get("name"), str):
                meta = with_contract_meta(listed.get("_meta"), CONTRACTS.get(listed["name"]))
                if meta is not None:
                    listed["_meta"] = meta
    return result


def _stamp_tool_models(tools: Any) -> Any:
    """A server's listed tool models (1.x ``Tool`` infos, fastmcp's tools), each with its contract
    in ``meta``: copies, the server's own are never changed. Never raises: on a failure, as listed."""
    try:
        out = []
        for listed in tools:
            meta = with_contract_meta(listed.meta, CONTRACTS.get(listed.name))
            out.append(listed if meta is None else listed.model_copy(update={"meta": meta}))
        return out
    except Exception as ours:
        record_internal_error(None, "publishing MCP tool contracts", ours)
        return tools


def _is_fastmcp(server: object) -> bool:
    return type(server).__module__.startswith("fastmcp")


def _label_of(server: Any) -> str:
    """The name a server was given (the ``serverInfo.name`` it will tell its clients)."""
    name = getattr(server, "name", None)
    return name[:MAX_SERVED_NAME_CHARS] if isinstance(name, str) and name.strip() else "mcp"


Middleware = Callable[[Any, Callable[[Any], Awaitable[Any]]], Awaitable[Any]]


def _install_once(
    server: Any,
    mark: str,
    *,
    fastmcp: Callable[[], Any],
    tool_manager: Callable[[Any], None],
    middleware: Callable[[], Middleware],
) -> Any:
    """Hook ``server`` once (``mark`` says it is done), the way its kind allows: fastmcp's
    middleware, the 1.x SDK ``FastMCP``'s tool manager (it has no middleware), or the 2.x SDK's
    middleware list. Returns ``server``."""
    _keep_warnings_visible()
    if getattr(server, _MARK + mark, False):
        return server
    if _is_fastmcp(server):
        server.add_middleware(fastmcp())
    elif not hasattr(server, "middleware") and hasattr(server, "_tool_manager"):
        tool_manager(server)
    else:
        server.middleware.append(middleware())
    setattr(server, _MARK + mark, True)
    return server


def serve_contracts(server: Any) -> Any:
    """Publish every declared tool's contract in the ``_meta`` of the tools ``server`` lists, and
    mark a result whose structured content is a semantic envelope (``ci.semantic(...)``) in its own
    ``_meta``, so the client settles its facts.

    One call per server, for tools defined before or after it; idempotent. Returns ``server``.
    """
    label = _label_of(server)
    return _install_once(
        server,
        "_serve",
        fastmcp=lambda: _fastmcp_middleware(label, serve=True, judge=False),
        tool_manager=lambda hooked: _hook_tool_manager(hooked, label, serve=True, judge=False),
        middleware=lambda: _wire_middleware(label, serve=True, judge=False),
    )


# ── what the server says of a result ────────────────────────────────────


def _judged_on_server(
    label: str, name: object, arguments: object, structured: object
) -> tuple[str | None, Any]:
    """Judge one structured result against the tool's own contract: (the refusal sentence or
    ``None``, the ``judged`` stamp for the result's ``_meta`` or ``None``)."""
    if not isinstance(name, str):
        return None, None
    contract = CONTRACTS.get(name)
    if contract is None or not contract.result_columns:
        return None, None
    rows = judged_value({"content": [], "structuredContent": structured, "isError": False}, wrapped=True)
    args = dict(arguments) if isinstance(arguments, Mapping) else {}
    # Judged on its own, never in a client's run that happens to be open in this process: the
    # server is its own service, and its findings live on its own span.
    scope = ToolScope(contract, lambda: args, standalone=True)
    scope.judge.keep_rows = True
    delivered = scope.finish(rows)
    verdict = scope.verdict
    stamp = None
    if verdict is not None and verdict.rows:
        stamp = judged_stamp(
            label, contract, {row.render(): d for row, d in verdict.rows.items()}, verdict.findings
        )
    refusal = delivered if delivered is not rows and isinstance(delivered, str) else None
    return refusal, stamp


def _said(
    label: str, name: object, arguments: object, structured: object, *, judge: bool
) -> tuple[str | None, dict[str, Any]]:
    """What a result's ``_meta`` says of it under our key (a judged stamp, a semantic envelope's
    mark), and the refusal that replaces it; never raises (a failure is recorded, nothing said)."""
    said: dict[str, Any] = {}
    try:
        if is_envelope(structured):
            said[SEMANTIC] = True
        if judge:
            refusal, judged = _judged_on_server(label, name, arguments, structured)
            if judged is not None:
                said[JUDGED] = judged
            return refusal, said
    except Exception as ours:
        record_internal_error(None, "judging an MCP tool result", ours)
    return None, said


def _refusal_result(text: str, said: Mapping[str, Any]) -> Any:
    import mcp.types as mt

    # By the wire's own names, which both SDK lines validate (2.x's models also take snake_case).
    wire: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
    if said:
        wire["_meta"] = with_result_meta(None, **said)
    return mt.CallToolResult.model_validate(wire)


def _wire_middleware(label: str, *, serve: bool, judge: bool) -> Middleware:
    """The 2.x SDK's middleware: the listing stamped (``serve``), every call's result marked, and
    judged (``judge``)."""

    async def middleware(ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        result = await call_next(ctx)
        try:
            method = getattr(ctx, "method", None)
            if method == "tools/list" and serve:
                _stamp_wire_tools(result)
            elif method == "tools/call" and isinstance(result, Mapping):
                if result.get("isError") or "structuredContent" not in result:
                    return result
                params = getattr(ctx, "params", None) or {}
                refusal, said = _said(
                    label,
                    params.get("name"),
                    params.get("arguments"),
                    result["structuredContent"],
                    judge=judge,
                )
                if refusal is not None:
                    return _refusal_result(refusal, said)
                if said:
                    return {**result, "_meta": with_result_meta(result.get("_meta"), **said)}
        except Exception as ours:
            record_internal_error(None, "judging an MCP tool result", ours)
        return result

    return middleware


def _keep_warnings_visible() -> None:
    """The SDK's ``MCPServer(log_level=...)`` calls ``logging.basicConfig`` on the root logger: at
    ``"ERROR"`` or ``"CRITICAL"`` every warning of ours would be dropped in a server's process. Our
    logger is given its own level, WARNING, when the application set none; a level it set stands
    (``logging.getLogger("context_integrity").setLevel(...)`` silences us as it always did)."""
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.WARNING)


def judge_results(server: Any) -> Any:
    """Judge every tool result ``server`` returns against its own contract, before it leaves.

    With ``setup(check_column_types="enforce")`` a refused result reaches the client as an error
    result whose text is the refusal sentence; with ``"warn"`` it passes through and the server's
    span carries the findings. Either way the result's ``_meta`` says what the server found, so a
    client of this library records it as judged there and does not file the same findings again.
    Idempotent; returns ``server``. ``enforce`` is the same function under its older name.
    """
    label = _label_of(server)
    return _install_once(
        server,
        "_enforce",
        fastmcp=lambda: _fastmcp_middleware(label, serve=False, judge=True),
        tool_manager=lambda hooked: _hook_tool_manager(hooked, label, serve=False, judge=True),
        middleware=lambda: _wire_middleware(label, serve=False, judge=True),
    )


enforce: Final = judge_results
"""The older name of :func:`judge_results`, kept: it judges in warn too, which the name did not say."""


def _hook_tool_manager(server: Any, label: str, *, serve: bool, judge: bool) -> None:
    """The SDK's 1.x ``FastMCP`` has no middleware: its tool manager is hooked instead.

    ``serve``: its listing is stamped (``FastMCP.list_tools`` reads each registered tool's ``meta``
    from it, for tools defined before or after this call). Every call's result is marked and, with
    ``judge``, judged: a tool with an output schema comes back as ``(content blocks, structured
    content)``, and a ``CallToolResult`` returned in its place, error or not, reaches the client
    unchanged (the SDK passes one through, output-schema validation included).
    """
    import mcp.types as mt

    manager = server._tool_manager
    if serve:
        listed = manager.list_tools

        def stamped() -> Any:
            return _stamp_tool_models(listed())

        manager.list_tools = stamped
    call = manager.call_tool

    async def marked(name: str, arguments: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        result = await call(name, arguments, *args, **kwargs)
        try:
            if isinstance(result, tuple) and len(result) == 2:
                content, structured, meta = result[0], result[1], None
            elif isinstance(result, mt.CallToolResult) and not result.isError:  # type: ignore[attr-defined]
                content, structured, meta = result.content, result.structuredContent, result.meta  # type: ignore[attr-defined]
            else:
                return result
            refusal, said = _said(label, name, arguments, structured, judge=judge)
            if refusal is not None:
                return _refusal_result(refusal, said)
            if said:
                return mt.CallToolResult.model_validate(
                    {
                        "content": content,
                        "structuredContent": structured,
                        "_meta": with_result_meta(meta, **said),
                    }
                )
        except Exception as ours:
            record_internal_error(None, "judging an MCP tool result", ours)
        return result

    manager.call_tool = marked


def _fastmcp_middleware(label: str, *, serve: bool, judge: bool) -> Any:
    from fastmcp.server.middleware import Middleware
    from fastmcp.tools.base import ToolResult

    class ContextIntegrityMiddleware(Middleware):
        async def on_list_tools(self, context: Any, call_next: Any) -> Any:
            tools = await call_next(context)
            return _stamp_tool_models(tools) if serve else tools

        async def on_call_tool(self, context: Any, call_next: Any) -> Any:
            result = await call_next(context)
            try:
                if getattr(result, "is_error", False) or result.structured_content is None:
                    return result
                message = context.message
                refusal, said = _said(
                    label, message.name, message.arguments, result.structured_content, judge=judge
                )
                if refusal is not None:
                    import mcp.types as mt

                    return ToolResult(
                        content=[mt.TextContent(type="text", text=refusal)],
                        is_error=True,
                        meta=with_result_meta(None, **said) if said else None,
                    )
                if said:
                    return result.model_copy(update={"meta": with_result_meta(result.meta, **said)})
            except Exception as ours:
                record_internal_error(None, "judging an MCP tool result", ours)
            return result

    return ContextIntegrityMiddleware()


# ── ingesting declarations ──────────────────────────────────────────────


def _field(tool: object, *names_: str) -> object:
    for name in names_:
        if isinstance(tool, Mapping):
            if name in tool:
                return tool[name]
        elif hasattr(tool, name):
            return getattr(tool, name)
    return None


def ingest_tools(
    tools: Iterable[object], *, server: str = "mcp", columns_from_output_schema: bool = False
) -> list[ToolContract]:
    """Turn a server's tool list (``mcp.types.Tool`` models or their wire dicts) into contracts.

    Each tool is declared by name, as server ``server``'s, with whatever its ``_meta`` declared that
    survives vetting; with ``columns_from_output_schema=True`` a tool that declared no columns takes
    them from an output schema describing rows. Returns the contract each listed tool is judged by:
    its server's, or the declaration this process made for that name, which a server never replaces.
    Never raises: a tool that cannot be read is skipped with one log line.
    """
    declared: list[ToolContract] = []
    try:
        listed = list(tools)
    except Exception:
        return declared
    for tool in listed:
        try:
            contract = _ingest_one(tool, server=server, columns_from_schema=columns_from_output_schema)
        except Exception as ours:
            record_internal_error(None, "ingesting an MCP tool", ours)
            continue
        if contract is not None:
            # Kept apart by server; a declaration made in this process stands over it.
            applies = CONTRACTS.declare_served(contract, server)
            if applies is not None:
                declared.append(applies)
    return declared


def read_tool(
    tool: object, *, server: str = "mcp", name: str | None = None, columns_from_output_schema: bool = False
) -> ToolContract | None:
    """One listed tool's contract, declared nowhere, under ``name`` (a framework's prefixed name)
    or the tool's own; ``None`` when the tool has no name. Never raises."""
    try:
        return _ingest_one(tool, server=server, columns_from_schema=columns_from_output_schema, as_name=name)
    except Exception as ours:
        record_internal_error(None, "ingesting an MCP tool", ours)
        return None


def _ingest_one(
    tool: object, *, server: str, columns_from_schema: bool, as_name: str | None = None
) -> ToolContract | None:
    name = _field(tool, "name")
    if not isinstance(name, str) or not name.strip():
        return None
    if len(name) > MAX_SERVED_NAME_CHARS:
        WARNED.refuse(
            server, name, f"its name is {len(name):,} characters long, more than {MAX_SERVED_NAME_CHARS}"
        )
        return None
    travelled = read_contract_meta(_field(tool, "meta", "_meta"), server=server, tool=name)
    output_schema = _field(tool, "output_schema", "outputSchema")
    options = travelled.as_options()
    if columns_from_schema and "result_columns" not in options:
        found = columns_from_output_schema(name, output_schema)
        if found.columns:
            options["result_columns"] = found.columns
        if found.undeclared:
            logger.info(
                "context_integrity: MCP server %s, tool %s: output schema properties %s map to no "
                "column type and are left undeclared.",
                repr_clipped(server),
                repr_clipped(name),
                _named(found.undeclared),
            )
    refused = over_a_cap(options) if "result_columns" in options else None
    if refused is not None:  # columns read from an output schema are held to the served caps too
        WARNED.refuse(server, name, refused)
        options.pop("result_columns")
    input_schema = _field(tool, "input_schema", "inputSchema")
    description = _field(tool, "description")
    contract = define_contract(
        as_name or name,
        description=description if isinstance(description, str) else None,
        input_schema=input_schema if isinstance(input_schema, Mapping) else None,
        result_wrapped=wrapped_rows_schema(output_schema),
        **options,
    )
    return dataclasses.replace(contract, unread=travelled.unread) if travelled.unread else contract


def _named(values: Sequence[str]) -> str:
    """Names a log line lists: the first few, clipped, and how many more."""
    shown = ", ".join(repr_clipped(value) for value in values[:MAX_NAMED_IN_REFUSAL])
    more = len(values) - MAX_NAMED_IN_REFUSAL
    return f"{shown} and {more:,} more" if more > 0 else shown


async def ingest_client(
    client: Any, *, server: str | None = None, columns_from_output_schema: bool = False
) -> list[ToolContract]:
    """List the tools of a connected MCP client (``mcp.Client``, a ``ClientSession`` or a fastmcp
    ``Client``) and ingest their declarations, as those of the server named ``server``: by default
    the name the server gave itself in its initialize result (``serverInfo.name``). Never raises."""
    try:
        listed = await client.list_tools()
    except Exception as ours:
        record_internal_error(None, "listing an MCP server's tools", ours)
        return []
    tools = getattr(listed, "tools", listed)
    label = server or server_name(client)
    return ingest_tools(tools, server=label, columns_from_output_schema=columns_from_output_schema)


def server_name(*sources: Any, fallback: str | None = None) -> str:
    """The name a server gave itself (``serverInfo.name`` of its initialize result), read from the
    first source that knows it (a client, a session, a host's server object), else ``fallback``,
    else the name a host gave it, else ``"mcp"``; clipped to ``MAX_SERVED_NAME_CHARS``. Never raises."""
    for source in sources:
        try:
            info = getattr(source, "server_info", None)
            if info is None:
                result = getattr(source, "initialize_result", None) or getattr(
                    source, "server_initialize_result", None
                )
                info = getattr(result, "server_info", None) or getattr(result, "serverInfo", None)
            name = getattr(info, "name", None)
        except Exception:  # an uninitialised client may raise for its server info: the next source
            name = None
        if isinstance(name, str) and name.strip():
            return name[:MAX_SERVED_NAME_CHARS]
    if fallback is not None and fallback.strip():
        return fallback[:MAX_SERVED_NAME_CHARS]
    for source in sources:
        for attribute in ("name", "server_name"):
            value = getattr(source, attribute, None)
            if isinstance(value, str) and value.strip():
                return value[:MAX_SERVED_NAME_CHARS]
    return "mcp"
