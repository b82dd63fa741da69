"""pydantic-ai: one capability feeds every seam from the host's own hooks; the host's run is the run.

``setup()`` arms every agent (:func:`instrument_all` patches the public ``Agent.iter``, through
which ``run``, ``run_sync``, ``run_stream``, ``run_stream_events`` and wrapper agents all pass, so
agents created before ``setup()`` are covered). Per agent: ``Agent(..., capabilities=[ContextIntegrity()])``.
The capability has a fixed ``id``, so a copy on the agent and a copy per run never double.

Where each seam is fed from:

- the run: ``wrap_run`` opens a :class:`~context_integrity.telemetry.run.lifecycle.Run` on pydantic-ai's own
  ``invoke_agent`` span when its instrumentation is on (else on ours) and ends it with the host's
  run, so exactly one summary lands under it. A ``ci.run`` the user wrote around the host run is
  joined (its judge, its summary), never doubled; an agent run inside a tool is its own run.
- compose and choice: the request exactly as the model receives it, after every history processor
  and capability, and the response it returned. When the host opened a ``chat`` span around the
  request (its instrumentation is on), both are read inside that span from the attempt's own hooks
  (``after_model_request``, ``on_model_request_error``), whose request context holds the prepared
  request: no wrapper model is entered around each call. Otherwise (no host chat span; a wire
  reader that must find the call open while its body crosses; or a capability inside ours, such
  as ``ModelFallback``, whose attempt hooks run first and can move the request on to another
  attempt before ours reads it) a wrapper model (``get_wrapper_model``) sees every call the model
  is sent, so that our own ``chat`` span covers it.
- write: ``wrap_tool_execute`` judges the raw value the tool returned (``ToolReturn.return_value``),
  before pydantic-ai serialises it, and a refusal is returned as the tool's result: the model reads
  the refusal sentence in the call's own tool-return part, never a retry prompt inviting the same call.
- claim: the run's final output, typed when the agent has structured output.

MCP tools (``pydantic_ai.mcp.MCPToolset``, see ``_pydantic_ai_mcp``): before the run opens, the
tools of every MCP toolset it holds are listed and their ``_meta`` declarations ingested, so they
arm the run like local ones; write judges the call's raw ``CallToolResult`` (its structured
content), not what pydantic-ai made of it.

The pieces: ``_pydantic_ai_messages`` reads the host's messages as the loop protocol,
``_pydantic_ai_declarations`` the declarations on the agent's function tools, ``_pydantic_ai_mcp``
its MCP toolsets; this module holds the capability and the arming.

Declarations: ``@ci.tool`` above or below ``@agent.tool``/``tool_plain``, ``ci.declare_tool`` by
name, or ``metadata={"context_integrity": {...}}`` on the pydantic-ai tool (the fields
``declare_tool`` takes). The framework's tool name wins over the Python function's.

Never break the agent: every piece of our work is wrapped; a failure is logged, recorded on the
span it happened under, and the host's run continues with exactly what it would have had.
pydantic-ai's own instrumentation settings are never touched.
"""

from __future__ import annotations

import dataclasses
import functools
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.capabilities.abstract import (
    WrapRunHandler,
    WrapToolExecuteHandler,
    leaf_capabilities,
)
from pydantic_ai.models import Model, ModelRequestContext, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.run import AgentRunResult
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext
from pydantic_ai.tools import ToolDefinition as PaiToolDefinition

from ..contracts import define_contract
from ..ledger import CheckerDeadError
from ..telemetry.emit import record_internal_error
from ..telemetry.run.lifecycle import ModelCall, Run, ToolScope, current_run
from ..telemetry.run.tool_call import unopened_call
from ..telemetry.setup import CONTRACTS
from ..telemetry.spans import AGENT, CHAT, TOOL, find_host_span
from . import _pydantic_ai_mcp as _mcp
from ._pydantic_ai_declarations import METADATA_KEY, AgentDeclarations, declare_agent_tools
from ._pydantic_ai_messages import MessageCache, answer_text, frame_of, response_of
from .functions import host_judges_call, warn_unoffered

