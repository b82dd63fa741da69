"""The Agents SDK's hooks, guardrail and trace processor, translated into the judge's seams.

Imported only by :mod:`.openai_agents`, and only once the SDK is known to be importable.

One host run (a ``Runner.run`` / ``run_sync`` / ``run_streamed`` call) is one :class:`_HostRun`,
held in a context variable for the SDK's hooks and guardrail to find. Its judge's run is:
- the ``ci.run`` the user wrote around it, when there is one (nothing is opened twice);
- else a :class:`Run` of ours, adopting OpenInference's run span when its instrumentor traces the
  SDK (opened from our trace processor when the SDK starts its task span, OpenInference's span
  being current then), else opening ``invoke_agent`` itself.

A run nested in a tool (``agent.as_tool``) is a host run of its own, with its own summary: its
requests are another conversation, which the outer run's eviction memory must not read. A handoff
stays in its run: the receiving agent's requests continue the same judge.
"""

from __future__ import annotations

import contextvars
import logging
import weakref
from collections.abc import Callable, Mapping, Set
from dataclasses import replace
from typing import Any, Final

from agents import (
    Agent,
    AgentHooks,
    FunctionTool,
    RunHooks,
    ToolGuardrailFunctionOutput,
    ToolOutputGuardrail,
    TracingProcessor,
)
from agents.run import AgentRunner
from agents.tool import default_tool_error_function
from agents.tracing import Span as SdkSpan
from agents.tracing import Trace, add_trace_processor, get_current_span, get_trace_provider

from ..contracts import ToolContract, define_contract
from ..loop import ToolDefinition
from ..telemetry.emit import record_internal_error
from ..telemetry.run import ModelCall, Run, ToolScope, current_run
from ..telemetry.setup import CONTRACTS
from ..telemetry.spans import foreign_current_span
from . import _openai_agents_items as items
from .functions import judged_by_host, release_to_wrappers

logger = logging.getLogger("context_integrity")

GUARDRAIL_NAME: Final = "context_integrity"
_MARK: Final = "__context_integrity_armed__"
# The sentence the SDK's default failure handler gives the model for a tool that raised.
_DEFAULT_FAILURE: Final = default_tool_error_function(None, Exception())  # type: ignore[arg-type]


class ToolCallFailed(Exception):
    """A tool raised and the SDK turned the failure into a message to the model (its default)."""


class ToolCallUnfinished(Exception):
    """The host run ended while this tool call was still open (interrupted, or it never returned)."""


class _HostRun:
    """One host run: the judge's run it reports to, and the calls in flight."""

    def __init__(self, *, question: str | None, agent_name: str, user_run: Run | None, adopt: bool) -> None:
        self.question = question
        self.agent_name = agent_name
        self.run = user_run
        self.owns = user_run is None
        self.adopt = adopt
        self.via_run_hooks = False
        self.streamed = False
        self.call: ModelCall | None = None
        self.tools: dict[str, ToolScope] = {}
        self.offered: dict[int, tuple[ToolDefinition, ...]] = {}
        self.calls: items.CallMemo = {}
        self._context: contextvars.Context | None = None

    def open(self, host_span: Any = None, *, in_place: bool = False) -> Run:
        """The judge's run, opened now if it is not yet. ``in_place``: this context is the one the
        run ends in (the runner's call), so the run is opened here, current for all it does."""
        if self.run is not None:
            return self.run
        run = Run(self.question, agent_name=self.agent_name, host_span=host_span)
        if not in_place:
            # Opened where it cannot be closed (a hook's task, a stream's background task): open it
            # in a context of its own, and close it there.
            self._context = contextvars.copy_context()
            self._context.run(run.__enter__)
        else:
            run.__enter__()
        self.run = run
        return run

    def close(self, error: BaseException | None) -> None:
        call, self.call = self.call, None
        if call is not None:
            call.end(error)
        open_tools = list(self.tools.values())
        self.tools.clear()
        for scope in open_tools:
            scope.fail(error or ToolCallUnfinished("the run ended before this tool call finished"))
        run = self.run
        if not self.owns or run is None:
            return
        tb = error.__traceback__ if error is not None else None

        def end() -> None:
            run.__exit__(type(error) if error is not None else None, error, tb)

        if self._context is not None:
            self._context.run(end)
        else:
            end()


