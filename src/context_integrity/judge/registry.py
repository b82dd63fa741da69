"""THE list of checks. Everything else — the ledger's rows, arming, "not built yet", the canary
runner, the README's ledger table — reads it.

One :class:`RegisteredCheck` per check: the ledger rows it fills, how it is
armed (from the declared contracts and the dials, decided once per run), the
one function it runs at its seam, and its canary. A check with no seam
function is registered but not built: its rows are noted ``not-applicable``
once per run, so "nothing looked" never reads as "nothing was wrong".

Adding a check is its module under ``checks/`` plus one entry here (its seam
function is the few lines that hand the pure check what the run state holds).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

from ..checks.column_types import ColumnMode, column_types_canary, column_types_of
from ..checks.dangling_reference import dangling_reference_canary, dangling_references_of
from ..checks.empty_lookup import empty_lookup_canary, empty_lookup_of
from ..checks.unsupported_argument import ArmedCall, unsupported_argument_canary, unsupported_arguments_of
from ..findings import NOT_APPLICABLE, Encounter, Kind, Seam
from ..ledger import CheckId
from .book import ContractBook
from .dials import Dials
from .state import AnswerSeen, RequestSeen, ResponseSeen, RunState, ToolResultSeen, WireSeen

Arming = Callable[[ContractBook, Dials], bool]
WriteJudge = Callable[[RunState, ToolResultSeen], Encounter]
ComposeJudge = Callable[[RunState, RequestSeen], Encounter]
ChoiceJudge = Callable[[RunState, ResponseSeen], Encounter]
ClaimJudge = Callable[[RunState, AnswerSeen], Encounter]
WireJudge = Callable[[RunState, WireSeen], Encounter]

OUT_OF_SCOPE: Final = Encounter(findings=[], disposition=NOT_APPLICABLE)


def _never(contracts: ContractBook, dials: Dials) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class RegisteredCheck:
    """One check: its rows, its arming, its one seam function, its canary.

    Exactly one of ``write`` / ``compose`` / ``choice`` / ``claim`` / ``wire`` is
    set for a built check, at the seam of its rows; none for a check not built.
    ``canary`` returns the encounter of a known-bad fixture run through the
    check's real pure function; each row's kind must appear among its findings.
    """

    name: str
    rows: tuple[CheckId, ...]
    # What arms it, in the operator's words: the README's ledger table quotes this.
    armed_by: str = "not built yet"
    armed: Arming = _never
    write: WriteJudge | None = None
    compose: ComposeJudge | None = None
    choice: ChoiceJudge | None = None
    claim: ClaimJudge | None = None
    wire: WireJudge | None = None
    canary: Callable[[], Encounter] | None = None
    # Arming it makes the run keep the grounding memory (what was served, evicted, produced).
    keeps_grounds: bool = False
    # The version of the check's decision rule, carried by every finding it files (evaluator
    # provenance), so results compare across upgrades. Bump it whenever the rule decides differently.
    rule_version: str = "1"

    def __post_init__(self) -> None:
        seams = {row.seam for row in self.rows}
        if len(seams) != 1:
            raise ValueError(f"check {self.name!r}: its rows must share one seam (got {sorted(seams)})")
        set_at = [seam for seam in ("write", "compose", "choice", "claim", "wire") if getattr(self, seam)]
        if set_at and set_at != [self.seam]:
            raise ValueError(f"check {self.name!r}: its seam function must be {self.seam!r} (got {set_at})")

    @property
    def seam(self) -> Seam:
        return self.rows[0].seam

    @property
    def built(self) -> bool:
        return getattr(self, self.seam) is not None


# ── The seam functions: what each pure check is handed from the run ─────


def _column_types_at_write(state: RunState, seen: ToolResultSeen) -> Encounter:
    columns = seen.contract.result_columns if seen.contract is not None else None
    if not columns:
        return OUT_OF_SCOPE
    mode: ColumnMode = "enforce" if state.dials.check_column_types == "enforce" else "warn"
    return column_types_of(
        seen.reading, columns, tool_name=seen.tool_name, call_id=seen.call_id, mode=mode, epoch=state.epoch
    )


def _empty_lookup_at_write(state: RunState, seen: ToolResultSeen) -> Encounter:
    grounds = seen.contract.arguments_from if seen.contract is not None else None
    if not grounds:
        return OUT_OF_SCOPE
    return empty_lookup_of(
        seen.reading,
        tool_name=seen.tool_name,
        call_id=seen.call_id,
        arguments=seen.arguments(),
        arguments_from=grounds,
        produced=state.produced_texts(),
        result=seen.result,
        epoch=state.epoch,
    )


def _dangling_at_compose(state: RunState, seen: RequestSeen) -> Encounter:
    return dangling_references_of(
        offered=seen.offered,
        grounds=state.grounds,
        evicted=frozenset(state.evicted),
        present=seen.present,
        epoch=state.epoch,
    )


def _unsupported_at_choice(state: RunState, seen: ResponseSeen) -> Encounter:
    armed = [call for call in seen.response.calls if call.name in state.grounds]
    if not armed:
        return OUT_OF_SCOPE
    calls = [
        ArmedCall(
            tool_name=call.name,
            call_id=call.call_id,
            arguments=call.arguments,
            arguments_from=state.grounds[call.name],
            declared_enums=state.enum_values(call.name, seen.offered_schema(call.name)),
        )
        for call in armed
    ]
    ground = seen.ground()
    return unsupported_arguments_of(
        calls=calls,
        grounded=ground.grounded,
        assistant=ground.assistant,
        external=state.dials.external_grounds,
        epoch=state.epoch,
    )


def _grounding(contracts: ContractBook, dials: Dials) -> bool:
    return contracts.any_grounds()


def _empty_lookups(contracts: ContractBook, dials: Dials) -> bool:
    return dials.notice_empty_lookups and contracts.any_grounds()


def _column_types(contracts: ContractBook, dials: Dials) -> bool:
    return dials.check_column_types != "off" and contracts.any_columns()


# ── The table ───────────────────────────────────────────────────────────

# Registration order is report order. duplicate-execution is a named kind with no check yet: it is
# deliberately NOT registered, so no row ever implies someone looked for it.
BUILT_IN: Final[tuple[RegisteredCheck, ...]] = (
    RegisteredCheck("wire invariant", rows=(CheckId("invariant-violation", "wire"),)),
    RegisteredCheck("compose invariant", rows=(CheckId("invariant-violation", "compose"),)),
    RegisteredCheck(
        "dangling reference",
        rows=(CheckId("dangling-reference", "compose"),),
        armed_by="any declared tool with `arguments_from`",
        armed=_grounding,
        compose=_dangling_at_compose,
        keeps_grounds=True,
        canary=dangling_reference_canary,
    ),
    RegisteredCheck(
        "unsupported argument",
        rows=(CheckId("unsupported-argument", "choice"),),
        armed_by="any declared tool with `arguments_from`",
        armed=_grounding,
        choice=_unsupported_at_choice,
        keeps_grounds=True,
        canary=unsupported_argument_canary,
    ),
    RegisteredCheck("unsupported claim", rows=(CheckId("unsupported-claim", "claim"),)),
    RegisteredCheck(
        "empty lookup",
        rows=(CheckId("empty-lookup", "write"),),
        armed_by="`arguments_from` and `setup(notice_empty_lookups=True)`",
        armed=_empty_lookups,
        write=_empty_lookup_at_write,
        keeps_grounds=True,
        canary=empty_lookup_canary,
    ),
    RegisteredCheck(
        "column types",
        rows=(CheckId("column-type-mismatch", "write"), CheckId("missing-column", "write")),
        armed_by="`result_columns` and `setup(check_column_types=...)` set to `'warn'` or `'enforce'`",
        armed=_column_types,
        write=_column_types_at_write,
        canary=column_types_canary,
    ),
    RegisteredCheck("prior-turn evidence", rows=(CheckId("prior-turn-evidence", "claim"),)),
)

# The built-in rows in ledger order: the README table, the telemetry and the recording reader read this.
REGISTERED_CHECKS: Final[tuple[CheckId, ...]] = tuple(row for entry in BUILT_IN for row in entry.rows)


class Registry:
    """The checks every new run registers. A run takes a snapshot when it begins."""

    def __init__(self, entries: tuple[RegisteredCheck, ...]) -> None:
        self._entries = entries

    @property
    def entries(self) -> tuple[RegisteredCheck, ...]:
        return self._entries

    def __iter__(self) -> Iterator[RegisteredCheck]:
        return iter(self._entries)

    def rows(self) -> tuple[CheckId, ...]:
        return tuple(row for entry in self._entries for row in entry.rows)

    def register(self, entry: RegisteredCheck) -> None:
        """Add a check (runs that begin afterwards register its rows); a row registered twice is refused."""
        taken = set(self.rows())
        clash = [row.render() for row in entry.rows if row in taken]
        if clash:
            raise ValueError(f"check {entry.name!r}: row(s) {', '.join(clash)} are registered already")
        self._entries = (*self._entries, entry)

    def unregister(self, entry: RegisteredCheck) -> None:
        self._entries = tuple(e for e in self._entries if e is not entry)

    def rule_version(self, kind: str) -> str | None:
        """The rule version of the registered check that files ``kind`` (``None``: no check files it)."""
        for entry in self._entries:
            if entry.built and any(row.check == kind for row in entry.rows):
                return entry.rule_version
        return None

    def filable_kinds(self) -> tuple[Kind, ...]:
        """The kinds some built check can file, in ledger order: the only kinds worth asking about."""
        out: list[Kind] = []
        for entry in self._entries:
            if entry.built:
                out.extend(row.check for row in entry.rows if row.check not in out)
        return tuple(out)


REGISTRY: Final = Registry(BUILT_IN)


def ledger_table() -> str:
    """The README's ledger table, one line per registered row, read from the registry."""
    lines = ["| row | seam | armed by | canary |", "| --- | --- | --- | --- |"]
    for entry in REGISTRY:
        canary = "yes" if entry.canary is not None else "—"
        for row in entry.rows:
            lines.append(f"| `{row.render()}` | {row.seam} | {entry.armed_by} | {canary} |")
    return "\n".join(lines)
