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

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal

from .. import limits
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
from ..text import render_value
from . import CANARY_EPOCH
from .arguments import argument_leaves

EMPTY_LOOKUP_CEILING: Final = (
    "An empty result can be true: this notice marks a place to look, never a verdict, because a "
    "real absence and a broken filter look exactly the same from here."
)

# ── The tool's way to say "searched, matched nothing" ────────────────────


class Absence(str):
    """A tool's declared "the search ran and matched nothing".

    It is a ``str`` on purpose: frameworks that hand tool results to the model
    as text keep working, and the model reads a plain sentence. It also
    carries what was looked for and why nothing matched, for the checks.
    Make one with :func:`absent`.
    """

    looked_for: object
    reason: str | None

    def __new__(cls, looked_for: object = None, reason: str | None = None) -> Absence:
        text = "No match: the search ran and found nothing"
        if looked_for is not None:
            text += f" for {render_value(looked_for)}"
        text += "."
        if isinstance(reason, str) and reason.strip():
            text += f" Reason: {reason.strip()}"
            if not text.endswith((".", "!", "?")):
                text += "."
        made = super().__new__(cls, text)
        made.looked_for = looked_for
        made.reason = reason
        return made

    def __getnewargs__(self) -> tuple[object, str | None]:  # type: ignore[override]
        # copy and pickle rebuild from what was looked for, not from the text
        return (self.looked_for, self.reason)


def absent(looked_for: object = None, *, reason: str | None = None) -> Absence:
    """Return this from a lookup tool when the search ran and matched nothing.

    ``looked_for`` is what was searched for (shown to the model, kept whole on
    ``.looked_for``); ``reason`` is an optional explanation.
    """
    return Absence(looked_for, reason)


def is_absence(value: object) -> bool:
    """Whether ``value`` is a declared absence made by :func:`absent`."""
    return isinstance(value, Absence)


# ── Reading a lookup result ──────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class LookupReading:
    """What a lookup result says about emptiness; ``rows`` is ``None`` for an absence."""

    shape: Literal["rowset", "absence"]
    empty: bool
    rows: int | None


def read_lookup_result(value: object) -> LookupReading | None:
    """Read a tool's own return value as a lookup result, or ``None`` when it is bespoke.

    An :class:`Absence` is an empty absence; a list or tuple (of anything) is a
    rowset, empty iff it has no elements; a named tuple is one record, not a
    rowset. Everything else returns ``None`` and is never consumed.
    """
    if isinstance(value, Absence):
        return LookupReading(shape="absence", empty=True, rows=None)
    if isinstance(value, list) or (isinstance(value, tuple) and not hasattr(value, "_fields")):
        rows = len(value)
        return LookupReading(shape="rowset", empty=rows == 0, rows=rows)
    return None


# ── The check ────────────────────────────────────────────────────────────


def _empty_phrase(reading: LookupReading) -> str:
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
    reading: LookupReading,
    result: object,
    epoch: int,
) -> Finding:
    phrase = _empty_phrase(reading)
    witnesses = (
        Witness(
            subject=tool_subject(tool_name),
            predicate=path,
            value=value,
            epoch=epoch,
            stratum="asserted",
            provenance=f"tool call {call_id}: argument '{path}' as the model chose it",
        ),
        Witness(
            subject=tool_subject(producer),
            predicate=path,
            value="served this value earlier in this run",
            epoch=epoch,
            stratum="asserted",
            provenance=(
                f"declared ground: '{tool_name}' names '{producer}' in arguments_from, and a result "
                f"of '{producer}' served earlier in this run contains the value"
            ),
        ),
        Witness(
            subject=tool_subject(tool_name),
            predicate=path,
            value=f"found nothing — {phrase}",
            epoch=epoch,
            stratum="asserted",
            provenance=f"tool call {call_id}: the result as the tool returned it: {render_value(result)}",
        ),
    )
    message = (
        f"Tool '{tool_name}' was called with {path} = {render_value(value)}, a value '{producer}' "
        f"served earlier in this run, and it returned {phrase}: either nothing really matches, or "
        f"the lookup cannot find what exists (a wrong filter, a key spelled differently). "
        f"{EMPTY_LOOKUP_CEILING} (Tool call {call_id}.) Nothing here blocked the call, changed the "
        f"result, or retried anything."
    )
    return Finding(
        kind="empty-lookup",
        seam="write",
        subjects=(tool_subject(tool_name), tool_subject(producer)),
        predicate=path,
        witnesses=witnesses,
        epoch=epoch,
        message=message,
        advisory=True,
    )


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

    ``produced`` is every (producer tool name, served text) pair earlier in
    this run, as the judge kept them; only producers ``arguments_from``
    declares, with non-empty text, count.
    """
    reading = read_lookup_result(result)
    if reading is None:
        return Encounter(findings=[], disposition=NOT_APPLICABLE)
    if not reading.empty:
        return Encounter(findings=[], disposition=CHECKED_PASS)

    declared = set(_declared(arguments_from))
    grounds: list[tuple[str, str]] = []
    for pair in produced:
        try:
            producer, text = pair
        except (TypeError, ValueError):
            continue
        if producer in declared and isinstance(text, str) and text:
            grounds.append((producer, text.lower()))
    if not grounds:
        return Encounter(findings=[], disposition=UNREACHABLE)

    findings: list[Finding] = []
    for path, value in argument_leaves(arguments):
        trimmed = value.strip()
        if len(trimmed) < limits.MIN_CHECKED_ARGUMENT_CHARS:
            continue
        needle = trimmed.lower()
        carrier = next((name for name, text in grounds if needle in text), None)
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
    return replace(encounter, findings=[replace(f, synthetic=True) for f in encounter.findings])
