"""The command line keeps a person's habits: it says its version, explains each subcommand with an
example, refuses what it cannot honour, and stays quiet when its reader leaves.

The laws under test: ``--version`` prints the installed version; every subcommand's help has a
description and an example that names it; ``--kind`` lists the kinds the vocabulary owns and a bad
one exits 2 naming them all; an option that would be ignored (``--kind`` or ``--limit`` without
``--find``, ``--html`` or ``-v`` beside ``--find``, ``demo --mode`` without ``--only``) exits 2
saying which; a reader that closes the pipe early (``report --find | head -1``, ``report | head``,
``report -v | head``) leaves no traceback, on a real pipe in a real process.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from context_integrity import cli
from context_integrity.cli import _common
from context_integrity.findings import KINDS
from context_integrity.limits import FIND_MAX_LIMIT

ROOT = Path(__file__).resolve().parents[1]
RECORDING = ROOT / "tests" / "data" / "demo_runs.jsonl"


def _cli(*args: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    clean["PYTHONPATH"] = str(ROOT / "src")
    return subprocess.run(
        [sys.executable, "-m", "context_integrity.cli", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=clean,
        timeout=120,
        cwd=ROOT,
    )


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    top = cli.parser()
    (action,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_version_prints_the_installed_version() -> None:
    done = _cli("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"context-integrity {version('context-integrity')}"


def test_every_subcommand_has_a_description_and_an_example() -> None:
    commands = _subparsers()
    assert set(commands) == {module.NAME for module in cli.SUBCOMMANDS}
    for name, sub in commands.items():
        text = sub.format_help()
        assert sub.description, name
        assert " ".join(sub.description.split()[:6]) in " ".join(text.split()), name
        example = text.split("example", 1)
        assert len(example) == 2, f"{name}: no example in its help"
        assert f"context-integrity {name}" in example[1], name


def test_kind_lists_the_kinds_and_a_bad_kind_exits_2_naming_them() -> None:
    help_text = " ".join(_subparsers()["report"].format_help().split())
    for kind in KINDS:
        assert kind in help_text
    done = _cli("report", "--find", "--kind", "not-a-kind", str(RECORDING))
    assert done.returncode == _common.EXIT_USAGE
    assert "not-a-kind" in done.stderr
    for kind in KINDS:
        assert kind in done.stderr
    assert done.stdout == ""


def test_a_good_kind_answers_and_exits_0() -> None:
    done = _cli("report", "--find", "--kind", "column-type-mismatch", str(RECORDING))
    assert done.returncode == 0, done.stderr
    assert "column-type-mismatch" in done.stdout


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("report", "--kind", "missing-column"), "--find"),
        (("report", "--limit", "3"), "--find"),
        (("report", "--find", "--html", "out.html"), "--html"),
        (("report", "--find", "-v"), "--verbose"),
        (("report", "--html", "out.html", "-v"), "--verbose"),
        (("report", "--find", "--limit", "0"), "--limit"),
        (("report", "--find", "--limit", str(FIND_MAX_LIMIT + 1)), "--limit"),
        (("demo", "--mode", "enforce"), "--only"),
    ],
)
def test_an_option_that_would_be_ignored_is_refused(args: tuple[str, ...], named: str) -> None:
    done = _cli(*args, str(RECORDING)) if args[0] == "report" else _cli(*args)
    assert done.returncode == _common.EXIT_USAGE, done.stdout
    assert named in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("mode", [("--find",), (), ("-v",)])
def test_a_reader_gone_before_the_first_line_leaves_no_traceback(mode: tuple[str, ...]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before a byte is written: every write meets EPIPE
    try:
        done = _cli("report", *mode, str(RECORDING), stdout=write_end)
    finally:
        os.close(write_end)
    assert done.returncode == _common.EXIT_OK, done.stderr
    assert done.stderr == ""


@pytest.mark.parametrize("mode", ["--find", "", "-v"])
def test_head_after_report_leaves_no_traceback(mode: str, tmp_path: Path) -> None:
    # Enough runs that the report outgrows the pipe's buffer long after head has its line.
    big = tmp_path / "big.jsonl"
    big.write_text(RECORDING.read_text() * 40)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    clean["PYTHONPATH"] = str(ROOT / "src")
    script = f"set -o pipefail; {sys.executable} -m context_integrity.cli report {mode} {big} | head -1"
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, env=clean, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 1
    assert done.stderr == ""
