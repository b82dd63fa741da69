"""Dev posture: proving the checks are alive.

The laws under test:
(a) every registered check's canary, run through its real pure function, is caught; canary findings
    are counted in the ``synthetic`` column only, never emitted and never counted as real;
(b) a check double whose pure function has rotted (misses its canary) raises CheckerDeadError naming
    its check and seam at the end of a successful dev run, and nothing in observe posture;
(c) a check its seam stopped feeding (work happened at that seam, the row filed nothing) is dead,
    and a caught canary never masks it;
(d) an armed check whose seam saw no work had nothing to look at: no raise;
(e) the error is raised on success only: a run whose body raised re-raises the body's own error;
(f) the pytest plugin turns dev posture on for a whole session (flag or ini) and fails it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.findings import CHECKED_PASS, Encounter, Finding
from context_integrity.judge import ContractBook, Dials, RunJudge
from context_integrity.judge import seams as judge_module
from context_integrity.judge.registry import REGISTRY, RegisteredCheck
from context_integrity.ledger import CheckerDeadError, CheckId, DispositionLedger
from context_integrity.loop import Message, RequestFrame
from context_integrity.telemetry.schema import names

ROTTED = CheckId("duplicate-execution", "write")

pytest_plugins = ["pytester"]


def _synthetic(kind: Any) -> Finding:
    return Finding(
        kind=kind,
        seam="write",
        subjects=(),
        predicate=None,
        witnesses=(),
        epoch=-1,
        message="canary",
        synthetic=True,
    )


def _double(*, canary_caught: bool) -> RegisteredCheck:
    """A check armed always, passing every real encounter; its canary is caught or not."""
    return RegisteredCheck(
        "rotted double",
        rows=(ROTTED,),
        armed=lambda contracts, dials: True,
        write=lambda state, seen: Encounter(disposition=CHECKED_PASS),
        rule_version="1",
        canary=lambda: Encounter(
            findings=[_synthetic(ROTTED.check)] if canary_caught else [], disposition=CHECKED_PASS
        ),
    )


@pytest.fixture
def registered() -> Iterator[Callable[[RegisteredCheck], None]]:
    added: list[RegisteredCheck] = []

    def register(entry: RegisteredCheck) -> None:
        REGISTRY.register(entry)
        added.append(entry)

    yield register
    for entry in added:
        REGISTRY.unregister(entry)


def _one_tool_call(run: ci.Run) -> None:
    run.tool_result("lookup", "call-1", [{"id": 1}])


# ── (a) canaries ────────────────────────────────────────────────────────


@pytest.mark.parametrize("entry", [e for e in REGISTRY if e.built], ids=lambda e: e.name)
def test_every_built_check_has_a_canary_its_real_function_catches(entry: RegisteredCheck) -> None:
    assert entry.canary is not None, f"{entry.name} is built but has no canary"
    encounter = entry.canary()
    caught = {f.kind for f in encounter.findings if f.synthetic}
    assert {row.check for row in entry.rows} <= caught
    assert all(f.synthetic for f in encounter.findings)


def test_a_dev_judge_mints_and_catches_every_canary_and_counts_nothing_real() -> None:
    judge = RunJudge(ContractBook(), Dials(posture="dev"))
    judge.begin()
    judge.run_canaries()
    assert judge.internal_errors == []
    assert judge.dead_check() is None
    canaried = {row for entry in REGISTRY if entry.canary is not None for row in entry.rows}
    assert canaried, "no registered check has a canary"
    for row in judge.report():
        assert row.synthetic == (1 if row.check_id in canaried else 0), row
        assert (row.checked, row.findings) == (0, 0), row
    assert judge.findings == []


def test_a_dev_run_emits_no_canary_finding_and_records_the_synthetic_column(telemetry: Telemetry) -> None:
    telemetry.configure(posture="dev")
    with ci.run("q") as run:
        _one_tool_call(run)
    assert run.findings == []
    assert not any(e.name == names.FINDING_EVENT for s in telemetry.finished() for e in s.events)
    synthetic = {row.check_id: row.synthetic for row in run.ledger()}
    assert all(synthetic[row] == 1 for entry in REGISTRY if entry.canary for row in entry.rows)


def test_observe_mints_nothing(telemetry: Telemetry) -> None:
    telemetry.configure()
    with ci.run("q") as run:
        _one_tool_call(run)
    assert all(row.synthetic == 0 for row in run.ledger())


# ── (b) a rotted pure function ──────────────────────────────────────────


def test_a_check_that_misses_its_canary_raises_in_dev_naming_check_and_seam(
    telemetry: Telemetry, registered: Callable[[RegisteredCheck], None]
) -> None:
    registered(_double(canary_caught=False))
    telemetry.configure(posture="dev")
    with pytest.raises(CheckerDeadError) as raised, ci.run("q") as run:
        _one_tool_call(run)
    assert (raised.value.check, raised.value.seam) == ROTTED
    assert "caught 0" in str(raised.value)
    summary = telemetry.summaries()[0]
    assert summary.attributes is not None
    assert summary.attributes[names.RUN_OUTCOME] == "checker-dead"
    run_span = telemetry.one(names.run_span_name("agent"))
    assert run_span.attributes is not None
    assert run_span.attributes[names.ERROR_TYPE] == "CheckerDeadError"


def test_the_same_check_in_observe_raises_nothing(
    telemetry: Telemetry, registered: Callable[[RegisteredCheck], None]
) -> None:
    registered(_double(canary_caught=False))
    telemetry.configure(posture="observe")
    with ci.run("q") as run:
        _one_tool_call(run)
    assert run.outcome == "ok"


def test_a_run_whose_body_raised_re_raises_its_own_error_not_checker_dead(
    telemetry: Telemetry, registered: Callable[[RegisteredCheck], None]
) -> None:
    registered(_double(canary_caught=False))
    telemetry.configure(posture="dev")
    with pytest.raises(LookupError), ci.run("q") as run:
        _one_tool_call(run)
        raise LookupError("the agent's own failure")


# ── (c) a check its seam stopped feeding ────────────────────────────────


def test_a_check_its_seam_stopped_feeding_is_dead_even_though_its_canary_was_caught(
    telemetry: Telemetry, registered: Callable[[RegisteredCheck], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    double = _double(canary_caught=True)
    registered(double)
    real_run = judge_module.RunJudge._run

    def unwired(self: RunJudge, entry: RegisteredCheck, check: Any, seen: Any) -> Encounter | None:
        # Wiring rot: the seam still does its work but no longer hands it to this check.
        return None if entry is double else real_run(self, entry, check, seen)

    monkeypatch.setattr(judge_module.RunJudge, "_run", unwired)
    telemetry.configure(posture="dev")
    with pytest.raises(CheckerDeadError) as raised, ci.run("q") as run:
        _one_tool_call(run)
    assert (raised.value.check, raised.value.seam) == ROTTED
    assert "filed no disposition at all" in str(raised.value)
    row = next(r for r in run.ledger() if r.check_id == ROTTED)
    assert row.synthetic == 1 and not row.touched()


def test_the_ledger_never_lets_a_caught_canary_mask_an_untouched_row() -> None:
    ledger = DispositionLedger((ROTTED,))
    ledger.note_synthetic(ROTTED, "minted")
    ledger.note_synthetic(ROTTED, "caught")
    with pytest.raises(CheckerDeadError, match="filed no disposition"):
        ledger.assert_alive(worked={"write"})


def test_the_ledger_reads_work_per_seam() -> None:
    ledger = DispositionLedger((ROTTED, CheckId("dangling-reference", "compose")))
    ledger.note(ROTTED, "not-applicable")
    ledger.assert_alive(worked={"write"})  # not-applicable is a disposition: it ran and said so
    ledger.assert_alive(worked=set())  # nothing worked anywhere: nothing to look at
    with pytest.raises(CheckerDeadError) as raised:
        ledger.assert_alive(worked={"write", "compose"})
    assert (raised.value.check, raised.value.seam) == ("dangling-reference", "compose")


# ── (d) armed, with nothing to look at ──────────────────────────────────


def test_an_armed_check_whose_seam_saw_no_work_does_not_raise(telemetry: Telemetry) -> None:
    ci.declare_tool("orders", result_columns={"total": "number"})
    telemetry.configure(posture="dev", check_column_types="warn")
    with ci.run("q") as run:
        with run.request(RequestFrame.of([Message("user", "q")])) as call:
            call.respond(text="nothing to look up")
        run.answer("nothing to look up")
    row = next(r for r in run.ledger() if r.check_id == CheckId("column-type-mismatch", "write"))
    assert (row.checked, row.not_applicable, row.unreachable) == (0, 0, 0)
    assert run.outcome == "ok"


def test_posture_is_a_public_setup_option_and_refuses_other_words(telemetry: Telemetry) -> None:
    import inspect

    assert inspect.signature(ci.setup).parameters["posture"].default == "observe"
    with pytest.raises(ci.SetupError, match="posture"):
        telemetry.configure(posture="strict")


# ── (f) the pytest plugin ───────────────────────────────────────────────

_PROJECT_TEST = """
import context_integrity as ci
from context_integrity.findings import CHECKED_PASS, Encounter
from context_integrity.judge.registry import REGISTRY, RegisteredCheck
from context_integrity.ledger import CheckId

