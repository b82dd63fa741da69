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

A tool that returns plain rows (one this application never wrapped, read back from a trace)
settles facts the same way once its contract says how to read them: ``settles={"entity":
"port", "facts": ["status"]}`` makes every row's ``port`` the entity and its ``status`` one
settled fact (:class:`SettledFields`, read by :func:`declared_fact_rows`).

Because a claim on a fact nothing settled reads ``unreachable`` far from here, ``semantic()`` says
so where the facts are made: one warning per call site and problem (the function and line that
called it, what is wrong, the shape wanted), bounded by :data:`~context_integrity.limits.MAX_WARNED_SEMANTIC_SHAPES`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Final

from .._memo import ToldOnce
from ..limits import MAX_QUOTED_CHARS, MAX_WARNED_SEMANTIC_SHAPES
from .errors import did_you_mean, refuse
from .results import ResultReading

logger = logging.getLogger("context_integrity")

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
    """Return this from a tool to settle typed facts. Never raises.

    ``facts``: a list of rows ``{"entity": <id>, <field>: <value>, ...}``; ``series``: a list of
    points ``{"entity": <id>, "metric": <field>, "value": <v>, "t": <when>}``. Anything else is
    carried as written, settles nothing, and is said once per call site in a warning.
    """
    envelope = SemanticEnvelope()
    rows = _rows(facts)
    envelope[FACTS] = [dict(row) if isinstance(row, Mapping) else row for row in rows]
    points = _rows(series)
    if points:
        envelope[SERIES] = [dict(p) if isinstance(p, Mapping) else p for p in points]
    if isinstance(provenance, Mapping) and provenance:
        envelope[PROVENANCE] = dict(provenance)
    try:
        problem = _unreadable(FACTS, facts, rows, _fact_problem) or _unreadable(
            SERIES, series, points, _point_problem
        )
        if problem is not None:
            _tell_unreadable(sys._getframe(1), *problem)
    except Exception:  # saying so must never reach the tool
        pass
    return envelope


# ── saying where the facts are made, when nothing can read them ─────────

_TOLD_SHAPES: Final[ToldOnce[tuple[str, int, str]]] = ToldOnce(MAX_WARNED_SEMANTIC_SHAPES)
_SHAPE: Final = (
    "each fact row is {'entity': <id>, <field>: <value>, ...} and each series point "
    "{'entity': <id>, 'metric': <field>, 'value': <v>, 't': <when>}"
)


def _q(value: object) -> str:
    return repr(value)[:MAX_QUOTED_CHARS]


def _keys(row: Mapping[str, object]) -> str:
    return ", ".join(_q(key) for key in islice(row, 6)) or "none"


def _entity_problem(where: str, row: Mapping[str, object]) -> str | None:
    if ENTITY not in row:
        return f"{where} has no 'entity' (its keys: {_keys(row)})"
    if _entity(row) is None:
        entity = row[ENTITY]
        return f"{where}'s 'entity' is {type(entity).__name__} {_q(entity)}, not a non-blank string"
    return None


def _fact_problem(where: str, row: Mapping[str, object]) -> str | None:
    problem = _entity_problem(where, row)
    if problem is None and not any(key != ENTITY and isinstance(key, str) and key for key in row):
        problem = f"{where} (entity {_q(row[ENTITY])}) has no field besides 'entity'"
    return problem


def _point_problem(where: str, point: Mapping[str, object]) -> str | None:
    problem = _entity_problem(where, point)
    metric = point.get(METRIC)
    if problem is None and not (isinstance(metric, str) and metric.strip()):
        problem = f"{where} has no 'metric' naming the field it measures (its keys: {_keys(point)})"
    if problem is None and VALUE not in point:
        problem = f"{where} has no 'value' (its keys: {_keys(point)})"
    return problem


def _unreadable(
    name: str,
    given: object,
    rows: list[object],
    problem_of: Callable[[str, Mapping[str, object]], str | None],
) -> tuple[str, str] | None:
    """The first thing in ``given`` (the ``facts`` or ``series`` argument) that settles nothing, as
    (what kind of problem, the sentence), or ``None``."""
    if given is not None and (isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Iterable)):
        return name, f"{name} is a {type(given).__name__}, not a list of rows ({name}=[{{...}}, ...])"
    for index, row in enumerate(rows):
        where = f"{name}[{index}]"
        if not isinstance(row, Mapping):
            return f"{name}-row", f"{where} is a {type(row).__name__}, not a mapping"
        found = problem_of(where, row)
        if found is not None:
            return f"{name}-row", found
    return None


def _tell_unreadable(caller: object, kind: str, problem: str) -> None:
    code = getattr(caller, "f_code", None)
    filename = str(getattr(code, "co_filename", "?"))
    line = int(getattr(caller, "f_lineno", 0))
    if not _TOLD_SHAPES.first((filename, line, kind)):
        return
    logger.warning(
        "context_integrity: ci.semantic() called in %s (%s:%d): %s, so it settles nothing and a claim "
        "on it reads unreachable; %s.",
        getattr(code, "co_name", "?"),
        filename,
        line,
        problem,
        _SHAPE,
    )


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


