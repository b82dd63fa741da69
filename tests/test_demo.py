"""The demo is the main job: it must run on a fresh machine and show what the checks catch.

The laws under test: `context-integrity demo --only column-types` exits 0 with no network; its warn
run files the LUN '' and the quoted-numbers findings and passes the 0.0 GB disk, saying why (the
ceiling); its enforce run hands the model refusal sentences; and its recording round-trips through
`context-integrity report` with both runs, their findings and their ledgers. `context-integrity demo`
tells the whole family's story in one run: it says the agent is scripted to break once per check and
keys the seams; every built check files its finding once, each printed whole (``--brief``: one whole
sentence a line); the header's count and the ledger's are reconciled out loud; every ledger row is
checked at least once and none is unreachable; where the traces went is said once; its recording
round-trips too, and its report says each ceiling once.
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
from context_integrity.findings import KINDS, SEAM_MEANINGS
from context_integrity.judge import REGISTERED_CHECKS
from context_integrity.judge.registry import REGISTRY
from context_integrity.recording import read_recording
from context_integrity.report.text import split_ceiling

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
    assert (result.stdout + result.stderr).count(str(recording)) == 2  # one sentence: where, and how to read
    assert f"context-integrity report {recording}" in " ".join(result.stdout.split())


def test_warn_then_enforce_each_file_the_two_field_failures(
    demo_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    out = demo_run[0].stdout
    warn, enforce = out.split("== run in 'warn' mode", 1)[1].split("== run in 'enforce' mode", 1)
    for section in (warn, enforce):
        assert "column-type-mismatch @write on host_group_mappings [logical_unit_number]" in section
        assert "column-type-mismatch @write on port_counters [frames_per_sec]" in section
        assert "vm_disk_capacity" not in section.split("  ledger")[0]
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


@pytest.fixture(scope="module")
def brief_run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    recording = tmp_path_factory.mktemp("brief") / "recording.otlp.jsonl"
    return _cli("demo", "--brief", env={"CONTEXT_INTEGRITY_RECORDING": str(recording)})


def _flat(text: str) -> str:
    return " ".join(text.split())


def _printed_findings(out: str) -> list[tuple[str, str, str]]:
    printed = []
    for line in out.splitlines():
        m = re.match(r"\s*\d+\. (\S+) @(\S+) on ([^,:\s]+)", line)
        if m:
            printed.append((m.group(1), m.group(2), m.group(3)))
    return printed


def test_the_family_demo_says_it_breaks_on_purpose_and_keys_the_seams(
    family_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, _ = family_run
    assert result.returncode == 0, result.stderr
    intro = _flat(result.stdout.split("==", 1)[0])
    assert "scripted to break once per check" in intro
    for seam, meaning in SEAM_MEANINGS.items():
        assert f"@{seam} {meaning}" in intro


def test_the_family_demo_prints_each_finding_whole(
    family_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, recording = family_run
    assert _printed_findings(result.stdout) == FAMILY_FINDINGS
    assert {kind for kind, _, _ in FAMILY_FINDINGS} == set(KINDS)  # every kind the vocabulary names
    out = _flat(result.stdout)
    (agent_run,) = read_recording(recording).runs
    for finding in agent_run.findings:
        body, ceiling = split_ceiling(finding.message or "", finding.kind, finding.seam)
        assert _flat(body) in out  # whole, not cut
        assert "…" not in body
        if ceiling:
            assert out.count(_flat(ceiling)) == 1  # each ceiling said once, not in every finding


def test_brief_prints_one_whole_sentence_a_finding(
    brief_run: subprocess.CompletedProcess[str],
) -> None:
    assert brief_run.returncode == 0, brief_run.stderr
    assert _printed_findings(brief_run.stdout) == FAMILY_FINDINGS
    lines = [line for line in brief_run.stdout.splitlines() if re.match(r"\s*\d+\. \S+ @", line)]
    for line in lines:
        assert line.rstrip().endswith("."), line  # the sentence is whole
        assert "…" not in line


def _ledger_rows(out: str) -> dict[tuple[str, str], dict[str, int]]:
    table = out.split("ledger", 1)[1]
    header: list[str] = []
    rows: dict[tuple[str, str], dict[str, int]] = {}
    for line in table.splitlines():
        cells = line.split()
        if cells[:2] == ["check", "seam"]:
            header = cells[2:]
        elif header and len(cells) == 2 + len(header) and all(cell.isdigit() for cell in cells[2:]):
            rows[(cells[0], cells[1])] = dict(zip(header, map(int, cells[2:]), strict=True))
    return rows


def test_the_family_ledger_is_every_row_checked_and_none_unreachable(
    family_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, _ = family_run
    rows = _ledger_rows(result.stdout)
    assert list(rows) == [(c.check, c.seam) for c in REGISTERED_CHECKS]
    assert all(row["checked"] >= 1 for row in rows.values()), rows
    assert all(row["unreachable"] == 0 for row in rows.values()), rows
    assert "every row was checked at least once, and none was unreachable" in _flat(result.stdout)


def test_the_family_counts_reconcile_out_loud(
    family_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, _ = family_run
    header = re.search(r"== the whole family, one run \(trace \w+\) — (\d+) findings", result.stdout)
    assert header is not None
    filed = int(header.group(1))
    assert filed == len(FAMILY_FINDINGS)
    rows = _ledger_rows(result.stdout)
    assert sum(row["filed"] for row in rows.values()) == filed
    encounters = sum(row["findings"] for row in rows.values())
    assert encounters != filed  # the demo's story makes them differ, so the sentence must say why
    said = _flat(result.stdout)
    assert f"adds up to {encounters}" in said and f"adds up to the {filed}" in said
    assert "encounter" in said


def test_the_family_demo_says_where_the_traces_went_once(
    family_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, recording = family_run
    both = result.stdout + result.stderr
    assert both.count(str(recording)) == 2, both  # where they are, and the command that reads them
    (sentence,) = [s for s in _flat(result.stdout).split(". ") if str(recording) in s]
    assert f"read them back with `context-integrity report {recording}`" in sentence


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


def test_the_family_report_says_each_ceiling_once_and_none_on_missing_column(
    family_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    recording = family_run[1]
    (agent_run,) = read_recording(recording).runs
    (missing,) = [f for f in agent_run.findings if f.kind == "missing-column"]
    assert COLUMN_TYPE_CEILING not in (missing.message or "")  # it does not apply there
    report = _cli("report", str(recording), env={})
    assert report.returncode == 0, report.stderr
    out = _flat(report.stdout)
    for entry in REGISTRY:
        assert out.count(_flat(entry.ceiling)) == 1, entry.name
