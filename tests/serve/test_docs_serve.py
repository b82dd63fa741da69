"""docs/serve.md agrees with the code: every bound, every metric and every reason it names.

The laws under test: each ``SERVE_*`` constant of ``limits`` has its row in the bounds table, with its
value as the code has it, and the table names no other; each metric the stage serves, and each value
of its ``reason`` labels, is in the metrics table, and the table names no other.
"""

from __future__ import annotations

import re
from pathlib import Path

from context_integrity import limits
from context_integrity.serve import metrics as stage_metrics
from context_integrity.serve.metrics import StageMetrics

DOC = (Path(__file__).resolve().parents[2] / "docs" / "serve.md").read_text()
MIB = 1024 * 1024


def shown(name: str, value: float) -> str:
    """A bound as the table writes it: bytes in MiB, seconds with ``s``, counts with separators."""
    if name.endswith("_BYTES"):
        assert value % MIB == 0, name
        return f"{int(value) // MIB} MiB"
    if name.endswith("_SECONDS"):
        return f"{value:g} s"
    return f"{int(value):,}"


def test_every_bound_is_in_the_table_with_its_value() -> None:
    bounds = {name: getattr(limits, name) for name in dir(limits) if name.startswith("SERVE_")}
    assert len(bounds) > 15
    for name, value in bounds.items():
        assert f"| `{name}` | {shown(name, value)} |" in DOC, name
    table = DOC.split("### Every bound", 1)[1].split("\n## ", 1)[0]
    assert set(re.findall(r"^\| `(SERVE_\w+)`", table, re.M)) == set(bounds)


def test_every_metric_and_reason_is_in_the_table() -> None:
    served = set()
    for family in StageMetrics().registry.collect():
        served.add(f"{family.name}_total" if family.type == "counter" else family.name)
    table = DOC.split("## Its own telemetry", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `(context_integrity_\w+)`", table, re.M))
    assert listed == served
    for reasons in (
        stage_metrics.DROPPED_REASONS,
        stage_metrics.UNJUDGED_REASONS,
        stage_metrics.REFUSED_REASONS,
    ):
        for reason in reasons:
            assert f"`{reason}`" in table, reason
