"""One tool call in flight: :class:`ToolScope`, an ``execute_tool {tool}`` span judged at the write seam.

The span is the host's where the host opened one (:mod:`.spans`); findings go on it through
:mod:`.emit`. A call whose scope cannot open at all is settled by :func:`unopened_call`: unjudged,
and refused when enforce holds for the tool. :class:`OpenToolCall` is the hand-written loop's way
in (``run.tool_call``): the span opens before the tool runs, so the spans of the call itself (an
MCP client's, and through it its server's) nest under it. Never break the host: the only
exceptions that leave a tool call are the tool's own, unchanged.
"""

from __future__ import annotations

import functools
import json
import logging
import uuid
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import context as otel_context
from opentelemetry.trace import Span, SpanKind

from ..._memo import ToldOnce
from ...contracts import ToolContract
from ...judge.refusal import unjudged_refusal
from ...limits import MAX_ATTRIBUTE_CHARS, MAX_WARNED_DECLARATIONS
from ...text import clip, repr_clipped
from ..emit import (
    SpanEmitter,
    mark_refused,
    record_internal_error,
    record_judge_errors,
    set_content,
    wants_passes,
)
from ..instrumentation import CONTRACTS
from ..schema import names
from ..setup import current
from ..spans import TOOL, adopt_or_start, find_host_span, start_held, tool_call_id_of, tracer_of
from .context import current_run
from .posture import DEFAULT_DIALS, dials_in_force

if TYPE_CHECKING:
    from ...judge.seams import ToolVerdict
    from .lifecycle import Run

logger = logging.getLogger("context_integrity")


def call_id_text(call_id: object) -> str | None:
    """A call id as text: a host's odd id (a number, a list) is rendered, clipped; emission clips the rest."""
    if call_id is None or isinstance(call_id, str):
        return call_id
    try:
        return str(call_id)[:MAX_ATTRIBUTE_CHARS]
    except Exception:
        return None


def arguments_mapping(arguments: object) -> Mapping[str, Any]:
    """A call's arguments as a mapping, whatever the host handed over. Never raises.

    A mapping is copied; JSON text of an object is parsed (frameworks carry arguments so); any
    other value, JSON of a non-object included, is the one argument ``$``.
    """
    if arguments is None:
        return {}
    try:
        if isinstance(arguments, Mapping):
            return dict(arguments)
        if isinstance(arguments, (str, bytes, bytearray)):
            try:
                parsed = json.loads(arguments)
            except ValueError:
                parsed = arguments
            if isinstance(parsed, dict):
                return parsed
            return {"$": parsed}
    except Exception:  # a mapping whose own methods raise: judged as the one value it is
        pass
    return {"$": arguments}


