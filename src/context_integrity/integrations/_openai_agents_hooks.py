"""The Agents SDK's run boundary: hooks that forward to the user's, the trace processor that finds
OpenInference's run span, and the wraps of ``AgentRunner.run`` / ``run_streamed`` and
``Agent.get_all_tools`` that :func:`patch_all` installs (and :func:`unpatch_all` removes).

What each hook does at its seam lives in :mod:`._openai_agents_run`; this module only decides when
a host run begins and ends, and forwards every callback to the hooks the user passed.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any, Final

from agents import Agent, AgentHooks, FunctionTool, RunHooks, TracingProcessor
from agents.run import AgentRunner
from agents.tracing import Span as SdkSpan
from agents.tracing import Trace, add_trace_processor, get_trace_provider, set_trace_processors

from ..telemetry.emit import record_internal_error
from ..telemetry.run.context import current_run
from ..telemetry.spans import foreign_current_span
from . import _openai_agents_mcp as _mcp
from ._openai_agents_run import (
    _MARK,
    _agent_end,
    _asked_tools,
    _current,
    _HostRun,
    _judged_here,
    _llm_end,
    _llm_start,
    _openinference_traces,
    _state,
    _tool_start,
    arm,
    disarm_all,
    offered,
)
from .functions import judged_by_host, release_to_wrappers

# ── hooks ───────────────────────────────────────────────────────────────


def _ours(where: str, work: Callable[[], Any]) -> Any:
    try:
        return work()
    except Exception as error:
        record_internal_error(None, where, error)
        return None


class RunHooksWithJudge(RunHooks[Any]):
    """The user's run hooks (``inner``), each forwarded, with the judge's work before it."""

    # Each hook guards our work with a plain try rather than a closure handed to a helper: these
    # run several times a turn, and in a real run every extra frame is code fetched cold.

    def __init__(self, inner: RunHooks[Any] | None) -> None:
        self.inner = inner

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        state = _state.get()
        if state is not None:
            try:
                tools = state.offered.pop(id(agent), None)
                if tools is None:
                    tools = await _asked_tools(agent, context)
                _llm_start(state, agent, system_prompt, input_items, tools)
            except Exception as error:
                record_internal_error(None, "judging an Agents SDK request", error)
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        state = _state.get()
        if state is not None:
            try:
                _llm_end(state, response)
            except Exception as error:
                record_internal_error(None, "judging an Agents SDK response", error)
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        state = _state.get()
        if state is not None and state.run is None:
            _ours("opening an Agents SDK run", state.open)
        if self.inner is not None:
            await self.inner.on_agent_start(context, agent)

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        state = _state.get()
        if state is not None:
            _ours("judging an Agents SDK answer", lambda: _agent_end(state, output))
        if self.inner is not None:
            await self.inner.on_agent_end(context, agent, output)

    async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
        # The run goes on under the receiving agent: the same judge reads its requests.
        if self.inner is not None:
            await self.inner.on_handoff(context=context, from_agent=from_agent, to_agent=to_agent)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        state = _state.get()
        if state is not None:
            try:
                _tool_start(state, context, tool)
            except Exception as error:
                record_internal_error(None, "opening an Agents SDK tool call", error)
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)


class AgentHooksWithJudge(AgentHooks[Any]):
    """One agent's hooks (``inner``), each forwarded, with the judge's work where no wrapped
    runner does it (a ``ci.run`` written around a run of an un-wrapped runner)."""

    def __init__(self, inner: AgentHooks[Any] | None) -> None:
        self.inner = inner

    async def on_start(self, context: Any, agent: Any) -> None:
        if self.inner is not None:
            await self.inner.on_start(context, agent)

    async def on_end(self, context: Any, agent: Any, output: Any) -> None:
        state = _current(from_agent_hooks=True)
        if state is not None:
            _ours("judging an Agents SDK answer", lambda: _agent_end(state, output))
        if self.inner is not None:
            await self.inner.on_end(context, agent, output)

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        state = _current(from_agent_hooks=True)
        if state is not None:
            try:
                tools = state.offered.pop(id(agent), None)
                if tools is None:
                    tools = await _asked_tools(agent, context)
                _llm_start(state, agent, system_prompt, input_items, tools)
            except Exception as error:
                record_internal_error(None, "judging an Agents SDK request", error)
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        state = _current(from_agent_hooks=True)
        if state is not None:
            _ours("judging an Agents SDK response", lambda: _llm_end(state, response))
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)

    async def on_handoff(self, context: Any, agent: Any, source: Any) -> None:
        if self.inner is not None:
            await self.inner.on_handoff(context=context, agent=agent, source=source)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        state = _current(from_agent_hooks=True)
        if state is not None:
            _ours("opening an Agents SDK tool call", lambda: _tool_start(state, context, tool))
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)


# ── the trace processor: OpenInference's run span, adopted ──────────────


class AdoptingProcessor(TracingProcessor):
    """When the SDK starts a run's task (or first agent) span, OpenInference's processor, which
    runs before ours, has just made its OpenTelemetry span current: that is the host's run span."""

    def on_trace_start(self, trace: Trace) -> None:
        return None

    def on_trace_end(self, trace: Trace) -> None:
        return None

    def on_span_start(self, span: SdkSpan[Any]) -> None:
        state = _state.get()
        if state is None or not state.adopt or state.run is not None:
            return
        if getattr(span.span_data, "type", None) in ("task", "agent"):
            _ours(
                "adopting OpenInference's run span",
                lambda: state.open(foreign_current_span(), in_place=not state.streamed),
            )

    def on_span_end(self, span: SdkSpan[Any]) -> None:
        return None

    def shutdown(self) -> None:
        return None

    def force_flush(self) -> None:
        return None


