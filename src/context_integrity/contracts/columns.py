"""The column-type vocabulary, and the one owner of "which Python type is which column type".

A declaration is validated and normalised here, once, when the tool is
defined: the column check only ever sees :class:`NormalizedColumn` tuples.
"""

from __future__ import annotations

import builtins
import datetime as _dt
import decimal
import fractions
import operator
import sys
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, Union, get_args

from ..limits import MAX_NAMED_IN_REFUSAL
from ..text import repr_clipped
from .errors import did_you_mean
from .errors import refuse as _refuse

if TYPE_CHECKING:
    from pydantic import BaseModel

# ── The column-type vocabulary ──────────────────────────────────────────
ColumnType = Literal["number", "string", "boolean", "date"]
COLUMN_TYPES: Final[tuple[ColumnType, ...]] = get_args(ColumnType)

# The word a sniffer needs ("I looked and could not tell") and a declaration
# never does: a column whose type you do not know is a column to leave out.
_REFUSED_WORD: Final = "unknown"


@dataclass(frozen=True, slots=True, kw_only=True)
class ColumnDeclaration:
    """The object spelling of one column: its type, and whether it may hold no value.

    ``nullable=True`` says a row may carry ``None`` or lack the key; it is a
    promise about values, not about the column existing at all.

    A frozen dataclass, validated on construction: a pydantic model here would
    import pydantic (and run its plugin loader, which imports every installed
    plugin such as logfire) on ``import context_integrity``. Only keyword
    fields are accepted, as the model accepted them.
    """

    type: ColumnType
    nullable: bool = False

    def __post_init__(self) -> None:
        if self.type not in COLUMN_TYPES:
            raise ValueError(
                f"ColumnDeclaration type is {self.type!r}, which is not a column type. "
                f"Use one of {_types_list()}."
            )
        if not isinstance(self.nullable, bool):
            raise ValueError(
                f"ColumnDeclaration nullable is {self.nullable!r}, which is not a boolean. "
                "Write nullable=True (rows may carry no value) or nullable=False (the strict default)."
            )


@dataclass(frozen=True, slots=True)
class NormalizedColumn:
    """One declared column after normalisation: the only shape checks ever see.

    ``passes`` is decided here, once per declaration rather than once per call: the exact
    classes whose every value is fine in this column (``None``'s among them when nullable).
    """

    name: str
    type: ColumnType
    nullable: bool
    passes: frozenset[builtins.type] = field(init=False, compare=False, repr=False)
    # ``row[name]`` as a C-level callable, for reading the column out of plain dict rows.
    cell: operator.itemgetter[Any] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        passes = ALWAYS_VALID_TYPES.get(self.type, frozenset())
        object.__setattr__(self, "passes", passes | {type(None)} if self.nullable else passes)
        object.__setattr__(self, "cell", operator.itemgetter(self.name))


ColumnSpec: TypeAlias = "ColumnType | ColumnDeclaration | Mapping[str, Any]"
ResultColumns: TypeAlias = "Mapping[str, ColumnSpec] | type[BaseModel]"


def is_model_class(value: object) -> bool:
    """Whether ``value`` is a pydantic model class, without importing pydantic.

    No such class can exist unless something already imported pydantic, so the
    library never pays for pydantic (or its plugins) on behalf of a host that
    does not use it.
    """
    pydantic = sys.modules.get("pydantic")
    if pydantic is None or not isinstance(value, type):
        return False
    return issubclass(value, pydantic.BaseModel)


# The Python classes each column type is made of. ``bool`` is deliberately not a number (it is an
# ``int`` subclass, and exactly the trap the check exists to catch).
NUMBER_TYPES: Final[tuple[type, ...]] = (int, float, decimal.Decimal, fractions.Fraction)
DATE_TYPES: Final[tuple[type, ...]] = (_dt.date, _dt.datetime)

# Exact classes whose every value has the column type, without a look at the value. ``float`` is not
# among them (NaN and the infinities are floats), nor is anything whose subclasses could differ.
ALWAYS_VALID_TYPES: Final[Mapping[ColumnType, frozenset[type]]] = types.MappingProxyType(
    {
        "number": frozenset({int}),
        "string": frozenset({str}),
        "boolean": frozenset({bool}),
        "date": frozenset({_dt.date, _dt.datetime}),
    }
)


def _types_list() -> str:
    return ", ".join(repr(t) for t in COLUMN_TYPES)


def _column_type_of(tool_name: str, column: str, raw: object, at: tuple[str, ...]) -> ColumnType:
    for word in COLUMN_TYPES:
        if raw == word:
            return word
    if raw == _REFUSED_WORD:
        hint = (
            f"There is deliberately no {_REFUSED_WORD!r}: a column whose type you do not know "
            "is a column to leave undeclared (unlisted columns are allowed and never judged)."
        )
    elif isinstance(raw, type):
        hint = (
            f"Write the type as one of the four words, not the Python class {raw.__name__!r} "
            "(int/float/Decimal -> 'number', str -> 'string', bool -> 'boolean', date/datetime -> 'date')."
        )
    else:
        hint = f"There is deliberately no {_REFUSED_WORD!r}; leave a column you cannot type undeclared."
    raise _refuse(
        tool_name,
        f"result_columns[{repr_clipped(column)}] has type {repr_clipped(raw)}, which is not a column type.",
        f"Use one of {_types_list()}. {hint}",
        at=at,
    )