class ToolScope:
    """One tool call in flight: its span (ours or the host's), its judge and its call id.

    ``host_span`` is the host's ``execute_tool`` span when an integration holds it; without it
    the current span is adopted when it is the host's span for this very tool. Without
    ``activate`` a span we start is not made current: for a host that opens the call in one task
    and finishes it in another, where a context attached in the first cannot be detached.
    """

    __slots__ = ("_held", "arguments", "call_id", "contract", "inst", "judge", "span", "verdict")

    def __init__(
        self,
        contract: ToolContract,
        arguments: Callable[[], Mapping[str, Any]],
        *,
        run: Run | None = None,
        call_id: str | None = None,
        host_span: Span | None = None,
        activate: bool = True,
        standalone: bool = False,
    ) -> None:
        self.contract = contract
        self.arguments = arguments
        self.inst = inst = current()
        # ``standalone``: judged by a judge of its own, in no run (an MCP server's call, whatever
        # client run is open in the same process).
        run = run if run is not None or standalone else current_run()
        # The host's span is found first: its own call id is preferred to one we would make up,
        # and the id is one of the attributes a span of ours starts with.
        # The current context, read once: where the host's span is looked for and ours goes.
        here = otel_context.get_current()
        adopted = find_host_span(
            TOOL,
            tool_name=contract.name,
            span=host_span,
            context=here,
            run_span=run.span if run is not None else None,
        )
        given = call_id or (tool_call_id_of(adopted) if adopted is not None else None)
        if run is not None and run.judge is not None:
            self.judge = run.judge
            self.call_id = run.take_call_id(contract.name, given)
        else:
            from ...judge.seams import RunJudge  # the registry and the checks load with the first judge

            self.judge = RunJudge(CONTRACTS, dials_in_force(inst), with_ledger=False)
            self.judge.keep_passes = wants_passes(inst)
            self.call_id = given or f"call_{uuid.uuid4().hex[:12]}"
        if adopted is not None:
            self._held = held = adopt_or_start(
                TOOL,
                "",
                tracer=tracer_of(inst),
                kind=SpanKind.INTERNAL,
                attributes={},
                host=adopted,
                search=False,
                activate=activate,
            )
        else:
            span_name, tool_name = _static_of(contract.name)
            # The attributes clipped as :func:`.emit.clipped` would: the static ones once per tool.
            self._held = held = start_held(
                inst.tracer if inst is not None else tracer_of(None),
                span_name,
                kind=SpanKind.INTERNAL,
                attributes={
                    names.GEN_AI_OPERATION_NAME: names.OPERATION_EXECUTE_TOOL,
                    names.GEN_AI_TOOL_NAME: tool_name,
                    names.GEN_AI_TOOL_CALL_ID: clip(self.call_id, MAX_ATTRIBUTE_CHARS),
                    names.GEN_AI_TOOL_TYPE: names.TOOL_TYPE_FUNCTION,
                },
                parent=here,
                activate=activate,
            )
        self.span = held.span
        self.verdict: ToolVerdict | None = None

    def fail(self, error: BaseException) -> None:
        """The tool itself raised: record it, end the span; the caller re-raises it unchanged."""
        try:
            self._held.end(error)
        except Exception as ours:
            record_internal_error(None, "recording a tool's exception", ours)

    def unreported(self) -> None:
        """The call ended and no result was reported: its armed write checks could not look."""
        try:
            self._held.end()
        finally:
            self.judge.note_unjudged("write")

    def finish(self, result: Any) -> Any:
        """Judge the result, attach findings, end the span, and return what the caller receives.

        Fails closed: once the judge refused the result (or, armed to enforce, could not judge it),
        the refusal is what the caller receives, whatever fails in telemetry afterwards.
        """
        refusal: str | None = None
        try:
            self._held.detach()
            self.verdict = verdict = self.judge.write(
                self.contract.name, self.call_id, result, arguments=self.arguments, contract=self.contract
            )
            refusal = verdict.refusal
            if verdict.judged_at_server is not None or verdict.server_differs is not None:
                self._judged_at_server(verdict)
            if self.judge.internal_errors:
                record_judge_errors(self.span, self.judge)
            passes = self.judge.take_passes() if self.judge.passes else ()
            if (
                verdict.findings or passes or verdict.unreachable
            ):  # made only for a call with something to say
                emitter = SpanEmitter(self.span, self.inst)
                emitter.findings(verdict.findings, tool_name=self.contract.name, call_id=self.call_id)
                emitter.passes(passes)
                emitter.unreachable(verdict.unreachable)
            if self.inst is not None and self.inst.capture_content:
                owned, hook = self._held.owned, self.inst.redact
                set_content(
                    self.span,
                    names.GEN_AI_TOOL_CALL_ARGUMENTS,
                    dict(self.arguments()),
                    owned=owned,
                    hook=hook,
                )
                set_content(self.span, names.GEN_AI_TOOL_CALL_RESULT, result, owned=owned, hook=hook)
        except Exception as ours:
            record_internal_error(self.span, "judging a tool result", ours)
            if refusal is None and self.judge.enforces(self.contract.name, self.contract):
                refusal = unjudged_refusal(self.contract.name)
        finally:
            try:
                if refusal is not None:
                    mark_refused(self.span)
                self._held.end()
            except Exception as ours:
                record_internal_error(None, "ending a tool span", ours)
        return result if refusal is None else refusal

    def _judged_at_server(self, verdict: ToolVerdict) -> None:
        """Say on the span whose verdict this is: the MCP server's, taken; or this process's alone,
        the server's contract for the tool differing (said once in the log, too)."""
        if verdict.judged_at_server is not None:
            self.span.set_attribute(
                names.JUDGED_AT_SERVER, clip(verdict.judged_at_server, MAX_ATTRIBUTE_CHARS)
            )
            return
        server = verdict.server_differs or ""
        self.span.set_attribute(names.SERVER_CONTRACT_DIFFERS, clip(server, MAX_ATTRIBUTE_CHARS))
        if _TOLD_DIFFERING.first((server, self.contract.name)):
            logger.warning(
                "context_integrity: MCP server %s judged tool %s by a contract that differs from this "
                "process's; this process judges its results by its own and files its own findings, so "
                "one defect may be a finding on both spans.",
                repr_clipped(server),
                repr_clipped(self.contract.name),
            )


# The (server, tool) pairs whose differing contracts were told, once each per process.
_TOLD_DIFFERING: Final[ToldOnce[tuple[str, str]]] = ToldOnce(MAX_WARNED_DECLARATIONS)


