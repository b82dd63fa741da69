"""LangChain v1 (``create_agent``): every seam from one middleware, placed innermost.

Two ways in. ``ci.setup()`` calls :func:`instrument_all`, after which every ``create_agent``
call appends :class:`ContextIntegrityMiddleware` last (innermost); or a user passes it to
``create_agent(middleware=[...])`` for one agent. Agents compiled before ``setup()`` are not
covered: LangChain reads an agent's middleware once, when it compiles the agent.

The host's run is the run: the agent's first model or tool call opens the judge's run (its
``invoke_agent`` span starts there, when the tools offered are known, so the tools' own
declarations are armed), and the host's own end of the agent's root run closes it, returned or
raised (a LangChain callback, see :mod:`._langchain_runs`). No node and no state of ours is added
to the agent's graph. A ``ci.run`` the user wrote around the agent is the run instead: no
second ``invoke_agent``, no second summary. An agent invoked inside an instrumented agent's
tool is its own run, under that tool's span.

The seams: compose is the ``ModelRequest`` as the innermost ``wrap_model_call`` receives it,
which is what the model receives (an outer middleware's trimming included); choice is the
``AIMessage``'s tool calls with the model's call ids; write is the tool's raw return value,
taken from a copy of the tool handed to LangChain (:mod:`._langchain_tools`), before LangChain turns it into text (for a
tool LangChain's MCP adapter made, the call's structured content, see :mod:`._langchain_mcp`; an
enforce refusal is what that copy returns, so the model, the host's callbacks and its tool
message all carry the refusal and no rows); claim is the final answer or the structured
response. LangChain has no OpenTelemetry of its own, so the ``invoke_agent``, ``chat`` and
``execute_tool`` spans are ours, one trace per run; where OpenInference's instrumentor traces
LangChain, its agent, model-node and tool spans are adopted instead (found by run id: it never
makes them current). Tool calls of one response run on threads
(or tasks) at once: each run's judge is touched under its own lock.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
import types
from collections.abc import Awaitable, Callable
from typing import Any, Final, cast

from langchain.agents import factory
from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ModelResponse as LcModelResponse
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import BaseTool

from ..loop import content_text
from ..telemetry.emit import record_internal_error
from ..telemetry.run.model_call import ModelCall
from . import _langchain_frames as frames
from ._langchain_frames import METADATA_KEY, declare_tools
from ._langchain_runs import (
    MIDDLEWARE_NAME,
    RUN_ENDS,
    AgentRun,
    enclosing,
    install_run_ends,
    openinference_span,
    remove_run_ends,
    run_of_root,
    tool_call_var,
)
from ._langchain_tools import judging_copy, read_once, refused, tool_name_of, withheld

__all__ = [
    "METADATA_KEY",
    "MIDDLEWARE_NAME",
    "ContextIntegrityMiddleware",
    "instrument_all",
    "uninstrument_all",
]

logger = logging.getLogger("context_integrity")


# ── the middleware ─────────────────────────────────────────────────────────


def _node_run_id() -> Any:
    from langgraph.config import get_config

    callbacks = get_config().get("callbacks")
    return getattr(callbacks, "parent_run_id", None)


def _question(state: object) -> str | None:
    messages = state.get("messages") if isinstance(state, dict) else None
    for m in reversed(messages or ()):
        if isinstance(m, HumanMessage):
            return content_text(m.content)
    return None


def _agent_name() -> str:
    from langgraph.config import get_config

    metadata = get_config().get("metadata") or {}
    name = metadata.get("lc_agent_name")
    return name if isinstance(name, str) and name else "agent"


def _ai_of(result: Any) -> tuple[AIMessage | None, object]:
    """The answer's ``AIMessage`` and structured response, whatever form the handler returned."""
    inner = getattr(result, "model_response", result)
    if isinstance(inner, AIMessage):
        return inner, None
    if isinstance(inner, LcModelResponse):
        ai = next((m for m in reversed(inner.result) if isinstance(m, AIMessage)), None)
        return ai, inner.structured_response
    return None, None