# ── Facts settled by plain rows, as a contract declares them ────────────

# The keys of a ``settles`` declaration, in the order a message lists them.
SETTLES_KEYS: Final = (ENTITY, FACTS)


@dataclass(frozen=True, slots=True)
class SettledFields:
    """Which field of a tool's rows names the entity, and which fields settle facts about it.

    The envelope's meaning, declared for a tool whose rows carry none: each row's ``entity`` field
    is the entity's id, and each field in ``facts`` the row holds is one settled fact of it.
    """

    entity: str
    facts: tuple[str, ...]


def _settles_fix() -> str:
    return 'Write it as settles={"entity": "port", "facts": ["status"]}: the field naming the entity, and the fields that settle facts.'


def assert_settles(tool_name: str, settles: object) -> SettledFields:
    """Refuse a ``settles`` declaration that names no entity field or no fact field."""
    if isinstance(settles, SettledFields):
        settles = {ENTITY: settles.entity, FACTS: list(settles.facts)}
    if not isinstance(settles, Mapping):
        raise refuse(
            tool_name, f"settles is {type(settles).__name__}, not a table.", _settles_fix(), at=("settles",)
        )
    unknown = [str(key) for key in settles if key not in SETTLES_KEYS]
    if unknown:
        raise refuse(
            tool_name,
            f"settles has unknown field(s) {', '.join(map(repr, unknown))}.{did_you_mean(unknown[0], SETTLES_KEYS)}",
            f"It takes only {ENTITY!r} and {FACTS!r}. " + _settles_fix(),
            at=("settles", unknown[0]),
        )
    entity = settles.get(ENTITY)
    if not isinstance(entity, str) or not entity.strip():
        raise refuse(
            tool_name,
            f"settles has a blank or missing {ENTITY!r} ({entity!r}).",
            "Name the field of the tool's rows that holds the entity's id. " + _settles_fix(),
            at=("settles", ENTITY),
        )
    facts = settles.get(FACTS)
    if isinstance(facts, str) or not isinstance(facts, (list, tuple)) or not facts:
        raise refuse(
            tool_name,
            f"settles has {FACTS!r} = {facts!r}, not a non-empty list of field names.",
            "Name at least one field whose value is a settled fact. " + _settles_fix(),
            at=("settles", FACTS),
        )
    names: list[str] = []
    for index, name in enumerate(facts):
        if not isinstance(name, str) or not name.strip():
            raise refuse(
                tool_name,
                f"settles.{FACTS} has a blank or non-string entry ({name!r}).",
                "Every entry must be a field of the tool's rows, exactly as the rows spell it.",
                at=("settles", FACTS, index),
            )
        if name == entity:
            raise refuse(
                tool_name,
                f"settles.{FACTS} names the entity field {name!r}.",
                "The entity field says which entity a row is about; list only the fields that are facts of it.",
                at=("settles", FACTS, index),
            )
        if name not in names:
            names.append(name)
    return SettledFields(entity, tuple(names))


def _entity_id(value: object) -> str | None:
    # Rows from real systems name entities by text or by number (LUN 0); a claim names them as text.
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _plain_rows(reading: ResultReading, value: object) -> Iterable[Mapping[str, object]]:
    if reading.is_rowset:
        if reading.columns and reading.fields is not None:
            fields, columns = reading.fields, reading.columns
            return (
                {f: column[i] for f, column in zip(fields, columns, strict=True)}
                for i in range(reading.column_length)
            )
        return reading.rows
    if reading.shape == "other" and isinstance(value, Mapping) and not is_envelope(value):
        return (value,)  # one record: a lookup that returns the row it found
    return ()


def declared_fact_rows(
    reading: ResultReading, value: object, settles: SettledFields, *, tool_name: str, call_id: str, epoch: int
) -> list[FactRow]:
    """The facts a tool's plain rows settle, read as its ``settles`` declaration says. Never raises.

    ``reading`` is the result as :func:`~.results.read_result` read it; ``value`` the result
    itself (a single mapping is one row). A row whose entity field is missing or blank settles
    nothing; a fact field the row lacks is not settled by it (``None`` in it is: it says "unknown").
    """
    out: list[FactRow] = []
    try:
        for row in islice(_plain_rows(reading, value), MAX_ROWS_PER_ENVELOPE):
            if not isinstance(row, Mapping) or (entity := _entity_id(row.get(settles.entity))) is None:
                continue
            for name in settles.facts:
                if name in row:
                    out.append(FactRow(entity, name, row[name], tool_name, call_id, epoch))
    except Exception:  # a hostile row: keep what was read before it failed
        pass
    return out
