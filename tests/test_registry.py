"""The one registry of checks: everything reads it, and a new check is one entry.

The laws under test: a check registered with a single registry entry — no other file touched —
is a ledger row of every new run, is armed from the contracts and dials, files findings that
reach the span and the findings counter, counts its dispositions, and has its canary minted and
caught; every built-in check's ceiling is in the one CEILINGS mapping, under each row it files, and
is the sentence its findings quote.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.checks import as_canary
from context_integrity.findings import (
    CHECKED_FAIL,
    CHECKED_PASS,
    NOT_APPLICABLE,
    Encounter,
    Finding,
    tool_subject,
)
from context_integrity.judge import REGISTRY, ContractBook, Dials, RegisteredCheck, RunJudge
from context_integrity.judge.registry import BUILT_IN, REGISTERED_CHECKS
from context_integrity.judge.state import ResponseSeen, RunState
from context_integrity.ledger import CheckId
from context_integrity.loop import ModelResponse, RequestFrame, ToolCall, ToolDefinition
from context_integrity.telemetry.schema import names

# A kind no built-in check files at the choice seam: the fake takes that row.
FAKE_ROW = CheckId("missing-column", "choice")


def _fake_choice(state: RunState, seen: ResponseSeen) -> Encounter:
    """Flags every call named 'provision_disk' whose 'disk' argument was already provisioned."""
    calls = [call for call in seen.response.calls if call.name == "provision_disk"]
    if not calls:
        return Encounter(disposition=NOT_APPLICABLE)
    findings = [
        Finding(
            kind="missing-column",
            seam="choice",
            subjects=(tool_subject(call.name),),
            predicate="disk",
            witnesses=(),
            epoch=state.epoch,
            message=f"provision_disk called again for {call.arguments.get('disk')!r}",
        )
        for call in calls
        if call.arguments.get("disk") == "disk0"
    ]
    return Encounter(
        findings=findings,
        disposition=CHECKED_FAIL if findings else CHECKED_PASS,
        call_ids=[call.call_id for call in calls if call.arguments.get("disk") == "disk0"],
    )


def _fake_canary() -> Encounter:
    response = ModelResponse(calls=(ToolCall("provision_disk", "canary-call", {"disk": "disk0"}),))
    state = RunState.begin(ContractBook(), Dials(), grounding=False)
    return as_canary(_fake_choice(state, ResponseSeen(None, response)))


FAKE = RegisteredCheck(
    "fake duplicate execution",
    rows=(FAKE_ROW,),
    armed_by="a declared tool named provision_disk",
    armed=lambda contracts, dials: "provision_disk" in contracts.names(),
    choice=_fake_choice,
    canary=_fake_canary,
)


@pytest.fixture
def fake_check() -> Iterator[RegisteredCheck]:
    REGISTRY.register(FAKE)
    yield FAKE
    REGISTRY.unregister(FAKE)


def test_a_fake_check_registered_once_files_counts_and_reaches_telemetry(
    telemetry: Telemetry, fake_check: RegisteredCheck
) -> None:
    telemetry.configure()
    ci.declare_tool("provision_disk")
    with ci.run("provision twice") as agent_run:
        frame = RequestFrame.of([], tools=[ToolDefinition("provision_disk")])
        agent_run.request(frame).respond(calls=[ToolCall("provision_disk", "c1", {"disk": "disk0"})])
        agent_run.request(frame).respond(calls=[ToolCall("provision_disk", "c2", {"disk": "disk1"})])
    row = next(r for r in agent_run.ledger() if r.check_id == FAKE_ROW)
    assert (row.checked, row.findings, row.not_applicable) == (2, 1, 0)
    # the finding went onto the chat span of the response it is about, with the call id
    chats = telemetry.named(names.chat_span_name("model"))
    finding_events = [e for span in chats for e in span.events if e.name == names.FINDING_EVENT]
    assert len(finding_events) == 1
    event_attributes = finding_events[0].attributes
    assert event_attributes is not None
    assert event_attributes[names.FINDING_KIND] == "missing-column"
    assert event_attributes[names.GEN_AI_TOOL_CALL_ID] == "c1"
    # the summary span carries the row, and the counter counted the finding
    summary = telemetry.summaries()[0]
    assert summary.attributes is not None
    assert f"{names.ROW_PREFIX}.missing-column.choice.findings" in summary.attributes
    assert summary.attributes[f"{names.ROW_PREFIX}.missing-column.choice.findings"] == 1
    assert ("missing-column", 1) in [
        (point[names.METRIC_KIND], value) for point, value in telemetry.findings_metric()
    ]


def test_an_unarmed_fake_check_is_noted_not_applicable_once(
    telemetry: Telemetry, fake_check: RegisteredCheck
) -> None:
    telemetry.configure()
    with ci.run("nothing declared") as agent_run:
        agent_run.request(RequestFrame.of([])).respond(text="done")
    row = next(r for r in agent_run.ledger() if r.check_id == FAKE_ROW)
    assert (row.checked, row.not_applicable) == (0, 1)


def test_the_fake_checks_canary_is_minted_and_caught(fake_check: RegisteredCheck) -> None:
    judge = RunJudge(ContractBook(), Dials())
    judge.run_canaries()
    assert judge.ledger is not None
    assert judge.ledger.row(FAKE_ROW).synthetic == 1
    judge.ledger.assert_alive(work_existed=False)  # minted and caught: alive
    assert judge.findings == []  # canary findings are never filed as real


def test_a_canary_that_finds_nothing_is_reported_dead(fake_check: RegisteredCheck) -> None:
    blind = RegisteredCheck(
        "blind",
        rows=(CheckId("prior-turn-evidence", "choice"),),
        armed=lambda contracts, dials: True,
        choice=lambda state, seen: Encounter(disposition=CHECKED_PASS),
        canary=lambda: Encounter(disposition=CHECKED_PASS),
    )
    REGISTRY.register(blind)
    try:
        judge = RunJudge(ContractBook(), Dials())
        judge.run_canaries()
        assert judge.ledger is not None
        with pytest.raises(ci.CheckerDeadError, match="prior-turn-evidence"):
            judge.ledger.assert_alive(work_existed=False)
    finally:
        REGISTRY.unregister(blind)


def test_every_built_in_canary_is_caught() -> None:
    judge = RunJudge(ContractBook(), Dials())
    judge.run_canaries()
    assert judge.ledger is not None
    judge.ledger.assert_alive(work_existed=False)
    built = [entry for entry in REGISTRY if entry.built]
    assert built and all(entry.canary is not None for entry in built)
    for entry in built:
        for row in entry.rows:
            assert judge.ledger.row(row).synthetic == 1, row


def test_a_row_registered_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="registered already"):
        REGISTRY.register(RegisteredCheck("again", rows=(CheckId("empty-lookup", "write"),)))


def test_a_seam_function_at_the_wrong_seam_is_refused() -> None:
    with pytest.raises(ValueError, match="must be 'write'"):
        RegisteredCheck("misplaced", rows=(FAKE_ROW._replace(seam="write"),), choice=_fake_choice)


def test_every_row_has_its_checks_ceiling_and_its_findings_quote_it() -> None:
    assert list(ci.CEILINGS) == [row.render() for row in REGISTERED_CHECKS]
    for entry in BUILT_IN:
        assert entry.ceiling, entry.name
        assert entry.canary is not None
        findings = entry.canary().findings
        assert findings, entry.name
        for row in entry.rows:
            assert ci.CEILINGS[row.render()] == entry.ceiling
        for finding in findings:
            if finding.kind == "missing-column":
                # The column ceiling is about a value's type; a column in no row delivered no value, so
                # its finding leaves the sentence out (tests/test_demo.py holds that side).
                assert entry.ceiling not in finding.message, finding.message
                continue
            assert entry.ceiling in finding.message, (entry.name, finding.message)
    # nine checks, nine sentences: the column check's two rows share one
    assert len(set(ci.CEILINGS.values())) == len(BUILT_IN)


def test_the_ceilings_cannot_be_changed_through_the_mapping() -> None:
    with pytest.raises(TypeError):
        ci.CEILINGS["empty-lookup@write"] = "anything"  # type: ignore[index]