__all__ = [
    "CAPABILITY_ID",
    "METADATA_KEY",
    "ContextIntegrity",
    "MessageCache",
    "answer_text",
    "armed",
    "declare_agent_tools",
    "frame_of",
    "instrument_all",
    "response_of",
    "uninstrument_all",
]

CAPABILITY_ID: Final = "context_integrity"

# Runs this integration opened for a host run (as opposed to a ``ci.run`` the user wrote): a host
# run found open around another host run is an outer agent whose tool runs an inner agent.
_host_runs: weakref.WeakSet[Run] = weakref.WeakSet()


# ── The capability ───────────────────────────────────────────────────────


@dataclass
class ContextIntegrity(AbstractCapability[Any]):
    """The context-integrity capability: add it to an agent, or let ``ci.setup()`` add it to every run."""

    id: str | None = CAPABILITY_ID
    _run: Run | None = field(default=None, init=False, repr=False, compare=False)
    _declared: AgentDeclarations = field(
        default_factory=AgentDeclarations, init=False, repr=False, compare=False
    )
    _offered: set[str] = field(default_factory=set, init=False, repr=False, compare=False)
    _requested: bool = field(default=False, init=False, repr=False, compare=False)
    _messages: MessageCache = field(default_factory=MessageCache, init=False, repr=False, compare=False)
    _wrapper: _SeamModel | None = field(default=None, init=False, repr=False, compare=False)
    # The tools the last request offered, as the frame read them: offered names are noted once.
    _tools_seen: tuple[object, ...] = field(default=(), init=False, repr=False, compare=False)
    # The host's chat span around the current attempt while that attempt is unread: the after/error
    # hook reads it (once) instead of a wrapper model. None once read, or when a wrapper reads it.
    _unread_chat: Any = field(default=None, init=False, repr=False, compare=False)
    # Whether a capability inside ours (ModelFallback, say) has attempt hooks that run before ours
    # and can move a request on to another attempt before our hook reads it: then every attempt is
    # read by a wrapper model, inside the call.
    _passed_over: bool = field(default=False, init=False, repr=False, compare=False)
    # The run's MCP toolsets as listed before it opened: each tool's contract (its own server's).
    _toolsets: _mcp.Ingested = field(default_factory=_mcp.Ingested, init=False, repr=False, compare=False)

    async def for_run(self, ctx: RunContext[Any]) -> AbstractCapability[Any]:
        # Each run gets its own instance: its state is that run's alone, however many run at once.
        return dataclasses.replace(self)

    # ── the run ──
    def _open(self, ctx: RunContext[Any]) -> Run | None:
        try:
            self._declared = declare_agent_tools(ctx.agent)
        except Exception as ours:  # the run is still judged with what was declared before
            record_internal_error(None, "reading a pydantic-ai agent's declarations", ours)
        try:
            enclosing = current_run()
            if enclosing is not None and enclosing not in _host_runs and enclosing.judge is not None:
                # The user's ci.run around this host run: joined, never doubled.
                enclosing.host_run_began(find_host_span(AGENT))
                return None
            agent = ctx.agent
            prompt = ctx.prompt if isinstance(ctx.prompt, str) else None
            run = Run(
                prompt,
                agent_name=(getattr(agent, "name", None) or "agent"),
                conversation_id=ctx.conversation_id,
                host_span=find_host_span(AGENT),
            )
            _host_runs.add(run)
            run.__enter__()
            return run
        except Exception as ours:
            record_internal_error(None, "opening a pydantic-ai run", ours)
            return None

    def _judging(self) -> Run | None:
        """The run this host run's seams are judged in: ours, or the user's ``ci.run`` we joined."""
        if self._run is not None:
            return self._run
        enclosing = current_run()
        return enclosing if enclosing is not None and enclosing.judge is not None else None

    async def wrap_run(self, ctx: RunContext[Any], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        _mcp.patch()
        # Before the run opens: its checks are armed once, from what is declared by then.
        self._toolsets = ingested = await _mcp.ingest_toolsets(ctx)
        try:
            return await self._judged_run(ctx, handler, ingested.renamed)
        finally:
            await _mcp.release(ingested.entered)

    async def _judged_run(
        self, ctx: RunContext[Any], handler: WrapRunHandler, renamed: set[str]
    ) -> AgentRunResult[Any]:
        self._run = opened = self._open(ctx)
        self._passed_over = _attempts_can_pass(self, ctx.root_capability)
        self._declared.superseded |= renamed  # offered under a prefix or a new name, not unoffered
        try:
            result = await handler()
        except BaseException as error:
            self._close(opened, error)
            raise
        try:
            judging = self._judging()
            if judging is not None:
                judging.answer(answer_text(result.output), output=result.output)
        except Exception as ours:
            record_internal_error(None, "reporting a pydantic-ai answer", ours)
        self._close(opened, None)
        return result

    def _close(self, opened: Run | None, error: BaseException | None) -> None:
        try:
            self._warn_unoffered()
            if opened is not None:
                opened.__exit__(type(error) if error is not None else None, error, None)
        except CheckerDeadError:
            raise  # dev posture asked for exactly this: a run whose check is dead fails loudly
        except Exception as ours:
            record_internal_error(None, "ending a pydantic-ai run", ours)

    def _warn_unoffered(self) -> None:
        if not self._requested:
            return
        judging = self._judging()
        warn_unoffered(
            "pydantic-ai",
            judging.agent_name if judging is not None else "agent",
            self._offered,
            superseded=self._declared.superseded,
            fix="check name= on the tool.",
        )

    # ── compose and choice: the request as the model receives it ──
    def get_wrapper_model(self, model: Model) -> Model | None:
        # Asked for every attempt, inside the host's chat span when it opened one. A wrapper model
        # is entered and left around every call it serves, which costs the host a scope per request:
        # it is used only when the call itself must be inside our model call: when we open the chat
        # span ourselves, around the call, or when a wire reader reads the body as it crosses.
        try:
            host_chat = find_host_span(CHAT)
            if host_chat is not None and (self._passed_over or self._reads_wire()):
                host_chat = None
        except Exception as ours:
            record_internal_error(None, "finding pydantic-ai's chat span", ours)
            host_chat = None
        self._unread_chat = host_chat
        if host_chat is not None:
            return None
        # The wrapper holds nothing of a request, so one per wrapped model.
        wrapper = self._wrapper
        if wrapper is None or wrapper.wrapped is not model:
            self._wrapper = wrapper = _SeamModel(model, self)
        return wrapper

    def _reads_wire(self) -> bool:
        run = self._judging()
        judge = run.judge if run is not None else None
        return judge is not None and bool(judge.armed["wire"])

    def _read_attempt(self, chat: Any, request_context: ModelRequestContext) -> ModelCall | None:
        """The attempt's request, composed on the host's chat span ``chat``."""
        self._unread_chat = None
        try:
            model_name = request_context.model.model_name
        except Exception as ours:
            record_internal_error(None, "reading a pydantic-ai model's name", ours)
            model_name = "model"
        return self.compose(
            request_context.messages,
            request_context.model_request_parameters,
            model_name,
            host_span=chat,
        )

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, response: pm.ModelResponse
    ) -> pm.ModelResponse:
        chat = self._unread_chat
        if chat is not None:
            try:
                call = self._read_attempt(chat, request_context)
                self.choice(call, response, request_context.model_request_parameters)
            except Exception as ours:  # the response goes on to the host as it came
                record_internal_error(None, "reading a pydantic-ai model call", ours)
        return response

    async def on_model_request_error(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, error: Exception
    ) -> pm.ModelResponse:
        chat = self._unread_chat
        if chat is not None:
            try:
                call = self._read_attempt(chat, request_context)
                if call is not None:
                    call.end(error)
            except Exception as ours:  # the host's own error is what propagates
                record_internal_error(None, "reading a failed pydantic-ai model call", ours)
        raise error

    def compose(
        self,
        messages: Sequence[pm.ModelMessage],
        parameters: ModelRequestParameters,
        model_name: str,
        *,
        host_span: Any = None,
    ) -> ModelCall | None:
        """The request judged at compose; ``host_span`` is the host's chat span when already found."""
        run = self._judging()
        if run is None:
            return None
        try:
            judge = run.judge
            # The messages are read only when a check will look at them: at compose, at choice, or
            # at claim (prior-turn evidence reads the run's last request).
            reads = judge is not None and bool(
                judge.armed["compose"] or judge.armed["choice"] or judge.armed["claim"]
            )
            frame = frame_of(messages if reads else (), parameters, model_name, self._messages)
            self._requested = True
            if frame.tools is not self._tools_seen:
                self._tools_seen = frame.tools
                self._offered.update(t.name for t in frame.tools)
            chat = host_span if host_span is not None else find_host_span(CHAT)
            return run.request(frame, model=model_name, host_span=chat)
        except Exception as ours:
            record_internal_error(run.span, "reading a pydantic-ai request", ours)
            return None

    def choice(
        self, call: ModelCall | None, response: pm.ModelResponse, parameters: ModelRequestParameters
    ) -> None:
        if call is None:
            return
        try:
            call.respond(response_of(response, parameters, self._messages))
        except Exception as ours:
            record_internal_error(call.span, "reading a pydantic-ai response", ours)
            call.end()

    # ── write: the raw tool value, and the refusal as the tool's result ──
    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: pm.ToolCallPart,
        tool_def: PaiToolDefinition,
        args: dict[str, Any],
        handler: WrapToolExecuteHandler,
    ) -> Any:
        scope = self._tool_scope(call, args)
        if scope is None or isinstance(scope, str):
            raw = await handler(args)
            # A refusal here is enforce failing closed: the call could not be judged.
            return raw if scope is None else scope
        function = self._declared.functions.get(call.tool_name)
        try:
            with host_judges_call(function), _mcp.keeping() as kept:
                raw = await handler(args)
        except BaseException as error:
            scope.fail(error)
            raise
        value = raw.return_value if isinstance(raw, pm.ToolReturn) else raw
        if kept and self._toolsets.unlisted:
            await self._listed_late(kept[-1].toolset, call.tool_name, scope)
        # An MCP tool is judged on its raw result (the rows are its structured content), not on
        # what pydantic-ai made of it for the model.
        judged = _mcp.judged_result(kept, value)
        subject = value if judged is None else judged
        delivered = scope.finish(subject)
        # A refusal replaces the whole return, extra content included: enforce never hands rows over.
        return raw if delivered is subject else delivered

    async def _listed_late(self, toolset: Any, name: str, scope: ToolScope) -> None:
        """A tool of a toolset whose listing failed before the run: judged by what listing it now
        finds (or, failing again, by its unread declarations), with the checks that arms."""
        try:
            contract = await self._toolsets.relist(toolset, name)
            if contract is None:
                return
            scope.contract = contract
            run = self._judging()
            if run is not None and run.judge is not None:
                run.judge.arm_declared()
        except Exception as ours:
            record_internal_error(scope.span, "judging a tool listed late", ours)

    def _tool_scope(self, call: pm.ToolCallPart, args: dict[str, Any]) -> ToolScope | str | None:
        """The call's scope; else the refusal to hand over (enforce cannot judge it); else ``None``.

        Without a run (ours failed to open) the call is judged on its own, as an undecorated
        ``@ci.tool`` call is: enforce holds whatever became of our bookkeeping.
        """
        run = self._judging()
        name = call.tool_name
        try:
            # An MCP tool by its own server's contract (or this process's declaration of the name).
            contract = self._toolsets.contracts.get(name) or CONTRACTS.get(name) or define_contract(name)
        except Exception as ours:  # no contract to judge by: nothing declared can be enforced
            record_internal_error(run.span if run is not None else None, "reading a tool's contract", ours)
            return None
        try:
            return ToolScope(
                contract,
                lambda: args,
                run=run,
                call_id=call.tool_call_id,
                host_span=find_host_span(TOOL, tool_name=name),
            )
        except Exception as ours:
            return unopened_call(contract, ours)


