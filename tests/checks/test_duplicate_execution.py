"""duplicate-execution @ choice: a once-per-run tool asked for again after it succeeded.

The laws under test:
(a) a call canonically equal to an earlier successful call -> one finding with the repeated call's id,
    two witnesses (the earlier execution, the new call), the ceiling verbatim;
(b) canonical equality: key order and number spelling (100 vs 100.0 vs Decimal) do not matter;
    strings are exact, bool is not a number, list order matters;
(c) fences: different arguments pass; a call that raised never settled; equal calls in ONE response are
    both asked before either ran;
(d) dispositions: no once-per-run call -> not-applicable; arguments with no canonical form -> unreachable;
(e) once_per_run is refused at definition unless it is a boolean;
(f) the same repeat re-asked is one event per run; the canary catches one synthetic finding.

NEUTRALIZE-PROOFS: keying executions by tool only turns (c) "different arguments" red; recording the
execution at the choice seam instead of the write seam turns the "raised" fence red.
"""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

import context_integrity as ci
from context_integrity.checks.canonical import NotCanonical, canonical
from context_integrity.checks.duplicate_execution import (
    DUPLICATE_EXECUTION_CEILING,
    Execution,
    OnceCall,
    arguments_key,
    duplicate_execution_canary,
    duplicate_executions_of,
)
from context_integrity.contracts import define_contract
from context_integrity.findings import CHECKED_FAIL, CHECKED_PASS, NOT_APPLICABLE, UNREACHABLE
from context_integrity.judge import ContractBook, Dials, RunJudge
from context_integrity.ledger import CheckId
from context_integrity.loop import ModelResponse, ToolCall

ROW = CheckId("duplicate-execution", "choice")
ARGS = {"name": "disk2", "size_gb": 100}


def _executed(arguments: dict[str, object]) -> dict[tuple[str, str], Execution]:
    key = arguments_key(arguments)
    assert key is not None
    return {("provision_disk", key): Execution("p1", 1)}


def test_functional_an_equal_repeat_after_success_is_one_finding() -> None:
    encounter = duplicate_executions_of(
        calls=[OnceCall("provision_disk", "p2", {"size_gb": 100.0, "name": "disk2"})],
        executed=_executed(ARGS),
        epoch=4,
    )
    assert encounter.disposition == CHECKED_FAIL and encounter.call_ids == ["p2"]
    (finding,) = encounter.findings
    assert finding.kind == "duplicate-execution" and finding.seam == "choice"
    earlier, again = finding.witnesses
    assert isinstance(earlier.value, str) and isinstance(again.value, str)
    assert "'p1'" in earlier.value and earlier.epoch == 1
    assert "'p2'" in again.value and again.epoch == 4
    assert DUPLICATE_EXECUTION_CEILING in finding.message


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        ({"a": 1, "b": "x"}, {"b": "x", "a": 1}, True),
        ({"n": 100}, {"n": 100.0}, True),
        ({"n": Decimal("0.1")}, {"n": 0.1}, True),
        ({"n": 1}, {"n": True}, False),
        ({"s": "Disk2"}, {"s": "disk2"}, False),
        ({"s": "disk2 "}, {"s": "disk2"}, False),
        ({"l": [1, 2]}, {"l": [2, 1]}, False),
        ({"l": [1, 2]}, {"l": (1, 2)}, True),
        ({"v": None}, {}, False),
    ],
)
def test_unit_canonical_equality(left: dict[str, object], right: dict[str, object], equal: bool) -> None:
    assert (canonical(left) == canonical(right)) is equal


def test_unit_values_with_no_canonical_form_are_refused() -> None:
    for value in ({"n": math.nan}, {"n": math.inf}, {"o": object()}):
        with pytest.raises(NotCanonical):
            canonical(value)


def test_negative_different_arguments_pass() -> None:
    encounter = duplicate_executions_of(
        calls=[OnceCall("provision_disk", "p2", {"name": "disk3", "size_gb": 100})], executed=_executed(ARGS)
    )
    assert (encounter.findings, encounter.disposition) == ([], CHECKED_PASS)


def test_contract_dispositions() -> None:
    assert duplicate_executions_of(calls=[], executed={}).disposition == NOT_APPLICABLE
    opaque = duplicate_executions_of(calls=[OnceCall("provision_disk", "p", {"x": object()})], executed={})
    assert opaque.disposition == UNREACHABLE


def _judge() -> RunJudge:
    book = ContractBook()
    book.declare(define_contract("provision_disk", once_per_run=True))
    book.declare(define_contract("list_disks"))
    judge = RunJudge(book, Dials(), clock_ms=lambda: 1)
    judge.begin()
    return judge


def _ask(judge: RunJudge, *calls: ToolCall) -> int:
    return len(judge.choice(None, ModelResponse(calls=calls)).findings)


def test_functional_the_judge_records_success_at_the_write_seam_only() -> None:
    judge = _judge()
    assert _ask(judge, ToolCall("provision_disk", "p1", ARGS)) == 0
    # p1 raised: the write seam never saw it, so a retry is not a duplicate
    assert _ask(judge, ToolCall("provision_disk", "p2", ARGS)) == 0
    judge.write("provision_disk", "p2", "ok")
    assert _ask(judge, ToolCall("provision_disk", "p3", ARGS)) == 1
    assert _ask(judge, ToolCall("provision_disk", "p4", ARGS)) == 0  # same defect: one event per run
    assert _ask(judge, ToolCall("list_disks", "l1", {})) == 0
    assert judge.ledger is not None
    row = judge.ledger.row(ROW)
    assert (row.checked, row.findings, row.not_applicable) == (4, 2, 1)


def test_negative_equal_calls_in_one_response_are_not_yet_a_repeat() -> None:
    judge = _judge()
    assert _ask(judge, ToolCall("provision_disk", "p1", ARGS), ToolCall("provision_disk", "p2", ARGS)) == 0


def test_negative_once_per_run_must_be_a_boolean() -> None:
    with pytest.raises(ci.DeclarationError, match="once_per_run"):
        define_contract("provision_disk", once_per_run="yes")


def test_contract_the_canary_is_caught_and_synthetic() -> None:
    (finding,) = duplicate_execution_canary().findings
    assert finding.kind == "duplicate-execution" and finding.synthetic


def test_unit_a_huge_argument_is_remembered_as_a_digest() -> None:
    key = arguments_key({"body": "x" * 1_000_000})
    assert key is not None and len(key) == 64
    encounter = duplicate_executions_of(
        calls=[OnceCall("provision_disk", "p2", {"body": "x" * 1_000_000})],
        executed={("provision_disk", key): Execution("p1", 1)},
    )
    (finding,) = encounter.findings
    assert len(finding.subjects[1].id) < 200