# LangChain wraps each middleware's wrap_* hook in LangSmith's ``traceable``, which reads the
# hook's signature on every call, traced or not (once per model call and per tool call). Each
# instance's hooks are functions whose signature is known in advance, so it is never re-parsed.
_HOOKS: Final = ("wrap_model_call", "awrap_model_call", "wrap_tool_call", "awrap_tool_call")


def _presigned(bound: Callable[..., Any]) -> Callable[..., Any]:
    hook: Callable[..., Any]
    if inspect.iscoroutinefunction(bound):

        async def hook(request: Any, handler: Any) -> Any:
            return await bound(request, handler)

    else:

        def hook(request: Any, handler: Any) -> Any:
            return bound(request, handler)

    functools.update_wrapper(hook, bound)
    read_once(hook, bound)
    return hook


class ContextIntegrityMiddleware(AgentMiddleware[Any, Any, Any]):
    """Judges one LangChain agent at every seam: ``create_agent(..., middleware=[...,
    ContextIntegrityMiddleware()])``. Put it last, so it sees what the model receives.

    ``ci.setup()`` appends it to every agent created afterwards; passing it yourself as well
    is harmless (it is not added twice).
    """

    def __init__(self) -> None:
        super().__init__()
        install_run_ends()
        for hook in _HOOKS:
            setattr(self, hook, _presigned(getattr(self, hook)))

    @property
    def name(self) -> str:
        return MIDDLEWARE_NAME

    # ── the run ──────────────────────────────────────────────────────────
    # No before_agent or after_agent: each would add a node to the agent's graph, which the
    # host's tracers (LangSmith, OpenInference) then trace with the whole state every run.
    def _run_of(self, state: Any) -> AgentRun | None:
        """The run of the invocation this model or tool call is part of; its first call opens it."""
        node = _node_run_id()
        root = RUN_ENDS.root_of(node) if node is not None else None
        if root is None:
            # Our callback was not configured into this invocation (uninstrument_all removed it
            # after this agent was built); it is back for the next one.
            install_run_ends()
            raise LookupError("the agent's root run is unknown: this invocation is not judged")
        return run_of_root(
            root,
            lambda: AgentRun(root, _agent_name(), _question(state), host_span=openinference_span(root)),
        )

    # ── compose and choice ───────────────────────────────────────────────
    def _request(self, request: Any) -> tuple[AgentRun, ModelCall, frozenset[str]] | None:
        try:
            record = self._run_of(request.state)
            if record is None or record.closed:
                return None
            record.open(request.tools or ())
            # The messages are translated only when a check will read them: at compose, at choice,
            # or at claim (prior-turn evidence reads the run's last request).
            judge = record.run.judge
            reads = judge is None or bool(
                judge.armed["compose"] or judge.armed["choice"] or judge.armed["claim"]
            )
            frame = frames.frame(request, record.messages if reads else None)
            offered = frozenset(t.name for t in frame.tools)
            # Beside OpenInference: its span of this model node (its LLM span opens and ends
            # inside the handler) takes the findings, rather than a second chat span of ours.
            host = openinference_span()
            with record.lock:
                call = record.run.request(frame, host_span=host)
            return record, call, offered
        except Exception as ours:
            record_internal_error(None, "reading a LangChain model request", ours)
            return None

    def _respond(
        self, opened: tuple[AgentRun, ModelCall, frozenset[str]], result: Any, error: BaseException | None
    ) -> None:
        record, call, offered = opened
        try:
            with record.lock:
                if error is not None:
                    call.end(error)
                    return
                ai, structured = _ai_of(result)
                reply = frames.response(ai, offered)
                call.respond(reply)
                if structured is not None or not reply.calls:
                    if structured is not None:
                        record.run.answer(output=structured)  # typed: the claim seam reads the model
                    else:
                        record.run.answer(frames.answer_text(ai, None))
        except Exception as ours:
            record_internal_error(call.span, "reading a LangChain model response", ours)

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        opened = self._request(request)
        if opened is None:
            return handler(request)
        try:
            result = handler(request)
        except BaseException as error:
            self._respond(opened, None, error)
            raise
        self._respond(opened, result, None)
        return result

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        opened = self._request(request)
        if opened is None:
            return await handler(request)
        try:
            result = await handler(request)
        except BaseException as error:
            self._respond(opened, None, error)
            raise
        self._respond(opened, result, None)
        return result

    # ── write ────────────────────────────────────────────────────────────
    def _tool_request(self, request: Any) -> tuple[AgentRun, Any] | str | None:
        """The request with the judged copy of its tool; ``None`` when it is not ours to judge;
        the refusal to hand over instead when it is, enforce holds and preparing it failed."""
        record = None
        try:
            tool = request.tool
            record = self._run_of(request.state)
            if record is None or record.closed or not isinstance(tool, BaseTool):
                return None
            record.open()
            return record, request.override(tool=judging_copy(tool))
        except Exception as ours:
            record_internal_error(None, "preparing a LangChain tool call", ours)
            return withheld(record, tool_name_of(request)) if record is not None else None

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        prepared = self._tool_request(request)
        if isinstance(prepared, str):
            return refused(handler(request), prepared)
        if prepared is None:
            return handler(request)
        record, judged = prepared
        token, call = enclosing.set(record), tool_call_var.set((record, request.tool_call))
        try:
            with record.run.active():
                return handler(judged)
        finally:
            tool_call_var.reset(call)
            enclosing.reset(token)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        prepared = self._tool_request(request)
        if isinstance(prepared, str):
            return refused(await handler(request), prepared)
        if prepared is None:
            return await handler(request)
        record, judged = prepared
        token, call = enclosing.set(record), tool_call_var.set((record, request.tool_call))
        try:
            with record.run.active():
                return await handler(judged)
        finally:
            tool_call_var.reset(call)
            enclosing.reset(token)


