"""The demo is the main job: it must run on a fresh machine and show what the checks catch.

The laws under test: `context-integrity demo --only column-types` exits 0 with no network; its warn
run files the LUN '' and the quoted-numbers findings and passes the 0.0 GB disk, saying why (the
ceiling); its enforce run hands the model refusal sentences; and its recording round-trips through
`context-integrity report` with both runs, their findings and their ledgers. `context-integrity demo`
tells the whole family's story in one run: every built check files its finding once, each printed
in one line, and every ledger row is checked at least once; its recording round-trips too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest

from context_integrity.checks.column_types import COLUMN_TYPE_CEILING
from context_integrity.findings import KINDS
from context_integrity.judge import REGISTERED_CHECKS
from context_integrity.recording import read_recording

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    clean["PYTHONPATH"] = str(ROOT / "src")
    clean.update(env)
    return subprocess.run(
        [sys.executable, "-m", "context_integrity.cli", *args],
        capture_output=True,
        text=True,
        env=clean,
        timeout=120,
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    recording = tmp_path_factory.mktemp("demo") / "recording.otlp.jsonl"
    result = _cli("demo", "--only", "column-types", env={"CONTEXT_INTEGRITY_RECORDING": str(recording)})
    return result, recording


def test_the_demo_runs_and_says_where_the_traces_went(
    demo_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, recording = demo_run
    assert result.returncode == 0, result.stderr
    assert str(recording) in result.stdout
    assert "context-integrity report" in result.stdout


def test_warn_then_enforce_each_file_the_two_field_failures(
    demo_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    out = demo_run[0].stdout
    warn, enforce = out.split("== run in 'warn' mode", 1)[1].split("== run in 'enforce' mode", 1)
    for section in (warn, enforce):
        assert "column-type-mismatch @write on host_group_mappings.logical_unit_number" in section
        assert "column-type-mismatch @write on port_counters.frames_per_sec" in section
        assert "vm_disk_capacity" not in section.split("ledger:")[0]
    assert "Result rejected" not in warn
    assert "Result rejected" in enforce and "No data was returned." in enforce


def test_the_zero_gb_disk_passes_and_the_ceiling_says_why(
    demo_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    out = " ".join(demo_run[0].stdout.split())
    assert "vm_disk_capacity passed" in out
    assert " ".join(COLUMN_TYPE_CEILING.split()) in out


def test_the_recording_round_trips_through_report(
    demo_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    recording = demo_run[1]
    parsed = read_recording(recording)
    assert parsed.problems == []
    assert [r.agent for r in parsed.runs] == ["storage-triage", "storage-triage"]
    for agent_run in parsed.runs:
        tools = sorted(cast("set[str]", {f.tool_name for f in agent_run.findings}))  # each names its tool
        assert tools == ["host_group_mappings", "port_counters"]
        assert agent_run.ledger is not None
        assert len(agent_run.ledger) == len(REGISTERED_CHECKS)
        mismatch = next(row for row in agent_run.ledger if row["check"] == "column-type-mismatch")
        assert (mismatch["checked"], mismatch["findings"]) == (3, 2)
    report = _cli("report", str(recording), env={})
    assert report.returncode == 0, report.stderr
    assert report.stdout.count("agent storage-triage") == 2
    assert "host_group_mappings" in report.stdout


# ── the whole family ─────────────────────────────────────────────────────

FAMILY_FINDINGS = [
    ("invariant-violation", "wire", "trace_eval"),
    ("column-type-mismatch", "write", "host_group_mappings"),
    ("column-type-mismatch", "write", "port_counters"),
    ("column-type-mismatch", "write", "port_counters"),
    ("missing-column", "write", "array_volumes"),
    ("empty-lookup", "write", "hosts_by_wwpn"),
    ("dangling-reference", "compose", "host_paths"),
    ("unsupported-argument", "choice", "host_paths"),
    ("invariant-violation", "compose", "ticketing-mcp"),
    ("duplicate-execution", "choice", "provision_disk"),
    ("unsupported-claim", "claim", "fc1/3"),
    ("prior-turn-evidence", "claim", "final"),
]


@pytest.fixture(scope="module")
def family_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    recording = tmp_path_factory.mktemp("family") / "recording.otlp.jsonl"
    result = _cli("demo", env={"CONTEXT_INTEGRITY_RECORDING": str(recording)})
    return result, recording


def test_the_family_demo_prints_each_finding_in_one_line(
    family_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, _ = family_run
    assert result.returncode == 0, result.stderr
    printed = []
    for line in result.stdout.splitlines():
        m = re.match(r"- (\S+) @(\S+) on ([^,:\s]+)", line)
        if m:
            printed.append((m.group(1), m.group(2), m.group(3)))
    assert printed == FAMILY_FINDINGS
    assert {kind for kind, _, _ in printed} == set(KINDS)  # every kind the vocabulary names


def test_the_family_ledger_has_every_row_checked_at_least_once(
    family_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, _ = family_run
    rows = {}
    for line in result.stdout.splitlines():
        cells = line.split()
        if len(cells) == 6 and all(cell.isdigit() for cell in cells[2:]):
            rows[(cells[0], cells[1])] = tuple(int(cell) for cell in cells[2:])
    assert list(rows) == [(c.check, c.seam) for c in REGISTERED_CHECKS]
    assert all(checked >= 1 for checked, *_ in rows.values()), rows
    assert "every row of the family was checked at least once." in result.stdout


def test_the_family_recording_round_trips_with_each_finding_on_its_span(
    family_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    (agent_run,) = read_recording(family_run[1]).runs
    assert agent_run.outcome == "ok" and agent_run.never_ran() == []
    spans = {(f.kind, f.seam): f.span_name for f in agent_run.findings}
    assert spans[("duplicate-execution", "choice")].startswith("chat ")
    assert spans[("invariant-violation", "wire")].startswith("chat ")
    assert spans[("unsupported-claim", "claim")].startswith("invoke_agent ")
    assert spans[("missing-column", "write")] == "execute_tool array_volumes"
