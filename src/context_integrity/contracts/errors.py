"""The one error a declaration raises, and the one way its message is built."""

from __future__ import annotations

from collections.abc import Sequence

from ..text import nearest, repr_clipped

# Where in a declaration the refused value sits: keys and list indexes from the declaration's top,
# e.g. ("arguments_from", 0) or ("result_columns", "comment", "nullable"). The contracts file turns
# it into the key path it names (``tools.host_paths.arguments_from[0]``).
KeyPath = tuple[str | int, ...]


class DeclarationError(ValueError):
    """A tool declared something this library cannot honour.

    Raised only at definition time, never while an agent runs. The message
    names the tool, the field and the fix. ``at`` is where in the declaration
    the refused value sits, when one value is to blame (``()`` otherwise).
    """

    at: KeyPath = ()


def refuse(tool_name: str, problem: str, fix: str, *, at: KeyPath = ()) -> DeclarationError:
    """The error for one bad field: ``Tool 'x': <problem> <fix>``; the name quoted clipped, as every
    value a problem quotes is (:func:`~context_integrity.text.repr_clipped`)."""
    error = DeclarationError(f"Tool {repr_clipped(tool_name)}: {problem} {fix}")
    error.at = at
    return error


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """`` Did you mean 'x'?`` for the choice nearest a misspelled ``word``, or ``""`` when none is near."""
    close = nearest(word, choices)
    return f" Did you mean {close!r}?" if close is not None else ""
