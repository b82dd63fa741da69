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
path is built for the clean case: per declared column, one list of cells is
gathered with a comprehension, and the set of the cells' *types* (computed in
C by ``set(map(type, cells))``) usually settles the column at once — a number
column whose cells are all ``int``/``float`` (plus one ``sum`` to prove the
floats finite) needs no per-row Python work. Only a column that fails that
test walks its cells one by one, and that walk counts every row exactly.

Never raises for any result. A result that is not a rowset is
``not-applicable``; a rowset whose own code raises while we read it (a
``Mapping`` whose ``__getitem__`` throws, a dataclass property that throws) is
``unreachable`` — "I could not look", never "nothing was wrong" and never a
finding about data we could not see. Only a bad *declaration* raises
(:class:`~context_integrity.contracts.DeclarationError`), as everywhere else.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import fractions
import math
import numbers
import operator
import sys
from collections import deque
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import compress, repeat
from types import MappingProxyType
from typing import Final, Literal, cast

from ..contracts import ColumnType, NormalizedColumn, normalize_columns
from ..contracts.columns import ALWAYS_VALID_TYPES
from ..contracts.results import ResultReading, read_result
from ..findings import (
    CHECKED_FAIL,
    CHECKED_PASS,
    NOT_APPLICABLE,
    UNREACHABLE,
    Disposition,
    Encounter,
    Finding,
    Kind,
    Subject,
    Witness,
    identity_of,
    tool_subject,
)
from ..limits import MAX_IDENTITY_CHARS, MAX_ISO_DATE_CHARS, MAX_NAMED_IN_REFUSAL, MAX_OTHER_OFFENDER_KINDS
from ..text import plural, render_value
from . import CANARY_EPOCH, as_canary

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

COLUMN_TYPE_CEILING: Final[str] = (
    "This check sees a value's type and never its meaning: it can tell that a column declared "
    "number holds a string, but not that the value ought to have been 0 or that a 0.0 ought to "
    "have been 8, so a column in which every value has the declared type passes and may still be wrong."
)
"""What the column check can never know. One owner; quoted verbatim into every finding."""

ColumnMode = Literal["warn", "enforce"]
"""``warn``: file findings, hand the rows over untouched. ``enforce``: also refuse the result."""


# ── Reading one column ──────────────────────────────────────────────────


class _Absent:
    """The cell of a row that lacks the column's key: distinct from ``None``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<absent>"


_ABSENT: Final = _Absent()


def _cell(row: Mapping[str, object], name: str) -> object:
    """One cell of a non-plain row; raises whatever the row's own code raises."""
    if isinstance(row, dict):
        # ``dict.get`` reads what the row holds: a ``defaultdict`` must not
        # grow a key because we looked for it.
        return dict.get(row, name, _ABSENT)
    try:
        return row[name]
    except KeyError:
        return _ABSENT


# ``dict.get`` as a plain callable, looked up once rather than per column.
_DICT_GET: Final = cast("Callable[[Mapping[str, object], str, object], object]", dict.get)


def _column_cells(reading: ResultReading, name: str) -> Callable[[], Iterable[object]]:
    """A maker of fresh iterators over one column's cells, ``_ABSENT`` standing for a missing key.

    For plain dict rows each iterator is a C-level ``map(dict.get, ...)``: the
    clean path runs no Python bytecode per row. Other rows are read once,
    through :func:`_cell`, and the list is reused.
    """
    if reading.fields is not None and name not in reading.fields:
        count = reading.row_count  # a dataclass row has its fields and no other column
        return lambda: repeat(_ABSENT, count)
    if reading.columns:
        assert reading.fields is not None
        values = reading.columns[reading.fields.index(name)]
        return lambda: values
    rows = reading.rows
    count = len(rows)
    if reading.plain:
        return lambda: map(_DICT_GET, rows, repeat(name, count), repeat(_ABSENT, count))
    cells = [_cell(row, name) for row in rows]
    return lambda: cells


# ── Does one value have the declared type? ──────────────────────────────
#
# Each ``_<type>_offence`` answers ``None`` when the value is fine and
# otherwise the word for what it is — one function decides and names, so the
# slow path calls one function per offender. They are reached only for
# values the fast type sets below did not settle.


