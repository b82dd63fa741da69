"""docs/judge-traces.md is true: its code runs, and its report is what the command prints.

The laws under test:

- every ``python`` block on the page is fenced to run in a fresh interpreter (each switches an
  instrumentation on, which patches the process), where ``tests/test_docs_examples.py`` runs it;
- the report on the page is what ``context-integrity judge`` prints today: the run it was taken from is
  recorded again (:mod:`tests.traces.recorded_agents`, named in the page's marker comment), written
  beside the page's own contracts file, judged with the page's own command, and the output compared
  with the page line for line, with only the trace and span ids and the times set aside;
- the page names every dialect the detector knows, by its key.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from context_integrity.traces.dialects import DIALECTS

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "judge-traces.md"
MARKER = re.compile(
    r"<!-- regenerated and compared by tests/traces/test_judge_traces_doc.py: (\w+) (\w+) -->"
)
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```$", re.DOTALL | re.MULTILINE)
PROCESS = '{test="process"}'


def blocks(text: str) -> list[tuple[str, str, str, int]]:
    """Each fenced block: its language, the rest of its fence line, its body, where it starts."""
    return [(m.group(1), m.group(2).strip(), m.group(3), m.start()) for m in FENCE.finditer(text)]


PYTHON = [(info, body) for language, info, body, _ in blocks(PAGE.read_text()) if language == "python"]


def test_every_python_block_runs_in_an_interpreter_of_its_own() -> None:
    # tests/test_docs_examples.py runs each block as its fence says; these switch an instrumentation
    # on, which patches the process, so each must be a program of its own.
    for info, body in PYTHON:
        assert info == PROCESS, f"fenced {info!r}, not {PROCESS}:\n{body}"


def test_the_page_has_python_blocks_to_run() -> None:
    assert len(PYTHON) >= 9  # one per instrumentation shown


# The values that differ from one recording of the same run to the next.
_VARYING = [
    (re.compile(r"\b[0-9a-f]{32}\b"), "<trace id>"),
    (re.compile(r"\b[0-9a-f]{16}\b"), "<span id>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"), "<time>"),
    (re.compile(r"took \d+(\.\d+)? s"), "took <seconds> s"),
]


def steady(text: str) -> list[str]:
    for pattern, placeholder in _VARYING:
        text = pattern.sub(placeholder, text)
    return text.rstrip("\n").splitlines()


def test_the_report_on_the_page_is_what_the_command_prints(tmp_path: Path) -> None:
    text = PAGE.read_text()
    marker = MARKER.search(text)
    assert marker is not None, "the page's report has no marker naming the run it was taken from"
    framework, instrumentation = marker.groups()
    found = blocks(text)
    (contracts,) = [body for language, _, body, _ in found if language == "toml"]
    (command,) = [body for language, _, body, _ in found if language == "bash"]
    said, report = (
        body
        for language, _, body, at in found
        if language == "text" and at > text.index("## Judging a recording")
    )
    (tmp_path / "contracts.toml").write_text(contracts)
    argv = shlex.split(command.strip())
    assert argv[:2] == ["context-integrity", "judge"] and argv[2] == "traces.jsonl", argv
    recorded = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.traces.recorded_agents",
            framework,
            instrumentation,
            str(tmp_path / argv[2]),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert recorded.returncode == 0, recorded.stderr[-3000:]
    judged = subprocess.run(
        [sys.executable, "-m", "context_integrity.cli", *argv[1:]],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert judged.returncode == 0, judged.stderr[-3000:]
    assert judged.stderr.splitlines()[:1] == said.splitlines()
    assert steady(judged.stdout) == steady(report)


def test_the_page_names_every_dialect_by_its_key() -> None:
    text = PAGE.read_text()
    for dialect in DIALECTS:
        assert f"`{dialect.key}`" in text, dialect.key
