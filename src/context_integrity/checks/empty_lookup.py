"""empty-lookup @ write: a lookup by a value the run served came back empty.

ADVISORY BY CONSTRUCTION. Every finding this check files is a doubt, never a
contradiction: an empty result can be the truth.

THE MEASURED FAILURE. A reverse lookup filtered on a key its producer spelled
differently, so it came back empty every time, and the model reported "no
record" for things that existed. An empty answer to a question asked with a
value the run itself served is the one place such a broken join shows.

DECLARED, NEVER INFERRED. The consumer names its producers in
``arguments_from``; the operator turns the notice on. The producer texts
come from this run only.

WHAT COUNTS AS EMPTY. Only two shapes are read: an :class:`Absence` (the
tool's own "searched, matched nothing", made with :func:`absent`) and a list
or tuple with zero rows. Anything else -- prose, ``None``, ``0``, ``''``,
``{"rows": []}``, a generator (never consumed) -- is bespoke and not judged.

THE RULE, in order: bespoke -> ``not-applicable``; not empty ->
``checked-pass``; no declared producer has served anything yet ->
``unreachable`` (the consumer was called before its producers); each string
argument (at least ``MIN_CHECKED_ARGUMENT_CHARS`` once trimmed) found in a
declared producer's served text -> one advisory finding per argument path;
any -> ``checked-fail``, none -> ``checked-pass`` (a real comparison found no
join). No enum fence and no external-grounds door here: the question is only
whether a served value led to nothing.

Not dangling-reference: there the ground left reach; here it is in reach.
Detection only: nothing is blocked, changed or retried.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Final

from .. import limits
from ..contracts.results import ResultReading, read_result
from ..findings import (
    CHECKED_FAIL,
    CHECKED_PASS,
    NOT_APPLICABLE,
    UNREACHABLE,
    Encounter,
    Finding,
    Witness,
    tool_subject,
)
from ..text import Quote, Text
from . import CANARY_EPOCH, as_canary
from .arguments import argument_leaves

EMPTY_LOOKUP_CEILING: Final = (
    "An empty result can be true: this notice marks a place to look, never a verdict, because a "
    "real absence and a broken filter look exactly the same from here."
)

# ── What producers served, indexed as they serve it ──────────────────────

# Joins one producer's texts for a single C-level search; a needle holding it falls back to a scan.
_SEPARATOR: Final = "\x00"


class _Shelf:
    """One producer's served texts, lowered once, oldest first, searched as one joined string."""

    __slots__ = ("_joined", "_starts", "texts")

    def __init__(self) -> None:
        self.texts: deque[tuple[int, str]] = deque()
        self._joined: str | None = None
        self._starts: list[int] = []

    def add(self, seq: int, lowered: str) -> None:
        self.texts.append((seq, lowered))
        self._joined = None

    def drop_oldest(self) -> int:
        self._joined = None
        return len(self.texts.popleft()[1])

    def first(self, needle: str) -> int | None:
        """The sequence number of the oldest text holding ``needle``, if any."""
        if _SEPARATOR in needle:
            return next((seq for seq, text in self.texts if needle in text), None)
        if self._joined is None:
            self._joined = _SEPARATOR.join(text for _, text in self.texts)
            starts, at = [], 0
            for _, text in self.texts:
                starts.append(at)
                at += len(text) + 1
            self._starts = starts
        position = self._joined.find(needle)
        if position < 0:
            return None
        return self.texts[bisect_right(self._starts, position) - 1][0]


