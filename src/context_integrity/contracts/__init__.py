"""What a tool declares, and the definition-time refusals that guard it.

A check runs on a tool only because its author declared something (declared,
never inferred). Declarations are validated once, when the tool is defined,
so a misspelled type fails on the line that wrote it rather than at the first
row of the first production run. Everything here is plain data; nothing
imports OpenTelemetry or a framework.

- :mod:`.columns`: the column-type vocabulary and ``result_columns``;
- :mod:`.grounds`: ``arguments_from`` and a schema's enum words;
- :mod:`.results`: the one reader of what a tool returned;
- :mod:`.tool`: one tool's whole contract.
"""

from __future__ import annotations

from .columns import (
    COLUMN_TYPES,
    ColumnDeclaration,
    ColumnType,
    NormalizedColumn,
    assert_result_columns,
    columns_from_model,
    normalize_columns,
)
from .errors import DeclarationError
from .grounds import assert_arguments_from, declared_enum_values
from .results import Absence, ResultReading, absent, is_absence, read_result
from .tool import ToolContract, assert_tool_name, define_contract

__all__ = [
    "COLUMN_TYPES",
    "Absence",
    "ColumnDeclaration",
    "ColumnType",
    "DeclarationError",
    "NormalizedColumn",
    "ResultReading",
    "ToolContract",
    "absent",
    "assert_arguments_from",
    "assert_result_columns",
    "assert_tool_name",
    "columns_from_model",
    "declared_enum_values",
    "define_contract",
    "is_absence",
    "normalize_columns",
    "read_result",
]
