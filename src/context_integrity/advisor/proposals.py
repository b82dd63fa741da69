"""Proposals: the cheapest declarations the evidence supports, each with its evidence, or why not.

Pure: a merged :class:`~context_integrity.judge.profile.Profile` in, :class:`Proposals` out. The rule
stays *declared, never inferred*: nothing here arms a check; the user reads the proposal and its
evidence, and copies what they agree with.

What is proposed, and what is refused:

- ``result_columns``: per column, the kind of value seen in (nearly) every row; ``nullable`` where a
  ``None`` or a missing key was seen. A column holding values of more than one kind gets the
  majority kind, and the minority is shown as what the declaration would have filed: that mixture
  is exactly the defect the check exists for. A column absent from some call's every row, a column
  that was ``None`` everywhere, and a column of lists or objects are listed, not guessed.
- ``arguments_from``: a producer that served, earlier in the same run, most of the values the model
  chose for an argument. Not proposed: values shorter than the grounding checks' minimum (they match
  anything), values found in a user message (the user's words ground them), and a producer that
  echoes its own arguments (a search tool repeating its query serves every value it is asked for).
- ``once_per_run``: never proposed, only listed: tools the model called twice with the same
  arguments in one run, for the user to judge (only they know which tools have side effects).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from ..contracts.columns import ColumnType
from ..judge.profile import ArgumentTally, Profile, ToolTally
from ..judge.registry import BUILT_IN
from ..ledger import CheckId
from .claims import ClaimProposal

# Evidence below which a proposal is "not enough evidence", never a guess: rowset calls for the
# columns of a tool, and argument values long enough to judge for an argument's producers.
MIN_ROWSET_CALLS: Final = 3
MIN_JUDGED_VALUES: Final = 3
# A producer is proposed when it served at least this share of an argument's judged values.
MIN_PRODUCER_SHARE: Final = 0.5
# An argument whose values a user message held at least this often comes from the user.
USER_SHARE: Final = 0.5

# Which kinds of value each column type accepts, for the majority count (a date column takes ISO
# date strings too; a string column takes them as strings).
_KIND_TYPE: Final[Mapping[str, ColumnType]] = {
    "number": "number",
    "string": "string",
    "boolean": "boolean",
    "date": "date",
}
_EMPTY_KINDS: Final = ("null", "missing")


def rows_armed_by(declaration: str) -> tuple[CheckId, ...]:
    """The ledger rows a tool declaration arms, read from the registry (one owner)."""
    return tuple(row for entry in BUILT_IN if entry.declared_by == declaration for row in entry.rows)


@dataclass(frozen=True, slots=True)
class ColumnProposal:
    """One column: its proposed type, and the values that would have filed under it."""

    name: str
    type: ColumnType
    nullable: bool
    values: int
    # Kind of value -> count, for the values that are not of ``type`` (each would have filed).
    offending: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ProducerProposal:
    """One producer of one argument, and the share of its values it served."""

    argument: str
    producer: str
    served: int
    judged: int


@dataclass(frozen=True, slots=True)
class ToolProposals:
    """What is proposed for one tool, and what was looked at and not proposed (with why)."""

    tool: str
    calls: int
    rowset_calls: int
    rows: int
    runs: int
    columns: tuple[ColumnProposal, ...] = ()
    producers: tuple[ProducerProposal, ...] = ()
    # Tools called twice with the same arguments in one run: listed for the user to judge.
    repeats: int = 0
    runs_with_repeats: int = 0
    # One sentence each: evidence too thin, a column not declarable, a producer refused and why.
    notes: tuple[str, ...] = ()

    @property
    def arguments_from(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.producer for p in self.producers))

    @property
    def mixed_columns(self) -> tuple[ColumnProposal, ...]:
        return tuple(column for column in self.columns if column.offending)


@dataclass(frozen=True, slots=True)
class Proposals:
    """Every tool's proposals, and the evidence they rest on."""

    tools: tuple[ToolProposals, ...]
    runs: int
    # Tools the evidence could not name (over the profile's caps, or not shaped like a name).
    unnamed_tools: int = 0
    # Answer fields that state a fact a tool settled, in most runs (read from content only).
    claims: tuple[ClaimProposal, ...] = ()

    @property
    def declared_tools(self) -> tuple[str, ...]:
        """Every tool the proposals declare: those with columns or producers, and each producer
        (a producer named in ``arguments_from`` must be declared too)."""
        out: dict[str, None] = {}
        for tool in self.tools:
            if tool.columns or tool.producers:
                out[tool.tool] = None
            out.update(dict.fromkeys(tool.arguments_from))
        return tuple(out)


def propose(profile: Profile, claims: tuple[ClaimProposal, ...] = ()) -> Proposals:
    """The proposals a merged profile (and the claims evidence, where content was read) supports.
    Never raises on odd counts: they are read as zero."""
    tools = tuple(_tool(name, tally) for name, tally in sorted(profile.tools.items()))
    return Proposals(tools=tools, runs=profile.runs, unnamed_tools=profile.unnamed_tools, claims=claims)