def _type_word(value: object) -> str:
    value_type = type(value)
    module = getattr(value_type, "__module__", None) or "?"
    if module in ("builtins", "datetime", "decimal", "fractions"):
        return value_type.__name__
    return f"{module.partition('.')[0]}.{value_type.__qualname__}"


def _no_number(which: str, of: str) -> str:
    return f"{which} (a {of} that stands for no number)"


def _float_offence(value: float, of: str) -> str | None:
    if math.isfinite(value):
        return None
    if value != value:
        return _no_number("NaN", of)
    return _no_number("infinity" if value > 0 else "-infinity", of)


def _is_numpy(value: object) -> bool:
    # numpy is optional: recognise its scalars by their module, never import it.
    return getattr(type(value), "__module__", None) == "numpy"


def _number_offence(value: object) -> str | None:
    if isinstance(value, bool):  # before int: bool IS an int in Python, and exactly the trap
        return "bool"
    if isinstance(value, float):  # float, its subclasses, numpy.float64 among them
        return _float_offence(value, _type_word(value))
    if isinstance(value, int):
        return None
    if isinstance(value, decimal.Decimal):
        if value.is_finite():
            return None
        # is_nan()/is_signed() never raise; comparing a signalling NaN would.
        if value.is_nan():
            return _no_number("NaN", "Decimal")
        return _no_number("-infinity" if value.is_signed() else "infinity", "Decimal")
    if isinstance(value, fractions.Fraction):
        return None
    if _is_numpy(value):
        # numpy registers its integers as numbers.Integral and its floats as
        # numbers.Real; numpy.bool_ is neither. timedelta64 subclasses numpy's
        # signed integer but carries a unit, so it is not a bare number.
        if type(value).__name__ == "timedelta64":
            return _type_word(value)
        if isinstance(value, numbers.Integral):
            return None
        if isinstance(value, numbers.Real):
            # numpy is already imported (this is one of its scalars); its own
            # isfinite keeps a longdouble beyond float range finite, and warns
            # about nothing.
            numpy = sys.modules["numpy"]
            if numpy.isfinite(value):
                return None
            which = "NaN" if numpy.isnan(value) else ("-infinity" if numpy.signbit(value) else "infinity")
            return _no_number(which, _type_word(value))
    return _type_word(value)


def _string_offence(value: object) -> str | None:
    return None if isinstance(value, str) else _type_word(value)


