"""Declarations that travel with a tool: MCP ``_meta`` in both directions, and an output schema.

A tool served from a remote catalogue is exactly where a numeric column arriving as text goes
unnoticed: the consumer holding the rows has no way to know what the producer meant. So the
declarations a consumer-side check reads (``result_columns``, ``arguments_from``, ``result_kind``)
ride the tool definition's ``_meta`` under one key this library owns, :data:`META_KEY`; nothing that
governs execution ever travels.

The key is ``io.github.context-integrity/contract``: a reverse-DNS prefix (``io.github.<owner>``, the
convention the MCP Registry uses for GitHub-hosted namespaces) whose labels are letters, digits and
hyphens only, with no ``mcp`` or ``modelcontextprotocol`` label in any position (the 2025-06-18
revision reserves such a label anywhere in the prefix; later ones reserve it as the second label), so
it is valid under every revision of the spec; and the name ``contract`` says what the value is.

Reading is for data from a server this process does not control: it never raises. Each known field
is validated by the very same definition-time assert a local tool's declaration goes through; a
field that fails is dropped with one warning per (server, tool, field), and the tool keeps the rest.
Unknown fields are ignored (a newer server, an older client). A declaration over a cap of
:mod:`~context_integrity.limits` (``MAX_SERVED_COLUMNS``, ``MAX_SERVED_GROUNDS``,
``MAX_SERVED_NAME_CHARS``) is refused whole, with one warning: a server that lists 100,000 columns
is making every judged call expensive, not describing a tool. Either way what could not be read is
kept with its reason (:attr:`TravelledDeclaration.unread`), so the checks it would have armed read
``unreachable`` for the tool, never ``not-applicable``. Every value a warning quotes is clipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .._memo import ToldOnce
from ..findings import Finding, finding_identity
from ..limits import (
    MAX_IDENTITY_CHARS,
    MAX_SCHEMA_DEPTH,
    MAX_SERVED_COLUMNS,
    MAX_SERVED_GROUNDS,
    MAX_SERVED_NAME_CHARS,
    MAX_WARNED_DECLARATIONS,
)
from ..text import repr_clipped
from .columns import ColumnType, NormalizedColumn, normalize_columns
from .errors import DeclarationError
from .grounds import assert_arguments_from
from .tool import ToolContract, assert_result_kind

logger = logging.getLogger("context_integrity")

META_KEY: Final = "io.github.context-integrity/contract"
"""The ``_meta`` key of a tool definition's declarations (see the module docstring for its spelling)."""

RESULT_META_KEY: Final = "io.github.context-integrity/result"
"""The ``_meta`` key of a tool result: what the server that judged it found (``judged``), and that
its structured content is a semantic envelope (``semantic``). Spelled as :data:`META_KEY` is."""

JUDGED: Final = "judged"
SEMANTIC: Final = "semantic"
# What a judged stamp names, at most: the findings one result files of each kind are bounded
# (MAX_COLUMN_FINDINGS_PER_KIND), and a client reads no more of a stamp than a server would write.
_MAX_STAMPED_FINDINGS: Final = 64

# The fields that travel, each with the definition-time assert that vets it on arrival.
TRAVELLING_FIELDS: Final[tuple[str, ...]] = ("result_columns", "arguments_from", "result_kind")


def contract_meta(contract: ToolContract) -> dict[str, Any] | None:
    """The ``_meta`` value for one tool: its travelling declarations, or ``None`` when it has none.

    A tool without declarations publishes no key at all (never an empty bag).
    """
    bag: dict[str, Any] = {}
    if contract.result_columns:
        bag["result_columns"] = {
            column.name: {"type": column.type, "nullable": column.nullable}
            if column.nullable
            else column.type
            for column in contract.result_columns
        }
    if contract.arguments_from:
        bag["arguments_from"] = list(contract.arguments_from)
    if contract.result_kind:
        bag["result_kind"] = contract.result_kind
    return bag or None


def with_contract_meta(
    meta: Mapping[str, Any] | None, contract: ToolContract | None
) -> dict[str, Any] | None:
    """``meta`` with our key set from ``contract`` (other keys kept); unchanged when nothing travels."""
    bag = contract_meta(contract) if contract is not None else None
    if bag is None:
        return dict(meta) if meta is not None else None
    return {**(dict(meta) if isinstance(meta, Mapping) else {}), META_KEY: bag}


