"""Judging a rowset's declared columns: the reading of each column, its fast paths, the exact walk.

The hot path is built for the clean case. Per declared column, the set of its cells' *types* is
computed in C (``set(map(type, map(column.cell, rows)))`` for plain dict rows, with the
``itemgetter`` made once per declaration) and usually settles the column at once: a type that
always passes needs no look at its values. A number column of ints and floats is cleared by one
finite ``sum``; a date column of strings by parsing them in C. Only what that leaves walks the
suspect values one by one, and that walk counts every row exactly.

Every fast path only ever answers "clean" (or, for a NaN, names the same offenders) where the
general path :func:`_judge_column` would; ``tests/checks/test_column_fast_paths.py`` holds them
to it.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import compress, filterfalse, repeat
from typing import Final, cast

from ...contracts import ColumnType, NormalizedColumn
from ...contracts.columns import ALWAYS_VALID_TYPES
from ...contracts.results import ResultReading
from ...limits import MAX_OTHER_OFFENDER_KINDS
from ...text import Text, quoted
from .values import (
    ABSENT,
    INT_AND_FLOAT,
    JUST_FLOAT,
    OFFENCE,
    VALID_OR_EMPTY_TYPES,
    Absent,
    floats_finite,
    non_finite,
    strings_all_iso_dates,
)

__all__ = ["ColumnViolation", "judge_rows"]


@dataclass(frozen=True, slots=True)
class ColumnViolation:
    """One declared column that some rows break: the shape a consumer reads to explain a refusal.

    ``rows`` offenders out of ``of_rows``; ``sample`` is the first offender,
    quoted (a :class:`~context_integrity.text.Text`, shown clipped); ``got`` names what it is. ``other_kinds`` names, in
    first-seen order, up to a few other kinds of offender in the same column.
    """

    column: str
    declared: ColumnType
    rows: int
    of_rows: int
    sample: str | Text
    got: str
    other_kinds: tuple[str, ...] = ()
    absences: int = 0  # how many of ``rows`` are None or a missing key


# ── Reading one column ──────────────────────────────────────────────────


def _cell(row: Mapping[str, object], name: str) -> object:
    """One cell of a non-plain row; raises whatever the row's own code raises."""
    if isinstance(row, dict):
        # ``dict.get`` reads what the row holds: a ``defaultdict`` must not
        # grow a key because we looked for it.
        return dict.get(row, name, ABSENT)
    try:
        return row[name]
    except KeyError:
        return ABSENT


# ``dict.get`` as a plain callable, looked up once rather than per column.
_DICT_GET: Final = cast("Callable[[Mapping[str, object], str, object], object]", dict.get)


def _column_cells(reading: ResultReading, name: str) -> Callable[[], Iterable[object]]:
    """A maker of fresh iterators over one column's cells, ``ABSENT`` standing for a missing key.

    For plain dict rows each iterator is a C-level ``map(dict.get, ...)``: the
    clean path runs no Python bytecode per row. Other rows are read once,
    through :func:`_cell`, and the list is reused.
    """
    if reading.fields is not None and name not in reading.fields:
        count = reading.row_count  # a dataclass row has its fields and no other column
        return lambda: repeat(ABSENT, count)
    if reading.columns:
        assert reading.fields is not None
        values = reading.columns[reading.fields.index(name)]
        return lambda: values
    rows = reading.rows
    count = len(rows)
    if reading.plain:
        return lambda: map(_DICT_GET, rows, repeat(name, count), repeat(ABSENT, count))
    cells = [_cell(row, name) for row in rows]
    return lambda: cells


# ── The general path ────────────────────────────────────────────────────

_MISSING_COLUMN: Final = "missing-column"


def _judge_column(reading: ResultReading, column: NormalizedColumn) -> ColumnViolation | str | None:
    """``None`` when every row is fine, ``_MISSING_COLUMN`` when no row has the key, else the violation.

    Decided on the set of the column's value TYPES first (computed in C): a
    type that always passes needs no look at its values. Only values of the
    remaining "suspect" types are picked out (again in C, order kept) and
    looked at one by one, so a clean column costs no Python work per row and
    a dirty one costs Python work only per suspect. Every row is still
    counted: a value is skipped only when its type guarantees it passes.
    """
    cells = _column_cells(reading, column.name)
    value_types = set(map(type, cells()))
    if value_types == {Absent}:
        # Checked FIRST: a column nobody delivered is never also "mistyped",
        # and nullable does not excuse it (it promises about values, not keys).
        return _MISSING_COLUMN
    suspect_types = (
        value_types - (VALID_OR_EMPTY_TYPES if column.nullable else ALWAYS_VALID_TYPES)[column.type]
    )
    if not suspect_types:
        return None
    # Something needs a look: read the column once more into a list, and
    # pick the suspects out of that instead of reading the rows again.
    values = cells()
    if not isinstance(values, list):
        values = list(values)
    if column.type == "number" and float in suspect_types:
        if floats_finite(values, value_types):
            suspect_types.discard(float)
        elif suspect_types == JUST_FLOAT:
            # Only plain floats are suspect, and some are NaN or infinite: those are the offenders,
            # picked out in C, in row order, instead of walking every float in Python.
            return _walk_column(non_finite(values, value_types), column, of_rows=reading.row_count)
    elif column.type == "date" and str in suspect_types and strings_all_iso_dates(values):
        suspect_types.discard(str)
    if not suspect_types:
        return None
    if suspect_types == value_types:
        suspects: Iterable[object] = values
    else:
        suspects = compress(values, map(suspect_types.__contains__, map(type, values)))
    return _walk_column(suspects, column, of_rows=reading.row_count)


