"""Does a value have its column's declared type? Each answer also names what the value is.

Each ``*_offence`` answers ``None`` when the value is fine and otherwise the word for what it is:
one function decides and names, so the exact look at a column calls one function per offender.
They are reached only for values the type sets of :mod:`.rows` did not settle. The column-wide
tests at the end (:func:`floats_finite`, :func:`all_iso_dates`) prove a whole column fine in C;
their "no" only sends its values to the exact look.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import fractions
import math
import numbers
import sys
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from itertools import compress, filterfalse
from types import MappingProxyType
from typing import Final, cast

from ...contracts import ColumnType
from ...contracts.columns import ALWAYS_VALID_TYPES
from ...limits import MAX_ISO_DATE_CHARS

__all__ = [
    "ABSENT",
    "INT_AND_FLOAT",
    "JUST_FLOAT",
    "OFFENCE",
    "VALID_OR_EMPTY_TYPES",
    "Absent",
    "all_iso_dates",
    "floats_finite",
    "is_iso_date",
    "non_finite",
    "strings_all_iso_dates",
    "type_word",
]


class Absent:
    """The cell of a row that lacks the column's key: distinct from ``None``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<absent>"


ABSENT: Final = Absent()


def type_word(value: object) -> str:
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
        return _float_offence(value, type_word(value))
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
            return type_word(value)
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
            return _no_number(which, type_word(value))
    return type_word(value)


def _string_offence(value: object) -> str | None:
    return None if isinstance(value, str) else type_word(value)


def _boolean_offence(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    if _is_numpy(value) and type(value).__name__ in ("bool_", "bool"):
        return None
    return type_word(value)


def is_iso_date(text: str) -> bool:
    """The one definition of "this string is a date"; every faster test must agree with it."""
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
        return None if is_iso_date(value) else "a str that is not an ISO date"
    if isinstance(value, _dt.date):
        # pandas' NaT subclasses datetime; recognised by name, never imported.
        if type(value).__name__ == "NaTType":
            return "NaT (a pandas timestamp that stands for no date)"
        return None
    if _is_numpy(value) and type(value).__name__ == "datetime64":
        return "NaT (a numpy datetime64 that stands for no date)" if value != value else None
    if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
        return f"{type_word(value)} (an epoch number is not a date)"
    return type_word(value)


OFFENCE: Final[Mapping[ColumnType, Callable[[object], str | None]]] = MappingProxyType(
    {
        "number": _number_offence,
        "string": _string_offence,
        "boolean": _boolean_offence,
        "date": _date_offence,
    }
)
"""Per column type, the exact look at one value: ``None`` when it is fine, else what it is."""

_NO_VALUE: Final[frozenset[type]] = frozenset({Absent, type(None)})
VALID_OR_EMPTY_TYPES: Final[Mapping[ColumnType, frozenset[type]]] = MappingProxyType(
    {word: types | _NO_VALUE for word, types in ALWAYS_VALID_TYPES.items()}
)
"""Per column type, the exact classes that pass in a nullable column (an absent key among them)."""


# ── Whole columns at once ───────────────────────────────────────────────

JUST_FLOAT: Final[frozenset[type]] = frozenset({float})
INT_AND_FLOAT: Final[frozenset[type]] = frozenset({int, float})
_JUST_STR: Final[frozenset[type]] = frozenset({str})


def floats_finite(values: list[object], value_types: set[type]) -> bool:
    """True when every exact ``float`` among ``values`` is finite, in one C-level pass.

    Any NaN or infinity makes a float total non-finite, and a total never
    turns finite again. A false "no" (finite floats whose total overflows)
    only costs the exact per-value look at the floats.
    """
    if value_types <= INT_AND_FLOAT:
        # The common column: sum it whole. An int too large for a float
        # raises OverflowError, and then only the floats are summed.
        try:
            return math.isfinite(sum(cast("list[float]", values), 0.0))
        except OverflowError:
            pass
    floats = compress(values, map(JUST_FLOAT.__contains__, map(type, values)))
    return math.isfinite(sum(cast("Iterable[float]", floats), 0.0))


def non_finite(values: list[object], value_types: set[type]) -> list[float]:
    """The exact ``float`` values that are NaN or infinite, in order, picked out in C."""
    if value_types <= INT_AND_FLOAT:
        try:  # every value is an int or a float; an int too large for a float raises
            return list(filterfalse(math.isfinite, cast("list[float]", values)))
        except OverflowError:
            pass
    floats = compress(values, map(JUST_FLOAT.__contains__, map(type, values)))
    return list(filterfalse(math.isfinite, cast("Iterable[float]", floats)))


_DATE_SAMPLE: Final = 64


def all_iso_dates(strings: list[str]) -> bool:
    """True when every string (each exactly a ``str``) is an ISO date, parsed in C; ``False``: not proven.

    Agrees with :func:`is_iso_date` by construction. ``date.fromisoformat`` is tried first (the
    cheapest parse, and what most date columns hold): it takes no string longer than 10
    characters on any supported Python, so its "yes" is one :func:`is_iso_date` gives too. Then
    ``datetime.fromisoformat``, which takes everything ``date.fromisoformat`` does, under the
    same length bound, over the distinct strings when a sample shows that they repeat.
    """
    try:
        deque(map(_dt.date.fromisoformat, strings), maxlen=0)
        return True
    except Exception:  # some string is no plain date: try the wider form
        pass
    distinct: list[str] | set[str] = strings
    # Timestamps repeat in some columns, and then parsing each distinct one once pays; all-distinct
    # ones would only pay for the set. A sample decides.
    if len(strings) > _DATE_SAMPLE and len(set(strings[:_DATE_SAMPLE])) < _DATE_SAMPLE * 3 // 4:
        distinct = set(strings)
    if max(map(len, distinct), default=0) > MAX_ISO_DATE_CHARS:
        return False
    try:
        deque(map(_dt.datetime.fromisoformat, distinct), maxlen=0)
    except Exception:  # any refusal to parse: let the per-value look decide each string
        return False
    return True


def strings_all_iso_dates(values: list[object]) -> bool:
    """True when every exact ``str`` among ``values`` is an ISO date; ``False``: not proven."""
    found = list(compress(values, map(_JUST_STR.__contains__, map(type, values))))
    return all_iso_dates(cast("list[str]", found))
