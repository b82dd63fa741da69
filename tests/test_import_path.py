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

# Imported lazily, where setup() builds metrics or logs, where a pydantic model is met, where
# the package version is first read, or where a contracts file is read.
KEPT_OFF_THE_IMPORT_PATH = (
    "pydantic",
    "logfire",
    "opentelemetry.sdk.metrics",
    "opentelemetry.sdk._logs",
    "opentelemetry.exporter",
    "importlib.metadata",
    "difflib",
    "context_integrity.contracts.file",
    "tomllib",
)


# What ``setup``, ``tool``, ``run`` and ``declare_tool`` leave to the first run that makes a judge.
JUDGED_AT_THE_FIRST_RUN = (
    "context_integrity.judge.registry",
    "context_integrity.judge.seams",
    "context_integrity.judge.state",
    "context_integrity.checks",
    "context_integrity.loop",
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
    # The judge's registry, its checks and the run state wait for the first run (next test).
    assert [m for m in loaded if m.startswith(JUDGED_AT_THE_FIRST_RUN)] == []


def test_the_first_run_loads_the_checks_and_judges() -> None:
    """A run opened in a fresh interpreter imports the registry itself, then judges as ever.

    A run that failed to make its judge would go unjudged without raising (it must not break the
    host), so only a fresh interpreter can show the lazy load works: here the run refuses bad rows.
    """
    code = (
        "import context_integrity as ci\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "ci.setup(tracer_provider=TracerProvider(), instrument=(), check_column_types='enforce')\n"
        "ci.declare_tool('luns', result_columns={'lun': 'number'})\n"
        "with ci.run('q') as agent_run:\n"
        "    delivered = agent_run.tool_result('luns', 'c1', [{'lun': ''}])\n"
        "assert delivered.startswith('Result rejected'), delivered\n"
        "assert [f.kind for f in agent_run.findings] == ['column-type-mismatch'], agent_run.findings\n"
        "ci.shutdown()"
    )
    loaded = _modules_after(code)
    assert {"context_integrity.judge.registry", "context_integrity.checks.column_types"} <= set(loaded)


def test_a_pydantic_model_is_still_a_declaration_once_the_host_imports_pydantic() -> None:
    pytest.importorskip("pydantic")
    from pydantic import BaseModel  # imported by the importorskip above; named here for its type

    class Row(BaseModel):
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
        ColumnDeclaration("string")  # type: ignore[call-arg]
    with pytest.raises(AttributeError):
        ColumnDeclaration(type="string").nullable = True  # type: ignore[misc]
