"""The one error a declaration raises, and the one way its message is built."""

from __future__ import annotations

from ..text import quoted


class DeclarationError(ValueError):
    """A tool declared something this library cannot honour.

    Raised only at definition time, never while an agent runs. The message
    names the tool, the field and the fix.
    """


def refuse(tool_name: str, problem: str, fix: str) -> DeclarationError:
    """The error for one bad field: ``Tool 'x': <problem> <fix>``; the name quoted clipped, as every
    value a problem quotes is (:func:`~context_integrity.text.quoted`)."""
    return DeclarationError(f"Tool {quoted(tool_name)}: {problem} {fix}")
