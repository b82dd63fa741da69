"""invariant-violation @ compose: a request still offers a tool the application suspended.

The laws under test:
(a) a suspended group with an offered tool -> ONE finding naming the group and every still-offered tool,
    witnesses for both channels (suspended / available), no predicate, the ceiling verbatim;
(b) fence: a suspended tool that is not offered is no defect; a similarly-named tool is not matched;
(c) two groups -> two findings (one per group);
(d) dispositions: nothing suspended -> not-applicable; no overlap -> checked-pass; never unreachable;
(e) ten compositions of the same leak dedupe to one event per run (the judge);
(f) run.suspend refuses a blank group or a non-list of names at the call, naming the fix;
(g) the canary catches exactly one synthetic invariant-violation.

NEUTRALIZE-PROOFS: dropping the `in offered_set` filter turns (b) red; one finding per tool turns (a) red.
"""

from __future__ import annotations

import pytest

import context_integrity as ci
from context_integrity.checks.compose_invariant import (
    COMPOSE_INVARIANT_CEILING,
    compose_invariant_canary,
    suspended_still_offered_of,
)
from context_integrity.findings import CHECKED_FAIL, CHECKED_PASS, NOT_APPLICABLE, Subject, tool_subject
from context_integrity.judge import ContractBook, Dials, RunJudge
from context_integrity.ledger import CheckId
from context_integrity.loop import Message, RequestFrame, ToolDefinition

ROW = CheckId("invariant-violation", "compose")


def test_functional_one_finding_names_the_group_and_every_still_offered_tool() -> None:
    encounter = suspended_still_offered_of(
        suspended={"ticketing": ("open_ticket", "close_ticket", "list_tickets")},
        offered=("list_hosts", "open_ticket", "list_tickets"),
        epoch=3,
    )
    assert encounter.disposition == CHECKED_FAIL
    (finding,) = encounter.findings
    assert finding.subjects == (
        Subject("toolset", "ticketing"),
        tool_subject("open_ticket"),
        tool_subject("list_tickets"),
    )
    assert finding.predicate is None and finding.epoch == 3 and not finding.advisory
    assert [w.value for w in finding.witnesses] == ["suspended", "available", "available"]
    assert "run.suspend" in finding.witnesses[0].provenance
    assert "'open_ticket'" in finding.witnesses[1].provenance
    assert COMPOSE_INVARIANT_CEILING in finding.message
    assert "close_ticket" not in finding.message


def test_negative_an_unoffered_or_similarly_named_tool_is_no_defect() -> None:
    encounter = suspended_still_offered_of(
        suspended={"ticketing": ("open_ticket",)}, offered=("open_ticket_v2", "Open_Ticket")
    )
    assert (encounter.findings, encounter.disposition) == ([], CHECKED_PASS)


def test_functional_two_groups_are_two_findings() -> None:
    encounter = suspended_still_offered_of(
        suspended={"ticketing": ("open_ticket",), "mcp:storage": ("resize_lun",)},
        offered=("open_ticket", "resize_lun"),
    )
    assert [f.subjects[0].id for f in encounter.findings] == ["ticketing", "mcp:storage"]


def test_contract_nothing_suspended_is_not_applicable() -> None:
    assert suspended_still_offered_of(suspended={}, offered=("open_ticket",)).disposition == NOT_APPLICABLE


def _frame() -> RequestFrame:
    return RequestFrame.of([Message("user", "go")], tools=[ToolDefinition("open_ticket")])


def test_functional_ten_compositions_of_the_leak_are_one_event_and_ten_encounters() -> None:
    judge = RunJudge(ContractBook(), Dials(), clock_ms=lambda: 1)
    judge.begin()
    judge.suspend("ticketing", ("open_ticket",))
    filed = [len(judge.compose(_frame())) for _ in range(10)]
    assert filed == [1] + [0] * 9
    assert judge.ledger is not None
    row = judge.ledger.row(ROW)
    assert (row.checked, row.findings, row.not_applicable) == (10, 10, 1)
    judge.resume("ticketing")
    assert judge.compose(_frame()) == []
    assert judge.ledger.row(ROW).not_applicable == 2


def test_negative_run_suspend_refuses_a_bad_statement(telemetry: object) -> None:
    with ci.run("q") as run:
        with pytest.raises(ci.DeclarationError, match="group name"):
            run.suspend("  ", ["open_ticket"])
        with pytest.raises(ci.DeclarationError, match="list of tool names"):
            run.suspend("ticketing", "open_ticket")
        with pytest.raises(ci.DeclarationError, match="blank or non-string"):
            run.suspend("ticketing", ["open_ticket", ""])
        run.resume("never-suspended")  # resuming an unknown group does nothing


def test_contract_the_canary_is_caught_and_synthetic() -> None:
    (finding,) = compose_invariant_canary().findings
    assert finding.kind == "invariant-violation" and finding.synthetic
