"""The judge: one function per seam, each calling the checks registered there.

The judge is the one place that knows which checks a run armed and feeds
each seam's encounter to them. It never imports OpenTelemetry: the telemetry
layer turns what it returns into spans, events and metrics, and the same
judge can run over a recorded trace or in a canary.

Nothing here may raise into the host at run time. A check that raises is
noted ``unreachable`` for that encounter and kept in
:attr:`RunJudge.internal_errors`, for the caller to log and record.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from ..contracts import ToolContract
from ..contracts.meta import ServerVerdict, contract_meta
from ..findings import (
    CHECKED_FAIL,
    CHECKED_PASS,
    DISPOSITIONS,
    NOT_APPLICABLE,
    UNREACHABLE,
    Disposition,
    Encounter,
    ExternalGrounding,
    Finding,
    Seam,
    finding_identity,
)
from ..ledger import CheckerDeadError, CheckId, DispositionLedger, LedgerRow
from ..limits import MAX_FINDINGS_PER_RUN, MAX_IDENTITIES_PER_RUN, MAX_IDENTITY_CHARS
from ..loop import ModelResponse, RequestFrame
from ..redaction import plain_finding
from .book import ContractBook
from .dials import Dials
from .profile import RunProfiler
from .refusal import unjudged_refusal as unjudged_refusal  # re-exported: tests and integrations read it here
from .registry import REGISTRY, RegisteredCheck, Registry
from .state import AnswerSeen, ResponseSeen, RunState, ToolResultSeen, WireSeen


@dataclass(frozen=True, slots=True)
class InternalError:
    """One failure of our own code, caught before it reached the host."""

    where: str
    error: BaseException


@dataclass(slots=True)
class ChoiceVerdict:
    """What the choice seam concluded about one model response.

    ``call_ids[i]`` is the id of the call ``findings[i]`` is about.
    """

    findings: list[Finding] = field(default_factory=list)
    call_ids: list[str | None] = field(default_factory=list)
    excusals: list[ExternalGrounding] = field(default_factory=list)
    # (row, reason) of each check that could not look and could say why.
    unreachable: tuple[tuple[CheckId, str], ...] = ()


@dataclass(slots=True)
class ToolVerdict:
    """What the write seam concluded about one tool result.

    ``findings`` are the ones to emit (first sighting in this run);
    ``refusal`` replaces the result when set (column check, enforce mode).
    """

    findings: list[Finding] = field(default_factory=list)
    refusal: str | None = None
    # (row, reason) of each check that could not look and could say why (a declaration unread).
    # Tuples and None by default: nothing is made for the common call, which has neither.
    unreachable: tuple[tuple[CheckId, str], ...] = ()
    # Each row's disposition, for a judge asked to keep them (an MCP server's, for its stamp).
    rows: dict[CheckId, Disposition] | None = None
    # The MCP server whose verdict on this result was taken (its findings not filed again), and the
    # one whose verdict was not, its contract for the tool differing from this process's.
    judged_at_server: str | None = None
    server_differs: str | None = None


_Seen = TypeVar("_Seen")


def _now_ms() -> int:
    return int(time.time() * 1000)


_SEAM_ORDER: Final[tuple[Seam, ...]] = ("write", "compose", "choice", "claim", "wire")


class RunJudge:
    """One run's judge: its state, the checks it armed, and the ledger they fill.

    ``ledger`` is ``None`` for a tool called outside any run: it is still
    judged, it just has no row to count in. ``agent`` names the agent whose run it is (claims
    declared for one agent's answers read it).
    """

    def __init__(
        self,
        contracts: ContractBook,
        dials: Dials,
        *,
        with_ledger: bool = True,
        clock_ms: Callable[[], int] = _now_ms,
        registry: Registry = REGISTRY,
        agent: str | None = None,
    ) -> None:
        self.contracts = contracts
        self.dials = dials
        self.checks: tuple[RegisteredCheck, ...] = registry.entries
        self.ledger: DispositionLedger | None = (
            DispositionLedger(tuple(row for entry in self.checks for row in entry.rows))
            if with_ledger
            else None
        )
        # Arming is decided once, at the run's start, from the contracts and the dials.
        armed = [entry for entry in self.checks if entry.built and entry.armed(contracts, dials)]
        self.armed: dict[Seam, tuple[RegisteredCheck, ...]] = {
            seam: tuple(entry for entry in armed if entry.seam == seam) for seam in _SEAM_ORDER
        }
        self.state = RunState.begin(
            contracts, dials, grounding=any(entry.keeps_grounds for entry in armed), agent=agent
        )
        # The run's profile (names and counts, never values), gathered only when asked for.
        self.profiler: RunProfiler | None = RunProfiler() if dials.profiling else None
        self.findings: list[Finding] = []
        self.internal_errors: list[InternalError] = []
        self._armed_ids = {id(entry) for entry in armed}
        self._clock_ms = clock_ms
        # The telemetry layer turns these into pass evaluation events (setup(evaluation_events="all"))
        # and drains them after every seam call; off, nothing is kept.
        self.keep_passes = False
        # An MCP server's judge keeps each row's disposition of the checks a client can take its
        # word for (``judged_alone``), to say in the result what it found.
        self.keep_rows = False
        self.passes: list[CheckId] = []
        self._seen: set[str] = self.state.filed
        self._call_ids = itertools.count(1)
        self._begun = False
        # One run's tools may run on several threads (asyncio.to_thread, executors): every seam
        # holds this lock, so the run's memory and ledger see one encounter at a time. Re-entrant,
        # because an application's external-grounds provider may itself report to the run.
        self.lock = threading.RLock()
        # Toolsets declared switched off are suspended from the run's first request.
        for toolset in contracts.suspended_toolsets():
            self.suspend(toolset.name, toolset.tools)

    # ── lifecycle ──────────────────────────────────────────────────────
    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def work_existed(self) -> bool:
        return bool(self.state.worked)

    def note_work(self, seam: Seam = "claim") -> None:
        """Real work happened at ``seam`` (a signal no check writes: dev posture reads it)."""
        with self.lock:
            self.state.worked.add(seam)

    def begin(self) -> None:
        """Note every unarmed or unbuilt registered check ``not-applicable``, once."""
        with self.lock:
            if self._begun:
                return
            self._begun = True
            for entry in self.checks:
                if id(entry) not in self._armed_ids:
                    for row in entry.rows:
                        self._note(row, "not-applicable")

    def run_canaries(self) -> None:
        """Dev posture: one known-bad fixture per registered check, through its real pure function.

        Canary findings are never emitted and never counted as real; the ledger's
        ``synthetic`` column counts them, and a canary minted and not caught is
        what :meth:`DispositionLedger.assert_alive` reports.
        """
        if self.ledger is None:
            return
        for entry in self.checks:
            if entry.canary is None:
                continue
            for row in entry.rows:
                self.ledger.note_synthetic(row, "minted")
            try:
                encounter = entry.canary()
            except Exception as error:
                self.internal_errors.append(InternalError(f"canary of {entry.name}", error))
                continue
            caught = {f.kind for f in encounter.findings if f.synthetic}
            for row in entry.rows:
                if row.check in caught:
                    self.ledger.note_synthetic(row, "caught")

    def take_internal_errors(self) -> list[InternalError]:
        """Our own failures since the last call, handed over once each (the caller logs and records them).

        Under the lock: another thread's failure is never cleared unseen.
        """
        with self.lock:
            taken, self.internal_errors = self.internal_errors, []
        return taken

    def dead_check(self) -> CheckerDeadError | None:
        """Dev posture, on a run's success: the first registered check proven dead, if any.

        Work is read per seam from :attr:`RunState.worked` (no check writes it), so a
        check armed at a seam the run never reached had nothing to look at.
        """
        if self.ledger is None:
            return None
        try:
            self.ledger.assert_alive(worked=frozenset(self.state.worked))
        except CheckerDeadError as dead:
            return dead
        return None

    def report(self) -> list[LedgerRow]:
        with self.lock:
            return self.ledger.report() if self.ledger is not None else []

    def next_call_id(self, tool_name: str) -> str:
        # No lock: ``next`` of an ``itertools.count`` is one C call, atomic under the GIL, and
        # this runs on every tool call.
        return f"{tool_name}-{next(self._call_ids)}"

    # ── the seams ──────────────────────────────────────────────────────
    # Each seam is one encounter for every check armed there: it is noted exactly once per armed row,
    # whatever fails. A failure of our own outside a check (reading the frame, the run's memory) notes
    # the rows not yet noted ``unreachable``; at the write seam, a tool whose result enforce should
    # have judged is refused rather than handed over unjudged.

    def write(
        self,
        tool_name: str,
        call_id: str,
        result: object,
        *,
        arguments: Callable[[], Mapping[str, Any]] | Mapping[str, Any] | None = None,
        contract: ToolContract | None = None,
    ) -> ToolVerdict:
        """Judge one finished tool call (the write seam). Never raises.

        ``contract`` is the one the call is judged by when the caller knows it (a tool of one MCP
        server among several listing the name); otherwise the book's, by name.
        """
        noted: set[int] = set()
        try:
            with self.lock:
                return self._write(tool_name, call_id, result, arguments, noted, contract)
        except Exception as error:
            return self._write_failed(tool_name, error, noted)

    def _write(
        self,
        tool_name: str,
        call_id: str,
        result: object,
        arguments: Callable[[], Mapping[str, Any]] | Mapping[str, Any] | None,
        noted: set[int],
        contract: ToolContract | None = None,
    ) -> ToolVerdict:
        self.state.worked.add("write")
        verdict = ToolVerdict()
        if contract is None:
            contract = self.contracts.get(tool_name)
        seen = ToolResultSeen(tool_name, call_id, result, contract, arguments)
        unjudged = False
        for entry in self.armed["write"]:
            noted.add(id(entry))
            # Only an MCP result carries a server's verdict: the common result, a list, is never asked.
            remote = seen.server_verdict if entry.judged_alone and type(result) is not list else None
            if remote is None:
                encounter = self._run(entry, entry.write, seen)
            else:
                encounter = self._with_server(entry, seen, remote, verdict)
            if self.keep_rows and entry.judged_alone:
                kept = verdict.rows = verdict.rows if verdict.rows is not None else {}
                for row in entry.rows:
                    kept[row] = encounter.disposition_of(row.check) if encounter else UNREACHABLE
            if encounter is not None:
                if encounter.findings:
                    verdict.findings.extend(self._first_sightings(encounter.findings))
                if encounter.refusal is not None and verdict.refusal is None:
                    verdict.refusal = encounter.refusal
                if encounter.reason is not None:
                    verdict.unreachable += tuple((row, encounter.reason) for row in entry.rows)
            if (encounter is None or encounter.disposition == UNREACHABLE) and self._enforced(
                entry, tool_name, contract
            ):
                unjudged = True
        if unjudged and verdict.refusal is None:
            verdict.refusal = unjudged_refusal(tool_name)
        if self.state.grounds:  # the grounding memory is kept only when a grounding check is armed
            self._bookkeep("recording a tool result", lambda: self.state.after_tool_result(seen))
        if (seen.contract is not None and seen.contract.once_per_run) or self.contracts.any_claims():
            self._bookkeep("recording an execution", lambda: self.state.after_result(seen))
        if self.profiler is not None:
            self._bookkeep("profiling a tool result", self._profile_result, self.profiler, tool_name, seen)
        return verdict

    def _with_server(
        self, entry: RegisteredCheck, seen: ToolResultSeen, remote: ServerVerdict, verdict: ToolVerdict
    ) -> Encounter | None:
        """A result an MCP server judged, and said so in its ``_meta``.

        With the same contract for the tool, the server's word is taken: the findings it filed are
        not filed again (they live on its span), and each row counts the encounter as judged at the
        server (with the server's disposition where this process cannot read the result: an error
        result the server refused). The check still runs here, so enforce refuses here too. With a
        different contract the result is judged here alone, and ``verdict.server_differs`` says so.
        """
        served = [remote.rows.get(row.render()) for row in entry.rows]
        if any(disposition not in DISPOSITIONS for disposition in served):
            return self._run(entry, entry.write, seen)  # the server did not judge this check
        if remote.contract != (contract_meta(seen.contract) if seen.contract is not None else None):
            verdict.server_differs = remote.server
            return self._run(entry, entry.write, seen)
        encounter = self._run(entry, entry.write, seen, note=False)
        for row, theirs in zip(entry.rows, served, strict=True):
            ours = encounter.disposition_of(row.check) if encounter is not None else UNREACHABLE
            self._note(row, theirs if ours == NOT_APPLICABLE else ours)  # type: ignore[arg-type]
            if self.ledger is not None:
                self.ledger.note_judged_at_server(row)
        verdict.judged_at_server = remote.server
        if encounter is None or not encounter.findings:
            return encounter
        own = [f for f in encounter.findings if (f.kind, f.predicate) not in remote.filed]
        return dataclasses.replace(encounter, findings=own)

    @staticmethod
    def _profile_result(profiler: RunProfiler, tool_name: str, seen: ToolResultSeen) -> None:
        try:
            arguments: Mapping[str, Any] | None = seen.arguments()
        except Exception:  # not in the evidence (a trace that recorded the input as text): still a result
            arguments = None
        profiler.on_result(tool_name, seen.reading, seen.result, arguments)

    def _write_failed(self, tool_name: str, error: Exception, noted: set[int]) -> ToolVerdict:
        self.internal_errors.append(InternalError("judging a tool result", error))
        refuse = False
        for entry in self.armed["write"]:
            if id(entry) not in noted:
                for row in entry.rows:
                    self._note(row, UNREACHABLE)
            refuse = refuse or self._enforced(entry, tool_name)
        return ToolVerdict(refusal=unjudged_refusal(tool_name) if refuse else None)

    def enforces(self, tool_name: object, contract: ToolContract | None = None) -> bool:
        """Whether some armed write check must refuse this tool's result when it cannot judge it
        (by ``contract`` when the caller knows it, else the book's)."""
        try:
            return any(self._enforced(entry, tool_name, contract) for entry in self.armed["write"])
        except Exception:  # an odd tool name: it has no contract, so nothing is enforced on it
            return False

    def _enforced(
        self, entry: RegisteredCheck, tool_name: object, contract: ToolContract | None = None
    ) -> bool:
        if entry.enforced is None or not isinstance(tool_name, str):
            return False
        try:
            return entry.enforced(
                contract if contract is not None else self.contracts.get(tool_name), self.dials
            )
        except Exception:  # cannot tell: fail closed
            return True

    def compose(self, frame: RequestFrame) -> list[Finding]:
        """Judge one assembled request before it goes to the model (the compose seam). Never raises."""
        noted: set[int] = set()
        try:
            with self.lock:
                self.state.worked.add("compose")
                seen = self.state.open_request(frame)
                found: list[Finding] = []
                for entry in self.armed["compose"]:
                    noted.add(id(entry))
                    encounter = self._run(entry, entry.compose, seen)
                    if encounter is not None:
                        found.extend(self._first_sightings(encounter.findings))
                self._bookkeep("recording a request", self.state.close_request, seen)
                self._bookkeep("recording a request", self.state.after_request, seen)
                return found
        except Exception as error:
            self._seam_failed("compose", "reading a request", error, noted)
            return []

    def compose_unjudged(self, frame: RequestFrame, where: str, missing: BaseException) -> None:
        """A request whose compose checks cannot judge it (a recorded trace lacks the tools offered
        with it): the run's memory still takes it in, as :meth:`compose` would, so the seams after it
        see the conversation as it was; each armed compose check is noted ``unreachable``. Never raises.
        """
        with self.lock:
            self.state.worked.add("compose")
            try:
                seen = self.state.open_request(frame)
                self._bookkeep("recording a request", self.state.close_request, seen)
                self._bookkeep("recording a request", self.state.after_request, seen)
            except Exception as error:
                self.internal_errors.append(InternalError("reading a request", error))
            self._seam_failed("compose", where, missing, set())

    def choice(self, frame: RequestFrame | None, response: ModelResponse) -> ChoiceVerdict:
        """Judge the calls one model response makes, against the request it answered. Never raises."""
        noted: set[int] = set()
        verdict = ChoiceVerdict()
        try:
            with self.lock:
                self.state.worked.add("choice")
                seen = ResponseSeen(frame, response, self.state.index)
                for entry in self.armed["choice"]:
                    noted.add(id(entry))
                    encounter = self._run(entry, entry.choice, seen)
                    if encounter is None:
                        continue
                    call_of = {id(f): c for f, c in zip(encounter.findings, encounter.call_ids, strict=False)}
                    fresh = self._first_sightings(encounter.findings)
                    verdict.findings.extend(fresh)
                    verdict.call_ids.extend(call_of.get(id(f)) for f in fresh)
                    verdict.excusals.extend(encounter.excusals)
                    if encounter.reason is not None:
                        verdict.unreachable += tuple((row, encounter.reason) for row in entry.rows)
                self._bookkeep("recording a response", self.state.after_response, seen)
                if self.profiler is not None:
                    self._bookkeep("profiling a response", self.profiler.on_response, frame, response)
                return verdict
        except Exception as error:
            self._seam_failed("choice", "reading a response", error, noted)
            return verdict

    def claim(self, text: str | None, output: object = None) -> list[Finding]:
        """Judge the run's final answer (the claim seam). Never raises."""
        return self._simple("claim", AnswerSeen(text, output))

    def wire(
        self, frame: RequestFrame | None, tool_names: frozenset[str] | None, *, source: str | None = None
    ) -> list[Finding]:
        """Judge what crossed the wire to the provider against the request composed (the wire seam).

        ``tool_names`` is ``None`` when no wire reader saw or could read the body. Never raises.
        """
        if not self.armed["wire"]:  # what _simple does with no check armed there, without its reading
            with self.lock:
                self.state.worked.add("wire")
            return []
        try:
            composed = tuple(dict.fromkeys(tool.name for tool in frame.tools)) if frame is not None else ()
            seen = WireSeen(composed, tool_names, source or "the serialized request body")
        except Exception as error:
            self.note_unreachable("wire", "reading the composed request", error)
            return []
        return self._simple("wire", seen)

    def note_unreachable(self, seam: Seam, where: str, error: BaseException) -> None:
        """The caller failed before it could hand this seam its encounter: count it ``unreachable``.

        Integrations call this when reading the host's request, response or result raised, so
        the encounter is still counted (and the failure kept), never silently dropped.
        """
        with self.lock:
            self.state.worked.add(seam)
            self._seam_failed(seam, where, error, set())

    def note_unjudged(self, seam: Seam) -> None:
        """An encounter the caller never handed over (a tool call closed without its result): every
        check armed at ``seam`` counts it ``unreachable``. Our own code did not fail: nothing is kept."""
        with self.lock:
            self.state.worked.add(seam)
            for entry in self.armed[seam]:
                for row in entry.rows:
                    self._note(row, UNREACHABLE)

    def _simple(self, seam: Seam, seen: object) -> list[Finding]:
        noted: set[int] = set()
        try:
            with self.lock:
                self.state.worked.add(seam)
                found: list[Finding] = []
                for entry in self.armed[seam]:
                    noted.add(id(entry))
                    encounter = self._run(entry, getattr(entry, seam), seen)
                    if encounter is not None:
                        found.extend(self._first_sightings(encounter.findings))
                return found
        except Exception as error:
            self._seam_failed(seam, f"judging at the {seam} seam", error, noted)
            return []

    def _seam_failed(self, seam: Seam, where: str, error: BaseException, noted: set[int]) -> None:
        self.internal_errors.append(InternalError(where, error))
        for entry in self.armed[seam]:
            if id(entry) not in noted:
                for row in entry.rows:
                    self._note(row, UNREACHABLE)

    # ── what the application tells the run ───────────────────────────
    def suspend(self, group: str, tools: tuple[str, ...]) -> None:
        """A group of tools is switched off until :meth:`resume` (compose invariant)."""
        with self.lock:
            self._arm_on("suspend")
            self._bookkeep("suspending a toolset", lambda: self.state.suspend(group, tools))

    def _arm_on(self, event: str) -> None:
        """Arm the built checks armed by what the application just told the run."""
        for entry in self.checks:
            if entry.arms_on == event and entry.built and id(entry) not in self._armed_ids:
                self._armed_ids.add(id(entry))
                self.armed[entry.seam] = (*self.armed[entry.seam], entry)

    def arm_declared(self) -> None:
        """Arm the checks the book arms now and did not at the run's start: declarations that arrived
        during the run (an MCP server listed at the first call of its tools, its earlier listing
        having failed). The not-applicable the run's start noted for them is withdrawn: they are
        armed in this run after all. Never raises."""
        try:
            with self.lock:
                late = [
                    entry
                    for entry in self.checks
                    if entry.built
                    and entry.arms_on is None
                    and id(entry) not in self._armed_ids
                    and entry.armed(self.contracts, self.dials)
                ]
                for entry in late:
                    self._armed_ids.add(id(entry))
                    self.armed[entry.seam] = (*self.armed[entry.seam], entry)
                    if self._begun and self.ledger is not None:
                        for row in entry.rows:
                            self.ledger.withdraw(row, NOT_APPLICABLE)
                if any(entry.keeps_grounds for entry in late):
                    self.state.regrounded(self.contracts)
        except Exception as error:
            self.internal_errors.append(InternalError("arming checks declared late", error))

    def resume(self, group: str) -> None:
        with self.lock:
            self._bookkeep("resuming a toolset", lambda: self.state.resume(group))

    # The names the telemetry layer has always called.
    judge_tool_result = write
    judge_request = compose
    judge_response = choice

    # ── shared machinery ───────────────────────────────────────────────
    def _run(
        self,
        entry: RegisteredCheck,
        check: Callable[[RunState, _Seen], Encounter] | None,
        seen: _Seen,
        *,
        note: bool = True,
    ) -> Encounter | None:
        """The check's encounter, noted in the ledger (unless ``note`` is false: the caller notes it)."""
        if check is None:
            return None
        try:
            encounter = check(self.state, seen)
        except Exception as error:  # a broken check must never reach the host
            self.internal_errors.append(InternalError(entry.name, error))
            if note:
                for row in entry.rows:
                    self._note(row, UNREACHABLE)
            return None
        if not note:
            return encounter
        if encounter.dispositions and len(entry.rows) == 1:
            for disposition in encounter.dispositions:
                self._note(entry.rows[0], disposition)
            return encounter
        ledger = self.ledger
        if self.keep_passes or ledger is None:
            for row in entry.rows:
                self._note(row, encounter.disposition_of(row.check))
            return encounter
        # What :meth:`_note` does with no passes kept, without a call per row: every call counts here.
        for row in entry.rows:
            disposition = encounter.disposition_of(row.check)
            ledger.note(row, disposition, self._clock_ms() if disposition == CHECKED_FAIL else None)
        return encounter

    def _bookkeep(self, where: str, step: Callable[..., Any], *args: Any) -> Any:
        # ``args`` rather than a closure from the seams that run on every model call.
        try:
            return step(*args)
        except Exception as error:
            self.internal_errors.append(InternalError(where, error))
            return None

    def take_passes(self) -> list[CheckId]:
        """The ``checked-pass`` encounters since the last call (kept only when ``keep_passes``)."""
        passes, self.passes = self.passes, []
        return passes

    def _note(self, check_id: CheckId, disposition: Disposition) -> None:
        if self.keep_passes and disposition == CHECKED_PASS and len(self.passes) < MAX_FINDINGS_PER_RUN:
            self.passes.append(check_id)
        if self.ledger is None:
            return
        at = self._clock_ms() if disposition == CHECKED_FAIL else None
        self.ledger.note(check_id, disposition, at)

    def _first_sightings(self, findings: Iterable[Finding]) -> list[Finding]:
        """Findings not yet filed in this run: one event per defect per run."""
        fresh: list[Finding] = []
        for finding in findings:
            key = finding_identity(finding, with_epoch=False)[:MAX_IDENTITY_CHARS]
            if key in self._seen:
                continue
            if len(self._seen) < MAX_IDENTITIES_PER_RUN:
                self._seen.add(key)
            if len(self.findings) < MAX_FINDINGS_PER_RUN:
                # Kept as read in process, its quoted values let go: a kept finding must not hold a
                # tool's result alive. The one handed back is emitted now, and quotes them whole.
                self.findings.append(plain_finding(finding))
            fresh.append(finding)
        return fresh
