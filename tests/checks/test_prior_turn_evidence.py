"""prior-turn-evidence @ claim: every value the answer states was last served in an earlier turn.

The laws under test:
(a) field case: a turn-two answer restating only a turn-one value -> one advisory finding, three
    witnesses, the "called no tool" clause, the ceiling verbatim; with a tool result this turn, the other clause;
(b) follow-up exemption: ONE value served this turn -> checked-pass;
(c) index stamps: re-serving re-stamps to the newest turn; a correction frame opens no turn; values
    before any user message are turn 0; user- and system-supplied values are skipped;
(d) the extractor: identifiers (>= 4 chars, digit + letters or : _ - / .) and >= 4-digit numbers only;
(e) dispositions: truncated index -> not-applicable; no user turn / nothing groundable / empty answer ->
    unreachable;
(f) the dial is declared once and refuses a non-boolean; the canary catches one synthetic finding.

NEUTRALIZE-PROOFS: removing the `turn >= current_turn` comparison turns (b) red; opening a turn on a
correction frame turns (c) red.
"""

from __future__ import annotations

import pytest

import context_integrity as ci
from context_integrity.checks.prior_turn_evidence import (
    PRIOR_TURN_EVIDENCE_CEILING,
    answer_values_of,
    evidence_index_of,
    prior_turn_evidence_canary,
    prior_turn_evidence_of_answer,
)
from context_integrity.findings import CHECKED_FAIL, CHECKED_PASS, NOT_APPLICABLE, UNREACHABLE
from context_integrity.judge import Dials
from context_integrity.loop import Message, RequestFrame

TURN_ONE = [
    Message("user", "Which host owns the initiator?"),
    Message("tool", [{"host": "esx-0417", "job": "bkp-4417-ganymede-tier2"}], tool_name="owner_of"),
    Message("assistant", "esx-0417"),
]


def _frame(*messages: Message, system: str | None = None) -> RequestFrame:
    return RequestFrame.of(messages, system=system)


def test_functional_the_field_case_is_one_advisory_with_the_strong_clause() -> None:
    frame = _frame(*TURN_ONE, Message("user", "And its backup job?"))
    encounter = prior_turn_evidence_of_answer("Job bkp-4417-ganymede-tier2 runs on esx-0417.", frame, epoch=7)
    assert encounter.disposition == CHECKED_FAIL
    (finding,) = encounter.findings
    assert finding.advisory and finding.predicate == "grounding" and finding.epoch == 7
    assert [w.subject.kind for w in finding.witnesses] == ["answer", "turn", "answer"]
    assert finding.witnesses[1].subject.id == "1"
    assert finding.witnesses[2].value == 0
    assert "2 values" in finding.message and "This turn called no tool" in finding.message
    assert PRIOR_TURN_EVIDENCE_CEILING in finding.message


def test_functional_a_tool_result_this_turn_that_the_answer_ignores_gets_the_other_clause() -> None:
    frame = _frame(
        *TURN_ONE, Message("user", "And now?"), Message("tool", "nothing relevant", tool_name="owner_of")
    )
    (finding,) = prior_turn_evidence_of_answer("Still esx-0417.", frame).findings
    assert "This turn served 1 tool result" in finding.message


def test_functional_one_value_from_this_turn_passes() -> None:
    frame = _frame(
        *TURN_ONE, Message("user", "And now?"), Message("tool", {"lun": "lun-0042"}, tool_name="luns")
    )
    assert prior_turn_evidence_of_answer("esx-0417 maps lun-0042.", frame).disposition == CHECKED_PASS


def test_unit_index_stamps() -> None:
    index = evidence_index_of(
        _frame(
            Message("tool", "boot-0001 served before anyone asked", tool_name="t"),
            *TURN_ONE,
            Message("user", "retry: the tool failed", correction=True),
            Message("tool", '{"host": "esx-0417"}', tool_name="owner_of"),
            Message("user", "Next question about vol-0099?"),
        )
    )
    assert index.current_turn == 2  # the correction frame opened no turn
    assert index.turn_of["boot-0001"] == 0
    assert index.turn_of["esx-0417"] == 1  # re-served inside turn one after the correction
    assert index.turn_of["bkp-4417-ganymede-tier2"] == 1
    assert "vol-0099" in index.exempt


def test_functional_values_the_user_or_system_supplied_are_skipped() -> None:
    frame = _frame(*TURN_ONE, Message("user", "Is esx-0417 fine?"), system="Site code site-7781.")
    # esx-0417 the user said; site-7781 the system said: nothing left to attribute
    assert prior_turn_evidence_of_answer("esx-0417 at site-7781 is fine.", frame).disposition == UNREACHABLE


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("host esx-0417 on fc1/3 since 2026", ["esx-0417", "fc1/3", "2026"]),
        ("abc1 x9 123 3.5 hello 10.0.0.12.", ["abc1", "10.0.0.12"]),
        ("wwpn c0:50:76:0a:11:7e:00:10", ["c0:50:76:0a:11:7e:00:10"]),
    ],
)
def test_unit_the_extractor(text: str, values: list[str]) -> None:
    assert answer_values_of(text) == values


def test_contract_dispositions() -> None:
    frame = _frame(*TURN_ONE, Message("user", "And now?"))
    assert prior_turn_evidence_of_answer("", frame).disposition == UNREACHABLE
    assert prior_turn_evidence_of_answer("esx-0417", None).disposition == UNREACHABLE
    assert prior_turn_evidence_of_answer("no data here", frame).disposition == UNREACHABLE
    no_user = _frame(Message("tool", "esx-0417", tool_name="t"))
    assert prior_turn_evidence_of_answer("esx-0417", no_user).disposition == UNREACHABLE
    truncated = prior_turn_evidence_of_answer("esx-0417", frame, budget=2)
    assert truncated.disposition == NOT_APPLICABLE


def test_negative_the_dial_refuses_a_non_boolean() -> None:
    with pytest.raises(ci.SetupError, match="notice_prior_turn_evidence"):
        Dials.validated(notice_prior_turn_evidence="yes")


def test_contract_the_canary_is_caught_and_synthetic() -> None:
    (finding,) = prior_turn_evidence_canary().findings
    assert finding.kind == "prior-turn-evidence" and finding.synthetic


def test_unit_a_long_string_is_indexed_by_its_tokens_only() -> None:
    long_text = "vol-0042 " + "padding " * 100
    index = evidence_index_of(
        _frame(Message("user", "go"), Message("tool", {"note": long_text}, tool_name="t"))
    )
    assert "vol-0042" in index.turn_of
    assert long_text.strip().lower() not in index.turn_of