def _tool(name: str, tally: ToolTally) -> ToolProposals:
    notes: list[str] = []
    columns = _columns(tally, notes)
    producers = _producers(name, tally, notes)
    if tally.unnamed:
        notes.append(
            f"{tally.unnamed} value(s) of columns or arguments were left out of the evidence: their "
            "names were not shaped like names, or past the profile's caps"
        )
    return ToolProposals(
        tool=name,
        calls=tally.calls,
        rowset_calls=tally.rowset_calls,
        rows=tally.rows,
        runs=tally.runs,
        columns=columns,
        producers=producers,
        repeats=tally.repeats,
        runs_with_repeats=tally.runs_with_repeats,
        notes=tuple(notes),
    )


def _columns(tally: ToolTally, notes: list[str]) -> tuple[ColumnProposal, ...]:
    if not tally.columns:
        return ()
    if tally.rowset_calls < MIN_ROWSET_CALLS:
        notes.append(
            f"result_columns: not enough evidence ({tally.rowset_calls} call(s) returned rows; "
            f"{MIN_ROWSET_CALLS} are needed)"
        )
        return ()
    out: list[ColumnProposal] = []
    for column, kinds in tally.columns.items():
        present = tally.column_calls.get(column, 0)
        if present < tally.rowset_calls:
            notes.append(
                f"column {column!r}: absent from every row of {tally.rowset_calls - present} of "
                f"{tally.rowset_calls} calls, so declaring it would file missing-column there; not proposed"
            )
            continue
        proposal = _column(column, kinds, notes)
        if proposal is not None:
            out.append(proposal)
    return tuple(out)


def _column(column: str, kinds: Mapping[str, int], notes: list[str]) -> ColumnProposal | None:
    empty = sum(kinds.get(kind, 0) for kind in _EMPTY_KINDS)
    date_strings = kinds.get("date-string", 0)
    counts: dict[ColumnType, int] = {}
    for kind, column_type in _KIND_TYPE.items():
        if kinds.get(kind):
            counts[column_type] = kinds[kind]
    if date_strings:
        # ISO date strings are dates when nothing else in the column is a plain string.
        into: ColumnType = "string" if counts.get("string") else "date"
        counts[into] = counts.get(into, 0) + date_strings
    other = kinds.get("other", 0)
    if not counts:
        if other:
            notes.append(
                f"column {column!r}: holds lists or objects, which no column type declares; not proposed"
            )
        else:
            notes.append(
                f"column {column!r}: None or missing in every row seen, so its type is unknown; not proposed"
            )
        return None
    chosen = max(counts, key=lambda column_type: (counts[column_type], column_type == "string"))
    offending: dict[str, int] = {}
    for kind, count in kinds.items():
        if kind in _EMPTY_KINDS or not count:
            continue
        accepted = _KIND_TYPE.get(kind) == chosen or (kind == "date-string" and chosen in ("date", "string"))
        if not accepted:
            offending[kind] = count
    return ColumnProposal(
        name=column,
        type=chosen,
        nullable=empty > 0,
        values=sum(kinds.values()),
        offending=offending,
    )


def _producers(tool: str, tally: ToolTally, notes: list[str]) -> tuple[ProducerProposal, ...]:
    out: list[ProducerProposal] = []
    for argument, counts in tally.arguments.items():
        out.extend(_argument_producers(tool, argument, counts, notes))
    return tuple(out)


def _argument_producers(
    tool: str, argument: str, counts: ArgumentTally, notes: list[str]
) -> list[ProducerProposal]:
    if counts.judged < MIN_JUDGED_VALUES:
        if counts.producers:
            notes.append(
                f"arguments_from for {argument!r}: not enough evidence ({counts.judged} value(s) long enough "
                f"to judge; {MIN_JUDGED_VALUES} are needed)"
            )
        return []
    if counts.from_user >= USER_SHARE * counts.judged:
        notes.append(
            f"argument {argument!r}: {counts.from_user} of {counts.judged} values were in a user message; "
            "the user grounds them, so no producer is proposed"
        )
        return []
    out = []
    for producer, served in sorted(counts.producers.items(), key=lambda item: -item[1]):
        if producer == tool:
            continue
        echoed = counts.echoed.get(producer, 0)
        if served < MIN_PRODUCER_SHARE * counts.judged:
            continue
        if echoed >= served:
            notes.append(
                f"argument {argument!r}: {producer!r} held its values mostly because it was asked for "
                "them (it echoes its arguments); not proposed as a producer"
            )
            continue
        out.append(ProducerProposal(argument, producer, served, counts.judged))
    for producer, echoed in counts.echoed.items():
        if producer not in counts.producers and echoed >= MIN_PRODUCER_SHARE * counts.judged:
            notes.append(
                f"argument {argument!r}: {producer!r} echoes its arguments, so it serves everything it is "
                "asked for and grounds nothing; not proposed"
            )
    return out