@functools.lru_cache(maxsize=1024)
def _static_of(tool_name: str) -> tuple[str, str]:
    """What a tool's spans start with that no call changes: the span name, the clipped tool name."""
    return names.tool_span_name(tool_name), clip(tool_name, MAX_ATTRIBUTE_CHARS)


def judge_reported_result(
    contract: ToolContract,
    arguments: Callable[[], Mapping[str, Any]],
    result: Any,
    *,
    run: Run | None = None,
    call_id: str | None = None,
    host_span: Span | None = None,
    activate: bool = True,
) -> Any:
    """A result reported after its tool ran, judged in a scope opened and finished at once; what
    the caller hands over. A scope that cannot open fails closed (:func:`unopened_call`)."""
    try:
        scope = ToolScope(
            contract, arguments, run=run, call_id=call_id, host_span=host_span, activate=activate
        )
    except Exception as ours:
        refusal = unopened_call(contract, ours)
        return result if refusal is None else refusal
    return scope.finish(result)


def enforced_without_a_judge(contract: ToolContract) -> bool:
    """Whether enforce holds for ``contract`` by the dials in force alone (no run's judge to ask)."""
    inst = current()
    dials = inst.dials if inst is not None else DEFAULT_DIALS
    return dials.check_column_types == "enforce" and bool(contract.result_columns)


def unopened_call(
    contract: ToolContract, error: BaseException, *, where: str = "opening a tool span"
) -> str | None:
    """A tool call whose scope could not open: record it, count it, and say whether to refuse.

    The call goes unjudged, so its run notes the write seam ``unreachable``; when enforce is armed
    for a tool with declared columns, the caller must hand over the refusal, not the rows.
    ``where`` names what failed, for the log and the span.
    """
    record_internal_error(None, where, error)
    try:
        agent_run = current_run()
        judge = agent_run.judge if agent_run is not None else None
        if judge is not None:
            judge.note_unreachable("write", where, error)
            return unjudged_refusal(contract.name) if judge.enforces(contract.name) else None
        enforced = enforced_without_a_judge(contract)
    except Exception:  # cannot tell whether enforce holds: a tool with columns fails closed
        enforced = bool(contract.result_columns)
    return unjudged_refusal(contract.name) if enforced else None


class OpenToolCall:
    """One tool call reported around its execution: ``with run.tool_call(name, call_id, arguments)
    as call:`` (or ``async with``) opens its ``execute_tool`` span before the tool runs, current in
    the block; ``call.result(value)`` judges what the tool returned and gives back what the model
    should read (the value, or the refusal sentence in enforce), and ends the span.

    The block's own exception ends the span in error and passes through unchanged. A block left
    without a result reported goes unjudged, and the run notes its write seam ``unreachable``.
    """

    __slots__ = ("_arguments", "_call_id", "_contract", "_delivered", "_reported", "_run", "_scope")

    def __init__(
        self, run: Run | None, contract: ToolContract, call_id: str | None, arguments: Mapping[str, Any]
    ) -> None:
        self._run = run
        self._contract = contract
        self._call_id = call_id
        self._arguments = arguments
        self._scope: ToolScope | None = None
        self._reported = False
        self._delivered: Any = None

    @property
    def span(self) -> Span | None:
        """The call's span while it is open (the host's, when it opened one for this tool)."""
        return self._scope.span if self._scope is not None else None

    @property
    def call_id(self) -> str | None:
        """The call's id: the one given, else the one the model announced, else one made up."""
        return self._scope.call_id if self._scope is not None else self._call_id

    def _open(self) -> None:
        if self._scope is not None or self._reported:
            return
        try:
            self._scope = ToolScope(
                self._contract, lambda: self._arguments, run=self._run, call_id=self._call_id
            )
        except Exception as ours:
            self._reported = True  # nothing to judge in: :meth:`result` settles it as unopened
            self._delivered = unopened_call(self._contract, ours)

    def result(self, value: Any) -> Any:
        """Judge the tool's result; return what the model should read. Reported once: a second
        report hands back what the first one delivered."""
        self._open()
        scope = self._scope
        if scope is None:  # it could not open: unjudged, or the refusal when enforce holds
            return value if self._delivered is None else self._delivered
        if not self._reported:
            self._reported = True
            self._delivered = scope.finish(value)
        return self._delivered

    def _close(self, error: BaseException | None) -> None:
        scope = self._scope
        if scope is None or self._reported:
            return
        self._reported = True
        if error is not None:
            scope.fail(error)
            return
        try:
            scope.unreported()
        except Exception as ours:
            record_internal_error(None, "closing a tool call", ours)

    def __enter__(self) -> OpenToolCall:
        self._open()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._close(exc)

    async def __aenter__(self) -> OpenToolCall:
        self._open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._close(exc)
