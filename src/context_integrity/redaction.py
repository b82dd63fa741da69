"""What the application's redaction hook sees, and a finding as it leaves the process.

``setup(redact=...)`` promises the hook sees what leaves. It sees each value a tool, a model or a
user handed the run, WHOLE (up to :data:`~context_integrity.limits.MAX_REDACTED_CHARS`), before
anything is clipped, and once per value of one encounter (:class:`Redaction` remembers what it
was handed). What stays outside the hook is what the application declared or what names nothing:
tool, agent, toolset and column names, the claims it declared, call ids, kinds and seams, and the
words of our own sentences (``docs/redaction.md`` lists them).

A finding is rendered here, not by its check: a check quotes values as :class:`~.text.Quote`
parts of a :class:`~.text.Text`, and :func:`rendered_finding` sets each quoted value in its
sentence only after the hook has seen it whole. A plain string where a value may stand (a
message, a witness value or provenance) is handed to the hook whole, as a value; a plain string
where a name stands (a subject, a predicate) is a name and stays as it is.

Pure: no OpenTelemetry, no I/O. The telemetry layer makes one :class:`Redaction` per encounter it
emits and hands it everything that leaves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Final

from .findings import Finding, Subject, Witness
from .limits import MAX_REDACTED_CHARS
from .text import Quote, Text, clip, render_value

Redactor = Callable[[str], str]

# What a text becomes when the application's redaction hook raised on it or returned no text.
REDACTED: Final = "[redacted]"


class Redaction:
    """The application's hook (or none) over one encounter: each distinct text is handed over once."""

    __slots__ = ("_seen", "hook")

    def __init__(self, hook: Redactor | None) -> None:
        self.hook = hook
        self._seen: dict[str, str] = {}

    def whole(self, text: str, handed: int = MAX_REDACTED_CHARS) -> str:
        """A text that came from a tool, a model or a user, as the hook lets it leave (unclipped);
        the hook is handed its first ``handed`` characters."""
        hook = self.hook
        if hook is None:
            return text
        text = text[:handed]
        seen = self._seen.get(text)
        if seen is None:
            try:
                out = hook(text)
            except Exception:  # a broken hook must not leak what it was meant to hide
                out = REDACTED
            seen = self._seen[text] = out if isinstance(out, str) else REDACTED
        return seen

    def value(self, value: object) -> object:
        """A witness value: a :class:`Text` set part by part; any other value through the hook whole
        (as text: what the hook returns is text), or as it is without a hook."""
        if isinstance(value, Text):
            return self.text(value)
        if self.hook is None:
            return value
        return self.whole(value if isinstance(value, str) else render_value(value, MAX_REDACTED_CHARS))

    def text(self, text: str) -> str:
        """Where a value may stand: a :class:`Text` set part by part, a plain string handed over whole."""
        if isinstance(text, Text):
            return self._parts(text)
        return self.whole(text)

    def name(self, text: str) -> str:
        """Where a name stands: a :class:`Text` set part by part, a plain string (a name) as it is."""
        if isinstance(text, Text):
            return self._parts(text)
        return text

    def _parts(self, text: Text) -> str:
        if self.hook is None:
            return str(text)
        out: list[str] = []
        for part in text.parts:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, Quote):
                out.append(self._quote(part))
            # A Digest is a function of the value: with a hook, it stays home.
        return "".join(out)

    def _quote(self, quote: Quote) -> str:
        value = quote.value
        whole = value if isinstance(value, str) else render_value(value, MAX_REDACTED_CHARS)
        return quote.shown(self.whole(whole))


def rendered_finding(finding: Finding, redaction: Redaction) -> Finding:
    """``finding`` as it may leave: every quoted value through the hook whole, then clipped; plain
    strings only. Without a hook, the sentence a person reads in process."""
    name = redaction.name
    return replace(
        finding,
        subjects=tuple(_subject(subject, name) for subject in finding.subjects),
        predicate=None if finding.predicate is None else name(finding.predicate),
        witnesses=tuple(
            Witness(
                subject=_subject(witness.subject, name),
                predicate=name(witness.predicate),
                value=redaction.value(witness.value),
                epoch=witness.epoch,
                stratum=witness.stratum,
                provenance=redaction.text(witness.provenance),
            )
            for witness in finding.witnesses
        ),
        message=redaction.text(finding.message),
    )


def _subject(subject: Subject, name: Callable[[str], str]) -> Subject:
    rendered = name(subject.id)
    return subject if rendered is subject.id else Subject(subject.kind, rendered)


def plain_finding(finding: Finding) -> Finding:
    """``finding`` as a person reads it in process, holding no quoted value: what a run keeps, so a
    kept finding never holds a tool's result alive."""
    if not _quotes_anything(finding):
        return finding
    return rendered_finding(finding, Redaction(None))


def _quotes_anything(finding: Finding) -> bool:
    if isinstance(finding.message, Text) or isinstance(finding.predicate, Text):
        return True
    if any(isinstance(subject.id, Text) for subject in finding.subjects):
        return True
    return any(
        isinstance(witness.value, Text)
        or isinstance(witness.provenance, Text)
        or isinstance(witness.predicate, Text)
        or isinstance(witness.subject.id, Text)
        for witness in finding.witnesses
    )


def clipped_whole(text: str, redaction: Redaction, limit: int) -> str:
    """A text from the world as it may leave: through the hook whole, then clipped to ``limit``."""
    return clip(redaction.whole(text), limit)
