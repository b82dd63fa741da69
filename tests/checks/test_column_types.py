"""The column-type check: a tool declared what its rows hold, and the rows disagree.

The laws under test:

1. Reading. Only a non-empty ``list``/``tuple`` whose every element is a
   ``Mapping``, a pydantic model instance or a dataclass instance is a rowset;
   everything else is ``not-applicable`` with no finding, and an iterator is
   never consumed.
2. Presence first. A declared column absent from EVERY row is one
   ``missing-column`` finding, never also a mismatch, and ``nullable`` does
   not excuse it. A column present in some rows is judged row by row.
3. Counted, not sampled. Every row is counted; ``rows`` is the number of
   offenders, ``of_rows`` the number of rows.
4. No value. ``None`` and an absent key are violations unless the column is
   nullable; the ``nullable=True`` hint is named only when an offender is an
   absence and the column is not nullable.
5. Python's traps. ``bool`` is not a number; NaN and the infinities are not;
   ``Decimal``/``Fraction``/numpy numbers are; ``bytes`` is not a string; an
   epoch number is not a date; 1/0 are not booleans.
6. The ceiling. ``COLUMN_TYPE_CEILING`` is quoted verbatim in every
   column-type-mismatch (never in a missing-column, where no value arrived):
   a column that holds the declared type passes even when the value is wrong
   (the 8 MiB disk rendered as 0.0).
7. Bounded. A 5 MB cell never reaches a message or a witness.
8. Modes. ``warn`` never refuses; ``enforce`` refuses only a failing result,
   with a sentence that starts ``Result rejected: ``, names at most
   ``MAX_NAMED_IN_REFUSAL`` problems and ends ``No data was returned.``
9. Never raises for any result: rows whose own code raises are
   ``unreachable``.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import decimal
import fractions
import math
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from context_integrity.checks.column_types import (
    COLUMN_TYPE_CEILING,
    COLUMN_TYPES_CANARY,
    ColumnMode,
    ColumnTypeEncounter,
    ColumnViolation,
    check_column_types,
    column_types_canary,
)
from context_integrity.checks.column_types.sentences import ENFORCE_OUTCOME, WARN_OUTCOME
from context_integrity.contracts import (
    COLUMN_TYPES,
    ColumnDeclaration,
    DeclarationError,
    ResultReading,
    normalize_columns,
    read_result,
)
from context_integrity.findings import Finding, tool_subject
from context_integrity.limits import MAX_NAMED_IN_REFUSAL, MAX_QUOTED_CHARS


def read_rowset(value: object) -> ResultReading | None:
    """The reading when the one result reader calls ``value`` a rowset with rows, else ``None``."""
    reading = read_result(value)
    return reading if reading.is_rowset and reading.row_count else None


TOOL = "host_group_mappings"
CALL = "call-7f3a"


def judge(
    rows: object,
    columns: object,
    *,
    mode: ColumnMode = "warn",
    epoch: int = 0,
) -> ColumnTypeEncounter:
    return check_column_types(
        tool_name=TOOL, columns=columns, result=rows, call_id=CALL, mode=mode, epoch=epoch
    )


def only_finding(encounter: ColumnTypeEncounter) -> Finding:
    assert len(encounter.findings) == 1, encounter.findings
    return encounter.findings[0]


def only_violation(encounter: ColumnTypeEncounter) -> ColumnViolation:
    assert len(encounter.violations) == 1, encounter.violations
    return encounter.violations[0]


# ── The field cases ─────────────────────────────────────────────────────


def test_lun_zero_stored_as_empty_string_is_a_mismatch_in_2_of_3_rows() -> None:
    rows = [
        {"logical_unit_number": "", "host_group": "vdi-a"},
        {"logical_unit_number": 3, "host_group": "vdi-a"},
        {"logical_unit_number": "", "host_group": "vdi-b"},
    ]
    encounter = judge(rows, {"logical_unit_number": "number", "host_group": "string"})

    finding = only_finding(encounter)
    assert encounter.disposition == "checked-fail"
    assert finding.kind == "column-type-mismatch"
    assert finding.predicate == "logical_unit_number"
    assert "2 of 3 rows" in finding.message
    violation = only_violation(encounter)
    assert (violation.column, violation.declared, violation.rows, violation.of_rows) == (
        "logical_unit_number",
        "number",
        2,
        3,
    )
    assert violation.sample == '""'
    assert violation.got == "str"


def test_lun_zero_as_the_number_zero_passes() -> None:
    encounter = judge([{"logical_unit_number": 0}], {"logical_unit_number": "number"})
    assert encounter.disposition == "checked-pass"
    assert encounter.findings == []


def test_quoted_numbers_are_a_mismatch_in_every_row() -> None:
    rows = [{"measure": "1240"}, {"measure": "17"}, {"measure": "3"}]
    violation = only_violation(judge(rows, {"measure": "number"}))
    assert (violation.rows, violation.of_rows) == (3, 3)
    assert violation.sample == '"1240"'
    assert violation.got == "str"


def test_ceiling_made_concrete_an_8_mib_disk_shown_as_0_0_gb_passes() -> None:
    """0.0 is a perfectly good number; the wrong MEANING is above this check's ceiling."""
    encounter = judge([{"disk_gb": round(8 / 1024, 1)}, {"disk_gb": 120.0}], {"disk_gb": "number"})
    assert encounter.disposition == "checked-pass"
    assert encounter.findings == []