def _walk_column(
    suspects: Iterable[object], column: NormalizedColumn, of_rows: int
) -> ColumnViolation | None:
    """The exact look at every suspect value: each offender counted, the first one kept."""
    offence = OFFENCE[column.type]
    nullable = column.nullable
    count = 0
    absences = 0
    first: object = ABSENT
    got = ""
    others: list[str] = []
    for value in suspects:
        if value is None or value is ABSENT:
            if nullable:
                continue
            word = "None" if value is None else "missing"
            absences += 1
        else:
            offending = offence(value)
            if offending is None:
                continue
            word = offending
        count += 1
        if count == 1:
            first, got = value, word
        elif word != got and word not in others and len(others) < MAX_OTHER_OFFENDER_KINDS:
            others.append(word)
    if count == 0:
        return None
    if first is ABSENT:
        sample = "no such key"
    elif first is None:
        sample = "None"
    else:
        sample = quoted(first)
    return ColumnViolation(
        column=column.name,
        declared=column.type,
        rows=count,
        of_rows=of_rows,
        sample=sample,
        got=got,
        other_kinds=tuple(others),
        absences=absences,
    )


# ── The fast path: plain dict rows ──────────────────────────────────────


# Up to this many rows a column is proven clean cell by cell in Python; from there on, in C passes
# whose set-up costs more than a few Python steps.
_FEW_ROWS: Final = 16


class _Undecided:
    __slots__ = ()


_UNDECIDED: Final = _Undecided()


def _settle(
    rows: tuple[Mapping[str, object], ...], column: NormalizedColumn, value_types: set[type]
) -> ColumnViolation | _Undecided | None:
    """A plain column whose types did not clear it at once: ``None`` when one C-level pass proves
    it clean, the violation when that pass names every offender, else undecided.

    ``value_types`` are the types of the column's cells, every row holding the key.
    """
    cell = column.cell
    if column.type == "number" and value_types <= INT_AND_FLOAT:
        try:
            if math.isfinite(sum(map(cell, rows), 0.0)):
                return None
            # Some float is NaN or infinite: those, in row order, are the only offenders.
            offenders = list(filterfalse(math.isfinite, map(cell, rows)))
        except OverflowError:  # an int too large for a float: the general path looks at the floats
            return _UNDECIDED
        return _walk_column(offenders, column, of_rows=len(rows))
    if column.type == "date" and str in value_types and len(value_types - column.passes) == 1:
        if len(value_types) == 1:
            try:
                # The common date column of strings: plain dates, each parsed in C as it is read.
                # ``date.fromisoformat`` takes no string :func:`.values.is_iso_date` refuses.
                deque(map(_dt.date.fromisoformat, map(cell, rows)), maxlen=0)
                return None
            except Exception:  # some string is not a plain date: the wider forms, below
                pass
        if strings_all_iso_dates(list(map(cell, rows))):
            return None
    return _UNDECIDED


def judge_rows(
    reading: ResultReading, declared: tuple[NormalizedColumn, ...]
) -> tuple[list[tuple[NormalizedColumn, ColumnViolation]], list[NormalizedColumn]] | None:
    """``None`` when every declared column is clean; else the broken columns and the missing ones.

    Raises whatever a row's own code raises while it is read.
    """
    broken: list[tuple[NormalizedColumn, ColumnViolation]] | None = None
    missing: list[NormalizedColumn] = []
    rows = reading.rows
    plain = reading.plain and bool(rows)
    few = len(rows) <= _FEW_ROWS
    fields = reading.fields
    isfinite = math.isfinite
    for column in declared:
        verdict: ColumnViolation | str | _Undecided | None = _UNDECIDED
        if plain and (fields is None or column.name in fields):
            if few:
                # Cell by cell: for a handful of rows, cheaper than setting up the C-level passes.
                name, passes, numeric = column.name, column.passes, column.type == "number"
                try:
                    for row in rows:
                        value = row[name]
                        kind = type(value)
                        if kind in passes or (numeric and kind is float and isfinite(value)):  # type: ignore[arg-type]
                            continue
                        break
                    else:
                        continue  # every cell has a type that passes: the column is clean
                except KeyError:  # some row lacks the key: the general path tells absent from mistyped
                    pass
            else:
                try:
                    value_types = set(map(type, map(column.cell, rows)))
                except KeyError:
                    pass
                else:
                    if value_types <= column.passes:
                        continue
                    verdict = _settle(rows, column, value_types)
        if verdict is _UNDECIDED:
            verdict = _judge_column(reading, column)
        if verdict is None:
            continue
        if broken is None:
            broken = []  # made only for a result with something to say
        if isinstance(verdict, ColumnViolation):
            broken.append((column, verdict))
        else:
            missing.append(column)
    return None if broken is None else (broken, missing)
