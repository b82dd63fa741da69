"""The replay: a run read from a trace, fed to the same judge, in the order the integrations feed it.

:func:`judge_run` hands a :class:`~context_integrity.judge.RunJudge` each step of a
:class:`~.model.TracedRun` exactly as the in-process integrations do (``telemetry/run``): for each
model call, ``compose`` with its request, then ``wire`` (no trace holds the serialized body, so an
armed wire check reads ``unreachable``, as in process when no wire reader saw the body), then
``choice`` with its response; for each tool execution, ``write`` with its result and arguments; for
the final answer, ``claim``. The registry and the pure checks are the same ones: nothing here
decides anything a check decides.

Each finding is kept with the span it belongs on, the one the in-process integration puts it on:
``compose``, ``wire`` and ``choice`` findings on the model call's span, ``write`` findings on the tool
execution's span, ``claim`` findings on the run span.

Missing evidence is ``unreachable`` with its reason, never ``passed``: a request, response, result
or answer the trace does not carry (content capture off, hidden, cut short, not JSON), the tools
offered with a request, a tool's arguments (only the checks that read them), a tool execution whose
span is missing from the trace although the model read its result. Each such encounter is kept as an
:class:`Unreachable` naming the rows it counted, where, and why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..findings import SEAMS, Finding, Seam
from ..judge.book import ContractBook
from ..judge.dials import Dials
from ..judge.profile import Profile
from ..judge.registry import REGISTRY, Registry
from ..judge.seams import RunJudge
from ..ledger import CheckId, LedgerRow
from ..text import clip
from .model import SPANS_NOT_READ, AnswerStep, ModelStep, ToolsetStep, ToolStep, TracedRun
from .readings import Missing

# What the wire seam reads is the body sent to the provider, which no span carries.
WIRE_UNSEEN: Final = "the request body sent to the provider is not in the trace (no span carries it)"
_WHERE: Final = "the trace"


class MissingEvidence(Exception):
    """Evidence a check needs that the trace does not carry: raised into the judge as its reason."""

    def __init__(self, missing: Missing) -> None:
        self.missing = missing
        super().__init__(reason_of(missing))


def reason_of(missing: Missing) -> str:
    return f"{missing.what}: {missing.why}"


@dataclass(frozen=True, slots=True)
class JudgedFinding:
    """One finding and where it belongs: the span it is about (the one the in-process integration
    would have put it on), the tool and call it names, and when."""

    finding: Finding
    span_id: str
    span_name: str
    tool_name: str | None
    call_id: str | None
    time_unix_nano: int | None


@dataclass(frozen=True, slots=True)
class Unreachable:
    """One encounter the trace could not feed: the rows it counted ``unreachable``, the span, why."""

    seam: Seam
    rows: tuple[CheckId, ...]
    span_id: str
    reason: str

    def sentence(self) -> str:
        rows = ", ".join(row.render() for row in self.rows)
        return f"{rows} on span {self.span_id}: {self.reason}"


@dataclass(frozen=True, slots=True)
class JudgedRun:
    """A :class:`~.model.TracedRun` judged: its findings, its ledger, what could not be judged and why.

    ``internal_errors`` are our own failures (never expected), each said as one line.
    """

    run: TracedRun
    findings: tuple[JudgedFinding, ...]
    ledger: tuple[LedgerRow, ...]
    unreachable: tuple[Unreachable, ...]
    dials: Dials
    work_existed: bool
    internal_errors: tuple[str, ...] = ()
    # The run's profile as the replay gathered it, when the dials asked for one (``suggest``).
    profile: Profile | None = None

    @property
    def totals(self) -> dict[str, int]:
        from ..ledger import ROW_FIELDS

        counts = [f for f in ROW_FIELDS if f not in ("check", "seam", "last_fired_at")]
        return {name: sum(int(getattr(row, name)) for row in self.ledger) for name in counts}


@dataclass(slots=True)
class _Replay:
    run: TracedRun
    judge: RunJudge = field(init=False)
    now_ms: int = 0
    findings: list[JudgedFinding] = field(default_factory=list)
    unreachable: list[Unreachable] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def clock(self) -> int:
        return self.now_ms

    def at(self, nanos: int | None) -> None:
        if nanos is not None:
            self.now_ms = nanos // 1_000_000

    # ── where findings and missing evidence go ──────────────────────
    def file(
        self,
        found: Sequence[Finding],
        span_id: str,
        span_name: str,
        when: int | None,
        *,
        tool_name: str | None = None,
        call_id: str | None = None,
        call_ids: Sequence[str | None] = (),
    ) -> None:
        for index, finding in enumerate(found):
            tool = tool_name if tool_name is not None else _subject_tool(finding)
            about = call_ids[index] if index < len(call_ids) else call_id
            self.findings.append(JudgedFinding(finding, span_id, span_name, tool, about, when))

    def missing(self, seam: Seam, span_id: str, reason: str) -> None:
        """A whole seam's encounter the trace cannot feed: every armed row there, unreachable."""
        rows = tuple(row for entry in self.judge.armed[seam] for row in entry.rows)
        if not rows:
            return  # nothing armed there: no encounter, nothing to say
        self.judge.note_unreachable(seam, _WHERE, MissingEvidence(Missing(seam, reason)))
        self.unreachable.append(Unreachable(seam, rows, span_id, reason))

    def collect(self, seam: Seam, span_id: str) -> None:
        """Move what the judge kept of this step's failures: missing evidence a check met (an
        argument it asked for) becomes its row's reason; anything else is our own error."""
        for failure in self.judge.take_internal_errors():
            error = failure.error
            if isinstance(error, MissingEvidence):
                if failure.where == _WHERE:
                    continue  # said by :meth:`missing` already
                rows = tuple(
                    row for entry in self.judge.checks if entry.name == failure.where for row in entry.rows
                )
                if rows:
                    self.unreachable.append(Unreachable(seam, rows, span_id, str(error)))
                continue  # the run's bookkeeping met it: it remembers less, and says nothing
            self.errors.append(f"{failure.where}: {type(error).__name__}: {clip(str(error), 200)}")

    # ── the steps, in the order the integrations feed them ────────────
    def model(self, step: ModelStep) -> None:
        judge = self.judge
        frame = step.request
        reasons = {m.what: reason_of(m) for m in step.missing}
        self.at(step.start_time_unix_nano)
        if frame is None:
            self.missing("compose", step.span_id, _first(reasons, "the request is not in the trace"))
        elif any("tools offered" in what for what in reasons):
            reason = next(r for w, r in reasons.items() if "tools offered" in w)
            rows = tuple(row for entry in judge.armed["compose"] for row in entry.rows)
            judge.compose_unjudged(frame, _WHERE, MissingEvidence(Missing("compose", reason)))
            if rows:
                self.unreachable.append(Unreachable("compose", rows, step.span_id, reason))
        else:
            self.file(judge.compose(frame), step.span_id, step.name, step.start_time_unix_nano)
        self.collect("compose", step.span_id)
        self.at(step.end_time_unix_nano or step.start_time_unix_nano)
        if judge.armed["wire"]:
            self.file(judge.wire(frame, None), step.span_id, step.name, step.end_time_unix_nano)
            self.unreachable.append(
                Unreachable(
                    "wire", tuple(r for e in judge.armed["wire"] for r in e.rows), step.span_id, WIRE_UNSEEN
                )
            )
        else:
            judge.wire(frame, None)
        self.collect("wire", step.span_id)
        response = step.response
        if response is None:
            if step.error is None:  # a call that failed has no response to judge, in process alike
                # The response's own reason, where the dialect gave one (not the request's first).
                said = {what: why for what, why in reasons.items() if "response" in what} or reasons
                self.missing("choice", step.span_id, _first(said, "the model's response is not in the trace"))
        elif frame is None:
            self.missing(
                "choice",
                step.span_id,
                "the calls the model made cannot be judged without the request they answered: "
                + _first(reasons, "the request is not in the trace"),
            )
        else:
            verdict = judge.choice(frame, response)
            self.file(
                verdict.findings, step.span_id, step.name, step.end_time_unix_nano, call_ids=verdict.call_ids
            )
        self.collect("choice", step.span_id)

    def tool(self, step: ToolStep) -> None:
        self.at(step.end_time_unix_nano or step.start_time_unix_nano)
        result = step.result
        if isinstance(result, Missing):
            if step.error is None:  # a tool that raised has no result to judge, in process alike
                self.missing("write", step.span_id, reason_of(result))
            return
        arguments = step.arguments
        given: Callable[[], Mapping[str, Any]] | Mapping[str, Any]
        if isinstance(arguments, Missing):
            absent = arguments

            def given() -> Mapping[str, Any]:
                raise MissingEvidence(absent)

        else:
            given = arguments
        verdict = self.judge.write(step.tool_name, step.call_id, result, arguments=given)
        self.file(
            verdict.findings,
            step.span_id,
            step.name,
            step.end_time_unix_nano,
            tool_name=step.tool_name,
            call_id=step.call_id,
        )
        self.collect("write", step.span_id)

    def toolset(self, step: ToolsetStep) -> None:
        """What the application told the run, told again (``run.suspend`` / ``run.resume``)."""
        if step.tools is None:
            self.judge.resume(step.group)
        else:
            self.judge.suspend(step.group, step.tools)
        self.collect("compose", step.span_id)

    def answer(self, step: AnswerStep) -> None:
        self.at(step.time_unix_nano)
        found = self.judge.claim(step.text, step.output)
        self.file(found, step.span_id, self.run.name, step.time_unix_nano)
        self.collect("claim", step.span_id)


