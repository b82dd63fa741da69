"""What ``import context_integrity`` pulls in: nothing heavy that the first call does not need.

Not a timing test (timings live in ``benchmarks/bench_import.py``): it asserts
which modules a fresh interpreter holds after the import, which is what the
import time follows from. pydantic is the one that matters most: defining a
model at import runs its plugin loader, which imports every installed plugin
(logfire among them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from context_integrity.contracts import ColumnDeclaration, NormalizedColumn, normalize_columns

SRC = Path(__file__).resolve().parents[1] / "src"

# Imported lazily, where setup() builds metrics or logs, where a pydantic model is met, or where
# the package version is first read.
KEPT_OFF_THE_IMPORT_PATH = (
    "pydantic",
    "logfire",
    "opentelemetry.sdk.metrics",
    "opentelemetry.sdk._logs",
    "opentelemetry.exporter",
    "importlib.metadata",
    "difflib",
)


def _modules_after(code: str) -> list[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p)
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    return list(json.loads(out.stdout.splitlines()[-1]))


@pytest.mark.parametrize(
    "code",
    [
        "import context_integrity",
        "import context_integrity as ci\nci.setup, ci.tool, ci.run, ci.declare_tool",
    ],
    ids=["import", "first-names"],
)
def test_the_import_leaves_the_heavy_parts_unimported(code: str) -> None:
    loaded = _modules_after(code)
    heavy = [m for m in loaded if any(m == k or m.startswith(k + ".") for k in KEPT_OFF_THE_IMPORT_PATH)]
    assert heavy == []
    if "ci.setup" in code:  # the names really loaded what they name
        assert "context_integrity.telemetry.setup" in loaded


def test_a_pydantic_model_is_still_a_declaration_once_the_host_imports_pydantic() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Row(pydantic.BaseModel):
        lun: int
        note: str | None = None

    assert normalize_columns("t", Row) == (
        NormalizedColumn("lun", "number", False),
        NormalizedColumn("note", "string", True),
    )


def test_column_declaration_validates_like_the_model_it_replaced() -> None:
    assert ColumnDeclaration(type="date", nullable=True) == ColumnDeclaration(type="date", nullable=True)
    with pytest.raises(ValueError, match="not a column type"):
        ColumnDeclaration(type="unknown")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a boolean"):
        ColumnDeclaration(type="string", nullable="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ColumnDeclaration(type="string", default=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        ColumnDeclaration("string")  # type: ignore[misc]
    with pytest.raises(AttributeError):
        ColumnDeclaration(type="string").nullable = True  # type: ignore[misc]