@dataclass(slots=True)
class _WarnedOnce:
    """Which (server, tool, field) were warned about; bounded, then repeats go to debug."""

    seen: ToldOnce[tuple[str, str, str]] = field(default_factory=lambda: ToldOnce(MAX_WARNED_DECLARATIONS))

    def warn(self, server: str, tool: str, field_name: str, rule: str) -> None:
        if self._first(server, tool, field_name, rule):
            logger.warning(
                "context_integrity: MCP server %s, tool %s: dropped the declaration %s (%s). "
                "The tool is still registered with the rest of its contract.",
                repr_clipped(server),
                repr_clipped(tool),
                repr_clipped(field_name),
                rule,
            )

    def refuse(self, server: str, tool: str, reason: str) -> None:
        """A whole contract refused (over a cap): one warning per (server, tool)."""
        if self._first(server, tool, _WHOLE, reason):
            logger.warning(
                "context_integrity: MCP server %s, tool %s: refused its contract (%s). Nothing it "
                "declares is judged; the checks it would arm read unreachable for the tool.",
                repr_clipped(server),
                repr_clipped(tool),
                reason,
            )

    def _first(self, server: str, tool: str, field_name: str, rule: str) -> bool:
        key = (server[:MAX_SERVED_NAME_CHARS], tool[:MAX_SERVED_NAME_CHARS], field_name)
        if key in self.seen:
            return False
        if not self.seen.first(key):  # past the bound
            logger.debug("context_integrity: %s", rule)
            return False
        return True


# The key a refused contract is warned about under: no field of that name can exist.
_WHOLE: Final = "*"


WARNED: Final = _WarnedOnce()


@dataclass(frozen=True, slots=True)
class TravelledDeclaration:
    """What a remote tool declared, each field already vetted; absent fields are ``None``.

    ``unread`` names each field the server declared that could not be taken (dropped as malformed,
    or the whole contract refused over a cap), with the reason: the tool's contract keeps it, so the
    checks that field arms read ``unreachable`` rather than ``not-applicable``.
    """

    result_columns: tuple[NormalizedColumn, ...] | None = None
    arguments_from: tuple[str, ...] | None = None
    result_kind: str | None = None
    unread: tuple[tuple[str, str], ...] = ()

    def as_options(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in TRAVELLING_FIELDS if getattr(self, name) is not None}


def _vet(
    bag: Mapping[str, Any],
    name: str,
    vet: Callable[[object], Any],
    *,
    server: str,
    tool: str,
    unread: list[tuple[str, str]],
) -> Any:
    if name not in bag:
        return None
    try:
        return vet(bag[name])
    except DeclarationError as refused:
        rule = str(refused)
    except Exception as odd:  # a value so strange the assert itself tripped: still only this field
        rule = f"{type(odd).__name__} while reading it"
    WARNED.warn(server, tool, name, rule)
    unread.append((name, f"MCP server {repr_clipped(server)} declared {name} for it, dropped: {rule}"))
    return None


def _longest(names: Iterable[object]) -> int:
    return max((len(n) for n in names if isinstance(n, str)), default=0)


def over_a_cap(bag: Mapping[str, Any]) -> str | None:
    """Why a served declaration is refused whole, or ``None``: more columns or grounds than a served
    contract may declare, or a name longer than one may be. Counted before anything is vetted."""
    columns, grounds, kind = bag.get("result_columns"), bag.get("arguments_from"), bag.get("result_kind")
    counted = (
        ("result_columns", columns if isinstance(columns, Mapping) else None, MAX_SERVED_COLUMNS),
        ("arguments_from", grounds if isinstance(grounds, (list, tuple)) else None, MAX_SERVED_GROUNDS),
    )
    for field_name, names, cap in counted:
        if names is None:
            continue
        if len(names) > cap:
            return f"it declares {len(names):,} {field_name}, more than the {cap:,} a served contract may"
        longest = _longest(names)
        if longest > MAX_SERVED_NAME_CHARS:
            return (
                f"a name in its {field_name} is {longest:,} characters long, more than the "
                f"{MAX_SERVED_NAME_CHARS} a served name may be"
            )
    if isinstance(kind, str) and len(kind) > MAX_SERVED_NAME_CHARS:
        return (
            f"its result_kind is {len(kind):,} characters long, more than the "
            f"{MAX_SERVED_NAME_CHARS} a served name may be"
        )
    return None


