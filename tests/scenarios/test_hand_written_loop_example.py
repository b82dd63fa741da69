"""The documented hand-written loop runs as shipped, and the document shows exactly that file.

The laws under test:
(a) ``examples/hand_written_loop.py`` runs as a subprocess (no network, no key), exits 0, and
    prints its four findings and one ledger row per registered check;
(b) what it recorded reads back: one run, each finding on the span the protocol puts it on
    (empty-lookup on the framework tool's ``execute_tool`` span, the compose and choice findings
    on ``chat`` spans), and the summary ledger;
(c) the docs page on the loop protocol shows exactly this file (it includes it at build time,
    so the two cannot drift) and links the pages that quote each grounding check's ceiling.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from context_integrity.judge import REGISTERED_CHECKS
from context_integrity.recording import read_recording
from context_integrity.telemetry.schema import names

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "hand_written_loop.py"
DOC = ROOT / "docs" / "frameworks" / "loop.md"
EXPECTED_FINDINGS = [
    ("empty-lookup", "write", ("hosts_by_wwpn", "list_hosts")),
    ("dangling-reference", "compose", ("host_paths", "list_hosts")),
    ("dangling-reference", "compose", ("hosts_by_wwpn", "list_hosts")),
    ("unsupported-argument", "choice", ("host_paths",)),
]


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    recording = tmp_path_factory.mktemp("example") / "recording.otlp.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env["CONTEXT_INTEGRITY_RECORDING"] = str(recording)
    result = subprocess.run(
        [sys.executable, str(EXAMPLE)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    return result, recording


def test_the_example_runs_and_prints_its_findings(ran: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    result, recording = ran
    assert result.returncode == 0, result.stderr
    headline = re.compile(r"^- (?P<kind>\S+) @(?P<seam>\S+) \[(?P<tools>[^\]]*)\]")
    printed = [
        (m["kind"], m["seam"], tuple(m["tools"].split(", ")))
        for m in map(headline.match, result.stdout.splitlines())
        if m is not None
    ]
    assert printed == EXPECTED_FINDINGS
    assert f"{len(EXPECTED_FINDINGS)} finding(s)" in result.stdout
    assert str(recording) in result.stdout


def test_the_example_prints_one_ledger_row_per_registered_check(
    ran: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, _ = ran
    rows: dict[tuple[str, str], tuple[int, ...]] = {}
    for line in result.stdout.splitlines():
        cells = line.split()
        if len(cells) == 6 and all(cell.isdigit() for cell in cells[2:]):
            rows[(cells[0], cells[1])] = tuple(int(cell) for cell in cells[2:])
    assert list(rows) == [(c.check, c.seam) for c in REGISTERED_CHECKS]
    # (checked, findings, not-applicable, unreachable)
    assert rows[("dangling-reference", "compose")] == (2, 2, 3, 0)
    assert rows[("unsupported-argument", "choice")] == (2, 1, 3, 0)
    assert rows[("empty-lookup", "write")] == (2, 1, 2, 0)


def test_what_the_example_recorded_reads_back_with_each_finding_on_its_span(
    ran: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, recording = ran
    assert result.returncode == 0, result.stderr
    (run,) = read_recording(recording).runs
    assert run.agent == "fabric-triage"
    placed = sorted((f.kind, f.span_name, f.tool_name or "", f.call_id or "") for f in run.findings)
    chat = names.chat_span_name("scripted-model")
    assert placed == [
        ("dangling-reference", chat, "host_paths", ""),
        ("dangling-reference", chat, "hosts_by_wwpn", ""),
        ("empty-lookup", names.tool_span_name("hosts_by_wwpn"), "hosts_by_wwpn", "call-2"),
        ("unsupported-argument", chat, "host_paths", "call-4"),
    ]
    assert run.ledger is not None and len(run.ledger) == len(REGISTERED_CHECKS)
    assert run.outcome == "ok" and run.never_ran() == []


def test_the_document_shows_the_example_and_links_the_ceilings() -> None:
    document = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```python[^\n]*\n(.*?)```", document, flags=re.DOTALL)
    assert f'--8<-- "{EXAMPLE.relative_to(ROOT)}"\n' in blocks
    for page in ("dangling-reference", "unsupported-argument", "empty-lookup"):
        assert f"../checks/{page}.md" in document
        assert "<!-- ceiling:" in (ROOT / "docs" / "checks" / f"{page}.md").read_text(encoding="utf-8")