ROTTED = RegisteredCheck(
    "rotted double",
    rows=(CheckId("duplicate-execution", "write"),),
    armed=lambda contracts, dials: True,
    write=lambda state, seen: Encounter(disposition=CHECKED_PASS),
    rule_version="1",
    canary=lambda: Encounter(disposition=CHECKED_PASS),
)


def test_agent_answers():
    REGISTRY.register(ROTTED)
    try:
        with ci.run("q") as run:
            run.tool_result("lookup", "call-1", [{"id": 1}])
    finally:
        REGISTRY.unregister(ROTTED)
"""

_SWALLOWING_TEST = _PROJECT_TEST.replace(
    '        with ci.run("q") as run:\n            run.tool_result("lookup", "call-1", [{"id": 1}])\n',
    '        try:\n            with ci.run("q") as run:\n                run.tool_result("lookup", "call-1", [{"id": 1}])\n'
    "        except Exception:\n            pass\n",
)

_PLUGIN = ("-p", "context_integrity.pytest_plugin")


def _project(pytester: pytest.Pytester, test: str, *ini: str) -> None:
    pytester.makeini("\n".join(["[pytest]", "asyncio_default_fixture_loop_scope = function", *ini]) + "\n")
    pytester.makepyfile(test)


def test_the_plugin_is_declared_as_a_pytest11_entry_point() -> None:
    from importlib.metadata import entry_points

    # What pytest itself reads: the installed distribution's entry points (pyproject's
    # [project.entry-points.pytest11]), on every Python the project supports.
    ours = [point for point in entry_points(group="pytest11") if point.value.startswith("context_integrity")]
    assert [(point.name, point.value) for point in ours] == [
        ("context_integrity.pytest_plugin", "context_integrity.pytest_plugin")
    ]


def test_without_the_plugin_switched_on_the_session_passes(pytester: pytest.Pytester) -> None:
    _project(pytester, _PROJECT_TEST)
    pytester.runpytest(*_PLUGIN).assert_outcomes(passed=1)


def test_the_flag_fails_a_session_whose_check_is_dead(pytester: pytest.Pytester) -> None:
    _project(pytester, _PROJECT_TEST)
    result = pytester.runpytest(*_PLUGIN, "--context-integrity-dev")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*CheckerDeadError*duplicate-execution*write seam*"])


def test_the_ini_option_fails_a_session_even_when_the_project_swallows_the_error(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester, _SWALLOWING_TEST, "context_integrity_dev = true")
    result = pytester.runpytest(*_PLUGIN)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*context-integrity: dead checks*", "*duplicate-execution*write seam*"])


def test_evaluation_events_is_refused_unless_a_boolean_or_all(telemetry: Telemetry) -> None:
    with pytest.raises(ci.SetupError, match=r"evaluation_events=.*Pass True .* 'all' .* or False"):
        telemetry.configure(evaluation_events="yes")
