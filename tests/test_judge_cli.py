"""``context-integrity judge``: recorded traces judged under a contracts file, from the command line.

The laws under test:

1. A trace file is judged through the same checks as in process, under the contracts file named, and
   the command says on stderr which file that was (``--contracts``, ``$CONTEXT_INTEGRITY_CONTRACTS``,
   or ``pyproject.toml`` in the working directory, in that order); without one it says nothing is
   declared.
2. Outputs: the text report (each finding, notes, the ledger); ``--format json`` writes one object a
   finding with exactly the documented keys, located on the span it is about; ``--html`` writes the
   page; ``--find`` answers as ``find_context_errors``, with ``--kind`` and ``--limit``.
3. ``--fail-on KIND[,KIND]`` exits 1 exactly when a finding of such a kind was filed, ``any`` when any
   was; a kind that is not one is refused, listing the kinds.
4. Bad usage and unreadable sources exit 2 with one sentence on stderr and no traceback.
5. File claims and ``settles`` work on a foreign trace: rows a tool we never wrapped returned settle the
   facts a JSON answer is compared against, and an agent's own claims apply to its runs only.
6. On a terminal, a large file gets a progress line on stderr; off one, nothing but sentences.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.traces.shapes import (
    QUESTION,
    Trace,
    agent_attributes,
    chat_attributes,
    document,
    message,
    span_id,
    text,
    tool_attributes,
    tool_call,
    tool_definitions,
    tool_response,
    triage_trace,
    write_lines,
)

from context_integrity.cli import main
from context_integrity.cli.judge import FINDING_FIELDS
from context_integrity.contracts.file import CONTRACTS_ENV_VAR
from context_integrity.findings import KINDS

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "context-integrity judge"

TRIAGE_CONTRACTS = """\
[tools.list_hosts]
result_columns = { host = "string", wwpn = "string" }

