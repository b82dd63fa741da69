"""The run judge's memory between requests, without any telemetry.

The laws under test:
(a) regression: an eviction is remembered for the rest of the run. A request after the ground was
    re-fetched is a real comparison -- ``checked-pass`` under the re-fetch fence -- never
    ``not-applicable``, which is reserved for requests before anything was evicted;
(b) a ground evicted again after its re-fetch dangles again: the same defect, filed once per run,
    counted at every encounter;
(c) memory is bounded without losing a first sighting: past the kept-findings bound defects are
    still emitted and deduped; past the identity bound a re-detection is emitted again.
"""

from __future__ import annotations

import pytest

from context_integrity.contracts import define_contract
from context_integrity.judge import ContractBook, Dials, RunJudge
from context_integrity.judge import seams as judge_module
from context_integrity.ledger import CheckId
from context_integrity.loop import Message, RequestFrame, ToolDefinition

DANGLING_REFERENCE = CheckId("dangling-reference", "compose")

OFFERED = (ToolDefinition("whats_here"), ToolDefinition("screen_fire"))


def _judge() -> RunJudge:
    book = ContractBook()
    book.declare(define_contract("whats_here"))
    book.declare(define_contract("screen_fire", arguments_from=["whats_here"]))
    judge = RunJudge(book, Dials(), clock_ms=lambda: 1)
    judge.begin()
    return judge


def _request(judge: RunJudge, *results: str) -> int:
    """Judge one request holding results of the named tools; return how many findings it filed."""
    messages = [Message("user", "fire every screen")]
    messages += [Message("tool", f"result of {name}", tool_name=name, tool_call_id=name) for name in results]
    return len(judge.judge_request(RequestFrame.of(messages, tools=OFFERED)))


def _row(judge: RunJudge) -> tuple[int, int, int]:
    assert judge.ledger is not None
    row = judge.ledger.row(DANGLING_REFERENCE)
    return row.checked, row.findings, row.not_applicable


def test_regression_a_request_after_the_re_fetch_is_checked_pass_not_not_applicable() -> None:
    judge = _judge()
    filed = [
        _request(judge),  # nothing served yet
        _request(judge, "whats_here"),  # served, in reach
        _request(judge),  # evicted: dangling
        _request(judge, "whats_here"),  # re-fetched: silent, and compared
    ]
    assert filed == [0, 0, 1, 0]
    assert _row(judge) == (2, 1, 2)


def test_a_ground_evicted_again_after_its_re_fetch_dangles_again_as_the_same_defect() -> None:
    judge = _judge()
    filed = [
        _request(judge, "whats_here"),
        _request(judge),
        _request(judge, "whats_here"),
        _request(judge),
    ]
    assert filed == [1 if i == 1 else 0 for i in range(4)]  # the second eviction is no new event
    assert _row(judge) == (3, 2, 1)
    assert [f.kind for f in judge.findings] == ["dangling-reference"]


# ── (c) bounded memory: findings kept vs identities remembered ──────────


def _mismatch_judge() -> RunJudge:
    book = ContractBook()
    book.declare(define_contract("mappings", result_columns={f"c{i}": "number" for i in range(4)}))
    return RunJudge(book, Dials(check_column_types="warn"), clock_ms=lambda: 1)


def test_past_the_kept_findings_bound_defects_are_still_emitted_once_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(judge_module, "MAX_FINDINGS_PER_RUN", 2)
    judge = _mismatch_judge()
    first = judge.judge_tool_result("mappings", "call-1", [{f"c{i}": "x" for i in range(4)}])
    again = judge.judge_tool_result("mappings", "call-2", [{f"c{i}": "x" for i in range(4)}])
    assert len(first.findings) == 4  # every first sighting is emitted
    assert again.findings == []  # and deduped, though only two are kept
    assert len(judge.findings) == 2


def test_past_the_identity_bound_a_redetection_is_emitted_again_never_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(judge_module, "MAX_IDENTITIES_PER_RUN", 2)
    judge = _mismatch_judge()
    first = judge.judge_tool_result("mappings", "call-1", [{f"c{i}": "x" for i in range(4)}])
    again = judge.judge_tool_result("mappings", "call-2", [{f"c{i}": "x" for i in range(4)}])
    assert len(first.findings) == 4
    assert [f.predicate for f in again.findings] == ["c2", "c3"]
