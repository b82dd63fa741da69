"""The write seam for LangChain: a judged copy of each tool, and what it hands LangChain back.

LangChain turns a tool's return value into text before any middleware sees it, so the raw value
is judged inside the tool: :func:`judging_copy` makes, once per tool, a copy whose runs open the
tool's span, judge the raw result and return it (or, under enforce, the refusal in its place).
The user's tool is never changed. Only imported by :mod:`.langchain`.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, Final

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from .._memo import IdentityMemo
from ..contracts import define_contract
from ..judge.seams import unjudged_refusal
from ..telemetry.emit import record_internal_error
from ..telemetry.run.tool_call import ToolScope, enforced_without_a_judge
from ..telemetry.setup import CONTRACTS
from . import _langchain_mcp
from ._langchain_runs import AgentRun, openinference_span, tool_call_var


def tool_name_of(request: Any) -> str:
    try:
        name = request.tool_call.get("name")
    except Exception:
        return ""
    return name if isinstance(name, str) else ""


def withheld(record: AgentRun | None, name: str) -> str | None:
    """The refusal for a result of ``name`` nobody judged, when enforce holds for it; else ``None``.

    Fail closed: enforce never hands over rows nobody looked at.
    """
    try:
        contract = CONTRACTS.get(name)
        if contract is None or not contract.result_columns:
            return None
        judge = record.run.judge if record is not None else None
        enforced = judge.enforces(name) if judge is not None else enforced_without_a_judge(contract)
    except Exception:  # cannot tell whether enforce holds: a tool with columns fails closed
        enforced = True
    return unjudged_refusal(name) if enforced else None


def refused(result: Any, refusal: str) -> Any:
    """The host's tool message with the refusal as its content (anything else is left alone)."""
    if not isinstance(result, ToolMessage):
        return result
    return ToolMessage(content=refusal, tool_call_id=result.tool_call_id, name=result.name)


def _unjudged(raw: Any, refusal: str | None, artifact_only: bool) -> Any:
    if refusal is None:
        return raw
    return (refusal, None) if artifact_only else refusal


def _open_scope(record: AgentRun, name: str, call: Any) -> ToolScope | None:
    try:
        contract = CONTRACTS.get(name) or define_contract(name)
        args = call.get("args")
        arguments = dict(args) if isinstance(args, dict) else {}
        host = openinference_span()  # inside the tool's own run: OpenInference's TOOL span
        with record.lock:
            return ToolScope(
                contract, lambda: arguments, run=record.run, call_id=call.get("id") or None, host_span=host
            )
    except Exception as ours:
        record_internal_error(None, "opening a LangChain tool span", ours)
        return None


def _deliver(record: AgentRun, scope: ToolScope, raw: Any, artifact_only: bool, mcp: bool = False) -> Any:
    """What the tool hands LangChain: its raw value, or the refusal in its place."""
    if mcp:  # an MCP adapter's tool: its (content, artifact) pair is a CallToolResult
        judged = _langchain_mcp.call_result(raw)
    else:
        judged = raw[1] if artifact_only and isinstance(raw, tuple) and len(raw) == 2 else raw
    with record.lock:
        delivered = scope.finish(judged)
    if delivered is judged:
        return raw
    return (delivered, None) if judged is not raw else delivered


def read_once(wrapper: Callable[..., Any], wrapped: Callable[..., Any]) -> None:
    """Give ``wrapper`` the signature and resolved type hints of ``wrapped``, read now, once.

    LangChain reads a tool's ``_run`` signature and type hints on every call (to hand it the run
    manager and the config), and LangSmith's ``traceable`` a middleware hook's: from a
    ``functools.wraps`` wrapper that means unwrapping it and parsing its string annotations
    each time.
    """
    # What does not read is left to be read as LangChain reads the tool's own, failing alike.
    with contextlib.suppress(Exception):
        wrapper.__signature__ = inspect.signature(wrapped)  # type: ignore[attr-defined]
    with contextlib.suppress(Exception):
        wrapper.__annotations__ = typing.get_type_hints(wrapped, include_extras=True)


_MAX_PROXIES: Final = 512
_proxies: Final[IdentityMemo[BaseTool, BaseTool]] = IdentityMemo(_MAX_PROXIES)


def judging_copy(tool: BaseTool) -> BaseTool:
    """A copy of ``tool`` whose runs are judged, made once per tool: the user's tool is never changed.

    The call it is running is read from the context (:data:`tool_call_var`), which the tool's run
    inherits from ``wrap_tool_call``. A ``@ci.tool`` function inside the tool is called
    unwrapped: this copy judges it, once.
    """
    return _proxies.of(tool, _judged_copy_of)


def _judged_copy_of(tool: BaseTool) -> BaseTool:
    updates: dict[str, Any] = {}
    for attribute in ("func", "coroutine"):
        fn = getattr(tool, attribute, None)
        if fn is not None and getattr(fn, "contract", None) is not None and hasattr(fn, "__wrapped__"):
            updates[attribute] = fn.__wrapped__
    proxy: BaseTool = tool.model_copy(update=updates)
    run, arun = proxy._run, proxy._arun
    artifact_only = tool.response_format == "content_and_artifact"
    mcp = _langchain_mcp.is_adapter_tool(tool)
    name = tool.name

    # BaseTool.run reads _run's signature and hints for run_manager and config: see read_once below.
    @functools.wraps(run)
    def judged_run(*args: Any, **kwargs: Any) -> Any:
        current = tool_call_var.get()
        if current is None:
            return run(*args, **kwargs)
        scope = _open_scope(current[0], name, current[1])
        if scope is None:
            return _unjudged(run(*args, **kwargs), withheld(current[0], name), artifact_only)
        try:
            raw = run(*args, **kwargs)
        except BaseException as error:
            scope.fail(error)
            raise
        return _deliver(current[0], scope, raw, artifact_only, mcp)

    @functools.wraps(arun)
    async def judged_arun(*args: Any, **kwargs: Any) -> Any:
        current = tool_call_var.get()
        if current is None:
            return await arun(*args, **kwargs)
        scope = _open_scope(current[0], name, current[1])
        if scope is None:
            return _unjudged(await arun(*args, **kwargs), withheld(current[0], name), artifact_only)
        try:
            raw = await arun(*args, **kwargs)
        except BaseException as error:
            scope.fail(error)
            raise
        return _deliver(current[0], scope, raw, artifact_only, mcp)

    read_once(judged_run, run)
    read_once(judged_arun, arun)
    object.__setattr__(proxy, "_run", judged_run)
    object.__setattr__(proxy, "_arun", judged_arun)
    return proxy
