"""The column check's fast paths decide exactly what its general path decides.

Plain dict rows are proven clean cell by cell when there are few of them and by
C-level passes over each column when there are more; rows of one dataclass are
read into records without a dict per row; a float column with a NaN picks its
offenders out in one pass; ISO date strings are parsed in C, as plain dates
first. The same rows as read-only mappings (``MappingProxyType``) take none of
those paths, so they are the reference: for any rows and any declaration, every
spelling of the rows files the same violations, the same missing columns and
the same messages.
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
from context_integrity.checks.column_types import rows as column_rows
from context_integrity.checks.column_types.values import all_iso_dates, is_iso_date
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


# Values that mostly pass, so that long columns reach the fast paths and only sometimes leave them.
NEARLY_CLEAN = st.one_of(
    st.integers(-3, 3),
    st.floats(-1e6, 1e6),
    st.sampled_from([1e308, -1e308, 10**400, math.nan, -math.inf]),  # sums that overflow or fail
    st.sampled_from(["x", "2024-01-05", "2024-02-29", "2023-02-29", "2024-01-05T10:00:00", "20240105"]),
    st.booleans(),
    st.none(),
    st.just(dt.date(2024, 1, 5)),
    st.just(dt.datetime(2024, 1, 5, 10)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    column=st.lists(NEARLY_CLEAN, min_size=1, max_size=6),
    odd=st.lists(st.tuples(st.integers(0, 199), NEARLY_CLEAN), max_size=3),
    length=st.sampled_from([1, column_rows._FEW_ROWS, column_rows._FEW_ROWS + 1, 200]),
    declared=st.sampled_from(["number", "string", "boolean", "date"]),
    nullable=st.booleans(),
    drop=st.sampled_from([None, 0, 7]),
)
def test_few_and_many_rows_are_judged_alike(
    column: list[object],
    odd: list[tuple[int, object]],
    length: int,
    declared: str,
    nullable: bool,
    drop: int | None,
) -> None:
    # A short run of values, repeated to the length, with a few odd values planted: a column that
    # is all one type (or two) most of the time, as real columns are, and both sides of the
    # cell-by-cell limit.
    values = [column[i % len(column)] for i in range(length)]
    for at, value in odd:
        values[at % length] = value
    rows: list[dict[str, object]] = [{"a": value, "b": i} for i, value in enumerate(values)]
    if drop is not None and drop < length:
        del rows[drop]["a"]
    columns = normalize_columns("t", {"a": {"type": declared, "nullable": nullable}, "b": "number"})
    reference = _verdict([MappingProxyType(row) for row in rows], columns)
    assert _verdict(rows, columns) == reference
    if drop is None:
        assert _verdict([Record(a=row["a"], b=row["b"], c=0) for row in rows], columns) == reference


# Per column type, the values its column usually holds, nearly all passing: the fast paths' case.
OF_ONE_KIND = {
    "number": st.one_of(
        st.integers(-3, 3), st.floats(-1e6, 1e6), st.sampled_from([math.nan, 1e308, 10**400])
    ),
    "date": st.one_of(
        st.dates().map(dt.date.isoformat),
        st.sampled_from(["2023-02-29", "2024-01-05T10:00:00", "x", "20240105"]),
        st.just(dt.date(2024, 1, 5)),
    ),
    "string": st.one_of(st.text(max_size=3), st.just(b"x")),
    "boolean": st.one_of(st.booleans(), st.just(1)),
}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(declared=st.sampled_from(sorted(OF_ONE_KIND)), data=st.data())
def test_long_columns_of_one_kind_are_judged_alike(declared: str, data: st.DataObject) -> None:
    kind = OF_ONE_KIND[declared]
    common = data.draw(st.lists(kind, min_size=1, max_size=3))
    odd = data.draw(st.lists(st.tuples(st.integers(0, 99), kind), max_size=2))
    values = [common[i % len(common)] for i in range(column_rows._FEW_ROWS + 40)]
    for at, value in odd:
        values[at % len(values)] = value
    rows = [{"a": value} for value in values]
    columns = normalize_columns("t", {"a": declared})
    assert _verdict(rows, columns) == _verdict([MappingProxyType(row) for row in rows], columns)


DATE_TEXT = st.one_of(
    st.text(alphabet="0123456789-T:.+Z W", max_size=26),
    st.dates().map(dt.date.isoformat),
    st.datetimes().map(dt.datetime.isoformat),
    st.text(max_size=12),
)


@settings(max_examples=500, deadline=None)
@given(text=DATE_TEXT)
def test_a_plain_date_parse_never_accepts_what_the_definition_refuses(text: str) -> None:
    # The column of strings is first parsed with ``date.fromisoformat`` alone, in C: its "yes"
    # must be the definition's "yes".
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return
    assert is_iso_date(text)


@settings(max_examples=300, deadline=None)
@given(strings=st.lists(DATE_TEXT, max_size=90), repeat=st.booleans())
def test_a_column_of_strings_is_all_dates_exactly_when_each_string_is(
    strings: list[str], repeat: bool
) -> None:
    if repeat:  # repeated strings take the de-duplicating parse
        strings = (strings * 20)[:200]
    assert all_iso_dates(strings) == all(map(is_iso_date, strings))


def test_a_defect_the_run_filed_is_counted_again_but_not_built_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from context_integrity.checks import column_types
    from context_integrity.checks.column_types import sentences
    from context_integrity.contracts import define_contract
    from context_integrity.judge import ContractBook, Dials, RunJudge
    from context_integrity.ledger import CheckId

    built: list[str] = []
    real = sentences.mismatch_message  # the package calls it by its own name, patched below

    def counting(*args: object, **kwargs: object) -> str:
        message = real(*args, **kwargs)  # type: ignore[arg-type]
        built.append(message)
        return message

    monkeypatch.setattr(column_types, "mismatch_message", counting)
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