def _first(reasons: Mapping[str, str], fallback: str) -> str:
    return next(iter(reasons.values()), fallback)


def _subject_tool(finding: Finding) -> str | None:
    for subject in finding.subjects:
        if subject.kind == "tool":
            return subject.id
    return None


def _unexecuted(run: TracedRun) -> list[tuple[str, str, str]]:
    """Calls whose result a later request shows the model reading, with no tool execution in the
    run: (the model call's span, the tool, the call id). Their execution spans are missing."""
    executed = {step.call_id for step in run.steps if isinstance(step, ToolStep)}
    asked: dict[str, tuple[str, str]] = {}
    read: set[str] = set()
    for step in run.steps:
        if not isinstance(step, ModelStep):
            continue
        if step.request is not None:
            read.update(
                m.tool_call_id
                for m in step.request.messages
                if m.role == "tool" and m.tool_call_id is not None
            )
        if step.response is not None:
            for call in step.response.calls:
                if call.call_id:
                    asked.setdefault(call.call_id, (step.span_id, call.name))
    return [
        (span, name, call_id)
        for call_id, (span, name) in asked.items()
        if call_id in read and call_id not in executed
    ]


def judge_run(
    run: TracedRun, contracts: ContractBook, dials: Dials, *, registry: Registry = REGISTRY
) -> JudgedRun:
    """Judge one run read from a trace, with the registry's checks under ``contracts`` and ``dials``.
    Never raises on what the trace holds."""
    replay = _Replay(run)
    replay.judge = judge = RunJudge(
        contracts, dials, clock_ms=replay.clock, registry=registry, agent=run.agent_name
    )
    replay.at(run.start_time_unix_nano)
    judge.begin()
    if dials.posture == "dev":
        judge.run_canaries()
    answered = False
    for step in run.steps:
        if isinstance(step, ModelStep):
            replay.model(step)
        elif isinstance(step, ToolStep):
            replay.tool(step)
        elif isinstance(step, ToolsetStep):
            replay.toolset(step)
        else:
            answered = True
            replay.answer(step)
    for span_id, tool_name, call_id in _unexecuted(run):
        replay.missing(
            "write",
            span_id,
            f"the execution of {tool_name!r} (call {call_id}) is missing from the trace, though the model read its result",
        )
    for missing in run.missing:
        if missing.what == SPANS_NOT_READ:
            for seam in SEAMS:
                replay.missing(seam, run.span_id, reason_of(missing))
    if not answered:
        reasons = [reason_of(m) for m in run.missing if "answer" in m.what]
        replay.missing(
            "claim", run.span_id, reasons[0] if reasons else "the run's final answer is not in the trace"
        )
    replay.collect("claim", run.span_id)
    return JudgedRun(
        run=run,
        findings=tuple(replay.findings),
        ledger=tuple(judge.report()),
        unreachable=tuple(replay.unreachable),
        dials=dials,
        work_existed=judge.work_existed,
        internal_errors=tuple(replay.errors),
        profile=judge.profiler.profile if judge.profiler is not None else None,
    )


def judge_runs(
    runs: Iterable[TracedRun], contracts: ContractBook, dials: Dials, *, registry: Registry = REGISTRY
) -> Iterator[JudgedRun]:
    """Each run judged as it comes (:func:`judge_run`): the runs are never held together."""
    for run in runs:
        yield judge_run(run, contracts, dials, registry=registry)
