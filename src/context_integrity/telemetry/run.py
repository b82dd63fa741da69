"""Run and call lifecycle: :class:`Run` and :class:`ToolScope` (:class:`ModelCall` is in :mod:`.model_call`).

A run is an ``invoke_agent {agent}`` span with its judge and ledger; a model call is a ``chat
{model}`` span judged at the compose and choice seams; a tool call is an ``execute_tool {tool}``
span judged at the write seam. Each adopts the host's span where the host opened one
(:mod:`.spans`) and puts what it finds on it through :mod:`.emit`. Every run ends with exactly one
``context_integrity.disposition`` summary span under its run span: the span processor writes it
when a run span of ours ends; for a host's run span, adopted, :class:`Run` writes it when it ends.

Never break the host: every piece of our own work on the call path is wrapped, logged and
recorded; the only exceptions that leave here are the caller's own, unchanged.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import logging
import threading
import uuid
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any, Final, ParamSpec, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind
from opentelemetry.util.types import AttributeValue

from ..contracts import ToolContract, define_contract
from ..contracts.toolsets import assert_suspension
from ..findings import Finding
from ..judge import Dials, RunJudge, SetupError
from ..judge.dials import POSTURES, Posture
from ..judge.seams import unjudged_refusal
from ..ledger import CheckerDeadError, LedgerRow
from ..limits import MAX_ATTRIBUTE_CHARS, MAX_PENDING_CALL_IDS, MAX_QUOTED_CHARS
from ..loop import RequestFrame
from . import names
from .emit import (
    SpanEmitter,
    content,
    mark_refused,
    record_internal_error,
    record_judge_errors,
    set_content,
    wants_passes,
)
from .model_call import ModelCall as ModelCall
from .model_call import current_model_call as current_model_call
from .processor import RunSummary
from .setup import CONTRACTS, Instrumentation, current
from .spans import AGENT, TOOL, HeldSpan, adopt_or_start, find_host_span, tool_call_id_of, tracer_of


@dataclass(frozen=True, slots=True)
class _Open:
    """One entered run, as the context holds it: weakly, so a run dropped unexited can be collected.

    ``otel_before`` is the trace context before the run made its span current, and ``span_id`` that
    span: what the thread's context is restored to once the run is found abandoned.
    """

    ref: weakref.ref[Run]
    otel_before: otel_context.Context
    span_id: int | None
    below: _Open | None


_current_run: contextvars.ContextVar[_Open | None] = contextvars.ContextVar(
    "context_integrity_run", default=None
)

logger = logging.getLogger("context_integrity")

_DEFAULT_DIALS = Dials()

# Set by the pytest plugin for a whole test session: every run is a dev run, whatever setup() said.
_posture_override: Posture | None = None
_dead_listeners: list[Callable[[CheckerDeadError], None]] = []

# The outcome of a run entered and never exited, found when it was collected or at exit.
ABANDONED: Final = "abandoned"


def current_run() -> Run | None:
    """The run open in this context, if any (a run dropped without exiting is not)."""
    frame = _current_run.get()
    while frame is not None:
        found = frame.ref()
        if found is not None:
            return found
        frame = frame.below
    return None


def _release_abandoned() -> None:
    """Forget the runs this context entered and dropped, and give back the trace context they took.

    Their summaries were written when they were collected (:func:`_abandon`); what is left is the
    context: without this, the next run would nest under a run nobody will ever end.
    """
    frame = _current_run.get()
    if frame is None or frame.ref() is not None:
        return
    restore: _Open | None = None
    while frame is not None and frame.ref() is None:
        restore, frame = frame, frame.below
    _current_run.set(frame)
    if restore is not None and restore.span_id is not None:
        current = trace.get_current_span().get_span_context()
        if current.span_id == restore.span_id:
            otel_context.attach(restore.otel_before)


_WARNED_GROUNDS: set[tuple[str, str]] = set()


def _warn_undeclared_grounds() -> None:
    """Say once per name when ``arguments_from`` names a tool nobody declared (yet).

    Not an error: tools may be declared after the tools that name them. But at a run's start the
    name is either a typo or a tool that will never serve a ground, and the checks it arms are
    blind until it is declared.
    """
    declared = CONTRACTS.names()
    for contract in CONTRACTS:
        for ground in contract.arguments_from or ():
            key = (contract.name, ground)
            if ground in declared or key in _WARNED_GROUNDS or len(_WARNED_GROUNDS) >= MAX_PENDING_CALL_IDS:
                continue
            _WARNED_GROUNDS.add(key)
            logger.warning(
                "context_integrity: tool %r names %r in arguments_from, but no tool %r is declared; "
                "declare it (ci.declare_tool(%r) or @ci.tool) or fix the name.",
                contract.name[:MAX_QUOTED_CHARS],
                ground[:MAX_QUOTED_CHARS],
                ground[:MAX_QUOTED_CHARS],
                ground[:MAX_QUOTED_CHARS],
            )


def _summary_of(judge: RunJudge | None, outcome: str) -> RunSummary:
    ledger = judge.ledger if judge is not None else None
    with judge.lock if judge is not None else contextlib.nullcontext():
        rows = ledger.report() if ledger is not None else []
        totals = ledger.totals() if ledger is not None else {}
    return RunSummary(
        rows=rows,
        totals=totals,
        posture=(judge.dials if judge is not None else _DEFAULT_DIALS).reported_posture(),
        work_existed=judge.work_existed if judge is not None else False,
        outcome=outcome,
        dials=(judge.dials if judge is not None else _DEFAULT_DIALS).in_force(),
    )


def _abandon(judge: RunJudge | None, held: HeldSpan | None, inst: Instrumentation | None) -> None:
    """A run entered and never exited was collected (or the process is exiting): end it as abandoned.

    Runs from the garbage collector or at exit, on whatever thread: it touches no context, only
    the run's own span and its summary. Never raises.
    """
    try:
        if held is None:
            return
        if held.owned:
            held.span.set_attribute(names.RUN_OUTCOME, ABANDONED)
            held.span.end()  # the processor writes the summary, from the judge, as abandoned
        elif inst is not None and inst.processor is not None:
            inst.processor.emit_under(held.span.get_span_context(), _summary_of(judge, ABANDONED))
    except Exception as ours:
        record_internal_error(None, "ending an abandoned run", ours)


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


def force_posture(posture: Posture | None) -> None:
    """Make every run that begins from now on use ``posture`` (``None`` gives the dial back)."""
    global _posture_override
    if posture is not None and posture not in POSTURES:
        raise SetupError(f"posture must be one of {', '.join(map(repr, POSTURES))} (got {posture!r}).")
    _posture_override = posture


def on_checker_dead(listener: Callable[[CheckerDeadError], None]) -> Callable[[], None]:
    """Call ``listener`` with every :class:`CheckerDeadError` a run raises; returns the unsubscriber.

    The pytest plugin listens, so a session fails even when the application swallows the error.
    """
    _dead_listeners.append(listener)
    return lambda: _dead_listeners.remove(listener) if listener in _dead_listeners else None


def _dials_in_force(inst: Instrumentation | None) -> Dials:
    dials = inst.dials if inst is not None else _DEFAULT_DIALS
    override = _posture_override
    return dials if override is None or override == dials.posture else replace(dials, posture=override)


class ToolScope:
    """One tool call in flight: its span (ours or the host's), its judge and its call id.

    ``host_span`` is the host's ``execute_tool`` span when an integration holds it; without it
    the current span is adopted when it is the host's span for this very tool. Without
    ``activate`` a span we start is not made current: for a host that opens the call in one task
    and finishes it in another, where a context attached in the first cannot be detached.
    """

    __slots__ = ("_held", "arguments", "call_id", "contract", "inst", "judge", "span")

    def __init__(
        self,
        contract: ToolContract,
        arguments: Callable[[], Mapping[str, Any]],
        *,
        run: Run | None = None,
        call_id: str | None = None,
        host_span: Span | None = None,
        activate: bool = True,
    ) -> None:
        self.contract = contract
        self.arguments = arguments
        self.inst = inst = current()
        run = run if run is not None else current_run()
        dials = _dials_in_force(inst)
        # The host's span is found first: its own call id is preferred to one we would make up,
        # and the id is one of the attributes a span of ours starts with.
        adopted = find_host_span(TOOL, tool_name=contract.name, span=host_span)
        given = call_id or (tool_call_id_of(adopted) if adopted is not None else None)
        if run is not None and run.judge is not None:
            self.judge = run.judge
            self.call_id = run.take_call_id(contract.name, given)
        else:
            self.judge = RunJudge(CONTRACTS, dials, with_ledger=False)
            self.judge.keep_passes = wants_passes(inst)
            self.call_id = given or f"call_{uuid.uuid4().hex[:12]}"
        self._held = held = adopt_or_start(
            TOOL,
            names.tool_span_name(contract.name),
            tracer=tracer_of(inst),
            kind=SpanKind.INTERNAL,
            attributes={
                names.GEN_AI_OPERATION_NAME: names.OPERATION_EXECUTE_TOOL,
                names.GEN_AI_TOOL_NAME: contract.name,
                names.GEN_AI_TOOL_CALL_ID: self.call_id,
                names.GEN_AI_TOOL_TYPE: names.TOOL_TYPE_FUNCTION,
            },
            host=adopted,
            tool_name=contract.name,
            search=False,
            activate=activate,
        )
        self.span = held.span

    def fail(self, error: BaseException) -> None:
        """The tool itself raised: record it, end the span; the caller re-raises it unchanged."""
        try:
            self._held.end(error)
        except Exception as ours:
            record_internal_error(None, "recording a tool's exception", ours)

    def finish(self, result: Any) -> Any:
        """Judge the result, attach findings, end the span, and return what the caller receives.

        Fails closed: once the judge refused the result (or, armed to enforce, could not judge it),
        the refusal is what the caller receives, whatever fails in telemetry afterwards.
        """
        refusal: str | None = None
        try:
            self._held.detach()
            verdict = self.judge.write(self.contract.name, self.call_id, result, arguments=self.arguments)
            refusal = verdict.refusal
            if self.judge.internal_errors:
                record_judge_errors(self.span, self.judge)
            passes = self.judge.take_passes()
            if verdict.findings or passes:  # the emitter is made only for a call that has something to say
                emitter = SpanEmitter(self.span, self.inst)
                emitter.findings(verdict.findings, tool_name=self.contract.name, call_id=self.call_id)
                emitter.passes(passes)
            if self.inst is not None and self.inst.capture_content:
                owned = self._held.owned
                set_content(self.span, names.GEN_AI_TOOL_CALL_ARGUMENTS, dict(self.arguments()), owned=owned)
                set_content(self.span, names.GEN_AI_TOOL_CALL_RESULT, result, owned=owned)
        except Exception as ours:
            record_internal_error(self.span, "judging a tool result", ours)
            if refusal is None and self.judge.enforces(self.contract.name):
                refusal = unjudged_refusal(self.contract.name)
        finally:
            try:
                if refusal is not None:
                    mark_refused(self.span)
                self._held.end()
            except Exception as ours:
                record_internal_error(None, "ending a tool span", ours)
        return result if refusal is None else refusal


def unopened_call(contract: ToolContract, error: BaseException) -> str | None:
    """A tool call whose scope could not open: record it, count it, and say whether to refuse.

    The call goes unjudged, so its run notes the write seam ``unreachable``; when enforce is armed
    for a tool with declared columns, the caller must hand over the refusal, not the rows.
    """
    record_internal_error(None, "opening a tool span", error)
    try:
        agent_run = current_run()
        judge = agent_run.judge if agent_run is not None else None
        if judge is not None:
            judge.note_unreachable("write", "opening a tool span", error)
            return unjudged_refusal(contract.name) if judge.enforces(contract.name) else None
        inst = current()
        dials = inst.dials if inst is not None else _DEFAULT_DIALS
        enforced = dials.check_column_types == "enforce" and bool(contract.result_columns)
    except Exception:  # cannot tell whether enforce holds: a tool with columns fails closed
        enforced = bool(contract.result_columns)
    return unjudged_refusal(contract.name) if enforced else None


class Run:
    """One agent run: the ``invoke_agent`` span, its judge and its ledger.

    Use as ``with ci.run(question, agent_name=...) as run:`` or ``async with``.
    Whatever the block does, the run span ends exactly once (when it is ours) and exactly one
    disposition summary is written under it.

    ``host_span`` is the host's own run span when an integration holds it; without it the
    current span is adopted when it is a host's ``invoke_agent`` (or OpenInference AGENT) span.
    """

    def __init__(
        self,
        question: str | None = None,
        *,
        agent_name: str = "agent",
        conversation_id: str | None = None,
        host_span: Span | None = None,
    ):
        self.question = question
        self.agent_name = agent_name
        self.conversation_id = conversation_id
        self.judge: RunJudge | None = None
        self.outcome = "open"
        self.span: Span | None = None
        self._host_span = host_span
        self._held: HeldSpan | None = None
        self._inst: Instrumentation | None = None
        self._run_token: contextvars.Token[_Open | None] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._pending_call_ids: dict[str, list[str]] = {}
        # The framework runs this one was written around (their own run spans), when there are any.
        self._host_runs: list[Span] = []
        self._host_run_count = 0
        self._ids_lock = threading.Lock()

    @property
    def adopted(self) -> bool:
        """Whether the run span is the host's (enriched, never ended by us)."""
        return self._held is not None and not self._held.owned

    # ── lifecycle ──────────────────────────────────────────────────────
    def _start(self) -> None:
        try:
            self._inst = inst = current()
            _release_abandoned()
            _warn_undeclared_grounds()
            self.judge = judge = RunJudge(CONTRACTS, _dials_in_force(inst))
            judge.keep_passes = wants_passes(inst)
            judge.begin()
            if judge.dials.posture == "dev":
                judge.run_canaries()
            # Current before its span opens: a span that cannot open must not orphan the run's tools.
            before = otel_context.get_current()
            self._run_token = _current_run.set(_Open(weakref.ref(self), before, None, _current_run.get()))
            attributes: dict[str, AttributeValue] = {
                names.GEN_AI_OPERATION_NAME: names.OPERATION_INVOKE_AGENT,
                names.GEN_AI_AGENT_NAME: self.agent_name,
            }
            if self.conversation_id:
                attributes[names.GEN_AI_CONVERSATION_ID] = self.conversation_id
            if inst is not None and inst.capture_content and self.question is not None:
                attributes[names.GEN_AI_INPUT_MESSAGES] = content(
                    [{"role": "user", "content": self.question}]
                )
            self._held = held = adopt_or_start(
                AGENT,
                names.run_span_name(self.agent_name),
                tracer=tracer_of(inst),
                kind=SpanKind.INTERNAL,
                attributes=attributes,
                host=self._host_span,
            )
            self.span = span = held.span
            record_judge_errors(span, judge)
            if held.owned and inst is not None and inst.processor is not None and span.is_recording():
                inst.processor.expect(span.get_span_context().span_id, _weak_summary(self, judge))
            # The same entry, now knowing its span; the first token still restores what was before.
            below = self._run_token.old_value if self._run_token is not None else None
            below = below if isinstance(below, _Open) else None
            _current_run.set(_Open(weakref.ref(self), before, span.get_span_context().span_id, below))
            # A run dropped without exiting still ends, once, with its summary (outcome abandoned).
            self._finalizer = weakref.finalize(self, _abandon, judge, held, inst)
        except Exception as ours:
            record_internal_error(self.span, "opening a run", ours)

    def _end(self, error: BaseException | None) -> None:
        """End the run; in dev posture, a successful run whose check is dead raises here."""
        if self._finalizer is not None:
            self._finalizer.detach()
        dead = self._dead_check() if error is None else None
        if dead is not None:
            self.outcome = "checker-dead"
        elif error is None:
            self.outcome = "ok"
        elif isinstance(error, (KeyboardInterrupt, SystemExit)) or type(error).__name__ == "CancelledError":
            self.outcome = "cancelled"
        else:
            self.outcome = "error"
        token, self._run_token = self._run_token, None
        if token is not None:
            # Reset from another context (a task that outlived its run): nothing to restore there.
            with contextlib.suppress(Exception):
                _current_run.reset(token)
        held = self._held
        if held is not None:
            try:
                inst = self._inst
                if held.owned and self._host_run_count == 1 and inst is not None and inst.processor:
                    # Written around exactly one framework run: that run's own span is the run span.
                    inst.processor.forget(held.span.get_span_context().span_id)
                    self._emit_summary_under(self._host_runs[0])
                elif not held.owned:
                    # The host ends its own run span, later and out of our sight: the summary goes
                    # under it now, while this run's ledger is final.
                    self._emit_summary_under(held.span)
                held.end(error if dead is None else dead)
            except Exception as ours:
                record_internal_error(None, "ending a run", ours)
        if dead is not None:
            for listener in list(_dead_listeners):
                with contextlib.suppress(Exception):
                    listener(dead)
            # Dev posture asked for exactly this: a run whose check is dead fails loudly, after
            # its span and its ledger are on the record.
            raise dead

    def _dead_check(self) -> CheckerDeadError | None:
        judge = self.judge
        if judge is None or judge.dials.posture != "dev":
            return None
        try:
            return judge.dead_check()
        except Exception as ours:
            record_internal_error(self.span, "checking the checks are alive", ours)
            return None

    def _emit_summary_under(self, span: Span) -> None:
        inst = self._inst
        if inst is not None and inst.processor is not None:
            inst.processor.emit_under(span.get_span_context(), self.summary())

    def __enter__(self) -> Run:
        self._start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._end(exc)

    async def __aenter__(self) -> Run:
        self._start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._end(exc)

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Make the run span current for the block, in this context only.

        For an integration that opens the run in one place and runs the host's steps elsewhere
        (another node, thread or task): spans those steps open go under the run span. The
        block's exceptions are the host's and pass through unrecorded.
        """
        span = self.span
        if span is None:
            yield
            return
        with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
            yield

    def host_run_began(self, host_span: Span | None) -> None:
        """A framework's own run began inside this one (a ``ci.run`` written around it).

        The framework's run span is the run: ours, when we opened one, is renamed to a plain
        ``context_integrity.run`` grouping span, so the trace holds one ``invoke_agent``. The judge
        stays this run's, so one summary covers the framework's run and anything reported by hand
        around it; it goes under the framework's run span when there was exactly one.
        Without a host span (the framework's telemetry is off) ours stays the run span.
        """
        held = self._held
        if host_span is None or held is None or not held.owned:
            return
        try:
            self._host_run_count += 1
            if not self._host_runs:
                self._host_runs.append(host_span)
                held.span.update_name(names.user_run_span_name(self.agent_name))
                held.span.set_attribute(names.GEN_AI_OPERATION_NAME, names.OPERATION_USER_RUN)
        except Exception as ours:
            record_internal_error(held.span, "joining a framework run", ours)

    # ── reading the run ────────────────────────────────────────────────
    def ledger(self) -> list[LedgerRow]:
        """The disposition ledger as it stands (fresh rows)."""
        return self.judge.report() if self.judge is not None else []

    @property
    def findings(self) -> list[Finding]:
        """Every finding filed in this run (first sighting of each defect)."""
        return list(self.judge.findings) if self.judge is not None else []

    @property
    def trace_id(self) -> str | None:
        if self.span is None:
            return None
        return format(self.span.get_span_context().trace_id, "032x")

    def summary(self) -> RunSummary:
        return _summary_of(self.judge, self.outcome)

    # ── the loop protocol ──────────────────────────────────────────────
    def request(
        self, frame: RequestFrame, *, model: str | None = None, host_span: Span | None = None
    ) -> ModelCall:
        """Report an assembled request (the compose seam); returns the open model call.

        Use as ``with run.request(frame) as call: ... call.respond(response)``,
        or call :meth:`ModelCall.respond` without the ``with``; either way the
        ``chat`` span ends exactly once. ``host_span`` is the host's own model-call span, when an
        integration holds it.
        """
        return ModelCall(self, frame, model or frame.model or "model", host_span=host_span)

    def tool_result(
        self,
        tool_name: str,
        call_id: str | None,
        result: object,
        *,
        arguments: Mapping[str, Any] | str | None = None,
        host_span: Span | None = None,
    ) -> Any:
        """Report the result of a tool this application did not decorate (the write seam).

        Returns what the model should read: the result itself, or the refusal
        sentence when ``check_column_types="enforce"`` refused it. ``arguments`` may also be the
        JSON text a framework carries them as; any other shape is judged as the one value ``$``.
        """
        try:
            contract = CONTRACTS.get(tool_name) or define_contract(tool_name)
        except Exception as ours:
            record_internal_error(self.span, "reporting a tool result", ours)
            if self.judge is not None:
                self.judge.note_unreachable("write", "reporting a tool result", ours)
            return result
        args = arguments_mapping(arguments)
        try:
            call = ToolScope(
                contract, lambda: args, run=self, call_id=call_id_text(call_id), host_span=host_span
            )
        except Exception as ours:
            refusal = unopened_call(contract, ours)
            return result if refusal is None else refusal
        return call.finish(result)

    def answer(self, text: object = None, *, output: object = None) -> list[Finding]:
        """Report the final answer (the claim seam); returns the findings filed on the run span.

        ``text`` is what the model wrote; ``output`` the typed answer (a pydantic model instance)
        when the agent has an output model. A pydantic instance passed as ``text`` is taken as the
        output. Detection only: nothing is changed or withheld.
        """
        try:
            if output is None and text is not None and not isinstance(text, str):
                output, text = text, None
            if text is None and output is not None:
                text = _rendered(output)
            shown = text if isinstance(text, str) else None
            held = self._held
            if self._inst is not None and self._inst.capture_content and held is not None:
                set_content(
                    held.span,
                    names.GEN_AI_OUTPUT_MESSAGES,
                    [{"role": "assistant", "content": shown}],
                    owned=held.owned,
                )
            if self.judge is None:
                return []
            found = self.judge.claim(shown, output)
            record_judge_errors(self.span, self.judge)
            passes = self.judge.take_passes()
            if (found or passes) and held is not None:
                emitter = SpanEmitter(held.span, self._inst)
                emitter.findings(found)
                emitter.passes(passes)
            return found
        except Exception as ours:
            record_internal_error(self.span, "reporting the answer", ours)
            return []

    def suspend(self, group: str, tools: Sequence[str]) -> None:
        """Tell the run a group of tools is switched off (a skill or toolset disabled, an MCP server
        disconnected) until :meth:`resume`. A request that still offers one of them is an
        invariant-violation at the compose seam.

        Raises :class:`~context_integrity.DeclarationError` for a blank group name or a tool list
        that is not a list of non-blank names: that is the application's statement, checked once.
        """
        group, names_ = assert_suspension(group, tools)
        if self.judge is not None:
            self.judge.suspend(group, names_)

    def resume(self, group: str) -> None:
        """The group suspended with :meth:`suspend` is on again. Resuming an unknown group does nothing."""
        if self.judge is not None and isinstance(group, str):
            self.judge.resume(group)

    # ── call ids ───────────────────────────────────────────────────────
    def expect_call(self, tool_name: str, call_id: str) -> None:
        """Tell the run the id the model gave a call, so the tool span carries it."""
        with self._ids_lock:
            pending = self._pending_call_ids.setdefault(tool_name, [])
            pending.append(call_id)
            # Calls the application never executes leave their ids here; keep the newest only.
            del pending[:-MAX_PENDING_CALL_IDS]

    def take_call_id(self, tool_name: str, given: str | None = None) -> str:
        """The id of the next call of ``tool_name``: ``given`` if the caller knows it, else the
        oldest id the model gave a call of that name, else a fresh one.

        A given id that the model announced is settled here too, so it can never be handed to a
        later call of the same tool.
        """
        with self._ids_lock:
            pending = self._pending_call_ids.get(tool_name)
            if given:
                if pending and given in pending:
                    pending.remove(given)
                return given
            if pending:
                return pending.pop(0)
        assert self.judge is not None
        return self.judge.next_call_id(tool_name)


def _rendered(output: object) -> str | None:
    try:
        dump = getattr(output, "model_dump_json", None)
        return str(dump()) if callable(dump) else None
    except Exception:
        return None


P = ParamSpec("P")
R = TypeVar("R")


def carry_run(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` bound to the run (and the trace) open here, for work started on another thread.

    ``asyncio.to_thread`` carries the context by itself; ``loop.run_in_executor``,
    ``ThreadPoolExecutor.submit`` and ``threading.Thread`` do not, so a tool called there would
    belong to no run. Wrap the function where the work is started::

        loop.run_in_executor(None, ci.carry_run(lookup), "LUN-7")
        pool.submit(ci.carry_run(lookup), "LUN-7")
        threading.Thread(target=ci.carry_run(lookup), args=("LUN-7",)).start()

    The context is captured when ``carry_run`` is called; each call runs in its own copy of it, so
    one wrapped function may run on several threads at once.
    """
    captured = contextvars.copy_context()

    @functools.wraps(fn)
    def carried(*args: P.args, **kwargs: P.kwargs) -> R:
        return captured.copy().run(fn, *args, **kwargs)

    return carried


class CarryingExecutor(ThreadPoolExecutor):
    """A ``ThreadPoolExecutor`` whose every task runs in the context it was submitted from.

    Install it as the loop's default executor (``loop.set_default_executor(CarryingExecutor())``)
    and ``run_in_executor(None, ...)`` carries the run too. (Import it from this module.)
    """

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> Future[R]:
        return super().submit(contextvars.copy_context().run, fn, *args, **kwargs)


def _weak_summary(agent_run: Run, judge: RunJudge) -> Callable[[], RunSummary]:
    """The run's summary source for the processor, holding the run weakly (so it can be collected)."""
    ref = weakref.ref(agent_run)

    def source() -> RunSummary:
        alive = ref()
        if alive is None or alive.outcome == "open":  # collected, or its span ended at exit unexited
            return _summary_of(judge, ABANDONED)
        return alive.summary()

    return source


def run(
    question: str | None = None,
    *,
    agent_name: str = "agent",
    conversation_id: str | None = None,
    host_span: Span | None = None,
) -> Run:
    """Open an agent run: ``with ci.run(question, agent_name="triage") as run: ...``.

    Raises :class:`~context_integrity.SetupError` for an ``agent_name``, ``question`` or
    ``conversation_id`` that is not text: they name the run in every trace, so a wrong one is a
    bug in the calling code, refused where it is written.
    """
    if not isinstance(agent_name, str) or not agent_name.strip():
        raise SetupError(
            f"ci.run(agent_name=...) must be a non-empty string (got {type(agent_name).__name__}). "
            "Name the agent, e.g. agent_name='triage'."
        )
    for option, value in (("question", question), ("conversation_id", conversation_id)):
        if value is not None and not isinstance(value, str):
            raise SetupError(
                f"ci.run({option}=...) must be a string or None (got {type(value).__name__}). "
                f"Pass the {option.replace('_', ' ')} as text."
            )
    return Run(question, agent_name=agent_name, conversation_id=conversation_id, host_span=host_span)
