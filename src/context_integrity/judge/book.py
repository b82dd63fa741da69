"""The contract book: every tool contract this process declared, by tool name."""

from __future__ import annotations

from collections.abc import Iterator

from ..contracts import ToolContract


class ContractBook:
    """Every tool contract this process declared, by tool name.

    Decorated tools and tools declared by name (framework or MCP tools the
    application did not write) land here alike; a later declaration of the
    same name replaces the earlier one.
    """

    def __init__(self) -> None:
        self._contracts: dict[str, ToolContract] = {}

    def declare(self, contract: ToolContract) -> None:
        self._contracts[contract.name] = contract

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

    def grounds(self) -> dict[str, tuple[str, ...]]:
        """Tool name -> the tools its arguments come from, for every tool that declared them."""
        return {c.name: c.arguments_from for c in self._contracts.values() if c.arguments_from}