PROCESSOR: Final = AdoptingProcessor()


def _registered() -> tuple[Any, ...] | None:
    """The SDK's trace processors, in order; ``None`` when its provider keeps them elsewhere."""
    multi = getattr(get_trace_provider(), "_multi_processor", None)
    registered = getattr(multi, "_processors", None)
    return registered if isinstance(registered, tuple) else None


def ensure_processor() -> None:
    """Register our processor after OpenInference's, once: an exclusive ``instrument()`` made
    after ours displaced it."""
    registered = _registered()
    if registered is not None and any(p is PROCESSOR for p in registered):
        return
    add_trace_processor(PROCESSOR)


def remove_processor() -> None:
    """Take ours out of the SDK's processors, the host's kept in their order: a process that
    disarmed the integration pays nothing for it on every span of the SDK's tracing."""
    registered = _registered()
    if registered is not None and any(p is PROCESSOR for p in registered):
        set_trace_processors([p for p in registered if p is not PROCESSOR])


# ── the run boundary ────────────────────────────────────────────────────


class _Began:
    __slots__ = ("state", "tokens")

    def __init__(self, state: _HostRun, tokens: tuple[Any, Any]) -> None:
        self.state = state
        self.tokens = tokens


def _begin(agent: Any, given: object, kwargs: dict[str, Any], *, streamed: bool) -> _Began | None:
    """Open a host run, or ``None`` when this call is already instrumented (or we failed)."""
    try:
        hooks = kwargs.get("hooks")
        if isinstance(hooks, RunHooksWithJudge):
            return None
        outer = _state.get()
        user = current_run() if outer is None else None
        adopt = user is None and _openinference_traces()
        if adopt:
            ensure_processor()
        state = _HostRun(
            question=given if isinstance(given, str) else None,
            agent_name=str(getattr(agent, "name", "agent")),
            user_run=user,
            adopt=adopt,
        )
        state.via_run_hooks = True
        state.parent = outer
        state.streamed = streamed
        tokens = (_state.set(state), judged_by_host(_judged_here))
        kwargs["hooks"] = RunHooksWithJudge(hooks)
        if not adopt:
            state.open(in_place=True)
        return _Began(state, tokens)
    except Exception as ours:
        record_internal_error(None, "instrumenting an Agents SDK run", ours)
        return None


def _finish(began: _Began, error: BaseException | None) -> None:
    try:
        began.state.close(error)
    except Exception as ours:
        record_internal_error(None, "ending an Agents SDK run", ours)
    state_token, wrappers_token = began.tokens
    try:
        release_to_wrappers(wrappers_token)
        _state.reset(state_token)
    except Exception as ours:
        record_internal_error(None, "ending an Agents SDK run", ours)


