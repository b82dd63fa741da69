"""What was made from an object, remembered by the object's identity, within a bound.

Hosts hand us the same objects again and again (a tool, a model, a message, a schema), and
what we make from each is cheap to keep and costly to remake. The object itself is held beside
what was made from it, so its ``id`` cannot be reused by another object while remembered; past
the bound the memory starts over.
"""

from __future__ import annotations

from collections.abc import Callable
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
