"""What a tool declares, and the definition-time refusals that guard it.

A check runs on a tool only because its author declared something (declared,
never inferred). Declarations are validated once, when the tool is defined,
so a misspelled type fails on the line that wrote it rather than at the first
row of the first production run. Everything here is plain data; nothing
imports OpenTelemetry or a framework.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import fractions
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Union, get_args

from pydantic import BaseModel, ConfigDict

# ── The column-type vocabulary ──────────────────────────────────────────
ColumnType = Literal["number", "string", "boolean", "date"]
COLUMN_TYPES: Final[tuple[ColumnType, ...]] = get_args(ColumnType)

# The word a sniffer needs ("I looked and could not tell") and a declaration
# never does: a column whose type you do not know is a column to leave out.
_REFUSED_WORD: Final = "unknown"


class DeclarationError(ValueError):
    """A tool declared something this library cannot honour.

    Raised only at definition time, never while an agent runs. The message
    names the tool, the field and the fix.
    """


class ColumnDeclaration(BaseModel):
    """The object spelling of one column: its type, and whether it may hold no value.

    ``nullable=True`` says a row may carry ``None`` or lack the key; it is a
    promise about values, not about the column existing at all.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: ColumnType
    nullable: bool = False


@dataclass(frozen=True, slots=True)
class NormalizedColumn:
    """One declared column after normalisation: the only shape checks ever see."""

    name: str
    type: ColumnType
    nullable: bool


ColumnSpec = ColumnType | ColumnDeclaration | Mapping[str, Any]
ResultColumns = Mapping[str, ColumnSpec] | type[BaseModel]

_NUMBER_TYPES: Final[tuple[type, ...]] = (int, float, decimal.Decimal, fractions.Fraction)
_DATE_TYPES: Final[tuple[type, ...]] = (_dt.date, _dt.datetime)


def _types_list() -> str:
    return ", ".join(repr(t) for t in COLUMN_TYPES)


def _refuse(tool_name: str, problem: str, fix: str) -> DeclarationError:
    return DeclarationError(f"Tool {tool_name!r}: {problem} {fix}")


def _column_type_of(tool_name: str, column: str, raw: object) -> ColumnType:
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
        f"result_columns[{column!r}] has type {raw!r}, which is not a column type.",
        f"Use one of {_types_list()}. {hint}",
    )


def _normalize_one(tool_name: str, column: object, spec: object) -> NormalizedColumn:
    if not isinstance(column, str) or not column.strip():
        raise _refuse(
            tool_name,
            f"result_columns has a blank or non-string column name ({column!r}).",
            "Name every column by the key its rows carry.",
        )
    if isinstance(spec, ColumnDeclaration):
        return NormalizedColumn(column, spec.type, spec.nullable)
    if isinstance(spec, Mapping):
        unknown = sorted(str(k) for k in spec if k not in ("type", "nullable"))
        if unknown:
            raise _refuse(
                tool_name,
                f"result_columns[{column!r}] has unknown field(s) {', '.join(map(repr, unknown))}.",
                "The object form takes only 'type' and 'nullable', "
                "e.g. {'type': 'string', 'nullable': True}.",
            )
        if "type" not in spec:
            raise _refuse(
                tool_name,
                f"result_columns[{column!r}] has no 'type'.",
                f"Give it one of {_types_list()}, e.g. {{'type': 'number', 'nullable': True}}.",
            )
        nullable = spec.get("nullable", False)
        if not isinstance(nullable, bool):
            raise _refuse(
                tool_name,
                f"result_columns[{column!r}] has nullable={nullable!r}, which is not a boolean.",
                "Write nullable=True (rows may carry no value) or nullable=False (the strict default).",
            )
        return NormalizedColumn(column, _column_type_of(tool_name, column, spec["type"]), nullable)
    return NormalizedColumn(column, _column_type_of(tool_name, column, spec), False)


def _strip_optional(annotation: object) -> tuple[object, bool]:
    """``X | None`` / ``Optional[X]`` → (X, True); anything else → (itself, False)."""
    origin = typing.get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) == 1 and len(typing.get_args(annotation)) == 2:
            return members[0], True
    return annotation, False


def _column_type_of_annotation(annotation: object) -> ColumnType | None:
    if annotation is bool:  # before int: bool is an int subclass, and exactly the trap
        return "boolean"
    # On Python 3.10 a parametrised generic (``list[int]``) passes
    # ``isinstance(..., type)`` and then makes ``issubclass`` raise; it is never
    # a column type, so it is ruled out first.
    if isinstance(annotation, type) and typing.get_origin(annotation) is None:
        if issubclass(annotation, bool):
            return "boolean"
        if issubclass(annotation, _NUMBER_TYPES):
            return "number"
        if issubclass(annotation, str):
            return "string"
        if issubclass(annotation, _DATE_TYPES):
            return "date"
    return None


