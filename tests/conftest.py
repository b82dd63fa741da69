"""Shared fixtures: a real OpenTelemetry SDK pipeline held in memory, per test."""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import context_integrity as ci
from context_integrity.telemetry.schema import names
from context_integrity.telemetry.setup import CONTRACTS

DOCS = Path(__file__).resolve().parents[1] / "docs"


def docs_example(page: str) -> str:
    """The first ``python`` block of a docs page (``frameworks/pydantic-ai.md``): the example a reader
    of that page copies first."""
    text = (DOCS / page).read_text(encoding="utf-8")
    return str(re.findall(r"```python\n(.*?)```", text, flags=re.S)[0])


def run_docs_example(page: str, telemetry: Telemetry) -> dict[str, Any]:
    """Runs that example as it stands, its own ``ci.setup()`` included, into ``telemetry``'s
    pipeline: set up first, so the example's setup changes the dials and keeps the test's exporter
    (as a second ``setup()`` does), and no provider of the example's outlives the test. Returns
    the names the example defined."""
    telemetry.configure()
    scope: dict[str, Any] = {}
    exec(compile(docs_example(page), str(DOCS / page), "exec"), scope)
    return scope


def _mcp_major() -> int | None:
    try:
        return int(importlib.metadata.version("mcp").split(".")[0])
    except Exception:
        return None


# LangChain's MCP adapter requires the MCP SDK's 1.x line, which cannot be installed beside the 2.x
# line the rest of the suite uses: tests/mcp1 is collected only where mcp 1.x is installed, and
# .ci/run runs it there, in a second environment (never a skip in the main one).
collect_ignore = [] if _mcp_major() == 1 else ["mcp1"]


@dataclass
class Telemetry:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    provider: TracerProvider
    meter_provider: MeterProvider
    configure: Callable[..., ci.Instrumentation]

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.finished() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"expected one span {name!r}, got {[s.name for s in self.finished()]}"
        return found[0]

    def summaries(self) -> list[ReadableSpan]:
        return self.named(names.DISPOSITION_SPAN)

    def findings_metric(self) -> list[tuple[dict[str, Any], int]]:
        data = self.metrics.get_metrics_data()
        points: list[tuple[dict[str, Any], int]] = []
        if data is None:
            return points
        for resource_metrics in data.resource_metrics:
            for scope in resource_metrics.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == names.FINDINGS_METRIC:
                        for point in metric.data.data_points:
                            assert isinstance(point, NumberDataPoint)  # the findings counter's points
                            points.append((dict(point.attributes or {}), int(point.value)))
        return points


@pytest.fixture
def isolated_contracts() -> Iterator[None]:
    """Tools, claims and toolsets declared during a test are forgotten after it, and any it replaced
    put back (the book is process-wide)."""
    before = CONTRACTS.snapshot()
    yield
    CONTRACTS.restore(before)


@pytest.fixture
def telemetry(isolated_contracts: None) -> Iterator[Telemetry]:
    ci.shutdown()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])

    def configure(**dials: Any) -> ci.Instrumentation:
        return ci.setup(tracer_provider=provider, meter_provider=meter_provider, **dials)

    yield Telemetry(exporter, reader, provider, meter_provider, configure)
    ci.shutdown()
