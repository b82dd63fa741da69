"""One tool's contract: everything it declared, validated and normalised once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..text import repr_clipped
from .columns import NormalizedColumn, normalize_columns
from .errors import DeclarationError
from .errors import refuse as _refuse
from .grounds import assert_arguments_from, assert_enums, declared_enum_values
from .semantic import SettledFields, assert_settles


def assert_tool_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise DeclarationError(
            f"A tool name must be a non-blank string (got {repr_clipped(name)}). Pass name='...' or use a named function."
        )
    return name


def assert_result_kind(tool_name: str, result_kind: object) -> str:
    """Refuse a ``result_kind`` that is not a non-blank string (e.g. ``'dataset/rows'``)."""
    if not isinstance(result_kind, str) or not result_kind.strip():
        raise _refuse(
            tool_name,
            f"result_kind is {repr_clipped(result_kind)}, not a non-blank string.",
            "Name what the result is, e.g. result_kind='dataset/rows', or leave it out.",
            at=("result_kind",),
        )
    return result_kind


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
    # Its effect must happen once per run (a ticket opened, a payment sent): arms duplicate-execution.
    once_per_run: bool = False
    # What the result IS (an artifact kind such as 'dataset/rows'): informational, travels over MCP.
    result_kind: str | None = None
    # The structured result arrives wrapped as {"result": [...]} (an MCP output schema said so).
    result_wrapped: bool = False
    # Which field of its rows names the entity and which settle facts (unsupported-claim's evidence
    # from a tool that returns plain rows rather than ci.semantic(...)).
    settles: SettledFields | None = None
    # The schema's enum words, lowered once here so no check re-reads the schema per call.
    enum_values: frozenset[str] = field(default=frozenset(), compare=False)
    # (field, reason) for each declaration its source made that could not be read (an MCP server's
    # malformed or over-cap ``_meta``): the checks that field arms read unreachable for this tool.
    unread: tuple[tuple[str, str], ...] = ()

    def unread_reason(self, field_name: str) -> str | None:
        """Why ``field_name`` was declared for this tool and could not be read; ``None`` if it was not."""
        for name, reason in self.unread:
            if name == field_name:
                return reason
        return None


def define_contract(
    name: str,
    *,
    description: str | None = None,
    result_columns: object = None,
    arguments_from: object = None,
    input_schema: Mapping[str, Any] | None = None,
    once_per_run: object = False,
    result_kind: object = None,
    result_wrapped: object = False,
    settles: object = None,
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
            at=("input_schema",),
        )
    if not isinstance(once_per_run, bool):
        raise _refuse(
            name,
            f"once_per_run is {type(once_per_run).__name__} ({repr_clipped(once_per_run)}), not a boolean.",
            "Pass once_per_run=True for a tool whose effect must happen once per run, or leave it out.",
            at=("once_per_run",),
        )
    if not isinstance(result_wrapped, bool):
        raise _refuse(
            name,
            f"result_wrapped is {type(result_wrapped).__name__} ({result_wrapped!r}), not a boolean.",
            'Pass result_wrapped=True when the structured result arrives as {"result": [...]}, or leave it out.',
            at=("result_wrapped",),
        )
    if input_schema is not None:
        assert_enums(name, input_schema)
    if description is not None and not isinstance(description, str):
        raise _refuse(
            name,
            f"description is {type(description).__name__}, not text.",
            "Pass a string, or leave it out.",
            at=("description",),
        )
    kind = None if result_kind is None else assert_result_kind(name, result_kind)
    settled = None if settles is None else assert_settles(name, settles)
    return ToolContract(
        name=name,
        result_kind=kind,
        result_wrapped=result_wrapped,
        description=description,
        result_columns=columns,
        arguments_from=grounds,
        input_schema=input_schema,
        once_per_run=once_per_run,
        enum_values=declared_enum_values(input_schema),
        settles=settled,
    )