def read_contract_meta(meta: object, *, server: str, tool: str) -> TravelledDeclaration:
    """Read our key out of a tool definition's ``_meta``. Never raises.

    No ``_meta``, no key, or a key whose value is not an object: nothing declared. A field present
    with ``null`` is validated (and so warned about), unlike an absent one.
    """
    try:
        if not isinstance(meta, Mapping):
            return TravelledDeclaration()
        bag = meta.get(META_KEY)
        if not isinstance(bag, Mapping):
            if bag is None:
                return TravelledDeclaration()
            rule = f"its value is {type(bag).__name__}, not an object"
            WARNED.warn(server, tool, META_KEY, rule)
            why = f"MCP server {repr_clipped(server)} declared it under {META_KEY}, unreadable: {rule}"
            return TravelledDeclaration(unread=tuple((f, why) for f in TRAVELLING_FIELDS))
        refused = over_a_cap(bag)
        if refused is not None:
            WARNED.refuse(server, tool, refused)
            why = f"MCP server {repr_clipped(server)} declared it, and its contract was refused: {refused}"
            return TravelledDeclaration(unread=tuple((f, why) for f in TRAVELLING_FIELDS if f in bag))
        unread: list[tuple[str, str]] = []
        return TravelledDeclaration(
            result_columns=_vet(
                bag,
                "result_columns",
                lambda v: normalize_columns(tool, v),
                server=server,
                tool=tool,
                unread=unread,
            ),
            arguments_from=_vet(
                bag,
                "arguments_from",
                lambda v: assert_arguments_from(tool, v),
                server=server,
                tool=tool,
                unread=unread,
            ),
            result_kind=_vet(
                bag,
                "result_kind",
                lambda v: assert_result_kind(tool, v),
                server=server,
                tool=tool,
                unread=unread,
            ),
            unread=tuple(unread),
        )
    except Exception:  # a hostile mapping: nothing from it
        return TravelledDeclaration()


# ── What a server says of a result ──────────────────────────────────────


def judged_stamp(
    server: str, contract: ToolContract, rows: Mapping[str, str], findings: list[Finding]
) -> dict[str, Any]:
    """The ``judged`` value a server puts in a result's ``_meta``: its name, the contract it judged
    by (as it travels), each row's disposition (``kind@seam``), and the findings it filed (kind,
    predicate, identity): the client records the result as judged there and files none of them again."""
    return {
        "server": server,
        "contract": contract_meta(contract),
        "rows": dict(rows),
        "findings": [
            {
                "kind": finding.kind,
                "predicate": finding.predicate,
                "identity": finding_identity(finding, with_epoch=False)[:MAX_IDENTITY_CHARS],
            }
            for finding in findings[:_MAX_STAMPED_FINDINGS]
        ],
    }


@dataclass(frozen=True, slots=True)
class ServerVerdict:
    """What a server said it found in a result it judged (read back from the result's ``_meta``).

    ``contract`` is the declaration it judged by, as it travels (compared with the client's own);
    ``rows`` each row's disposition by ``kind@seam``; ``filed`` the (kind, predicate) of each finding
    it filed.
    """

    server: str
    contract: object
    rows: Mapping[str, str]
    filed: frozenset[tuple[str, str | None]]


def _text(value: object) -> str | None:
    return value[:MAX_SERVED_NAME_CHARS] if isinstance(value, str) else None


def read_server_verdict(result_meta: object) -> ServerVerdict | None:
    """The ``judged`` stamp of a result's ``_meta`` under :data:`RESULT_META_KEY`, else ``None``.

    Data from a server: never raises, reads a bounded number of findings, clips every string.
    """
    try:
        bag = result_meta.get(RESULT_META_KEY) if isinstance(result_meta, Mapping) else None
        judged = bag.get(JUDGED) if isinstance(bag, Mapping) else None
        if not isinstance(judged, Mapping):
            return None
        rows = judged.get("rows")
        found = judged.get("findings")
        filed: set[tuple[str, str | None]] = set()
        for item in found[:_MAX_STAMPED_FINDINGS] if isinstance(found, list) else ():
            kind = _text(item.get("kind")) if isinstance(item, Mapping) else None
            if kind is not None:
                filed.add((kind, _text(item.get("predicate"))))
        return ServerVerdict(
            server=_text(judged.get("server")) or "mcp",
            contract=judged.get("contract"),
            rows={
                str(row)[:MAX_SERVED_NAME_CHARS]: disposition
                for row, disposition in list(rows.items())[:_MAX_STAMPED_FINDINGS]
                if isinstance(disposition, str)
            }
            if isinstance(rows, Mapping)
            else {},
            filed=frozenset(filed),
        )
    except Exception:  # a hostile mapping: no verdict taken from it
        return None


def is_marked_semantic(result_meta: object) -> bool:
    """Whether a result's ``_meta`` marks its structured content a semantic envelope. Never raises."""
    try:
        bag = result_meta.get(RESULT_META_KEY) if isinstance(result_meta, Mapping) else None
        return isinstance(bag, Mapping) and bag.get(SEMANTIC) is True
    except Exception:
        return False


