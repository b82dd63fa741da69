"""The sentences of the column check: what a finding says, what a refusal says, the witnesses.

:data:`COLUMN_TYPE_CEILING` is the one owner of what the check can never see; every
column-type-mismatch finding quotes it verbatim. A missing-column finding does not: no value arrived,
so what the check can see of a value's type never came into it.
"""

from __future__ import annotations

from typing import Final, Literal

from ...contracts import NormalizedColumn
from ...findings import Subject, Witness
from ...limits import MAX_NAMED_IN_REFUSAL
from ...text import Text, plural, repr_clipped
from .rows import ColumnViolation

__all__ = [
    "COLUMN_TYPE_CEILING",
    "ENFORCE_OUTCOME",
    "WARN_OUTCOME",
    "ColumnMode",
    "mismatch_message",
    "mismatches_message",
    "missing_message",
    "missings_message",
    "refusal",
    "result_value",
    "witnesses",
]

COLUMN_TYPE_CEILING: Final[str] = (
    "This check sees a value's type and never its meaning: it can tell that a column declared "
    "number holds a string, but not that the value ought to have been 0 or that a 0.0 ought to "
    "have been 8, so a column in which every value has the declared type passes and may still be wrong."
)
"""What the column check can never know. One owner; quoted verbatim into every column-type-mismatch."""

ColumnMode = Literal["warn", "enforce"]
"""``warn``: file findings, hand the rows over untouched. ``enforce``: also refuse the result."""


# What the boundary did, stated in every finding rather than left to be assumed.
WARN_OUTCOME: Final = (
    "Warn mode: nothing was blocked, changed or retried; the model reads the rows exactly "
    "as the tool returned them."
)
ENFORCE_OUTCOME: Final = (
    "Enforce mode: the result was refused, and the model reads a corrective sentence in place of these rows."
)


def _outcome(mode: ColumnMode) -> str:
    return ENFORCE_OUTCOME if mode == "enforce" else WARN_OUTCOME


def _declared_words(column: NormalizedColumn) -> str:
    return f"declared {column.type}" + (" (nullable)" if column.nullable else "")


def _first_offender(violation: ColumnViolation, keyless: str) -> Text:
    """The first offending cell as a sentence names it; ``keyless`` names a row without the key."""
    if violation.got == "missing":
        return Text(keyless)
    if violation.got == "None":
        return Text("None")
    return Text(violation.sample, f", which is {violation.got}")


def _offender_phrase(violation: ColumnViolation) -> Text:
    first = _first_offender(violation, "a row without that key")
    if violation.other_kinds:
        return Text("the first is ", first, f"; others are {', '.join(violation.other_kinds)}")
    return Text("the first is ", first)


def _nullable_hint(column: NormalizedColumn, violation: ColumnViolation) -> str:
    # Named only when an offender is an ABSENCE: that is when the author may
    # simply have meant "this column can be empty". A wrong-typed value is
    # not excused by nullable, so suggesting it there would mislead.
    if column.nullable or violation.absences == 0:
        return ""
    return (
        f"If a row may legitimately have no {column.name!r}, declare the column with "
        f"nullable=True (e.g. {{'type': {column.type!r}, 'nullable': True}}) and empty cells stop "
        "counting. "
    )


def mismatch_message(
    tool_name: str, column: NormalizedColumn, violation: ColumnViolation, call_id: str, mode: ColumnMode
) -> Text:
    return Text(
        f"Tool {tool_name!r} declares column {column.name!r} as {column.type}"
        f"{' (nullable)' if column.nullable else ''}, but in {violation.rows} of "
        f"{plural(violation.of_rows, 'row')} it holds something that is not a {column.type}; ",
        _offender_phrase(violation),
        f". {_nullable_hint(column, violation)}{COLUMN_TYPE_CEILING} Call id {call_id}. {_outcome(mode)}",
    )