def wrap_run(original: Callable[..., Any]) -> Callable[..., Any]:
    async def run(self: Any, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        await _mcp.ingest_servers(starting_agent)
        began = _begin(starting_agent, input, kwargs, streamed=False)
        if began is None:
            return await original(self, starting_agent, input, **kwargs)
        try:
            result = await original(self, starting_agent, input, **kwargs)
        except BaseException as error:
            _finish(began, error)
            raise
        _finish(began, None)
        return result

    run.__wrapped__ = original  # type: ignore[attr-defined]
    return run


def wrap_run_streamed(original: Callable[..., Any]) -> Callable[..., Any]:
    def run_streamed(self: Any, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        # Everything happens in a context of its own: the stream's background task copies it, and
        # it is closed there when that task is done, leaving the caller's context as it was.
        context = contextvars.copy_context()
        began = context.run(_begin, starting_agent, input, kwargs, streamed=True)
        if began is None:
            return original(self, starting_agent, input, **kwargs)
        try:
            result = context.run(original, self, starting_agent, input, **kwargs)
        except BaseException as error:
            context.run(_finish, began, error)
            raise

        def done(task: Any) -> None:
            error = None
            if task.cancelled():
                error = _cancelled()
            elif task.exception() is not None:
                error = task.exception()
            context.run(_finish, began, error)

        task = getattr(result, "run_loop_task", None)
        if task is None:
            context.run(_finish, began, None)
        else:
            task.add_done_callback(done)
        return result

    run_streamed.__wrapped__ = original  # type: ignore[attr-defined]
    return run_streamed


def _cancelled() -> BaseException:
    import asyncio

    return asyncio.CancelledError()


def wrap_get_all_tools(original: Callable[..., Any]) -> Callable[..., Any]:
    async def get_all_tools(self: Any, run_context: Any) -> Any:
        tools = await original(self, run_context)
        try:
            offered(self, tools)
        except Exception as error:
            record_internal_error(None, "arming Agents SDK tools", error)
        return tools

    get_all_tools.__wrapped__ = original  # type: ignore[attr-defined]
    return get_all_tools


# ── process-wide, and per object ────────────────────────────────────────

_originals: dict[str, Any] = {}


def patch_all() -> None:
    if _originals:
        return
    _originals["run"] = AgentRunner.run
    _originals["run_streamed"] = AgentRunner.run_streamed
    _originals["get_all_tools"] = Agent.get_all_tools
    AgentRunner.run = wrap_run(AgentRunner.run)  # type: ignore[method-assign]
    AgentRunner.run_streamed = wrap_run_streamed(AgentRunner.run_streamed)  # type: ignore[method-assign]
    Agent.get_all_tools = wrap_get_all_tools(Agent.get_all_tools)  # type: ignore[method-assign]
    _mcp.patch()
    ensure_processor()


def unpatch_all() -> None:
    if not _originals:
        return
    AgentRunner.run = _originals.pop("run")  # type: ignore[method-assign]
    AgentRunner.run_streamed = _originals.pop("run_streamed")  # type: ignore[method-assign]
    Agent.get_all_tools = _originals.pop("get_all_tools")  # type: ignore[method-assign]
    _mcp.unpatch()
    disarm_all()
    remove_processor()


def instrument_agent(agent: Agent[Any]) -> None:
    if not isinstance(agent.hooks, AgentHooksWithJudge):
        agent.hooks = AgentHooksWithJudge(agent.hooks)
    for tool in agent.tools:
        if isinstance(tool, FunctionTool):
            arm(tool)


def instrument_runner(runner: AgentRunner) -> None:
    if getattr(runner, _MARK, False):
        return
    cls = type(runner)
    runner.run = wrap_run(cls.run).__get__(runner)  # type: ignore[method-assign]
    runner.run_streamed = wrap_run_streamed(cls.run_streamed).__get__(runner)  # type: ignore[method-assign]
    setattr(runner, _MARK, True)