class ProducedCorpus:
    """Every producer text a run served, lowered and shelved by producer once, as it is served.

    A lookup is then one bounded substring search per declared producer (in C), instead of
    lowering and scanning every text ever served on every empty result. The semantics are the
    check's own: a value counts as served when it is a case-insensitive substring of a text a
    declared producer served; the producer named is the one whose earliest such text is oldest.
    Bounded by ``limits.MAX_SERVED_RESULTS_PER_RUN`` texts and ``limits.MAX_PRODUCED_CHARS_PER_RUN``
    characters; past either, the oldest text is dropped.
    """

    __slots__ = ("_chars", "_keys", "_order", "_seq", "_shelves")

    def __init__(self) -> None:
        self._shelves: dict[str, _Shelf] = {}
        self._order: deque[tuple[str, str]] = deque()  # (producer, key), oldest first
        self._keys: set[tuple[str, str]] = set()
        self._seq = 0
        self._chars = 0

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> ProducedCorpus:
        corpus = cls()
        for index, (producer, text) in enumerate(pairs):
            corpus.add(producer, f"#{index}", text)
        return corpus

    def __contains__(self, entry: tuple[str, str]) -> bool:
        return entry in self._keys

    def __len__(self) -> int:
        return len(self._order)

    def kept(self) -> list[tuple[str, str]]:
        """(producer, key) of every text kept, oldest first."""
        return list(self._order)

    def add(self, producer: str, key: str, text: str) -> None:
        """Shelve one served text (an empty one, or a key already kept, changes nothing)."""
        if not text or (producer, key) in self._keys:
            return
        lowered = text[: limits.MAX_SERVED_TEXT_CHARS].lower()
        while self._order and (
            len(self._order) >= limits.MAX_SERVED_RESULTS_PER_RUN
            or self._chars + len(lowered) > limits.MAX_PRODUCED_CHARS_PER_RUN
        ):
            oldest = self._order.popleft()
            self._keys.discard(oldest)
            self._chars -= self._shelves[oldest[0]].drop_oldest()
        self._seq += 1
        self._shelves.setdefault(producer, _Shelf()).add(self._seq, lowered)
        self._order.append((producer, key))
        self._keys.add((producer, key))
        self._chars += len(lowered)

    def serves_any(self, producers: Iterable[str]) -> bool:
        return any(self._shelves.get(name) is not None and self._shelves[name].texts for name in producers)

    def carrier(self, needle: str, producers: Iterable[str]) -> str | None:
        """The declared producer whose oldest text holding ``needle`` (already lowered) is oldest."""
        best: tuple[int, str] | None = None
        for name in producers:
            shelf = self._shelves.get(name)
            seq = shelf.first(needle) if shelf is not None else None
            if seq is not None and (best is None or seq < best[0]):
                best = (seq, name)
        return best[1] if best is not None else None


# ── The check ────────────────────────────────────────────────────────────


def _empty_phrase(reading: ResultReading) -> str:
    if reading.shape == "absence":
        return "a declared absence (the tool said its search ran and matched nothing)"
    return "a rowset with zero rows"


def _declared(arguments_from: object) -> list[str]:
    if isinstance(arguments_from, str):
        return [arguments_from]
    if not isinstance(arguments_from, (Sequence, set, frozenset)):
        return []
    return [name for name in arguments_from if isinstance(name, str) and name]


def _finding(
    *,
    tool_name: str,
    call_id: str,
    path: str,
    value: str,
    producer: str,
    reading: ResultReading,
    result: object,
    epoch: int,
) -> Finding:
    phrase = _empty_phrase(reading)
    # The path's keys below the declared parameter are the model's choice: a value like any other.
    where = Quote(path, bare=True, limit=None)
    predicate = Text(where)
    witnesses = (
        Witness(
            subject=tool_subject(tool_name),
            predicate=predicate,
            value=value,
            epoch=epoch,
            stratum="asserted",
            provenance=Text(f"tool call {call_id}: argument '", where, "' as the model chose it"),
        ),
        Witness(
            subject=tool_subject(producer),
            predicate=predicate,
            value=Text("served this value earlier in this run"),
            epoch=epoch,
            stratum="asserted",
            provenance=Text(
                f"declared ground: '{tool_name}' names '{producer}' in arguments_from, and a result "
                f"of '{producer}' served earlier in this run contains the value"
            ),
        ),
        Witness(
            subject=tool_subject(tool_name),
            predicate=predicate,
            value=Text(f"found nothing — {phrase}"),
            epoch=epoch,
            stratum="asserted",
            provenance=Text(f"tool call {call_id}: the result as the tool returned it: ", Quote(result)),
        ),
    )
    message = Text(
        f"Tool '{tool_name}' was called with ",
        where,
        " = ",
        Quote(value),
        f", a value '{producer}' served earlier in this run, and it returned {phrase}: either nothing "
        f"really matches, or the lookup cannot find what exists (a wrong filter, a key spelled "
        f"differently). {EMPTY_LOOKUP_CEILING} (Tool call {call_id}.) Nothing here blocked the call, "
        f"changed the result, or retried anything.",
    )
    return Finding(
        kind="empty-lookup",
        seam="write",
        subjects=(tool_subject(tool_name), tool_subject(producer)),
        predicate=predicate,
        witnesses=witnesses,
        epoch=epoch,
        message=message,
        advisory=True,
    )


