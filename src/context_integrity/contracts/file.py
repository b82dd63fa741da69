"""The contracts file: every declaration that can be written as data, in one TOML file.

One file serves the agent (``ci.setup(contracts=PATH)`` or ``$CONTEXT_INTEGRITY_CONTRACTS``), the
offline judge (``context-integrity judge --contracts PATH``) and the pipeline judge. It is a TOML
file of its own, or the ``[tool.context-integrity]`` table of a ``pyproject.toml``::

    [tools.host_group_mappings]
    result_columns = { logical_unit_number = "number", comment = { type = "string", nullable = true } }

    [tools.host_paths]
    arguments_from = ["list_hosts"]

    [tools.list_hosts]              # an empty table declares a tool, so it can be named a producer

    [claims]                        # claims of any structured answer: answer field -> settled fact
    "port.status" = { entity = "fc1/3", field = "status" }

    [agents.triage.claims]          # claims of the answers of agent 'triage' only
    budget = { entity = "project-7", field = "budget" }

    [toolsets.ticketing]            # run.suspend("ticketing") needs no tool list; suspended = true
    tools = ["open_ticket"]         # switches it off in every run

Each tool table is handed to :func:`~.tool.define_contract`, the function ``@ci.tool`` and
``declare_tool`` call, so a file is refused by the very asserts that refuse code; the refusal
names the file and the key path (``tools.host_paths.arguments_from[0]``). Keys the format does
not know are refused with the nearest one it does. :func:`dump_contracts` writes the same format
back (``load(dump(x)) == x``), and ``contracts.schema.json`` beside this module is its JSON Schema.

Plain data and the standard library only: nothing here imports OpenTelemetry or a framework.
"""

from __future__ import annotations

import datetime as _dt
import functools
import inspect
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

from ..limits import MAX_CONTRACTS_FILE_BYTES
from .claims import CLAIM_KEYS, ClaimsContract, define_answer_claims
from .columns import NormalizedColumn
from .errors import DeclarationError, did_you_mean
from .semantic import ENTITY, FACTS
from .tool import ToolContract, define_contract
from .toolsets import Toolset, define_toolset

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

# The environment variable ``setup()`` (and ``judge``) read the file's path from.
CONTRACTS_ENV_VAR: Final = "CONTEXT_INTEGRITY_CONTRACTS"
# A file of this name holds the declarations in its ``[tool.context-integrity]`` table.
PYPROJECT: Final = "pyproject.toml"
PYPROJECT_TABLE: Final = ("tool", "context-integrity")
# The JSON Schema of the file, shipped beside this module.
SCHEMA_FILE: Final = "contracts.schema.json"

# The top-level tables, in the order the writer writes them. "$schema" is the editor's key
# (taplo reads a schema URL from it); the loader accepts it and declares nothing with it.
TOP_KEYS: Final = ("$schema", "tools", "claims", "agents", "toolsets")
# A tool table's keys are define_contract's keywords: a new declaration there is a new key here.
TOOL_KEYS: Final[tuple[str, ...]] = tuple(
    p.name for p in inspect.signature(define_contract).parameters.values() if p.kind is p.KEYWORD_ONLY
)
AGENT_KEYS: Final = ("claims",)
TOOLSET_KEYS: Final[tuple[str, ...]] = tuple(
    p for p in inspect.signature(define_toolset).parameters if p != "name"
)


_Declared = TypeVar("_Declared")


class ContractsFileError(DeclarationError):
    """A contracts file that cannot be read or declares something the library cannot honour.

    ``source`` is the file; ``key`` the key path of the refused value (``""`` for the file as a
    whole). The message names both, then the problem and the fix.
    """

    def __init__(self, source: str, key: str, message: str) -> None:
        super().__init__(f"{source}: {key}: {message}" if key else f"{source}: {message}")
        self.source = source
        self.key = key


@dataclass(frozen=True, slots=True)
class Contracts:
    """Everything one contracts file declares, validated: tools, claims and toolsets, in file order.

    ``source`` names where it was read from (for messages); it is not part of equality.
    """

    tools: tuple[ToolContract, ...] = ()
    claims: tuple[ClaimsContract, ...] = ()
    toolsets: tuple[Toolset, ...] = ()
    source: str = field(default="", compare=False)


