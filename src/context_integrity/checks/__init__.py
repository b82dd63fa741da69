"""One module per check. Every check is a pure function of plain data:
no OpenTelemetry, no I/O, no globals. The judge feeds them; they never
import the judge."""

from __future__ import annotations

from dataclasses import replace
from typing import Final, TypeVar

from ..findings import Encounter

# The epoch a dev-posture canary runs at: never a real iteration, so a
# canary finding that leaked anyway could not be mistaken for one.
CANARY_EPOCH: Final = -1

_E = TypeVar("_E", bound=Encounter)


def as_canary(encounter: _E) -> _E:
    """The same encounter with every finding marked synthetic: canary material never counts as real."""
    return replace(encounter, findings=[replace(f, synthetic=True) for f in encounter.findings])
