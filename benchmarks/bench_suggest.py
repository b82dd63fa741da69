"""What ``context-integrity suggest`` costs against ``judge`` on the same recording, in time and memory.

The recording: the demo's storage-triage tools with every declaration removed, run over scripted runs
through the hand-written loop with content capture (``tests/advisor/scripted_triage.py``, run as a
script), N runs (default 10,000) in one file.

Side by side in one process over interleaved rounds (median and min of the per-round ratio):

- judge: every run read (``read_runs``) and judged (``judge_runs``) under the declarations suggest
  proposes for this very file, with every declaration-armed check on (what ``judge`` runs);
- suggest: every run read and its evidence gathered (``gather``: each run replayed with profiling
  on, and its claims evidence), then the proposals made (what ``suggest`` runs).

Target: suggest <= 2.0x judge. Memory: the ``tracemalloc`` peak of one suggest pass over N/10 runs
and over N runs, which must stay flat in the number of runs (target <= 1.5x for ten times the runs).

Run: ``python benchmarks/bench_suggest.py [runs] [rounds]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import Measure, peak_bytes, ratio, rounds_of, show
from context_integrity.advisor.gather import RETRO_DIALS, gather, proposed_book
from context_integrity.advisor.proposals import Proposals, propose
from context_integrity.advisor.render import proposed_contracts
from context_integrity.judge import ContractBook
from context_integrity.telemetry.export.recording_file import RECORDING_MAX_BYTES_ENV_VAR
from context_integrity.traces import judge_runs, read_runs

TARGET = 2.0
MEMORY_TARGET = 1.5
AGENT = Path(__file__).resolve().parents[1] / "tests" / "advisor" / "scripted_triage.py"
# Large enough for 10,000 runs of the scripted agent in one file (about 16 KB a run).
_WHOLE_RECORDING_BYTES = 4 * 1024**3


def _record(path: Path, runs: int) -> None:
    """Record ``runs`` runs in one file: the recording rotates at 64 MiB (past it only the newest runs
    would be measured), so the benchmark raises its rotation size to hold them all."""
    subprocess.run(
        [sys.executable, str(AGENT), str(path), "--runs", str(runs)],
        check=True,
        capture_output=True,
        env={**os.environ, RECORDING_MAX_BYTES_ENV_VAR: str(_WHOLE_RECORDING_BYTES)},
    )


def _suggest(path: Path) -> Proposals:
    evidence = gather(read_runs(path))
    return propose(evidence.profile, evidence.claims.proposals())


def _judge(path: Path, book: ContractBook) -> int:
    findings = 0
    for judged in judge_runs(read_runs(path), book, RETRO_DIALS):
        findings += len(judged.findings)
    return findings


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as where:
        big, small = Path(where) / "runs.jsonl", Path(where) / "tenth.jsonl"
        started = time.monotonic()
        _record(big, runs)
        _record(small, max(runs // 10, 1))
        print(
            f"recording: {runs:,} runs, {big.stat().st_size / 1e6:.1f} MB "
            f"(made in {time.monotonic() - started:.0f} s); the tenth: {small.stat().st_size / 1e6:.1f} MB"
        )
        proposals = _suggest(big)
        if proposals.runs != runs:
            raise SystemExit(f"the recording holds {proposals.runs:,} runs, not {runs:,}: nothing measured")
        book = proposed_book(proposals)
        contracts = proposed_contracts(proposals)
        print(f"proposed: {len(contracts.tools)} tools, {len(contracts.claims)} claims contract(s)")
        samples = rounds_of(
            {"judge": lambda: _judge(big, book), "suggest": lambda: _suggest(big)}, rounds=rounds, number=1
        )
        print(
            f"per pass: judge {min(samples['judge']):.1f} s, suggest {min(samples['suggest']):.1f} s "
            f"(CPU, best of {rounds})"
        )
        small_peak = peak_bytes(_suggest, small)
        big_peak = peak_bytes(_suggest, big)
        print(
            f"suggest peak memory: {small_peak / 1e6:.1f} MB for {runs // 10:,} runs, {big_peak / 1e6:.1f} MB for {runs:,}"
        )
        show(
            [
                ratio(
                    "suggest / judge, same recording (CPU per pass)",
                    samples["suggest"],
                    samples["judge"],
                    TARGET,
                ),
                Measure(
                    f"suggest peak memory, {runs:,} / {runs // 10:,} runs",
                    big_peak / small_peak,
                    big_peak / small_peak,
                    MEMORY_TARGET,
                ),
            ]
        )


if __name__ == "__main__":
    main()
