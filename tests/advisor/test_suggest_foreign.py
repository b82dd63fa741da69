"""``context-integrity suggest`` on traces a third-party instrumentation recorded, the agent knowing
nothing of this library.

The scripted storage-triage agent of :mod:`tests.traces.recorded_agents` (plain tools, no
declaration anywhere) is played four times in a process of its own under one framework and one
instrumentation, its spans exported to an OTLP/JSON lines file; one recording for each dialect
``judge`` reads (pydantic-ai's own spans, the Agents SDK's, OpenInference's, OpenLLMetry's), and a
framework we have no integration for (smolagents). ``suggest`` runs on the file as a user runs it:

- its contracts file loads with the contracts-file loader and proposes what the runs support: the
  column types every row showed (the counters arrive as quoted strings, so ``string`` is what they
  support; the LUN column is mostly numbers, its ``''`` is what the proposal would file), the
  producer that served the snapshot lookup's volume, no producer for a host the model made up, and
  the repeated disk provisioning listed for the user to judge, never declared;
- ``--retro`` files exactly what ``judge`` files on the same file under the loaded proposals;
- the same trace read from Tempo's HTTP API proposes the same declarations.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.traces.backends import serving, tempo_search, tempo_trace

from context_integrity.advisor.gather import RETRO_DIALS
from context_integrity.contracts.file import Contracts, load_contracts
from context_integrity.judge import ContractBook
from context_integrity.traces import judge_runs, read_runs

ROOT = Path(__file__).resolve().parents[2]
RUNS = 4

# What four runs of the scripted triage support, whichever instrumentation recorded them.
COLUMNS = {
    "list_hosts": {"host": ("string", False), "wwpn": ("string", False)},
    "host_group_mappings": {"host_group": ("string", False), "logical_unit_number": ("number", False)},
    "port_counters": {
        "port": ("string", False),
        "frames_per_sec": ("string", False),
        "crc_errors": ("string", False),
    },
    "array_volumes": {"volume": ("string", False), "size_gb": ("number", False)},
    "host_paths": {"path": ("string", False), "state": ("string", False)},
}
COLUMN_FINDING = ("column-type-mismatch", "write", "host_group_mappings")
EMPTY_LOOKUP = ("empty-lookup", "write", "volume_snapshots")


@dataclass(frozen=True)
class Recording:
    framework: str
    instrumentation: str
    dialect: str
    # What --retro files in each run: the LUN written as '' under the proposed number column, and
    # (where the trace holds the tool's arguments by name) the snapshot lookup that came back empty.
    filed: tuple[tuple[str, str, str], ...] = (COLUMN_FINDING, EMPTY_LOOKUP)

    @property
    def id(self) -> str:
        return f"{self.framework}-{self.instrumentation}"


RECORDINGS = [
    Recording("pydantic_ai", "pydantic_ai", "pydantic_ai"),
    Recording("openai_agents", "logfire", "openai_agents"),
    Recording("openai_agents", "openinference", "openinference"),
    Recording("langchain", "openllmetry", "openllmetry"),
    # OpenInference records a LangChain one-argument tool's input as the bare string: the columns
    # and the model's arguments are read, and the empty lookup (which needs the tool's own
    # arguments by name) is unreachable, as judge says.
    Recording("langchain", "openinference", "openinference", filed=(COLUMN_FINDING,)),
    Recording("smolagents", "openinference", "openinference"),
]


@pytest.fixture(scope="module", params=RECORDINGS, ids=lambda recording: recording.id)
def recorded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Recording, Path]]:
    recording: Recording = request.param
    path = tmp_path_factory.mktemp("foreign") / f"{recording.id}.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.traces.recorded_agents",
            recording.framework,
            recording.instrumentation,
            str(path),
            str(RUNS),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    runs = list(read_runs(path))
    assert len(runs) == RUNS and all(recording.dialect in run.dialects for run in runs)
    yield recording, path


def _suggest(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "context_integrity.cli", "suggest", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done


def _loaded(toml: str, where: Path) -> Contracts:
    saved = where / "contracts.toml"
    saved.write_text(toml, encoding="utf-8")
    return load_contracts(saved)


def _proposed(contracts: Contracts) -> dict[str, Any]:
    return {
        tool.name: {
            "columns": {c.name: (c.type, c.nullable) for c in tool.result_columns or ()},
            "arguments_from": tool.arguments_from,
            "once_per_run": tool.once_per_run,
        }
        for tool in contracts.tools
    }


def test_suggest_proposes_what_the_foreign_runs_support(
    recorded: tuple[Recording, Path], tmp_path: Path
) -> None:
    _, path = recorded
    toml = _suggest(str(path)).stdout
    assert (
        f"# Proposed by `context-integrity suggest` ({RUNS} run(s) read: {RUNS} replayed from their content)."
        in toml
    )
    proposed = _proposed(_loaded(toml, tmp_path))
    assert {
        tool: proposal["columns"] for tool, proposal in proposed.items() if proposal["columns"]
    } == COLUMNS
    assert proposed["volume_snapshots"]["arguments_from"] == ("array_volumes",)
    # The host the model took from its own text was served by nothing: no producer is proposed.
    assert proposed["host_paths"]["arguments_from"] is None
    # Tools that repeat are listed for the user to judge, never declared once-per-run.
    assert not any(proposal["once_per_run"] for proposal in proposed.values())
    assert re.search(
        r"'provision_disk' was called again with the same arguments 4 time\(s\), in 4 run\(s\)\. "
        r"If it has side effects, add once_per_run = true",
        toml,
    )
    report = _suggest(str(path), "--format", "report").stdout
    assert re.search(
        r"logical_unit_number\s+number\s+\(12 value\(s\)\)\s+mixed: 4 string would have filed", report
    )
    assert "volume: served by array_volumes in 4 of 4 value(s) (100%)" in report


def test_retro_files_what_judge_files_under_the_proposals(
    recorded: tuple[Recording, Path], tmp_path: Path
) -> None:
    recording, path = recorded
    book = ContractBook()
    contracts = _loaded(_suggest(str(path)).stdout, tmp_path)
    for contract in contracts.tools:
        book.declare(contract)
    judged = list(judge_runs(read_runs(path), book, RETRO_DIALS))
    expected = Counter((f.finding.kind, f.finding.seam, f.tool_name) for run in judged for f in run.findings)
    assert expected == Counter({finding: RUNS for finding in recording.filed})

    retro = _suggest(str(path), "--format", "report", "--retro").stdout
    filed = Counter(re.findall(r"^\s+\d+\. ([a-z-]+) @(\w+)[^,\n]*, tool (\w+)", retro, re.MULTILINE))
    assert filed == expected
    total = sum(expected.values())
    assert f"{RUNS} run(s) judged again would have filed {total} finding(s), in {RUNS} run(s)" in retro
    if EMPTY_LOOKUP not in recording.filed:  # what could not be judged is said, never counted clean
        assert re.search(
            rf"; {RUNS} check\(s\) could not be judged, in {RUNS} run\(s\) \(the first: the tool's "
            r"arguments: input.value holds the tool's input as text",
            retro,
        )


@pytest.mark.parametrize("recorded", RECORDINGS[:1], ids=lambda recording: recording.id, indirect=True)
def test_suggest_reads_the_foreign_trace_from_tempo(recorded: tuple[Recording, Path]) -> None:
    """The same spans served by Tempo's HTTP API, searched by service: the same proposals."""
    _, path = recorded
    batches: dict[str, list[Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        for batch in json.loads(line)["resourceSpans"]:
            for scope in batch["scopeSpans"]:
                for span in scope["spans"]:
                    batches.setdefault(span["traceId"], []).append(
                        {**batch, "scopeSpans": [{**scope, "spans": [span]}]}
                    )
    by_id = {trace_id: tempo_trace({"resourceSpans": spans}) for trace_id, spans in batches.items()}
    assert len(by_id) == RUNS

    def route(asked: str, query: dict[str, list[str]]) -> tuple[int, object]:
        if asked == "/api/search":
            return 200, tempo_search(list(by_id), "storage-triage")
        wanted = asked.removeprefix("/api/traces/")
        return (200, by_id[wanted]) if wanted in by_id else (404, {"error": "trace not found"})

    with serving(route) as tempo:
        served = _suggest(
            f"tempo+{tempo.url}", "--service", "storage-triage", "--start", "2020-01-01T00:00:00Z"
        ).stdout
    assert [asked for asked, _ in tempo.asked].count("/api/search") == 1
    assert served == _suggest(str(path)).stdout