# ── Presence and counting ───────────────────────────────────────────────


def test_two_broken_columns_file_two_findings_in_declaration_order() -> None:
    rows = [{"a": "x", "b": 1}, {"a": "y", "b": 2}]
    encounter = judge(rows, {"b": "string", "a": "number"})
    assert [f.predicate for f in encounter.findings] == ["b", "a"]
    assert [f.kind for f in encounter.findings] == ["column-type-mismatch"] * 2


def test_column_absent_from_every_row_is_missing_column_and_never_also_a_mismatch() -> None:
    encounter = judge([{"a": 1}, {"a": 2}], {"a": "number", "lun": "number"})
    finding = only_finding(encounter)
    assert finding.kind == "missing-column"
    assert finding.predicate == "lun"
    assert encounter.violations == []
    assert encounter.missing == ["lun"]
    assert "none of the 2 rows" in finding.message
    assert finding.witnesses[1].value == "present in no row"


def test_column_present_in_some_rows_is_a_mismatch_with_got_missing() -> None:
    encounter = judge([{"lun": 1}, {"other": 2}, {"lun": 3}], {"lun": "number"})
    finding = only_finding(encounter)
    assert finding.kind == "column-type-mismatch"
    violation = only_violation(encounter)
    assert (violation.rows, violation.of_rows, violation.got, violation.sample) == (
        1,
        3,
        "missing",
        "no such key",
    )


def test_both_kinds_fire_in_one_result_about_different_columns() -> None:
    encounter = judge([{"lun": ""}, {"lun": 4}], {"lun": "number", "host_group": "string"})
    assert sorted(f.kind for f in encounter.findings) == ["column-type-mismatch", "missing-column"]
    assert encounter.disposition_of("column-type-mismatch") == "checked-fail"
    assert encounter.disposition_of("missing-column") == "checked-fail"


def test_a_mismatch_only_result_is_a_pass_for_missing_column() -> None:
    encounter = judge([{"lun": ""}], {"lun": "number"})
    assert encounter.disposition_of("column-type-mismatch") == "checked-fail"
    assert encounter.disposition_of("missing-column") == "checked-pass"


def test_unlisted_columns_are_never_judged() -> None:
    rows = [{"lun": 1, "comment": b"\x00", "extra": float("nan")}]
    assert judge(rows, {"lun": "number"}).disposition == "checked-pass"


# ── No value, and nullable ──────────────────────────────────────────────


def test_none_and_an_absent_key_are_violations_and_the_message_names_the_nullable_fix() -> None:
    encounter = judge([{"note": None}, {}, {"note": "ok"}, {"x": 1}], {"note": "string"})
    violation = only_violation(encounter)
    assert (violation.rows, violation.of_rows) == (3, 4)
    assert (violation.got, violation.sample) == ("None", "None")
    assert "missing" in violation.other_kinds
    assert "nullable=True" in only_finding(encounter).message


