"""invariant-violation @ wire: what crossed to the provider against what the agent composed.

THE FAILURE. Between the request the agent composed and the bytes that left the
process, something rewrote the tool list: an SDK helper that injected a tool, a
cache or prompt transform, a proxy client, a framework that merged a toolset the
agent had dropped. The model then chose among tools nobody composed (or never saw
one that was composed), and nothing in the trace of the composed request says so.

ARMED BY READING THE WIRE. A wire reader (``context_integrity.integrations.wire``)
reads the tool names back from the FINAL serialized request body. A model call whose
body no reader saw, or could not read, is ``unreachable`` -- never a pass. A body with
no ``tools`` field is a stated zero (Anthropic rejects an empty tools array, so
clients omit it), not an unknown.

THE RULE, as sets (order and duplicates ignored): tools that crossed without being
composed, and composed tools that never crossed, are ONE finding each direction,
naming every tool (ten leaked schemas are one defect). Each tool has two witnesses,
the composed frame and the serialized body, which disagree about it being on the wire.

DISPOSITION, per model call: no reading -> ``unreachable``; a finding ->
``checked-fail``; else ``checked-pass``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from ..findings import CHECKED_FAIL, CHECKED_PASS, UNREACHABLE, Encounter, Finding, Witness, tool_subject
from ..text import Text
from . import CANARY_EPOCH, as_canary

WIRE_INVARIANT_CEILING: Final = (
    "This check compares tool names only, and only for the request bodies a wire reader could read: a tool "
    "whose schema was rewritten under the same name, and a provider or client no reader covers, are "
    "invisible to it."
)

ON_WIRE_PREDICATE: Final = "on-wire"
PRESENT: Final = "present"
ABSENT: Final = "absent"


def _witnesses(names: list[str], *, composed: str, wire: str, epoch: int, source: str) -> tuple[Witness, ...]:
    out: list[Witness] = []
    for name in names:
        out.append(
            Witness(
                tool_subject(name),
                ON_WIRE_PREDICATE,
                Text(composed),
                epoch,
                "asserted",
                Text("the composed request frame"),
            )
        )
        out.append(
            Witness(tool_subject(name), ON_WIRE_PREDICATE, Text(wire), epoch, "asserted", Text(source))
        )
    return tuple(out)


def _finding(names: list[str], *, added: bool, epoch: int, source: str) -> Finding:
    listed = ", ".join(f"'{n}'" for n in names)
    if added:
        message = Text(
            f"{len(names)} tool(s) crossed the wire that the composed request never carried ({listed}): the "
            f"model was offered tools the agent did not compose. {WIRE_INVARIANT_CEILING}"
        )
        witnesses = _witnesses(names, composed=ABSENT, wire=PRESENT, epoch=epoch, source=source)
    else:
        message = Text(
            f"{len(names)} composed tool(s) never crossed the wire ({listed}): the agent composed them, and the "
            f"request the provider received did not carry them. {WIRE_INVARIANT_CEILING}"
        )
        witnesses = _witnesses(names, composed=PRESENT, wire=ABSENT, epoch=epoch, source=source)
    return Finding(
        kind="invariant-violation",
        seam="wire",
        subjects=tuple(tool_subject(n) for n in names),
        predicate=None,
        witnesses=witnesses,
        epoch=epoch,
        message=message,
    )


def wire_violations_of(
    *,
    composed: Iterable[str],
    wire: Iterable[str] | None,
    epoch: int = 0,
    source: str = "the serialized request body",
) -> Encounter:
    """The pure judge: the composed tool names against the names read back from the wire.

    ``wire`` is ``None`` when no reader saw or could read the body (unreachable); an empty
    iterable is a stated zero.
    """
    if wire is None:
        return Encounter(findings=[], disposition=UNREACHABLE)
    composed_names = list(dict.fromkeys(n for n in composed if isinstance(n, str)))
    wire_names = list(dict.fromkeys(n for n in wire if isinstance(n, str)))
    added = [n for n in wire_names if n not in set(composed_names)]
    dropped = [n for n in composed_names if n not in set(wire_names)]
    findings = []
    if added:
        findings.append(_finding(added, added=True, epoch=epoch, source=source))
    if dropped:
        findings.append(_finding(dropped, added=False, epoch=epoch, source=source))
    return Encounter(findings=findings, disposition=CHECKED_FAIL if findings else CHECKED_PASS)


def wire_invariant_canary() -> Encounter:
    """A body carrying a tool the agent never composed, through the real check."""
    return as_canary(
        wire_violations_of(composed=["canary_tool"], wire=["canary_tool", "canary_leak"], epoch=CANARY_EPOCH)
    )
