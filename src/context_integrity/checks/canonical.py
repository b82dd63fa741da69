"""Canonical rendering: when two values are "the same value" for a check.

duplicate-execution compares a call's arguments with an earlier call's, and
unsupported-claim compares an answer's value with a settled fact. Both need the
same, stated notion of equality, so it lives here once:

- JSON-canonical: mappings with their keys sorted (keys compared as strings),
  lists and tuples in order, ``None`` as ``null``;
- numbers normalised: ``int``, ``float``, ``Decimal``, ``Fraction`` and numpy
  scalars compare by value (``30 == 30.0 == Decimal("30")``); a non-integral
  number by its shortest float repr (``Decimal("0.1") == 0.1``); ``bool`` is
  never a number (``True != 1``); NaN and infinities have no canonical form;
- strings exact: case, whitespace and Unicode form all count;
- an ``Enum`` member as its value, a date or datetime as its ISO text, a pydantic
  model as its JSON-mode dump.

Anything else (an opaque object, a structure deeper than
``limits.MAX_ARGUMENT_DEPTH``) has no canonical form: :class:`NotCanonical`, so
a caller can say "could not compare" instead of guessing.
"""

from __future__ import annotations

import datetime
import enum
import json
import math
import numbers
from collections.abc import Mapping

from ..contracts.columns import is_model_class
from ..limits import MAX_ARGUMENT_DEPTH


class NotCanonical(ValueError):
    """The value has no canonical rendering (opaque, non-finite, too deep)."""


def _number(value: numbers.Number) -> str:
    try:
        as_float = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        as_float = math.nan
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if not math.isfinite(as_float):
        raise NotCanonical(f"non-finite number {value!r}")
    if as_float.is_integer():
        return str(int(as_float))
    return repr(as_float)


def _render(value: object, depth: int) -> str:
    if depth > MAX_ARGUMENT_DEPTH:
        raise NotCanonical("nested deeper than the bound")
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return _render(value.value, depth + 1)
    if isinstance(value, str):
        return json.dumps(str(value), ensure_ascii=False)
    if isinstance(value, numbers.Number) and not isinstance(value, complex):
        if type(value).__module__ == "numpy" and type(value).__name__.startswith("bool"):
            return "true" if bool(value) else "false"
        return _number(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return json.dumps(value.isoformat())
    if is_model_class(type(value)):
        return _render(value.model_dump(mode="json"), depth + 1)  # type: ignore[attr-defined]
    if isinstance(value, Mapping):
        items = sorted((str(key), child) for key, child in value.items())
        return "{" + ",".join(f"{json.dumps(k)}:{_render(v, depth + 1)}" for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_render(child, depth + 1) for child in value) + "]"
    raise NotCanonical(f"no canonical form for {type(value).__name__}")


def canonical(value: object) -> str:
    """The canonical rendering of ``value``; raises :class:`NotCanonical` when it has none."""
    try:
        return _render(value, 0)
    except NotCanonical:
        raise
    except Exception as error:  # a hostile mapping or __float__: no form, never a crash
        raise NotCanonical(str(error)) from error


def canonical_or_none(value: object) -> str | None:
    """The canonical rendering, or ``None`` when the value has none. Never raises."""
    try:
        return canonical(value)
    except NotCanonical:
        return None


def canonically_equal(left: object, right: object) -> bool | None:
    """Whether two values are canonically equal; ``None`` when either has no canonical form."""
    a, b = canonical_or_none(left), canonical_or_none(right)
    if a is None or b is None:
        return None
    return a == b
