"""unsupported-claim @ claim: a typed answer field against the fact a tool settled.

The laws under test:
(a) contradiction -> finding (predicate = the answer field), witnesses: settled fact, claim, earlier
    values quoted (no epoch); the ceiling verbatim;
(b) the LATEST settled value is the one compared; an honest answer passes;
(c) null / "unknown" against a settled value -> ADVISORY finding with the settled value; doubt vs doubt agrees;
(d) a numeric string equal to a numeric fact passes ("30" vs 30); not the other way round;
(e) a fact never collected -> unreachable; an omitted field -> not-applicable; unreadable answer -> every
    claim unreachable; one disposition per claim;
(f) two wrong fields of one entity are two defects; nested dot-paths read;
(g) the semantic envelope: facts rows, series points with their time; malformed rows settle nothing;
(h) definition refusals: no pydantic model, empty, blank entity/field, unknown field, bad pair;
(i) the canary catches one synthetic finding.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import context_integrity as ci
from context_integrity.checks.unsupported_claim import unsupported_claim_canary, unsupported_claims_of
from context_integrity.contracts.claims import Claim, define_claims
from context_integrity.contracts.semantic import FactRow, fact_rows_of
from context_integrity.findings import CHECKED_FAIL, CHECKED_PASS, NOT_APPLICABLE, UNREACHABLE


def _row(
    value: object, call_id: str = "c1", entity: str = "fc1/3", field: str = "status", epoch: int = 1
) -> FactRow:
    return FactRow(entity, field, value, "port_status", call_id, epoch)


STATUS = Claim("status", "fc1/3", "status")


def _judge(answer: object, *facts: FactRow, claims: tuple[Claim, ...] = (STATUS,), readable: bool = True):  # type: ignore[no-untyped-def]
    return unsupported_claims_of(claims=claims, answer=answer, readable=readable, facts=facts, epoch=5)


def test_functional_a_contradiction_with_history() -> None:
    encounter = _judge({"status": "healthy"}, _row("degraded", "c1"), _row("down", "c2", epoch=3))
    assert encounter.dispositions == [CHECKED_FAIL]
    (finding,) = encounter.findings
    assert (finding.predicate, finding.advisory, finding.epoch) == ("status", False, 5)
    settled, claimed, earlier = finding.witnesses
    assert (settled.value, settled.stratum, settled.epoch) == ("down", "asserted", 3)
    assert "'c2'" in settled.provenance
    assert (claimed.value, claimed.provenance) == ("healthy", "answer field 'status'")
    assert (earlier.value, earlier.stratum, earlier.epoch) == ("degraded", "quoted", None)
    assert ci.CEILINGS["unsupported-claim@claim"] in finding.message


def test_functional_the_latest_settles_and_an_honest_answer_passes() -> None:
    assert _judge({"status": "down"}, _row("up"), _row("down")).dispositions == [CHECKED_PASS]
    assert _judge({"status": "up"}, _row("up"), _row("down")).dispositions == [CHECKED_FAIL]


@pytest.mark.parametrize("doubt", [None, "unknown", " Unknown "])
def test_functional_doubt_against_a_settled_value_is_advisory(doubt: object) -> None:
    encounter = _judge({"status": doubt}, _row("down"))
    (finding,) = encounter.findings
    assert finding.advisory and [w.value for w in finding.witnesses] == ["down"]


def test_functional_doubt_against_doubt_agrees() -> None:
    assert _judge({"status": None}, _row(None)).dispositions == [CHECKED_PASS]
    assert _judge({"status": "down"}, _row("unknown")).dispositions == [UNREACHABLE]


def test_unit_numeric_leniency_is_one_direction() -> None:
    budget = Claim("budget", "apollo", "budget_start")
    facts = (_row(30, entity="apollo", field="budget_start"),)
    assert _judge({"budget": "30"}, *facts, claims=(budget,)).dispositions == [CHECKED_PASS]
    assert _judge({"budget": 30.0}, *facts, claims=(budget,)).dispositions == [CHECKED_PASS]
    assert _judge({"budget": "2"}, *facts, claims=(budget,)).dispositions == [CHECKED_FAIL]
    text_fact = (_row("30", entity="apollo", field="budget_start"),)
    assert _judge({"budget": 30}, *text_fact, claims=(budget,)).dispositions == [CHECKED_FAIL]


def test_contract_uncollected_omitted_and_unreadable() -> None:
    assert _judge({"status": "up"}).dispositions == [UNREACHABLE]
    assert _judge({}, _row("down")).dispositions == [NOT_APPLICABLE]
    two = (STATUS, Claim("errors", "fc1/3", "crc_errors"))
    assert _judge(None, _row("down"), claims=two, readable=False).dispositions == [UNREACHABLE, UNREACHABLE]


def test_functional_two_wrong_fields_are_two_defects_and_nested_paths_read() -> None:
    claims = (Claim("port.status", "fc1/3", "status"), Claim("port.errors", "fc1/3", "crc_errors"))
    encounter = _judge(
        {"port": {"status": "up", "errors": 0}}, _row("down"), _row(212, field="crc_errors"), claims=claims
    )
    assert [f.predicate for f in encounter.findings] == ["port.status", "port.errors"]
    assert len({f.identity(with_epoch=False) for f in encounter.findings}) == 2


def test_unit_the_envelope_flattens_facts_and_series() -> None:
    envelope = ci.semantic(
        facts=[{"entity": "fc1/3", "status": "down", "crc_errors": 212}, {"status": "no entity"}, "junk"],  # type: ignore[list-item]
        series=[
            {"entity": "apollo", "metric": "budget_start", "value": 30, "t": "2026-11-30"},
            {"entity": "x"},
        ],
        provenance={"measured_at": "2026-11-29"},
    )
    rows = fact_rows_of(envelope, tool_name="t", call_id="c", epoch=2)
    assert [(r.entity, r.field, r.value, r.measured_at) for r in rows] == [
        ("fc1/3", "status", "down", "2026-11-29"),
        ("fc1/3", "crc_errors", 212, "2026-11-29"),
        ("apollo", "budget_start", 30, "2026-11-30"),
    ]
    assert fact_rows_of(
        {"facts": [{"entity": "a", "f": 1}]}, tool_name="t", call_id="c", epoch=0
    )  # rebuilt dict
    assert fact_rows_of({"rows": []}, tool_name="t", call_id="c", epoch=0) == []
    assert fact_rows_of("prose", tool_name="t", call_id="c", epoch=0) == []


class Answer(BaseModel):
    status: str


@pytest.mark.parametrize(
    ("model", "claims", "match"),
    [
        (None, {"status": ("fc1/3", "status")}, "pydantic model"),
        (dict, {"status": ("fc1/3", "status")}, "pydantic model"),
        (Answer, {}, "empty"),
        (Answer, {"status": ("", "status")}, "blank or non-string entity"),
        (Answer, {"status": ("fc1/3", " ")}, "blank or non-string field"),
        (Answer, {"nope": ("fc1/3", "status")}, "does not start with a field"),
        (Answer, {"status.": ("fc1/3", "status")}, "empty step"),
        (Answer, {"status": "fc1/3"}, "not an \\(entity, field\\) pair"),
    ],
)
def test_negative_definition_refusals(model: object, claims: object, match: str) -> None:
    with pytest.raises(ci.DeclarationError, match=match):
        define_claims(model, claims)


def test_unit_a_mapping_pair_is_accepted() -> None:
    contract = define_claims(Answer, {"status": {"entity": "fc1/3", "field": "status"}})
    assert contract.claims == (Claim("status", "fc1/3", "status"),)


def test_contract_the_canary_is_caught_and_synthetic() -> None:
    (finding,) = unsupported_claim_canary().findings
    assert finding.kind == "unsupported-claim" and finding.synthetic
