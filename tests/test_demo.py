"""The demo is the main job: it must run on a fresh machine and show the three field failures.

The laws under test: `context-integrity demo` exits 0 with no network; its warn run files the LUN
'' and the quoted-numbers findings and passes the 0.0 GB disk, saying why (the ceiling); its
enforce run hands the model refusal sentences; and its recording round-trips through
`context-integrity report` with both runs, their findings and their ledgers.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from context_integrity import COLUMN_TYPE_CEILING
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
    result = _cli("demo", env={"CONTEXT_INTEGRITY_RECORDING": str(recording)})
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
        tools = sorted({f.tool_name for f in agent_run.findings})
        assert tools == ["host_group_mappings", "port_counters"]
        assert agent_run.ledger is not None
        assert len(agent_run.ledger) == len(REGISTERED_CHECKS)
        mismatch = next(row for row in agent_run.ledger if row["check"] == "column-type-mismatch")
        assert (mismatch["checked"], mismatch["findings"]) == (3, 2)
    report = _cli("report", str(recording), env={})
    assert report.returncode == 0, report.stderr
    assert report.stdout.count("agent storage-triage") == 2
    assert "host_group_mappings" in report.stdout
