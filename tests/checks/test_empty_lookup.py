"""empty-lookup @ write: a lookup by a value the run served came back empty (advisory).

The laws under test:
(a) readings: an Absence is an empty absence; a list/tuple is a rowset (empty iff no
    elements, any elements counted); everything else -- prose, None, 0, '', {rows: []},
    dicts, a named tuple, a generator (left unconsumed) -- is bespoke (None);
(b) Absence is a str carrying looked_for and reason, survives copy and pickle;
(c) the field case: an empty result for a value a declared producer served -> one ADVISORY
    finding naming both tools, the value, the call id, the ceiling verbatim, and that
    nothing was blocked; three witnesses with the epoch;
(d) rules in order: bespoke -> not-applicable; not empty -> checked-pass; no declared
    producer served anything -> unreachable; producer not carrying the value -> checked-pass;
(e) per leaf: < MIN_CHECKED_ARGUMENT_CHARS skipped, non-strings skipped, two arguments = two
    findings, nested path `filter.devices.0`, first declared producer wins;
(f) the canary catches exactly one empty-lookup, marked synthetic.

NEUTRALIZE-PROOFS: dropping the declared-producer filter turns "undeclared producer ->
unreachable" red; dropping the empty test turns "non-empty -> pass" red; making the finding
non-advisory turns (c) red.
"""

from __future__ import annotations

import copy
import pickle
from collections import namedtuple
from collections.abc import Iterator, Sequence

from context_integrity import absent, is_absence
from context_integrity.checks import CANARY_EPOCH
from context_integrity.checks.empty_lookup import (
    EMPTY_LOOKUP_CEILING,
    check_empty_lookup,
    empty_lookup_canary,
)
from context_integrity.contracts import Absence, read_result
from context_integrity.findings import (
    CHECKED_FAIL,
    CHECKED_PASS,
    NOT_APPLICABLE,
    UNREACHABLE,
    Encounter,
    tool_subject,
)
from context_integrity.text import clip

PRODUCED = [("list_fabric", "WWPN 50:06:01:60:3b:e0:11:22 on port fc1/3, host esx-07")]


def _lookup(
    arguments: object = None,
    *,
    result: object = (),
    produced: Sequence[tuple[str, str]] = PRODUCED,
    arguments_from: Sequence[str] = ("list_fabric",),
    epoch: int = 0,
) -> Encounter:
    return check_empty_lookup(
        tool_name="find_zone",
        call_id="call-42",
        arguments={"wwpn": "50:06:01:60:3b:e0:11:22"} if arguments is None else arguments,
        arguments_from=arguments_from,
        result=result,
        produced=produced,
        epoch=epoch,
    )


# ── (a) readings ─────────────────────────────────────────────────────────


def test_unit_reading_rowset_counted() -> None:
    empty: Sequence[object]
    for empty in ([], ()):
        reading = read_result(empty)
        assert (reading.shape, reading.empty, len(reading.rows)) == ("rowset", True, 0)
    reading = read_result([{"a": 1}, {"a": 2}])
    assert (reading.shape, reading.empty, len(reading.rows)) == ("rowset", False, 2)
    # Found something, but not rows: not empty, and nothing for the column check to judge.
    reading = read_result([1, "x", None])
    assert (reading.shape, reading.empty) == ("items", False)


def test_unit_reading_absence() -> None:
    reading = read_result(absent("x"))
    assert (reading.shape, reading.empty) == ("absence", True)


def test_unit_reading_bespoke_shapes_are_none() -> None:
    Row = namedtuple("Row", ["id", "name"])
    bespoke: list[object] = [
        "No zones matched.",
        None,
        0,
        "",
        {"rows": []},
        {"results": [], "count": 0},
        Row("a", "b"),
        {"ticket": "result-7781 parked"},
    ]
    for value in bespoke:
        assert read_result(value).shape == "other", value