def test_a_missing_key_first_is_sampled_as_no_such_key_with_the_hint() -> None:
    encounter = judge([{"x": 1}, {"note": "ok"}], {"note": "string"})
    violation = only_violation(encounter)
    assert (violation.got, violation.sample) == ("missing", "no such key")
    assert "nullable=True" in only_finding(encounter).message


@pytest.mark.parametrize(
    "spelling",
    [{"type": "string", "nullable": True}, ColumnDeclaration(type="string", nullable=True)],
)
def test_nullable_excuses_none_and_absent_keys(spelling: object) -> None:
    encounter = judge([{"note": None}, {}, {"note": "fine", "other": 1}], {"note": spelling})
    assert encounter.disposition == "checked-pass"


def test_nullable_does_not_excuse_a_column_present_in_no_row() -> None:
    encounter = judge([{"a": 1}, {"a": None}], {"note": {"type": "string", "nullable": True}})
    finding = only_finding(encounter)
    assert finding.kind == "missing-column"
    assert finding.witnesses[0].value == "declared string (nullable)"


def test_nullable_does_not_excuse_a_wrong_type_and_then_no_hint_is_given() -> None:
    encounter = judge([{"lun": None}, {"lun": ""}], {"lun": {"type": "number", "nullable": True}})
    violation = only_violation(encounter)
    assert (violation.rows, violation.got) == (1, "str")
    assert "nullable=True" not in only_finding(encounter).message


def test_no_nullable_hint_for_a_wrong_typed_offender() -> None:
    encounter = judge([{"lun": ""}, {"lun": 2}], {"lun": "number"})
    assert "nullable=True" not in only_finding(encounter).message


# ── Python's traps ──────────────────────────────────────────────────────


def test_true_in_a_number_column_fails_and_is_named_bool() -> None:
    violation = only_violation(judge([{"n": True}, {"n": 1}], {"n": "number"}))
    assert violation.rows == 1
    assert violation.got == "bool"


@pytest.mark.parametrize(
    ("value", "word"),
    [(float("nan"), "NaN"), (float("inf"), "infinity"), (float("-inf"), "-infinity")],
)
def test_nan_and_the_infinities_are_not_numbers(value: float, word: str) -> None:
    violation = only_violation(judge([{"n": 1.5}, {"n": value}, {"n": 2}], {"n": "number"}))
    assert violation.rows == 1
    assert violation.got.startswith(word + " ")


def test_a_non_finite_float_is_found_even_when_ints_and_none_share_the_column() -> None:
    rows = [{"n": 1}, {"n": None}, {"n": float("nan")}, {"n": 2.5}]
    violation = only_violation(judge(rows, {"n": {"type": "number", "nullable": True}}))
    assert (violation.rows, violation.of_rows) == (1, 4)


def test_finite_floats_whose_sum_overflows_still_pass() -> None:
    rows = [{"n": 1.7e308}, {"n": 1.7e308}, {"n": 10**400}]
    assert judge(rows, {"n": "number"}).disposition == "checked-pass"


@pytest.mark.parametrize(
    "value",
    [
        decimal.Decimal("12.50"),
        fractions.Fraction(1, 3),
        10**400,
        np.int64(7),
        np.float64(2.5),
        np.float32(1),
        pytest.param(
            np.longdouble("1e400"),
            marks=pytest.mark.skipif(
                not np.isfinite(np.longdouble("1e400")), reason="longdouble is a double here"
            ),
            id="longdouble-beyond-float-range",
        ),
    ],
)
def test_decimal_fraction_big_int_and_numpy_numbers_pass(value: object) -> None:
    assert judge([{"n": value}], {"n": "number"}).disposition == "checked-pass"


@pytest.mark.parametrize(
    "value",
    [
        decimal.Decimal("NaN"),
        decimal.Decimal("sNaN"),
        decimal.Decimal("Infinity"),
        decimal.Decimal("-Infinity"),
        np.float64("nan"),
        np.float32("inf"),
        np.float16("-inf"),
        np.longdouble("nan"),
    ],
)
def test_non_finite_decimal_and_numpy_values_fail_without_raising(value: object) -> None:
    violation = only_violation(judge([{"n": value}], {"n": "number"}))
    assert "no number" in violation.got


