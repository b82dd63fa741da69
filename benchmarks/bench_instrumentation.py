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


def _floor() -> None:
    """The same 250 type tests as a plain loop: what judging these rows costs at the least."""
    for row in ROWS:
        isinstance(row.get("host_group"), str)
        isinstance(row.get("logical_unit_number"), (int, float))
        isinstance(row.get("online"), bool)
        isinstance(row.get("mapped_at"), dt.date)
        isinstance(row.get("size_gb"), (int, float))


def _median_us(samples: list[float], number: int) -> float:
    return statistics.median(samples) / number * 1e6


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

    # Nothing to judge: the path a call takes with the dial off (or no declaration).
    undeclared = ci.tool(name="host_group_mappings_undeclared")(_fetch)
    cases = {"bare": bare, "warn": decorated, "off": undeclared, "floor": _floor}
    samples: dict[str, list[float]] = {key: [] for key in cases}
    with ci.run("bench", agent_name="bench") as agent_run:
        for fn in cases.values():  # warm up every path
            fn()
        for _ in range(repeat):
            for key, fn in cases.items():
                samples[key].append(min(timeit.repeat(fn, number=number, repeat=1)))
    assert not agent_run.findings, "the benchmark rows must be clean"
    ci.shutdown()
    bare_us, warn_us, off_us, floor_us = (
        _median_us(samples[k], number) for k in ("bare", "warn", "off", "floor")
    )
    ratio = warn_us / bare_us
    print(f"bare SDK span with the GenAI attributes       : {bare_us:7.1f} us per call")
    print(
        f"@ci.tool in a run, nothing to judge           : {off_us:7.1f} us  ({off_us / bare_us:.2f}x the bare span)"
    )
    print(
        f"@ci.tool in a run, warn, 50 clean rows x 5    : {warn_us:7.1f} us  ({ratio:.2f}x the bare span, target <= {TARGET}x)"
    )
    print(f"  of which judging (warn - off)               : {warn_us - off_us:7.1f} us")
    print(
        f"  plain isinstance loop over the same 250 cells: {floor_us:7.1f} us  (judging = {(warn_us - off_us) / floor_us:.2f}x this floor)"
    )
    return ratio


if __name__ == "__main__":
    main()