[tools.host_paths]
arguments_from = ["list_hosts"]
"""


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory of its own, with no contracts file in the environment."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(CONTRACTS_ENV_VAR, raising=False)
    return tmp_path


@pytest.fixture
def triage(workdir: Path) -> tuple[Path, Trace]:
    """A trace whose second tool call makes up its host, and the contracts that arm the check."""
    trace = triage_trace()
    write_lines(workdir / "triage.jsonl", [document(trace.spans)])
    (workdir / "contracts.toml").write_text(TRIAGE_CONTRACTS)
    return workdir / "triage.jsonl", trace


def judge(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["judge", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return status, out, err


# ── 1. the contracts file that applies ───────────────────────────────────


def test_a_trace_file_is_judged_under_the_contracts_named(
    triage: tuple[Path, Trace], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = triage
    status, out, err = judge(capsys, str(path), "--contracts", "contracts.toml")
    assert status == 0
    assert (
        err
        == f"{COMMAND}: declarations from contracts.toml (--contracts): 2 tools, 0 claims contracts, 0 toolsets\n"
    )
    assert "1. unsupported-argument @choice, tool host_paths, call call_2" in out
    assert "read as genai" in out
    assert "summary: 1 run, 1 finding" in out


def test_the_environment_then_the_pyproject_here_name_the_file(
    triage: tuple[Path, Trace], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = triage
    (path.parent / "pyproject.toml").write_text(
        '[project]\nname = "agent"\n\n[tool.context-integrity.tools.list_hosts]\n'
        '[tool.context-integrity.tools.host_paths]\narguments_from = ["list_hosts"]\n'
    )
    status, out, err = judge(capsys, str(path))
    assert "pyproject.toml (pyproject.toml in the working directory): 2 tools" in err
    assert "unsupported-argument" in out
    monkeypatch.setenv(CONTRACTS_ENV_VAR, "contracts.toml")
    status, out, err = judge(capsys, str(path))
    assert f"contracts.toml (${CONTRACTS_ENV_VAR})" in err
    status, out, err = judge(capsys, str(path), "--contracts", "pyproject.toml")
    assert status == 0 and "pyproject.toml (--contracts)" in err


def test_with_no_contracts_file_it_says_nothing_is_declared(
    triage: tuple[Path, Trace], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = triage
    (path.parent / "contracts.toml").unlink()
    status, out, err = judge(capsys, str(path), "--format", "json")
    assert status == 0 and out == ""
    assert "no contracts file" in err and "nothing is declared" in err


# ── 2. outputs ───────────────────────────────────────────────────────────


def test_json_is_one_object_per_finding_located_on_its_span(
    triage: tuple[Path, Trace], capsys: pytest.CaptureFixture[str]
) -> None:
    path, trace = triage
    status, out, _ = judge(capsys, str(path), "--contracts", "contracts.toml", "--format", "json")
    assert status == 0
    (line,) = out.splitlines()
    finding = json.loads(line)
    assert tuple(finding) == FINDING_FIELDS
    chat_spans = [s["spanId"] for s in trace.spans if s["name"].startswith("chat")]
    assert finding == {
        "kind": "unsupported-argument",
        "seam": "choice",
        "tool": "host_paths",
        "call_id": "call_2",
        "predicate": "host",
        "advisory": False,
        "message": finding["message"],
        "trace_id": trace.trace_id,
        "span_id": chat_spans[1],
    }
    assert "esx-99" in finding["message"]


def test_html_writes_the_page_and_find_answers_as_find_context_errors(
    triage: tuple[Path, Trace], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = triage
    status, out, _ = judge(capsys, str(path), "--contracts", "contracts.toml", "--html", "report.html")
    assert status == 0 and out == f"{COMMAND}: wrote report.html\n"
    page = (path.parent / "report.html").read_text()
    assert page.startswith("<!doctype html>") or page.lower().startswith("<!doctype html>")
    assert "unsupported-argument" in page and "esx-99" in page
    status, out, _ = judge(capsys, str(path), "--contracts", "contracts.toml", "--find")
    assert out.startswith("find_context_errors: 1 finding filed across 1 run")
    status, out, _ = judge(
        capsys, str(path), "--contracts", "contracts.toml", "--kind", "column-type-mismatch"
    )
    assert "column-type-mismatch" in out and "unsupported-argument @choice" not in out


def test_json_and_html_together(triage: tuple[Path, Trace], capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = triage
    status, out, _ = judge(
        capsys, str(path), "--contracts", "contracts.toml", "--format", "json", "--html", "r.html"
    )
    assert status == 0 and len(out.splitlines()) == 1 and "esx-99" in (path.parent / "r.html").read_text()


# ── 3. --fail-on ─────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("fail_on", "status"),
    [
        ("unsupported-argument", 1),
        ("column-type-mismatch,unsupported-argument", 1),
        ("column-type-mismatch", 0),
        ("any", 1),
    ],
)
def test_fail_on_exits_one_exactly_when_such_a_finding_was_filed(
    triage: tuple[Path, Trace], capsys: pytest.CaptureFixture[str], fail_on: str, status: int
) -> None:
    path, _ = triage
    assert judge(capsys, str(path), "--contracts", "contracts.toml", "--fail-on", fail_on)[0] == status


def test_fail_on_any_with_nothing_filed_exits_zero(
    triage: tuple[Path, Trace], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = triage
    (path.parent / "contracts.toml").write_text("[tools.list_hosts]\n")
    assert judge(capsys, str(path), "--contracts", "contracts.toml", "--fail-on", "any")[0] == 0


@pytest.mark.parametrize("fail_on", ["bogus", "unsupported-argument,typo", "", "any,unsupported-claim"])
def test_a_kind_that_is_not_one_is_refused_listing_the_kinds(
    triage: tuple[Path, Trace], capsys: pytest.CaptureFixture[str], fail_on: str
) -> None:
    path, _ = triage
    status, out, err = judge(capsys, str(path), "--contracts", "contracts.toml", "--fail-on", fail_on)
    assert status == 2 and out == ""
    (sentence,) = err.strip().splitlines()[-1:]
    assert sentence.startswith(f"{COMMAND}: --fail-on got")
    for kind in KINDS:
        assert kind in sentence


# ── 4. exit 2 ────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["absent.jsonl"], "There is no file at absent.jsonl"),
        (["http://tempo:3200"], "Say which backend"),
        (["triage.jsonl", "--trace-id", "abc"], "is a file"),
        (["triage.jsonl", "--contracts", "absent.toml"], "absent.toml: cannot be read"),
        (["triage.jsonl", "--contracts", "bad.toml"], "tools.t.arguments_fro: is not a key"),
        (["triage.jsonl", "--since", "soon"], "--since 'soon' is not an age"),
        (["triage.jsonl", "--start", "yesterday"], "--start 'yesterday' is not an ISO 8601 time"),
        (["triage.jsonl", "--find", "--format", "json"], "--find answers in text"),
        (["triage.jsonl", "--kind", "bogus"], "--kind got 'bogus'"),
        (["triage.jsonl", "--format", "yaml"], "invalid choice: 'yaml'"),
        (["triage.jsonl", "--bogus"], "unrecognized arguments: --bogus"),
        (["triage.jsonl", "--export", "collector:4318"], "is not a URL"),
        (["triage.jsonl", "--phoenix", "phoenix"], "is not a URL"),
        (["triage.jsonl", "--header", "nonsense"], "is not NAME=VALUE"),
        (["triage.jsonl", "--html", "no/such/dir/r.html"], "could not be written"),
    ],
)
def test_bad_usage_and_unreadable_sources_exit_two_in_one_sentence(
    triage: tuple[Path, Trace], capsys: pytest.CaptureFixture[str], argv: list[str], words: str
) -> None:
    (triage[0].parent / "bad.toml").write_text('[tools.t]\narguments_fro = ["p"]\n')
    try:
        status, out, err = judge(capsys, *argv)
    except SystemExit as exit_:  # argparse's own refusals end the process
        status = int(exit_.code or 0)
        out, err = capsys.readouterr()
    assert status == 2 and out == ""
    said = [
        line
        for line in err.splitlines()
        if "declarations from" not in line and "no contracts file" not in line
    ]
    assert len(said) == 1, err
    assert words in said[0] and said[0].startswith(COMMAND)
    assert "Traceback" not in err


def test_a_directory_and_a_fifo_are_refused_not_waited_on(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.mkfifo(workdir / "pipe")
    for name, words in (("pipe", "not a regular file"), (".", "is a directory")):
        status, _, err = judge(capsys, name)
        assert status == 2 and words in err


# ── 5. claims on a foreign trace ─────────────────────────────────────────

PORTS_CONTRACTS = """\
[tools.port_status]
settles = { entity = "port", facts = ["status"] }

