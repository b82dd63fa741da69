"""Values whose own methods raise, for the tests that hand the library what a hostile tool returns."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


class HostileRow(Mapping[str, Any]):
    """A row whose every read raises."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("row exploded")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("row exploded")

    def __len__(self) -> int:
        raise RuntimeError("row exploded")


class Unprintable:
    """A value with no printable form: ``repr`` and ``str`` raise."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    __str__ = __repr__