def missing_message(
    tool_name: str, column: NormalizedColumn, of_rows: int, call_id: str, mode: ColumnMode
) -> Text:
    where = (
        "the one row it returned lacks it"
        if of_rows == 1
        else f"none of the {of_rows} rows it returned has it"
    )
    nullable_note = (
        " (nullable=True lets a row leave the value empty; it does not excuse a column that never arrives)"
        if column.nullable
        else ""
    )
    return Text(
        f"Tool {tool_name!r} declares column {column.name!r} ({column.type}), but {where}{nullable_note}. "
        "No value was delivered to be mistyped, so the cause is in what fetches the rows rather than "
        f"in what formats them. Call id {call_id}. {_outcome(mode)}"
    )


def _and_more(named: list[Text], count: int) -> Text:
    more = count - len(named)
    parts: list[str | Text] = []
    for index, name in enumerate(named):
        parts += [name] if index == 0 else ["; ", name]
    return Text(*parts, f"; and {more:,} more" if more > 0 else "")


def mismatches_message(
    tool_name: str,
    broken: list[tuple[NormalizedColumn, ColumnViolation]],
    call_id: str,
    mode: ColumnMode,
) -> Text:
    """One finding for many broken columns: the first few named, every one counted."""
    named = [
        Text(f"{repr_clipped(column.name)} ({_declared_words(column)}; ", result_value(violation), ")")
        for column, violation in broken[:MAX_NAMED_IN_REFUSAL]
    ]
    return Text(
        f"Tool {repr_clipped(tool_name)} has {len(broken):,} declared columns that some rows break, each "
        "holding something other than its declared type: ",
        _and_more(named, len(broken)),
        f". {COLUMN_TYPE_CEILING} Call id {call_id}. {_outcome(mode)}",
    )


def missings_message(
    tool_name: str, missing: list[NormalizedColumn], of_rows: int, call_id: str, mode: ColumnMode
) -> Text:
    """One finding for many columns present in no row: the first few named, every one counted."""
    named = [repr_clipped(column.name) for column in missing[:MAX_NAMED_IN_REFUSAL]]
    more = len(missing) - len(named)
    where = "the one row it returned has" if of_rows == 1 else f"none of the {of_rows} rows it returned has"
    return Text(
        f"Tool {repr_clipped(tool_name)} has {len(missing):,} declared columns that {where}: "
        f"{', '.join(named)}{f' and {more:,} more' if more > 0 else ''}. No value was delivered to be "
        "mistyped, so the cause is in what fetches the rows rather than in what formats them. "
        f"{COLUMN_TYPE_CEILING} Call id {call_id}. {_outcome(mode)}"
    )


def refusal(tool_name: str, violations: list[ColumnViolation], missing: list[str]) -> str:
    problems: list[str] = []
    for violation in violations[:MAX_NAMED_IN_REFUSAL]:
        first = _first_offender(violation, "a row without the key")
        problems.append(
            f"{violation.column!r} is declared {violation.declared} but {violation.rows} of "
            f"{plural(violation.of_rows, 'row')} hold something else, the first being {first}"
        )
    for name in missing[: max(0, MAX_NAMED_IN_REFUSAL - len(problems))]:
        problems.append(f"{name!r} is declared but present in no row")
    more = len(violations) + len(missing) - len(problems)
    tail = f", and {more} more" if more > 0 else ""
    return (
        f"Result rejected: tool {tool_name!r} returned rows that do not match the columns it declares "
        f"({'; '.join(problems)}{tail}); fix the tool so each column holds what it declares, or change "
        "the declaration. No data was returned."
    )


def witnesses(
    subject: Subject,
    column: NormalizedColumn,
    tool_name: str,
    epoch: int,
    result_value: str,
    result_source: str,
) -> tuple[Witness, Witness]:
    return (
        Witness(
            subject=subject,
            predicate=column.name,
            value=Text(_declared_words(column)),
            epoch=epoch,
            stratum="asserted",
            provenance=Text(f"result_columns on tool {tool_name!r}, as its author declared it"),
        ),
        Witness(
            subject=subject,
            predicate=column.name,
            value=result_value,
            epoch=epoch,
            stratum="asserted",
            provenance=result_source,
        ),
    )


def result_value(violation: ColumnViolation) -> Text:
    held = " or ".join((violation.got, *violation.other_kinds))
    return Text(
        f"{violation.rows} of {plural(violation.of_rows, 'row')} hold {held} — first: ", violation.sample
    )
