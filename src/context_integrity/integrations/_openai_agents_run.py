"""The Agents SDK's seams: what each hook and the tool output guardrail hand the judge.

Imported only through :mod:`.openai_agents`, so the SDK is imported only when it is used. The run
boundary (when a host run begins and ends) is :mod:`._openai_agents_hooks`.

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
import weakref
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Final

from agents import FunctionTool, ToolGuardrailFunctionOutput, ToolOutputGuardrail
from agents.tool import default_tool_error_function
from agents.tracing import SpanError, get_current_span

from ..contracts import ToolContract, define_contract
from ..loop import ToolDefinition
from ..telemetry.emit import record_internal_error
from ..telemetry.run.context import current_run
from ..telemetry.run.lifecycle import Run
from ..telemetry.run.model_call import ModelCall
from ..telemetry.run.tool_call import (
    ToolScope,
    enforced_without_a_judge,
    judge_reported_result,
    unopened_call,
)
from ..telemetry.schema import names
from ..telemetry.setup import CONTRACTS
from ..telemetry.spans import foreign_current_span
from . import _openai_agents_items as items
from . import _openai_agents_mcp as _mcp
from ._offered import SameTools
from .functions import warn_unoffered

GUARDRAIL_NAME: Final = "context_integrity"
_MARK: Final = "__context_integrity_armed__"
# The sentence the SDK's default failure handler gives the model for a tool that raised.
_DEFAULT_FAILURE: Final = default_tool_error_function(None, Exception())  # type: ignore[arg-type]
_UNOFFERED_FIX: Final = "the SDK's name is the function's name or function_tool(name_override=...)."
_MAX_SUPERSEDED: Final = 1024


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
        # The tool names this run (and every run nested in it) offered the model; a nested run
        # hands its names to the outer one, which warns once for the whole host run.
        self.offered_names: set[str] = set()
        self.last_offered: tuple[ToolDefinition, ...] | None = None
        self.requested = False
        self.parent: _HostRun | None = None
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
        self._account_offered()
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

    def _account_offered(self) -> None:
        parent = self.parent
        if parent is not None:
            parent.offered_names |= self.offered_names
            parent.requested = parent.requested or self.requested
        elif self.requested:
            warn_unoffered(
                "Agents SDK", self.agent_name, self.offered_names, superseded=_superseded, fix=_UNOFFERED_FIX
            )


_state: contextvars.ContextVar[_HostRun | None] = contextvars.ContextVar(
    "context_integrity_openai_agents_run", default=None
)
# Host runs inside a ci.run the user wrote, for the per-agent hooks (no runner wrapped).
_by_user_run: weakref.WeakKeyDictionary[Run, _HostRun] = weakref.WeakKeyDictionary()
# The decorated functions (``@ci.tool`` under ``@function_tool``) whose calls the guardrail judges.
_judged_here: set[str] = set()
# FunctionTool is an unhashable dataclass: the tools we armed, by identity.
_armed_tools: dict[int, weakref.ref[FunctionTool]] = {}
# Python names of ``@ci.tool`` functions the SDK offers under another name (the declaration moved).
_superseded: set[str] = set()


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


async def _asked_tools(agent: Any, context: Any) -> tuple[ToolDefinition, ...]:
    """The tools a request offers when no ``get_all_tools`` of this turn was seen: asked for."""
    return _offered_definitions(await agent.get_all_tools(context))


def _llm_start(
    state: _HostRun,
    agent: Any,
    system_prompt: str | None,
    input_items: list[Any],
    tools: tuple[ToolDefinition, ...],
) -> None:
    """The compose seam, given the tools this turn offered (what its ``get_all_tools`` returned, the
    run loop calling it just before; else :func:`_asked_tools`)."""
    run = state.open()
    if state.call is not None:  # a call whose response never came (the model raised)
        state.call.end()
    state.requested = True
    if tools is not state.last_offered:  # the same tools come back as the same tuple every turn
        state.offered_names.update(t.name for t in tools)
        state.last_offered = tools
    model = items.model_name(agent.model)
    # The history is read only if a check at compose or choice will read it (each input read only
    # if some check asks for it); the instructions and offered tools always are.
    judge = run.judge
    reads = judge is None or bool(judge.armed.get("compose") or judge.armed.get("choice"))
    frame = items.frame_of(system_prompt, input_items if reads else (), tools, model=model, memo=state.calls)
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


def _rejected_on_sdk_span() -> None:
    """Enforce refused the result: the SDK's own function span says so, so the host's tracing (and
    OpenInference's TOOL span, which takes its status from it) marks the call ERROR."""
    span = get_current_span()
    if span is not None:
        span.set_error(
            SpanError(
                message="result rejected by context_integrity",
                data={names.ERROR_TYPE: names.ERROR_RESULT_REJECTED},
            )
        )


def _guard(data: Any) -> ToolGuardrailFunctionOutput:
    """The write seam: the tool's raw result, before the SDK turns it into text."""
    try:
        context, output = data.context, data.output
        call_id = getattr(context, "tool_call_id", None)
        # An MCP tool: judged on the CallToolResult (its structured content), not the SDK's text.
        raw = _mcp.take_raw(call_id)
        state = _current()
        scope = state.tools.pop(call_id, None) if state is not None and isinstance(call_id, str) else None
        if _failed() or output == _DEFAULT_FAILURE:
            # The SDK's default: the model reads the failure as the result. Recorded, not judged.
            if scope is not None:
                scope.fail(ToolCallFailed(f"tool {context.tool_name!r} raised; the model was told so"))
            return _ALLOW
        judged = output if raw is None else raw
        if scope is not None:
            delivered = scope.finish(judged)
        else:  # the call's own scope is missing: its arguments are read from the SDK's context
            arguments = items.arguments_of(getattr(context, "tool_arguments", None))
            if state is not None:
                delivered = state.open().tool_result(context.tool_name, call_id, judged, arguments=arguments)
            else:
                delivered = _judged_alone(context.tool_name, call_id, judged, arguments)
        if delivered is judged:
            return _ALLOW
        return _refuse(str(delivered))
    except Exception as ours:
        return _unjudged(data, ours)


def _judged_alone(name: str, call_id: object, judged: object, arguments: Mapping[str, Any]) -> object:
    """A call no host run of ours holds (our bookkeeping lost it): judged on its own, as a
    ``@ci.tool`` call outside any run is, where enforce holds for it; else left alone."""
    contract = _contract(name)
    if not enforced_without_a_judge(contract):
        return judged
    return judge_reported_result(
        contract,
        lambda: arguments,
        judged,
        call_id=call_id if isinstance(call_id, str) else None,
        activate=False,
    )


def _unjudged(data: Any, error: Exception) -> ToolGuardrailFunctionOutput:
    """A result our guardrail failed to judge: enforce fails closed for a tool with columns."""
    where = "judging an Agents SDK tool result"
    try:
        refusal = unopened_call(_contract(data.context.tool_name), error, where=where)
        return _ALLOW if refusal is None else _refuse(refusal)
    except Exception as worse:  # not even the tool's name: nothing declared is known to enforce
        record_internal_error(None, where, worse)
        return _ALLOW


def _refuse(refusal: str) -> ToolGuardrailFunctionOutput:
    """Enforce: the refusal is what the model reads as this call's result; not a retry prompt."""
    try:
        _rejected_on_sdk_span()
    except Exception as ours:  # the span's status is ours to lose; the refusal still stands
        record_internal_error(None, "marking the SDK's tool span rejected", ours)
    return ToolGuardrailFunctionOutput.reject_content(refusal, output_info=GUARDRAIL_NAME)


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
        if inner.name != tool.name:
            if len(_superseded) < _MAX_SUPERSEDED:
                _superseded.add(inner.name)
            if CONTRACTS.get(tool.name) is None:
                CONTRACTS.declare(replace(inner, name=tool.name))
    setattr(tool, _MARK, True)
    key = id(tool)

    def forget(_: object) -> None:
        _armed_tools.pop(key, None)

    _armed_tools[key] = weakref.ref(tool, forget)


def _armed_definitions(tools: tuple[object, ...]) -> tuple[ToolDefinition, ...]:
    for tool in tools:
        if isinstance(tool, FunctionTool):
            arm(tool)
    return items.definitions_of(tools)


# A turn's tools armed and read as definitions once while the turns offer the same tool objects.
_offered_definitions: Final = SameTools(_armed_definitions)


def disarm_all() -> None:
    _offered_definitions.forget()
    for ref in list(_armed_tools.values()):
        tool = ref()
        if tool is None:
            continue
        tool.tool_output_guardrails = [g for g in tool.tool_output_guardrails or [] if g is not GUARDRAIL]
        setattr(tool, _MARK, False)
    _armed_tools.clear()


def offered(agent: Any, tools: list[Any]) -> None:
    """The tools one turn offers: each armed, and kept as the frame's definitions for that turn."""
    definitions = _offered_definitions(tools)
    state = _state.get()
    if state is not None:
        state.offered[id(agent)] = definitions
