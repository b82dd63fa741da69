"""unsupported-claim @ claim: the answer states a fact other than the one the run settled.

THE MEASURED FAILURE. Token grounding passes "fc1/3 is healthy" when the data says
the port is down: ``fc1/3`` is in the evidence and "healthy" is just a word. It
passes an answer reporting a budget of 2 when the run's own tool recorded 30. A
false claim assembled from real values needs a join, not a token match.

DECLARED, NEVER INFERRED. A claims contract maps typed answer fields (dot-paths
into a pydantic output model) to the (entity, field) facts they claim; tools
settle facts by returning ``ci.semantic(facts=..., series=...)``.

THE RULE, per declared claim, in order:
1. the answer omitted the field -> ``not-applicable`` (the model allowed its absence);
2. no tool settled (entity, field) in this run -> ``unreachable`` (nothing to compare);
3. the LATEST settled value is itself doubt (``None`` / ``"unknown"``): a doubtful claim
   agrees (``checked-pass``); a concrete one cannot be compared (``unreachable``);
4. the claim is doubt (``None`` or ``"unknown"``) against a settled value -> one
   ADVISORY finding with the settled value as its witness;
5. a numeric string equal to a numeric settled value passes (``"30"`` vs ``30``; one
   direction only);
6. otherwise the two are compared for canonical equality (:mod:`.canonical`); a
   mismatch is a finding whose witnesses are the settled fact, the claim, and every
   earlier value of the fact as quoted history; values with no canonical form are
   ``unreachable``.
An answer that cannot be read as an object (unparseable text) makes every claim
``unreachable``. The finding's predicate is the answer field, so two wrong fields
are two defects.

Detection only: the answer is returned exactly as the model wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from ..contracts.claims import Claim
from ..contracts.semantic import FactRow
from ..findings import (
    CHECKED_FAIL,
    CHECKED_PASS,
    NOT_APPLICABLE,
    UNREACHABLE,
    Disposition,
    Encounter,
    Finding,
    Subject,
    Witness,
)
from ..text import Quote, Text
from . import CANARY_EPOCH, as_canary
from .canonical import canonical_or_none

UNSUPPORTED_CLAIM_CEILING: Final = (
    "This check compares only the typed answer fields a claims contract maps against the latest value a "
    "tool settled with semantic(): prose, unmapped fields and facts no tool settled are never checked, and "
    "the latest settled value is taken as the truth however stale it is."
)

_MISSING: Final = object()
_DOUBT_WORD: Final = "unknown"


def entity_subject(entity: str) -> Subject:
    return Subject(kind="entity", id=entity)


def is_doubt(value: object) -> bool:
    return value is None or (isinstance(value, str) and value.strip().lower() == _DOUBT_WORD)


def read_path(answer: object, path: str) -> object:
    """The value at a dot-path of a parsed answer, or ``_MISSING``. Never raises."""
    node: object = answer
    try:
        for step in path.split("."):
            if isinstance(node, Mapping):
                if step not in node:
                    return _MISSING
                node = node[step]
            elif isinstance(node, (list, tuple)) and step.isdigit() and int(step) < len(node):
                node = node[int(step)]
            else:
                return _MISSING
    except Exception:
        return _MISSING
    return node


def _numeric(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _lenient_equal(claimed: object, settled: object) -> bool:
    if not (isinstance(claimed, str) and claimed.strip() and _numeric(settled)):
        return False
    try:
        number = float(claimed.strip())
    except ValueError:
        return False
    return canonical_or_none(number) == canonical_or_none(settled)


def _provenance(row: FactRow) -> Text:
    # When it was measured is the tool's word: quoted, like any value it returned.
    measured = (
        (", measured at ", Quote(row.measured_at, bare=True, limit=None))
        if row.measured_at is not None
        else ()
    )
    return Text(f"tool '{row.tool_name}' call '{row.call_id}' settled it at request {row.epoch}", *measured)


def _settled_witness(row: FactRow, *, stratum: str = "asserted") -> Witness:
    return Witness(
        subject=entity_subject(row.entity),
        predicate=row.field,
        value=row.value,
        epoch=row.epoch if stratum == "asserted" else None,
        stratum="asserted" if stratum == "asserted" else "quoted",
        provenance=_provenance(row),
    )


def _contradiction(claim: Claim, claimed: object, rows: Sequence[FactRow], epoch: int) -> Finding:
    settled = rows[-1]
    history = rows[:-1]
    witnesses = (
        _settled_witness(settled),
        Witness(
            subject=entity_subject(claim.entity),
            predicate=claim.field,
            value=claimed,
            epoch=epoch,
            stratum="asserted",
            provenance=Text(f"answer field '{claim.path}'"),
        ),
        *(_settled_witness(row, stratum="quoted") for row in history),
    )
    earlier: list[str | Quote] = []
    if history:
        earlier.append(" Earlier in the run it read ")
        for index, row in enumerate(history):
            earlier.extend((", " if index else "", Quote(row.value)))
        earlier.append(".")
    message = Text(
        f"The answer's field '{claim.path}' says ",
        Quote(claimed),
        f", but tool '{settled.tool_name}' settled {claim.field} of '{claim.entity}' as ",
        Quote(settled.value),
        ".",
        *earlier,
        f" Nothing here changed the answer. {UNSUPPORTED_CLAIM_CEILING}",
    )
    return Finding(
        kind="unsupported-claim",
        seam="claim",
        subjects=(entity_subject(claim.entity),),
        predicate=claim.path,
        witnesses=witnesses,
        epoch=epoch,
        message=message,
    )


def _doubt(claim: Claim, claimed: object, settled: FactRow, epoch: int) -> Finding:
    message = Text(
        f"The answer's field '{claim.path}' says ",
        Quote(claimed),
        f", while tool '{settled.tool_name}' settled {claim.field} of '{claim.entity}' as ",
        Quote(settled.value),
        ": the answer doubts a fact the run knows. A place to look, not a contradiction. "
        f"{UNSUPPORTED_CLAIM_CEILING}",
    )
    return Finding(
        kind="unsupported-claim",
        seam="claim",
        subjects=(entity_subject(claim.entity),),
        predicate=claim.path,
        witnesses=(_settled_witness(settled),),
        epoch=epoch,
        message=message,
        advisory=True,
    )


def _one(
    claim: Claim, answer: object, rows: Sequence[FactRow], epoch: int
) -> tuple[Disposition, Finding | None]:
    claimed = read_path(answer, claim.path)
    if claimed is _MISSING:
        return NOT_APPLICABLE, None
    if not rows:
        return UNREACHABLE, None
    settled = rows[-1]
    if is_doubt(settled.value):
        return (CHECKED_PASS, None) if is_doubt(claimed) else (UNREACHABLE, None)
    if is_doubt(claimed):
        return CHECKED_FAIL, _doubt(claim, claimed, settled, epoch)
    if _lenient_equal(claimed, settled.value):
        return CHECKED_PASS, None
    left, right = canonical_or_none(claimed), canonical_or_none(settled.value)
    if left is None or right is None:
        return UNREACHABLE, None
    if left == right:
        return CHECKED_PASS, None
    return CHECKED_FAIL, _contradiction(claim, claimed, rows, epoch)


def unsupported_claims_of(
    *,
    claims: Sequence[Claim],
    answer: object,
    readable: bool,
    facts: Sequence[FactRow],
    epoch: int = 0,
) -> Encounter:
    """The pure judge: each declared claim of one answer against the facts the run settled.

    ``answer``: the parsed answer (a mapping of its fields, unset fields absent);
    ``readable`` false when the answer could not be read as an object. ``facts``: every
    fact row the run settled, oldest first. The encounter's ``dispositions`` hold one
    disposition per claim.
    """
    if not claims:
        return Encounter(findings=[], disposition=NOT_APPLICABLE)
    if not readable:
        return Encounter(findings=[], disposition=UNREACHABLE, dispositions=[UNREACHABLE] * len(claims))
    by_fact: dict[tuple[str, str], list[FactRow]] = {}
    for row in facts:
        by_fact.setdefault((row.entity, row.field), []).append(row)
    findings: list[Finding] = []
    dispositions: list[Disposition] = []
    for claim in claims:
        disposition, finding = _one(claim, answer, by_fact.get((claim.entity, claim.field), ()), epoch)
        dispositions.append(disposition)
        if finding is not None:
            findings.append(finding)
    if findings:
        overall: Disposition = CHECKED_FAIL
    elif CHECKED_PASS in dispositions:
        overall = CHECKED_PASS
    elif UNREACHABLE in dispositions:
        overall = UNREACHABLE
    else:
        overall = NOT_APPLICABLE
    return Encounter(findings=findings, disposition=overall, dispositions=dispositions)


def unsupported_claim_canary() -> Encounter:
    """An answer claiming a port is healthy while the settled fact says down, through the real check."""
    return as_canary(
        unsupported_claims_of(
            claims=[Claim("port_status", "canary-port", "status")],
            answer={"port_status": "healthy"},
            readable=True,
            facts=[FactRow("canary-port", "status", "down", "canary_tool", "canary-call", CANARY_EPOCH)],
            epoch=CANARY_EPOCH,
        )
    )
