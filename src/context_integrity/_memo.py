"""What we remember, within a bound: what was made from an object, and what was already told.

:class:`IdentityMemo`: hosts hand us the same objects again and again (a tool, a model, a
message, a schema), and what we make from each is cheap to keep and costly to remake. The object
itself is held beside what was made from it, so its ``id`` cannot be reused by another object
while remembered; past the bound the memory starts over.

:class:`ToldOnce`: a warning said once per process per key (a bad declaration, an undeclared
ground), however many runs meet it; past the bound nothing more is remembered, so a fleet of
distinct mistakes cannot grow the memory or flood the log.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class IdentityMemo(Generic[K, V]):
    __slots__ = ("_bound", "_entries")

    def __init__(self, bound: int) -> None:
        self._bound = bound
        self._entries: dict[int, tuple[K, V]] = {}

    def of(self, key: K, make: Callable[[K], V]) -> V:
        """What ``make(key)`` made the last time it was asked for this very object, else made now."""
        entry = self._entries.get(id(key))
        if entry is not None and entry[0] is key:
            return entry[1]
        made = make(key)
        if len(self._entries) >= self._bound:
            self._entries.clear()
        self._entries[id(key)] = (key, made)
        return made

    def clear(self) -> None:
        self._entries.clear()


H = TypeVar("H", bound=Hashable)


class ToldOnce(Generic[H]):
    __slots__ = ("_bound", "_told")

    def __init__(self, bound: int) -> None:
        self._bound = bound
        self._told: set[H] = set()

    def first(self, key: H) -> bool:
        """Whether ``key`` is told now for the first time (then remembered); ``False`` for a repeat,
        and for any key once ``bound`` keys are remembered."""
        if key in self._told or len(self._told) >= self._bound:
            return False
        self._told.add(key)
        return True

    def __contains__(self, key: object) -> bool:
        return key in self._told

    def __len__(self) -> int:
        return len(self._told)

    def clear(self) -> None:
        self._told.clear()
