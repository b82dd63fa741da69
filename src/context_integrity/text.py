"""Small text helpers shared by every check's messages."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .limits import MAX_QUOTED_CHARS


def clip(text: str, limit: int = MAX_QUOTED_CHARS) -> str:
    """Cut ``text`` to ``limit`` characters, marking the cut with an ellipsis."""
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + "…"


def nearest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate ``word`` most likely misspells (``difflib``'s closest match), or ``None``."""
    import difflib  # only a misspelled name pays for it

    close = difflib.get_close_matches(word, list(candidates), n=1)
    return close[0] if close else None


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``"1 row"``, ``"2 rows"``."""
    return f"{count} {noun if count == 1 else (plural_form or noun + 's')}"


def bounded_json(value: Any, limit: int) -> str:
    """Compact JSON of ``value`` (``default=str``), encoded only as far as ``limit`` characters.

    A tool result can be megabytes; clipping after ``json.dumps`` would still
    encode (and hold) all of it. The incremental encoder stops as soon as
    enough text exists. Raises what ``json`` raises (circular references).
    """
    chunks: list[str] = []
    size = 0
    for chunk in json.JSONEncoder(default=str, ensure_ascii=False).iterencode(value):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            break
    return "".join(chunks)


def render_value(value: Any, limit: int = MAX_QUOTED_CHARS) -> str:
    """One value the way a person would recognise it, clipped.

    Strings are quoted; numbers and booleans print as themselves; anything
    else is shown as compact JSON (falling back to ``repr``). Never raises.
    """
    try:
        if isinstance(value, str):
            return f'"{clip(value, limit)}"'
        if isinstance(value, (bool, int, float)) or value is None:
            return repr(value)
        try:
            text = bounded_json(value, limit)
        except (TypeError, ValueError, RecursionError):
            text = repr(value)
        return clip(text, limit)
    except Exception:  # a hostile __repr__ must not reach the host
        return f"<unprintable {type(value).__name__}>"
