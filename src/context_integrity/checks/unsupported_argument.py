"""unsupported-argument @ choice: the model acted on a value nothing served.

THE MEASURED FAILURE. A window dropped the user message that carried the
real machine id and kept the model's own rendered answer. Asked about "that
machine", the model lifted a fragment of a job name out of its own earlier
prose, called the lookup tool with it, got an honest "nothing found", and
reported that a protected machine had no backups. Every other rail passed:
each value in the answer really was grounded. The referent was bound wrong
at the argument.

DECLARED, NEVER INFERRED. The same ``arguments_from`` declaration that arms
dangling-reference arms this check: the compose seam asks whether the ground
is still in reach; this seam asks whether the value chosen came from it.

THE RULE, per string leaf of each armed call, in order:
1. shorter than ``MIN_CHECKED_ARGUMENT_CHARS`` once trimmed -> not judged
   (short values match everything and prove nothing);
2. a value the tool's own input schema enumerates -> not judged (the schema
   told the model the word);
3. found (case-insensitively) in anything the request served -- the system
   instructions, a user message, a tool result -> supported;
4. found only in an application's external grounds -> excused, and the
   excusal is put on the record with the entry's source;
5. otherwise a finding, with one of two messages: the value's only trace is
   the model's own earlier text (self-reference), or it is nowhere at all.

The model's own text is never ground, and neither are the arguments of its
earlier calls. The external provider is consulted at most once per response,
and only when some value failed the run's own ground, so a value the run
served is never attributed to the app's door.

DISPOSITION, per response: any armed call -> ``checked-fail`` if anything
filed, else ``checked-pass``; no armed call -> ``not-applicable``.

Detection only: nothing is blocked; the call goes out exactly as chosen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from .. import limits
from ..findings import (
    CHECKED_FAIL,
    CHECKED_PASS,
    NOT_APPLICABLE,
    Encounter,
    ExternalGround,
    ExternalGrounding,
    Finding,
    Witness,
    tool_subject,
)
from ..text import Quote, Text, plural
from . import CANARY_EPOCH, as_canary
from .arguments import argument_leaves

UNSUPPORTED_ARGUMENT_CEILING: Final = (
    "Grounding here is substring matching: it catches a value the model made up or copied from "
    "its own earlier text, but not a real value taken from the wrong result, and a value the "
    'model composed from several served ones (such as "host1,host2") is reported even when '
    "each part was served."
)

# Joins the lowered corpus into one searchable string. A needle that holds
# the separator falls back to a text-by-text search, so no match can ever
# straddle two texts.
_SEPARATOR: Final = "\x00"


@dataclass(frozen=True, slots=True)
class ArmedCall:
    """One tool call whose tool declared ``arguments_from``, as the check needs it.

    ``declared_enums`` is the tool's flat, lowercased enum set
    (:func:`context_integrity.checks.arguments.declared_enum_values`).
    """

    tool_name: str
    call_id: str
    arguments: Mapping[str, Any] | object
    arguments_from: tuple[str, ...]
    declared_enums: frozenset[str]


class TextCorpus:
    """Texts searched by substring: all the check asks of a request's ground.

    ``count`` is how many non-empty texts it holds; ``contains(needle)`` (a
    lowered needle) is whether some text, lowered, holds it. The judge hands
    its incremental index (:mod:`context_integrity.judge.ground_index`); a
    plain sequence of texts is searched by :class:`_Corpus`, the reference.
    """

    __slots__ = ()
    count: int

    def contains(self, needle: str) -> bool:
        raise NotImplementedError


class _Corpus(TextCorpus):
    """Lowered texts, searched by substring; built once per check call."""

    __slots__ = ("_joined", "_texts", "count")

    def __init__(self, texts: Sequence[str]) -> None:
        self._texts = [text.lower() for text in texts if isinstance(text, str) and text]
        self._joined = joined_texts(self._texts)
        self.count = len(self._texts)

    def contains(self, needle: str) -> bool:
        return joined_hold(needle, self._texts, self._joined)


def joined_texts(texts: Iterable[str]) -> str:
    """``texts`` as one string to search (see :func:`joined_hold`)."""
    return _SEPARATOR.join(texts)


def joined_hold(needle: str, texts: Iterable[str], joined: str) -> bool:
    """Whether one of ``texts`` holds ``needle``, searched in ``joined`` (their
    :func:`joined_texts`) with one C search; a needle holding the separator is searched text
    by text, so no match can straddle two texts."""
    if _SEPARATOR in needle:
        return any(needle in text for text in texts)
    return needle in joined


# What an application may pass as ``external``: the entries themselves, or a
# zero-arg function returning them (consulted lazily, at most once).
ExternalGroundsProvider = Callable[[], Iterable[object]]


def _field(entry: object, name: str) -> object:
    try:
        if isinstance(entry, Mapping):
            return entry.get(name)
        return getattr(entry, name, None)
    except Exception:  # one hostile entry is garbage, not a reason to drop the rest
        return None


def _entry(entry: object) -> tuple[object, object]:
    """(value, source) of one entry: an ExternalGround, a mapping with those keys, or a pair."""
    if isinstance(entry, (tuple, list)) and len(entry) == 2:
        return entry[0], entry[1]
    return _field(entry, "value"), _field(entry, "source")


def _usable_grounds(entries: object) -> list[tuple[str, str, str]]:
    """(lowered value, raw value, source) for every usable entry; garbage is skipped."""
    if isinstance(entries, (str, bytes, Mapping)) or not isinstance(entries, Iterable):
        return []
    usable: list[tuple[str, str, str]] = []
    for index, entry in enumerate(entries):
        if index >= limits.MAX_EXTERNAL_GROUNDS:
            break
        value, source = _entry(entry)
        if isinstance(value, str) and value.strip() and isinstance(source, str) and source.strip():
            usable.append((value.lower(), value, source))
    return usable


class _ExternalGrounds:
    """The application's external grounds, read lazily and at most once."""

    __slots__ = ("_grounds", "_source")

    def __init__(self, source: object) -> None:
        self._source = source
        self._grounds: list[tuple[str, str, str]] | None = None

    def _read(self) -> list[tuple[str, str, str]]:
        if self._grounds is None:
            try:
                source = self._source
                entries = source() if callable(source) else source
                self._grounds = _usable_grounds(entries)
            except Exception:  # a provider that raises contributes nothing
                self._grounds = []
        return self._grounds

    def excuse(self, needle: str) -> ExternalGround | None:
        """The first usable entry whose value contains ``needle``, if any."""
        if self._source is None:
            return None
        for lowered, value, source in self._read():
            if needle in lowered:
                return ExternalGround(value=value, source=source)
        return None


