"""dangling-reference @ compose: a tool offered without the evidence its arguments need.

THE MEASURED FAILURE. A tool result carrying valid ids is evicted by a window
or compaction strategy while the tool that acts on those ids stays offered.
The model rebuilds a plausible id from memory, calls the tool, and is
refused; nothing in the run said the evidence behind the call was gone.

DECLARED, NEVER INFERRED. A tool is judged only because its author named,
in ``arguments_from``, the tools whose results its arguments come from.

THE RULE. For each offered tool that declares grounds, the missing grounds
are those whose results were served earlier in this run, were evicted, and
are not back in this request. One finding per such tool names all of them.

THE FENCES (both silence, by design):
- a ground never served yet is legitimate sequencing, not a dangling reference;
- a ground re-fetched into this request is re-established, however many
  times it was evicted before.

DISPOSITION. ``checked-*`` only when something could dangle: at least one
offered tool declares grounds AND something was evicted. Otherwise
``not-applicable``. Never ``unreachable``: the judge measures both sets itself.

Detection only: nothing here withholds, hides or rewrites the tool.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import Final

from ..findings import (
    CHECKED_FAIL,
    CHECKED_PASS,
    NOT_APPLICABLE,
    Encounter,
    Finding,
    Witness,
    tool_subject,
)
from ..text import Text
from . import CANARY_EPOCH, as_canary

DANGLING_REFERENCE_CEILING: Final = (
    "This check sees an eviction only of results it watched being served during this run, and "
    "only by tool name; it cannot tell whether the model still remembers those values correctly."
)

# The witness predicate: the relation between a tool and the tool whose
# results its arguments come from.
ARGUMENT_GROUND_PREDICATE: Final = "argument-ground"


def _names(value: object) -> list[str]:
    """Distinct non-blank tool names, in order; a lone string is one name."""
    if isinstance(value, str):
        value = (value,)
    out: list[str] = []
    if not isinstance(value, (Sequence, Set)):
        return out
    for name in value:
        if isinstance(name, str) and name and name not in out:
            out.append(name)
    return out


def _quoted(names: Sequence[str], joiner: str) -> str:
    return joiner.join(f"'{name}'" for name in names)


def _finding(consumer: str, missing: list[str], epoch: int) -> Finding:
    witnesses = tuple(
        Witness(
            subject=tool_subject(consumer),
            predicate=ARGUMENT_GROUND_PREDICATE,
            value=Text(f"results of '{ground}' evicted and not re-fetched"),
            epoch=epoch,
            stratum="asserted",
            provenance=Text(
                f"the judge saw results of '{ground}' served earlier in this run, "
                "and none of them is in this request"
            ),
        )
        for ground in missing
    )
    message = Text(
        f"Tool '{consumer}' is still offered to the model, but the results its arguments come from "
        f"({_quoted(missing, ', ')}) were evicted from the context and never fetched again, so any "
        f"value the model passes it now can only come from memory. The honest fix is to call "
        f"{_quoted(missing, ' or ')} again before using '{consumer}'. Nothing here withheld or "
        f"changed the tool. {DANGLING_REFERENCE_CEILING}"
    )
    return Finding(
        kind="dangling-reference",
        seam="compose",
        subjects=(tool_subject(consumer), *(tool_subject(ground) for ground in missing)),
        predicate=None,
        witnesses=witnesses,
        epoch=epoch,
        message=message,
    )


def dangling_references_of(
    *,
    offered: Sequence[str],
    grounds: Mapping[str, tuple[str, ...]],
    evicted: Set[str],
    present: Set[str],
    epoch: int = 0,
) -> Encounter:
    """The pure judge: one assembled request, for tools offered without their evidence.

    ``offered``: the distinct tool names offered in this request. ``grounds``:
    tool name -> its validated ``arguments_from`` (only armed tools appear).
    ``evicted``: tool names whose results were served earlier in this run and
    were missing from some request since (this one or an earlier one): the
    union of every eviction so far, which a re-fetch does not shrink.
    ``present``: tool names whose results are in this request (see
    :func:`context_integrity.loop.tool_names_present`); a ground present
    again is re-established and silent.
    """
    served_grounded = [(name, grounds[name]) for name in offered if grounds.get(name)]
    if not served_grounded or not evicted:
        return Encounter(findings=[], disposition=NOT_APPLICABLE)

    findings: list[Finding] = []
    for consumer, declared in served_grounded:
        missing = [ground for ground in declared if ground in evicted and ground not in present]
        if missing:
            findings.append(_finding(consumer, missing, epoch))
    return Encounter(findings=findings, disposition=CHECKED_FAIL if findings else CHECKED_PASS)


def check_dangling_references(
    *,
    offered: Sequence[str],
    grounds: Mapping[str, Sequence[str]],
    evicted: Set[str],
    present: Set[str],
    epoch: int = 0,
) -> Encounter:
    """Judge one assembled request (see :func:`dangling_references_of`), cleaning raw inputs first.

    Blank, non-string and repeated names are dropped; a lone string is one name. Never raises.
    """
    return dangling_references_of(
        offered=_names(offered),
        grounds={name: tuple(_names(g)) for name, g in grounds.items() if isinstance(name, str)},
        evicted=evicted,
        present=present,
        epoch=epoch,
    )


# ── Dev-posture canary ───────────────────────────────────────────────────


def dangling_reference_canary() -> Encounter:
    """A known-bad request run through the real check: a tool whose only ground was evicted.

    A live check returns exactly one ``dangling-reference`` finding, marked
    synthetic so it can never be mistaken for a real one.
    """
    encounter = check_dangling_references(
        offered=["canary_tool"],
        grounds={"canary_tool": ["canary_ground"]},
        evicted=frozenset({"canary_ground"}),
        present=frozenset(),
        epoch=CANARY_EPOCH,
    )
    return as_canary(encounter)
