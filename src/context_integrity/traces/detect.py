"""The detector: which dialect a span is written in, and what that dialect reads from it.

Each span is offered to the dialects in :data:`~.dialects.DIALECTS`' fixed order; the first that
claims it reads it, and no other does. The detector is the one caller of a dialect, and the boundary
of the :class:`~.dialects.Dialect` contract: a dialect reads every value a source decodes without
raising, but a span handed in by a caller may hold any Python object (a mapping whose every read
raises, a value that cannot be printed), and guarding each reader of each dialect against those
would be the same guard many times over. Here, once: a dialect whose ``claims`` or ``read`` raises
is said in one line (naming it, the span and the error, even one that cannot be printed) and the
span is read as no agent work; nothing raises. The detector keeps no state: the assembler says, once
per trace, when no span of a trace was claimed by any dialect.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..text import clip, exception_message, render_value
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
        f"the {getattr(dialect, 'key', '?')} dialect failed {doing} span {_name(span)} ({span.span_id}): "
        f"{type(error).__name__}: {clip(_one_line(exception_message(error)), 120)}; "
        "the span is read as no agent work"
    )


def _name(span: Span) -> str:
    name = span.name
    return repr(clip(_one_line(name), 60)) if isinstance(name, str) else render_value(name, 60)


def _one_line(text: str) -> str:
    return " ".join(text.split())
