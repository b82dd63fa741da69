"""Per-run state and orchestration: feeds each seam's checks, dedupes, keeps the ledger.

The judge is the one place that knows which checks are armed for a run and
which encounter each seam produces. It never imports OpenTelemetry: the
telemetry layer turns what it returns into spans, events and metrics, and the
same judge can run over a recorded trace or in a canary.

Nothing here may raise into the host at run time. A check that raises is
logged by the caller (through :attr:`RunJudge.internal_errors`) and noted
``unreachable`` for that encounter.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar, get_args

from .checks.arguments import declared_enum_values
from .checks.column_types import ColumnTypeEncounter, check_column_types
from .checks.dangling_reference import check_dangling_references
from .checks.empty_lookup import check_empty_lookup
from .checks.unsupported_argument import ArgumentEncounter, ArmedCall, check_unsupported_arguments
from .contracts import ToolContract
from .findings import (
    CHECKED_FAIL,
    NOT_APPLICABLE,
    UNREACHABLE,
    Encounter,
    Finding,
    finding_identity,
)
from .ledger import (
    COLUMN_TYPE_MISMATCH,
    COMPOSE_INVARIANT,
    DANGLING_REFERENCE,
    EMPTY_LOOKUP,
    MISSING_COLUMN,
    PRIOR_TURN_EVIDENCE,
    UNSUPPORTED_ARGUMENT,
    UNSUPPORTED_CLAIM,
    WIRE_INVARIANT,
    CheckId,
    DispositionLedger,
    LedgerRow,
    Posture,
)
from .limits import (
    MAX_FINDINGS_PER_RUN,
    MAX_IDENTITIES_PER_RUN,
    MAX_IDENTITY_CHARS,
    MAX_SERVED_RESULTS_PER_RUN,
    MAX_SERVED_TEXT_CHARS,
)
from .protocol import (
    ExternalGrounding,
    ModelResponse,
    RequestFrame,
    content_text,
    frame_ground,
    message_text,
    tool_names_present,
)
from .text import bounded_json

ColumnDial = Literal["off", "warn", "enforce"]
COLUMN_DIALS: Final[tuple[ColumnDial, ...]] = get_args(ColumnDial)
POSTURES: Final[tuple[Posture, ...]] = get_args(Posture)

ExternalGroundsProvider = Callable[[], object]


class SetupError(ValueError):
    """A setup option has a value the library cannot honour. Raised only by ``setup()``."""


@dataclass(frozen=True, slots=True)
class Dials:
    """The operator's switches. Every one defaults to the byte-identical choice."""

    check_column_types: ColumnDial = "off"
    notice_empty_lookups: bool = False
    external_grounds: ExternalGroundsProvider | None = None
    posture: Posture = "observe"

    @classmethod
    def validated(
        cls,
        *,
        check_column_types: object = "off",
        notice_empty_lookups: object = False,
        external_grounds: object = None,
        posture: object = "observe",
    ) -> Dials:
        """Build dials, refusing any value outside its vocabulary with a message that lists it."""
        if check_column_types not in COLUMN_DIALS or not isinstance(check_column_types, str):
            raise SetupError(
                f"check_column_types must be 'off', 'warn' or 'enforce' (got {check_column_types!r}). "
                "'off' judges nothing; 'warn' files findings and hands the rows over unchanged; "
                "'enforce' also replaces a mistyped result with a refusal sentence."
            )
        if not isinstance(notice_empty_lookups, bool):
            raise SetupError(
                f"notice_empty_lookups must be a boolean (got {notice_empty_lookups!r}). "
                "Pass True to notice empty results for ids a declared producer served."
            )
        if external_grounds is not None and not callable(external_grounds):
            raise SetupError(
                f"external_grounds must be a function returning (value, source) entries "
                f"(got {type(external_grounds).__name__})."
            )
        if posture not in POSTURES or not isinstance(posture, str):
            raise SetupError(f"posture must be 'observe' or 'dev' (got {posture!r}).")
        return cls(
            check_column_types=check_column_types,
            notice_empty_lookups=notice_empty_lookups,
            external_grounds=external_grounds,
            posture=posture,
        )


