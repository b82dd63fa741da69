"""What every benchmark here shares: interleaved rounds, paired ratios, one printed row per measure.

A measure is a ratio of two contenders timed side by side in one process: each
round times every contender once, in turn, so a burst of load from elsewhere on
this shared machine lands on all of them rather than on whichever ran last. The
ratio is taken per round and reported as the median and the minimum over rounds.
Samples are CPU time of this process (``time.process_time``): the machine is shared, and
wall time would count the moments another job held the core.
"""

from __future__ import annotations

import gc
import statistics
import time
import timeit
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

A = TypeVar("A")


@dataclass(frozen=True)
class Measure:
    """One row of the table: a ratio against its target (lower is better)."""

    name: str
    median: float
    minimum: float
    target: float
    note: str = ""

    @property
    def met(self) -> bool:
        return self.median <= self.target

    def line(self) -> str:
        verdict = "see above" if self.median != self.median else ("met" if self.met else "MISSED")
        note = f"  {self.note}" if self.note else ""
        return (
            f"{self.name:<58} {self.median:6.2f}x (min {self.minimum:5.2f}x)  "
            f"target <= {self.target:4.2f}x  {verdict}{note}"
        )


def rounds_of(
    cases: Mapping[str, Callable[[], object]], *, rounds: int, number: int
) -> dict[str, list[float]]:
    """Seconds per call of each case, one sample per round, the cases taking turns within a round.

    The order of the turns is reversed every other round, so a steady drift (a neighbour's job
    ramping up) weighs on every case alike instead of always on the last.
    """
    samples: dict[str, list[float]] = {key: [] for key in cases}
    for fn in cases.values():  # warm every path up once
        fn()
    order = list(cases.items())
    for round_ in range(rounds):
        for key, fn in order if round_ % 2 == 0 else reversed(order):
            samples[key].append(timeit.Timer(fn, timer=time.process_time).timeit(number) / number)
    return samples


def ratio(
    name: str,
    numerator: Sequence[float],
    denominator: Sequence[float],
    target: float,
    note: str = "",
) -> Measure:
    """Per-round ratios of two interleaved sample lists, as a measure."""
    ratios = [n / d for n, d in zip(numerator, denominator, strict=True)]
    return Measure(name, statistics.median(ratios), min(ratios), target, note)


def show(measures: Sequence[Measure]) -> list[Measure]:
    for measure in measures:
        print(measure.line())
    return list(measures)


def cpu_seconds(fn: Callable[[A], object], argument: A) -> float:
    """CPU seconds of one ``fn(argument)``, started from a collected heap."""
    gc.collect()
    start = time.process_time()
    fn(argument)
    return time.process_time() - start


def peak_bytes(fn: Callable[[A], object], argument: A) -> int:
    """The ``tracemalloc`` peak of one ``fn(argument)``, started from a collected heap."""
    gc.collect()
    tracemalloc.start()
    try:
        fn(argument)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
