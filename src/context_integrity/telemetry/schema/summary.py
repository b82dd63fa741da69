"""The run summary: the ``context_integrity.disposition`` span's attributes, and their reading.

The ledger is written once, one scalar attribute per row field
(``context_integrity.row.<check>.<seam>.<field>``), beside the totals and the
run's verdict (posture, work existed, outcome).

Reading a summary back is the reader's hottest path: one per run, thirty-odd
attributes each. The keys of a summary recur from run to run (the same checks,
the same fields) while the values change, so each key is parsed once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from ...ledger import JUDGED_AT_SERVER, ROW_FIELDS, LedgerRow
from . import names
from .common import Attributes, is_int, optional_str

# A ledger row's identifying pair, its counts and its timestamp.
ROW_IDENTITY: Final[tuple[str, ...]] = ROW_FIELDS[:2]
LAST_FIRED_FIELD: Final = ROW_FIELDS[-1]
COUNT_FIELDS: Final[tuple[str, ...]] = tuple(
    f for f in ROW_FIELDS if f not in (*ROW_IDENTITY, LAST_FIRED_FIELD)
)
# Counts written only when nonzero (see summary_attributes); a reader takes absence as zero.
SPARSE_COUNT_FIELDS: Final[tuple[str, ...]] = ("unreachable", "synthetic")
# Counts beside the row's fields, written and read back only when nonzero (LedgerRow.as_dict).
OPTIONAL_COUNT_FIELDS: Final[tuple[str, ...]] = (JUDGED_AT_SERVER,)

_ROW_VALUE_ORDER: Final = ROW_FIELDS[2:]
_ROW_VALUE_FIELDS: Final = frozenset((*_ROW_VALUE_ORDER, *OPTIONAL_COUNT_FIELDS))
_SPARSE_ZEROS: Final[Mapping[str, int]] = dict.fromkeys(SPARSE_COUNT_FIELDS, 0)
# A row read back always has its identity and every count (the sparse ones default to zero).
_ALWAYS_IN_A_ROW: Final = len(ROW_FIELDS) - 1
_ROW_PREFIX: Final = names.ROW_PREFIX + "."
_TOTALS_PREFIX: Final = names.TOTALS_PREFIX + "."
_DIAL_PREFIX: Final = names.DIAL_PREFIX + "."


def summary_attributes(
    rows: Sequence[LedgerRow],
    totals: Mapping[str, int],
    *,
    posture: str,
    work_existed: bool,
    outcome: str,
    dials: Mapping[str, str] | None = None,
    profile: str | None = None,
) -> Attributes:
    """The summary span's attributes: the ledger once, one scalar per row field, for queries and alerts.

    ``checked``, ``findings`` and ``not_applicable`` are always written, zero or
    not, so a query can ask for a row that ran clean. The exceptional counts
    (:data:`SPARSE_COUNT_FIELDS`: ``unreachable``, ``synthetic``) are written
    only when nonzero, in the rows and in the totals alike, and ``last_fired_at``
    only once a check fired: a query for them asks ``> 0`` (or for presence),
    and leaving the zeros out keeps a summary of nine or ten rows under 3 KB of OTLP. The dials in
    force (``context_integrity.dial.<name>``) stand beside the posture.
    """
    out: Attributes = {
        names.POSTURE: posture,
        names.WORK_EXISTED: work_existed,
        names.RUN_OUTCOME: outcome,
    }
    if profile:
        out[names.PROFILE] = profile
    for dial, setting in (dials or {}).items():
        out[names.dial_attribute(dial)] = setting
    for key, value in totals.items():
        if value or (key not in SPARSE_COUNT_FIELDS and key not in OPTIONAL_COUNT_FIELDS):
            out[names.totals_attribute(key)] = value
    for row in rows:
        for row_field in _ROW_VALUE_ORDER:
            value = getattr(row, row_field)
            if value is None or (not value and row_field in SPARSE_COUNT_FIELDS):
                continue
            out[names.row_attribute(row.check, row.seam, row_field)] = value
        for row_field in OPTIONAL_COUNT_FIELDS:
            value = getattr(row, row_field)
            if value:
                out[names.row_attribute(row.check, row.seam, row_field)] = value
    return out


@dataclass(slots=True)
class SummaryFields:
    """What a summary span's attributes say: the ledger rows (each equal to what
    :meth:`LedgerRow.as_dict` gives for it) and the run's verdict."""

    rows: list[dict[str, object]]
    totals: dict[str, int]
    posture: str | None
    work_existed: bool | None
    outcome: str | None
    dials: dict[str, str] = field(default_factory=dict)
    # The run's profile as written (JSON text), when profiling was on.
    profile: str | None = None