def test_negative_generator_is_bespoke_and_left_unconsumed() -> None:
    consumed: list[int] = []

    def rows() -> Iterator[int]:
        consumed.append(1)
        yield 1

    generator = rows()
    assert read_result(generator).shape == "other"
    assert _lookup(result=generator).disposition == NOT_APPLICABLE
    assert consumed == []
    assert next(generator) == 1


# ── (b) Absence ──────────────────────────────────────────────────────────


def test_unit_absence_is_a_str_that_keeps_looked_for() -> None:
    looked_for = {"wwpn": "50:06:01:60:3b:e0:11:22"}
    made = absent(looked_for, reason="no zone contains that WWPN")
    assert isinstance(made, str)
    assert isinstance(made, Absence)
    assert is_absence(made)
    assert made.looked_for is looked_for
    assert made.reason == "no zone contains that WWPN"
    assert made.startswith("No match")
    # never echoed: the sentence is ground, and would ground the very value that matched nothing
    assert "50:06:01:60:3b:e0:11:22" not in made
    assert "no zone contains that WWPN" in made


def test_unit_absence_without_arguments_is_still_a_sentence() -> None:
    made = absent()
    assert made.looked_for is None
    assert made.reason is None
    assert made.endswith(".")


def test_negative_plain_strings_are_not_absences() -> None:
    assert not is_absence("No match: the search ran and found nothing.")
    assert not is_absence(None)


def test_unit_absence_survives_copy_and_pickle() -> None:
    made = absent("host-4417", reason="decommissioned")
    for twin in (copy.copy(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made))):
        assert isinstance(twin, Absence)
        assert str(twin) == str(made)
        assert twin.looked_for == "host-4417"
        assert twin.reason == "decommissioned"


# ── (c) the field case ───────────────────────────────────────────────────


def test_functional_field_case_names_both_tools_value_and_call_id() -> None:
    encounter = _lookup(result=[], epoch=7)
    assert encounter.disposition == CHECKED_FAIL
    [finding] = encounter.findings
    assert finding.kind == "empty-lookup"
    assert finding.seam == "write"
    assert finding.advisory is True
    assert finding.subjects == (tool_subject("find_zone"), tool_subject("list_fabric"))
    assert finding.predicate == "wwpn"
    assert finding.epoch == 7
    for fact in ("'find_zone'", "'list_fabric'", 'wwpn = "50:06:01:60:3b:e0:11:22"', "call-42"):
        assert fact in finding.message
    assert "a rowset with zero rows" in finding.message
    assert "Nothing here blocked the call, changed the result, or retried anything" in finding.message


def test_unit_ceiling_quoted_verbatim() -> None:
    [finding] = _lookup(result=[]).findings
    assert EMPTY_LOOKUP_CEILING in finding.message


def test_unit_three_witnesses_with_epoch() -> None:
    [finding] = _lookup(result=[], epoch=3).findings
    chosen, served, empty = finding.witnesses
    assert (chosen.subject, chosen.predicate, chosen.value) == (
        tool_subject("find_zone"),
        "wwpn",
        "50:06:01:60:3b:e0:11:22",
    )
    assert "as the model chose it" in chosen.provenance
    assert "call-42" in chosen.provenance
    assert served.subject == tool_subject("list_fabric")
    assert served.predicate == "wwpn"
    assert served.value == "served this value earlier in this run"
    assert "arguments_from" in served.provenance
    assert empty.subject == tool_subject("find_zone")
    assert empty.predicate == "wwpn"
    assert empty.value == "found nothing — a rowset with zero rows"
    assert "as the tool returned it" in empty.provenance
    assert {w.epoch for w in finding.witnesses} == {3}


def test_functional_legit_absence_gets_the_same_advisory() -> None:
    encounter = _lookup(result=absent("50:06:01:60:3b:e0:11:22"))
    assert encounter.disposition == CHECKED_FAIL
    [finding] = encounter.findings
    assert finding.advisory is True
    assert "a declared absence" in finding.message
    assert str(finding.witnesses[2].value).startswith("found nothing — a declared absence")