_state: contextvars.ContextVar[_HostRun | None] = contextvars.ContextVar(
    "context_integrity_openai_agents_run", default=None
)
# Host runs inside a ci.run the user wrote, for the per-agent hooks (no runner wrapped).
_by_user_run: weakref.WeakKeyDictionary[Run, _HostRun] = weakref.WeakKeyDictionary()
# The decorated functions (``@ci.tool`` under ``@function_tool``) whose calls the guardrail judges.
_judged_here: set[str] = set()
# FunctionTool is an unhashable dataclass: the tools we armed, by identity.
_armed_tools: dict[int, weakref.ref[FunctionTool]] = {}


def _current(*, from_agent_hooks: bool = False) -> _HostRun | None:
    state = _state.get()
    if state is not None:
        return None if from_agent_hooks and state.via_run_hooks else state
    user = current_run()
    if user is None:
        return None
    found = _by_user_run.get(user)
    if found is None:
        found = _by_user_run[user] = _HostRun(
            question=None, agent_name=user.agent_name, user_run=user, adopt=False
        )
    return found


def _openinference_traces() -> bool:
    try:
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    except Exception:
        return False
    return bool(OpenAIAgentsInstrumentor().is_instrumented_by_opentelemetry)


# ── the seams ───────────────────────────────────────────────────────────


def _contract(name: str) -> ToolContract:
    return CONTRACTS.get(name) or define_contract(name)


def _arguments(raw: object) -> Callable[[], Mapping[str, Any]]:
    return lambda: items.arguments_of(raw)


async def _llm_start(
    state: _HostRun, context: Any, agent: Any, system_prompt: str | None, input_items: list[Any]
) -> None:
    run = state.open()
    if state.call is not None:  # a call whose response never came (the model raised)
        state.call.end()
    # What this turn's get_all_tools offered (the run loop calls it just before); else ask for it.
    tools = state.offered.pop(id(agent), None)
    if tools is None:
        listed = await agent.get_all_tools(context)
        for tool in listed:
            if isinstance(tool, FunctionTool):
                arm(tool)
        tools = items.definitions_of(listed)
    model = items.model_name(agent.model)
    frame = items.frame_of(system_prompt, input_items, tools, model=model, memo=state.calls)
    # OpenInference ends its LLM span before on_llm_end: the turn span current here is the host's
    # span for this model call, so findings never land on a second chat span of ours.
    host = foreign_current_span() if state.adopt and run.adopted else None
    state.call = run.request(frame, model=model, host_span=host)


def _llm_end(state: _HostRun, response: Any) -> None:
    call, state.call = state.call, None
    if call is not None:
        calls, text = items.response_of(getattr(response, "output", ()) or ())
        call.respond(calls=calls, text=text)


def _tool_start(state: _HostRun, context: Any, tool: Any) -> None:
    call_id = getattr(context, "tool_call_id", None)
    if not isinstance(tool, FunctionTool) or not isinstance(call_id, str):
        return
    run = state.open()
    state.tools[call_id] = ToolScope(
        _contract(tool.name),
        _arguments(getattr(context, "tool_arguments", None)),
        run=run,
        call_id=call_id,
        activate=False,
    )


def _agent_end(state: _HostRun, output: object) -> None:
    state.open().answer(items.answer_text(output), output=output)


def _failed() -> bool:
    """Whether the tool just raised, said by the SDK's own function span (it carries the error)."""
    span = get_current_span()
    return span is not None and getattr(span, "error", None) is not None


def _guard(data: Any) -> ToolGuardrailFunctionOutput:
    """The write seam: the tool's raw result, before the SDK turns it into text."""
    try:
        state = _current()
        if state is None:
            return _ALLOW
        context, output = data.context, data.output
        call_id = getattr(context, "tool_call_id", None)
        scope = state.tools.pop(call_id, None) if isinstance(call_id, str) else None
        if _failed() or output == _DEFAULT_FAILURE:
            # The SDK's default: the model reads the failure as the result. Recorded, not judged.
            if scope is not None:
                scope.fail(ToolCallFailed(f"tool {context.tool_name!r} raised; the model was told so"))
            return _ALLOW
        if scope is not None:
            delivered = scope.finish(output)
        else:
            delivered = state.open().tool_result(
                context.tool_name,
                call_id,
                output,
                arguments=items.arguments_of(getattr(context, "tool_arguments", None)),
            )
        if delivered is output:
            return _ALLOW
        # Enforce: the refusal is what the model reads as this call's result; not a retry prompt.
        return ToolGuardrailFunctionOutput.reject_content(str(delivered), output_info=GUARDRAIL_NAME)
    except Exception as ours:
        record_internal_error(None, "judging an Agents SDK tool result", ours)
        return _ALLOW


