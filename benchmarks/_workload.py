"""Spans the library really writes: demo-like runs through a private SDK provider.

Shared by the telemetry-size and recording benchmarks, so each measures the
spans an instrumented agent produces (tool spans with findings and witnesses,
the run span, the summary span with its 9-row ledger), not a hand-built shape.
"""

from __future__ import annotations

import statistics
import timeit
from collections.abc import Callable

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import context_integrity as ci
from context_integrity import demo


def demo_spans(runs: int, *, mode: str = "warn") -> list[ReadableSpan]:
    """The spans of ``runs`` runs of the demo's scripted agent, in the order they ended."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": demo.AGENT_NAME}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    ci.shutdown()
    ci.setup(tracer_provider=provider, check_column_types=mode)
    for _ in range(runs):
        with ci.run(demo.QUESTION, agent_name=demo.AGENT_NAME):
            for step in demo.SCRIPT:
                step.tool(**step.arguments)
    ci.shutdown()
    provider.shutdown()
    return list(memory.get_finished_spans())


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
