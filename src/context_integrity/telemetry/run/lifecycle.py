"""The run lifecycle: :class:`Run`, an ``invoke_agent {agent}`` span with its judge and ledger.

A run opens the model calls (:mod:`.model_call`) and the tool calls (:mod:`.tool_call`) reported
through it, and is this context's current run (:mod:`.run_context`) while it is open. It adopts the
host's run span where the host opened one (:mod:`.spans`) and puts what it finds on it through
:mod:`.emit`. Every run ends with exactly one ``context_integrity.disposition`` summary span under
its run span (:mod:`.run_summary`): the span processor writes it when a run span of ours ends; for a
host's run span, adopted, :class:`Run` writes it when it ends.

Never break the host: every piece of our own work on the call path is wrapped, logged and
recorded; the only exceptions that leave here are the caller's own, unchanged.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind
from opentelemetry.util.types import AttributeValue

from ..._memo import ToldOnce
from ...contracts import DeclarationError, ToolContract, define_contract
from ...contracts.toolsets import assert_suspension
from ...findings import Finding
from ...judge import SetupError
from ...ledger import CheckerDeadError, LedgerRow
from ...limits import MAX_PENDING_CALL_IDS, MAX_QUOTED_CHARS, MAX_RECORDED_ANSWERS, MAX_WARNED_GROUNDS
from ...text import nearest
from ..emit import (
    SpanEmitter,
    clipped,
    content,
    record_internal_error,
    record_judge_errors,
    set_content,
    wants_passes,
)
from ..instrumentation import CONTRACTS, Instrumentation
from ..schema import names
from ..schema.content import ANSWER_TIME, answer_content, message_parts
from ..setup import current
from ..spans import AGENT, HeldSpan, adopt_or_start, tracer_of
from .context import EnteredRun, open_runs, release_abandoned
from .context import current_run as current_run  # re-exported: integrations/pydantic_ai.py reads it here
from .model_call import ModelCall as ModelCall  # re-exported: integrations/pydantic_ai.py reads it here
from .posture import dials_in_force, tell_checker_dead
from .processor import RunSummary
from .summary import abandon, summary_of, weak_summary
from .tool_call import OpenToolCall, arguments_mapping, call_id_text, judge_reported_result
from .tool_call import ToolScope as ToolScope  # re-exported: integrations/pydantic_ai.py reads it here

if TYPE_CHECKING:
    from ...judge import RunJudge
    from ...loop import RequestFrame

logger = logging.getLogger("context_integrity")

# What ends a run because its caller stopped it, not because the agent failed: Ctrl-C, exit, and a
# stream closed before its end (a client gone: the generator's GeneratorExit, as LangGraph reports
# it). asyncio's CancelledError is told by name, whichever module raised it.
_STOPPED_BY_THE_CALLER: Final = (KeyboardInterrupt, SystemExit, GeneratorExit)

_WARNED_GROUNDS: Final[ToldOnce[tuple[str, str]]] = ToldOnce(MAX_WARNED_GROUNDS)

# The contract of a call whose tool name could not even make one (not text): judged by nothing.
_UNNAMED_TOOL: Final = ToolContract(name="tool")


def _warn_undeclared_grounds() -> None:
    """Say once per name when ``arguments_from`` names a tool nobody declared (yet).

    Not an error: tools may be declared after the tools that name them. But at a run's start the
    name is either a typo or a tool that will never serve a ground, and the checks it arms are
    blind until it is declared.
    """
    declared = CONTRACTS.names()
    for contract in CONTRACTS:
        for ground in contract.arguments_from or ():
            if ground in declared or not _WARNED_GROUNDS.first((contract.name, ground)):
                continue
            close = nearest(ground, declared - {contract.name})
            logger.warning(
                "context_integrity: tool %r names %r in arguments_from, but no tool %r is declared%s; "
                "declare it (ci.declare_tool(%r) or @ci.tool) or fix the name.",
                contract.name[:MAX_QUOTED_CHARS],
                ground[:MAX_QUOTED_CHARS],
                ground[:MAX_QUOTED_CHARS],
                f" (did you mean {close[:MAX_QUOTED_CHARS]!r}?)" if close else "",
                ground[:MAX_QUOTED_CHARS],
            )


# Said once per process: every run of a host whose provider setup() did not join meets it.
_TOLD_FOREIGN_PROVIDER: Final[ToldOnce[str]] = ToldOnce(1)
_FOREIGN_PROVIDER: Final = "a run span from a provider setup() did not join"


def _tell_if_made_elsewhere(span: Span, inst: Instrumentation | None) -> None:
    """Say once per process when the host's run span was made by a TracerProvider setup() did not
    join: its findings go there, while the run's summary goes to ours, under a run span that
    provider never sees. Most often ``setup()`` ran first and Logfire (or another library) then
    built its own provider, which the global one could not be replaced by."""
    if _FOREIGN_PROVIDER in _TOLD_FOREIGN_PROVIDER or inst is None:  # at every run: the cheap test first
        return
    ours, theirs = inst.trace_resource, getattr(span, "resource", None)
    if (
        ours is None
        or theirs is None
        or theirs is ours
        or not _TOLD_FOREIGN_PROVIDER.first(_FOREIGN_PROVIDER)
    ):
        return
    logger.warning(
        "context_integrity: the agent's run span was made by a TracerProvider that ci.setup() did not "
        "join, so its findings go there while the run's disposition summary follows ci.setup()'s "
        "pipeline (%s), under a run span that never arrives there. Most often ci.setup() ran before "
        "logfire.configure() (or before another library built its own provider): call ci.setup() "
        "after it, or pass that provider as ci.setup(tracer_provider=...).",
        inst.destination,
    )


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
        self._run_token: contextvars.Token[EnteredRun | None] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._pending_call_ids: dict[str, list[str]] = {}
        # The framework runs this one was written around (their own run spans), when there are any.
        self._host_runs: list[Span] = []
        self._host_run_count = 0
        self._ids_lock = threading.Lock()
        # The context our model-call spans start in, made from the context current then: the same
        # context comes back for every request of a turn-by-turn host, so it is made once for it.
        self._children: tuple[Context, Span, Context] | None = None
        # The answers given so far, as content capture records them (a run of several turns gives one
        # per turn; each is judged where it was given when the run is read back).
        self._answers: list[dict[str, object]] = []

    @property
    def adopted(self) -> bool:
        """Whether the run span is the host's (enriched, never ended by us)."""
        return self._held is not None and not self._held.owned

    # ── lifecycle ──────────────────────────────────────────────────────
    def _start(self) -> None:
        try:
            self._inst = inst = current()
            release_abandoned()
            _warn_undeclared_grounds()
            from ...judge.seams import RunJudge  # the registry and the checks load with the first run

            self.judge = judge = RunJudge(CONTRACTS, dials_in_force(inst), agent=self.agent_name)
            judge.keep_passes = wants_passes(inst)
            judge.begin()
            if judge.dials.posture == "dev":
                judge.run_canaries()
            # Current before its span opens: a span that cannot open must not orphan the run's tools.
            before = otel_context.get_current()
            self._run_token = open_runs.set(EnteredRun(weakref.ref(self), before, None, open_runs.get()))
            attributes: dict[str, AttributeValue] = {
                names.GEN_AI_OPERATION_NAME: names.OPERATION_INVOKE_AGENT,
                names.GEN_AI_AGENT_NAME: self.agent_name,
            }
            if self.conversation_id:
                attributes[names.GEN_AI_CONVERSATION_ID] = self.conversation_id
            if inst is not None and inst.capture_content and self.question is not None:
                from ...loop import Message  # loaded with the judge, at the first run

                attributes[names.GEN_AI_INPUT_MESSAGES] = content(
                    [message_parts(Message("user", self.question))], inst.redact
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
            if not held.owned:
                _tell_if_made_elsewhere(span, inst)
            record_judge_errors(span, judge)
            if held.owned and inst is not None and inst.processor is not None and span.is_recording():
                inst.processor.expect(span.get_span_context().span_id, weak_summary(self, judge, inst.redact))
            # The same entry, now knowing its span; the first token still restores what was before.
            below = self._run_token.old_value if self._run_token is not None else None
            below = below if isinstance(below, EnteredRun) else None
            open_runs.set(EnteredRun(weakref.ref(self), before, span.get_span_context().span_id, below))
            # A run dropped without exiting still ends, once, with its summary (outcome abandoned).
            self._finalizer = weakref.finalize(self, abandon, judge, held, inst)
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
        elif isinstance(error, _STOPPED_BY_THE_CALLER) or type(error).__name__ == "CancelledError":
            self.outcome = "cancelled"
        else:
            self.outcome = "error"
        token, self._run_token = self._run_token, None
        if token is not None:
            # Reset from another context (a task that outlived its run): nothing to restore there.
            with contextlib.suppress(Exception):
                open_runs.reset(token)
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
            tell_checker_dead(dead)
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

    def child_context(self, here: Context) -> Context | None:
        """``here`` with the run span current in it (``None`` before the run has a span): where a
        span of a step of this run starts."""
        span = self.span
        if span is None:
            return None
        made = self._children
        if made is not None and made[0] is here and made[1] is span:
            return made[2]
        child = trace.set_span_in_context(span, here)
        self._children = (here, span, child)
        return child

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
        return summary_of(self.judge, self.outcome, self._inst.redact if self._inst is not None else None)

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

    def tool_call(
        self,
        tool_name: str,
        call_id: str | None = None,
        arguments: Mapping[str, Any] | str | None = None,
    ) -> OpenToolCall:
        """Report a tool call around its execution (the write seam), as a context manager.

        ``with run.tool_call(name, call_id, arguments) as call:`` (or ``async with``) opens the
        ``execute_tool`` span before the tool runs, so what the call itself traces (an MCP client's
        request, its server's handling) nests under it and its duration is the tool's; inside,
        ``delivered = call.result(raw)`` judges the result and returns what the model should read:
        the result itself, or the refusal sentence when ``check_column_types="enforce"`` refused
        it. ``arguments`` as in :meth:`tool_result`, which stays for results reported after the fact.
        """
        try:
            contract = CONTRACTS.get(tool_name) or define_contract(tool_name)
        except Exception as ours:
            record_internal_error(self.span, "reporting a tool call", ours)
            contract = _UNNAMED_TOOL
        return OpenToolCall(self, contract, call_id_text(call_id), arguments_mapping(arguments))

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
        return judge_reported_result(
            contract, lambda: args, result, run=self, call_id=call_id_text(call_id), host_span=host_span
        )

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
                self._answers.append({**answer_content(shown), ANSWER_TIME: time.time_ns()})
                del self._answers[:-MAX_RECORDED_ANSWERS]
                set_content(
                    held.span,
                    names.GEN_AI_OUTPUT_MESSAGES,
                    self._answers,
                    owned=held.owned,
                    hook=self._inst.redact,
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

    def suspend(self, group: str, tools: Sequence[str] | None = None) -> None:
        """Tell the run a group of tools is switched off (a skill or toolset disabled, an MCP server
        disconnected) until :meth:`resume`. A request that still offers one of them is an
        invariant-violation at the compose seam. ``tools`` may be left out for a toolset declared by
        name (a contracts file's ``[toolsets.NAME]``): its declared tools are the group's.

        Raises :class:`~context_integrity.DeclarationError` for a blank group name, a tool list
        that is not a list of non-blank names, or no tools for a group no toolset declares: that is
        the application's statement, checked once.
        """
        if tools is None:
            declared = CONTRACTS.toolset(group) if isinstance(group, str) else None
            if declared is None:
                raise DeclarationError(
                    f"run.suspend({group!r}): no toolset {group!r} is declared, so its tools are unknown. "
                    "Pass them, run.suspend(group, ['open_ticket', ...]), or declare the toolset in the "
                    "contracts file ([toolsets.NAME] tools = [...])."
                )
            tools = declared.tools
        group, names_ = assert_suspension(group, tools)
        if self.judge is not None:
            self.judge.suspend(group, names_)
        self._toolset_event(names.TOOLSET_SUSPENDED_EVENT, group, names_)

    def resume(self, group: str) -> None:
        """The group suspended with :meth:`suspend` is on again. Resuming an unknown group does nothing."""
        if not isinstance(group, str):
            return
        if self.judge is not None:
            self.judge.resume(group)
        self._toolset_event(names.TOOLSET_RESUMED_EVENT, group, None)

    def _toolset_event(self, event: str, group: str, tools: tuple[str, ...] | None) -> None:
        """The application's statement, on the run span: a later judge of the trace reads it there."""
        span = self.span
        if span is None:
            return
        try:
            attributes: dict[str, AttributeValue] = {names.TOOLSET_GROUP: group}
            if tools is not None:
                attributes[names.TOOLSET_TOOLS] = list(tools)
            span.add_event(event, clipped(attributes))
        except Exception as ours:
            record_internal_error(span, "recording a toolset change", ours)

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
        # Most calls have no announced id: that is seen without the lock (a dict read is atomic),
        # and an id announced concurrently is one announced after this call, as it would be anyway.
        if not self._pending_call_ids.get(tool_name):
            if given:
                return given
            assert self.judge is not None
            return self.judge.next_call_id(tool_name)
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
