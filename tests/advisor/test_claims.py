"""Claims evidence: an answer field proposed as stating a settled fact only where it held in most runs."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_integrity.advisor.claims import MIN_CLAIM_RUNS, ClaimsEvidence, settles_of
from context_integrity.contracts.semantic import semantic
from context_integrity.traces.model import AnswerStep, ToolStep, TracedRun


def _run(answer: Any, result: Any, *, agent: str = "triage", text: str | None = None) -> TracedRun:
    steps = (
        ToolStep("s1", 1, "port_status", "c1", "recorded", {}, result),
        AnswerStep("r", text, answer),
    )
    return TracedRun(trace_id="t" * 32, span_id="r", agent_name=agent, steps=steps)


PORTS = [
    {"port": "fc1/1", "status": "up"},
    {"port": "fc1/2", "status": "up"},
    {"port": "fc1/3", "status": "down"},
]


def test_a_claim_held_in_most_runs_is_proposed_with_the_field_naming_its_entity() -> None:
    evidence = ClaimsEvidence()
    for _ in range(4):
        evidence.observe(_run({"port": "fc1/3", "status": "down"}, PORTS))
    evidence.observe(_run({"port": "fc1/3", "status": "up"}, PORTS))  # the defect, once
    (claim,) = evidence.proposals()
    assert (claim.path, claim.entity, claim.field, claim.tool, claim.entity_field) == (
        "status",
        "fc1/3",
        "status",
        "port_status",
        "port",
    )
    assert (claim.held, claim.runs_with_field) == (4, 5)
    assert settles_of([claim]) == {"port_status": ("port", ("status",))}


def test_a_claim_held_in_too_few_runs_is_not_proposed() -> None:
    evidence = ClaimsEvidence()
    for n in range(MIN_CLAIM_RUNS * 2):
        said = "down" if n < MIN_CLAIM_RUNS - 1 else "up"
        evidence.observe(_run({"port": "fc1/3", "status": said}, PORTS))
    assert all(c.path != "status" or c.held >= MIN_CLAIM_RUNS for c in evidence.proposals())
    assert not [c for c in evidence.proposals() if c.path == "status" and c.field == "status"]


def test_a_field_whose_values_repeat_never_names_the_entity() -> None:
    evidence = ClaimsEvidence()
    for _ in range(5):
        evidence.observe(_run({"port": "fc1/3", "status": "down"}, PORTS))
    # 'status' repeats across rows ('up' twice): the answer's port is never read as a fact of 'down'.
    assert [c.path for c in evidence.proposals()] == ["status"]


def test_an_envelope_settles_without_a_settles_declaration() -> None:
    envelope = semantic(facts=[{"entity": "fc1/3", "status": "down"}])
    evidence = ClaimsEvidence()
    for _ in range(3):
        evidence.observe(_run({"port": "fc1/3", "status": "down"}, envelope))
    (claim,) = evidence.proposals()
    assert claim.entity_field is None and settles_of([claim]) == {}


def test_an_answer_recorded_as_json_text_is_read() -> None:
    evidence = ClaimsEvidence()
    for _ in range(3):
        evidence.observe(_run(None, PORTS, text='{"port": "fc1/3", "status": "down"}'))
    assert [c.path for c in evidence.proposals()] == ["status"]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@given(_JSON, _JSON)
@settings(max_examples=200, deadline=None)
def test_hostile_answers_and_results_never_raise(answer: Any, result: Any) -> None:
    evidence = ClaimsEvidence()
    evidence.observe(_run(answer, result))
    evidence.observe(_run(None, result, text=str(answer)))
    evidence.proposals()
