"""Our own spans, judged again: a run recorded here, read back and replayed, files what it filed.

The law under test: the family demo (one scripted agent whose story trips every built check) runs in
process through ``ci.run`` with content capture on and recording to a file; that file, judged under
the same declarations and dials, yields the same findings (kind, seam, tool, predicate), each on the
same span the run put it on, but for what no trace carries: the body sent to the provider (the wire
check reads it in process), which the replay says is unreachable.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from tests.conftest import Telemetry

from context_integrity.demo_family import run_family
from context_integrity.findings import Finding
from context_integrity.judge import Dials
from context_integrity.recording import read_recording
from context_integrity.telemetry.export.file_export import OtlpJsonLinesSpanExporter
from context_integrity.telemetry.setup import CONTRACTS
from context_integrity.traces import JudgedRun, ModelStep, judge_runs, read_runs

DIALS = {"check_column_types": "warn", "notice_empty_lookups": True, "notice_prior_turn_evidence": True}

Key = tuple[str, str, str | None, str | None]


def _tool(finding: Finding) -> str | None:
    return next((s.id for s in finding.subjects if s.kind == "tool"), None)


def key(finding: Finding) -> Key:
    return (finding.kind, finding.seam, _tool(finding), finding.predicate)


@pytest.fixture
def recorded(tmp_path: Path, telemetry: Telemetry) -> Iterator[tuple[Path, list[Finding]]]:
    """The family run in process, content captured, its spans written by our OTLP/JSON-lines
    exporter: the recording ``ci.setup()`` writes when no endpoint is configured."""
    path = tmp_path / "family.otlp.jsonl"
    telemetry.provider.add_span_processor(SimpleSpanProcessor(OtlpJsonLinesSpanExporter(path)))
    telemetry.configure(capture_content=True, instrument=(), **DIALS)
    outcome = run_family()
    telemetry.provider.force_flush()
    yield path, outcome.run.findings


def judged_again(path: Path) -> JudgedRun:
    runs = read_runs(path)
    (run,) = judge_runs(runs, CONTRACTS, Dials(**DIALS))  # type: ignore[arg-type]
    assert runs.problems.listed == []
    return run


def test_a_run_recorded_here_and_judged_again_files_what_it_filed(
    recorded: tuple[Path, list[Finding]],
) -> None:
    path, in_process = recorded
    run = judged_again(path)
    assert run.run.dialects == ("ours",)
    replayed = {key(f.finding) for f in run.findings}
    wire = ("invariant-violation", "wire", "trace_eval", None)
    assert {key(f) for f in in_process} - replayed == {wire}
    assert replayed <= {key(f) for f in in_process}


def test_each_finding_lands_on_the_span_the_run_put_it_on(recorded: tuple[Path, list[Finding]]) -> None:
    path, _ = recorded
    recorded_where = sorted(
        (f.kind, f.seam, f.tool_name or "", f.predicate or "", f.span_id)
        for r in read_recording(path).runs
        for f in r.findings
        if f.seam != "wire"
    )
    run = judged_again(path)
    again = sorted(
        (f.finding.kind, f.finding.seam, f.tool_name or "", f.finding.predicate or "", f.span_id)
        for f in run.findings
    )
    assert again == recorded_where


def test_the_wire_check_armed_is_unreachable_and_says_no_trace_carries_the_body(
    recorded: tuple[Path, list[Finding]],
) -> None:
    path, _ = recorded
    CONTRACTS.declare_wire_reader("test")
    try:
        run = judged_again(path)
    finally:
        CONTRACTS.forget_wire_reader("test")
    rows = {(r.check, r.seam): r for r in run.ledger}
    wire = rows["invariant-violation", "wire"]
    model_calls = [step for step in run.run.steps if isinstance(step, ModelStep)]
    assert len(model_calls) == 13  # the family's script: thirteen responses
    assert wire.checked == 0 and wire.unreachable == len(model_calls)  # one per model call, none passed
    assert {u.reason for u in run.unreachable if u.seam == "wire"} == {
        "the request body sent to the provider is not in the trace (no span carries it)"
    }
