"""What the model reads instead of rows enforce could not judge.

Its own module, apart from :mod:`.seams`, because the fail-closed paths of telemetry hand it
over when no judge could be made: it must be importable without the registry and the checks.
"""

from __future__ import annotations

from typing import Final

from ..limits import MAX_QUOTED_CHARS

# What the model reads instead of rows that enforce could not judge: fail closed, never hand over
# rows nobody looked at.
UNJUDGED_REFUSAL: Final = (
    "Result rejected: tool {tool!r} returned a result context-integrity could not check against the "
    "columns it declares (check_column_types='enforce' withholds what it cannot judge); treat this "
    "call as failed. The problem is recorded in the run's telemetry. No data was returned."
)


def unjudged_refusal(tool_name: object) -> str:
    """The refusal for a result enforce could not judge (the tool name clipped, never raising)."""
    name = tool_name if isinstance(tool_name, str) else type(tool_name).__name__
    return UNJUDGED_REFUSAL.format(tool=name[:MAX_QUOTED_CHARS])
