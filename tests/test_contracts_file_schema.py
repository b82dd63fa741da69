"""The contracts file's JSON Schema agrees with its loader.

The laws under test:

1. The schema is shipped with the package (beside the loader) and is a valid draft-4 schema, the
   draft editors' TOML servers (taplo, Even Better TOML) read.
2. It names exactly the keys the loader knows, at the top and in a tool table.
3. Every example the docs and the tests use validates, and loads.
4. Over generated near-valid tables (a property): what the loader accepts the schema accepts, and
   what the loader refuses for its shape the schema refuses too. The schema is looser in exactly the
   cases ``docs/contracts-file.md`` lists: an ``arguments_from`` entry naming the tool itself or a
   tool the file does not declare, a ``settles`` fact naming the entity field, and an ``enum`` in an
   ``input_schema`` that is not a non-empty array.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_integrity.contracts.file import (
    TOOL_KEYS,
    TOP_KEYS,
    ContractsFileError,
    contracts_schema,
    read_contracts,
    schema_path,
)

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
VALIDATOR = jsonschema.Draft4Validator(contracts_schema())


def schema_accepts(data: object) -> bool:
    return bool(VALIDATOR.is_valid(data))


def test_the_schema_ships_beside_the_loader_and_is_a_draft_4_schema() -> None:
    assert schema_path().is_file()
    assert "contracts/contracts.schema.json" in (ROOT / "pyproject.toml").read_text()
    schema = contracts_schema()
    jsonschema.Draft4Validator.check_schema(schema)
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"


def test_the_schema_names_the_keys_the_loader_knows() -> None:
    schema = contracts_schema()
    assert tuple(schema["properties"]) == TOP_KEYS
    assert tuple(schema["definitions"]["tool"]["properties"]) == TOOL_KEYS


def _toml_blocks(markdown: str) -> list[str]:
    return re.findall(r"```toml\n(.*?)```", markdown, flags=re.S)


def test_every_example_validates_and_loads() -> None:
    from tests.test_contracts_file import ISSUE_SHAPE

    examples = [ISSUE_SHAPE, *_toml_blocks((ROOT / "docs" / "contracts-file.md").read_text())]
    for text in examples:
        data = tomllib.loads(text)
        if "tool" in data:  # a pyproject.toml example
            data = data["tool"]["context-integrity"]
        assert schema_accepts(data), (text, [e.message for e in VALIDATOR.iter_errors(data)])
        read_contracts(data)


# ── the property ─────────────────────────────────────────────────────────


def mostly(good: st.SearchStrategy[object], bad: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    """``bad`` one time in twelve, else ``good``: refusals anywhere, and whole files that pass too."""
    return st.integers(0, 11).flatmap(lambda draw: bad if draw == 0 else good)


good_names = st.sampled_from(["list_hosts", "host_paths", "a.b", "port", "status"])
names = mostly(good_names, st.sampled_from([" ", "", "\u2003"]))
good_texts = st.sampled_from(["list_hosts", "port", "status", "dataset/rows", "x"])
texts = mostly(good_texts, st.sampled_from(["", " ", "\u2003", "\x1f"]))
scalars = st.booleans() | st.integers(-2, 2) | st.floats(allow_nan=False, width=16) | texts
good_types = st.sampled_from(["number", "string", "boolean", "date"])
column_types = mostly(good_types, st.sampled_from(["unknown", "int"]))
column_specs = mostly(
    good_types | st.fixed_dictionaries({"type": good_types}, optional={"nullable": st.booleans()}),
    st.fixed_dictionaries({"type": column_types}, optional={"nullable": st.booleans() | texts})
    | st.dictionaries(st.sampled_from(["type", "nullable", "typ"]), column_types | st.booleans(), max_size=2)
    | scalars,
)
name_lists = mostly(
    st.lists(names, min_size=1, max_size=3), st.lists(names | st.integers(0, 1), max_size=3) | texts
)
claim_targets = mostly(
    st.fixed_dictionaries({"entity": texts, "field": texts}) | st.tuples(texts, texts).map(list),
    st.dictionaries(st.sampled_from(["entity", "field", "feild"]), texts | st.integers(0, 1), max_size=3)
    | st.lists(texts | st.integers(0, 1), max_size=3)
    | scalars,
)
claim_paths = mostly(
    st.sampled_from(["status", "port.status", "0.x"]), st.sampled_from(["a..b", ".a", "a.", "", " "])
)
claims = mostly(st.dictionaries(claim_paths, claim_targets, min_size=1, max_size=3), st.just({}) | scalars)
settles = mostly(
    st.fixed_dictionaries({"entity": texts, "facts": name_lists}),
    st.dictionaries(st.sampled_from(["entity", "facts", "fact"]), texts | name_lists, max_size=3) | scalars,
)
input_schemas = mostly(
    st.just({"type": "object"}) | st.just({"properties": {"tier": {"enum": ["gold"]}}}),
    st.just({"properties": {"tier": {"enum": []}}}) | scalars,
)
tool_values = {
    "description": mostly(texts, st.integers(0, 1)),
    "result_columns": mostly(
        st.dictionaries(names, column_specs, min_size=1, max_size=3), st.just({}) | scalars
    ),
    "arguments_from": name_lists,
    "input_schema": input_schemas,
    "once_per_run": mostly(st.booleans(), st.integers(0, 1) | texts),
    "result_kind": mostly(texts, st.integers(0, 1)),
    "result_wrapped": mostly(st.booleans(), st.integers(0, 1)),
    "settles": settles,
}
tool_tables = mostly(
    st.fixed_dictionaries({}, optional=tool_values),
    st.dictionaries(st.sampled_from(["arguments_fro", "columns"]), scalars, min_size=1, max_size=1) | scalars,
)
toolsets = mostly(
    st.fixed_dictionaries({"tools": name_lists}, optional={"suspended": st.booleans()}),
    st.fixed_dictionaries({}, optional={"tools": name_lists, "suspended": texts, "suspend": st.booleans()})
    | scalars,
)
agents = mostly(
    st.dictionaries(names, st.fixed_dictionaries({"claims": claims}), max_size=2),
    st.dictionaries(names, st.fixed_dictionaries({}, optional={"claim": claims}) | scalars, max_size=2)
    | scalars,
)
# One section at a time, its other tools declared, so one bad leaf is what decides.
declared: dict[str, object] = {"list_hosts": {}, "host_paths": {}, "port": {}, "status": {}, "a.b": {}}
one_section = st.one_of(
    st.builds(lambda name, table: {"tools": {**declared, name: table}}, names, tool_tables),
    st.builds(lambda table: {"claims": table}, claims),
    st.builds(lambda table: {"agents": table}, agents),
    st.builds(lambda name, table: {"toolsets": {name: table}}, names, toolsets),
)
whole_files = mostly(
    st.fixed_dictionaries(
        {},
        optional={
            "$schema": texts,
            "tools": mostly(st.dictionaries(names, tool_tables, max_size=4), scalars),
            "claims": claims,
            "agents": agents,
            "toolsets": mostly(st.dictionaries(names, toolsets, max_size=2), scalars),
        },
    ),
    st.fixed_dictionaries({"tool": scalars}, optional={"$schema": st.integers(0, 1)}),
)
files = one_section | whole_files


def looser_in_the_schema(data: Mapping[str, object], refusal: ContractsFileError) -> bool:
    """Whether the loader's refusal is one of the cross-reference cases the schema cannot express."""
    message = str(refusal)
    key = refusal.key
    if re.fullmatch(r"tools\.(.+)\.arguments_from\[\d+\]", key) and (
        "names the tool itself" in message or "which this file does not declare" in message
    ):
        return True
    if re.fullmatch(r"tools\.(.+)\.settles\.facts\[\d+\]", key) and "names the entity field" in message:
        return True
    return bool(re.fullmatch(r"tools\.(.+)\.input_schema", key) and "has an enum that is" in message)


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(files)
def test_the_schema_refuses_what_the_loader_refuses_for_its_shape(data: object) -> None:
    assert isinstance(data, dict)
    try:
        read_contracts(data)
    except ContractsFileError as refusal:
        if not looser_in_the_schema(data, refusal):
            assert not schema_accepts(data), f"the loader refused, the schema accepted: {refusal}"
        return
    assert schema_accepts(data), [e.message for e in VALIDATOR.iter_errors(data)]


@pytest.mark.parametrize(
    "data",
    [
        {"tools": {"t": {"arguments_from": ["t"]}}},
        {"tools": {"t": {"arguments_from": ["absent"]}}},
        {"tools": {"t": {"settles": {"entity": "port", "facts": ["port"]}}}},
        {"tools": {"t": {"input_schema": {"properties": {"tier": {"enum": []}}}}}},
    ],
)
def test_the_documented_looser_cases_are_exactly_looser(data: dict[str, object]) -> None:
    assert schema_accepts(data)
    with pytest.raises(ContractsFileError) as refused:
        read_contracts(data)
    assert looser_in_the_schema(data, refused.value)