_ATTEMPT_HOOKS: Final = ("after_model_request", "on_model_request_error")


def _attempts_can_pass(capability: ContextIntegrity, root: AbstractCapability[Any] | None) -> bool:
    """Whether a capability after ours in the chain overrides an attempt hook.

    pydantic-ai runs the attempt hooks innermost first and stops at one that raises
    ``RetryModelRequest``: such a capability can send the request on to another attempt, or
    another model, before our own hook has read the attempt the model was sent.
    """
    try:
        if root is None:
            return False
        leaves = leaf_capabilities(root)
        at = next((i for i, leaf in enumerate(leaves) if leaf is capability), None)
        if at is None:  # not found where it runs: every attempt is read inside the call
            return True
        return any(
            getattr(type(leaf), hook, None) is not getattr(AbstractCapability, hook)
            for leaf in leaves[at + 1 :]
            for hook in _ATTEMPT_HOOKS
        )
    except Exception as ours:
        record_internal_error(None, "reading a pydantic-ai run's capabilities", ours)
        return True


class _SeamModel(WrapperModel):
    """Sees each request exactly as the model receives it, and the response it returned."""

    def __init__(self, wrapped: Model, seams: ContextIntegrity) -> None:
        super().__init__(wrapped)
        self._seams = seams

    async def request(
        self,
        messages: list[pm.ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> pm.ModelResponse:
        call = self._seams.compose(messages, model_request_parameters, self.model_name)
        try:
            # The wrapped model directly, as WrapperModel.request does: its layer adds nothing here.
            response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        except BaseException as error:
            if call is not None:
                call.end(error)
            raise
        self._seams.choice(call, response, model_request_parameters)
        return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[pm.ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        call = self._seams.compose(messages, model_request_parameters, self.model_name)
        try:
            async with self.wrapped.request_stream(
                messages, model_settings, model_request_parameters, run_context
            ) as streamed:
                yield streamed
        except BaseException as error:
            if call is not None:
                call.end(error)
            raise
        try:
            response = streamed.get()
        except Exception as ours:
            record_internal_error(
                call.span if call is not None else None, "reading a streamed response", ours
            )
            if call is not None:
                call.end()
            return
        self._seams.choice(call, response, model_request_parameters)


# ── Arming every agent ──────────────────────────────────────────────────

_original_iter: Callable[..., Any] | None = None


def _is_ours(capability: object) -> bool:
    return isinstance(capability, ContextIntegrity)


def _with_ours(agent: Any, given: Sequence[Any] | None) -> list[Any] | Sequence[Any] | None:
    """The run's capabilities with ours added, unless the run or the agent already has it."""
    if given is not None and any(_is_ours(c) for c in given):
        return given
    root = getattr(agent, "root_capability", None)
    if isinstance(root, AbstractCapability) and any(_is_ours(c) for c in leaf_capabilities(root)):
        return given
    return [*(given or ()), ContextIntegrity()]


def armed() -> bool:
    """Whether :func:`instrument_all` is in force."""
    return _original_iter is not None


def instrument_all() -> None:
    """Arm every pydantic-ai agent run in this process, agents created earlier included."""
    global _original_iter
    if _original_iter is not None:
        return
    original: Callable[..., Any] = Agent.iter
    _original_iter = original

    @functools.wraps(original)
    def iter_with_context_integrity(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            kwargs["capabilities"] = _with_ours(self, kwargs.get("capabilities"))
        except Exception as ours:
            record_internal_error(None, "arming a pydantic-ai run", ours)
        return original(self, *args, **kwargs)

    setattr(Agent, "iter", iter_with_context_integrity)  # noqa: B010 - a method is assigned, mypy refuses the dot


def uninstrument_all() -> None:
    """Undo :func:`instrument_all`; a capability attached by hand stays."""
    global _original_iter
    original, _original_iter = _original_iter, None
    if original is not None:
        setattr(Agent, "iter", original)  # noqa: B010
    _mcp.unpatch()
