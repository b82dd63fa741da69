"""column types: a tool declared what its rows hold, and the rows disagree.

Filed at the ``write`` seam, when a tool's result comes back. Two kinds, on
purpose, because they send a person to different places:

* ``column-type-mismatch`` — the column is there and some rows hold the wrong
  type of value (LUN 0 written as ``''``; measures arriving as ``"1240"``).
  Look at the code that formats the rows.
* ``missing-column`` — the declared column is in no row at all. Nothing was
  delivered to be mistyped; look at the code that fetches the rows.

What this check can never see is stated once, in :data:`COLUMN_TYPE_CEILING`,
and quoted into every finding: an 8 MiB disk rounded to ``0.0`` GB is a
perfectly good number and passes.

Declared, never inferred: a tool is judged only because its author wrote
``result_columns``; nothing here guesses a type from the data. Open, never
closed: a column nobody declared is never judged.

Cost. The judge calls this on every result of a declaring tool, so the hot
path is built for the clean case (:mod:`.rows`): per declared column, the set
of the cells' *types*, computed in C, usually settles the column at once, and
a clean result builds nothing (one shared encounter). Only a column that fails
that test walks its cells one by one, and that walk counts every row exactly.

The package by job: :mod:`.values` (does a value have the type, and what is
it), :mod:`.rows` (reading a rowset's columns, the fast paths, the exact walk),
:mod:`.sentences` (the ceiling, the messages, the refusal, the witnesses), and
here the check itself and its canary.

Bounded: one result files at most ``MAX_COLUMN_FINDINGS_PER_KIND`` findings of each kind. Past it
the first columns each have their finding and one more names a few of the rest and counts them
all, so a declaration of a thousand columns (an MCP server's, say) cannot turn one result into a
thousand events; every broken column is still counted in the encounter and the refusal.

Never raises for any result. A result that is not a rowset is
``not-applicable``; a rowset whose own code raises while we read it (a
``Mapping`` whose ``__getitem__`` throws, a dataclass property that throws) is
``unreachable`` — "I could not look", never "nothing was wrong" and never a
finding about data we could not see. Only a bad *declaration* raises
(:class:`~context_integrity.contracts.DeclarationError`), as everywhere else.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from ...contracts import ColumnType, NormalizedColumn, normalize_columns
from ...contracts.results import ResultReading, read_result
from ...findings import (
    CHECKED_FAIL,
    CHECKED_PASS,
    NOT_APPLICABLE,
    UNREACHABLE,
    Disposition,
    Encounter,
    Finding,
    Kind,
    identity_of,
    tool_subject,
)
from ...limits import MAX_COLUMN_FINDINGS_PER_KIND, MAX_IDENTITY_CHARS
from ...text import Text, plural
from .. import CANARY_EPOCH, as_canary
from .rows import ColumnViolation, judge_rows
from .sentences import (
    COLUMN_TYPE_CEILING,
    ColumnMode,
    mismatch_message,
    mismatches_message,
    missing_message,
    missings_message,
    refusal,
    result_value,
    witnesses,
)

__all__ = [
    "COLUMN_TYPES_CANARY",
    "COLUMN_TYPE_CEILING",
    "ColumnMode",
    "ColumnTypeEncounter",
    "ColumnTypesCanary",
    "ColumnViolation",
    "check_column_types",
    "column_types_canary",
    "column_types_of",
]


# ── The check ───────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class ColumnTypeEncounter(Encounter):
    """One look at one result: findings of both kinds, plus the raw violations and missing columns.

    Use :meth:`Encounter.disposition_of` for each kind's own ledger row (a
    mismatch-only result is a pass for ``missing-column``).
    """

    violations: list[ColumnViolation] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def disposition_of(self, kind: Kind) -> Disposition:
        # Read from what was found, not from the findings built: a finding the run already filed
        # is not built again, and its row still fails.
        if self.disposition in (NOT_APPLICABLE, UNREACHABLE):
            return self.disposition
        if kind == "column-type-mismatch":
            return CHECKED_FAIL if self.violations else CHECKED_PASS
        if kind == "missing-column":
            return CHECKED_FAIL if self.missing else CHECKED_PASS
        return Encounter.disposition_of(self, kind)


# The encounters that carry nothing, made once: a clean result is the common call, and the judge
# only reads an encounter. Never mutate their lists.
_PASSED: Final = ColumnTypeEncounter(disposition=CHECKED_PASS)
_UNREACHABLE_ENCOUNTER: Final = ColumnTypeEncounter(disposition=UNREACHABLE)
_OUT_OF_SCOPE: Final = ColumnTypeEncounter(disposition=NOT_APPLICABLE)


def column_types_of(
    reading: ResultReading,
    columns: tuple[NormalizedColumn, ...],
    *,
    tool_name: str,
    call_id: str,
    mode: ColumnMode = "warn",
    epoch: int = 0,
    filed: Container[str] = frozenset(),
) -> ColumnTypeEncounter:
    """The pure judge: one result, already read, against its tool's normalised columns.

    ``filed`` holds the per-run identities (:func:`~context_integrity.findings.identity_of`,
    clipped to ``MAX_IDENTITY_CHARS``) of findings already filed: those are not built again,
    while every violation is still counted, reported and (in enforce mode) refused.

    Disposition: ``not-applicable`` when the result is not a rowset with at
    least one row (the zero-row answer is empty-lookup's subject);
    ``unreachable`` when the rowset's own code raised while being read;
    otherwise ``checked-fail`` with one finding per broken column, or
    ``checked-pass``. In ``enforce`` mode a failing encounter carries
    ``refusal``, the sentence the model receives instead of the rows. Any
    mode other than ``"enforce"`` is ``"warn"``, the mode that changes nothing.
    """
    if not reading.plain:  # plain rows (the common result) are a rowset: two questions fewer
        if reading.shape == "unreadable":
            return _UNREACHABLE_ENCOUNTER
        if not reading.is_rowset or not reading.row_count:
            return _OUT_OF_SCOPE
    elif not reading.rows:
        return _OUT_OF_SCOPE
    try:
        judged = judge_rows(reading, columns)
    except Exception:  # a row's own __getitem__/__eq__ raised: we could not look
        return _UNREACHABLE_ENCOUNTER
    if judged is None:
        return _PASSED
    broken, missing = judged
    mode = "enforce" if mode == "enforce" else "warn"

    of_rows = reading.row_count
    subject = tool_subject(tool_name)
    provenance = Text(f"tool call {call_id}: the result as the tool returned it ({plural(of_rows, 'row')})")

    def finding(kind: Kind, column: NormalizedColumn, held: str, message: str) -> Finding:
        return Finding(
            kind=kind,
            seam="write",
            subjects=(subject,),
            predicate=column.name,
            witnesses=witnesses(subject, column, tool_name, epoch, held, provenance),
            epoch=epoch,
            message=message,
        )

    def fresh(kind: Kind, column: NormalizedColumn) -> bool:
        return not filed or (
            identity_of(kind, "write", (subject,), column.name)[:MAX_IDENTITY_CHARS] not in filed
        )

    # Each kind: one finding per column up to the bound; past it, the last one speaks for the rest.
    alone = MAX_COLUMN_FINDINGS_PER_KIND - 1
    mismatched, rolled = (broken, []) if len(broken) <= alone + 1 else (broken[:alone], broken[alone:])
    absent, gone = (missing, []) if len(missing) <= alone + 1 else (missing[:alone], missing[alone:])
    findings = [
        finding(
            "column-type-mismatch",
            column,
            result_value(violation),
            mismatch_message(tool_name, column, violation, call_id, mode),
        )
        for column, violation in mismatched
        if fresh("column-type-mismatch", column)
    ]
    if rolled and fresh("column-type-mismatch", rolled[0][0]):
        column, violation = rolled[0]
        message = mismatches_message(tool_name, rolled, call_id, mode)
        findings.append(finding("column-type-mismatch", column, result_value(violation), message))
    findings += [
        finding(
            "missing-column",
            column,
            Text("present in no row"),
            missing_message(tool_name, column, of_rows, call_id, mode),
        )
        for column in absent
        if fresh("missing-column", column)
    ]
    if gone and fresh("missing-column", gone[0]):
        message = missings_message(tool_name, gone, of_rows, call_id, mode)
        findings.append(finding("missing-column", gone[0], Text("present in no row"), message))
    violations = [violation for _, violation in broken]
    missing_names = [column.name for column in missing]
    return ColumnTypeEncounter(
        findings=findings,
        disposition=CHECKED_FAIL,
        refusal=refusal(tool_name, violations, missing_names) if mode == "enforce" else None,
        violations=violations,
        missing=missing_names,
    )


def check_column_types(
    *,
    tool_name: str,
    columns: object,
    result: object,
    call_id: str,
    mode: ColumnMode = "warn",
    epoch: int = 0,
) -> ColumnTypeEncounter:
    """Judge one tool result against the columns its tool declared.

    ``columns`` is a raw declaration (a dict, ``ColumnDeclaration`` values, a
    pydantic model class). This wrapper normalises it (raising
    :class:`~context_integrity.contracts.DeclarationError` only for a bad
    declaration, never for anything in ``result``), reads the result with
    :func:`~context_integrity.contracts.read_result` and calls
    :func:`column_types_of`.
    """
    return column_types_of(
        read_result(result),
        normalize_columns(tool_name, columns),
        tool_name=tool_name,
        call_id=call_id,
        mode=mode,
        epoch=epoch,
    )


# ── Dev-posture canary ──────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class ColumnTypesCanary:
    """A known-bad result that must make both kinds fire, run through the real check."""

    tool_name: str
    call_id: str
    columns: Mapping[str, ColumnType]
    rows: tuple[Mapping[str, object], ...]
    epoch: int


# One shared fixture for both kinds: the measure arrives quoted (a mismatch)
# and the second column never arrives (missing). Each kind's canary looks at
# its own findings, so a report can say which half of the check died.
COLUMN_TYPES_CANARY: Final = ColumnTypesCanary(
    tool_name="canary_tool",
    call_id="canary-call",
    columns=MappingProxyType({"canary_measure": "number", "canary_absent": "string"}),
    rows=(MappingProxyType({"canary_measure": "1240"}),),
    epoch=CANARY_EPOCH,
)


def column_types_canary(canary: ColumnTypesCanary = COLUMN_TYPES_CANARY) -> ColumnTypeEncounter:
    """Run the canary fixture through :func:`check_column_types`; its findings are marked synthetic."""
    encounter = check_column_types(
        tool_name=canary.tool_name,
        columns=canary.columns,
        result=canary.rows,
        call_id=canary.call_id,
        mode="warn",
        epoch=canary.epoch,
    )
    return as_canary(encounter)
