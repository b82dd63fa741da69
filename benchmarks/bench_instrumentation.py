"""What a decorated tool call costs, next to a bare OpenTelemetry span and the least a type check can do.

Side by side, in one process, over interleaved rounds (median and min of the
per-round ratios): a ``@ci.tool`` call inside an open run (its
``execute_tool`` span, the judge, a clean result checked against a 5-column
declaration) against a bare SDK span carrying the same GenAI attributes around
the same function. Both spans go through the same SDK ``TracerProvider`` with
the same discarding exporter, so the ratio measures the library's own work.

* **1 row**: decorated / bare span. Target: <= 1.5x.
* **50 rows**: decorated / (bare span + a plain ``isinstance`` loop over the same
  250 cells): the span plus the floor is what no library can go below.
  Target: <= 1.3x.

Also printed, for information: the call with nothing to judge (no declaration).

Run: ``python benchmarks/bench_instrumentation.py``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind

import context_integrity as ci
from _harness import Measure, ratio, rounds_of, show
from context_integrity.telemetry.schema import names

ONE_ROW_TARGET, FIFTY_ROWS_TARGET = 1.5, 1.3
COLUMNS = {
    "host_group": "string",
    "logical_unit_number": "number",
    "online": "boolean",
    "mapped_at": "date",
    "size_gb": "number",
}


def rows(count: int) -> list[dict[str, Any]]:
    return [
        {
            "host_group": f"vdi-{i % 7}",
            "logical_unit_number": i,
            "online": i % 3 == 0,
            "mapped_at": dt.date(2026, 1, 1 + i % 28),
            "size_gb": 10.5 + i,
        }
        for i in range(count)
    ]


ONE, FIFTY = rows(1), rows(50)


class _Discard(SpanExporter):
    """An exporter that keeps nothing, so neither side pays for storage."""

    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _floor(result: list[dict[str, Any]]) -> None:
    """The same type tests as a plain loop: what judging these rows costs at the least."""
    for row in result:
        isinstance(row.get("host_group"), str)
        isinstance(row.get("logical_unit_number"), (int, float))
        isinstance(row.get("online"), bool)
        isinstance(row.get("mapped_at"), dt.date)
        isinstance(row.get("size_gb"), (int, float))


def main(rounds: int = 41, number: int = 300) -> list[Measure]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Discard()))
    ci.shutdown()
    ci.setup(tracer_provider=provider, check_column_types="warn")
    tracer = provider.get_tracer("bench")
    attributes = {
        names.GEN_AI_OPERATION_NAME: names.OPERATION_EXECUTE_TOOL,
        names.GEN_AI_TOOL_NAME: "host_group_mappings",
        names.GEN_AI_TOOL_CALL_ID: "call-1",
        names.GEN_AI_TOOL_TYPE: names.TOOL_TYPE_FUNCTION,
    }

    def bare(result: list[dict[str, Any]]) -> list[dict[str, Any]]:
        with tracer.start_as_current_span(
            "execute_tool host_group_mappings", kind=SpanKind.INTERNAL, attributes=attributes
        ):
            return result

    def bare_and_floor() -> None:
        _floor(bare(FIFTY))

    one = ci.tool(result_columns=COLUMNS, name="host_group_mappings")(lambda: ONE)
    fifty = ci.tool(result_columns=COLUMNS, name="host_group_mappings_50")(lambda: FIFTY)
    undeclared = ci.tool(name="host_group_mappings_undeclared")(lambda: ONE)
    cases = {
        "bare": lambda: bare(ONE),
        "one": one,
        "bare+floor": bare_and_floor,
        "fifty": fifty,
        "off": undeclared,
    }
    with ci.run("bench", agent_name="bench") as agent_run:
        samples = rounds_of(cases, rounds=rounds, number=number)
    assert not agent_run.findings, "the benchmark rows must be clean"
    ci.shutdown()
    return show(
        [
            ratio(
                "@ci.tool judging 1 clean row / bare SDK span",
                samples["one"],
                samples["bare"],
                ONE_ROW_TARGET,
            ),
            ratio(
                "@ci.tool judging 50 clean rows / (bare span + isinstance loop)",
                samples["fifty"],
                samples["bare+floor"],
                FIFTY_ROWS_TARGET,
            ),
            ratio(
                "@ci.tool, nothing declared / bare SDK span  [info]",
                samples["off"],
                samples["bare"],
                float("inf"),
            ),
        ]
    )


if __name__ == "__main__":
    main()
