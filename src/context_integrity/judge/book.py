"""The contract book: every tool contract this process declared, by tool name."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from typing import TYPE_CHECKING

from ..contracts import DeclarationError, ToolContract
from ..contracts.claims import ClaimsContract
from ..contracts.columns import is_model_class

if TYPE_CHECKING:
    from pydantic import BaseModel


def _difference(held: ToolContract, new: ToolContract) -> str:
    differ = [
        f.name for f in fields(ToolContract) if f.compare and getattr(held, f.name) != getattr(new, f.name)
    ]
    return "its " + ", ".join(differ) + " differ" if differ else "they differ"


class ContractBook:
    """Every tool contract this process declared, by tool name.

    Decorated tools and tools declared by name (framework or MCP tools the
    application did not write) land here alike. A second declaration of a name
    must be identical to the first, or say ``replace=True``: two places
    disagreeing about one tool is a bug to hear about, not a race to lose.
    """

    def __init__(self) -> None:
        self._contracts: dict[str, ToolContract] = {}
        self._claims: dict[type[BaseModel], ClaimsContract] = {}
        self._wire_readers: set[str] = set()

    def declare(self, contract: ToolContract, *, replace: bool = False) -> None:
        held = self._contracts.get(contract.name)
        if held is not None and held != contract and not replace:
            raise DeclarationError(
                f"Tool {contract.name!r} is already declared with a different contract "
                f"({_difference(held, contract)}). Declare each tool once, or pass replace=True to "
                "replace its contract on purpose."
            )
        self._contracts[contract.name] = contract

    def snapshot(self) -> dict[str, ToolContract]:
        """The contracts as they stand, for :meth:`restore` (tests put the book back with it)."""
        return dict(self._contracts)

    def restore(self, snapshot: dict[str, ToolContract]) -> None:
        self._contracts = dict(snapshot)

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

    # ── claims contracts (one per output model) ────────────────────────
    def declare_claims(self, contract: ClaimsContract) -> None:
        self._claims[contract.output_model] = contract

    def forget_claims(self, output_model: type[BaseModel]) -> None:
        self._claims.pop(output_model, None)

    def claims_models(self) -> frozenset[type[BaseModel]]:
        return frozenset(self._claims)

    def any_claims(self) -> bool:
        return bool(self._claims)

    def claims_for(self, output: object) -> tuple[ClaimsContract, ...]:
        """The claims contracts an answer is judged by.

        A typed answer: the contract of its model (or of the nearest declared base class). An
        untyped answer (a mapping, or text to parse as JSON): the one contract declared, when there
        is exactly one; with several, nothing says which applies, so none does.
        """
        if is_model_class(type(output)):
            for model in type(output).__mro__:
                if model in self._claims:
                    return (self._claims[model],)
            return ()
        return tuple(self._claims.values()) if len(self._claims) == 1 else ()

    # ── wire readers (installed on the clients that send requests to a provider) ──
    def declare_wire_reader(self, label: str) -> None:
        self._wire_readers.add(label)

    def forget_wire_reader(self, label: str) -> None:
        self._wire_readers.discard(label)

    def any_wire_readers(self) -> bool:
        return bool(self._wire_readers)
