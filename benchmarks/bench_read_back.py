"""What ``context-integrity report`` costs, as a ratio to the parse floor, in time and in memory.

A recording of realistic size is generated with the library itself: many runs
of the demo's scripted agent (tool spans with findings and witnesses, run spans,
summaries with their 9-row ledger), written by the recording's own exporter one
batch of about 500 spans a line, as the SDK's batch processor hands them over,
into a temporary directory.

Then, side by side in one process over interleaved rounds (median and min):

- the floor: streaming ``json.loads`` over the same lines (``for line in file``),
  which no reader of OTLP/JSON lines can go below;
- the same parse with the cyclic collector paused around each ``json.loads``, as the
  reader runs it (printed beside, so the collector's share of the gap is visible);
- the report: what the command runs, ``write_report(RecordingStream(path), out)``
  with ``out`` the null device, so the whole report is rendered and written.

Time is the CPU time of one pass (``time.process_time``: on a shared machine the
wall clock mostly measures the neighbours; the reading is single-threaded, so
CPU time is its cost); memory is the ``tracemalloc`` peak of one pass.
Target: <= 1.5x the floor in both. Before the reader streamed, the report took
3.4x the time and 3.8x the memory of the floor on a 148 MB recording.

Run: ``python benchmarks/bench_read_back.py [runs]`` (default 10,000 runs, about 140 MB).
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from _harness import cpu_seconds, peak_bytes
from _workload import write_recording
from context_integrity.recording import RecordingStream
from context_integrity.report import write_report

TARGET = 1.5


def _floor(path: Path) -> None:
    with path.open("rb") as handle:
        for line in handle:
            json.loads(line)


def _floor_paused(path: Path) -> None:
    # The parse as the reader runs it: the cyclic collector paused around each line's json.loads.
    with path.open("rb") as handle:
        for line in handle:
            gc.disable()
            try:
                json.loads(line)
            finally:
                gc.enable()


def _report(path: Path) -> None:
    with open(os.devnull, "w") as out:
        write_report(RecordingStream(path, details=False), out)


def main(runs: int = 10_000, rounds: int = 5) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "recording.otlp.jsonl"
        write_recording(path, runs)
        size = path.stat().st_size
        cases = {"floor": _floor, "paused": _floor_paused, "report": _report}
        times: dict[str, list[float]] = {key: [] for key in cases}
        peaks: dict[str, list[int]] = {key: [] for key in cases}
        for fn in cases.values():  # warm the page cache and every code path
            fn(path)
        for round_number in range(rounds):
            order = list(cases.items()) if round_number % 2 == 0 else list(cases.items())[::-1]
            for key, fn in order:
                times[key].append(cpu_seconds(fn, path))
        for _ in range(2):
            for key in ("floor", "report"):
                peaks[key].append(peak_bytes(cases[key], path))
    floor_t, paused_t, report_t = (statistics.median(times[k]) for k in cases)
    floor_min, paused_min, report_min = (min(times[k]) for k in cases)
    floor_m, report_m = min(peaks["floor"]), min(peaks["report"])
    time_ratio, memory_ratio = report_t / floor_t, report_m / floor_m
    print(f"recording: {runs} demo runs, {size / 1e6:.0f} MB, {rounds} interleaved rounds")
    print(
        f"floor (json.loads per line) : {floor_t:6.2f} s (min {floor_min:.2f}), peak {floor_m / 1e6:6.1f} MB"
    )
    print(f"floor, collector paused     : {paused_t:6.2f} s (min {paused_min:.2f})")
    print(
        f"context-integrity report    : {report_t:6.2f} s (min {report_min:.2f}), peak {report_m / 1e6:6.1f} MB"
    )
    print(
        f"ratio to the floor          : time {time_ratio:.2f}x median, {report_min / floor_min:.2f}x min; "
        f"memory {memory_ratio:.2f}x (target <= {TARGET}x each)"
    )
    print(
        f"ratio to the paused floor   : time {report_t / paused_t:.2f}x median, "
        f"{report_min / paused_min:.2f}x min (the parse as the reader runs it)"
    )
    return time_ratio, memory_ratio


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
