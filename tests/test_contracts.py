"""What a tool may declare, and the definition-time refusals that guard it.

The laws under test:

1. A ``result_columns`` this library cannot honour is refused when the tool
   is defined, with a :class:`DeclarationError` (a ``ValueError``) whose
   message names the tool, the column (where there is one) and the fix.
2. The vocabulary is closed: ``number``, ``string``, ``boolean``, ``date``.
   There is deliberately no ``unknown``; a Python class written as a type is
   refused with a hint at the right word.
3. Two spellings, one meaning: a bare type and the object form (dict or
   ``ColumnDeclaration``) normalise identically, in declaration order.
4. A pydantic model class is a declaration, field by field; ``X | None``
   makes a column nullable; a field with no column type is refused by name.
5. ``arguments_from`` is a non-empty list of tool names, never the tool
   itself, never a bare string.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Optional

import pytest
from pydantic import BaseModel

from context_integrity.contracts import (
    COLUMN_TYPES,
    ColumnDeclaration,
    DeclarationError,
    NormalizedColumn,
    assert_arguments_from,
    assert_result_columns,
    define_contract,
    normalize_columns,
)

TOOL = "host_group_mappings"


def refusal(columns: object) -> str:
    with pytest.raises(DeclarationError) as caught:
        normalize_columns(TOOL, columns)
    message = str(caught.value)
    # assert_result_columns is the same rule under its public name.
    with pytest.raises(DeclarationError) as again:
        assert_result_columns(TOOL, columns)
    assert str(again.value) == message
    assert TOOL in message
    return message


# ── result_columns refusals ─────────────────────────────────────────────


def test_declaration_error_is_a_value_error() -> None:
    assert issubclass(DeclarationError, ValueError)


@pytest.mark.parametrize("columns", [["lun"], "number", 5, None, ("lun", "number")], ids=repr)
def test_a_declaration_that_is_not_a_mapping_is_refused_with_the_shape_to_use(columns: object) -> None:
    message = refusal(columns)
    assert "not a map of column name to type" in message
    assert "pydantic model class" in message  # the fix names both accepted shapes


def test_an_empty_declaration_is_refused_as_promising_nothing() -> None:
    message = refusal({})
    assert "promises nothing" in message
    assert "Declare at least one column" in message


@pytest.mark.parametrize("name", ["", "   ", 7])
def test_a_blank_or_non_string_column_name_is_refused(name: object) -> None:
    message = refusal({name: "number"})
    assert repr(name) in message
    assert "Name every column" in message


@pytest.mark.parametrize("word", ["integer", "text", "datetime", "NUMBER"])
def test_an_unknown_type_is_refused_listing_the_four_types_and_no_unknown(word: str) -> None:
    message = refusal({"lun": word})
    assert "'lun'" in message
    assert repr(word) in message
    for column_type in COLUMN_TYPES:
        assert repr(column_type) in message
    assert "deliberately no 'unknown'" in message


def test_the_word_unknown_is_refused_with_the_advice_to_leave_the_column_undeclared() -> None:
    message = refusal({"lun": "unknown"})
    assert "'lun'" in message
    assert "deliberately no 'unknown'" in message
    assert "undeclared" in message


@pytest.mark.parametrize(
    ("python_type", "word"), [(int, "number"), (str, "string"), (bool, "boolean"), (dt.date, "date")]
)
def test_a_python_class_as_type_gets_the_hint_to_the_right_word(python_type: type, word: str) -> None:
    message = refusal({"lun": python_type})
    assert "'lun'" in message
    assert f"Python class {python_type.__name__!r}" in message
    assert f"'{word}'" in message


@pytest.mark.parametrize("nullable", ["yes", 1, 0, None])
def test_a_non_boolean_nullable_is_refused(nullable: object) -> None:
    message = refusal({"note": {"type": "string", "nullable": nullable}})
    assert "'note'" in message
    assert repr(nullable) in message
    assert "nullable=True" in message


def test_an_unknown_key_in_the_object_form_is_refused_by_name() -> None:
    message = refusal({"note": {"type": "string", "optional": True}})
    assert "'note'" in message
    assert "'optional'" in message
    assert "'type' and 'nullable'" in message


def test_an_object_form_without_a_type_is_refused() -> None:
    message = refusal({"note": {"nullable": True}})
    assert "'note'" in message
    assert "no 'type'" in message


def test_a_good_declaration_passes_the_assert() -> None:
    assert_result_columns(TOOL, {"lun": "number"})  # raises on a bad declaration; this one is good


def test_the_object_form_refuses_an_unknown_type_too() -> None:
    message = refusal({"note": {"type": "varchar"}})
    assert "'note'" in message
    assert "'varchar'" in message


# ── Normalisation ───────────────────────────────────────────────────────


def test_both_spellings_normalise_identically_in_declaration_order() -> None:
    bare = normalize_columns(TOOL, {"lun": "number", "host_group": "string", "seen": "date", "ok": "boolean"})
    objects = normalize_columns(
        TOOL,
        {
            "lun": {"type": "number"},
            "host_group": ColumnDeclaration(type="string"),
            "seen": {"type": "date", "nullable": False},
            "ok": ColumnDeclaration(type="boolean", nullable=False),
        },
    )
    assert bare == objects
    assert [c.name for c in bare] == ["lun", "host_group", "seen", "ok"]
    assert all(not c.nullable for c in bare)


def test_nullable_survives_normalisation_in_both_object_spellings() -> None:
    columns = normalize_columns(
        TOOL,
        {"a": {"type": "string", "nullable": True}, "b": ColumnDeclaration(type="number", nullable=True)},
    )
    assert columns == (NormalizedColumn("a", "string", True), NormalizedColumn("b", "number", True))


def test_column_declaration_refuses_an_unknown_type_itself() -> None:
    with pytest.raises(ValueError):
        ColumnDeclaration(type="unknown")  # type: ignore[arg-type]


# ── A pydantic model class as the declaration ───────────────────────────


class HostGroupMapping(BaseModel):
    lun: int
    capacity_gb: float
    cost: decimal.Decimal
    host_group: str
    active: bool
    created: dt.date
    updated: dt.datetime
    comment: Optional[str]  # noqa: UP045 - the Optional spelling is the point of this field
    retired: dt.date | None


def test_a_pydantic_model_class_declares_one_column_per_field_in_field_order() -> None:
    assert normalize_columns(TOOL, HostGroupMapping) == (
        NormalizedColumn("lun", "number", False),
        NormalizedColumn("capacity_gb", "number", False),
        NormalizedColumn("cost", "number", False),
        NormalizedColumn("host_group", "string", False),
        NormalizedColumn("active", "boolean", False),
        NormalizedColumn("created", "date", False),
        NormalizedColumn("updated", "date", False),
        NormalizedColumn("comment", "string", True),
        NormalizedColumn("retired", "date", True),
    )


def test_a_model_field_with_no_column_type_is_refused_naming_the_field() -> None:
    class Tagged(BaseModel):
        lun: int
        tags: list[int]

    message = refusal(Tagged)
    assert "'tags'" in message
    assert "'Tagged'" in message
    assert "declare other fields' columns by hand or leave them out" in message


def test_a_model_with_no_fields_promises_nothing() -> None:
    class Empty(BaseModel):
        pass

    message = refusal(Empty)
    assert "promises nothing" in message


def test_define_contract_normalises_result_columns_once() -> None:
    contract = define_contract(TOOL, result_columns={"lun": "number"})
    assert contract.result_columns == (NormalizedColumn("lun", "number", False),)
    assert define_contract(TOOL).result_columns is None


# ── arguments_from ──────────────────────────────────────────────────────


def arguments_refusal(arguments_from: object) -> str:
    with pytest.raises(DeclarationError) as caught:
        assert_arguments_from(TOOL, arguments_from)
    message = str(caught.value)
    assert TOOL in message
    return message


def test_arguments_from_empty_is_refused() -> None:
    message = arguments_refusal([])
    assert "grounds nothing" in message
    assert "Name at least one tool" in message


@pytest.mark.parametrize("entry", ["", "  ", 3, None])
def test_arguments_from_blank_entry_is_refused(entry: object) -> None:
    message = arguments_refusal(["list_hosts", entry])
    assert repr(entry) in message
    assert "name of a tool" in message


def test_arguments_from_naming_the_tool_itself_is_refused() -> None:
    message = arguments_refusal(["list_hosts", TOOL])
    assert "names the tool itself" in message
    assert "cannot ground its own arguments" in message


@pytest.mark.parametrize("value", ["list_hosts", 5, {"list_hosts": True}])
def test_arguments_from_a_string_or_non_list_is_refused_with_the_list_spelling(value: object) -> None:
    message = arguments_refusal(value)
    assert "not a list of tool names" in message
    assert "arguments_from=['list_hosts']" in message


def test_arguments_from_keeps_order_and_drops_repeats() -> None:
    assert assert_arguments_from(TOOL, ["b", "a", "b"]) == ("b", "a")