[claims]
status = { entity = "fc1/3", field = "status" }

[agents.auditor.claims]
port_state = { entity = "fc1/3", field = "status" }
"""


def ports_trace(agent: str, answer: dict[str, Any]) -> Trace:
    """An agent that asks a tool nobody wrapped for a port's rows, then answers in JSON."""
    trace = Trace()
    root = span_id()
    offered = tool_definitions("port_status")
    ask = message("user", text("Is fc1/3 healthy?"))
    call = message("assistant", tool_call("call_1", "port_status", {"port": "fc1/3"}))
    rows = [{"port": "fc1/3", "status": "down", "crc_errors": 212}]
    said = json.dumps(answer)
    trace.span("chat test-model", chat_attributes([ask], [call], tools=offered), parent=root)
    trace.span(
        "execute_tool port_status",
        tool_attributes("port_status", "call_1", {"port": "fc1/3"}, rows),
        parent=root,
    )
    result = message("tool", tool_response("call_1", rows))
    trace.span(
        "chat test-model",
        chat_attributes([ask, call, result], [message("assistant", text(said))], tools=offered),
        parent=root,
    )
    trace.span(f"invoke_agent {agent}", agent_attributes(agent, said), parent=None, span=root)
    return trace


def test_rows_a_foreign_tool_returned_settle_the_facts_a_json_answer_claims(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workdir / "contracts.toml").write_text(PORTS_CONTRACTS)
    triage_run = ports_trace("triage", {"status": "healthy"})
    auditor_run = ports_trace("auditor", {"status": "healthy", "port_state": "up"})
    honest_run = ports_trace("triage", {"status": "down"})
    write_lines(workdir / "ports.jsonl", [document(t.spans) for t in (triage_run, auditor_run, honest_run)])
    status, out, _ = judge(capsys, "ports.jsonl", "--contracts", "contracts.toml", "--format", "json")
    assert status == 0
    lines = [json.loads(line) for line in out.splitlines()]
    found = {(line["trace_id"], line["kind"], line["predicate"]) for line in lines}
    assert found == {
        (triage_run.trace_id, "unsupported-claim", "status"),  # the general claims
        (auditor_run.trace_id, "unsupported-claim", "port_state"),  # the auditor's own, in their place
    }
    root_of = {t.trace_id: t.spans[-1]["spanId"] for t in (triage_run, auditor_run)}
    assert all(line["span_id"] == root_of[line["trace_id"]] for line in lines)  # on the run span


