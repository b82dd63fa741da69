"""The disposition ledger: one row per registered check, every run.

A findings stream alone cannot tell "nothing was wrong" from "nothing
looked". The ledger can: every registered check is a row whether it was
armed or not, and every encounter a check has is counted under exactly one
disposition. A check that is not armed (or not built yet) is noted
``not-applicable`` once per run, so a later check slots in without changing
the ledger's shape. Which checks are registered is the judge's registry's to say
(:mod:`context_integrity.judge.registry`); the ledger only counts.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Final, Literal, NamedTuple

from .findings import (
    CHECKED_FAIL,
    CHECKED_PASS,
    NOT_APPLICABLE,
    SEAMS,
    UNREACHABLE,
    Disposition,
    Kind,
    Seam,
)


class CheckId(NamedTuple):
    """A registered check: one kind at one seam.

    A named tuple rather than a dataclass: it keys the ledger on every
    encounter, and a tuple hashes and compares in C.
    """

    check: Kind
    seam: Seam

    def render(self) -> str:
        return f"{self.check}@{self.seam}"


# The field names of a report row, in order: the telemetry attributes, the
# recording reader and the docs all read this tuple.
ROW_FIELDS: Final[tuple[str, ...]] = (
    "check",
    "seam",
    "checked",
    "findings",
    "not_applicable",
    "unreachable",
    "synthetic",
    "last_fired_at",
)

# A count a row carries only once it is nonzero, beside the fields above: the encounters whose
# verdict an MCP server reached and said so in the result (its findings live on its span, not here).
JUDGED_AT_SERVER: Final = "judged_at_server"

Posture = Literal["observe", "dev"]


@dataclass(slots=True)
class LedgerRow:
    """One check's counts for one run.

    ``checked`` = passes + failures; ``findings`` = failures (never more than
    ``checked``); ``last_fired_at`` is epoch milliseconds of the last failure,
    ``None`` until one happens (never a fabricated zero). ``judged_at_server``
    counts, among these encounters, those an MCP server judged and said so.
    """

    check: Kind
    seam: Seam
    checked: int = 0
    findings: int = 0
    not_applicable: int = 0
    unreachable: int = 0
    synthetic: int = 0
    last_fired_at: int | None = None
    judged_at_server: int = 0

    @property
    def check_id(self) -> CheckId:
        return CheckId(self.check, self.seam)

    def touched(self) -> bool:
        return self.checked + self.not_applicable + self.unreachable > 0

    def as_dict(self) -> dict[str, object]:
        """The row as plain data; ``last_fired_at`` is absent until a failure."""
        out: dict[str, object] = {name: getattr(self, name) for name in ROW_FIELDS}
        if self.last_fired_at is None:
            del out["last_fired_at"]
        if self.judged_at_server:
            out[JUDGED_AT_SERVER] = self.judged_at_server
        return out


class CheckerDeadError(RuntimeError):
    """A registered check saw work and filed nothing, or missed its own canary."""

    def __init__(self, check_id: CheckId, detail: str) -> None:
        self.check = check_id.check
        self.seam = check_id.seam
        super().__init__(
            f"context_integrity checker dead: {check_id.check!r} at the {check_id.seam} seam {detail} "
            "A report that stays green because a check never ran is decoration, not health. "
            "Re-wire the check or stop registering it."
        )


@dataclass(slots=True)
class _Canary:
    minted: int = 0
    caught: int = 0


@dataclass
class DispositionLedger:
    """Counts every encounter of every registered check during one run."""

    checks: tuple[CheckId, ...]
    _rows: dict[CheckId, LedgerRow] = field(init=False, repr=False)
    _canaries: dict[CheckId, _Canary] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rows = {c: LedgerRow(c.check, c.seam) for c in self.checks}
        self._canaries = {c: _Canary() for c in self.checks}

    def note(self, check_id: CheckId, disposition: Disposition, at_ms: int | None = None) -> None:
        """Count one encounter. Notes for an unregistered check are ignored."""
        row = self._rows.get(check_id)
        if row is None:
            return
        if disposition == CHECKED_PASS:
            row.checked += 1
        elif disposition == CHECKED_FAIL:
            row.checked += 1
            row.findings += 1
            if at_ms is not None:
                row.last_fired_at = at_ms
        elif disposition == NOT_APPLICABLE:
            row.not_applicable += 1
        elif disposition == UNREACHABLE:
            row.unreachable += 1

    def withdraw(self, check_id: CheckId, disposition: Disposition) -> None:
        """Take back one encounter noted ``not-applicable`` or ``unreachable`` (a check armed after
        the run's start noted it unarmed). Counts never go below zero."""
        row = self._rows.get(check_id)
        if row is None:
            return
        if disposition == NOT_APPLICABLE and row.not_applicable:
            row.not_applicable -= 1
        elif disposition == UNREACHABLE and row.unreachable:
            row.unreachable -= 1

    def note_judged_at_server(self, check_id: CheckId) -> None:
        """The encounter just noted was judged at an MCP server, which said so in the result."""
        row = self._rows.get(check_id)
        if row is not None:
            row.judged_at_server += 1

    def note_synthetic(self, check_id: CheckId, outcome: Literal["minted", "caught"]) -> None:
        """Count a canary; canaries never touch the real counts."""
        canary = self._canaries.get(check_id)
        if canary is None:
            return
        if outcome == "minted":
            canary.minted += 1
            self._rows[check_id].synthetic += 1
        else:
            canary.caught += 1

    def row(self, check_id: CheckId) -> LedgerRow:
        source = self._rows[check_id]
        return LedgerRow(
            source.check,
            source.seam,
            source.checked,
            source.findings,
            source.not_applicable,
            source.unreachable,
            source.synthetic,
            source.last_fired_at,
            source.judged_at_server,
        )

    def report(self) -> list[LedgerRow]:
        """Fresh copies of every row, in registration order."""
        return [self.row(c) for c in self.checks]

    def totals(self) -> dict[str, int]:
        rows = self._rows.values()
        totals = {
            "checked": sum(r.checked for r in rows),
            "findings": sum(r.findings for r in rows),
            "not_applicable": sum(r.not_applicable for r in rows),
            "unreachable": sum(r.unreachable for r in rows),
            "synthetic": sum(r.synthetic for r in rows),
        }
        judged_there = sum(r.judged_at_server for r in rows)
        if judged_there:  # as in a row: present once nonzero
            totals[JUDGED_AT_SERVER] = judged_there
        return totals

    def assert_alive(
        self, *, worked: Collection[Seam] | None = None, work_existed: bool | None = None
    ) -> None:
        """Raise :class:`CheckerDeadError` for the first registered row that is provably dead.

        ``worked`` is the set of seams where real work happened this run (a signal
        no check writes). A row is dead when work happened at its own seam and it
        filed no disposition at all, or when its canary was minted and not caught.
        A caught canary never excuses the first: it proves the pure function, not
        that the seam feeds it. A row whose seam saw no work had nothing to look at.
        ``work_existed`` is the run-wide form: ``True`` reads as work at every seam.
        """
        if worked is None:
            worked = SEAMS if work_existed else ()
        for check_id in self.checks:
            row = self._rows[check_id]
            if check_id.seam in worked and not row.touched():
                raise CheckerDeadError(
                    check_id,
                    "filed no disposition at all in a run where work happened at that seam: not pass, "
                    "not fail, not not-applicable, not unreachable.",
                )
            canary = self._canaries[check_id]
            if canary.minted and canary.caught < canary.minted:
                raise CheckerDeadError(
                    check_id,
                    f"was handed {canary.minted} synthetic contradiction(s) and caught {canary.caught}.",
                )