# ── arming every create_agent ───────────────────────────────────────────────

_ARMED_NAME: Final = "_context_integrity_create_agent"
_patched: tuple[types.FunctionType, types.CodeType, Any, Any] | None = None
_patch_lock = threading.Lock()


def _with_ours(middleware: Any) -> list[Any]:
    listed = list(middleware or ())
    if not any(getattr(m, "name", None) == MIDDLEWARE_NAME for m in listed):
        listed.append(ContextIntegrityMiddleware())  # last: innermost, sees the final request
    return listed


def _shim(*args: Any, **kwargs: Any) -> Any:
    # Its code becomes create_agent's: the name below is looked up in create_agent's module.
    # No closure on purpose: a function's code can only be swapped for code with as many.
    return _context_integrity_create_agent(*args, **kwargs)  # type: ignore[name-defined]  # noqa: F821


def instrument_all() -> None:
    """Make every ``create_agent`` call from now on append our middleware; idempotent.

    The function object itself is changed, so a ``from langchain.agents import create_agent``
    taken before this call is covered too. A bad tool declaration raises at ``create_agent``.
    """
    global _patched
    with _patch_lock:
        if _patched is not None:
            return
        original = cast(types.FunctionType, factory.create_agent)
        clone = types.FunctionType(
            original.__code__, original.__globals__, original.__name__, original.__defaults__, None
        )
        clone.__kwdefaults__ = dict(original.__kwdefaults__ or {})
        clone.__dict__.update(original.__dict__)

        def armed(*args: Any, **kwargs: Any) -> Any:
            try:
                tools = kwargs.get("tools", args[1] if len(args) > 1 else None)
                kwargs["middleware"] = _with_ours(kwargs.get("middleware"))
            except Exception as ours:
                record_internal_error(None, "arming a LangChain agent", ours)
                return clone(*args, **kwargs)
            declare_tools(tools, strict=True)
            return clone(*args, **kwargs)

        _patched = (original, original.__code__, original.__defaults__, original.__kwdefaults__)
        original.__globals__[_ARMED_NAME] = armed
        original.__code__ = _shim.__code__
        original.__defaults__ = None
        original.__kwdefaults__ = None
        install_run_ends()


def uninstrument_all() -> None:
    """Give ``create_agent`` back its own code; agents already created keep their middleware."""
    global _patched
    with _patch_lock:
        if _patched is None:
            return
        original, code, defaults, kwdefaults = _patched
        original.__code__ = code
        original.__defaults__ = defaults
        original.__kwdefaults__ = kwdefaults
        original.__globals__.pop(_ARMED_NAME, None)
        _patched = None
    # A middleware built afterwards puts the callback back for the runs it starts.
    remove_run_ends()