def test_numpy_bool_is_not_a_number_but_is_a_boolean() -> None:
    as_number = only_violation(judge([{"v": np.bool_(True)}], {"v": "number"}))
    assert "bool" in as_number.got
    assert judge([{"v": np.bool_(False)}], {"v": "boolean"}).disposition == "checked-pass"


@pytest.mark.parametrize("value", [1, 0, "true", "false", None])
def test_one_zero_and_strings_are_not_booleans(value: object) -> None:
    violation = only_violation(judge([{"b": True}, {"b": value}], {"b": "boolean"}))
    assert violation.rows == 1


def test_true_and_false_are_booleans() -> None:
    assert judge([{"b": True}, {"b": False}], {"b": "boolean"}).disposition == "checked-pass"


def test_empty_string_is_a_string() -> None:
    assert judge([{"s": ""}], {"s": "string"}).disposition == "checked-pass"


def test_bytes_is_not_a_string() -> None:
    violation = only_violation(judge([{"s": b"vdi-a"}], {"s": "string"}))
    assert violation.got == "bytes"


@pytest.mark.parametrize(
    "value",
    [dt.date(2024, 1, 5), dt.datetime(2024, 1, 5, 10, 30), "2024-01-05", "2024-01-05T10:30:00+00:00"],
)
def test_dates_datetimes_and_iso_strings_are_dates(value: object) -> None:
    assert judge([{"d": value}], {"d": "date"}).disposition == "checked-pass"


@pytest.mark.parametrize("value", [1704067200, 1704067200.0, "last tuesday", "", "2024-13-45"])
def test_epoch_numbers_and_garbage_strings_are_not_dates(value: object) -> None:
    violation = only_violation(judge([{"d": value}], {"d": "date"}))
    assert violation.rows == 1


def test_a_column_of_iso_strings_counts_each_bad_string_once() -> None:
    rows: list[dict[str, object]] = [{"d": f"2024-01-{1 + i % 28:02d}"} for i in range(100)]
    assert judge(rows, {"d": "date"}).disposition == "checked-pass"
    rows[40] = {"d": "2024-02-30"}
    rows[70] = {"d": "2024-02-30"}
    violation = only_violation(judge(rows, {"d": "date"}))
    assert (violation.rows, violation.of_rows, violation.sample) == (2, 100, '"2024-02-30"')


def test_an_epoch_number_in_a_date_column_says_it_is_a_number() -> None:
    violation = only_violation(judge([{"d": 1704067200}], {"d": "date"}))
    assert violation.got.startswith("int")


def test_a_pandas_nat_lookalike_is_not_a_date() -> None:
    """pandas' NaT subclasses datetime; it is recognised by its type name, without importing pandas."""
    nat_type = type("NaTType", (dt.datetime,), {})
    nat = nat_type(2000, 1, 1)
    violation = only_violation(judge([{"d": nat}], {"d": "date"}))
    assert "NaT" in violation.got


def test_numpy_datetime64_is_a_date_and_its_nat_is_not() -> None:
    assert judge([{"d": np.datetime64("2024-01-05")}], {"d": "date"}).disposition == "checked-pass"
    assert only_violation(judge([{"d": np.datetime64("NaT")}], {"d": "date"})).rows == 1


# ── Reading ─────────────────────────────────────────────────────────────


def _generator() -> Iterator[dict[str, int]]:
    yield {"lun": 1}
    yield {"lun": 2}


@pytest.mark.parametrize(
    "value",
    [
        "lun 0, lun 3",
        None,
        {"rows": [{"lun": 1}]},
        {"lun": 1},
        [],
        (),
        [1, 2, 3],
        [[1, 2], [3, 4]],
        [{"lun": 1}, 2],
        [{"lun": 1}, None],
        iter([{"lun": 1}]),
        b"rows",
    ],
    ids=repr,
)
def test_what_is_not_a_rowset_is_not_applicable_with_no_finding(value: object) -> None:
    assert read_rowset(value) is None
    encounter = judge(value, {"lun": "number"}, mode="enforce")
    assert encounter.disposition == "not-applicable"
    assert encounter.findings == []
    assert encounter.refusal is None


