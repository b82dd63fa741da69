"""duplicate-execution @ choice: settled work, asked for again.

THE FAILURE. A tool whose effect must happen once per run -- a ticket opened,
a payment sent, a disk provisioned -- ran and returned, and later in the same
run the model calls it again with the same arguments: a retry after a slow
answer, a window that dropped the first result, a plan re-run from the top.
The second call is a second ticket, a second payment, a second disk.

DECLARED, NEVER INFERRED. Only a tool whose contract says ``once_per_run=True``
is judged; the library cannot know which effects are idempotent.

THE RULE, per call of a once-per-run tool in a model response: the call is a
duplicate when an EARLIER call of the same tool in this run, with canonically
equal arguments (:mod:`.canonical`: JSON-canonical, keys sorted, numbers
normalised, strings exact), SUCCEEDED -- its result reached the write seam,
i.e. the tool returned instead of raising. One finding per (tool, arguments),
with two witnesses: the earlier execution and the new call. The finding is
filed when the model ASKS (the choice seam), before the tool runs again, so an
application that reads it can still decline the call; nothing here blocks it.

WHAT IT DELIBERATELY DOES NOT CATCH (the ceiling): equal arguments only, so a
second payment with a different memo, or a default spelled out in one call and
omitted in the other, is a different call; a call that raised (or never ran) is
not settled work, so retrying a failure is fine; a tool that reports failure in
its return value instead of raising counts as having succeeded; two equal calls
in ONE response are both asked before either ran, so neither is "after"; and it
sees only this run, never an earlier run or another process.

DISPOSITION, per response: no call of a once-per-run tool -> ``not-applicable``;
any duplicate -> ``checked-fail``; else, when at least one call's arguments had
a canonical form -> ``checked-pass``; when none had (opaque or non-finite
values) -> ``unreachable``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from ..findings import (
    CHECKED_FAIL,
    CHECKED_PASS,
    NOT_APPLICABLE,
    UNREACHABLE,
    Encounter,
    Finding,
    Subject,
    Witness,
    tool_subject,
)
from ..text import Digest, Quote, Text
from . import CANARY_EPOCH, as_canary
from .canonical import canonical_or_none

DUPLICATE_EXECUTION_CEILING: Final = (
    "This check compares arguments for canonical equality within one run: a repeat with any differing "
    "argument, a retry of a call that raised, a call that reported failure in its result instead of raising, "
    "and a repeat in another run are all invisible to it."
)

EXECUTED_PREDICATE: Final = "executed"


@dataclass(frozen=True, slots=True)
class OnceCall:
    """One call of a once-per-run tool, as the model asked for it."""

    tool_name: str
    call_id: str
    arguments: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class Execution:
    """An earlier call that succeeded: which call, at which epoch."""

    call_id: str
    epoch: int | None


def arguments_key(arguments: object) -> str | None:
    """The key of a call's arguments: a digest of their canonical form (so a run's memory of a
    megabyte argument is 64 characters); ``None`` when they have no canonical form."""
    rendered = canonical_or_none(arguments)
    return None if rendered is None else hashlib.sha256(rendered.encode("utf-8", "surrogatepass")).hexdigest()


def arguments_subject(canonical: str, key: str) -> Subject:
    # The digest makes it the identity: two different repeated argument sets are two defects, the
    # same set repeated five times is one; the clipped rendering is for people.
    return Subject(kind="arguments", id=Text(Quote(canonical, bare=True), Digest(key[:12])))


def _finding(call: OnceCall, key: str, earlier: Execution, epoch: int) -> Finding:
    shown = Quote(canonical_or_none(call.arguments) or "", bare=True)
    witnesses = (
        Witness(
            subject=tool_subject(call.tool_name),
            predicate=EXECUTED_PREDICATE,
            value=Text(f"call '{earlier.call_id}' with ", shown, " returned"),
            epoch=earlier.epoch,
            stratum="asserted",
            provenance=Text(
                f"the write seam saw call '{earlier.call_id}' of '{call.tool_name}' return without raising"
            ),
        ),
        Witness(
            subject=tool_subject(call.tool_name),
            predicate=EXECUTED_PREDICATE,
            value=Text(f"call '{call.call_id}' asks for ", shown, " again"),
            epoch=epoch,
            stratum="asserted",
            provenance=Text(
                f"the model response at request {epoch} calls '{call.tool_name}' as '{call.call_id}'"
            ),
        ),
    )
    message = Text(
        f"Tool '{call.tool_name}' must take effect once per run, and the model calls it again (call "
        f"'{call.call_id}') with arguments canonically equal to call '{earlier.call_id}', which already "
        f"returned: running it again repeats settled work. Nothing here blocked the call. "
        f"{DUPLICATE_EXECUTION_CEILING}"
    )
    return Finding(
        kind="duplicate-execution",
        seam="choice",
        subjects=(tool_subject(call.tool_name), arguments_subject(str(shown.value), key)),
        predicate=None,
        witnesses=witnesses,
        epoch=epoch,
        message=message,
    )


def duplicate_executions_of(
    *,
    calls: Sequence[OnceCall],
    executed: Mapping[tuple[str, str], Execution],
    epoch: int = 0,
) -> Encounter:
    """The pure judge: one response's once-per-run calls against the executions that succeeded.

    ``calls``: this response's calls of once-per-run tools. ``executed``: (tool, canonical
    arguments key) -> the first earlier call with those arguments that succeeded.
    """
    if not calls:
        return Encounter(findings=[], disposition=NOT_APPLICABLE)
    findings: list[Finding] = []
    call_ids: list[str | None] = []
    compared = 0
    for call in calls:
        key = arguments_key(call.arguments)
        if key is None:
            continue
        compared += 1
        earlier = executed.get((call.tool_name, key))
        if earlier is not None and earlier.call_id != call.call_id:
            findings.append(_finding(call, key, earlier, epoch))
            call_ids.append(call.call_id)
    if findings:
        disposition = CHECKED_FAIL
    elif compared:
        disposition = CHECKED_PASS
    else:
        disposition = UNREACHABLE
    return Encounter(findings=findings, disposition=disposition, call_ids=call_ids)


def duplicate_execution_canary() -> Encounter:
    """A provisioning call repeated with equal arguments after the first returned, through the real check."""
    arguments = {"size_gb": 100, "name": "canary-disk"}
    key = arguments_key(arguments)
    assert key is not None
    return as_canary(
        duplicate_executions_of(
            calls=[OnceCall("canary_provision", "canary-call-2", {"name": "canary-disk", "size_gb": 100.0})],
            executed={("canary_provision", key): Execution("canary-call-1", CANARY_EPOCH)},
            epoch=CANARY_EPOCH,
        )
    )
