"""docs/mcp.md agrees with the code: every python block runs as written, against a real in-process
server and client, and prints what the page says it prints; the caps it quotes are those of
``limits.py``; every telemetry name it quotes is one the library emits.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest
from tests.conftest import Telemetry

from context_integrity import limits
from context_integrity.telemetry.schema import names

if os.environ.get("CI"):
    import fastmcp  # noqa: F401
    import mcp  # noqa: F401
else:
    pytest.importorskip("fastmcp")

PAGE = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
TEXT = PAGE.read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, flags=re.S)


def _printed_lines(block: str) -> list[str]:
    """The block's closing comment lines: what it prints, as the page shows it."""
    lines = block.rstrip("\n").splitlines()
    shown: list[str] = []
    while lines and lines[-1].startswith("# "):
        shown.insert(0, lines.pop()[2:])
    return shown


def test_the_page_has_its_examples() -> None:
    assert len(BLOCKS) == 3 and all(_printed_lines(block) for block in BLOCKS)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_every_python_block_runs_as_written_and_prints_what_the_page_shows(
    telemetry: Telemetry, index: int
) -> None:
    telemetry.configure()  # the block's own ci.setup() then changes the dials, into this pipeline
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(BLOCKS[index], f"{PAGE}:block {index}", "exec"), {"__name__": "__docs__"})
    assert out.getvalue().splitlines() == _printed_lines(BLOCKS[index])


def test_the_caps_it_quotes_are_the_code_s() -> None:
    quoted = dict(re.findall(r"^\| `(MAX_[A-Z_]+)` \| (\d+) \|", TEXT, flags=re.M))
    assert set(quoted) == {
        "MAX_SERVED_COLUMNS",
        "MAX_SERVED_GROUNDS",
        "MAX_SERVED_NAME_CHARS",
        "MAX_SERVED_CONTRACTS",
        "MAX_COLUMN_FINDINGS_PER_KIND",
    }
    for name, value in quoted.items():
        assert getattr(limits, name) == int(value), name


def test_every_telemetry_name_it_quotes_is_emitted() -> None:
    known = {value for value in vars(names).values() if isinstance(value, str)}
    for token in re.findall(r"`(context_integrity\.[a-z_.<>]+)`", TEXT):
        if "<" in token:
            assert token.startswith((names.ROW_PREFIX, names.TOTALS_PREFIX)), token
            continue
        assert token in known or token.startswith(names.TOTALS_PREFIX + "."), token
    assert f"`{names.JUDGED_AT_SERVER}`" in TEXT and f"`{names.UNREACHABLE_EVENT}`" in TEXT