def columns_from_model(tool_name: str, model: type[BaseModel]) -> tuple[NormalizedColumn, ...]:
    """Read a pydantic model class as a column declaration, field by field, in field order."""
    out: list[NormalizedColumn] = []
    for name, info in model.model_fields.items():
        inner, nullable = _strip_optional(info.annotation)
        column_type = _column_type_of_annotation(inner)
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


def normalize_columns(tool_name: str, columns: object) -> tuple[NormalizedColumn, ...]:
    """Validate ``columns`` and return it in one shape, in declaration order.

    Raises :class:`DeclarationError` naming the tool, the column and the fix.
    """
    if isinstance(columns, type) and issubclass(columns, BaseModel):
        return columns_from_model(tool_name, columns)
    if not isinstance(columns, Mapping):
        raise _refuse(
            tool_name,
            f"result_columns is {type(columns).__name__}, not a map of column name to type.",
            "Pass a dict such as {'lun': 'number', 'note': {'type': 'string', 'nullable': True}} "
            "or a pydantic model class.",
        )
    if not columns:
        raise _refuse(
            tool_name,
            "result_columns is empty, so it promises nothing.",
            "Declare at least one column, or drop result_columns.",
        )
    return tuple(_normalize_one(tool_name, column, spec) for column, spec in columns.items())


def assert_result_columns(tool_name: str, columns: object) -> None:
    """Refuse a ``result_columns`` declaration this library cannot honour (see :func:`normalize_columns`)."""
    normalize_columns(tool_name, columns)


def assert_arguments_from(tool_name: str, arguments_from: object) -> tuple[str, ...]:
    """Refuse an ``arguments_from`` that is empty, blank, or names the tool itself."""
    if isinstance(arguments_from, str) or not isinstance(arguments_from, Sequence):
        raise _refuse(
            tool_name,
            f"arguments_from is {type(arguments_from).__name__}, not a list of tool names.",
            "Pass the names of the tools whose results this tool's arguments come from, "
            "e.g. arguments_from=['list_hosts'].",
        )
    if not arguments_from:
        raise _refuse(
            tool_name,
            "arguments_from is empty, so it grounds nothing.",
            "Name at least one tool whose results this tool's arguments come from, or drop arguments_from.",
        )
    names: list[str] = []
    for entry in arguments_from:
        if not isinstance(entry, str) or not entry.strip():
            raise _refuse(
                tool_name,
                f"arguments_from has a blank or non-string entry ({entry!r}).",
                "Every entry must be the name of a tool, exactly as it is registered.",
            )
        if entry == tool_name:
            raise _refuse(
                tool_name,
                "arguments_from names the tool itself.",
                "A tool cannot ground its own arguments; name the tool(s) whose results it acts on.",
            )
        if entry not in names:
            names.append(entry)
    return tuple(names)


def assert_tool_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise DeclarationError(
            f"A tool name must be a non-blank string (got {name!r}). Pass name='...' or use a named function."
        )
    return name


@dataclass(frozen=True, slots=True)
class ToolContract:
    """Everything one tool declared, validated and normalised.

    ``input_schema`` is the JSON schema of the tool's arguments as the model
    sees it (used for its ``enum`` fence); ``None`` when unknown.
    """

    name: str
    description: str | None = None
    result_columns: tuple[NormalizedColumn, ...] | None = None
    arguments_from: tuple[str, ...] | None = None
    input_schema: Mapping[str, Any] | None = None


def define_contract(
    name: str,
    *,
    description: str | None = None,
    result_columns: object = None,
    arguments_from: object = None,
    input_schema: Mapping[str, Any] | None = None,
) -> ToolContract:
    """Validate one tool's declarations and return its contract.

    Raises :class:`DeclarationError` (a ``ValueError``) for any declaration
    the library cannot honour; this is the only place the library raises.
    """
    name = assert_tool_name(name)
    columns = None if result_columns is None else normalize_columns(name, result_columns)
    grounds = None if arguments_from is None else assert_arguments_from(name, arguments_from)
    if input_schema is not None and not isinstance(input_schema, Mapping):
        raise _refuse(
            name,
            f"input_schema is {type(input_schema).__name__}, not a JSON schema object.",
            "Pass the tool's argument schema as a dict, or leave it out.",
        )
    return ToolContract(
        name=name,
        description=description,
        result_columns=columns,
        arguments_from=grounds,
        input_schema=input_schema,
    )