def with_result_meta(meta: object, **stamp: object) -> dict[str, Any]:
    """A result's ``_meta`` with our key's fields set from ``stamp`` (other keys, and fields, kept)."""
    out = dict(meta) if isinstance(meta, Mapping) else {}
    held = out.get(RESULT_META_KEY)
    out[RESULT_META_KEY] = {**(dict(held) if isinstance(held, Mapping) else {}), **stamp}
    return out


# ── An output schema as a column declaration ────────────────────────────

_JSON_TYPES: Final[Mapping[str, ColumnType]] = {
    "integer": "number",
    "number": "number",
    "string": "string",
    "boolean": "boolean",
}
_DATE_FORMATS: Final = frozenset({"date", "date-time"})


def _resolve(node: object, root: Mapping[str, Any], depth: int = 0) -> object:
    """Follow a local ``$ref`` (``#/$defs/Row``), bounded."""
    while isinstance(node, Mapping) and isinstance(node.get("$ref"), str) and depth < MAX_SCHEMA_DEPTH:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            return None
        target: object = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, Mapping) else None
        node, depth = target, depth + 1
    return node


def wrapped_rows_schema(schema: object) -> bool:
    """Whether an output schema wraps a list result as ``{"result": [...]}`` (the SDK's and fastmcp's way).

    fastmcp marks it (``x-fastmcp-wrap-result``); the SDK says it only by shape: an object whose only
    property, and only required key, is ``result``.
    """
    if not isinstance(schema, Mapping):
        return False
    if schema.get("x-fastmcp-wrap-result") is True:
        return True
    properties = schema.get("properties")
    return (
        schema.get("type") == "object"
        and isinstance(properties, Mapping)
        and list(properties) == ["result"]
        and schema.get("required") == ["result"]
    )


def _column_type(prop: object, root: Mapping[str, Any]) -> tuple[ColumnType, bool] | None:
    prop = _resolve(prop, root)
    if not isinstance(prop, Mapping):
        return None
    declared = prop.get("type")
    nullable = False
    if isinstance(declared, list):
        nullable = "null" in declared
        rest = [t for t in declared if t != "null"]
        if len(rest) != 1:
            return None
        declared = rest[0]
    elif "anyOf" in prop and isinstance(prop["anyOf"], list):
        options = [_resolve(o, root) for o in prop["anyOf"]]
        nullable = any(isinstance(o, Mapping) and o.get("type") == "null" for o in options)
        rest = [o for o in options if not (isinstance(o, Mapping) and o.get("type") == "null")]
        if len(rest) != 1 or not isinstance(rest[0], Mapping):
            return None
        found = _column_type(rest[0], root)
        return (found[0], nullable or found[1]) if found else None
    if declared == "string" and prop.get("format") in _DATE_FORMATS:
        return "date", nullable
    if isinstance(declared, str) and declared in _JSON_TYPES:
        return _JSON_TYPES[declared], nullable
    return None


@dataclass(frozen=True, slots=True)
class SchemaColumns:
    """The columns an output schema describes, and the properties it could not map (named once)."""

    columns: tuple[NormalizedColumn, ...] | None
    wrapped: bool
    undeclared: tuple[str, ...] = ()


def columns_from_output_schema(tool: str, schema: object) -> SchemaColumns:
    """Read an output schema that describes rows as a column declaration. Never raises.

    An array of objects with typed properties (or the ``{"result": [...]}`` wrapping of one) yields
    columns: ``integer``/``number`` -> number, ``string`` -> string, ``format: date``/``date-time`` ->
    date, ``boolean`` -> boolean, a type list containing ``null`` -> nullable. Any other property is
    left undeclared and named in ``undeclared``; a schema that does not describe rows yields none.
    """
    try:
        if not isinstance(schema, Mapping):
            return SchemaColumns(None, False)
        wrapped = wrapped_rows_schema(schema)
        rows: object = schema["properties"]["result"] if wrapped else schema
        rows = _resolve(rows, schema)
        if not isinstance(rows, Mapping) or rows.get("type") != "array":
            return SchemaColumns(None, wrapped)
        item = _resolve(rows.get("items"), schema)
        properties = item.get("properties") if isinstance(item, Mapping) else None
        if not isinstance(properties, Mapping) or not properties:
            return SchemaColumns(None, wrapped)
        columns: list[NormalizedColumn] = []
        undeclared: list[str] = []
        for name, prop in properties.items():
            mapped = _column_type(prop, schema)
            if mapped is None or not isinstance(name, str) or not name.strip():
                undeclared.append(str(name))
            else:
                columns.append(NormalizedColumn(name, mapped[0], mapped[1]))
        return SchemaColumns(tuple(columns) or None, wrapped, tuple(undeclared))
    except Exception:
        return SchemaColumns(None, False)
