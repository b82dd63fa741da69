"""The column check's fast paths decide exactly what its general path decides.

Plain dict rows take fused C-level reads (and a small rowset skips the per-column
set-up); rows of one dataclass are read into records without a dict per row; a
float column with a NaN picks its offenders out in C; ISO date strings are
parsed with or without de-duplication as a sample suggests. The same rows as
read-only mappings (``MappingProxyType``) take none of those paths, so they are
the reference: for any rows and any declaration, every spelling of the rows
files the same violations, the same missing columns and the same messages.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from types import MappingProxyType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_integrity.checks.column_types import check_column_types
from context_integrity.contracts import normalize_columns

NAMES = ("a", "b", "c")
VALUES = st.one_of(
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1.5, math.nan, math.inf, 2.0]),
    st.sampled_from(["x", "", "2024-01-05", "2024-01-05T10:00:00", "2024-13-40", "1240"]),
    st.booleans(),
    st.none(),
    st.just(dt.date(2024, 1, 5)),
)
DECLARATIONS = st.dictionaries(
    st.sampled_from((*NAMES, "extra")),
    st.builds(
        lambda t, n: {"type": t, "nullable": n},
        st.sampled_from(["number", "string", "boolean", "date"]),
        st.booleans(),
    ),
    min_size=1,
)
ROWS = st.lists(st.fixed_dictionaries({}, optional={name: VALUES for name in NAMES}), min_size=1, max_size=80)

Record = dataclasses.make_dataclass("Record", [(name, object) for name in NAMES])
# Its instances carry an attribute that is no field, so their own dict is not their row.
Tagged = dataclasses.make_dataclass(
    "Tagged",
    [(name, object) for name in NAMES],
    namespace={"__post_init__": lambda self: setattr(self, "extra", "x")},
)
Slotted = dataclasses.make_dataclass("Slotted", [(name, object) for name in NAMES], slots=True)


def _verdict(result: object, columns: object) -> tuple[object, ...]:
    encounter = check_column_types(tool_name="t", columns=columns, result=result, call_id="c")
    return (
        encounter.disposition,
        [dataclasses.astuple(v) for v in encounter.violations],
        encounter.missing,
        [f.message for f in encounter.findings],
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=ROWS, declared=DECLARATIONS)
def test_every_spelling_of_the_rows_is_judged_alike(
    rows: list[dict[str, object]], declared: dict[str, object]
) -> None:
    columns = normalize_columns("t", declared)
    reference = _verdict([MappingProxyType(row) for row in rows], columns)
    assert _verdict(rows, columns) == reference
    if all(len(row) == len(NAMES) for row in rows):  # a dataclass row has every field
        for kind in (Record, Tagged, Slotted):
            assert _verdict([kind(**row) for row in rows], columns) == reference


@settings(max_examples=50, deadline=None)
@given(nan_at=st.lists(st.integers(0, 299), max_size=4), distinct=st.booleans())
def test_long_columns_off_the_fast_path_are_judged_alike(nan_at: list[int], distinct: bool) -> None:
    start = dt.date(2024, 1, 1)
    rows: list[dict[str, object]] = [
        {"a": i * 1.5, "c": (start + dt.timedelta(days=i if distinct else i % 7)).isoformat()}
        for i in range(300)
    ]
    for at in nan_at:
        rows[at]["a"] = math.nan
    rows[150]["c"] = "not a date" if distinct else rows[150]["c"]
    columns = normalize_columns("t", {"a": "number", "c": "date"})
    assert _verdict(rows, columns) == _verdict([MappingProxyType(row) for row in rows], columns)


def test_a_defect_the_run_filed_is_counted_again_but_not_built_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from context_integrity.checks import column_types
    from context_integrity.contracts import define_contract
    from context_integrity.judge import ContractBook, Dials, RunJudge
    from context_integrity.ledger import CheckId

    built: list[str] = []
    real = column_types._mismatch_message

    def counting(*args: object, **kwargs: object) -> str:
        message = real(*args, **kwargs)  # type: ignore[arg-type]
        built.append(message)
        return message

    monkeypatch.setattr(column_types, "_mismatch_message", counting)
    book = ContractBook()
    book.declare(define_contract("t", result_columns={"lun": "number"}))
    judge = RunJudge(book, Dials(check_column_types="enforce"))
    first = judge.write("t", "c1", [{"lun": ""}])
    second = judge.write("t", "c2", [{"lun": ""}])
    assert len(first.findings) == 1 and second.findings == []
    assert first.refusal is not None and second.refusal is not None  # still refused every time
    assert len(built) == 1  # the second sighting built no finding
    (row,) = [r for r in judge.report() if (r.check, r.seam) == CheckId("column-type-mismatch", "write")]
    assert (row.checked, row.findings) == (2, 2)  # and still counted as a failed look