def _grounds_phrase(arguments_from: Sequence[str]) -> str:
    names = [name for name in arguments_from if isinstance(name, str) and name]
    if not names:
        return "the tools its arguments come from"
    return " or ".join(f"'{name}'" for name in names)


def _finding(
    call: ArmedCall,
    path: str,
    value: str,
    *,
    self_referenced: bool,
    grounded_count: int,
    assistant_count: int,
    epoch: int,
) -> Finding:
    tool = call.tool_name
    # The path's keys below the declared parameter are the model's choice: a value like any other.
    where = Quote(path, bare=True, limit=None)
    predicate = Text(where)
    frame = (
        f"the request this call was chosen from: {plural(grounded_count, 'served text')} "
        f"(instructions, user messages, tool results) and {plural(assistant_count, 'assistant turn')}"
    )
    if self_referenced:
        nothing = Witness(
            subject=tool_subject(tool),
            predicate=predicate,
            value=Text("served by nothing; found only in the model's own earlier text"),
            epoch=epoch,
            stratum="asserted",
            provenance=Text(
                f"{frame}; the value occurs in an assistant turn and in none of the served texts"
            ),
        )
        defect = (
            "the only place that value appears in the request is the model's own earlier text. "
            "Text the model wrote is not evidence that any tool or person supplied the value"
        )
    else:
        nothing = Witness(
            subject=tool_subject(tool),
            predicate=predicate,
            value=Text("served by nothing; appears nowhere in the request"),
            epoch=epoch,
            stratum="asserted",
            provenance=Text(f"{frame}; the value occurs in none of them"),
        )
        defect = (
            "that value appears nowhere in the request: not in the instructions, not in any user "
            "message, not in any tool result"
        )
    chosen = Witness(
        subject=tool_subject(tool),
        predicate=predicate,
        value=value,
        epoch=epoch,
        stratum="asserted",
        provenance=Text(f"tool call {call.call_id}: argument '", where, "' as the model chose it"),
    )
    message = Text(
        f"Tool '{tool}' was called (call {call.call_id}) with ",
        where,
        " = ",
        Quote(value),
        f", but {defect}. To fix it, call {_grounds_phrase(call.arguments_from)} again and use a value it "
        f"returns. Nothing here blocked the call; it went out exactly as the model made it. "
        f"{UNSUPPORTED_ARGUMENT_CEILING}",
    )
    return Finding(
        kind="unsupported-argument",
        seam="choice",
        subjects=(tool_subject(tool),),
        predicate=predicate,
        witnesses=(chosen, nothing),
        epoch=epoch,
        message=message,
    )


