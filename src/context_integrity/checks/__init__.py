"""One module per check. Every check is a pure function of plain data:
no OpenTelemetry, no I/O, no globals. The judge feeds them; they never
import the judge."""

from __future__ import annotations

from typing import Final

# The epoch a dev-posture canary runs at: never a real iteration, so a
# canary finding that leaked anyway could not be mistaken for one.
CANARY_EPOCH: Final = -1