def test_unit_long_value_clipped_in_message_whole_in_witness() -> None:
    long_value = "zone-" + "z" * 200
    encounter = _lookup({"zone": long_value}, produced=[("list_fabric", f"zones: {long_value}")], result=[])
    [finding] = encounter.findings
    assert finding.witnesses[0].value == long_value
    assert long_value not in finding.message
    assert clip(long_value) in finding.message


# ── (d) rules in order ───────────────────────────────────────────────────


def test_rule_bespoke_result_is_not_applicable() -> None:
    bespoke: list[object] = ["No zones matched.", None, 0, "", {"rows": []}]
    for result in bespoke:
        encounter = _lookup(result=result)
        assert encounter.disposition == NOT_APPLICABLE
        assert encounter.findings == []


def test_rule_non_empty_result_passes() -> None:
    encounter = _lookup(result=[{"zone": "z1"}])
    assert encounter.disposition == CHECKED_PASS
    assert encounter.findings == []


def test_rule_no_declared_producer_served_is_unreachable() -> None:
    assert _lookup(result=[], produced=[]).disposition == UNREACHABLE
    undeclared = [("some_other_tool", "50:06:01:60:3b:e0:11:22")]
    assert _lookup(result=[], produced=undeclared).disposition == UNREACHABLE
    empty_text = [("list_fabric", "")]
    assert _lookup(result=[], produced=empty_text).disposition == UNREACHABLE


def test_rule_producer_not_carrying_the_value_passes() -> None:
    encounter = _lookup({"wwpn": "ff:ff:ff:ff:00:00:00:01"}, result=[])
    assert encounter.disposition == CHECKED_PASS
    assert encounter.findings == []


def test_negative_garbage_produced_pairs_are_ignored() -> None:
    produced: list[object] = [None, ("only-one",), ("list_fabric", None), ("list_fabric", 7), *PRODUCED]
    encounter = _lookup(result=[], produced=produced)  # type: ignore[arg-type]
    assert encounter.disposition == CHECKED_FAIL


# ── (e) per leaf ─────────────────────────────────────────────────────────


def test_fence_short_and_non_string_arguments_are_skipped() -> None:
    produced = [("list_fabric", "port fc1/3 lun 0 id a1 count 44178")]
    encounter = _lookup({"p": "a1 ", "lun": 0, "count": 44178, "on": True}, produced=produced, result=[])
    assert encounter.findings == []
    assert encounter.disposition == CHECKED_PASS


def test_functional_two_arguments_two_findings() -> None:
    encounter = _lookup({"wwpn": "50:06:01:60:3b:e0:11:22", "port": "FC1/3"}, result=[])
    assert [f.predicate for f in encounter.findings] == ["wwpn", "port"]
    assert len({f.identity() for f in encounter.findings}) == 2


def test_unit_nested_path() -> None:
    encounter = _lookup({"filter": {"devices": ["esx-07"]}}, result=[])
    assert [f.predicate for f in encounter.findings] == ["filter.devices.0"]


def test_unit_first_declared_producer_carrying_the_value_is_named() -> None:
    produced = [
        ("undeclared", "esx-07"),
        ("list_hosts", "no such value here"),
        ("list_fabric", "esx-07 on fc1/3"),
        ("list_hosts", "esx-07 again"),
    ]
    encounter = _lookup(
        {"host": "ESX-07"}, produced=produced, arguments_from=("list_hosts", "list_fabric"), result=[]
    )
    [finding] = encounter.findings
    assert finding.subjects == (tool_subject("find_zone"), tool_subject("list_fabric"))


# ── (f) canary ───────────────────────────────────────────────────────────


def test_canary_catches_exactly_one_empty_lookup() -> None:
    encounter = empty_lookup_canary()
    assert encounter.disposition == CHECKED_FAIL
    assert [f.kind for f in encounter.findings] == ["empty-lookup"]
    assert all(f.synthetic and f.advisory for f in encounter.findings)
    assert encounter.findings[0].epoch == CANARY_EPOCH