def _lowered_enums(declared: object) -> frozenset[str]:
    if not isinstance(declared, (frozenset, set, list, tuple)):
        return frozenset()
    return frozenset(value.strip().lower() for value in declared if isinstance(value, str))


def unsupported_arguments_of(
    *,
    calls: Sequence[ArmedCall],
    grounded: Sequence[str] | TextCorpus,
    assistant: Sequence[str] | TextCorpus,
    external: object = None,
    epoch: int = 0,
) -> Encounter:
    """The pure judge: one model response's armed calls against the request they were chosen from.

    Each call's ``declared_enums`` is already the lowered enum set.

    ``grounded`` and ``assistant`` are the request's texts split by author
    (:func:`context_integrity.loop.frame_ground`), or a :class:`TextCorpus`
    over them (the judge's index of the conversation). ``external`` is an
    application's external grounds: an iterable of :class:`ExternalGround`
    (or mappings / objects with ``value`` and ``source``), or a zero-arg
    callable returning one, called at most once and only when some value
    failed the run's own ground. Garbage contributes nothing; nothing raises.
    """
    if not calls:
        return Encounter(findings=[], disposition=NOT_APPLICABLE)

    served = grounded if isinstance(grounded, TextCorpus) else _Corpus(grounded)
    own = assistant if isinstance(assistant, TextCorpus) else _Corpus(assistant)
    door = _ExternalGrounds(external)
    findings: list[Finding] = []
    call_ids: list[str | None] = []
    excusals: list[ExternalGrounding] = []

    for call in calls:
        enums = call.declared_enums
        for path, value in argument_leaves(call.arguments):
            trimmed = value.strip()
            if len(trimmed) < limits.MIN_CHECKED_ARGUMENT_CHARS:
                continue
            needle = trimmed.lower()
            if needle in enums or served.contains(needle):
                continue
            excused_by = door.excuse(needle)
            if excused_by is not None:
                excusals.append(
                    ExternalGrounding(
                        tool_name=call.tool_name,
                        call_id=call.call_id,
                        path=path,
                        value=value,
                        source=excused_by.source,
                    )
                )
                continue
            findings.append(
                _finding(
                    call,
                    path,
                    value,
                    self_referenced=own.contains(needle),
                    grounded_count=served.count,
                    assistant_count=own.count,
                    epoch=epoch,
                )
            )
            call_ids.append(call.call_id)

    return Encounter(
        findings=findings,
        disposition=CHECKED_FAIL if findings else CHECKED_PASS,
        call_ids=call_ids,
        excusals=excusals,
    )


def check_unsupported_arguments(
    *,
    calls: Sequence[ArmedCall],
    grounded: Sequence[str],
    assistant: Sequence[str],
    external: object = None,
    epoch: int = 0,
) -> Encounter:
    """Judge one model response's armed calls (see :func:`unsupported_arguments_of`).

    A tolerant wrapper: each call's ``declared_enums`` may be any collection of
    words, and is lowered here. Never raises.
    """
    return unsupported_arguments_of(
        calls=[replace(call, declared_enums=_lowered_enums(call.declared_enums)) for call in calls],
        grounded=grounded,
        assistant=assistant,
        external=external,
        epoch=epoch,
    )


# ── Dev-posture canary ───────────────────────────────────────────────────


def unsupported_argument_canary() -> Encounter:
    """A known-bad response run through the real check: an id nothing in the request served.

    A live check returns exactly one ``unsupported-argument`` finding, marked
    synthetic so it can never be mistaken for a real one.
    """
    encounter = check_unsupported_arguments(
        calls=[
            ArmedCall(
                tool_name="canary_tool",
                call_id="canary-call",
                arguments={"id": "canary-fabricated-id"},
                arguments_from=("canary_ground",),
                declared_enums=frozenset(),
            )
        ],
        grounded=["The canary request served this one sentence and no identifiers at all."],
        assistant=[],
        epoch=CANARY_EPOCH,
    )
    return as_canary(encounter)
