"""The pages on the contracts file and on ``judge`` agree with the code, and their examples run.

The laws under test: every python block of ``docs/contracts-file.md`` and ``docs/judge.md`` runs as
written (in a fresh interpreter, no network, no ``OTEL_*`` environment); the refusal the contracts page
prints is the one it shows; every option ``docs/judge.md`` names is one the command takes, and the
JSON keys, the progress threshold and the offline column dial it states are the code's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from context_integrity.cli import parser
from context_integrity.cli.judge import FINDING_FIELDS, OFFLINE_COLUMN_DIAL, PROGRESS_MIN_BYTES

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("contracts-file.md", "judge.md")


def _blocks(page: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", (ROOT / "docs" / page).read_text(), flags=re.S)


def _run(block: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CONTEXT_INTEGRITY_"))}
    env["PYTHONPATH"] = str(ROOT / "src")
    return subprocess.run(
        [sys.executable, "-c", block], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180
    )


@pytest.mark.parametrize(
    ("page", "index"), [(page, i) for page in PAGES for i in range(len(_blocks(page, "python")))]
)
def test_every_python_block_runs_as_written(page: str, index: int, tmp_path: Path) -> None:
    done = _run(_blocks(page, "python")[index], tmp_path)
    assert done.returncode == 0, done.stderr


def test_the_refusal_shown_is_the_one_printed(tmp_path: Path) -> None:
    (first, *_) = _blocks("contracts-file.md", "python")
    (shown, *_) = _blocks("contracts-file.md", "text")
    assert _run(first, tmp_path).stdout == shown


def test_the_judge_page_states_what_the_code_does() -> None:
    page = (ROOT / "docs" / "judge.md").read_text()
    judge = next(
        action.choices["judge"]  # type: ignore[index]
        for action in parser()._actions
        if getattr(action, "choices", None) and "judge" in action.choices  # type: ignore[operator]
    )
    known = {option for action in judge._actions for option in action.option_strings}
    for option in set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", page)):
        assert option in known, option
    keys = re.search(r"one JSON object per finding, one per line: (.*?) \|", page)
    assert keys is not None
    assert tuple(re.findall(r"`(\w+)`", keys[1])) == FINDING_FIELDS
    assert f"({PROGRESS_MIN_BYTES // (1024 * 1024)} MiB or more)" in page
    assert f"the column check starts at `{OFFLINE_COLUMN_DIAL}`" in page
