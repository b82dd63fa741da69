"""Spans the library really writes: demo-like runs through a private SDK provider.

Shared by the telemetry-size and recording benchmarks, so each measures the
spans an instrumented agent produces (tool spans with findings and witnesses,
the run span, the summary span with its 9-row ledger), not a hand-built shape.
"""

from __future__ import annotations

import statistics
import timeit
from collections.abc import Callable, Iterator
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import context_integrity as ci
from context_integrity import demo
from context_integrity.telemetry.export.file_export import OtlpJsonLinesSpanExporter

# Larger than any recording a benchmark writes (10,000 demo runs are about 150 MB).
_NEVER_ROTATED = 1 << 40


def demo_batches(batches: int, runs_per_batch: int, *, mode: str = "warn") -> Iterator[list[ReadableSpan]]:
    """Batches of the spans of ``runs_per_batch`` runs of the demo's scripted agent, in end order."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": demo.AGENT_NAME}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    ci.shutdown()
    ci.setup(tracer_provider=provider, check_column_types=mode)
    try:
        for _ in range(batches):
            for _ in range(runs_per_batch):
                with ci.run(demo.QUESTION, agent_name=demo.AGENT_NAME):
                    for step in demo.SCRIPT:
                        step.tool(**step.arguments)
            yield list(memory.get_finished_spans())
            memory.clear()
    finally:
        ci.shutdown()
        provider.shutdown()


def demo_spans(runs: int, *, mode: str = "warn") -> list[ReadableSpan]:
    """The spans of ``runs`` runs of the demo's scripted agent, in the order they ended."""
    return next(demo_batches(1, runs, mode=mode))


def write_recording(path: Path, runs: int, *, runs_per_batch: int = 100) -> None:
    """A recording of ``runs`` demo runs, written by the library's own exporter one batch a line,
    as the SDK's batch processor hands it over (about 500 spans a line), into one file: it is never
    rotated, which would leave only the records written since the last rotation to read."""
    exporter = OtlpJsonLinesSpanExporter(path, max_bytes=_NEVER_ROTATED)
    for batch in demo_batches(max(runs // runs_per_batch, 1), runs_per_batch):
        exporter.export(batch)
    exporter.shutdown()


def interleaved(
    cases: dict[str, Callable[[], object]],
    *,
    rounds: int,
    number: int,
    between: Callable[[], None] | None = None,
) -> dict[str, tuple[float, float]]:
    """Seconds per call of each case: (median, min) over ``rounds`` rounds, the cases taking turns."""
    samples: dict[str, list[float]] = {key: [] for key in cases}
    for fn in cases.values():  # warm every path up once
        fn()
    for _ in range(rounds):
        for key, fn in cases.items():
            samples[key].append(timeit.timeit(fn, number=number) / number)
            if between is not None:
                between()
    return {key: (statistics.median(values), min(values)) for key, values in samples.items()}
