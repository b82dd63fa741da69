"""The semantic envelope: a tool's way of settling typed facts, and the one reader of it.

A tool that knows what its result MEANS -- port ``fc1/3`` has status ``down``, the
budget started at ``30`` -- returns ``ci.semantic(facts=[...], series=[...])``. The
envelope is a plain ``dict`` (frameworks serialise it as JSON, the model reads it
as usual), and :func:`fact_rows_of` flattens it into (entity, field, value) rows
that unsupported-claim joins an answer against.

- ``facts``: rows of ``{"entity": <id>, <field>: <value>, ...}``; every key but
  ``entity`` is one settled fact about that entity;
- ``series``: points of ``{"entity": <id>, "metric": <field>, "value": <v>, "t": <when>}``;
  each point settles (entity, metric) as measured at ``t``, which beats the
  envelope's ``provenance["measured_at"]``.

Building one never raises: a row with no usable entity is carried to the model
as written and simply settles nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Final

FACTS: Final = "facts"
SERIES: Final = "series"
PROVENANCE: Final = "provenance"
ENTITY: Final = "entity"
METRIC: Final = "metric"
VALUE: Final = "value"
TIME: Final = "t"
MEASURED_AT: Final = "measured_at"

# Rows read from one envelope: a result of a million facts settles the first ones, never a stall.
MAX_ROWS_PER_ENVELOPE: Final = 10_000


class SemanticEnvelope(dict[str, object]):
    """A tool result that settles facts: ``{"facts": [...], "series": [...], "provenance": {...}}``."""


def _rows(value: object) -> list[object]:
    if isinstance(value, (list, tuple)):
        return list(value)
    if value is None or isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        return []
    try:
        return list(islice(value, MAX_ROWS_PER_ENVELOPE))
    except Exception:  # a hostile iterable settles nothing
        return []


def semantic(
    *,
    facts: Iterable[Mapping[str, object]] = (),
    series: Iterable[Mapping[str, object]] = (),
    provenance: Mapping[str, object] | None = None,
) -> SemanticEnvelope:
    """Return this from a tool to settle typed facts. Never raises."""
    envelope = SemanticEnvelope()
    envelope[FACTS] = [dict(row) if isinstance(row, Mapping) else row for row in _rows(facts)]
    points = _rows(series)
    if points:
        envelope[SERIES] = [dict(p) if isinstance(p, Mapping) else p for p in points]
    if isinstance(provenance, Mapping) and provenance:
        envelope[PROVENANCE] = dict(provenance)
    return envelope


@dataclass(frozen=True, slots=True)
class FactRow:
    """One settled fact: (entity, field) = value, and where it came from."""

    entity: str
    field: str
    value: object
    tool_name: str
    call_id: str
    epoch: int
    measured_at: object = None


def is_envelope(value: object) -> bool:
    """A :class:`SemanticEnvelope`, or a mapping shaped like one (a framework may have rebuilt it)."""
    if isinstance(value, SemanticEnvelope):
        return True
    if not isinstance(value, Mapping):
        return False
    try:
        keys = set(value.keys())
    except Exception:
        return False
    return bool(keys) and keys <= {FACTS, SERIES, PROVENANCE} and bool(keys & {FACTS, SERIES})


def _entity(row: Mapping[str, object]) -> str | None:
    entity = row.get(ENTITY)
    if isinstance(entity, str) and entity.strip():
        return entity
    return None


def fact_rows_of(value: object, *, tool_name: str, call_id: str, epoch: int) -> list[FactRow]:
    """Flatten an envelope into fact rows, in declaration order; ``[]`` for anything else. Never raises."""
    if not is_envelope(value):
        return []
    assert isinstance(value, Mapping)
    out: list[FactRow] = []
    try:
        provenance = value.get(PROVENANCE)
        measured = provenance.get(MEASURED_AT) if isinstance(provenance, Mapping) else None
        for row in islice(_rows(value.get(FACTS)), MAX_ROWS_PER_ENVELOPE):
            if not isinstance(row, Mapping) or (entity := _entity(row)) is None:
                continue
            for key, fact in row.items():
                if key != ENTITY and isinstance(key, str) and key:
                    out.append(FactRow(entity, key, fact, tool_name, call_id, epoch, measured))
        for point in islice(_rows(value.get(SERIES)), MAX_ROWS_PER_ENVELOPE):
            if not isinstance(point, Mapping) or (entity := _entity(point)) is None:
                continue
            metric = point.get(METRIC)
            if isinstance(metric, str) and metric.strip() and VALUE in point:
                at = point.get(TIME, measured)
                out.append(FactRow(entity, metric, point[VALUE], tool_name, call_id, epoch, at))
    except Exception:  # a hostile mapping: keep what was read before it failed
        pass
    return out
