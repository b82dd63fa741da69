"""What the column-type check costs over the least a type check could do, small results to large.

Side by side, in one process, over interleaved rounds (median and min of the
per-round ratios), on clean rowsets of 5 declared columns (number, string,
boolean, date, number):

* ``check_column_types`` with the declaration already normalised (as the judge
  calls it) against the floor: a plain loop that, per row and per declared
  column, reads the cell and does the matching ``isinstance`` test, and nothing
  else. Targets: at 10 and 50 rows (the sizes agents return) <= 2x; at 10,000
  rows <= 1.0x.
* off the fast path, at 10,000 rows, against the clean case: every date an
  ISO string and all distinct; one NaN in the float column; the rows as
  dataclass instances. Target: each <= 1.3x the clean case.

Run: ``python benchmarks/bench_column_types.py``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from _harness import Measure, ratio, rounds_of, show
from context_integrity.checks.column_types import check_column_types
from context_integrity.contracts import NormalizedColumn, normalize_columns

SMALL_TARGET, LARGE_TARGET, OFF_PATH_TARGET = 2.0, 1.0, 1.3
LARGE = 10_000
COLUMNS = {"measure": "number", "label": "string", "active": "boolean", "day": "date", "count": "number"}
DECLARED: tuple[NormalizedColumn, ...] = normalize_columns("bench_tool", COLUMNS)
FLOOR_TESTS: tuple[tuple[str, type | tuple[type, ...]], ...] = (
    ("measure", (int, float)),
    ("label", str),
    ("active", bool),
    ("day", (dt.date, dt.datetime)),
    ("count", (int, float)),
)


@dataclass
class Row:
    measure: float
    label: str
    active: bool
    day: dt.date | str
    count: int


def clean_rows(count: int, *, iso_dates: bool = False) -> list[dict[str, object]]:
    start = dt.date(2024, 1, 1)
    out: list[dict[str, object]] = []
    for i in range(count):
        # All distinct when ISO: a different day for every row.
        day = start + dt.timedelta(days=i if iso_dates else i % 365)
        out.append(
            {
                "measure": i * 1.5,
                "label": f"host-{i}",
                "active": i % 3 == 0,
                "day": day.isoformat() if iso_dates else day,
                "count": i,
            }
        )
    return out


def with_one_nan(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    dirty = [dict(row) for row in rows]
    dirty[len(dirty) // 2]["measure"] = float("nan")
    return dirty


def as_dataclasses(rows: list[dict[str, object]]) -> list[Row]:
    return [Row(**row) for row in rows]  # type: ignore[arg-type]


def floor(rows: Sequence[dict[str, object]]) -> int:
    offenders = 0
    for row in rows:
        for name, types in FLOOR_TESTS:
            if not isinstance(row.get(name), types):
                offenders += 1
    return offenders


def check(rows: Sequence[object]) -> object:
    return check_column_types(tool_name="bench_tool", columns=DECLARED, result=rows, call_id="bench-call")


def main(rounds: int = 41) -> list[Measure]:
    measures: list[Measure] = []
    for size, number, target in ((10, 500, SMALL_TARGET), (50, 100, SMALL_TARGET), (LARGE, 1, LARGE_TARGET)):
        rows = clean_rows(size)
        assert getattr(check(rows), "disposition", None) == "checked-pass"
        samples = rounds_of(
            {"check": lambda rows=rows: check(rows), "floor": lambda rows=rows: floor(rows)},  # type: ignore[misc]
            rounds=rounds,
            number=number,
        )
        measures.append(
            ratio(
                f"check_column_types, {size:,} clean rows / isinstance floor",
                samples["check"],
                samples["floor"],
                target,
            )
        )
    clean = clean_rows(LARGE)
    iso = clean_rows(LARGE, iso_dates=True)
    nan = with_one_nan(clean)
    records = as_dataclasses(clean)
    assert getattr(check(nan), "disposition", None) == "checked-fail"
    samples = rounds_of(
        {
            "clean": lambda: check(clean),
            "iso": lambda: check(iso),
            "nan": lambda: check(nan),
            "dataclass": lambda: check(records),
        },
        rounds=rounds,
        number=1,
    )
    for key, label in (
        ("iso", "all-distinct ISO date strings"),
        ("nan", "one NaN in the float column"),
        ("dataclass", "dataclass rows"),
    ):
        measures.append(
            ratio(
                f"check_column_types, {LARGE:,} rows, {label} / clean",
                samples[key],
                samples["clean"],
                OFF_PATH_TARGET,
            )
        )
    return show(measures)


if __name__ == "__main__":
    main()
