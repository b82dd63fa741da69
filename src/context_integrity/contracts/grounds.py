"""Where a tool's arguments come from (``arguments_from``), and the words its schema enumerates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .. import limits
from ..text import repr_clipped
from .errors import refuse as _refuse


def assert_arguments_from(tool_name: str, arguments_from: object) -> tuple[str, ...]:
    """Refuse an ``arguments_from`` that is empty, blank, or names the tool itself.

    Linear in the entries (a server may list thousands): repeats are dropped by a dict, in order.
    """
    if isinstance(arguments_from, str) or not isinstance(arguments_from, Sequence):
        raise _refuse(
            tool_name,
            f"arguments_from is {type(arguments_from).__name__}, not a list of tool names.",
            "Pass the names of the tools whose results this tool's arguments come from, "
            "e.g. arguments_from=['list_hosts'].",
            at=("arguments_from",),
        )
    if not arguments_from:
        raise _refuse(
            tool_name,
            "arguments_from is empty, so it grounds nothing.",
            "Name at least one tool whose results this tool's arguments come from, or drop arguments_from.",
            at=("arguments_from",),
        )
    names: dict[str, None] = {}
    for index, entry in enumerate(arguments_from):
        if not isinstance(entry, str) or not entry.strip():
            raise _refuse(
                tool_name,
                f"arguments_from has a blank or non-string entry ({repr_clipped(entry)}).",
                "Every entry must be the name of a tool, exactly as it is registered.",
                at=("arguments_from", index),
            )
        if entry == tool_name:
            raise _refuse(
                tool_name,
                "arguments_from names the tool itself.",
                "A tool cannot ground its own arguments; name the tool(s) whose results it acts on.",
                at=("arguments_from", index),
            )
        names[entry] = None
    return tuple(names)


def _collect_enums(node: object, depth: int, out: set[str]) -> None:
    if depth > limits.MAX_SCHEMA_DEPTH:
        return
    if isinstance(node, (dict, Mapping)):  # dict first: a schema dict is told without the ABC check
        enum = node.get("enum")
        if isinstance(enum, (list, tuple)):
            for member in enum:
                if isinstance(member, str):
                    out.add(member.strip().lower())
        for child in node.values():
            _collect_enums(child, depth + 1, out)
    elif isinstance(node, (list, tuple)):
        for child in node:
            _collect_enums(child, depth + 1, out)


def declared_enum_values(input_schema: object) -> frozenset[str]:
    """Every string in any ``enum`` array anywhere in a tool's input schema, lowercased.

    Deliberately flat: a value one property enumerates excuses it in every
    property, because the schema told the model the word exists. Walked to
    :data:`limits.MAX_SCHEMA_DEPTH`; an absent or malformed schema declares
    nothing. Never raises.
    """
    out: set[str] = set()
    # A plain try rather than ``contextlib.suppress``: this runs for every armed call.
    try:  # noqa: SIM105
        _collect_enums(input_schema, 0, out)
    except Exception:  # a hostile mapping: keep what was read before it failed
        pass
    return frozenset(out)


# Schema keywords whose value maps names to sub-schemas: a key there named "enum" is a property.
_NAMED_SCHEMAS = frozenset({"properties", "patternProperties", "$defs", "definitions"})


def _bad_enum(node: object, depth: int, named: bool) -> tuple[object] | None:
    """``(the malformed enum,)`` of the first one found, else ``None``."""
    if depth > limits.MAX_SCHEMA_DEPTH:
        return None
    if isinstance(node, Mapping):
        if not named and "enum" in node:
            enum = node["enum"]
            if not isinstance(enum, (list, tuple)) or not enum:
                return (enum,)
        for key, child in node.items():
            found = _bad_enum(child, depth + 1, not named and key in _NAMED_SCHEMAS)
            if found is not None:
                return found
    elif isinstance(node, (list, tuple)):
        for child in node:
            found = _bad_enum(child, depth + 1, False)
            if found is not None:
                return found
    return None


def assert_enums(tool_name: str, input_schema: Mapping[str, object]) -> None:
    """Refuse an ``enum`` that is not a non-empty array: the model would be told words that are not."""
    bad = _bad_enum(input_schema, 0, False)
    if bad is not None:
        (found,) = bad
        raise _refuse(
            tool_name,
            f"input_schema has an enum that is {type(found).__name__} {repr_clipped(found)}, not a list of values.",
            'Write each enum as a non-empty JSON array, e.g. "enum": ["gold", "silver"].',
            at=("input_schema",),
        )
