"""What ``import context_integrity`` costs, as a ratio to ``import opentelemetry.sdk.trace``.

Each sample is a fresh interpreter that times one import from the inside
(``perf_counter`` around the ``import`` statement, so interpreter start-up is
not counted), from compiled bytecode as an installed package imports. The contenders take turns within every round; the ratio is taken
per round. Measured twice: with the environment as it is (logfire installed,
whose pydantic plugin runs when a pydantic model is defined) and with logfire
made unimportable, as on a machine without it. Target: <= 2x in both. The
package's names are imported on first use, so the practical figure is the
second one measured: the import plus the names an application writes first
(``setup``, ``tool``, ``run``, ``declare_tool``), which load the declarations,
the dials and the trace half of telemetry. The judge's registry, the checks and
the run state are not among them: they load when the first run (or tool call
outside one) makes its judge, and that first run pays for them.

The library's own import keeps the SDK's metrics and logs parts, pydantic and
importlib.metadata off the import path; the subprocess also reports whether
any of them was imported anyway.

Run: ``python benchmarks/bench_import.py``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _harness import Measure, ratio, show

TARGET = 2.0
SRC = Path(__file__).resolve().parents[1] / "src"

# Makes logfire unimportable in the child, as if it were not installed.
NO_LOGFIRE = """
import sys
class _Absent:
    def find_spec(self, name, path=None, target=None):
        if name == "logfire" or name.startswith("logfire."):
            raise ModuleNotFoundError(name)
        return None
sys.meta_path.insert(0, _Absent())
"""

# What an application's first lines load: the package, and the names it then writes.
SURFACE = "import context_integrity as ci\nci.setup, ci.tool, ci.run, ci.declare_tool"

TIMED = """
import sys, time
t = time.perf_counter()
{statement}
elapsed = time.perf_counter() - t
heavy = [m for m in ("pydantic", "logfire", "opentelemetry.sdk.metrics", "opentelemetry.sdk._logs",
                     "importlib.metadata") if m in sys.modules]
print(elapsed, ",".join(heavy))
"""


def _sample(statement: str, *, without_logfire: bool, pycache: str) -> tuple[float, str]:
    code = (NO_LOGFIRE if without_logfire else "") + TIMED.format(statement=statement)
    env = dict(os.environ)
    # An installed package imports from compiled bytecode; a machine that says not to write it
    # would otherwise time the compiler. The bytecode goes to a scratch tree, not the checkout.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = pycache
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout.split()
    return float(out[0]), (out[1] if len(out) > 1 else "")


def main(rounds: int = 9) -> list[Measure]:
    with tempfile.TemporaryDirectory(prefix="ci-bench-pycache-") as pycache:
        return _measure(rounds, pycache)


def _measure(rounds: int, pycache: str) -> list[Measure]:
    measures: list[Measure] = []
    contenders = {
        "import context_integrity": "import context_integrity",
        "import + setup/tool/run/declare_tool": SURFACE,
    }
    sdk = "import opentelemetry.sdk.trace"
    for without_logfire in (False, True):
        label = "without logfire" if without_logfire else "with logfire installed"
        for code in (*contenders.values(), sdk):  # compile once, warm the file cache
            _sample(code, without_logfire=without_logfire, pycache=pycache)
        for name, code in contenders.items():
            ours: list[float] = []
            theirs: list[float] = []
            heavy = ""
            for _ in range(rounds):
                seconds, heavy = _sample(code, without_logfire=without_logfire, pycache=pycache)
                ours.append(seconds)
                theirs.append(_sample(sdk, without_logfire=without_logfire, pycache=pycache)[0])
            note = f"{statistics.median(ours) * 1e3:.0f} ms; heavy parts imported: {heavy or 'none'}"
            measures.append(ratio(f"{name} / sdk.trace, {label}", ours, theirs, TARGET, note))
    return show(measures)


if __name__ == "__main__":
    main()