_TOTALS: Final = ("", "")
_VERDICT: Final = ("", "verdict")
_DIAL: Final = ("", "dial")
_VERDICT_KEYS: Final = frozenset({names.POSTURE, names.WORK_EXISTED, names.RUN_OUTCOME, names.PROFILE})
# What a summary attribute key is: a row field ((check, seam), field), a total (_TOTALS, field),
# the verdict (_VERDICT, key), or None for another key. Keys recur from run to run, so each is
# parsed once (within a bound).
_SUMMARY_KEYS: dict[str, tuple[tuple[str, str], str] | None] = {}
_MAX_SUMMARY_KEYS: Final = 4096


def _summary_key(key: str) -> tuple[tuple[str, str], str] | None:
    parsed: tuple[tuple[str, str], str] | None = None
    if key.startswith(_ROW_PREFIX):
        parts = key[len(_ROW_PREFIX) :].rsplit(".", 2)
        if len(parts) == 3 and parts[2] in _ROW_VALUE_FIELDS:
            parsed = ((parts[0], parts[1]), parts[2])
    elif key.startswith(_TOTALS_PREFIX):
        parsed = (_TOTALS, key[len(_TOTALS_PREFIX) :])
    elif key in _VERDICT_KEYS:
        parsed = (_VERDICT, key)
    elif key.startswith(_DIAL_PREFIX):
        parsed = (_DIAL, key[len(_DIAL_PREFIX) :])
    if len(_SUMMARY_KEYS) < _MAX_SUMMARY_KEYS:
        _SUMMARY_KEYS[key] = parsed
    return parsed


def _checked_row(index: int, row: dict[str, object], problems: list[str]) -> None:
    """Say what a row read back lacks or cannot count with; the row is kept as it is."""
    absent = [f for f in ROW_FIELDS if f not in row and f != LAST_FIRED_FIELD]
    if absent:
        problems.append(f"ledger row {index} lacks {', '.join(absent)}")
    not_counts = [f for f in (*COUNT_FIELDS, LAST_FIRED_FIELD) if f in row and not is_int(row[f])]
    if not_counts:
        problems.append(f"ledger row {index} has non-integer {', '.join(not_counts)}")


def decode_summary(attributes: Mapping[str, object], problems: list[str]) -> SummaryFields:
    """The partner of :func:`summary_attributes`, in one pass: the rows in the order they
    were written, sparse counts read back as zero.

    A row is a dict of :data:`ROW_FIELDS` (``last_fired_at`` only when recorded); its
    fields are in no particular order. A row that lacks a field or holds a count that is
    not an integer is kept as it is, and said in ``problems``.
    """
    rows: dict[tuple[str, str], dict[str, object]] = {}
    totals: dict[str, int] = {}
    verdict: dict[str, object] = {}
    dials: dict[str, str] = {}
    suspect = False
    check_field, seam_field = ROW_IDENTITY
    cache = _SUMMARY_KEYS
    # A row's fields are written one after another: the row in hand is usually the one needed.
    identity_in_hand: tuple[str, str] | None = None
    row: dict[str, object] = {}
    for key, value in attributes.items():
        try:
            parsed = cache[key]
        except KeyError:
            parsed = _summary_key(key)
        if parsed is None:
            continue
        identity, row_field = parsed
        if identity is not identity_in_hand:
            if identity is _TOTALS:
                if type(value) is int:
                    totals[row_field] = value
                continue
            if identity is _VERDICT:
                verdict[row_field] = value
                continue
            if identity is _DIAL:
                if isinstance(value, str):
                    dials[row_field] = value
                continue
            identity_in_hand = identity
            found = rows.get(identity)
            if found is None:
                # The sparse counts start at zero: written only when nonzero, absent means none.
                found = rows[identity] = {check_field: identity[0], seam_field: identity[1], **_SPARSE_ZEROS}
            row = found
        row[row_field] = value
        if type(value) is not int:
            suspect = True
    decoded = list(rows.values())
    if decoded and (suspect or min(map(len, decoded)) < _ALWAYS_IN_A_ROW):
        for index, row in enumerate(decoded):
            _checked_row(index, row, problems)
    if totals:
        for sparse in SPARSE_COUNT_FIELDS:
            totals.setdefault(sparse, 0)
    work_existed = verdict.get(names.WORK_EXISTED)
    return SummaryFields(
        rows=decoded,
        totals=totals,
        posture=optional_str(verdict.get(names.POSTURE)),
        work_existed=work_existed if isinstance(work_existed, bool) else None,
        outcome=optional_str(verdict.get(names.RUN_OUTCOME)),
        dials=dials,
        profile=optional_str(verdict.get(names.PROFILE)),
    )