def test_a_generator_is_not_applicable_and_left_unconsumed() -> None:
    rows = _generator()
    assert read_rowset(rows) is None
    assert judge(rows, {"lun": "string"}).disposition == "not-applicable"
    assert list(rows) == [{"lun": 1}, {"lun": 2}]


def test_a_dataclass_class_in_the_list_is_not_a_row() -> None:
    @dataclasses.dataclass
    class Mapping_:
        lun: int

    assert read_rowset([Mapping_]) is None
    assert read_rowset([Mapping_(1)]) is not None


def test_a_list_of_dicts_is_read_without_copying_a_row() -> None:
    rows = [{"lun": i} for i in range(3)]
    reading = read_rowset(rows)
    assert reading is not None
    assert reading.plain
    assert all(read is given for read, given in zip(reading.rows, rows, strict=True))


def test_tuple_rows_container_is_a_rowset() -> None:
    violation = only_violation(judge(({"lun": ""}, {"lun": 1}), {"lun": "number"}))
    assert (violation.rows, violation.of_rows) == (1, 2)


class _Mappingish(Mapping[str, object]):
    """A Mapping that is not a dict: the rows are read through __getitem__."""

    def __init__(self, data: dict[str, object]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> object:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def test_non_dict_mappings_are_rows() -> None:
    rows = [_Mappingish({"lun": ""}), MappingProxyType({"lun": 1}), collections.OrderedDict(lun=2)]
    violation = only_violation(judge(rows, {"lun": "number"}))
    assert (violation.rows, violation.of_rows, violation.got) == (1, 3, "str")


def test_a_defaultdict_row_does_not_grow_the_key_we_looked_for() -> None:
    row: collections.defaultdict[str, object] = collections.defaultdict(lambda: 0, lun="")
    violation = only_violation(judge([row], {"lun": "number", "host_group": "string"}))
    assert violation.column == "lun"
    assert "host_group" not in row


class _Mapping(BaseModel):
    logical_unit_number: int | str
    host_group: str


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")
    host_group: str


def test_pydantic_rows_are_read_by_their_field_values() -> None:
    rows = [
        _Mapping(logical_unit_number="", host_group="vdi-a"),
        _Mapping(logical_unit_number=3, host_group="x"),
    ]
    violation = only_violation(judge(rows, {"logical_unit_number": "number", "host_group": "string"}))
    assert (violation.column, violation.rows, violation.of_rows) == ("logical_unit_number", 1, 2)


def test_pydantic_extras_are_columns_when_the_model_allows_them() -> None:
    rows = [
        _Open.model_validate({"host_group": "a", "lun": "7"}),
        _Open.model_validate({"host_group": "b", "lun": 2}),
    ]
    violation = only_violation(judge(rows, {"lun": "number"}))
    assert (violation.rows, violation.sample) == (1, '"7"')


@dataclasses.dataclass
class _Row:
    lun: object
    host_group: str = "vdi-a"


@dataclasses.dataclass(slots=True)
class _SlottedRow:
    lun: object


def test_dataclass_rows_are_read_by_their_fields() -> None:
    violation = only_violation(judge([_Row(""), _Row(3), _SlottedRow("")], {"lun": "number"}))
    assert (violation.rows, violation.of_rows) == (2, 3)


def test_mixed_row_kinds_in_one_list_are_one_rowset() -> None:
    rows: list[object] = [{"lun": 1}, _Row(2), _Mapping(logical_unit_number=3, host_group="g")]
    encounter = judge(rows, {"lun": "number"})
    violation = only_violation(encounter)
    # The pydantic row has no 'lun' field: an absent key in one row of three.
    assert (violation.rows, violation.got) == (1, "missing")


# ── Never raises ────────────────────────────────────────────────────────


class _Exploding(_Mappingish):
    def __getitem__(self, key: str) -> object:
        raise RuntimeError("backend went away")

    def __contains__(self, key: object) -> bool:
        raise RuntimeError("backend went away")


@dataclasses.dataclass
class _ExplodingRow:
    lun: int

    def __getattribute__(self, name: str) -> Any:
        if name == "lun":
            raise RuntimeError("lazy load failed")
        return object.__getattribute__(self, name)


class _ExplodingList(list[dict[str, object]]):
    def __len__(self) -> int:
        raise RuntimeError("no length today")


class _EvilKey(str):
    def __hash__(self) -> int:
        return hash("lun")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no comparing today")


@pytest.mark.parametrize(
    "rows",
    [
        [_Exploding({"lun": 1})],
        [_ExplodingRow(1)],
        _ExplodingList([{"lun": 1}]),
        [{_EvilKey("x"): 1}],
    ],
    ids=["mapping-getitem", "dataclass-attribute", "list-len", "key-eq"],
)
def test_rows_whose_own_code_raises_are_unreachable_never_raised(rows: object) -> None:
    encounter = judge(rows, {"lun": "number"}, mode="enforce")
    assert encounter.disposition == "unreachable"
    assert encounter.findings == []
    assert encounter.refusal is None


def test_read_rowset_answers_none_when_adapting_a_row_raises() -> None:
    assert read_rowset([_ExplodingRow(1)]) is None
    assert read_rowset(_ExplodingList([{"lun": 1}])) is None


def test_a_hostile_repr_cannot_break_the_message() -> None:
    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    finding = only_finding(judge([{"lun": Hostile()}], {"lun": "number"}))
    assert "lun" in finding.message


# ── Bounded ─────────────────────────────────────────────────────────────


@pytest.mark.parametrize("column_type", ["number", "date", "boolean"])
def test_a_5_mb_cell_is_clipped_out_of_the_message_and_witness(column_type: str) -> None:
    huge = "x" * 5_000_000
    encounter = judge([{"c": huge}], {"c": column_type}, mode="enforce")
    finding = only_finding(encounter)
    violation = only_violation(encounter)
    assert len(violation.sample) <= MAX_QUOTED_CHARS + 2  # the quotes around the clipped text
    assert len(finding.message) < 2_000
    assert all(len(str(w.value)) < 200 for w in finding.witnesses)
    assert encounter.refusal is not None and len(encounter.refusal) < 1_000


# ── The finding's shape ─────────────────────────────────────────────────


def test_a_mismatch_finding_carries_both_witnesses_and_the_identity_fields() -> None:
    encounter = judge([{"lun": ""}, {"lun": 1}, {"lun": ""}], {"lun": "number"}, epoch=4)
    finding = only_finding(encounter)
    assert finding.seam == "write"
    assert finding.subjects == (tool_subject(TOOL),)
    assert finding.epoch == 4
    assert finding.advisory is False
    declared, observed = finding.witnesses
    assert declared.value == "declared number"
    assert "result_columns" in declared.provenance and TOOL in declared.provenance
    assert observed.value == '2 of 3 rows hold str — first: ""'
    assert CALL in observed.provenance and "3 rows" in observed.provenance
    assert {declared.predicate, observed.predicate} == {"lun"}
    assert {declared.epoch, observed.epoch} == {4}


def test_a_missing_column_finding_carries_both_witnesses() -> None:
    finding = only_finding(judge([{"a": 1}, {"a": 2}], {"lun": "number"}))
    declared, observed = finding.witnesses
    assert declared.value == "declared number"
    assert "result_columns" in declared.provenance
    assert observed.value == "present in no row"
    assert CALL in observed.provenance and "2 rows" in observed.provenance


@pytest.mark.parametrize(
    ("rows", "kind"),
    [([{"lun": ""}], "column-type-mismatch"), ([{"other": 1}, {"other": 2}], "missing-column")],
)
@pytest.mark.parametrize("mode", ["warn", "enforce"])
def test_every_message_names_tool_column_call_ceiling_where_it_applies_and_what_the_boundary_did(
    rows: list[dict[str, object]], kind: str, mode: ColumnMode
) -> None:
    finding = only_finding(judge(rows, {"lun": "number"}, mode=mode))
    assert finding.kind == kind
    # The ceiling is about the type of a value that arrived: a column that never arrived has none.
    assert (COLUMN_TYPE_CEILING in finding.message) == (kind == "column-type-mismatch")
    assert TOOL in finding.message
    assert "'lun'" in finding.message
    assert "number" in finding.message
    assert CALL in finding.message
    expected, other = (WARN_OUTCOME, ENFORCE_OUTCOME) if mode == "warn" else (ENFORCE_OUTCOME, WARN_OUTCOME)
    assert expected in finding.message
    assert other not in finding.message


def test_the_message_names_the_first_offender_and_what_it_is() -> None:
    message = only_finding(judge([{"lun": 1}, {"lun": "0"}], {"lun": "number"})).message
    assert '"0", which is str' in message
    assert "1 of 2 rows" in message


def test_the_ceiling_is_one_sentence_about_type_not_meaning() -> None:
    assert COLUMN_TYPE_CEILING.count(". ") == 0
    assert COLUMN_TYPE_CEILING.endswith(".")
    for fact in ("type", "meaning", "number", "string", "0.0", "8"):
        assert fact in COLUMN_TYPE_CEILING


# ── Modes ───────────────────────────────────────────────────────────────


def test_enforce_refuses_a_mismatch_with_the_house_sentence() -> None:
    encounter = judge([{"lun": ""}, {"lun": ""}], {"lun": "number"}, mode="enforce")
    refusal = encounter.refusal
    assert refusal is not None
    assert refusal.startswith("Result rejected: ")
    assert refusal.endswith("No data was returned.")
    assert TOOL in refusal
    assert "'lun'" in refusal
    assert "2 of 2 rows" in refusal


def test_enforce_names_five_problems_then_how_many_more() -> None:
    columns = {f"c{i}": "number" for i in range(7)}
    encounter = judge([dict.fromkeys(columns, "x")], columns, mode="enforce")
    assert len(encounter.findings) == 7
    refusal = encounter.refusal
    assert refusal is not None
    named = [name for name in columns if f"'{name}'" in refusal]
    assert named == [f"c{i}" for i in range(MAX_NAMED_IN_REFUSAL)]
    assert f", and {7 - MAX_NAMED_IN_REFUSAL} more" in refusal
    assert refusal.endswith("No data was returned.")


def test_enforce_names_violations_before_missing_columns() -> None:
    columns = {"gone": "string", **{f"c{i}": "number" for i in range(MAX_NAMED_IN_REFUSAL)}}
    rows = [{f"c{i}": "x" for i in range(MAX_NAMED_IN_REFUSAL)}]
    refusal = judge(rows, columns, mode="enforce").refusal
    assert refusal is not None
    assert "'gone'" not in refusal
    assert ", and 1 more" in refusal


def test_enforce_refuses_a_missing_column() -> None:
    refusal = judge([{"a": 1}], {"lun": "number"}, mode="enforce").refusal
    assert refusal is not None
    assert refusal.startswith("Result rejected: ")
    assert "'lun'" in refusal
    assert refusal.endswith("No data was returned.")


def test_enforce_does_not_refuse_a_clean_result() -> None:
    encounter = judge([{"lun": 0}], {"lun": "number"}, mode="enforce")
    assert encounter.disposition == "checked-pass"
    assert encounter.refusal is None


def test_warn_never_refuses_even_when_it_files() -> None:
    encounter = judge([{"lun": ""}], {"lun": "number", "gone": "string"}, mode="warn")
    assert len(encounter.findings) == 2
    assert encounter.refusal is None


# ── Declarations ────────────────────────────────────────────────────────


def test_a_normalised_declaration_is_passed_through_and_judges_identically() -> None:
    raw = {"lun": "number", "note": {"type": "string", "nullable": True}}
    rows = [{"lun": "", "note": None}]
    assert judge(rows, normalize_columns(TOOL, raw)) == judge(rows, raw)


def test_a_pydantic_model_class_is_a_declaration() -> None:
    class Declared(BaseModel):
        lun: int
        note: str | None

    violation = only_violation(judge([{"lun": "", "note": None}], Declared))
    assert violation.column == "lun"


def test_a_bad_declaration_raises_declaration_error_naming_the_tool() -> None:
    with pytest.raises(DeclarationError, match=TOOL):
        judge([{"lun": 1}], {"lun": "integer"})


def test_unknown_mode_behaves_as_warn() -> None:
    encounter = judge([{"lun": ""}], {"lun": "number"}, mode="refuse")  # type: ignore[arg-type]
    assert encounter.refusal is None
    assert WARN_OUTCOME in only_finding(encounter).message


# ── The canary ──────────────────────────────────────────────────────────


def test_the_canary_makes_both_kinds_fire_as_synthetic_findings() -> None:
    encounter = column_types_canary()
    assert encounter.disposition == "checked-fail"
    assert sorted(f.kind for f in encounter.findings) == ["column-type-mismatch", "missing-column"]
    assert all(f.synthetic for f in encounter.findings)
    assert all(f.epoch == COLUMN_TYPES_CANARY.epoch for f in encounter.findings)
    assert encounter.violations[0].sample == '"1240"'
    assert encounter.missing == ["canary_absent"]


# ── Counting, as a property ─────────────────────────────────────────────

COLUMN_NAMES = ("a", "b", "c", "d")


def _is_iso(text: str) -> bool:
    for parse in (dt.datetime.fromisoformat, dt.date.fromisoformat):
        try:
            parse(text)
            return True
        except ValueError:
            pass
    return False


def obviously_has_type(value: object, column_type: str) -> bool:
    """An independent, deliberately plain restatement of what each column type admits."""
    if column_type == "number":
        if isinstance(value, (bool, np.bool_)):
            return False
        if isinstance(value, float):
            return math.isfinite(value)
        if isinstance(value, decimal.Decimal):
            return value.is_finite()
        if isinstance(value, np.floating):
            return bool(np.isfinite(value))
        return isinstance(value, (int, fractions.Fraction, np.integer))
    if column_type == "string":
        return isinstance(value, str)
    if column_type == "boolean":
        return isinstance(value, (bool, np.bool_))
    assert column_type == "date"
    if isinstance(value, str):
        return _is_iso(value)
    return isinstance(value, dt.date)


cell_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.binary(max_size=2),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.fractions(),
    st.dates(),
    st.datetimes(),
    st.dates().map(dt.date.isoformat),
    st.lists(st.integers(), max_size=2),
    st.integers(-(2**63), 2**63 - 1).map(np.int64),
    st.floats(allow_nan=True, allow_infinity=True).map(np.float64),
    st.booleans().map(np.bool_),
)
rowsets = st.lists(
    st.dictionaries(st.sampled_from(COLUMN_NAMES), cell_values, max_size=4), min_size=1, max_size=12
)
declarations = st.dictionaries(
    st.sampled_from(COLUMN_NAMES),
    st.fixed_dictionaries({"type": st.sampled_from(COLUMN_TYPES), "nullable": st.booleans()}),
    min_size=1,
    max_size=4,
)
row_makers: list[Callable[[dict[str, object]], Mapping[str, object]]] = [
    dict,
    collections.OrderedDict,
    MappingProxyType,
    _Mappingish,
]


