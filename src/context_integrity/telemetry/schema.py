"""Every attribute shape the library writes, as an encode/decode pair.

The instrumentation encodes with these functions; the recording reader decodes
with their partners. One owner per shape (a finding and its indexed witnesses,
an excusal, an internal error, the run summary with its ledger rows) means the
writer and the reader cannot drift apart, and a round-trip test holds each pair
to the other.

Like :mod:`names`, this module imports no OpenTelemetry: the reader runs
wherever the package is installed. Encoders never raise and clip every string
they did not compose themselves. Decoders are tolerant: they read what is there,
and say what is missing or malformed in ``problems`` instead of failing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias, TypeVar

from ..findings import Finding, Witness
from ..ledger import ROW_FIELDS, LedgerRow
from ..limits import MAX_ATTRIBUTE_CHARS
from ..text import clip, render_value
from . import names

# The attribute values OpenTelemetry accepts (the same union as
# ``opentelemetry.util.types.AttributeValue``, spelled here without the SDK).
AttributeValue: TypeAlias = (
    str | bool | int | float | Sequence[str] | Sequence[bool] | Sequence[int] | Sequence[float]
)
Attributes = dict[str, AttributeValue]

# A ledger row's identifying pair, its counts and its timestamp.
ROW_IDENTITY: Final[tuple[str, ...]] = ROW_FIELDS[:2]
LAST_FIRED_FIELD: Final = ROW_FIELDS[-1]
COUNT_FIELDS: Final[tuple[str, ...]] = tuple(
    f for f in ROW_FIELDS if f not in (*ROW_IDENTITY, LAST_FIRED_FIELD)
)
_ROW_VALUE_ORDER: Final = ROW_FIELDS[2:]
_ROW_VALUE_FIELDS: Final = frozenset(_ROW_VALUE_ORDER)
# Counts written only when nonzero (see summary_attributes); a reader takes absence as zero.
SPARSE_COUNT_FIELDS: Final[tuple[str, ...]] = ("unreachable", "synthetic")
_ROW_PREFIX: Final = names.ROW_PREFIX + "."
_TOTALS_PREFIX: Final = names.TOTALS_PREFIX + "."
_DIAL_PREFIX: Final = names.DIAL_PREFIX + "."


def scalar(value: object) -> AttributeValue:
    """A value OpenTelemetry accepts as an attribute, clipped; never raises."""
    if isinstance(value, str):
        return clip(value, MAX_ATTRIBUTE_CHARS)
    if isinstance(value, (bool, int, float)):
        return value
    return render_value(value, MAX_ATTRIBUTE_CHARS)


def is_int(value: object) -> bool:
    """An integer as OTLP carries one (a ``bool`` is not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _optional_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _optional_int(value: object) -> int | None:
    return value if is_int(value) else None  # type: ignore[return-value]


def _str_list(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


# ── A finding and its witnesses ─────────────────────────────────────────
def witness_attributes(index: int, witness: Witness) -> Attributes:
    """Witness ``index`` as ``context_integrity.witness.<index>.<field>``; ``epoch`` only when set."""
    out: Attributes = {
        names.witness_attribute(index, "subject"): witness.subject.render(),
        names.witness_attribute(index, "predicate"): witness.predicate,
        names.witness_attribute(index, "value"): scalar(witness.value),
        names.witness_attribute(index, "stratum"): witness.stratum,
        names.witness_attribute(index, "provenance"): clip(witness.provenance, MAX_ATTRIBUTE_CHARS),
    }
    if witness.epoch is not None:
        out[names.witness_attribute(index, "epoch")] = witness.epoch
    return out


def finding_attributes(finding: Finding, *, tool_name: str | None, call_id: str | None) -> Attributes:
    """The flat attribute set of one ``context_integrity.finding`` event (and log record)."""
    out: Attributes = {
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
        out.update(witness_attributes(index, witness))
    return out


@dataclass(slots=True)
class FindingFields:
    """What a finding event's attributes say, as plain data.

    ``witnesses`` hold the fields of :data:`names.WITNESS_FIELDS` that were
    recorded (``epoch`` is absent when the witness had none); subjects are
    rendered (``"tool lookup"``).
    """

    kind: str
    seam: str
    predicate: str | None
    advisory: bool
    message: str
    identity: str
    tool_name: str | None
    call_id: str | None
    witnesses: list[dict[str, object]] = field(default_factory=list)
    subjects: list[str] = field(default_factory=list)
    epoch: int | None = None


F = TypeVar("F", bound=FindingFields)
FINDING_REQUIRED: Final = (names.FINDING_KIND, names.FINDING_SEAM, names.FINDING_MESSAGE)


def _count_witnesses(attributes: Mapping[str, object]) -> int:
    """How many witnesses an event carries when it does not say."""
    count = 0
    while any(names.witness_attribute(count, f) in attributes for f in names.WITNESS_FIELDS):
        count += 1
    return count


def decode_witnesses(
    attributes: Mapping[str, object], problems: list[str], *, lossy: bool = False
) -> list[dict[str, object]]:
    """The witnesses of :func:`witness_attributes`, in index order.

    ``lossy`` says the event lost attributes to the SDK's limit, so a hollow
    witness is expected rather than a problem.
    """
    declared = _optional_int(attributes.get(names.FINDING_WITNESS_COUNT))
    # A declared count can never exceed the attributes present: a corrupt
    # count must not make the reader loop for ever.
    count = min(declared, len(attributes)) if declared is not None else _count_witnesses(attributes)
    witnesses: list[dict[str, object]] = []
    for index in range(count):
        witness: dict[str, object] = {}
        for witness_field in names.WITNESS_FIELDS:
            key = names.witness_attribute(index, witness_field)
            if key in attributes:
                witness[witness_field] = attributes[key]
        if not witness and not lossy:
            problems.append(f"declares {count} witness(es) but witness {index} has no attributes")
        witnesses.append(witness)
    return witnesses


def decode_finding(
    attributes: Mapping[str, object],
    problems: list[str],
    into: type[F],
    *,
    lossy: bool = False,
    **where: Any,
) -> F:
    """The partner of :func:`finding_attributes`, built as ``into`` (``where`` fills its other fields).

    A missing kind, seam or message is a problem, and the finding is still
    returned with what it has.
    """
    missing = [key for key in FINDING_REQUIRED if key not in attributes]
    if missing:
        problems.append(f"lacks {', '.join(missing)}; it is reported with what it has")
    return into(
        kind=str(attributes.get(names.FINDING_KIND, "")),
        seam=str(attributes.get(names.FINDING_SEAM, "")),
        predicate=_optional_str(attributes.get(names.FINDING_PREDICATE)),
        advisory=attributes.get(names.FINDING_ADVISORY) is True,
        message=str(attributes.get(names.FINDING_MESSAGE, "")),
        identity=str(attributes.get(names.FINDING_IDENTITY, "")),
        tool_name=_optional_str(attributes.get(names.GEN_AI_TOOL_NAME)),
        call_id=_optional_str(attributes.get(names.GEN_AI_TOOL_CALL_ID)),
        witnesses=decode_witnesses(attributes, problems, lossy=lossy),
        subjects=_str_list(attributes.get(names.FINDING_SUBJECTS)),
        epoch=_optional_int(attributes.get(names.FINDING_EPOCH)),
        **where,
    )


# ── Excusals and our own failures ───────────────────────────────────────
_EXTERNAL_GROUND_KEYS: Final = {
    "path": names.EXTERNAL_GROUND_PATH,
    "value": names.EXTERNAL_GROUND_VALUE,
    "source": names.EXTERNAL_GROUND_SOURCE,
}
_INTERNAL_ERROR_KEYS: Final = {"where": names.INTERNAL_ERROR_WHERE, "type": names.INTERNAL_ERROR_TYPE}


def external_ground_attributes(
    *, tool_name: str | None, call_id: str | None, path: str, value: str, source: str
) -> Attributes:
    """One ``context_integrity.external_ground_used`` event: the application vouched for a value."""
    out: Attributes = {
        names.EXTERNAL_GROUND_PATH: clip(path, MAX_ATTRIBUTE_CHARS),
        names.EXTERNAL_GROUND_VALUE: clip(value, MAX_ATTRIBUTE_CHARS),
        names.EXTERNAL_GROUND_SOURCE: clip(source, MAX_ATTRIBUTE_CHARS),
    }
    if tool_name is not None:
        out[names.GEN_AI_TOOL_NAME] = tool_name
    if call_id is not None:
        out[names.GEN_AI_TOOL_CALL_ID] = call_id
    return out


def decode_external_ground(attributes: Mapping[str, object]) -> dict[str, object]:
    """The partner of :func:`external_ground_attributes`: ``path``, ``value``, ``source`` as recorded."""
    return {label: attributes[key] for label, key in _EXTERNAL_GROUND_KEYS.items() if key in attributes}


def internal_error_attributes(where: str, error: BaseException) -> Attributes:
    """One ``context_integrity.internal_error`` event: where our code failed, and with what type."""
    return {names.INTERNAL_ERROR_WHERE: where, names.INTERNAL_ERROR_TYPE: type(error).__qualname__}


def decode_internal_error(attributes: Mapping[str, object]) -> dict[str, object]:
    """The partner of :func:`internal_error_attributes`: ``where`` and ``type`` as recorded."""
    return {label: attributes[key] for label, key in _INTERNAL_ERROR_KEYS.items() if key in attributes}


# ── The run summary and its ledger ──────────────────────────────────────
def summary_attributes(
    rows: Sequence[LedgerRow],
    totals: Mapping[str, int],
    *,
    posture: str,
    work_existed: bool,
    outcome: str,
    dials: Mapping[str, str] | None = None,
) -> Attributes:
    """The summary span's attributes: the ledger once, one scalar per row field, for queries and alerts.

    ``checked``, ``findings`` and ``not_applicable`` are always written, zero or
    not, so a query can ask for a row that ran clean. The exceptional counts
    (:data:`SPARSE_COUNT_FIELDS`: ``unreachable``, ``synthetic``) are written
    only when nonzero, in the rows and in the totals alike, and ``last_fired_at``
    only once a check fired: a query for them asks ``> 0`` (or for presence),
    and leaving the zeros out keeps a 9-row summary under 3 KB of OTLP. The dials in force
    stand beside the posture.
    """
    out: Attributes = {
        names.POSTURE: posture,
        names.WORK_EXISTED: work_existed,
        names.RUN_OUTCOME: outcome,
    }
    for dial, setting in (dials or {}).items():
        out[names.dial_attribute(dial)] = setting
    for key, value in totals.items():
        if value or key not in SPARSE_COUNT_FIELDS:
            out[names.totals_attribute(key)] = value
    for row in rows:
        for row_field in _ROW_VALUE_ORDER:
            value = getattr(row, row_field)
            if value is None or (not value and row_field in SPARSE_COUNT_FIELDS):
                continue
            out[names.row_attribute(row.check, row.seam, row_field)] = value
    return out


@dataclass(slots=True)
class SummaryFields:
    """What a summary span's attributes say: the ledger rows (as :meth:`LedgerRow.as_dict`
    would write them, fields in :data:`ROW_FIELDS` order) and the run's verdict."""

    rows: list[dict[str, object]]
    totals: dict[str, int]
    posture: str | None
    work_existed: bool | None
    outcome: str | None
    dials: dict[str, str] = field(default_factory=dict)


def _checked_row(index: int, row: dict[str, object], problems: list[str]) -> dict[str, object]:
    for sparse in SPARSE_COUNT_FIELDS:
        row.setdefault(sparse, 0)
    absent = [f for f in ROW_FIELDS if f not in row and f != LAST_FIRED_FIELD]
    if absent:
        problems.append(f"ledger row {index} lacks {', '.join(absent)}")
    not_counts = [f for f in (*COUNT_FIELDS, LAST_FIRED_FIELD) if f in row and not is_int(row[f])]
    if not_counts:
        problems.append(f"ledger row {index} has non-integer {', '.join(not_counts)}")
    return {f: row[f] for f in ROW_FIELDS if f in row}


def decode_rows(attributes: Mapping[str, object], problems: list[str]) -> list[dict[str, object]]:
    """The ledger rows of :func:`summary_attributes`, in the order they were written."""
    rows: dict[tuple[str, str], dict[str, object]] = {}
    check_field, seam_field = ROW_IDENTITY
    for key, value in attributes.items():
        if not key.startswith(_ROW_PREFIX):
            continue
        parts = key[len(_ROW_PREFIX) :].rsplit(".", 2)
        if len(parts) != 3 or parts[2] not in _ROW_VALUE_FIELDS:
            continue
        check, seam, row_field = parts
        row = rows.get((check, seam))
        if row is None:
            row = rows[(check, seam)] = {check_field: check, seam_field: seam}
        row[row_field] = value
    return [_checked_row(index, row, problems) for index, row in enumerate(rows.values())]


def decode_summary(attributes: Mapping[str, object], problems: list[str]) -> SummaryFields:
    """The partner of :func:`summary_attributes`: sparse counts read back as zero."""
    totals: dict[str, int] = {
        key[len(_TOTALS_PREFIX) :]: value  # type: ignore[misc]
        for key, value in attributes.items()
        if key.startswith(_TOTALS_PREFIX) and is_int(value)
    }
    if totals:
        for sparse in SPARSE_COUNT_FIELDS:
            totals.setdefault(sparse, 0)
    work_existed = attributes.get(names.WORK_EXISTED)
    return SummaryFields(
        rows=decode_rows(attributes, problems),
        totals=totals,
        posture=_optional_str(attributes.get(names.POSTURE)),
        work_existed=work_existed if isinstance(work_existed, bool) else None,
        outcome=_optional_str(attributes.get(names.RUN_OUTCOME)),
        dials={
            key[len(_DIAL_PREFIX) :]: value
            for key, value in attributes.items()
            if key.startswith(_DIAL_PREFIX) and isinstance(value, str)
        },
    )