class ContractBook:
    """Every tool contract this process declared, by tool name.

    Decorated tools and tools declared by name (framework or MCP tools the
    application did not write) land here alike; a later declaration of the
    same name replaces the earlier one.
    """

    def __init__(self) -> None:
        self._contracts: dict[str, ToolContract] = {}

    def declare(self, contract: ToolContract) -> None:
        self._contracts[contract.name] = contract

    def get(self, name: str) -> ToolContract | None:
        return self._contracts.get(name)

    def forget(self, name: str) -> None:
        self._contracts.pop(name, None)

    def names(self) -> frozenset[str]:
        return frozenset(self._contracts)

    def __iter__(self) -> Iterator[ToolContract]:
        return iter(list(self._contracts.values()))

    def __len__(self) -> int:
        return len(self._contracts)

    def any_columns(self) -> bool:
        return any(c.result_columns for c in self._contracts.values())

    def any_grounds(self) -> bool:
        return any(c.arguments_from for c in self._contracts.values())

    def grounds(self) -> dict[str, tuple[str, ...]]:
        """Tool name -> the tools its arguments come from, for every tool that declared them."""
        return {c.name: c.arguments_from for c in self._contracts.values() if c.arguments_from}


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


@dataclass(slots=True)
class ToolVerdict:
    """What the write seam concluded about one tool result.

    ``findings`` are the ones to emit (first sighting in this run);
    ``refusal`` replaces the result when set (column check, enforce mode).
    """

    findings: list[Finding] = field(default_factory=list)
    refusal: str | None = None


_T = TypeVar("_T")


def _served_text(value: object) -> str:
    """A tool result as the text a producer served: what empty-lookup searches for ids."""
    if isinstance(value, str):
        return value[:MAX_SERVED_TEXT_CHARS]
    if isinstance(value, (list, tuple, dict)):
        try:
            return bounded_json(value, MAX_SERVED_TEXT_CHARS)[:MAX_SERVED_TEXT_CHARS]
        except (TypeError, ValueError, RecursionError):
            pass
    return content_text(value)[:MAX_SERVED_TEXT_CHARS]


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class Arming:
    """Which optional checks a run has armed, decided once at its start."""

    column_types: bool
    grounding: bool
    empty_lookup: bool

    @classmethod
    def of(cls, contracts: ContractBook, dials: Dials) -> Arming:
        grounding = contracts.any_grounds()
        return cls(
            column_types=dials.check_column_types != "off" and contracts.any_columns(),
            grounding=grounding,
            empty_lookup=grounding and dials.notice_empty_lookups,
        )


# Checks no module files yet: a row each, noted not-applicable once per run.
_NOT_BUILT: Final[tuple[CheckId, ...]] = (
    WIRE_INVARIANT,
    COMPOSE_INVARIANT,
    UNSUPPORTED_CLAIM,
    PRIOR_TURN_EVIDENCE,
)


