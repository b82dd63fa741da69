"""Findings and ledger rows as flat OpenTelemetry attributes.

Span-event attributes must be scalars (or homogeneous arrays of scalars), so a
finding's nested witnesses become indexed flat keys. Every value is clipped:
a tool result can never ride a witness into the record whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from opentelemetry.util.types import AttributeValue

from ..findings import Finding, Witness
from ..ledger import ROW_FIELDS, LedgerRow
from ..limits import MAX_ATTRIBUTE_CHARS
from ..text import clip, render_value
from . import names


def scalar(value: object) -> AttributeValue:
    """A value OpenTelemetry accepts as an attribute, clipped; never raises."""
    if isinstance(value, str):
        return clip(value, MAX_ATTRIBUTE_CHARS)
    if isinstance(value, (bool, int, float)):
        return value
    return render_value(value, MAX_ATTRIBUTE_CHARS)


def _witness_attributes(index: int, witness: Witness) -> dict[str, AttributeValue]:
    out: dict[str, AttributeValue] = {
        names.witness_attribute(index, "subject"): witness.subject.render(),
        names.witness_attribute(index, "predicate"): witness.predicate,
        names.witness_attribute(index, "value"): scalar(witness.value),
        names.witness_attribute(index, "stratum"): witness.stratum,
        names.witness_attribute(index, "provenance"): clip(witness.provenance, MAX_ATTRIBUTE_CHARS),
    }
    if witness.epoch is not None:
        out[names.witness_attribute(index, "epoch")] = witness.epoch
    return out


def finding_attributes(
    finding: Finding, *, tool_name: str | None, call_id: str | None
) -> dict[str, AttributeValue]:
    """The flat attribute set of one ``context_integrity.finding`` event (and log record)."""
    out: dict[str, AttributeValue] = {
        names.FINDING_KIND: finding.kind,
        names.FINDING_SEAM: finding.seam,
        names.FINDING_ADVISORY: finding.advisory,
        names.FINDING_MESSAGE: clip(finding.message, MAX_ATTRIBUTE_CHARS),
        names.FINDING_IDENTITY: finding.identity(with_epoch=False),
        names.FINDING_SUBJECTS: [s.render() for s in finding.subjects],
        names.FINDING_WITNESS_COUNT: len(finding.witnesses),
    }
    if finding.predicate is not None:
        out[names.FINDING_PREDICATE] = finding.predicate
    if finding.epoch is not None:
        out[names.FINDING_EPOCH] = finding.epoch
    if tool_name is not None:
        out[names.GEN_AI_TOOL_NAME] = tool_name
    if call_id is not None:
        out[names.GEN_AI_TOOL_CALL_ID] = call_id
    for index, witness in enumerate(finding.witnesses):
        out.update(_witness_attributes(index, witness))
    return out


def row_event_attributes(row: LedgerRow) -> dict[str, AttributeValue]:
    """One ``context_integrity.disposition.row`` event; ``last_fired_at`` only once set."""
    return {names.row_event_attribute(k): v for k, v in row.as_dict().items()}  # type: ignore[misc]


def summary_attributes(
    rows: Sequence[LedgerRow],
    totals: Mapping[str, int],
    *,
    posture: str,
    work_existed: bool,
    outcome: str,
) -> dict[str, AttributeValue]:
    """The summary span's scalar attributes: one per row field, for queries without events."""
    out: dict[str, AttributeValue] = {
        names.POSTURE: posture,
        names.WORK_EXISTED: work_existed,
        names.RUN_OUTCOME: outcome,
    }
    for key, value in totals.items():
        out[names.totals_attribute(key)] = value
    for row in rows:
        data = row.as_dict()
        for field in ROW_FIELDS[2:]:
            if field in data:
                out[names.row_attribute(row.check, row.seam, field)] = data[field]  # type: ignore[assignment]
    return out
