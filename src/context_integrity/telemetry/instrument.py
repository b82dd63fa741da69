"""The instrumentation users touch: ``@tool``, ``declare_tool`` and ``run``.

A decorated call is a span ``execute_tool {name}``; its result is judged at the
write seam; each first-sighted finding becomes a span event (and a counter
increment, and optionally a log record) before the span ends. A run is a span
``invoke_agent {agent}`` whose end makes the span processor emit the
disposition summary.

Never break the host: every piece of our own work on the call path is wrapped,
logged and recorded; the only exceptions that leave a wrapper are the tool's
own, unchanged.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, ParamSpec, TypeVar, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from ..contracts import ToolContract, define_contract
from ..findings import Finding, kinds_of
from ..judge import Dials, RunJudge
from ..ledger import LedgerRow
from ..limits import MAX_ATTRIBUTE_CHARS, MAX_PENDING_CALL_IDS
from ..protocol import ExternalGrounding, ModelResponse, RequestFrame, ToolCall
from ..text import bounded_json, clip, render_value
from . import names
from .attributes import finding_attributes
from .processor import RunSummary
from .setup import CONTRACTS, VERSION, Instrumentation, current

logger = logging.getLogger("context_integrity")

P = ParamSpec("P")
R = TypeVar("R")

_current_run: contextvars.ContextVar[Run | None] = contextvars.ContextVar(
    "context_integrity_run", default=None
)

_DEFAULT_DIALS = Dials()


def current_run() -> Run | None:
    """The run open in this context, if any."""
    return _current_run.get()


def _tracer(inst: Instrumentation | None) -> Tracer:
    return inst.tracer if inst is not None else trace.get_tracer(names.INSTRUMENTATION_NAME, VERSION)


# Which of our own failures were already logged with a traceback: a bug that fires on every call
# must put its traceback in the log once, not once per call. Every occurrence is still recorded
# on its span.
_LOGGED_FAILURES: set[tuple[str, str]] = set()
_MAX_LOGGED_FAILURES = 256


def _record_internal_error(span: Span | None, where: str, error: BaseException) -> None:
    """Log our own failure and put it on the record; the host never sees it."""
    key = (where, type(error).__qualname__)
    if key not in _LOGGED_FAILURES and len(_LOGGED_FAILURES) < _MAX_LOGGED_FAILURES:
        _LOGGED_FAILURES.add(key)
        logger.error(
            "context_integrity: %s failed: %r (the agent was not affected; repeats are logged at debug)",
            where,
            error,
            exc_info=error,
        )
    else:
        logger.debug("context_integrity: %s failed again: %r", where, error)
    if span is None:
        return
    with contextlib.suppress(Exception):
        span.add_event(
            names.INTERNAL_ERROR_EVENT,
            {names.INTERNAL_ERROR_WHERE: where, names.INTERNAL_ERROR_TYPE: type(error).__qualname__},
        )


def _mark_error(span: Span, error: BaseException) -> None:
    """Put an exception that ended an operation on its span: event, ERROR status, ``error.type``."""
    span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, clip(str(error) or type(error).__name__, 256)))
    span.set_attribute(names.ERROR_TYPE, type(error).__qualname__)


class SpanFindings:
    """Findings attached to one span: events, metric, log records, and the span-level summary."""

    __slots__ = ("count", "kinds", "span")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.count = 0
        self.kinds: list[str] = []

    def add(
        self,
        inst: Instrumentation | None,
        findings: Sequence[Finding],
        *,
        tool_name: str | None,
        call_id: str | None,
    ) -> None:
        if not findings:
            return
        for finding in findings:
            attributes = finding_attributes(finding, tool_name=tool_name, call_id=call_id)
            self.span.add_event(names.FINDING_EVENT, attributes)
            if inst is not None:
                inst.findings_counter.add(
                    1,
                    {
                        names.METRIC_KIND: finding.kind,
                        names.METRIC_SEAM: finding.seam,
                        names.METRIC_TOOL: tool_name or "",
                        names.METRIC_ADVISORY: finding.advisory,
                    },
                )
                if inst.event_logger is not None:
                    _emit_log_event(inst, self.span, finding, attributes)
        self.count += len(findings)
        for kind in kinds_of(findings):
            if kind not in self.kinds:
                self.kinds.append(kind)
        self.span.set_attribute(names.FINDINGS_COUNT, self.count)
        self.span.set_attribute(names.FINDINGS_KINDS, list(self.kinds))


def _emit_log_event(inst: Instrumentation, span: Span, finding: Finding, attributes: dict[str, Any]) -> None:
    from opentelemetry._logs import SeverityNumber

    assert inst.event_logger is not None
    inst.event_logger.emit(
        body=finding.message,
        attributes=attributes,
        event_name=names.FINDING_LOG_EVENT_NAME,
        context=trace.set_span_in_context(span),
        severity_number=SeverityNumber.INFO if finding.advisory else SeverityNumber.WARN,
        severity_text="INFO" if finding.advisory else "WARN",
    )


def _content(value: object) -> str:
    """Opt-in content for a ``gen_ai.*`` attribute: bounded JSON, never the whole payload."""
    try:
        text = bounded_json(value, MAX_ATTRIBUTE_CHARS)
    except Exception:
        text = render_value(value, MAX_ATTRIBUTE_CHARS)
    return clip(text, MAX_ATTRIBUTE_CHARS)


class _ToolCall:
    """One instrumented call in flight: its span, its judge and its call id."""

    __slots__ = ("_owned", "_token", "arguments", "call_id", "contract", "findings", "inst", "judge", "span")

    def __init__(
        self,
        contract: ToolContract,
        arguments: Callable[[], Mapping[str, Any]],
        *,
        run: Run | None = None,
        call_id: str | None = None,
    ) -> None:
        self.contract = contract
        self.arguments = arguments
        self.inst = current()
        run = run if run is not None else _current_run.get()
        dials = self.inst.dials if self.inst is not None else _DEFAULT_DIALS
        # A framework that already opened this call's execute_tool span (pydantic-ai does) keeps
        # it: the findings go onto that span, which stays the framework's to end.
        adopted = _framework_tool_span(contract.name)
        adopted_id = _span_call_id(adopted) if adopted is not None else None
        if run is not None and run.judge is not None:
            self.judge = run.judge
            self.call_id = run.take_call_id(contract.name, call_id or adopted_id)
        else:
            self.judge = RunJudge(CONTRACTS, dials, with_ledger=False)
            self.call_id = call_id or adopted_id or f"call_{uuid.uuid4().hex[:12]}"
        self._owned = adopted is None
        self._token: contextvars.Token[Context] | None = None
        if adopted is not None:
            self.span = adopted
        else:
            self.span = _tracer(self.inst).start_span(
                names.tool_span_name(contract.name),
                kind=SpanKind.INTERNAL,
                attributes={
                    names.GEN_AI_OPERATION_NAME: names.OPERATION_EXECUTE_TOOL,
                    names.GEN_AI_TOOL_NAME: contract.name,
                    names.GEN_AI_TOOL_CALL_ID: self.call_id,
                    names.GEN_AI_TOOL_TYPE: names.TOOL_TYPE_FUNCTION,
                },
            )
            self._token = otel_context.attach(trace.set_span_in_context(self.span))
        self.findings = SpanFindings(self.span)

    def _detach(self) -> None:
        if self._token is not None:
            with contextlib.suppress(Exception):
                otel_context.detach(self._token)

    def fail(self, error: BaseException) -> None:
        """The tool itself raised: record it, end the span; the caller re-raises it unchanged."""
        try:
            self._detach()
            if self._owned:
                _mark_error(self.span, error)
                self.span.end()
        except Exception as ours:
            _record_internal_error(None, "recording a tool's exception", ours)

    def finish(self, result: Any) -> Any:
        """Judge the result, attach findings, end the span, and return what the caller receives."""
        delivered = result
        try:
            self._detach()
            verdict = self.judge.judge_tool_result(
                self.contract.name, self.call_id, result, arguments=self.arguments
            )
            for problem in self.judge.internal_errors:
                _record_internal_error(self.span, f"check {problem.where}", problem.error)
            self.judge.internal_errors.clear()
            self.findings.add(self.inst, verdict.findings, tool_name=self.contract.name, call_id=self.call_id)
            if self.inst is not None and self.inst.capture_content:
                self.span.set_attribute(names.GEN_AI_TOOL_CALL_ARGUMENTS, _content(dict(self.arguments())))
                self.span.set_attribute(names.GEN_AI_TOOL_CALL_RESULT, _content(result))
            if verdict.refusal is not None:
                delivered = verdict.refusal
                self.span.set_status(Status(StatusCode.ERROR, "result rejected by context_integrity"))
                self.span.set_attribute(names.ERROR_TYPE, names.ERROR_RESULT_REJECTED)
        except Exception as ours:
            _record_internal_error(self.span, "judging a tool result", ours)
            delivered = result
        finally:
            if self._owned:
                try:
                    self.span.end()
                except Exception as ours:
                    _record_internal_error(None, "ending a tool span", ours)
        return delivered


def _framework_tool_span(tool_name: str) -> Span | None:
    """The current span, when it is a recording ``execute_tool`` span for this very tool."""
    span = trace.get_current_span()
    if not span.is_recording():
        return None
    attributes = getattr(span, "attributes", None) or {}
    if (
        attributes.get(names.GEN_AI_OPERATION_NAME) == names.OPERATION_EXECUTE_TOOL
        and attributes.get(names.GEN_AI_TOOL_NAME) == tool_name
    ):
        return span
    return None


def _span_call_id(span: Span) -> str | None:
    value = (getattr(span, "attributes", None) or {}).get(names.GEN_AI_TOOL_CALL_ID)
    return value if isinstance(value, str) and value else None


def _open_call(contract: ToolContract, arguments: Callable[[], Mapping[str, Any]]) -> _ToolCall | None:
    try:
        return _ToolCall(contract, arguments)
    except Exception as ours:
        _record_internal_error(None, "opening a tool span", ours)
        return None


def _binder(
    fn: Callable[..., Any],
) -> Callable[[tuple[Any, ...], dict[str, Any]], Callable[[], Mapping[str, Any]]]:
    """Arguments by parameter name, bound only if a check asks for them."""
    try:
        signature: inspect.Signature | None = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Callable[[], Mapping[str, Any]]:
        def arguments() -> Mapping[str, Any]:
            if signature is None:
                return dict(kwargs)
            try:
                bound = signature.bind_partial(*args, **kwargs)
            except TypeError:
                return dict(kwargs)
            out: dict[str, Any] = {}
            for key, value in bound.arguments.items():
                kind = signature.parameters[key].kind
                if kind is inspect.Parameter.VAR_KEYWORD and isinstance(value, Mapping):
                    out.update(value)
                elif key not in ("self", "cls"):
                    out[key] = value
            return out

        return arguments

    return bind


def declare_tool(
    name: str,
    *,
    result_columns: object = None,
    arguments_from: object = None,
    input_schema: Mapping[str, Any] | None = None,
    description: str | None = None,
) -> ToolContract:
    """Declare the contract of a tool this application did not write (a framework or MCP tool).

    Raises :class:`~context_integrity.DeclarationError` naming the tool, the field
    and the fix when a declaration cannot be honoured.
    """
    contract = define_contract(
        name,
        description=description,
        result_columns=result_columns,
        arguments_from=arguments_from,
        input_schema=input_schema,
    )
    CONTRACTS.declare(contract)
    return contract


def _first_line(doc: str | None) -> str | None:
    if not doc:
        return None
    stripped = inspect.cleandoc(doc).strip()
    return stripped.splitlines()[0] if stripped else None


@overload
def tool(fn: Callable[P, R], /) -> Callable[P, R]: ...
@overload
def tool(
    fn: None = None,
    /,
    *,
    result_columns: object = None,
    arguments_from: object = None,
    name: str | None = None,
    description: str | None = None,
    input_schema: Mapping[str, Any] | None = None,
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...
def tool(
    fn: Callable[P, R] | None = None,
    /,
    *,
    result_columns: object = None,
    arguments_from: object = None,
    name: str | None = None,
    description: str | None = None,
    input_schema: Mapping[str, Any] | None = None,
) -> Callable[P, R] | Callable[[Callable[P, R]], Callable[P, R]]:
    """Declare a tool's contract and instrument its calls (sync or async).

    ``result_columns`` says what its rows contain; ``arguments_from`` names the
    tools whose results its arguments come from. A bad declaration raises
    :class:`~context_integrity.DeclarationError` here, at definition; nothing
    the tool later returns can make the wrapper raise.
    """

    def decorate(target: Callable[P, R]) -> Callable[P, R]:
        contract = declare_tool(
            name or str(getattr(target, "__name__", "")),
            result_columns=result_columns,
            arguments_from=arguments_from,
            input_schema=input_schema,
            description=description or _first_line(getattr(target, "__doc__", None)),
        )
        bind = _binder(target)

        if inspect.iscoroutinefunction(target):
            async_target: Callable[..., Awaitable[Any]] = target

            @functools.wraps(target)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                call = _open_call(contract, bind(args, kwargs))
                if call is None:
                    return await async_target(*args, **kwargs)
                try:
                    result = await async_target(*args, **kwargs)
                except BaseException as error:
                    call.fail(error)
                    raise
                return call.finish(result)

            async_wrapper.contract = contract  # type: ignore[attr-defined]
            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(target)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            call = _open_call(contract, bind(args, kwargs))
            if call is None:
                return target(*args, **kwargs)
            try:
                result = target(*args, **kwargs)
            except BaseException as error:
                call.fail(error)
                raise
            return call.finish(result)  # type: ignore[no-any-return]

        wrapper.contract = contract  # type: ignore[attr-defined]
        return wrapper

    return decorate(fn) if fn is not None else decorate


class Run:
    """One agent run: the ``invoke_agent`` span, its judge and its ledger.

    Use as ``with ci.run(question, agent_name=...) as run:`` or ``async with``.
    Whatever the block does, the run span ends exactly once and the span
    processor writes exactly one disposition summary under it.
    """

    def __init__(
        self, question: str | None = None, *, agent_name: str = "agent", conversation_id: str | None = None
    ):
        self.question = question
        self.agent_name = agent_name
        self.conversation_id = conversation_id
        self.judge: RunJudge | None = None
        self.outcome = "open"
        self.span: Span | None = None
        self._inst: Instrumentation | None = None
        self._tokens: tuple[Any, Any] | None = None
        self._pending_call_ids: dict[str, list[str]] = {}

    # ── lifecycle ──────────────────────────────────────────────────────
    def _start(self) -> None:
        try:
            self._inst = inst = current()
            dials = inst.dials if inst is not None else _DEFAULT_DIALS
            self.judge = RunJudge(CONTRACTS, dials)
            self.judge.begin()
            attributes: dict[str, Any] = {
                names.GEN_AI_OPERATION_NAME: names.OPERATION_INVOKE_AGENT,
                names.GEN_AI_AGENT_NAME: self.agent_name,
            }
            if self.conversation_id:
                attributes[names.GEN_AI_CONVERSATION_ID] = self.conversation_id
            if inst is not None and inst.capture_content and self.question is not None:
                attributes[names.GEN_AI_INPUT_MESSAGES] = _content(
                    [{"role": "user", "content": self.question}]
                )
            self.span = span = _tracer(inst).start_span(
                names.run_span_name(self.agent_name), kind=SpanKind.INTERNAL, attributes=attributes
            )
            if inst is not None and inst.processor is not None and span.is_recording():
                inst.processor.expect(span.get_span_context().span_id, self.summary)
            self._tokens = (
                otel_context.attach(trace.set_span_in_context(span)),
                _current_run.set(self),
            )
        except Exception as ours:
            _record_internal_error(self.span, "opening a run", ours)

    def _end(self, error: BaseException | None) -> None:
        if error is None:
            self.outcome = "ok"
        elif isinstance(error, (KeyboardInterrupt, SystemExit)) or type(error).__name__ == "CancelledError":
            self.outcome = "cancelled"
        else:
            self.outcome = "error"
        tokens, self._tokens = self._tokens, None
        if tokens is not None:
            with contextlib.suppress(Exception):
                _current_run.reset(tokens[1])
            with contextlib.suppress(Exception):
                otel_context.detach(tokens[0])
        span = self.span
        if span is None:
            return
        try:
            if error is not None:
                _mark_error(span, error)
            span.end()
        except Exception as ours:
            _record_internal_error(None, "ending a run", ours)

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
        judge = self.judge
        ledger = judge.ledger if judge is not None else None
        rows = ledger.report() if ledger is not None else []
        totals = ledger.totals() if ledger is not None else {}
        return RunSummary(
            rows=rows,
            totals=totals,
            posture=judge.dials.posture if judge is not None else "observe",
            work_existed=judge.work_existed if judge is not None else False,
            outcome=self.outcome,
        )

    # ── the loop protocol ──────────────────────────────────────────────
    def request(self, frame: RequestFrame, *, model: str | None = None) -> ModelCall:
        """Report an assembled request (the compose seam); returns the open model call.

        Use as ``with run.request(frame) as call: ... call.respond(response)``,
        or call :meth:`ModelCall.respond` without the ``with``; either way the
        ``chat`` span ends exactly once.
        """
        return ModelCall(self, frame, model or frame.model or "model")

    def tool_result(
        self,
        tool_name: str,
        call_id: str | None,
        result: object,
        *,
        arguments: Mapping[str, Any] | None = None,
    ) -> Any:
        """Report the result of a tool this application did not decorate (the write seam).

        Returns what the model should read: the result itself, or the refusal
        sentence when ``check_column_types="enforce"`` refused it.
        """
        try:
            contract = CONTRACTS.get(tool_name) or define_contract(tool_name)
        except Exception as ours:
            _record_internal_error(self.span, "reporting a tool result", ours)
            return result
        args = dict(arguments or {})
        try:
            call = _ToolCall(contract, lambda: args, run=self, call_id=call_id)
        except Exception as ours:
            _record_internal_error(self.span, "opening a tool span", ours)
            return result
        return call.finish(result)

    def answer(self, text: str) -> None:
        """Report the final answer (the claim seam). Its checks are not built yet; their rows say so."""
        try:
            if self._inst is not None and self._inst.capture_content and self.span is not None:
                self.span.set_attribute(
                    names.GEN_AI_OUTPUT_MESSAGES, _content([{"role": "assistant", "content": text}])
                )
            if self.judge is not None:
                self.judge.work_existed = True
        except Exception as ours:
            _record_internal_error(self.span, "reporting the answer", ours)

    # ── call ids ───────────────────────────────────────────────────────
    def expect_call(self, tool_name: str, call_id: str) -> None:
        """Tell the run the id the model gave a call, so the tool span carries it."""
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
        pending = self._pending_call_ids.get(tool_name)
        if given:
            if pending and given in pending:
                pending.remove(given)
            return given
        if pending:
            return pending.pop(0)
        assert self.judge is not None
        return self.judge.next_call_id(tool_name)


class ModelCall:
    """One model call in flight: a ``chat {model}`` span judged at the compose and choice seams."""

    def __init__(self, agent_run: Run, frame: RequestFrame, model: str) -> None:
        self.run = agent_run
        self.frame = frame
        self.model = model
        self.span: Span | None = None
        self.findings: list[Finding] = []
        self.excusals: list[ExternalGrounding] = []
        self._ended = False
        self._on_span: SpanFindings | None = None
        try:
            inst = agent_run._inst
            parent = trace.set_span_in_context(agent_run.span) if agent_run.span is not None else None
            self.span = _tracer(inst).start_span(
                names.chat_span_name(model),
                context=parent,
                kind=SpanKind.CLIENT,
                attributes={
                    names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT,
                    names.GEN_AI_REQUEST_MODEL: model,
                },
            )
            self._on_span = SpanFindings(self.span)
            if agent_run.judge is not None:
                found = agent_run.judge.judge_request(frame)
                self._attach(found)
        except Exception as ours:
            _record_internal_error(self.span, "judging a request", ours)

    def _attach(self, found: Sequence[Finding]) -> None:
        judge = self.run.judge
        if judge is not None:
            for problem in judge.internal_errors:
                _record_internal_error(self.span, f"check {problem.where}", problem.error)
            judge.internal_errors.clear()
        if found and self._on_span is not None:
            self.findings.extend(found)
            for finding in found:  # each names its own consumer tool; a request is about no call yet
                self._on_span.add(self.run._inst, [finding], tool_name=_subject_tool(finding), call_id=None)

    def respond(
        self,
        response: ModelResponse | None = None,
        *,
        calls: Sequence[ToolCall] = (),
        text: str | None = None,
    ) -> None:
        """Report the response (the choice seam) and end the ``chat`` span."""
        if self._ended:
            return
        try:
            reply = response if response is not None else ModelResponse(calls=tuple(calls), text=text)
            for call in reply.calls:
                self.run.expect_call(call.name, call.call_id)
            judge = self.run.judge
            if judge is not None:
                verdict = judge.judge_response(self.frame, reply)
                self._attach_choice(verdict.findings, verdict.call_ids)
                self.excusals.extend(verdict.excusals)
                if self.span is not None:
                    for excusal in verdict.excusals:
                        self.span.add_event(
                            names.EXTERNAL_GROUND_EVENT,
                            {
                                names.GEN_AI_TOOL_NAME: excusal.tool_name,
                                names.GEN_AI_TOOL_CALL_ID: excusal.call_id,
                                names.EXTERNAL_GROUND_PATH: excusal.path,
                                names.EXTERNAL_GROUND_VALUE: clip(excusal.value, MAX_ATTRIBUTE_CHARS),
                                names.EXTERNAL_GROUND_SOURCE: clip(excusal.source, MAX_ATTRIBUTE_CHARS),
                            },
                        )
        except Exception as ours:
            _record_internal_error(self.span, "judging a response", ours)
        finally:
            self.end()

    def _attach_choice(self, found: Sequence[Finding], call_ids: Sequence[str | None]) -> None:
        judge = self.run.judge
        if judge is not None:
            for problem in judge.internal_errors:
                _record_internal_error(self.span, f"check {problem.where}", problem.error)
            judge.internal_errors.clear()
        if not found or self._on_span is None:
            return
        self.findings.extend(found)
        for index, finding in enumerate(found):
            call_id = call_ids[index] if index < len(call_ids) else None
            self._on_span.add(self.run._inst, [finding], tool_name=_subject_tool(finding), call_id=call_id)

    def end(self, error: BaseException | None = None) -> None:
        if self._ended:
            return
        self._ended = True
        if self.span is None:
            return
        try:
            if error is not None:
                _mark_error(self.span, error)
            self.span.end()
        except Exception as ours:
            _record_internal_error(None, "ending a chat span", ours)

    def __enter__(self) -> ModelCall:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.end(exc)


def _subject_tool(finding: Finding) -> str | None:
    for subject in finding.subjects:
        if subject.kind == "tool":
            return subject.id
    return None


def run(question: str | None = None, *, agent_name: str = "agent", conversation_id: str | None = None) -> Run:
    """Open an agent run: ``with ci.run(question, agent_name="triage") as run: ...``."""
    return Run(question, agent_name=agent_name, conversation_id=conversation_id)
