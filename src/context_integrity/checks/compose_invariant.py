"""invariant-violation @ compose: a request still offers a tool the application suspended.

THE MEASURED FAILURE. A skill map was parked, and its tools filtered out of the
registry, but another route (a tool provider merging its schemas unfiltered)
still handed one of them to the model: in the same request the model was told
a subsystem is inactive and given a tool that subsystem owns.

DECLARED, NEVER INFERRED. Only the application knows a group of tools is off:
it says so with ``run.suspend(group, tools)`` (a skill or toolset switched off, an
MCP server disconnected) and takes it back with ``run.resume(group)``.

THE RULE, per request: for each suspended group, the still-offered tools are its
tools that this request offers (exact name match). A group with any is ONE
finding naming the group and every still-offered tool, with a witness for each
channel: the suspension (the application's word) and each offer (the request's).
No verdict on which channel is right: the two disagree, and that is the defect.

DISPOSITION. Nothing suspended -> ``not-applicable`` (nothing to compare is
health, not silence); a finding -> ``checked-fail``; else ``checked-pass``.
Never ``unreachable``: the judge holds both channels itself.

Detection only: nothing here removes a tool from the request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from ..findings import (
    CHECKED_FAIL,
    CHECKED_PASS,
    NOT_APPLICABLE,
    Encounter,
    Finding,
    Subject,
    Witness,
    tool_subject,
)
from ..text import Text
from . import CANARY_EPOCH, as_canary

COMPOSE_INVARIANT_CEILING: Final = (
    "This check knows a group is suspended only because the application said so, and matches tools by "
    "exact name: a suspended tool offered under another name, or a suspension never reported, is invisible "
    "to it."
)

AVAILABILITY_PREDICATE: Final = "availability"
SUSPENDED: Final = "suspended"
AVAILABLE: Final = "available"


def group_subject(group: str) -> Subject:
    return Subject(kind="toolset", id=group)


def _finding(group: str, still: list[str], epoch: int) -> Finding:
    subject = group_subject(group)
    witnesses = (
        Witness(
            subject=subject,
            predicate=AVAILABILITY_PREDICATE,
            value=Text(SUSPENDED),
            epoch=epoch,
            stratum="asserted",
            provenance=Text(f"the application suspended toolset '{group}' (run.suspend)"),
        ),
        *(
            Witness(
                subject=subject,
                predicate=AVAILABILITY_PREDICATE,
                value=Text(AVAILABLE),
                epoch=epoch,
                stratum="asserted",
                provenance=Text(f"this request offers tool '{name}', which belongs to toolset '{group}'"),
            )
            for name in still
        ),
    )
    listed = ", ".join(f"'{name}'" for name in still)
    message = Text(
        f"Toolset '{group}' is suspended, yet this request still offers "
        f"{len(still)} of its tools ({listed}): the model is told the toolset is "
        f"off and handed its tools in the same request. The two channels disagree; nothing here says which "
        f"one is right, and nothing withheld the tools. {COMPOSE_INVARIANT_CEILING}"
    )
    return Finding(
        kind="invariant-violation",
        seam="compose",
        subjects=(subject, *(tool_subject(name) for name in still)),
        predicate=None,
        witnesses=witnesses,
        epoch=epoch,
        message=message,
    )


def suspended_still_offered_of(
    *, suspended: Mapping[str, Sequence[str]], offered: Sequence[str], epoch: int = 0
) -> Encounter:
    """The pure judge: one request's offered tools against the suspended groups.

    ``suspended``: group -> its tool names (only groups suspended now). ``offered``:
    the distinct tool names this request offers.
    """
    if not suspended:
        return Encounter(findings=[], disposition=NOT_APPLICABLE)
    offered_set = set(offered)
    findings = []
    for group, tools in suspended.items():
        still = [name for name in dict.fromkeys(tools) if name in offered_set]
        if still:
            findings.append(_finding(group, still, epoch))
    return Encounter(findings=findings, disposition=CHECKED_FAIL if findings else CHECKED_PASS)


def compose_invariant_canary() -> Encounter:
    """A suspended toolset whose tool is still offered, through the real check."""
    return as_canary(
        suspended_still_offered_of(
            suspended={"canary-toolset": ("canary_tool",)}, offered=("canary_tool",), epoch=CANARY_EPOCH
        )
    )