def empty_lookup_of(
    reading: ResultReading,
    *,
    tool_name: str,
    call_id: str,
    arguments: object,
    arguments_from: tuple[str, ...],
    produced: Sequence[tuple[str, str]] | ProducedCorpus,
    result: object = None,
    epoch: int = 0,
) -> Encounter:
    """The pure judge: one armed call's result, already read, against what its producers served.

    ``produced`` is what producers served earlier in this run: the run's
    :class:`ProducedCorpus`, or (producer tool name, served text) pairs; only
    producers ``arguments_from`` declares count. ``result`` is the raw value,
    quoted in the witness.
    """
    if reading.shape in ("other", "unreadable"):
        return Encounter(findings=[], disposition=NOT_APPLICABLE)
    if not reading.empty:
        return Encounter(findings=[], disposition=CHECKED_PASS)
    corpus = produced if isinstance(produced, ProducedCorpus) else ProducedCorpus.of(produced)
    if not corpus.serves_any(arguments_from):
        return Encounter(findings=[], disposition=UNREACHABLE)

    findings: list[Finding] = []
    for path, value in argument_leaves(arguments):
        trimmed = value.strip()
        if len(trimmed) < limits.MIN_CHECKED_ARGUMENT_CHARS:
            continue
        carrier = corpus.carrier(trimmed.lower(), arguments_from)
        if carrier is not None:
            findings.append(
                _finding(
                    tool_name=tool_name,
                    call_id=call_id,
                    path=path,
                    value=value,
                    producer=carrier,
                    reading=reading,
                    result=result,
                    epoch=epoch,
                )
            )
    return Encounter(findings=findings, disposition=CHECKED_FAIL if findings else CHECKED_PASS)


def check_empty_lookup(
    *,
    tool_name: str,
    call_id: str,
    arguments: object,
    arguments_from: Sequence[str],
    result: object,
    produced: Sequence[tuple[str, str]],
    epoch: int = 0,
) -> Encounter:
    """Judge one armed tool call's own return value for an empty lookup by a served value.

    A tolerant wrapper over :func:`empty_lookup_of`: it reads the result, keeps
    only well-formed ``arguments_from`` names and (producer, text) pairs, and
    never raises.
    """
    pairs: list[tuple[str, str]] = []
    for pair in produced:
        try:
            producer, text = pair
        except (TypeError, ValueError):
            continue
        if isinstance(producer, str) and isinstance(text, str) and text:
            pairs.append((producer, text))
    return empty_lookup_of(
        read_result(result),
        tool_name=tool_name,
        call_id=call_id,
        arguments=arguments,
        arguments_from=tuple(_declared(arguments_from)),
        produced=pairs,
        result=result,
        epoch=epoch,
    )


# ── Dev-posture canary ───────────────────────────────────────────────────


def empty_lookup_canary() -> Encounter:
    """A known-bad lookup run through the real check: a served id that found zero rows.

    A live check returns exactly one advisory ``empty-lookup`` finding, marked
    synthetic so it can never be mistaken for a real one.
    """
    encounter = check_empty_lookup(
        tool_name="canary_tool",
        call_id="canary-call",
        arguments={"id": "canary-grounded-id"},
        arguments_from=["canary_ground"],
        result=[],
        produced=[("canary_ground", "The canary producer served canary-grounded-id.")],
        epoch=CANARY_EPOCH,
    )
    return as_canary(encounter)