@settings(max_examples=300, deadline=None)
@given(rows=rowsets, columns=declarations, make_row=st.sampled_from(row_makers))
def test_reported_counts_equal_a_brute_force_recount(
    rows: list[dict[str, object]],
    columns: dict[str, dict[str, Any]],
    make_row: Callable[[dict[str, object]], Mapping[str, object]],
) -> None:
    encounter = judge([make_row(row) for row in rows], columns)

    expected_missing: list[str] = []
    expected_counts: dict[str, int] = {}
    for name, spec in columns.items():
        if all(name not in row for row in rows):
            expected_missing.append(name)
            continue
        offenders = 0
        for row in rows:
            if name not in row or row[name] is None:
                offenders += 0 if spec["nullable"] else 1
            elif not obviously_has_type(row[name], spec["type"]):
                offenders += 1
        if offenders:
            expected_counts[name] = offenders

    assert encounter.missing == expected_missing
    assert {v.column: v.rows for v in encounter.violations} == expected_counts
    assert all(v.of_rows == len(rows) for v in encounter.violations)
    assert [v.column for v in encounter.violations] == [n for n in columns if n in expected_counts]
    expected_disposition = "checked-fail" if expected_missing or expected_counts else "checked-pass"
    assert encounter.disposition == expected_disposition
