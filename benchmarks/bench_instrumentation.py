"""What a decorated tool call costs, as a ratio to a bare OpenTelemetry span.

Side by side, in one process, interleaved: a ``@ci.tool`` call inside an open
run (the ``execute_tool`` span, the judge, a clean 50-row result checked
against a 5-column declaration) against a bare SDK span carrying the same GenAI
attributes around the same function. Both spans go through the same SDK
``TracerProvider`` with the same exporting processor, so what the ratio
measures is the library's own work on the call path. Target: <= 1.5x.

Run: ``python benchmarks/bench_instrumentation.py``.
"""

from __future__ import annotations

import datetime as dt
import statistics
import timeit
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind

import context_integrity as ci
from context_integrity.telemetry import names

ROWS = [
    {
        "host_group": f"vdi-{i % 7}",
        "logical_unit_number": i,
        "online": i % 3 == 0,
        "mapped_at": dt.date(2026, 1, 1 + i % 28),
        "size_gb": 10.5 + i,
    }
    for i in range(50)
]
COLUMNS = {
    "host_group": "string",
    "logical_unit_number": "number",
    "online": "boolean",
    "mapped_at": "date",
    "size_gb": "number",
}
TARGET = 1.5


class _Discard(SpanExporter):
    """An exporter that keeps nothing, so neither side pays for storage."""

    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _fetch() -> list[dict[str, Any]]:
    return ROWS


def main(repeat: int = 9, number: int = 2000) -> float:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Discard()))
    ci.shutdown()
    ci.setup(tracer_provider=provider, check_column_types="warn")
    tracer = provider.get_tracer("bench")
    decorated = ci.tool(result_columns=COLUMNS, name="host_group_mappings")(_fetch)
    attributes = {
        names.GEN_AI_OPERATION_NAME: names.OPERATION_EXECUTE_TOOL,
        names.GEN_AI_TOOL_NAME: "host_group_mappings",
        names.GEN_AI_TOOL_CALL_ID: "call-1",
        names.GEN_AI_TOOL_TYPE: names.TOOL_TYPE_FUNCTION,
    }

    def bare() -> None:
        with tracer.start_as_current_span(
            "execute_tool host_group_mappings", kind=SpanKind.INTERNAL, attributes=attributes
        ):
            _fetch()

    def ours() -> None:
        decorated()

    ours_times: list[float] = []
    bare_times: list[float] = []
    with ci.run("bench", agent_name="bench") as agent_run:
        ours()  # warm up both paths
        bare()
        for _ in range(repeat):
            bare_times.append(min(timeit.repeat(bare, number=number, repeat=1)))
            ours_times.append(min(timeit.repeat(ours, number=number, repeat=1)))
    assert not agent_run.findings, "the benchmark rows must be clean"
    ci.shutdown()
    bare_median = statistics.median(bare_times) / number
    ours_median = statistics.median(ours_times) / number
    ratio = ours_median / bare_median
    print(f"bare SDK span with GenAI attributes : {bare_median * 1e6:8.1f} us per call")
    print(f"@ci.tool in a run, 50 clean rows    : {ours_median * 1e6:8.1f} us per call")
    print(f"ratio (ours / bare span)            : {ratio:8.2f}x   (target <= {TARGET}x)")
    return ratio


if __name__ == "__main__":
    main()
