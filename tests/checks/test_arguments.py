"""The argument walk and the enum collector shared by the grounding checks.

The laws under test:
(a) every string leaf is found exactly once per path, with its dot-path: mappings by key,
    lists and tuples by numeric index; non-strings are skipped;
(b) the walk is bounded (depth limit), survives cycles and hostile mappings, never raises;
(c) declared_enum_values collects every string of every `enum` anywhere in the schema, flat
    and lowercased, to MAX_SCHEMA_DEPTH; absent or garbage schemas declare nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_integrity import limits
from context_integrity.checks.arguments import ROOT_PATH, argument_leaves
from context_integrity.contracts import declared_enum_values

# ── (a) leaves and paths ─────────────────────────────────────────────────


def test_unit_flat_and_nested_paths() -> None:
    arguments = {
        "machine": "4417-ganymede",
        "filter": {"hosts": ["host-a", "host-b"], "tier": 2},
        "pair": ("left", "right"),
    }
    assert argument_leaves(arguments) == [
        ("machine", "4417-ganymede"),
        ("filter.hosts.0", "host-a"),
        ("filter.hosts.1", "host-b"),
        ("pair.0", "left"),
        ("pair.1", "right"),
    ]


def test_unit_non_strings_are_skipped() -> None:
    arguments = {"n": 7, "f": 1.5, "b": True, "none": None, "obj": object(), "s": {"x", "y"}}
    assert argument_leaves(arguments) == []


def test_unit_empty_and_blank_strings_are_leaves() -> None:
    assert argument_leaves({"a": "", "b": "  "}) == [("a", ""), ("b", "  ")]


def test_unit_bare_string_arguments_use_root_path() -> None:
    assert argument_leaves("raw-args") == [(ROOT_PATH, "raw-args")]


def test_unit_shared_container_is_walked_under_each_path() -> None:
    shared = ["same-value"]
    assert argument_leaves({"a": shared, "b": shared}) == [("a.0", "same-value"), ("b.0", "same-value")]


_json = st.recursive(
    st.one_of(st.text(max_size=6), st.integers(), st.booleans(), st.none()),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(alphabet="abcxyz", min_size=1, max_size=3), children, max_size=4),
    ),
    max_leaves=12,
)

# No timing in tests: a loaded CI machine must not turn slow generation into a failure.
_untimed = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _count_strings(value: Any) -> int:
    if isinstance(value, str):
        return 1
    if isinstance(value, dict):
        return sum(_count_strings(v) for v in value.values())
    if isinstance(value, list):
        return sum(_count_strings(v) for v in value)
    return 0


@_untimed
@given(st.dictionaries(st.text(alphabet="abcxyz", min_size=1, max_size=3), _json, max_size=5))
def test_property_one_leaf_per_string(arguments: dict[str, Any]) -> None:
    leaves = argument_leaves(arguments)
    assert len(leaves) == _count_strings(arguments)
    assert len({path for path, _ in leaves}) == len(leaves)


@_untimed
@given(st.dictionaries(st.text(alphabet="abcxyz", min_size=1, max_size=3), _json, max_size=5))
def test_property_each_path_leads_to_its_value(arguments: dict[str, Any]) -> None:
    for path, value in argument_leaves(arguments):
        node: Any = arguments
        for part in path.split("."):
            node = node[int(part)] if isinstance(node, list) else node[part]
        assert node == value


# ── (b) bounded, cycle-proof, never raises ───────────────────────────────


def test_negative_cycle_terminates() -> None:
    cyclic: dict[str, Any] = {"id": "abcd"}
    cyclic["self"] = cyclic
    looped: list[Any] = ["wxyz"]
    looped.append(looped)
    assert argument_leaves(cyclic) == [("id", "abcd")]
    assert argument_leaves({"l": looped}) == [("l.0", "wxyz")]


def test_negative_depth_is_bounded() -> None:
    deep: Any = "bottom"
    for _ in range(limits.MAX_ARGUMENT_DEPTH + 5):
        deep = {"d": deep}
    assert argument_leaves(deep) == []
    shallow: Any = "bottom"
    for _ in range(limits.MAX_ARGUMENT_DEPTH):
        shallow = {"d": shallow}
    assert argument_leaves(shallow) == [(".".join(["d"] * limits.MAX_ARGUMENT_DEPTH), "bottom")]


class _Hostile(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("no")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("no")

    def __len__(self) -> int:
        return 1


def test_negative_hostile_mapping_keeps_what_was_read() -> None:
    assert argument_leaves({"first": "kept-value", "bad": _Hostile()}) == [("first", "kept-value")]
    assert argument_leaves(_Hostile()) == []
    assert argument_leaves(None) == []
    assert argument_leaves(12) == []


def test_unit_non_string_keys_are_named() -> None:
    assert argument_leaves({1: "one-value"}) == [("1", "one-value")]


# ── (c) the enum collector ───────────────────────────────────────────────


def test_unit_enums_flat_lowercased_nested() -> None:
    schema = {
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["Fast", "SLOW", 3, None]},
            "filter": {
                "type": "object",
                "properties": {"tier": {"anyOf": [{"enum": ["Gold"]}, {"enum": ["silver "]}]}},
            },
            "items": {"type": "array", "items": {"enum": ("bronze",)}},
        },
    }
    assert declared_enum_values(schema) == frozenset({"fast", "slow", "gold", "silver", "bronze"})


def test_negative_absent_or_garbage_schema_declares_nothing() -> None:
    assert declared_enum_values(None) == frozenset()
    assert declared_enum_values("enum") == frozenset()
    assert declared_enum_values({"enum": "notalist"}) == frozenset()
    assert declared_enum_values(_Hostile()) == frozenset()
    assert declared_enum_values([{"enum": ["inlist"]}]) == frozenset({"inlist"})


def test_unit_enum_walk_stops_at_schema_depth() -> None:
    reachable: Any = {"enum": ["reachable"]}
    for _ in range(limits.MAX_SCHEMA_DEPTH):
        reachable = {"n": reachable}
    too_deep: Any = {"enum": ["too-deep"]}
    for _ in range(limits.MAX_SCHEMA_DEPTH + 1):
        too_deep = {"n": too_deep}
    assert declared_enum_values(reachable) == frozenset({"reachable"})
    assert declared_enum_values(too_deep) == frozenset()


def test_negative_cyclic_schema_terminates() -> None:
    schema: dict[str, Any] = {"enum": ["loop"]}
    schema["properties"] = schema
    assert declared_enum_values(schema) == frozenset({"loop"})
