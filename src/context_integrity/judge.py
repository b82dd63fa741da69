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
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

from .checks.column_types import ColumnTypeEncounter, check_column_types
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
from .limits import MAX_FINDINGS_PER_RUN

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


@dataclass(frozen=True, slots=True)
class InternalError:
    """One failure of our own code, caught before it reached the host."""

    where: str
    error: BaseException


@dataclass(slots=True)
class ToolVerdict:
    """What the write seam concluded about one tool result.

    ``findings`` are the ones to emit (first sighting in this run);
    ``refusal`` replaces the result when set (column check, enforce mode).
    """

    findings: list[Finding] = field(default_factory=list)
    refusal: str | None = None
    judged: bool = False


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
                verdict.judged = True
                self._note_kinds(encounter, (COLUMN_TYPE_MISMATCH, MISSING_COLUMN))
                verdict.findings.extend(self._first_sightings(encounter.findings))
                if isinstance(encounter, ColumnTypeEncounter) and encounter.refusal is not None:
                    verdict.refusal = encounter.refusal
        return verdict

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
            key = finding_identity(finding, with_epoch=False)
            if key in self._seen:
                continue
            if len(self._seen) < MAX_FINDINGS_PER_RUN:
                self._seen.add(key)
                self.findings.append(finding)
            fresh.append(finding)
        return fresh