class RunJudge:
    """Everything one run's checks need to remember, and the ledger they fill.

    ``ledger`` is ``None`` for a tool called outside any run: it is still
    judged, it just has no row to count in.
    """

    def __init__(
        self,
        contracts: ContractBook,
        dials: Dials,
        *,
        with_ledger: bool = True,
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        self.contracts = contracts
        self.dials = dials
        self.ledger: DispositionLedger | None = DispositionLedger() if with_ledger else None
        self.arming = Arming.of(contracts, dials)
        self.epoch = 0
        self.work_existed = False
        self.findings: list[Finding] = []
        self.internal_errors: list[InternalError] = []
        self._clock_ms = clock_ms
        self._seen: set[str] = set()
        self._call_ids = itertools.count(1)
        self._begun = False
        # Grounding state, kept only when a tool declared arguments_from.
        self._grounds = contracts.grounds() if self.arming.grounding else {}
        self._producers = frozenset(g for grounds in self._grounds.values() for g in grounds)
        self._served: set[str] = set()
        # Every tool whose served results some request of this run lacked: the union of all
        # evictions so far, never shrunk. A re-fetch does not remove a name from it; the check's
        # re-fetch fence (the ground is present again) is what keeps that request silent, and it
        # is still a real comparison (checked-pass), not "nothing to be about".
        self._evicted: set[str] = set()
        self._produced: deque[tuple[str, str, str]] = deque()
        self._produced_keys: set[tuple[str, str]] = set()

    # ── lifecycle ──────────────────────────────────────────────────────
    def begin(self) -> None:
        """Note every unarmed (or unbuilt) registered check ``not-applicable``, once."""
        if self._begun:
            return
        self._begun = True
        for check_id in _NOT_BUILT:
            self._note(check_id, NOT_APPLICABLE)
        if not self.arming.grounding:
            self._note(DANGLING_REFERENCE, NOT_APPLICABLE)
            self._note(UNSUPPORTED_ARGUMENT, NOT_APPLICABLE)
        if not self.arming.empty_lookup:
            self._note(EMPTY_LOOKUP, NOT_APPLICABLE)
        if not self.arming.column_types:
            self._note(COLUMN_TYPE_MISMATCH, NOT_APPLICABLE)
            self._note(MISSING_COLUMN, NOT_APPLICABLE)

    def report(self) -> list[LedgerRow]:
        return self.ledger.report() if self.ledger is not None else []

    def next_call_id(self, tool_name: str) -> str:
        return f"{tool_name}-{next(self._call_ids)}"

    def note_work(self) -> None:
        """The run did work no check was given (a final answer): the summary must say work existed."""
        self.work_existed = True

    # ── the write seam ─────────────────────────────────────────────────
    def judge_tool_result(
        self,
        tool_name: str,
        call_id: str,
        result: object,
        *,
        arguments: Callable[[], Mapping[str, Any]] | Mapping[str, Any] | None = None,
    ) -> ToolVerdict:
        """Judge one finished tool call. Never raises."""
        self.work_existed = True
        verdict = ToolVerdict()
        contract = self.contracts.get(tool_name)
        if contract is None:
            return verdict
        mode = self.dials.check_column_types
        if contract.result_columns and mode != "off":
            encounter = self._run_check(
                "column types",
                (COLUMN_TYPE_MISMATCH, MISSING_COLUMN),
                lambda: check_column_types(
                    tool_name=tool_name,
                    columns=contract.result_columns,
                    result=result,
                    call_id=call_id,
                    mode=mode,
                    epoch=self.epoch,
                ),
            )
            if encounter is not None:
                self._note_kinds(encounter, (COLUMN_TYPE_MISMATCH, MISSING_COLUMN))
                verdict.findings.extend(self._first_sightings(encounter.findings))
                if isinstance(encounter, ColumnTypeEncounter) and encounter.refusal is not None:
                    verdict.refusal = encounter.refusal
        if self.arming.empty_lookup and contract.arguments_from:
            grounds = contract.arguments_from
            produced = [(name, text) for name, _, text in self._produced]
            lookup = self._run_check(
                "empty lookup",
                (EMPTY_LOOKUP,),
                lambda: check_empty_lookup(
                    tool_name=tool_name,
                    call_id=call_id,
                    arguments=arguments() if callable(arguments) else (arguments or {}),
                    arguments_from=grounds,
                    result=result,
                    produced=produced,
                    epoch=self.epoch,
                ),
            )
            if lookup is not None:
                self._note(EMPTY_LOOKUP, lookup.disposition)
                verdict.findings.extend(self._first_sightings(lookup.findings))
        if self._grounds:
            self._served.add(tool_name)
            if tool_name in self._producers:
                self._remember_produced(tool_name, call_id, result)
        return verdict

    # ── the compose seam ───────────────────────────────────────────────
    def judge_request(self, frame: RequestFrame) -> list[Finding]:
        """Judge one assembled request before it goes to the model. Never raises."""
        self.work_existed = True
        self.epoch += 1
        if not self._grounds:
            return []
        present = self._guard(frozenset[str](), lambda: tool_names_present(frame))
        self._remember_frame_results(frame)
        self._evicted |= self._served - present
        evicted = frozenset(self._evicted)
        offered = [tool.name for tool in frame.tools]
        encounter = self._run_check(
            "dangling reference",
            (DANGLING_REFERENCE,),
            lambda: check_dangling_references(
                offered=offered, grounds=self._grounds, evicted=evicted, present=present, epoch=self.epoch
            ),
        )
        self._served |= present
        if encounter is None:
            return []
        self._note(DANGLING_REFERENCE, encounter.disposition)
        return self._first_sightings(encounter.findings)

    # ── the choice seam ────────────────────────────────────────────────
    def judge_response(self, frame: RequestFrame | None, response: ModelResponse) -> ChoiceVerdict:
        """Judge the calls one model response makes, against the request it answered. Never raises."""
        self.work_existed = True
        verdict = ChoiceVerdict()
        if self.arming.column_types and not any(
            (c := self.contracts.get(call.name)) is not None and c.result_columns for call in response.calls
        ):
            self._note(COLUMN_TYPE_MISMATCH, NOT_APPLICABLE)
            self._note(MISSING_COLUMN, NOT_APPLICABLE)
        if not self._grounds:
            return verdict
        armed = [call for call in response.calls if call.name in self._grounds]
        if self.arming.empty_lookup and not armed:
            self._note(EMPTY_LOOKUP, NOT_APPLICABLE)
        if not armed:
            self._note(UNSUPPORTED_ARGUMENT, NOT_APPLICABLE)
            return verdict
        offered_schemas = {t.name: t.input_schema for t in frame.tools} if frame is not None else {}
        calls = [
            ArmedCall(
                tool_name=call.name,
                call_id=call.call_id,
                arguments=call.arguments,
                arguments_from=self._grounds[call.name],
                declared_enums=self._enums(call.name, offered_schemas.get(call.name)),
            )
            for call in armed
        ]
        ground = frame_ground(frame) if frame is not None else None
        encounter = self._run_check(
            "unsupported argument",
            (UNSUPPORTED_ARGUMENT,),
            lambda: check_unsupported_arguments(
                calls=calls,
                grounded=ground.grounded if ground is not None else (),
                assistant=ground.assistant if ground is not None else (),
                external=self.dials.external_grounds,
                epoch=self.epoch,
            ),
        )
        if encounter is None:
            return verdict
        self._note(UNSUPPORTED_ARGUMENT, encounter.disposition)
        verdict.findings = self._first_sightings(encounter.findings)
        call_of: dict[int, str] = {}
        if isinstance(encounter, ArgumentEncounter):
            verdict.excusals = list(encounter.excusals)
            call_of = {id(f): c for f, c in zip(encounter.findings, encounter.call_ids, strict=False)}
        verdict.call_ids = [call_of.get(id(f)) for f in verdict.findings]
        return verdict

    # ── grounding bookkeeping ──────────────────────────────────────────
    def _enums(self, tool_name: str, offered_schema: object) -> frozenset[str]:
        schema = offered_schema
        if schema is None:
            contract = self.contracts.get(tool_name)
            schema = contract.input_schema if contract is not None else None
        return declared_enum_values(schema)

    def _remember_produced(self, tool_name: str, key: str, value: object) -> None:
        if (tool_name, key) in self._produced_keys:
            return
        text = self._guard("", lambda: _served_text(value))
        if not text:
            return
        if len(self._produced) >= MAX_SERVED_RESULTS_PER_RUN:
            oldest_name, oldest_key, _ = self._produced.popleft()
            self._produced_keys.discard((oldest_name, oldest_key))
        self._produced.append((tool_name, key, text))
        self._produced_keys.add((tool_name, key))

    def _remember_frame_results(self, frame: RequestFrame) -> None:
        """Producer results that reach the model through frames count as served, once each."""
        if not self._producers:
            return
        names_by_call = {call.call_id: call.name for message in frame.messages for call in message.tool_calls}
        for message in frame.messages:
            if message.role != "tool":
                continue
            name = message.tool_name or names_by_call.get(message.tool_call_id or "")
            if name in self._producers and name is not None:
                key = message.tool_call_id or f"frame:{hash(message_text(message))}"
                self._remember_produced(name, key, message.content)

    def _guard(self, fallback: _T, compute: Callable[[], _T]) -> _T:
        try:
            return compute()
        except Exception as error:
            self.internal_errors.append(InternalError("reading a request", error))
            return fallback

    # ── shared machinery ───────────────────────────────────────────────
    def _run_check(
        self, where: str, rows: tuple[CheckId, ...], check: Callable[[], Encounter]
    ) -> Encounter | None:
        try:
            return check()
        except Exception as error:  # a broken check must never reach the host
            self.internal_errors.append(InternalError(where, error))
            for row in rows:
                self._note(row, UNREACHABLE)
            return None

    def _note(self, check_id: CheckId, disposition: str) -> None:
        if self.ledger is None:
            return
        at = self._clock_ms() if disposition == CHECKED_FAIL else None
        self.ledger.note(check_id, disposition, at)  # type: ignore[arg-type]

    def _note_kinds(self, encounter: Encounter, rows: tuple[CheckId, ...]) -> None:
        for row in rows:
            self._note(row, encounter.disposition_of(row.check))

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
                self.findings.append(finding)
            fresh.append(finding)
        return fresh
