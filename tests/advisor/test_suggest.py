"""``context-integrity suggest`` end to end: the demo's tools with every declaration removed, run over
scripted runs (tests/advisor/scripted_triage.py), recorded with content and, apart, with only a
profile; suggest proposes the demo's declarations and --retro files the demo's findings."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from context_integrity.contracts.file import parse_contracts
from context_integrity.contracts.tool import ToolContract

AGENT = Path(__file__).with_name("scripted_triage.py")


def _record(path: Path, *options: str) -> Path:
    result = subprocess.run(
        [sys.executable, str(AGENT), str(path), *options], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return path


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    where = tmp_path_factory.mktemp("suggest")
    yield {
        "content": _record(where / "content.jsonl"),
        "profile": _record(where / "profile.jsonl", "--profile"),
    }


def _suggest(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "context_integrity.cli", "suggest", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _tools(toml: str) -> dict[str, ToolContract]:
    return {tool.name: tool for tool in parse_contracts(toml, source="suggest's output").tools}


def _columns(tool: ToolContract) -> dict[str, tuple[str, bool]]:
    return {c.name: (c.type, c.nullable) for c in tool.result_columns or ()}


@pytest.mark.parametrize("kind", ["content", "profile"])
def test_suggest_proposes_the_demos_declarations(recordings: dict[str, Path], kind: str) -> None:
    result = _suggest(str(recordings[kind]))
    assert result.returncode == 0, result.stderr
    tools = _tools(result.stdout)
    assert _columns(tools["host_group_mappings"])["logical_unit_number"] == ("number", False)
    assert _columns(tools["port_counters"]) == {
        "port": ("string", False),
        "frames_per_sec": ("number", False),
        "crc_errors": ("number", False),
    }
    assert tools["host_paths"].arguments_from == ("list_hosts",)
    assert "fabric_logins" in (tools["hosts_by_wwpn"].arguments_from or ())
    # A producer named in arguments_from is declared too.
    assert {"list_hosts", "fabric_logins"} <= set(tools)
    how = (
        "replayed from their content"
        if kind == "content"
        else "from the profile recorded on their summary span"
    )
    assert f"24 run(s) read: 24 {how}" in result.stdout


def test_content_and_profile_propose_the_same_columns_and_producers(recordings: dict[str, Path]) -> None:
    found = [_tools(_suggest(str(recordings[kind])).stdout) for kind in ("content", "profile")]
    assert set(found[0]) == set(found[1])
    for name, tool in found[0].items():
        assert (tool.result_columns, tool.arguments_from) == (
            found[1][name].result_columns,
            found[1][name].arguments_from,
        )
    assert "claims are proposed from content only" in _suggest(str(recordings["profile"])).stdout


def test_a_claim_the_answers_mostly_kept_is_proposed_with_what_settles_it(
    recordings: dict[str, Path],
) -> None:
    result = _suggest(str(recordings["content"]))
    contracts = parse_contracts(result.stdout, source="suggest's output")
    (claims,) = contracts.claims
    assert claims.scope.agent == "storage-triage"
    assert [(c.path, c.entity, c.field) for c in claims.claims] == [("status", "fc1/3", "status")]
    settles = _tools(result.stdout)["port_status"].settles
    assert settles is not None and (settles.entity, tuple(settles.facts)) == ("port", ("status",))
    report = _suggest(str(recordings["content"]), "--format", "report").stdout
    assert "held in 22 of 24 run(s) whose answer had the field" in report


def test_the_report_shows_each_proposals_evidence_and_what_it_arms(recordings: dict[str, Path]) -> None:
    report = _suggest(str(recordings["content"]), "--format", "report").stdout
    assert "host_group_mappings: 96 row(s) over 24 call(s) in 24 run(s)" in report
    assert re.search(
        r"logical_unit_number\s+number\s+\(96 value\(s\)\)\s+mixed: 5 string would have filed", report
    )
    assert "host: served by list_hosts in 21 of 24 value(s) (87%)" in report
    assert (
        "arms column-type-mismatch@write, missing-column@write; needs setup(check_column_types='warn')"
        in report
    )
    assert "'host_group': 24 of 24 values were in a user message" in report


def test_retro_files_the_demos_column_and_grounding_findings(recordings: dict[str, Path]) -> None:
    result = _suggest(str(recordings["content"]), "--format", "report", "--retro")
    assert result.returncode == 0, result.stderr
    filed = set(re.findall(r"\d+\. ([a-z-]+) @(\w+)[^,]*, tool (\w+)", result.stdout))
    assert {
        ("column-type-mismatch", "write", "host_group_mappings"),
        ("column-type-mismatch", "write", "port_counters"),
        ("unsupported-argument", "choice", "host_paths"),
        ("empty-lookup", "write", "hosts_by_wwpn"),
    } <= filed
    # The two runs whose answer called port fc1/3 up while the tool settled it down.
    assert len(re.findall(r"\d+\. unsupported-claim @claim", result.stdout)) == 2
    assert "would have filed 20 finding(s), in 13 run(s)" in result.stdout


def test_retro_over_runs_without_content_says_it_judged_nothing(recordings: dict[str, Path]) -> None:
    """A profile holds no values: judged again, its runs file nothing because nothing could be
    judged, which --retro says rather than reporting them clean."""
    result = _suggest(str(recordings["profile"]), "--format", "report", "--retro")
    assert result.returncode == 0, result.stderr
    assert "None of the 24 run(s) could be judged again" in result.stdout
    assert "capture_content=True" in result.stdout
    # Where content was recorded, the same sentence never appears.
    assert "could be judged again" not in _suggest(str(recordings["content"]), "--retro").stdout


def test_retro_in_a_contracts_file_keeps_the_file_valid(recordings: dict[str, Path]) -> None:
    result = _suggest(str(recordings["content"]), "--retro")
    assert "# Under these declarations" in result.stdout
    assert _tools(result.stdout)  # still a contracts file


def test_the_python_lines_declare_what_the_file_declares(recordings: dict[str, Path]) -> None:
    """Run as written, in a fresh process (the demo declares tools of the same names in this one),
    the lines declare exactly the tools the contracts file does."""
    python = _suggest(str(recordings["content"]), "--format", "python").stdout
    toml = _suggest(str(recordings["content"])).stdout
    dump = (
        "\nfrom context_integrity.contracts.file import Contracts, dump_contracts\n"
        "from context_integrity.telemetry.setup import CONTRACTS\n"
        "print(dump_contracts(Contracts(tools=tuple(CONTRACTS))))\n"
    )
    ran = subprocess.run([sys.executable, "-c", python + dump], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert _tools(ran.stdout) == _tools(toml)


def test_without_content_or_profile_nothing_is_guessed(tmp_path: Path) -> None:
    bare = tmp_path / "bare.jsonl"
    script = (
        "import context_integrity as ci\n"
        f"ci.setup(recording_path={str(bare)!r})\n"
        "with ci.run('q') as run:\n"
        "    run.tool_result('t', 'c1', [{'a': 1}])\n"
        "ci.shutdown()\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, timeout=120)
    result = _suggest(str(bare), "--format", "report")
    assert result.returncode == 0
    assert "1 with neither (no content captured and no profile recorded" in result.stdout
    assert "result_columns" not in result.stdout


def test_an_unreadable_source_exits_2_with_one_sentence(tmp_path: Path) -> None:
    result = _suggest(str(tmp_path / "nowhere.jsonl"))
    assert result.returncode == 2
    assert result.stderr.startswith("context-integrity suggest: ")
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
