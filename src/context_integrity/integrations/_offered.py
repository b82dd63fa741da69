"""The last tool list a host offered, remembered by identity: a run offers the same tool objects
on every turn, so their definitions are read once instead of once per request."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from operator import is_
from typing import Generic, TypeVar

T = TypeVar("T")


class SameTools(Generic[T]):
    """What ``make`` returned for the last tool list, reused while the tools are the same objects."""

    __slots__ = ("_last", "_make")

    def __init__(self, make: Callable[[tuple[object, ...]], T]) -> None:
        self._make = make
        self._last: tuple[tuple[object, ...], T] | None = None

    def __call__(self, tools: Iterable[object] | None) -> T:
        given = tuple(tools or ())
        last = self._last  # one read: another thread may replace it, never half of it
        if last is not None:
            known, made = last
            # map(is_) compares in C: this runs on every turn of every run.
            if len(known) == len(given) and all(map(is_, known, given)):
                return made
        made = self._make(given)
        self._last = (given, made)
        return made

    def forget(self) -> None:
        self._last = None
