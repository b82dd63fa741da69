"""The contract book: every tool contract this process declared or read from a server, by tool name.

Two origins, one rule between them: a declaration made in this process (``@ci.tool``,
``declare_tool``, framework metadata, a contracts file) is the application's own statement, and a
contract read from an MCP server (:meth:`ContractBook.declare_served`) never replaces or erases it.
Each server's contracts are kept apart by the server's name, so a host that knows which server a
call goes to judges it by that server's own contract (:meth:`ContractBook.served`); by name alone,
two servers listing one tool with different contracts is a clash the book refuses: the name reads
as a contract whose declarations could not be read, with the reason, so its checks say
``unreachable`` rather than judge one server's rows by another's contract.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Final

from .._memo import ToldOnce
from ..contracts import DeclarationError, ToolContract
from ..contracts.claims import AnswerScope, ClaimsContract
from ..contracts.columns import is_model_class
from ..contracts.meta import TRAVELLING_FIELDS
from ..contracts.toolsets import Toolset
from ..limits import MAX_SERVED_CONTRACTS, MAX_WARNED_DECLARATIONS
from ..text import repr_clipped

if TYPE_CHECKING:
    from pydantic import BaseModel

logger = logging.getLogger("context_integrity")

# The clashes already told, by (the server, the tool[, the other server]): once each per process.
_TOLD_CLASHES: Final[ToldOnce[tuple[str, ...]]] = ToldOnce(MAX_WARNED_DECLARATIONS)


def _travelling(contract: ToolContract) -> tuple[object, ...]:
    """What a server can declare for a tool: the fields that travel, and those it could not read."""
    return (*(getattr(contract, name) for name in TRAVELLING_FIELDS), contract.unread)


def _agree(one: ToolContract, other: ToolContract) -> bool:
    return _travelling(one) == _travelling(other)


def _contested(name: str, listers: dict[str, ToolContract]) -> ToolContract:
    """The contract a name reads as when servers list it with different contracts: nothing declared,
    every field one of them declared unread, with the reason."""
    servers = " and ".join(repr_clipped(server) for server in list(listers)[:2])
    more = f" (and {len(listers) - 2} more)" if len(listers) > 2 else ""
    reason = (
        f"MCP servers {servers}{more} list tool {repr_clipped(name)} with different contracts, and the call "
        "was named by the tool alone: whose rows these are cannot be told"
    )
    declared = [
        field_name
        for field_name in TRAVELLING_FIELDS
        if any(getattr(c, field_name) is not None or c.unread_reason(field_name) for c in listers.values())
    ]
    return ToolContract(name=name, unread=tuple((field_name, reason) for field_name in declared))


def _difference(held: ToolContract, new: ToolContract) -> str:
    differ = [
        f.name for f in fields(ToolContract) if f.compare and getattr(held, f.name) != getattr(new, f.name)
    ]
    return "its " + ", ".join(differ) + " differ" if differ else "they differ"


@dataclass(frozen=True, slots=True)
class BookSnapshot:
    """Everything a book holds at one moment, for :meth:`ContractBook.restore` (tests put the book
    back with it)."""

    contracts: dict[str, ToolContract]
    local: frozenset[str]
    served: dict[str, dict[str, ToolContract]]
    claims: dict[type[BaseModel] | AnswerScope, ClaimsContract]
    toolsets: dict[str, Toolset]


class ContractBook:
    """Every tool contract this process declared or read from a server, by tool name.

    Decorated tools and tools declared by name (framework or MCP tools the
    application did not write) land here alike. A second declaration of a name
    must be identical to the first, or say ``replace=True``: two places
    disagreeing about one tool is a bug to hear about, not a race to lose.
    Contracts read from servers go through :meth:`declare_served` (see the module docstring).
    """

    def __init__(self) -> None:
        # What the judge reads by name: the local declaration, else what the servers listing it agree on.
        self._contracts: dict[str, ToolContract] = {}
        # Names declared in this process (in code or a contracts file).
        self._local: set[str] = set()
        # Tool name -> {server name: that server's own contract for it}.
        self._served: dict[str, dict[str, ToolContract]] = {}
        self._served_count = 0
        self._claims: dict[type[BaseModel] | AnswerScope, ClaimsContract] = {}
        self._toolsets: dict[str, Toolset] = {}
        self._wire_readers: set[str] = set()

    def declare(self, contract: ToolContract, *, replace: bool = False) -> None:
        """Declare a contract made in this process: it stands over any server's for the same name."""
        if not replace:
            self._refuse_redeclared(contract)
        self._declare_local(contract)

    def _declare_local(self, contract: ToolContract) -> None:
        name = contract.name
        for server, served in self._served.get(name, {}).items():
            self._tell_local_clash(server, contract, served)
        self._local.add(name)
        self._contracts[name] = contract

    def _refuse_redeclared(self, contract: ToolContract, *, again: str = "") -> None:
        held = self._contracts.get(contract.name)
        if contract.name in self._local and held is not None and held != contract:
            fix = (
                "Declare each tool once, or pass replace=True to replace its contract on purpose."
                if not again
                else "Declare each tool once: in the code or in the file, not in both."
            )
            raise DeclarationError(
                f"Tool {contract.name!r} is already declared with a different contract "
                f"({_difference(held, contract)}){again}. {fix}"
            )

    def declare_all(
        self,
        tools: Iterable[ToolContract] = (),
        claims: Iterable[ClaimsContract] = (),
        toolsets: Iterable[Toolset] = (),
        *,
        again: str = "",
    ) -> None:
        """Declare a whole set of declarations (a contracts file's), all or none, as this process's own.

        Each tool follows the rule :meth:`declare` holds (a different contract under a held name is
        refused), and so does each toolset; a claims contract replaces the one held for its model or
        scope, as :meth:`declare_claims` does. Nothing is declared when one is refused; ``again``
        (", and contracts file c.toml declares it again") says in the refusal who declared it again.
        """
        tools, claims, toolsets = tuple(tools), tuple(claims), tuple(toolsets)
        for contract in tools:
            self._refuse_redeclared(contract, again=again)
        for toolset in toolsets:
            held = self._toolsets.get(toolset.name)
            if held is not None and held != toolset:
                raise DeclarationError(
                    f"Toolset {toolset.name!r} is already declared with other tools or another "
                    f"'suspended'{again}. Declare each toolset once."
                )
        for contract in tools:
            self._declare_local(contract)
        for toolset in toolsets:
            self._toolsets[toolset.name] = toolset
        for claims_contract in claims:
            self.declare_claims(claims_contract)

    def declare_served(self, contract: ToolContract, server: str) -> ToolContract | None:
        """Declare a contract MCP server ``server`` listed; the contract its tool is judged by.

        That is the local declaration when this process declared the name (the server's is kept
        apart, and a clash is told once), else the server's own. A server listing a tool again
        replaces its own earlier contract, never another's. ``None`` when the book holds
        ``MAX_SERVED_CONTRACTS`` server contracts already (told once).
        """
        name = contract.name
        listers = self._served.setdefault(name, {})
        if server not in listers:
            if self._served_count >= MAX_SERVED_CONTRACTS:
                if not listers:
                    del self._served[name]
                if _TOLD_CLASHES.first(("", "", "full")):
                    logger.warning(
                        "context_integrity: %d contracts read from MCP servers are held; MCP server %s, "
                        "tool %s, and any further ones are not kept, so nothing they declare is judged.",
                        MAX_SERVED_CONTRACTS,
                        repr_clipped(server),
                        repr_clipped(name),
                    )
                return None
            self._served_count += 1
        listers[server] = contract
        if name in self._local:
            local = self._contracts[name]
            self._tell_local_clash(server, local, contract)
            return local
        others = [
            (other, held) for other, held in listers.items() if other != server and not _agree(held, contract)
        ]
        for other, _ in others:
            if _TOLD_CLASHES.first(("", *sorted((server, other)), name)):
                logger.warning(
                    "context_integrity: MCP servers %s and %s both list tool %s, with different "
                    "contracts. Each server's calls are judged by its own where the host says which "
                    "server a call goes to (pydantic-ai's MCPToolset); a call named by the tool alone "
                    "(run.tool_call, run.tool_result) reads its checks unreachable. Give the tools "
                    "distinct names to have both judged everywhere.",
                    repr_clipped(other),
                    repr_clipped(server),
                    repr_clipped(name),
                )
        self._contracts[name] = _contested(name, listers) if others else contract
        return contract

    def _tell_local_clash(self, server: str, local: ToolContract, served: ToolContract) -> None:
        if _agree(local, served) or not _TOLD_CLASHES.first((server, local.name)):
            return
        logger.warning(
            "context_integrity: MCP server %s lists tool %s, which this process declares itself (in "
            "code or its contracts file) with a different contract: the local declaration stands, "
            "and the server's is not used.",
            repr_clipped(server),
            repr_clipped(local.name),
        )

    def served(self, server: str, name: str) -> ToolContract | None:
        """The contract MCP server ``server`` listed for tool ``name`` (its own, kept apart)."""
        return self._served.get(name, {}).get(server)

    def is_local(self, name: str) -> bool:
        """Whether ``name`` was declared in this process (in code or a contracts file)."""
        return name in self._local

    def snapshot(self) -> BookSnapshot:
        """The book as it stands, for :meth:`restore` (tests put the book back with it)."""
        return BookSnapshot(
            dict(self._contracts),
            frozenset(self._local),
            {name: dict(listers) for name, listers in self._served.items()},
            dict(self._claims),
            dict(self._toolsets),
        )

    def restore(self, snapshot: BookSnapshot) -> None:
        self._contracts = dict(snapshot.contracts)
        self._local = set(snapshot.local)
        self._served = {name: dict(listers) for name, listers in snapshot.served.items()}
        self._served_count = sum(map(len, self._served.values()))
        self._claims = dict(snapshot.claims)
        self._toolsets = dict(snapshot.toolsets)

    def get(self, name: str) -> ToolContract | None:
        return self._contracts.get(name)

    def forget(self, name: str) -> None:
        """Forget ``name`` wherever it was declared: in this process and by every server."""
        self._contracts.pop(name, None)
        self._local.discard(name)
        self._served_count -= len(self._served.pop(name, {}))

    def names(self) -> frozenset[str]:
        return frozenset(self._contracts)

    def __iter__(self) -> Iterator[ToolContract]:
        return iter(list(self._contracts.values()))

    def __len__(self) -> int:
        return len(self._contracts)

    def any_columns(self) -> bool:
        """Whether some tool declared columns, or declared them and they could not be read."""
        return any(
            c.result_columns or (c.unread and c.unread_reason("result_columns"))
            for c in self._contracts.values()
        )

    def any_grounds(self) -> bool:
        """Whether some tool declared ``arguments_from``, or declared it and it could not be read."""
        return any(
            c.arguments_from or (c.unread and c.unread_reason("arguments_from"))
            for c in self._contracts.values()
        )

    def unread_grounds(self) -> frozenset[str]:
        """The tools whose ``arguments_from`` was declared and could not be read."""
        return frozenset(
            c.name for c in self._contracts.values() if c.unread and c.unread_reason("arguments_from")
        )

    def any_once_per_run(self) -> bool:
        return any(c.once_per_run for c in self._contracts.values())

    def grounds(self) -> dict[str, tuple[str, ...]]:
        """Tool name -> the tools its arguments come from, for every tool that declared them."""
        return {c.name: c.arguments_from for c in self._contracts.values() if c.arguments_from}

    # ── claims contracts (one per output model, per agent, and one for any answer) ──
    def declare_claims(self, contract: ClaimsContract) -> None:
        self._claims[contract.key] = contract

    def forget_claims(self, key: type[BaseModel] | AnswerScope) -> None:
        self._claims.pop(key, None)

    def claims_models(self) -> frozenset[type[BaseModel] | AnswerScope]:
        """What each claims contract is filed under: its model, or the answers it reads."""
        return frozenset(self._claims)

    def any_claims(self) -> bool:
        return bool(self._claims)

    def claims_for(self, output: object, agent: str | None = None) -> tuple[ClaimsContract, ...]:
        """The claims contracts an answer is judged by.

        A typed answer: the contract of its model (or of the nearest declared base class). Else
        the claims declared for its agent's answers, else those declared for any answer (a
        contracts file's, which name no model). Else an untyped answer (a mapping, or text to
        parse as JSON) takes the one model's contract, when exactly one is declared; with
        several, nothing says which applies, so none does.
        """
        typed = is_model_class(type(output))
        if typed:
            for model in type(output).__mro__:
                if model in self._claims:
                    return (self._claims[model],)
        for scope in (AnswerScope(agent), AnswerScope()) if agent is not None else (AnswerScope(),):
            if scope in self._claims:
                return (self._claims[scope],)
        if typed:
            return ()
        modelled = [c for c in self._claims.values() if c.output_model is not None]
        return tuple(modelled) if len(modelled) == 1 and len(self._claims) == 1 else ()

    # ── toolsets (named groups of tools, some switched off in every run) ──
    def declare_toolset(self, toolset: Toolset) -> None:
        self.declare_all(toolsets=(toolset,))

    def toolset(self, name: str) -> Toolset | None:
        return self._toolsets.get(name)

    def suspended_toolsets(self) -> tuple[Toolset, ...]:
        """The toolsets switched off from the start of every run."""
        return tuple(t for t in self._toolsets.values() if t.suspended)

    # ── wire readers (installed on the clients that send requests to a provider) ──
    def declare_wire_reader(self, label: str) -> None:
        self._wire_readers.add(label)

    def forget_wire_reader(self, label: str) -> None:
        self._wire_readers.discard(label)

    def any_wire_readers(self) -> bool:
        return bool(self._wire_readers)