def _boolean_offence(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    if _is_numpy(value) and type(value).__name__ in ("bool_", "bool"):
        return None
    return _type_word(value)


def _is_iso_date(text: str) -> bool:
    # Whatever the running Python accepts. 3.11 widened ``fromisoformat`` to
    # most of ISO 8601 ('20240105', '2024-01-05T10:00Z'); 3.10 takes only what
    # ``isoformat()`` writes ('2024-01-05', '2024-01-05T10:00:00+00:00'). Both
    # accept the plain forms a tool is likely to return.
    if len(text) > MAX_ISO_DATE_CHARS:
        return False
    try:
        _dt.datetime.fromisoformat(text)
        return True
    except Exception:  # ValueError, or a str subclass misbehaving: not an ISO date
        pass
    try:
        _dt.date.fromisoformat(text)
        return True
    except Exception:
        return False


def _date_offence(value: object) -> str | None:
    if isinstance(value, str):
        return None if _is_iso_date(value) else "a str that is not an ISO date"
    if isinstance(value, _dt.date):
        # pandas' NaT subclasses datetime; recognised by name, never imported.
        if type(value).__name__ == "NaTType":
            return "NaT (a pandas timestamp that stands for no date)"
        return None
    if _is_numpy(value) and type(value).__name__ == "datetime64":
        return "NaT (a numpy datetime64 that stands for no date)" if value != value else None
    if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
        return f"{_type_word(value)} (an epoch number is not a date)"
    return _type_word(value)


_OFFENCE: Final[Mapping[ColumnType, Callable[[object], str | None]]] = MappingProxyType(
    {
        "number": _number_offence,
        "string": _string_offence,
        "boolean": _boolean_offence,
        "date": _date_offence,
    }
)

_NO_VALUE: Final[frozenset[type]] = frozenset({_Absent, type(None)})
_VALID_OR_EMPTY_TYPES: Final[Mapping[ColumnType, frozenset[type]]] = MappingProxyType(
    {word: types | _NO_VALUE for word, types in ALWAYS_VALID_TYPES.items()}
)


_JUST_FLOAT: Final[frozenset[type]] = frozenset({float})


_INT_AND_FLOAT: Final[frozenset[type]] = frozenset({int, float})


def _floats_finite(values: list[object], value_types: set[type]) -> bool:
    """True when every exact ``float`` among ``values`` is finite, in one C-level pass.

    Any NaN or infinity makes a float total non-finite, and a total never
    turns finite again. A false "no" (finite floats whose total overflows)
    only costs the exact per-value look at the floats.
    """
    if value_types <= _INT_AND_FLOAT:
        # The common column: sum it whole. An int too large for a float
        # raises OverflowError, and then only the floats are summed.
        try:
            return math.isfinite(sum(cast("list[float]", values), 0.0))
        except OverflowError:
            pass
    floats = compress(values, map(_JUST_FLOAT.__contains__, map(type, values)))
    return math.isfinite(sum(cast("Iterable[float]", floats), 0.0))


def _non_finite_floats(values: list[object]) -> Iterable[object]:
    """The exact ``float`` values that are NaN or infinite, in order, picked out in C."""
    floats = list(compress(values, map(_JUST_FLOAT.__contains__, map(type, values))))
    return compress(floats, map(operator.not_, map(math.isfinite, cast("list[float]", floats))))


_JUST_STR: Final[frozenset[type]] = frozenset({str})


_DATE_SAMPLE: Final = 64


def _strings_all_iso_dates(values: list[object]) -> bool:
    """True when every exact ``str`` among ``values`` is an ISO date, parsing each distinct one once, in C.

    Agrees with :func:`_is_iso_date` by construction: the same length bound,
    and ``datetime.fromisoformat`` accepts everything ``date.fromisoformat``
    does on every supported Python. A "no" only sends the strings to the
    exact per-value look.
    """
    found = list(compress(values, map(_JUST_STR.__contains__, map(type, values))))
    strings: list[object] | set[object] = found
    # Dates repeat in most columns (a year of days in 10,000 rows), and then parsing each distinct
    # one once pays; all-distinct dates (timestamps) only pay for the set. A sample decides.
    if len(found) > _DATE_SAMPLE and len(set(found[:_DATE_SAMPLE])) < _DATE_SAMPLE * 3 // 4:
        strings = set(found)
    if max(map(len, cast("list[str]", strings)), default=0) > MAX_ISO_DATE_CHARS:
        return False
    try:
        deque(map(_dt.datetime.fromisoformat, cast("list[str]", strings)), maxlen=0)
    except Exception:  # any refusal to parse: let the per-value look decide each string
        return False
    return True


# ── Judging the rows ────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class ColumnViolation:
    """One declared column that some rows break: the shape a consumer reads to explain a refusal.

    ``rows`` offenders out of ``of_rows``; ``sample`` is the first offender,
    rendered and clipped; ``got`` names what it is. ``other_kinds`` names, in
    first-seen order, up to a few other kinds of offender in the same column.
    """

    column: str
    declared: ColumnType
    rows: int
    of_rows: int
    sample: str
    got: str
    other_kinds: tuple[str, ...] = ()
    absences: int = 0  # how many of ``rows`` are None or a missing key


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
    if value_types == {_Absent}:
        # Checked FIRST: a column nobody delivered is never also "mistyped",
        # and nullable does not excuse it (it promises about values, not keys).
        return _MISSING_COLUMN
    suspect_types = (
        value_types - (_VALID_OR_EMPTY_TYPES if column.nullable else ALWAYS_VALID_TYPES)[column.type]
    )
    if not suspect_types:
        return None
    # Something needs a look: read the column once more into a list, and
    # pick the suspects out of that instead of reading the rows again.
    values = cells()
    if not isinstance(values, list):
        values = list(values)
    if column.type == "number" and float in suspect_types:
        if _floats_finite(values, value_types):
            suspect_types.discard(float)
        elif suspect_types == _JUST_FLOAT:
            # Only plain floats are suspect, and some are NaN or infinite: those are the offenders,
            # picked out in C, in row order, instead of walking every float in Python.
            if value_types <= _INT_AND_FLOAT:
                try:  # every value is an int or a float here; an int too large for a float raises
                    offenders: Iterable[object] = list(
                        compress(values, map(operator.not_, map(math.isfinite, cast("list[float]", values))))
                    )
                except OverflowError:
                    offenders = _non_finite_floats(values)
            else:
                offenders = _non_finite_floats(values)
            return _walk_column(offenders, column, of_rows=reading.row_count)
    elif column.type == "date" and str in suspect_types and _strings_all_iso_dates(values):
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
    offence = _OFFENCE[column.type]
    nullable = column.nullable
    count = 0
    absences = 0
    first: object = _ABSENT
    got = ""
    others: list[str] = []
    for value in suspects:
        if value is None or value is _ABSENT:
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
    if first is _ABSENT:
        sample = "no such key"
    elif first is None:
        sample = "None"
    else:
        sample = render_value(first)
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


def _plainly_clean(reading: ResultReading, declared: tuple[NormalizedColumn, ...]) -> list[bool] | None:
    """For a plain rowset in which every row has every declared key: per column, whether its cell
    types alone (or one finite sum of its numbers) prove it clean. ``None``: a key is missing.

    Each column is one C-level pass (``map`` of the column's ``itemgetter``, made once per
    declaration), with none of the general path's per-call set-up. It only ever answers "clean"
    where :func:`_judge_column` would answer ``None``; every other column is left to it.
    """
    rows = reading.rows
    clean: list[bool] = []
    fields = reading.fields
    try:
        for column in declared:
            if fields is not None and column.name not in fields:
                clean.append(False)  # no such field: the general path reads it as absent
                continue
            value_types = set(map(type, map(column.cell, rows)))
            if value_types <= column.passes:
                clean.append(True)
            elif column.type == "number" and value_types <= _INT_AND_FLOAT:
                try:
                    clean.append(math.isfinite(sum(map(column.cell, rows), 0.0)))
                except OverflowError:
                    clean.append(False)
            else:
                clean.append(False)
    except KeyError:  # some row lacks a key: the general path tells absent from mistyped
        return None
    return clean


def _judge(
    reading: ResultReading, declared: tuple[NormalizedColumn, ...]
) -> tuple[list[tuple[NormalizedColumn, ColumnViolation]], list[NormalizedColumn]]:
    violations: list[tuple[NormalizedColumn, ColumnViolation]] = []
    missing: list[NormalizedColumn] = []
    clean = _plainly_clean(reading, declared) if reading.plain else None
    for index, column in enumerate(declared):
        if clean is not None and clean[index]:
            continue
        verdict = _judge_column(reading, column)
        if verdict is None:
            continue
        if isinstance(verdict, ColumnViolation):
            violations.append((column, verdict))
        else:
            missing.append(column)
    return violations, missing


# ── Sentences ───────────────────────────────────────────────────────────


# What the boundary did, stated in every finding rather than left to be assumed.
_WARN_OUTCOME: Final = (
    "Warn mode: nothing was blocked, changed or retried; the model reads the rows exactly "
    "as the tool returned them."
)
_ENFORCE_OUTCOME: Final = (
    "Enforce mode: the result was refused, and the model reads a corrective sentence in place of these rows."
)


def _outcome(mode: ColumnMode) -> str:
    return _ENFORCE_OUTCOME if mode == "enforce" else _WARN_OUTCOME


def _declared_words(column: NormalizedColumn) -> str:
    return f"declared {column.type}" + (" (nullable)" if column.nullable else "")


def _offender_phrase(violation: ColumnViolation) -> str:
    if violation.got == "missing":
        first = "a row without that key"
    elif violation.got == "None":
        first = "None"
    else:
        first = f"{violation.sample}, which is {violation.got}"
    if violation.other_kinds:
        return f"the first is {first}; others are {', '.join(violation.other_kinds)}"
    return f"the first is {first}"


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


def _mismatch_message(
    tool_name: str, column: NormalizedColumn, violation: ColumnViolation, call_id: str, mode: ColumnMode
) -> str:
    return (
        f"Tool {tool_name!r} declares column {column.name!r} as {column.type}"
        f"{' (nullable)' if column.nullable else ''}, but in {violation.rows} of "
        f"{plural(violation.of_rows, 'row')} it holds something that is not a {column.type}; "
        f"{_offender_phrase(violation)}. {_nullable_hint(column, violation)}"
        f"{COLUMN_TYPE_CEILING} Call id {call_id}. {_outcome(mode)}"
    )


def _missing_message(
    tool_name: str, column: NormalizedColumn, of_rows: int, call_id: str, mode: ColumnMode
) -> str:
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
    return (
        f"Tool {tool_name!r} declares column {column.name!r} ({column.type}), but {where}{nullable_note}. "
        "No value was delivered to be mistyped, so the cause is in what fetches the rows rather than "
        f"in what formats them. {COLUMN_TYPE_CEILING} Call id {call_id}. {_outcome(mode)}"
    )


def _refusal(tool_name: str, violations: list[ColumnViolation], missing: list[str]) -> str:
    problems: list[str] = []
    for violation in violations[:MAX_NAMED_IN_REFUSAL]:
        if violation.got == "missing":
            first = "a row without the key"
        elif violation.got == "None":
            first = "None"
        else:
            first = f"{violation.sample}, which is {violation.got}"
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


def _witnesses(
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
            value=_declared_words(column),
            epoch=epoch,
            stratum="asserted",
            provenance=f"result_columns on tool {tool_name!r}, as its author declared it",
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


def _result_value(violation: ColumnViolation) -> str:
    held = " or ".join((violation.got, *violation.other_kinds))
    return f"{violation.rows} of {plural(violation.of_rows, 'row')} hold {held} — first: {violation.sample}"


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
    if reading.shape == "unreadable":
        return _UNREACHABLE_ENCOUNTER
    if not reading.is_rowset or not reading.row_count:
        return _OUT_OF_SCOPE
    mode = "enforce" if mode == "enforce" else "warn"
    try:
        broken, missing = _judge(reading, columns)
    except Exception:  # a row's own __getitem__/__eq__ raised: we could not look
        return _UNREACHABLE_ENCOUNTER
    if not broken and not missing:
        return _PASSED

    of_rows = reading.row_count
    subject = tool_subject(tool_name)
    provenance = f"tool call {call_id}: the result as the tool returned it ({plural(of_rows, 'row')})"

    def finding(kind: Kind, column: NormalizedColumn, result_value: str, message: str) -> Finding:
        return Finding(
            kind=kind,
            seam="write",
            subjects=(subject,),
            predicate=column.name,
            witnesses=_witnesses(subject, column, tool_name, epoch, result_value, provenance),
            epoch=epoch,
            message=message,
        )

    def fresh(kind: Kind, column: NormalizedColumn) -> bool:
        return not filed or (
            identity_of(kind, "write", (subject,), column.name)[:MAX_IDENTITY_CHARS] not in filed
        )

    findings = [
        finding(
            "column-type-mismatch",
            column,
            _result_value(violation),
            _mismatch_message(tool_name, column, violation, call_id, mode),
        )
        for column, violation in broken
        if fresh("column-type-mismatch", column)
    ] + [
        finding(
            "missing-column",
            column,
            "present in no row",
            _missing_message(tool_name, column, of_rows, call_id, mode),
        )
        for column in missing
        if fresh("missing-column", column)
    ]
    violations = [violation for _, violation in broken]
    missing_names = [column.name for column in missing]
    return ColumnTypeEncounter(
        findings=findings,
        disposition=CHECKED_FAIL,
        refusal=_refusal(tool_name, violations, missing_names) if mode == "enforce" else None,
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