_ALLOW: Final = ToolGuardrailFunctionOutput.allow()
GUARDRAIL: Final[ToolOutputGuardrail[Any]] = ToolOutputGuardrail(
    guardrail_function=_guard, name=GUARDRAIL_NAME
)


def _inner_contract(tool: FunctionTool) -> ToolContract | None:
    """The contract of a ``@ci.tool`` function the SDK wrapped, if it is one."""
    invoker = getattr(tool, "on_invoke_tool", None)
    unwrap = getattr(invoker, "_get_wrapped_callable", None)
    try:
        wrapped = unwrap() if callable(unwrap) else None
    except Exception:
        return None
    contract = getattr(wrapped, "contract", None)
    return contract if isinstance(contract, ToolContract) else None


def arm(tool: FunctionTool) -> None:
    """Put our guardrail first on ``tool`` (it sees the raw value before any user guardrail), once."""
    if getattr(tool, _MARK, False):
        return
    tool.tool_output_guardrails = [GUARDRAIL, *(tool.tool_output_guardrails or [])]
    inner = _inner_contract(tool)
    if inner is not None:
        _judged_here.add(inner.name)
        # The SDK's name is the one the model calls: the declaration follows it.
        if inner.name != tool.name and CONTRACTS.get(tool.name) is None:
            CONTRACTS.declare(replace(inner, name=tool.name))
    setattr(tool, _MARK, True)
    key = id(tool)

    def forget(_: object) -> None:
        _armed_tools.pop(key, None)

    _armed_tools[key] = weakref.ref(tool, forget)


def disarm_all() -> None:
    for ref in list(_armed_tools.values()):
        tool = ref()
        if tool is None:
            continue
        tool.tool_output_guardrails = [g for g in tool.tool_output_guardrails or [] if g is not GUARDRAIL]
        setattr(tool, _MARK, False)
    _armed_tools.clear()


def offered(agent: Any, tools: list[Any]) -> None:
    """The tools one turn offers: each armed, and kept as the frame's definitions for that turn."""
    for tool in tools:
        if isinstance(tool, FunctionTool):
            arm(tool)
    state = _state.get()
    if state is not None:
        state.offered[id(agent)] = items.definitions_of(tools)


# ── hooks ───────────────────────────────────────────────────────────────


def _ours(where: str, work: Callable[[], Any]) -> Any:
    try:
        return work()
    except Exception as error:
        record_internal_error(None, where, error)
        return None


class RunHooksWithJudge(RunHooks[Any]):
    """The user's run hooks (``inner``), each forwarded, with the judge's work before it."""

    def __init__(self, inner: RunHooks[Any] | None) -> None:
        self.inner = inner

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        state = _state.get()
        if state is not None:
            try:
                await _llm_start(state, context, agent, system_prompt, input_items)
            except Exception as error:
                record_internal_error(None, "judging an Agents SDK request", error)
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        state = _state.get()
        if state is not None:
            _ours("judging an Agents SDK response", lambda: _llm_end(state, response))
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        state = _state.get()
        if state is not None:
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
            _ours("opening an Agents SDK tool call", lambda: _tool_start(state, context, tool))
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
                await _llm_start(state, context, agent, system_prompt, input_items)
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


def ensure_processor() -> None:
    """Register our processor after OpenInference's, once: an exclusive ``instrument()`` made
    after ours displaced it."""
    multi = getattr(get_trace_provider(), "_multi_processor", None)
    registered = getattr(multi, "_processors", None)
    if isinstance(registered, tuple) and any(p is PROCESSOR for p in registered):
        return
    add_trace_processor(PROCESSOR)


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
        _ours("arming Agents SDK tools", lambda: offered(self, tools))
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
    ensure_processor()


def unpatch_all() -> None:
    if not _originals:
        return
    AgentRunner.run = _originals.pop("run")  # type: ignore[method-assign]
    AgentRunner.run_streamed = _originals.pop("run_streamed")  # type: ignore[method-assign]
    Agent.get_all_tools = _originals.pop("get_all_tools")  # type: ignore[method-assign]
    disarm_all()


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


def judged_names() -> Set[str]:
    return frozenset(_judged_here)
