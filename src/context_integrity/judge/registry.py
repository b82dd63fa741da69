"""THE list of checks. Everything else — the ledger's rows, arming, "not built yet", the canary
runner, the docs' ledger table, :data:`CEILINGS` — reads it.

One :class:`RegisteredCheck` per check: the ledger rows it fills, how it is
armed (from the declared contracts and the dials, decided once per run), the
one function it runs at its seam, and its canary. A check with no seam
function is registered but not built: its rows are noted ``not-applicable``
once per run, so "nothing looked" never reads as "nothing was wrong".

Adding a check is its module under ``checks/`` plus one entry here (its seam
function is the few lines that hand the pure check what the run state holds).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from ..checks.column_types import COLUMN_TYPE_CEILING, ColumnMode, column_types_canary, column_types_of
from ..checks.compose_invariant import (
    COMPOSE_INVARIANT_CEILING,
    compose_invariant_canary,
    suspended_still_offered_of,
)
from ..checks.dangling_reference import (
    DANGLING_REFERENCE_CEILING,
    dangling_reference_canary,
    dangling_references_of,
)
from ..checks.duplicate_execution import (
    DUPLICATE_EXECUTION_CEILING,
    OnceCall,
    duplicate_execution_canary,
    duplicate_executions_of,
)
from ..checks.empty_lookup import EMPTY_LOOKUP_CEILING, empty_lookup_canary, empty_lookup_of
from ..checks.prior_turn_evidence import (
    PRIOR_TURN_EVIDENCE_CEILING,
    prior_turn_evidence_canary,
    prior_turn_evidence_of_answer,
)
from ..checks.unsupported_argument import (
    UNSUPPORTED_ARGUMENT_CEILING,
    ArmedCall,
    unsupported_argument_canary,
    unsupported_arguments_of,
)
from ..checks.unsupported_claim import (
    UNSUPPORTED_CLAIM_CEILING,
    unsupported_claim_canary,
    unsupported_claims_of,
)
from ..checks.wire_invariant import WIRE_INVARIANT_CEILING, wire_invariant_canary, wire_violations_of
from ..contracts import ToolContract
from ..contracts.columns import is_model_class
from ..findings import NOT_APPLICABLE, UNREACHABLE, Encounter, Kind, Seam
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
    # What arms it, in the operator's words: the docs' ledger table quotes this.
    armed_by: str = "not built yet"
    # The tool declaration that arms it (a key of a contract and of the contracts file), if one
    # does: what ``suggest`` proposes to arm it, and what a report names for an unarmed row.
    declared_by: str | None = None
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
    # Armed mid-run by what the application tells the run ("suspend": ``run.suspend``), for a check
    # whose subject only exists once the application says so; until then it is unarmed.
    arms_on: str | None = None
    # True for a tool whose result this check may refuse: when the check cannot complete on it
    # (it raised, or the result could not be read), the judge refuses the result rather than hand
    # over rows nobody judged.
    enforced: Callable[[ToolContract | None, Dials], bool] | None = None
    # Its verdict on a result needs nothing but the result and the tool's contract, no run's memory:
    # an MCP server can judge it for its clients, and a client takes the server's word for it.
    judged_alone: bool = False
    # What the check can never see (its exported ceiling constant): quoted into its findings where
    # it applies, said once per kind by the text report and the demo.
    ceiling: str = ""

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


def _unread(contract: ToolContract | None, field_name: str) -> Encounter:
    """A tool that did not declare ``field_name``: out of scope, or, when its source declared it and
    it could not be read (a server's malformed or over-cap ``_meta``), unreachable with the reason."""
    reason = contract.unread_reason(field_name) if contract is not None and contract.unread else None
    return OUT_OF_SCOPE if reason is None else Encounter(disposition=UNREACHABLE, reason=reason)


def _unread_grounds_among(state: RunState, names_: Iterable[str]) -> Encounter:
    """Out of scope, unless one of these tools declared ``arguments_from`` that could not be read."""
    for name in names_:
        if name in state.unread_grounds:
            return _unread(state.contracts.get(name), "arguments_from")
    return OUT_OF_SCOPE


def _column_types_at_write(state: RunState, seen: ToolResultSeen) -> Encounter:
    columns = seen.contract.result_columns if seen.contract is not None else None
    if not columns:
        return _unread(seen.contract, "result_columns")
    mode: ColumnMode = "enforce" if state.dials.check_column_types == "enforce" else "warn"
    return column_types_of(
        seen.reading,
        columns,
        tool_name=seen.tool_name,
        call_id=seen.call_id,
        mode=mode,
        epoch=state.epoch,
        filed=state.filed,
    )


def _empty_lookup_at_write(state: RunState, seen: ToolResultSeen) -> Encounter:
    grounds = seen.contract.arguments_from if seen.contract is not None else None
    if not grounds:
        return _unread(seen.contract, "arguments_from")
    return empty_lookup_of(
        seen.reading,
        tool_name=seen.tool_name,
        call_id=seen.call_id,
        arguments=seen.arguments(),
        arguments_from=grounds,
        produced=state.produced,
        result=seen.result,
        epoch=state.epoch,
    )


def _dangling_at_compose(state: RunState, seen: RequestSeen) -> Encounter:
    encounter = dangling_references_of(
        offered=seen.offered,
        grounds=state.grounds,
        evicted=frozenset(state.evicted),
        present=seen.present,
        epoch=state.epoch,
    )
    if encounter.disposition == NOT_APPLICABLE and state.unread_grounds:
        return _unread_grounds_among(state, seen.offered)
    return encounter


def _unsupported_at_choice(state: RunState, seen: ResponseSeen) -> Encounter:
    armed = [call for call in seen.response.calls if call.name in state.grounds]
    if not armed:
        if state.unread_grounds:
            return _unread_grounds_among(state, (call.name for call in seen.response.calls))
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
    served, own = seen.corpora()
    return unsupported_arguments_of(
        calls=calls,
        grounded=served,
        assistant=own,
        external=state.dials.external_grounds,
        epoch=state.epoch,
    )


def _wire_invariant_at_wire(state: RunState, seen: WireSeen) -> Encounter:
    return wire_violations_of(
        composed=seen.composed, wire=seen.tool_names, epoch=state.epoch, source=seen.source
    )


def _compose_invariant_at_compose(state: RunState, seen: RequestSeen) -> Encounter:
    return suspended_still_offered_of(suspended=state.suspended, offered=seen.offered, epoch=state.epoch)


def _duplicate_at_choice(state: RunState, seen: ResponseSeen) -> Encounter:
    calls = []
    for call in seen.response.calls:
        contract = state.contracts.get(call.name)
        if contract is not None and contract.once_per_run:
            calls.append(OnceCall(call.name, call.call_id, call.arguments))
    return duplicate_executions_of(calls=calls, executed=state.executed, epoch=state.epoch)


def _answer_object(seen: AnswerSeen) -> tuple[object, bool]:
    """The answer as an object of fields (unset fields absent), and whether it could be read."""
    output = seen.output
    if is_model_class(type(output)):
        return output.model_dump(exclude_unset=True), True  # type: ignore[attr-defined]
    if isinstance(output, Mapping):
        return output, True
    if isinstance(seen.text, str):
        try:
            parsed = json.loads(seen.text)
        except ValueError:
            return None, False
        return parsed, isinstance(parsed, Mapping)
    return None, False


def _unsupported_claim_at_claim(state: RunState, seen: AnswerSeen) -> Encounter:
    contracts = state.contracts.claims_for(seen.output, state.agent)
    if not contracts:
        return OUT_OF_SCOPE
    answer, readable = _answer_object(seen)
    return unsupported_claims_of(
        claims=[claim for contract in contracts for claim in contract.claims],
        answer=answer,
        readable=readable,
        facts=tuple(state.facts),
        epoch=state.epoch,
    )


def _prior_turn_at_claim(state: RunState, seen: AnswerSeen) -> Encounter:
    text = seen.text
    if text is None and seen.output is not None:
        dump = getattr(seen.output, "model_dump_json", None) if is_model_class(type(seen.output)) else None
        text = str(dump()) if callable(dump) else str(seen.output)
    return prior_turn_evidence_of_answer(text, state.last_frame, epoch=state.epoch)


def _wire_reader(contracts: ContractBook, dials: Dials) -> bool:
    return contracts.any_wire_readers()


def _once_per_run(contracts: ContractBook, dials: Dials) -> bool:
    return contracts.any_once_per_run()


def _claims(contracts: ContractBook, dials: Dials) -> bool:
    return contracts.any_claims()


def _prior_turn(contracts: ContractBook, dials: Dials) -> bool:
    return dials.notice_prior_turn_evidence


def _grounding(contracts: ContractBook, dials: Dials) -> bool:
    return contracts.any_grounds()


def _empty_lookups(contracts: ContractBook, dials: Dials) -> bool:
    return dials.notice_empty_lookups and contracts.any_grounds()


def _column_types(contracts: ContractBook, dials: Dials) -> bool:
    return dials.check_column_types != "off" and contracts.any_columns()


def _columns_enforced(contract: ToolContract | None, dials: Dials) -> bool:
    return dials.check_column_types == "enforce" and contract is not None and bool(contract.result_columns)


# ── The table ───────────────────────────────────────────────────────────

# Registration order is report order; duplicate-execution, the newest, comes last.
BUILT_IN: Final[tuple[RegisteredCheck, ...]] = (
    RegisteredCheck(
        "wire invariant",
        armed_by="`install_wire_reader(client)` (OpenAI chat/responses, Anthropic messages bodies)",
        rows=(CheckId("invariant-violation", "wire"),),
        # Armed by an installed wire reader; then a model call whose body it did not read is
        # unreachable, never silent.
        armed=_wire_reader,
        wire=_wire_invariant_at_wire,
        ceiling=WIRE_INVARIANT_CEILING,
        canary=wire_invariant_canary,
    ),
    RegisteredCheck(
        "compose invariant",
        armed_by="the run's first `run.suspend(group, tools)`",
        rows=(CheckId("invariant-violation", "compose"),),
        # Armed by the run's first ``run.suspend``: before it, nothing is suspended anywhere.
        arms_on="suspend",
        compose=_compose_invariant_at_compose,
        ceiling=COMPOSE_INVARIANT_CEILING,
        canary=compose_invariant_canary,
    ),
    RegisteredCheck(
        "dangling reference",
        rows=(CheckId("dangling-reference", "compose"),),
        armed_by="any declared tool with `arguments_from`",
        declared_by="arguments_from",
        armed=_grounding,
        compose=_dangling_at_compose,
        ceiling=DANGLING_REFERENCE_CEILING,
        keeps_grounds=True,
        canary=dangling_reference_canary,
    ),
    RegisteredCheck(
        "unsupported argument",
        rows=(CheckId("unsupported-argument", "choice"),),
        armed_by="any declared tool with `arguments_from`",
        declared_by="arguments_from",
        armed=_grounding,
        choice=_unsupported_at_choice,
        ceiling=UNSUPPORTED_ARGUMENT_CEILING,
        keeps_grounds=True,
        canary=unsupported_argument_canary,
    ),
    RegisteredCheck(
        "unsupported claim",
        armed_by="`declare_claims(OutputModel, {field: (entity, fact)})` and tools returning `semantic(...)`",
        declared_by="claims",
        rows=(CheckId("unsupported-claim", "claim"),),
        armed=_claims,
        claim=_unsupported_claim_at_claim,
        ceiling=UNSUPPORTED_CLAIM_CEILING,
        canary=unsupported_claim_canary,
    ),
    RegisteredCheck(
        "empty lookup",
        rows=(CheckId("empty-lookup", "write"),),
        armed_by="`arguments_from` and `setup(notice_empty_lookups=True)`",
        declared_by="arguments_from",
        armed=_empty_lookups,
        write=_empty_lookup_at_write,
        ceiling=EMPTY_LOOKUP_CEILING,
        keeps_grounds=True,
        canary=empty_lookup_canary,
    ),
    RegisteredCheck(
        "column types",
        rows=(CheckId("column-type-mismatch", "write"), CheckId("missing-column", "write")),
        armed_by="`result_columns` and `setup(check_column_types=...)` set to `'warn'` or `'enforce'`",
        declared_by="result_columns",
        armed=_column_types,
        write=_column_types_at_write,
        ceiling=COLUMN_TYPE_CEILING,
        canary=column_types_canary,
        enforced=_columns_enforced,
        judged_alone=True,
    ),
    RegisteredCheck(
        "prior-turn evidence",
        armed_by="`setup(notice_prior_turn_evidence=True)`",
        rows=(CheckId("prior-turn-evidence", "claim"),),
        armed=_prior_turn,
        claim=_prior_turn_at_claim,
        ceiling=PRIOR_TURN_EVIDENCE_CEILING,
        canary=prior_turn_evidence_canary,
    ),
    RegisteredCheck(
        "duplicate execution",
        armed_by="a tool declared `once_per_run=True`",
        declared_by="once_per_run",
        rows=(CheckId("duplicate-execution", "choice"),),
        armed=_once_per_run,
        choice=_duplicate_at_choice,
        ceiling=DUPLICATE_EXECUTION_CEILING,
        canary=duplicate_execution_canary,
    ),
)

# The built-in rows in ledger order: the docs' table, the telemetry and the recording reader read this.
REGISTERED_CHECKS: Final[tuple[CheckId, ...]] = tuple(row for entry in BUILT_IN for row in entry.rows)

# What each built-in check can never see, by the row it files (``"dangling-reference@compose"``): the
# row, not the kind, because invariant-violation has a ceiling at each of its two seams; the column
# check's two rows share one. Each sentence is still owned, and importable, by its check's module.
CEILINGS: Final[Mapping[str, str]] = MappingProxyType(
    {row.render(): entry.ceiling for entry in BUILT_IN if entry.ceiling for row in entry.rows}
)
"""What each check can never see, by the ledger row it files: ``ci.CEILINGS["empty-lookup@write"]``,
or ``ci.CEILINGS[f"{finding.kind}@{finding.seam}"]`` for a finding in hand. Every finding quotes its
check's sentence verbatim."""


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

    def ceiling_of(self, kind: str | None, seam: str | None) -> str:
        """The ceiling of the registered check whose row is ``kind @seam`` (``""``: none registered)."""
        for entry in self._entries:
            if any(row.check == kind and row.seam == seam for row in entry.rows):
                return entry.ceiling
        return ""

    def filable_kinds(self) -> tuple[Kind, ...]:
        """The kinds some built check can file, in ledger order: the only kinds worth asking about."""
        out: list[Kind] = []
        for entry in self._entries:
            if entry.built:
                out.extend(row.check for row in entry.rows if row.check not in out)
        return tuple(out)


REGISTRY: Final = Registry(BUILT_IN)


def ledger_table() -> str:
    """The docs' ledger table, one line per registered row, read from the registry."""
    lines = ["| row | seam | armed by | canary |", "| --- | --- | --- | --- |"]
    for entry in REGISTRY:
        canary = "yes" if entry.canary is not None else "—"
        for row in entry.rows:
            lines.append(f"| `{row.render()}` | {row.seam} | {entry.armed_by} | {canary} |")
    return "\n".join(lines)