# ── Key paths ───────────────────────────────────────────────────────────

_BARE_KEY: Final = re.compile(r"[A-Za-z0-9_-]+")


def toml_key(key: str) -> str:
    """``key`` as TOML writes it: bare when it can be, else a quoted string."""
    return key if _BARE_KEY.fullmatch(key) else _toml_string(key)


def key_path(parts: Iterable[str | int]) -> str:
    """A key path as the file spells it: ``tools.host_paths.arguments_from[0]``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + toml_key(part)
    return out


# ── Reading ─────────────────────────────────────────────────────────────


class _Reader:
    """Validates one parsed file, naming ``source`` and the key path in every refusal."""

    def __init__(self, source: str) -> None:
        self.source = source

    def refuse(self, at: Sequence[str | int], message: str) -> ContractsFileError:
        return ContractsFileError(self.source, key_path(at), message)

    def table(self, at: Sequence[str | int], value: object, what: str) -> Mapping[str, object]:
        if not isinstance(value, Mapping):
            raise self.refuse(
                at,
                f"is {_toml_type(value)}, not a table. Write it as a table of {what}, e.g. [{key_path(at)}].",
            )
        return value

    def known(self, at: Sequence[str | int], table: Mapping[str, object], keys: Sequence[str]) -> None:
        for key in table:
            if key not in keys:
                raise self.refuse(
                    (*at, key),
                    f"is not a key the contracts file knows.{did_you_mean(key, keys)} "
                    f"{'The keys here are' if at else 'The top-level keys are'}: {', '.join(keys)}.",
                )

    def declared(self, at: Sequence[str | int], define: Callable[[], _Declared]) -> _Declared:
        """``define()``, with a refusal from the definition-time asserts located at ``at``."""
        try:
            return define()
        except ContractsFileError:
            raise
        except DeclarationError as error:
            raise self.refuse((*at, *error.at), str(error)) from None

    def read(self, data: Mapping[str, object]) -> Contracts:
        self.known((), data, TOP_KEYS)
        schema = data.get("$schema")
        if schema is not None and not isinstance(schema, str):
            raise self.refuse(("$schema",), "is not text. Give the schema's URL or path, or leave it out.")
        tools = self.tools(data.get("tools", {}))
        claims = self.claims(data)
        toolsets = self.toolsets(data.get("toolsets", {}))
        return Contracts(tools=tools, claims=claims, toolsets=toolsets, source=self.source)

    def tools(self, value: object) -> tuple[ToolContract, ...]:
        tables = self.table(("tools",), value, "tool names to their declarations")
        out: list[ToolContract] = []
        for name, table in tables.items():
            at = ("tools", name)
            declaration = self.table(at, table, "declarations")
            self.known(at, declaration, TOOL_KEYS)
            # Every value goes to define_contract as written: its asserts are the ones that judge it.
            keywords: dict[str, Any] = dict(declaration)
            out.append(self.declared(at, functools.partial(define_contract, name, **keywords)))
        self.producers_declared(out)
        return tuple(out)

    def producers_declared(self, tools: Sequence[ToolContract]) -> None:
        names = [tool.name for tool in tools]
        for tool in tools:
            for index, producer in enumerate(tool.arguments_from or ()):
                if producer in names:
                    continue
                raise self.refuse(
                    ("tools", tool.name, "arguments_from", index),
                    f"names {producer!r}, which this file does not declare.{did_you_mean(producer, names)} "
                    "Declare every producer "
                    f"(an empty table [tools.{toml_key(producer)}] is enough), or fix the name.",
                )

    def claims(self, data: Mapping[str, object]) -> tuple[ClaimsContract, ...]:
        out: list[ClaimsContract] = []
        if "claims" in data:
            table = self.table(("claims",), data["claims"], "answer fields to the facts they claim")
            out.append(self.declared(("claims",), functools.partial(define_answer_claims, table)))
        agents = self.table(("agents",), data.get("agents", {}), "agent names to their declarations")
        for agent, value in agents.items():
            at = ("agents", agent)
            declaration = self.table(at, value, "declarations")
            self.known(at, declaration, AGENT_KEYS)
            if "claims" not in declaration:
                raise self.refuse(at, "declares nothing. Give it a claims table, or leave the agent out.")
            claims = self.table((*at, "claims"), declaration["claims"], "answer fields to facts")
            out.append(
                self.declared((*at, "claims"), functools.partial(define_answer_claims, claims, agent=agent))
            )
        return tuple(out)

    def toolsets(self, value: object) -> tuple[Toolset, ...]:
        tables = self.table(("toolsets",), value, "toolset names to their tools")
        out: list[Toolset] = []
        for name, table in tables.items():
            at = ("toolsets", name)
            declaration = self.table(at, table, "its tools")
            self.known(at, declaration, TOOLSET_KEYS)
            out.append(
                self.declared(
                    at,
                    functools.partial(
                        define_toolset, name, declaration.get("tools"), **_without(declaration, "tools")
                    ),
                )
            )
        return tuple(out)


def _without(table: Mapping[str, object], key: str) -> dict[str, Any]:
    return {k: v for k, v in table.items() if k != key}


def _toml_type(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (list, tuple)):
        return "an array"
    return f"a {type(value).__name__}"


def read_contracts(data: Mapping[str, object], *, source: str = "the contracts") -> Contracts:
    """Validate a parsed contracts table (the file's top level). Raises :class:`ContractsFileError`."""
    return _Reader(source).read(data)


def parse_contracts(text: str, *, source: str = "the contracts", pyproject: bool = False) -> Contracts:
    """Read contracts from TOML text; ``pyproject`` reads its ``[tool.context-integrity]`` table."""
    try:
        data: Mapping[str, object] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ContractsFileError(source, "", f"is not valid TOML ({error}). Fix the syntax there.") from None
    if pyproject:
        for step in PYPROJECT_TABLE:
            inner = data.get(step)
            if not isinstance(inner, Mapping):
                raise ContractsFileError(
                    source,
                    "",
                    "has no [tool.context-integrity] table, so it declares nothing. Add the table, or "
                    "name a contracts file of its own.",
                )
            data = inner
    return read_contracts(data, source=source)


def load_contracts(path: str | os.PathLike[str]) -> Contracts:
    """Read and validate a contracts file: TOML of its own, or a ``pyproject.toml``'s table.

    Raises :class:`ContractsFileError` (a :class:`DeclarationError`) naming the file, the key path
    and the fix, for a file that is missing, unreadable, larger than
    :data:`~context_integrity.limits.MAX_CONTRACTS_FILE_BYTES`, not TOML, or refused by the asserts.
    """
    source = os.fspath(path)
    try:
        with open(source, "rb") as file:
            raw = file.read(MAX_CONTRACTS_FILE_BYTES + 1)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ContractsFileError(
            source, "", f"cannot be read ({reason}). Name an existing TOML file."
        ) from None
    if len(raw) > MAX_CONTRACTS_FILE_BYTES:
        raise ContractsFileError(
            source,
            "",
            f"is larger than {MAX_CONTRACTS_FILE_BYTES} bytes, which no contracts file needs. Name the "
            "contracts file itself.",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ContractsFileError(
            source, "", f"is not UTF-8 text ({error.reason} at byte {error.start})."
        ) from None
    return parse_contracts(text, source=source, pyproject=Path(source).name == PYPROJECT)


@dataclass(frozen=True, slots=True)
class FoundContracts:
    """The contracts file to read, and what chose it (for saying which file was used)."""

    path: Path
    chosen_by: str


def find_contracts(
    explicit: str | os.PathLike[str] | None,
    *,
    environ: Mapping[str, str] = os.environ,
    directory: Path | None = None,
) -> FoundContracts | None:
    """Which contracts file applies: ``explicit``, else ``$CONTEXT_INTEGRITY_CONTRACTS``, else (when
    ``directory`` is given) that directory's ``pyproject.toml`` if it has a
    ``[tool.context-integrity]`` table. ``None``: no file applies."""
    if explicit is not None:
        return FoundContracts(Path(explicit), "given")
    named = environ.get(CONTRACTS_ENV_VAR, "").strip()
    if named:
        return FoundContracts(Path(named), f"${CONTRACTS_ENV_VAR}")
    if directory is not None:
        candidate = directory / PYPROJECT
        if candidate.is_file() and _has_table(candidate):
            return FoundContracts(candidate, "pyproject.toml in the working directory")
    return None


def _has_table(pyproject: Path) -> bool:
    try:
        with pyproject.open("rb") as file:
            data = tomllib.loads(file.read(MAX_CONTRACTS_FILE_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return True  # unreadable: say so when it is loaded, rather than pass it over in silence
    tool = data.get("tool")
    return isinstance(tool, Mapping) and PYPROJECT_TABLE[1] in tool


def schema_path() -> Path:
    """Where the contracts file's JSON Schema is installed (point an editor at it)."""
    return Path(__file__).with_name(SCHEMA_FILE)


def contracts_schema() -> dict[str, Any]:
    """The contracts file's JSON Schema (draft 4, the draft editors' TOML servers read)."""
    loaded: dict[str, Any] = json.loads(schema_path().read_text(encoding="utf-8"))
    return loaded


# ── Writing ─────────────────────────────────────────────────────────────

_ESCAPES: Final = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_TOML_INT: Final = 2**63


def _toml_string(text: str) -> str:
    out = ['"']
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04X}")
        elif 0xD800 <= ord(char) <= 0xDFFF:
            raise ValueError(f"{text!r:.80} holds a lone surrogate, which TOML cannot write")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def toml_value(value: object) -> str:
    """One value as inline TOML. Raises ``ValueError`` for what TOML cannot hold (``None``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if not -_TOML_INT <= value < _TOML_INT:
            raise ValueError(f"{value} does not fit TOML's 64-bit integers")
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{toml_key(str(k))} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise ValueError(f"TOML has no way to write {type(value).__name__} {value!r:.80}")


def _column(column: NormalizedColumn) -> object:
    return {"type": column.type, "nullable": True} if column.nullable else column.type


def _tool_table(tool: ToolContract) -> dict[str, object]:
    """The keys of one tool's table, in :data:`TOOL_KEYS` order, defaults left out."""
    values: dict[str, object] = {
        "description": tool.description,
        "result_columns": None
        if tool.result_columns is None
        else {column.name: _column(column) for column in tool.result_columns},
        "arguments_from": None if tool.arguments_from is None else list(tool.arguments_from),
        "input_schema": tool.input_schema,
        "once_per_run": tool.once_per_run or None,
        "result_kind": tool.result_kind,
        "result_wrapped": tool.result_wrapped or None,
        "settles": None
        if tool.settles is None
        else {ENTITY: tool.settles.entity, FACTS: list(tool.settles.facts)},
    }
    return {key: values[key] for key in TOOL_KEYS if values.get(key) is not None}


def _claims_table(contract: ClaimsContract) -> dict[str, object]:
    return {
        claim.path: dict(zip(CLAIM_KEYS, (claim.entity, claim.field), strict=True))
        for claim in contract.claims
    }


def _section(header: Sequence[str], table: Mapping[str, object]) -> str:
    lines = [f"[{key_path(header)}]"]
    lines.extend(f"{toml_key(key)} = {toml_value(value)}" for key, value in table.items())
    return "\n".join(lines)


def dump_contracts(contracts: Contracts, *, schema: str | None = None) -> str:
    """Write ``contracts`` as a contracts file (``load`` of it gives back an equal :class:`Contracts`).

    ``schema``, a path or URL of the JSON Schema, is written as taplo's ``#:schema`` directive, so
    an editor checks the file as it is edited. Claims of a model class have no file form and are
    refused (``ValueError``), as is a value TOML cannot hold (``None`` in an input schema).
    """
    sections: list[str] = []
    for tool in contracts.tools:
        sections.append(_section(("tools", tool.name), _tool_table(tool)))
    for claims in contracts.claims:
        if claims.output_model is not None:
            raise ValueError(
                f"the claims of {claims.name} are keyed by a model class, which a file cannot name; "
                "declare them with ci.declare_claims() in code, or as file claims (no model)"
            )
        header = ("claims",) if claims.scope.agent is None else ("agents", claims.scope.agent, "claims")
        sections.append(_section(header, _claims_table(claims)))
    for toolset in contracts.toolsets:
        table: dict[str, object] = {"tools": list(toolset.tools)}
        if toolset.suspended:
            table["suspended"] = True
        sections.append(_section(("toolsets", toolset.name), table))
    head = f"#:schema {schema}\n\n" if schema else ""
    return head + "\n\n".join(sections) + ("\n" if sections else "")
