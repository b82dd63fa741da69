"""The lint and type gates, as tests, so the one test command is the whole gate.

The laws under test: ruff finds nothing, ruff format would change nothing,
and mypy --strict is clean over the package, the tests, the benchmarks, the examples and the docs'
build hook.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Linted and typed alike: the tests, the benchmarks, the examples and the docs' build hook as strictly
# as the package. mypy
# checks them together in one run under pyproject's [tool.mypy] (module bases src and benchmarks,
# tests/mcp1 excluded).
TARGETS = ["src", "tests", "benchmarks", "examples", "docs/_hooks"]


def _tool(name: str) -> list[str]:
    beside = Path(sys.executable).with_name(name)
    if beside.exists():
        return [str(beside)]
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; it comes with the test extra: pip install -e '.[test]'")
    return [found]


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_check_is_clean() -> None:
    result = _run([*_tool("ruff"), "check", *TARGETS])
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_would_change_nothing() -> None:
    result = _run([*_tool("ruff"), "format", "--check", *TARGETS])
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean() -> None:
    result = _run([*_tool("mypy"), *TARGETS])
    assert result.returncode == 0, result.stdout + result.stderr
