"""dangling-reference @ compose: a tool offered without the evidence its arguments need.

The laws under test:
(a) a ground served earlier, evicted, and absent from this request -> one finding on the
    offered consumer, naming the fix and the ceiling verbatim;
(b) fence: a ground never evicted (never served, or still in reach) is silent;
(c) fence: a re-fetched ground (present) is silent however many evictions preceded it,
    including when the frame names it only through the asking assistant's call id;
(d) one finding per consumer, naming ALL its missing grounds, one witness per ground;
(e) a tool that declares nothing, or is not offered, is never a subject;
(f) dispositions: checked-* only when an offered tool has grounds AND something was
    evicted; otherwise not-applicable; never unreachable;
(g) the canary catches exactly one dangling-reference, marked synthetic.

NEUTRALIZE-PROOFS: deleting the `not in present` clause turns (c) red; deleting the
`in evicted` clause turns (b) red; collapsing findings per ground turns (d) red.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_integrity.checks import CANARY_EPOCH
from context_integrity.checks.dangling_reference import (
    ARGUMENT_GROUND_PREDICATE,
    DANGLING_REFERENCE_CEILING,
    check_dangling_references,
    dangling_reference_canary,
)
from context_integrity.findings import (
    CHECKED_FAIL,
    CHECKED_PASS,
    NOT_APPLICABLE,
    UNREACHABLE,
    tool_subject,
)
from context_integrity.loop import Message, RequestFrame, ToolCall, tool_names_present

GROUNDS = {"screen_fire": ["whats_here"]}


# ── (a) the finding ──────────────────────────────────────────────────────


def test_functional_evicted_and_absent_files_one_finding() -> None:
    encounter = check_dangling_references(
        offered=["whats_here", "screen_fire"],
        grounds=GROUNDS,
        evicted={"whats_here"},
        present=set(),
        epoch=3,
    )
    assert encounter.disposition == CHECKED_FAIL
    [finding] = encounter.findings
    assert finding.kind == "dangling-reference"
    assert finding.seam == "compose"
    assert finding.subjects == (tool_subject("screen_fire"), tool_subject("whats_here"))
    assert finding.predicate is None
    assert finding.epoch == 3
    assert not finding.advisory
    assert "'screen_fire'" in finding.message
    assert "call 'whats_here' again" in finding.message
    assert DANGLING_REFERENCE_CEILING in finding.message


def test_unit_witness_per_missing_ground() -> None:
    [finding] = check_dangling_references(
        offered=["screen_fire"], grounds=GROUNDS, evicted={"whats_here"}, present=set(), epoch=5
    ).findings
    [witness] = finding.witnesses
    assert witness.subject == tool_subject("screen_fire")
    assert witness.predicate == ARGUMENT_GROUND_PREDICATE
    assert "whats_here" in str(witness.value)
    assert "evicted" in str(witness.value)
    assert "served earlier in this run" in witness.provenance
    assert witness.epoch == 5
    assert witness.stratum == "asserted"


# ── (b) fence: never evicted ─────────────────────────────────────────────


def test_fence_never_evicted_ground_is_silent() -> None:
    encounter = check_dangling_references(
        offered=["screen_fire"], grounds=GROUNDS, evicted={"some_other_tool"}, present=set()
    )
    assert encounter.findings == []
    assert encounter.disposition == CHECKED_PASS


# ── (c) fence: re-fetched ────────────────────────────────────────────────


def test_fence_refetched_ground_is_silent() -> None:
    encounter = check_dangling_references(
        offered=["screen_fire"], grounds=GROUNDS, evicted={"whats_here"}, present={"whats_here"}
    )
    assert encounter.findings == []
    assert encounter.disposition == CHECKED_PASS


def test_regression_wire_shape_refetch_without_tool_name_is_silent() -> None:
    frame = RequestFrame.of(
        [
            Message("user", "fire the second screen"),
            Message("assistant", "", tool_calls=(ToolCall("whats_here", "call-2", {}),)),
            Message("tool", '["screen2", "screen7"]', tool_call_id="call-2"),
        ]
    )
    encounter = check_dangling_references(
        offered=["whats_here", "screen_fire"],
        grounds=GROUNDS,
        evicted={"whats_here"},
        present=tool_names_present(frame),
    )
    assert encounter.findings == []
    assert encounter.disposition == CHECKED_PASS


# ── (d) one finding per tool, all grounds ────────────────────────────────


def test_functional_one_finding_per_tool_naming_all_missing_grounds() -> None:
    encounter = check_dangling_references(
        offered=["zone_fix", "port_fix"],
        grounds={"zone_fix": ["list_zones", "list_ports", "list_hosts"], "port_fix": ["list_ports"]},
        evicted={"list_zones", "list_ports", "list_hosts"},
        present={"list_hosts"},
    )
    assert encounter.disposition == CHECKED_FAIL
    by_consumer = {f.subjects[0].id: f for f in encounter.findings}
    assert set(by_consumer) == {"zone_fix", "port_fix"}
    zone = by_consumer["zone_fix"]
    assert [s.id for s in zone.subjects] == ["zone_fix", "list_zones", "list_ports"]
    assert len(zone.witnesses) == 2
    assert "'list_zones' or 'list_ports'" in zone.message
    assert "list_hosts" not in zone.message  # re-fetched, so not part of the fix


def test_unit_offered_twice_is_one_finding() -> None:
    encounter = check_dangling_references(
        offered=["screen_fire", "screen_fire"], grounds=GROUNDS, evicted={"whats_here"}, present=set()
    )
    assert len(encounter.findings) == 1


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    grounds=st.lists(st.sampled_from(["g1", "g2", "g3", "g4", "g5"]), min_size=1, unique=True),
    evicted=st.sets(st.sampled_from(["g1", "g2", "g3", "g4", "g5", "other"])),
    present=st.sets(st.sampled_from(["g1", "g2", "g3", "g4", "g5"])),
)
def test_property_subjects_are_exactly_the_missing_grounds(
    grounds: list[str], evicted: set[str], present: set[str]
) -> None:
    encounter = check_dangling_references(
        offered=["consumer"], grounds={"consumer": grounds}, evicted=evicted, present=present
    )
    missing = [g for g in grounds if g in evicted and g not in present]
    if not evicted:
        assert encounter.disposition == NOT_APPLICABLE
        assert encounter.findings == []
    elif not missing:
        assert encounter.disposition == CHECKED_PASS
        assert encounter.findings == []
    else:
        assert encounter.disposition == CHECKED_FAIL
        [finding] = encounter.findings
        assert [s.id for s in finding.subjects] == ["consumer", *missing]
        assert len(finding.witnesses) == len(missing)


# ── (e) undeclared never a subject ───────────────────────────────────────


def test_negative_undeclared_tool_is_never_a_subject() -> None:
    encounter = check_dangling_references(
        offered=["screen_fire", "free_tool"],
        grounds=GROUNDS,
        evicted={"whats_here", "free_tool"},
        present=set(),
    )
    subjects = {s.id for f in encounter.findings for s in f.subjects}
    assert "free_tool" not in subjects
    assert len(encounter.findings) == 1


def test_negative_armed_but_not_offered_is_not_judged() -> None:
    encounter = check_dangling_references(
        offered=["whats_here"], grounds=GROUNDS, evicted={"whats_here"}, present=set()
    )
    assert encounter.findings == []
    assert encounter.disposition == NOT_APPLICABLE


# ── (f) dispositions ─────────────────────────────────────────────────────


def test_disposition_nothing_evicted_is_not_applicable() -> None:
    encounter = check_dangling_references(
        offered=["screen_fire"], grounds=GROUNDS, evicted=set(), present=set()
    )
    assert encounter.disposition == NOT_APPLICABLE


def test_disposition_no_armed_tool_is_not_applicable() -> None:
    encounter = check_dangling_references(offered=["screen_fire"], grounds={}, evicted={"x"}, present=set())
    assert encounter.disposition == NOT_APPLICABLE


def test_disposition_never_unreachable() -> None:
    cases: list[tuple[list[str], dict[str, list[str]], set[str], set[str]]] = [
        ([], {}, set(), set()),
        (["screen_fire"], GROUNDS, {"whats_here"}, set()),
        (["screen_fire"], GROUNDS, {"whats_here"}, {"whats_here"}),
        (["screen_fire"], {"screen_fire": []}, {"whats_here"}, set()),
    ]
    for offered, grounds, evicted, present in cases:
        encounter = check_dangling_references(
            offered=offered, grounds=grounds, evicted=evicted, present=present
        )
        assert encounter.disposition != UNREACHABLE


# ── (g) canary ───────────────────────────────────────────────────────────


def test_canary_catches_exactly_one_dangling_reference() -> None:
    encounter = dangling_reference_canary()
    assert encounter.disposition == CHECKED_FAIL
    assert [f.kind for f in encounter.findings] == ["dangling-reference"]
    assert all(f.synthetic for f in encounter.findings)
    assert encounter.findings[0].epoch == CANARY_EPOCH
