"""What arms an unarmed ledger row, said once for every renderer (text, HTML, ``find_context_errors``).

A row that checked nothing, filed nothing and could reach nothing, and was noted not-applicable, is
most likely a check nobody armed: it names the cheapest declaration that arms it, read from the
registry (``armed_by``), and points to ``context-integrity suggest`` where suggest proposes that
declaration from recorded runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from ..judge.registry import BUILT_IN, RegisteredCheck

# The declarations ``suggest`` proposes (``once_per_run`` it only lists: side effects are the
# user's to judge).
SUGGESTED: Final = frozenset({"result_columns", "arguments_from", "claims"})
_BY_ROW: Final[Mapping[tuple[str, str], RegisteredCheck]] = {
    (row.check, row.seam): entry for entry in BUILT_IN for row in entry.rows
}


def _count(row: Mapping[str, object], name: str) -> int:
    value = row.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def looks_unarmed(row: Mapping[str, object]) -> bool:
    """Nothing checked, nothing filed, nothing unreachable, and noted not-applicable: unarmed."""
    return (
        _count(row, "not_applicable") > 0
        and not _count(row, "checked")
        and not _count(row, "findings")
        and not _count(row, "unreachable")
    )


def how_to_arm(check: object, seam: object) -> str | None:
    """The sentence for one ledger row's check: what arms it, and where ``suggest`` can propose it."""
    entry = _BY_ROW.get((check, seam)) if isinstance(check, str) and isinstance(seam, str) else None
    if entry is None or not entry.built:
        return None
    said = f"armed by {entry.armed_by}"
    if entry.declared_by in SUGGESTED:
        said += f"; `context-integrity suggest` proposes {entry.declared_by} from recorded runs"
    elif entry.declared_by == "once_per_run":
        said += "; `context-integrity suggest` lists the tools a run called twice with the same arguments"
    return said


def unarmed_hints(ledger: Sequence[Mapping[str, object]]) -> list[tuple[str, str]]:
    """(rows, sentence) for the rows of this ledger that look unarmed, rows armed alike said once
    ("column-type-mismatch @write, missing-column @write")."""
    grouped: dict[str, list[str]] = {}
    for row in ledger:
        if looks_unarmed(row) and (sentence := how_to_arm(row.get("check"), row.get("seam"))) is not None:
            grouped.setdefault(sentence, []).append(f"{row.get('check')} @{row.get('seam')}")
    return [(", ".join(rows), sentence) for sentence, rows in grouped.items()]