# ── 6. progress ──────────────────────────────────────────────────────────


def _run_on_a_terminal(argv: list[str], cwd: Path, *, min_bytes: int) -> tuple[int, bytes]:
    """The command with stderr on a pseudo-terminal, the progress threshold set to ``min_bytes``."""
    code = (
        "import sys; import context_integrity.cli.judge as judge; "
        f"judge.PROGRESS_MIN_BYTES = {min_bytes}; "
        "from context_integrity.cli import main; raise SystemExit(main(sys.argv[1:]))"
    )
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "100"}
    env.pop(CONTRACTS_ENV_VAR, None)
    process = subprocess.Popen(
        [sys.executable, "-c", code, "judge", *argv],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    said = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: the process is done writing
            break
        if not chunk:
            break
        said += chunk
    os.close(leader)
    return process.wait(timeout=120), said


def test_a_large_file_gets_a_progress_bar_on_a_terminal(triage: tuple[Path, Trace]) -> None:
    path, _ = triage
    write_lines(path, [document(triage_trace().spans) for _ in range(40)])
    status, said = _run_on_a_terminal([path.name, "--contracts", "contracts.toml"], path.parent, min_bytes=1)
    assert status == 0
    bar = re.search(rb"\r\[(#*)(\.*)\] +(\d+)% (\d+) runs, (\d+) findings", said)
    assert bar is not None, said
    assert len(bar[1]) + len(bar[2]) >= 10 and 0 <= int(bar[3]) <= 100
    assert said.endswith(b"\r" + b" " * 99 + b"\r")  # the line is cleared before the report follows
    status, said = _run_on_a_terminal(
        [path.name, "--contracts", "contracts.toml"], path.parent, min_bytes=path.stat().st_size + 1
    )
    assert b"\r[" not in said  # a small file is read at once: no bar


def test_a_file_source_says_how_far_it_has_read(triage: tuple[Path, Trace]) -> None:
    from context_integrity.traces.sources import FileSource

    path, _ = triage
    write_lines(path, [document(triage_trace().spans) for _ in range(5)])
    source = FileSource(path)
    assert source.bytes_read() == 0
    seen = [source.bytes_read() for _ in source.items(lambda said: None)]
    assert seen == sorted(seen) and 0 < seen[0] < seen[-1] <= path.stat().st_size
    assert source.bytes_read() == 0  # read to the end and closed


def test_off_a_terminal_stderr_holds_sentences_only(
    triage: tuple[Path, Trace], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import context_integrity.cli.judge as judge_module

    monkeypatch.setattr(judge_module, "PROGRESS_MIN_BYTES", 1)
    path, _ = triage
    _, _, err = judge(capsys, str(path), "--contracts", "contracts.toml")
    assert "\r" not in err


def test_the_command_is_registered_and_documented() -> None:
    from context_integrity.cli import parser

    help_text = parser().format_help()
    assert "judge" in help_text
    done = subprocess.run(
        [sys.executable, "-m", "context_integrity.cli", "judge", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=60,
    )
    assert done.returncode == 0
    for option in ("--contracts", "--format", "--fail-on", "--export", "--phoenix", "--html", "--find"):
        assert option in done.stdout
    assert QUESTION not in done.stdout
