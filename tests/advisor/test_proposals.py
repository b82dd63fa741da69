"""What suggest proposes from a profile, and what it refuses to guess (issue 36's adversarial cases)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from context_integrity.advisor.proposals import (
    MIN_JUDGED_VALUES,
    MIN_ROWSET_CALLS,
    Proposals,
    propose,
    rows_armed_by,
)
from context_integrity.judge import ContractBook, Dials, RunJudge
from context_integrity.judge.profile import Profile
from context_integrity.ledger import CheckId
from context_integrity.loop import Message, ModelResponse, RequestFrame, ToolCall


def _profile(runs: Sequence[Sequence[tuple[str, Any]]]) -> Profile:
    """Each run: a list of steps, ("result", (tool, rows, arguments)), ("call", (tool, arguments))
    or ("user", text) for a user message in the next request."""
    merged = Profile()
    for steps in runs:
        judge = RunJudge(ContractBook(), Dials(profile=True))
        judge.begin()
        user = ""
        for number, (step, value) in enumerate(steps):
            if step == "result":
                tool, rows, arguments = value
                judge.write(tool, f"c{number}", rows, arguments=arguments)
            elif step == "user":
                user = value
            else:
                tool, arguments = value
                frame = RequestFrame.of([Message("user", user)])
                judge.choice(frame, ModelResponse(calls=(ToolCall(tool, f"c{number}", arguments),)))
        assert judge.profiler is not None and not judge.internal_errors
        merged.merge(judge.profiler.profile)
    return merged


def _tool(proposals: Proposals, name: str) -> Any:
    return next(tool for tool in proposals.tools if tool.tool == name)


def _host_run(lun: object, host: str) -> list[tuple[str, Any]]:
    return [
        ("result", ("list_hosts", [{"host": host, "lun": lun, "comment": None}], {})),
        ("call", ("host_paths", {"host": host})),
        ("result", ("host_paths", [{"path": f"/dev/{host}"}], {"host": host})),
    ]


def test_columns_and_producers_are_proposed_with_their_evidence() -> None:
    runs = [_host_run(n, f"server-{n:03d}") for n in range(5)]
    proposals = propose(_profile(runs))
    hosts = _tool(proposals, "list_hosts")
    columns = {c.name: c for c in hosts.columns}
    assert (columns["host"].type, columns["host"].nullable) == ("string", False)
    assert (columns["lun"].type, columns["lun"].nullable) == ("number", False)
    assert "comment" not in columns  # None in every row: its type is unknown, and said so
    assert any("'comment'" in note and "None or missing in every row" in note for note in hosts.notes)
    paths = _tool(proposals, "host_paths")
    assert paths.arguments_from == ("list_hosts",)
    (producer,) = paths.producers
    assert (producer.argument, producer.served, producer.judged) == ("host", 5, 5)
    assert proposals.declared_tools == ("host_paths", "list_hosts")


def test_a_mixed_column_gets_the_majority_type_and_shows_what_would_have_filed() -> None:
    runs = [_host_run(n, f"server-{n:03d}") for n in range(6)] + [_host_run("", "server-lun-zero")]
    lun = next(c for c in _tool(propose(_profile(runs)), "list_hosts").columns if c.name == "lun")
    assert lun.type == "number"
    assert dict(lun.offending) == {"string": 1}  # LUN 0 stored as '': the field case


def test_one_observation_is_not_enough_evidence() -> None:
    proposals = propose(_profile([_host_run(0, "server-alpha")]))
    hosts = _tool(proposals, "list_hosts")
    assert hosts.columns == ()
    assert any(
        f"not enough evidence (1 call(s) returned rows; {MIN_ROWSET_CALLS} are needed)" in n
        for n in hosts.notes
    )
    paths = _tool(proposals, "host_paths")
    assert paths.producers == ()
    assert any(
        f"not enough evidence (1 value(s) long enough to judge; {MIN_JUDGED_VALUES}" in n for n in paths.notes
    )


def test_a_producer_that_echoes_every_argument_is_no_ground() -> None:
    runs = [
        [
            ("result", ("search", [{"hit": f"result for vm-{n:04d}"}], {"query": f"vm-{n:04d}"})),
            ("call", ("power_off", {"vm": f"vm-{n:04d}"})),
        ]
        for n in range(5)
    ]
    proposals = propose(_profile(runs))
    power_off = _tool(proposals, "power_off")
    assert power_off.producers == ()
    assert any("'search' echoes its arguments" in note for note in power_off.notes)


def test_values_that_appear_only_in_user_messages_propose_no_producer() -> None:
    runs = [
        [
            ("result", ("inventory", [{"name": f"host-{n}.example"}], {})),
            ("user", f"please reboot host-{n}.example now"),
            ("call", ("reboot", {"host": f"host-{n}.example"})),
        ]
        for n in range(5)
    ]
    reboot = _tool(propose(_profile(runs)), "reboot")
    assert reboot.producers == ()
    assert any("were in a user message" in note for note in reboot.notes)


def test_a_column_none_in_every_row_is_not_guessed() -> None:
    runs: list[list[tuple[str, Any]]] = [
        [("result", ("t", [{"x": None}, {"x": None}], {}))] for _ in range(5)
    ]
    t = _tool(propose(_profile(runs)), "t")
    assert t.columns == ()
    assert any("None or missing in every row" in note for note in t.notes)


def test_a_column_absent_from_a_whole_call_is_not_proposed() -> None:
    runs: list[list[tuple[str, Any]]] = [[("result", ("t", [{"a": 1, "b": "x"}], {}))] for _ in range(4)]
    runs.append([("result", ("t", [{"a": 2}], {}))])
    t = _tool(propose(_profile(runs)), "t")
    assert [c.name for c in t.columns] == ["a"]
    assert any("'b': absent from every row of 1 of 5 calls" in note for note in t.notes)


def test_iso_date_strings_propose_a_date_column() -> None:
    runs: list[list[tuple[str, Any]]] = [
        [("result", ("t", [{"when": f"2026-12-0{n + 1}"}], {}))] for n in range(4)
    ]
    (when,) = _tool(propose(_profile(runs)), "t").columns
    assert when.type == "date" and not when.offending


def test_repeats_are_listed_never_proposed() -> None:
    runs = [
        [
            ("result", ("restart", [{"ok": True}], {"svc": "db"})),
            ("result", ("restart", [{"ok": True}], {"svc": "db"})),
        ]
        for _ in range(3)
    ]
    restart = _tool(propose(_profile(runs)), "restart")
    assert (restart.repeats, restart.runs_with_repeats) == (3, 3)


def test_the_rows_a_declaration_arms_come_from_the_registry() -> None:
    assert rows_armed_by("result_columns") == (
        CheckId("column-type-mismatch", "write"),
        CheckId("missing-column", "write"),
    )
    assert set(rows_armed_by("arguments_from")) == {
        CheckId("dangling-reference", "compose"),
        CheckId("unsupported-argument", "choice"),
        CheckId("empty-lookup", "write"),
    }
    assert rows_armed_by("once_per_run") == (CheckId("duplicate-execution", "choice"),)
