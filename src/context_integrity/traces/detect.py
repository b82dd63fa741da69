"""The detector: which dialect a span is written in, and what that dialect reads from it.

Each span is offered to the dialects in :data:`~.dialects.DIALECTS`' fixed order; the first that
claims it reads it, and no other does. A dialect that fails (it never should) is said and the span
is read as no agent work; nothing raises. The detector keeps no state: the assembler says, once per
trace, when no span of a trace was claimed by any dialect.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..text import clip
from .dialects import DIALECTS, Dialect
from .readings import Reading
from .spans import Span

Say = Callable[[str], None]


def detect(
    span: Span, say: Say, dialects: Sequence[Dialect] = DIALECTS
) -> tuple[Dialect | None, Reading | None]:
    """The dialect that claims ``span`` (``None``: none does) and its reading (``None``: no agent work)."""
    for dialect in dialects:
        try:
            claimed = dialect.claims(span)
        except Exception as error:
            say(_failed(dialect, "asking whether it claims", span, error))
            continue
        if not claimed:
            continue
        try:
            return dialect, dialect.read(span)
        except Exception as error:
            say(_failed(dialect, "reading", span, error))
            return dialect, None
    return None, None


def _failed(dialect: Dialect, doing: str, span: Span, error: Exception) -> str:
    return (
        f"the {getattr(dialect, 'key', '?')} dialect failed {doing} span {clip(span.name, 60)!r} "
        f"({span.span_id}): {type(error).__name__}: {clip(str(error), 120)}; the span is read as no agent work"
    )
