"""Reading attribute values the way every dialect needs: JSON text or structure, hidden, cut short.

Instrumentations write a structured value (messages, a tool's arguments or result) either as the
structure itself (an OTLP ``kvlist`` or array, decoded by the source) or as its JSON text, and the
same dialect does both across versions. :func:`structured` reads either, and says, as a
:class:`~.readings.Missing`, why a value cannot be read: not recorded, hidden by the user
(``__REDACTED__``), cut short by a length limit, not JSON. Never raises: a dialect's reader turns
whatever a span holds into a value or a reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from ..recording.reader import parse_json
from ..text import clip
from .readings import Missing
from .spans import Attributes

# The value instrumentations write in place of content the user chose to hide (OpenInference's
# ``hide_inputs`` and the like, Logfire's scrubbing): evidence that exists and was withheld.
REDACTED: Final = "__REDACTED__"
# The marks a length limit leaves at the end of a value it cut (ours, the SDK's, a backend's).
_CUT_MARKS: Final = ("…", "...")


def is_redacted(value: object) -> bool:
    return isinstance(value, str) and value.strip() == REDACTED


def not_recorded(what: str, key: str) -> Missing:
    return Missing(
        what,
        f"the span has no {key} (content capture is off, or this instrumentation does not record it)",
    )


def hidden(what: str, key: str) -> Missing:
    return Missing(what, f"{key} is hidden ({REDACTED}): the instrumentation was told not to record it")


def parsed_json(text: str) -> object:
    """``text`` parsed as JSON (the cyclic collector paused, as for a recording's lines); raises
    ``ValueError`` (``json.JSONDecodeError``) or ``RecursionError``.

    The same attribute text asked again (a dialect that looks at a span's messages before reading
    them) is parsed once: the last few are remembered by identity, the text held beside its value so
    its id cannot be reused while remembered. Callers never change what they are handed.
    """
    recent = _RECENT.get(id(text))
    if recent is not None and recent[0] is text:
        return recent[1]
    value = parse_json(text)
    if len(_RECENT) >= _RECENT_TEXTS:
        _RECENT.clear()
    _RECENT[id(text)] = (text, value)
    return value


# The input and output messages of the span being read, and its tool calls' arguments and result.
_RECENT_TEXTS: Final = 8
_RECENT: dict[int, tuple[str, object]] = {}


def structured(value: object, *, key: str, what: str, text_is_value: bool = False) -> object:
    """The value of attribute ``key``: itself when structured, parsed when JSON text, else a
    :class:`Missing` saying why it cannot be read.

    With ``text_is_value`` a text that is not JSON is the value itself (a tool that returned a plain
    sentence); without it, such text is unreadable (messages must be a JSON list).
    """
    if value is None:
        return not_recorded(what, key)
    if not isinstance(value, str):
        return value
    if is_redacted(value):
        return hidden(what, key)
    try:
        return parsed_json(value)
    except RecursionError:
        return Missing(what, f"{key} is JSON nested too deeply to read")
    except ValueError as error:
        if text_is_value and not looks_like_json_container(value):
            return value
        if value.rstrip().endswith(_CUT_MARKS):
            return Missing(
                what,
                f"{key} was cut short when it was recorded ({len(value)} characters kept), "
                "so it is no longer readable JSON",
            )
        if text_is_value:
            return value
        detail = error.msg if isinstance(error, json.JSONDecodeError) else str(error)
        return Missing(what, f"{key} is not readable JSON ({clip(detail, 80)})")


def looks_like_json_container(text: str) -> bool:
    """Whether ``text`` begins as a JSON object or array does (after white space)."""
    start = text.lstrip()[:1]
    return start in ("{", "[")


def text_of(value: object) -> str | None:
    """A string attribute as text; ``None`` for anything else."""
    return value if isinstance(value, str) else None


def arguments_of(
    value: object, *, key: str, what: str = "the tool's arguments"
) -> Mapping[str, Any] | Missing:
    """A tool call's arguments as a mapping: an object, or the JSON text of one. Any other value is
    the one argument ``$``, as the in-process integrations judge it."""
    read = structured(value, key=key, what=what, text_is_value=True)
    if isinstance(read, Missing):
        return read
    if isinstance(read, Mapping):
        return dict(read)
    return {"$": read}


def first_of(attributes: Attributes, *keys: str) -> tuple[str, object] | None:
    """The first of ``keys`` present in ``attributes``, with its value."""
    for key in keys:
        value = attributes.get(key)
        if value is not None:
            return key, value
    return None
