"""Every benchmark under ``benchmarks/``, each in a process of its own, and the whole table at the end.

Each ``bench_*.py`` script measures its contenders side by side over
interleaved rounds in one process and prints its own lines; this runner starts
a fresh interpreter for each script, which calls its ``main()``, and then prints
every ratio beside its target. A process of its own, because a user's process
holds one framework: run in one shared process, a script's figures also carried
every framework the scripts before it imported, instrumented and left in the
heap (pydantic-ai read 1.175x there and 1.094-1.117x alone). A script
returns its measures (``_harness.Measure``), or a ratio already scaled to its
target (a float, or a tuple of them, read against the script's ``TARGET``,
1.0 when it has none), or nothing (its own lines are then its figures).

Run: ``python benchmarks/run_all.py [name ...]`` (names filter the scripts, e.g. ``import column``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import inspect
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _harness import Measure  # noqa: E402

# The order the table is read in: the judge's own cost first, then telemetry, then the integrations.
ORDER = (
    "bench_import",
    "bench_instrumentation",
    "bench_column_types",
    "bench_conversation",
    "bench_summary_span",
    "bench_recording_export",
    "bench_read_back",
)
# What a script's tuple of ratios stands for, where it returns one.
PARTS = {
    "bench_openai_agents": ("the SDK's tracing only", "beside OpenInference"),
    "bench_read_back": ("time", "memory"),
    "bench_pydantic_ai": ("every seam", "columns"),
    "bench_langchain": (
        "columns",
        "every seam",
        "columns, beside OpenInference",
        "every seam, beside OpenInference",
    ),
}
# Arguments for a script whose main() needs one.
ROUNDS_DEFAULT = 5


def _scripts(wanted: Sequence[str]) -> list[str]:
    present = sorted(path.stem for path in HERE.glob("bench_*.py"))
    ordered = [name for name in ORDER if name in present] + [name for name in present if name not in ORDER]
    return [name for name in ordered if not wanted or any(w in name for w in wanted)]


def _rows(name: str, module: object, result: object) -> list[Measure]:
    if isinstance(result, (list, tuple)) and all(isinstance(item, Measure) for item in result):
        return list(result)
    target = float(getattr(module, "TARGET", 1.0))
    if isinstance(result, (int, float)) and not isinstance(result, bool):
        return [Measure(name, float(result), float(result), target, "as the script measured it")]
    if isinstance(result, tuple) and all(isinstance(item, (int, float)) for item in result):
        labels = PARTS.get(name, tuple(str(i) for i in range(len(result))))
        return [
            Measure(f"{name} ({label})", float(value), float(value), target, "as the script measured it")
            for label, value in zip(labels, result, strict=False)
        ]
    return [Measure(name, float("nan"), float("nan"), target, "no ratio returned: see its lines above")]


def _call_main(module: ModuleType) -> object:
    main = module.main
    needed = [p for p in inspect.signature(main).parameters.values() if p.default is inspect.Parameter.empty]
    result = main(*([ROUNDS_DEFAULT] * len(needed)))
    return asyncio.run(result) if inspect.iscoroutine(result) else result  # an async script's main()


# The line a script's process ends with: its measures as JSON, read back by the runner.
_MEASURES_MARK = "run_all measures: "


def _child(name: str) -> None:
    """Run one script in this process and print its measures after its own lines."""
    module = importlib.import_module(name)
    rows = _rows(name, module, _call_main(module))
    print(_MEASURES_MARK + json.dumps([dataclasses.asdict(row) for row in rows]), flush=True)


def _measured(name: str) -> list[Measure] | None:
    """One script in a fresh interpreter: its lines echoed as they come, its measures returned."""
    process = subprocess.Popen(
        [sys.executable, __file__, "--child", name],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    assert process.stdout is not None
    measures: list[Measure] | None = None
    for line in process.stdout:
        if line.startswith(_MEASURES_MARK):
            measures = [Measure(**row) for row in json.loads(line[len(_MEASURES_MARK) :])]
        else:
            print(line, end="", flush=True)
    if process.wait() != 0:
        print(f"{name} failed: exit status {process.returncode}")
        return None
    return measures


def main(argv: Sequence[str] = ()) -> list[Measure]:
    table: list[tuple[str, Measure]] = []
    for name in _scripts(argv):
        print(f"\n== {name} ==", flush=True)
        began = time.perf_counter()
        measures = _measured(name)  # one broken script must not hide the others' figures
        for measure in measures or ():
            table.append((name, measure))
        print(f"({time.perf_counter() - began:.0f} s)")
    print("\n== all measures (ratio: median over interleaved rounds, min in brackets) ==")
    for _, measure in table:
        print(measure.line())
    unmeasured = [m for _, m in table if m.median != m.median]  # NaN: the script returned no ratio
    within = [m for _, m in table if m.met and m.median == m.median]
    print(f"\n{len(within)} of {len(table)} measures within target", end="")
    print(f"; {len(unmeasured)} returned no ratio (see their lines)" if unmeasured else "")
    return [m for _, m in table]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2])
    else:
        main(sys.argv[1:])