def _listed(values: list[object]) -> str:
    """Values a message names, each quoted clipped, the first few only (the rest counted)."""
    shown = ", ".join(repr_clipped(value) for value in values[:MAX_NAMED_IN_REFUSAL])
    more = len(values) - MAX_NAMED_IN_REFUSAL
    return f"{shown} and {more} more" if more > 0 else shown


def _normalize_one(tool_name: str, column: object, spec: object) -> NormalizedColumn:
    if not isinstance(column, str) or not column.strip():
        raise _refuse(
            tool_name,
            f"result_columns has a blank or non-string column name ({repr_clipped(column)}).",
            "Name every column by the key its rows carry.",
            at=("result_columns", str(column)),
        )
    if isinstance(spec, ColumnDeclaration):
        return NormalizedColumn(column, spec.type, spec.nullable)
    if isinstance(spec, Mapping):
        unknown = [k for k in spec if k not in ("type", "nullable")]
        if unknown:
            raise _refuse(
                tool_name,
                f"result_columns[{repr_clipped(column)}] has unknown field(s) {_listed(unknown)}."
                f"{did_you_mean(str(unknown[0]), ('type', 'nullable'))}",
                "The object form takes only 'type' and 'nullable', "
                "e.g. {'type': 'string', 'nullable': True}.",
                at=("result_columns", column, unknown[0]),
            )
        if "type" not in spec:
            raise _refuse(
                tool_name,
                f"result_columns[{repr_clipped(column)}] has no 'type'.",
                f"Give it one of {_types_list()}, e.g. {{'type': 'number', 'nullable': True}}.",
                at=("result_columns", column),
            )
        nullable = spec.get("nullable", False)
        if not isinstance(nullable, bool):
            raise _refuse(
                tool_name,
                f"result_columns[{repr_clipped(column)}] has nullable={repr_clipped(nullable)}, which is not a boolean.",
                "Write nullable=True (rows may carry no value) or nullable=False (the strict default).",
                at=("result_columns", column, "nullable"),
            )
        column_type = _column_type_of(tool_name, column, spec["type"], ("result_columns", column, "type"))
        return NormalizedColumn(column, column_type, nullable)
    return NormalizedColumn(
        column, _column_type_of(tool_name, column, spec, ("result_columns", column)), False
    )


def _strip_optional(annotation: object) -> tuple[object, bool]:
    """``X | None`` / ``Optional[X]`` → (X, True); anything else → (itself, False)."""
    origin = typing.get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) == 1 and len(typing.get_args(annotation)) == 2:
            return members[0], True
    return annotation, False


def column_type_of_annotation(annotation: object) -> ColumnType | None:
    if annotation is bool:  # before int: bool is an int subclass, and exactly the trap
        return "boolean"
    # On Python 3.10 a parametrised generic (``list[int]``) passes
    # ``isinstance(..., type)`` and then makes ``issubclass`` raise; it is never
    # a column type, so it is ruled out first.
    if isinstance(annotation, type) and typing.get_origin(annotation) is None:
        if issubclass(annotation, bool):
            return "boolean"
        if issubclass(annotation, NUMBER_TYPES):
            return "number"
        if issubclass(annotation, str):
            return "string"
        if issubclass(annotation, DATE_TYPES):
            return "date"
    return None


def columns_from_model(tool_name: str, model: type[BaseModel]) -> tuple[NormalizedColumn, ...]:
    """Read a pydantic model class as a column declaration, field by field, in field order."""
    out: list[NormalizedColumn] = []
    for name, info in model.model_fields.items():
        inner, nullable = _strip_optional(info.annotation)
        column_type = column_type_of_annotation(inner)
        if column_type is None:
            raise _refuse(
                tool_name,
                f"result_columns model {model.__name__!r} field {name!r} has type {info.annotation!r}, "
                "which maps to no column type.",
                "Model fields must be int/float/Decimal (number), str (string), bool (boolean) or "
                "date/datetime (date), optionally '| None'; declare other fields' columns by hand or "
                "leave them out.",
            )
        out.append(NormalizedColumn(name, column_type, nullable))
    if not out:
        raise _refuse(
            tool_name,
            f"result_columns model {model.__name__!r} has no fields, so it promises nothing.",
            "Declare at least one column, or drop result_columns.",
        )
    return tuple(out)


_NORMALIZED: Final = {NormalizedColumn}


def normalize_columns(tool_name: str, columns: object) -> tuple[NormalizedColumn, ...]:
    """Validate ``columns`` and return it in one shape, in declaration order.

    Raises :class:`DeclarationError` naming the tool, the column and the fix.
    """
    if type(columns) is tuple and columns and set(map(type, columns)) == _NORMALIZED:
        return columns  # already normalised: idempotent, so a contract's tuple can be handed back in
    if is_model_class(columns):
        return columns_from_model(tool_name, columns)  # type: ignore[arg-type]
    if not isinstance(columns, Mapping):
        raise _refuse(
            tool_name,
            f"result_columns is {type(columns).__name__}, not a map of column name to type.",
            "Pass a dict such as {'lun': 'number', 'note': {'type': 'string', 'nullable': True}} "
            "or a pydantic model class.",
            at=("result_columns",),
        )
    if not columns:
        raise _refuse(
            tool_name,
            "result_columns is empty, so it promises nothing.",
            "Declare at least one column, or drop result_columns.",
            at=("result_columns",),
        )
    return tuple(_normalize_one(tool_name, column, spec) for column, spec in columns.items())


def assert_result_columns(tool_name: str, columns: object) -> None:
    """Refuse a ``result_columns`` declaration this library cannot honour (see :func:`normalize_columns`)."""
    normalize_columns(tool_name, columns)
