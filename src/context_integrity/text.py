"""Small text helpers shared by every check's messages, and the shape of a sentence that quotes.

A finding's sentence is ours, but the values it quotes come from a tool, a model or a user. A check
writes such a sentence as a :class:`Text`: its words, and each quoted value as a :class:`Quote`
that holds the value whole. ``str(text)`` is the sentence as a person reads it in process, each
value clipped as :func:`render_value` clips it; where the finding leaves the process
(:mod:`context_integrity.redaction`), each quoted value passes the application's redaction hook
whole, and only then is clipped and set in the sentence. A check never renders a value itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from .limits import MAX_QUOTED_CHARS


def clip(text: str, limit: int = MAX_QUOTED_CHARS) -> str:
    """Cut ``text`` to ``limit`` characters, marking the cut with an ellipsis."""
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + "…"


# Every character a terminal or a reader would obey or not see: the C0 and C1 controls (ESC, BEL, CR,
# and the rest), bidi overrides and isolates, zero-width and other format characters (Unicode
# tag characters among them, which carry hidden text to a model), line and paragraph separators,
# and lone surrogates (which cannot even be printed). Unicode's categories Cc, Cf, Cs, Zl and Zp;
# tests/test_text.py holds the class to the running Python's Unicode database.
_UNSEEN: Final = re.compile(
    "[\x00-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f]"
)


def _escape(match: re.Match[str]) -> str:
    point = ord(match.group())
    if point <= 0xFF:
        return f"\\x{point:02x}"
    return f"\\u{point:04x}" if point <= 0xFFFF else f"\\U{point:08x}"


def visible(text: str) -> str:
    """``text`` with every control, bidi and invisible format character written as its escape
    (``\\x1b``, ``\\u202e``), so a recorded string can never move a terminal's cursor, set its title,
    write its clipboard, reorder what a reader sees or hide text from one. Every renderer of what a
    recording holds (the text report, the HTML page, ``find_context_errors``) passes its strings here.
    A line's own newline is a control too: apply it to each line, not to a page."""
    # isprintable() is false for every character the pattern matches (and for a few it leaves alone,
    # such as a no-break space), and ten times faster: a line of plain text costs one C pass.
    if text.isprintable() or _UNSEEN.search(text) is None:
        return text
    return _UNSEEN.sub(_escape, text)


# The controls an ASCII text can hold, as bytes: a page of ASCII is checked for them in one pass of
# bytes.translate, three times cheaper than str.isprintable.
_ASCII_CONTROLS: Final = bytes([*range(0x20), 0x7F])


def visible_lines(lines: list[str]) -> list[str]:
    """Each of ``lines`` as :func:`visible` shows it; a page of plain text is seen in one C pass."""
    page = "".join(lines)
    if page.isascii():
        if len(page.encode("ascii").translate(None, _ASCII_CONTROLS)) == len(page):
            return lines
    elif page.isprintable():
        return lines
    return [visible(line) for line in lines]


def repr_clipped(value: object, limit: int = MAX_QUOTED_CHARS) -> str:
    """``repr(value)`` clipped to ``limit``: how a message or a log line quotes what it was handed.

    A declaration read from a server, a name a host chose: either can be a megabyte, and a sentence
    about it must stay a sentence. Never raises (a hostile ``__repr__`` is named by its type).
    """
    try:
        if isinstance(value, str) and len(value) > limit:
            value = value[:limit]  # never repr a megabyte to keep eighty characters of it
            return clip(repr(value)[:-1], limit)
        return clip(repr(value), limit)
    except Exception:
        return f"<unprintable {type(value).__name__}>"


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


def exception_message(error: BaseException) -> str:
    """``str(error)``, or its type's name when the exception cannot even be printed. Never raises."""
    try:
        return str(error) or type(error).__name__
    except Exception:
        return f"<unprintable {type(error).__name__}>"


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


@dataclass(frozen=True, slots=True)
class Quote:
    """A value a tool, a model or a user handed the run, as a finding quotes it; held whole.

    ``bare`` writes a string as it is (an argument path, a rendered arguments object) where a value
    is otherwise shown as :func:`render_value` shows it (a string in double quotes). ``limit``
    clips what is shown (``None``: only the exported attribute's own bound clips it).
    """

    value: object
    bare: bool = False
    limit: int | None = MAX_QUOTED_CHARS

    def shown(self, seen: str | None = None) -> str:
        """The quote as the sentence shows it: of the value itself, or of ``seen``, the text the
        redaction hook let through for it."""
        value = self.value if seen is None else seen
        if self.bare or (seen is not None and not isinstance(self.value, str)):
            text = value if isinstance(value, str) else render_value(value, self.limit or MAX_QUOTED_CHARS)
            return text if self.limit is None else clip(text, self.limit)
        return render_value(value, self.limit or MAX_QUOTED_CHARS)


@dataclass(frozen=True, slots=True)
class Digest:
    """A short digest that tells two long values apart where only their clipped start is shown.

    It is a function of the value, so it is written only where no redaction hook is set.
    """

    value: str


class Text(str):
    """A sentence of ours with the values it quotes kept apart (:data:`parts`).

    It is the ``str`` a person reads in process (each :class:`Quote` shown clipped), so everything
    that reads a finding's message as text still does; :mod:`context_integrity.redaction` reads
    :data:`parts` instead, and hands the application's hook each quoted value whole.
    """

    parts: tuple[str | Quote | Digest, ...]

    def __new__(cls, *parts: str | Quote | Digest) -> Text:
        flat: list[str | Quote | Digest] = []
        for part in parts:
            if isinstance(part, Text):
                flat.extend(part.parts)
            elif isinstance(part, str):
                if part:
                    flat.append(str(part))
            else:
                flat.append(part)
        self = super().__new__(cls, "".join(_plain(part) for part in flat))
        self.parts = tuple(flat)
        return self

    def __reduce__(self) -> tuple[type[Text], tuple[str | Quote | Digest, ...]]:
        # A copy or a pickle keeps the quotes apart: rebuilt from its parts, never from its text.
        return (Text, self.parts)

    @property
    def quotes(self) -> tuple[Quote, ...]:
        return tuple(part for part in self.parts if isinstance(part, Quote))


def _plain(part: str | Quote | Digest) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, Quote):
        return part.shown()
    return f" #{part.value}"


def quoted(value: object, *, bare: bool = False, limit: int | None = MAX_QUOTED_CHARS) -> Text:
    """One quoted value as a :class:`Text` of its own (a witness value, a predicate, a subject id)."""
    return Text(Quote(value, bare=bare, limit=limit))
