"""The contract book: every tool contract this process declared, by tool name."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from ..contracts import DeclarationError, ToolContract
from ..contracts.claims import AnswerScope, ClaimsContract
from ..contracts.columns import is_model_class
from ..contracts.toolsets import Toolset

if TYPE_CHECKING:
    from pydantic import BaseModel


def _difference(held: ToolContract, new: ToolContract) -> str:
    differ = [
        f.name for f in fields(ToolContract) if f.compare and getattr(held, f.name) != getattr(new, f.name)
    ]
    return "its " + ", ".join(differ) + " differ" if differ else "they differ"


@dataclass(frozen=True, slots=True)
class BookSnapshot:
    """Everything a book holds at one moment, for :meth:`ContractBook.restore`."""

    tools: dict[str, ToolContract]
    claims: dict[type[BaseModel] | AnswerScope, ClaimsContract]
    toolsets: dict[str, Toolset]


class ContractBook:
    """Every tool contract this process declared, by tool name.

    Decorated tools and tools declared by name (framework or MCP tools the
    application did not write) land here alike. A second declaration of a name
    must be identical to the first, or say ``replace=True``: two places
    disagreeing about one tool is a bug to hear about, not a race to lose.
    """

    def __init__(self) -> None:
        self._contracts: dict[str, ToolContract] = {}
        self._claims: dict[type[BaseModel] | AnswerScope, ClaimsContract] = {}
        self._toolsets: dict[str, Toolset] = {}
        self._wire_readers: set[str] = set()

    def declare(self, contract: ToolContract, *, replace: bool = False) -> None:
        if not replace:
            self._refuse_redeclared(contract)
        self._contracts[contract.name] = contract

    def _refuse_redeclared(self, contract: ToolContract, *, again: str = "") -> None:
        held = self._contracts.get(contract.name)
        if held is not None and held != contract:
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
        """Declare a whole set of declarations (a contracts file's), all or none.

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
            self._contracts[contract.name] = contract
        for toolset in toolsets:
            self._toolsets[toolset.name] = toolset
        for claims_contract in claims:
            self.declare_claims(claims_contract)

    def snapshot(self) -> BookSnapshot:
        """The declarations as they stand, for :meth:`restore` (tests put the book back with it)."""
        return BookSnapshot(dict(self._contracts), dict(self._claims), dict(self._toolsets))

    def restore(self, snapshot: BookSnapshot) -> None:
        self._contracts = dict(snapshot.tools)
        self._claims = dict(snapshot.claims)
        self._toolsets = dict(snapshot.toolsets)

    def get(self, name: str) -> ToolContract | None:
        return self._contracts.get(name)

    def forget(self, name: str) -> None:
        self._contracts.pop(name, None)

    def names(self) -> frozenset[str]:
        return frozenset(self._contracts)

    def __iter__(self) -> Iterator[ToolContract]:
        return iter(list(self._contracts.values()))

    def __len__(self) -> int:
        return len(self._contracts)

    def any_columns(self) -> bool:
        return any(c.result_columns for c in self._contracts.values())

    def any_grounds(self) -> bool:
        return any(c.arguments_from for c in self._contracts.values())

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
