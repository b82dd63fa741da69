"""How much the run summary weighs: the ``context_integrity.disposition`` span in OTLP.

The summary carries the ledger once, as per-row scalar attributes. Measured on
the summary of a real demo run (one row per registered check, two of them fired), as the
SDK's own OTLP protobuf encoding of that one span with its resource and scope:
``len(encode_spans([summary]).SerializeToString())``. Target: <= 3 KiB. It was
6,764 bytes when the ledger went out twice (as 54 attributes and 9 row events).

Also printed, side by side in one process over interleaved rounds (median and
min): the time to encode the summary against a tool span carrying a finding.

Run: ``python benchmarks/bench_summary_span.py``.
"""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from _workload import demo_spans, interleaved
from context_integrity import demo
from context_integrity.judge import REGISTERED_CHECKS
from context_integrity.telemetry.schema import names

TARGET_BYTES = 3 * 1024


def main(rounds: int = 9, number: int = 2000) -> float:
    spans = demo_spans(1)
    (summary,) = [s for s in spans if s.name == names.DISPOSITION_SPAN]
    (tool,) = [s for s in spans if s.name == names.tool_span_name(demo.host_group_mappings.__name__)]
    size = len(encode_spans([summary]).SerializeToString())
    tool_size = len(encode_spans([tool]).SerializeToString())
    times = interleaved(
        {
            "summary": lambda: encode_spans([summary]).SerializeToString(),
            "tool": lambda: encode_spans([tool]).SerializeToString(),
        },
        rounds=rounds,
        number=number,
    )
    ratio = size / TARGET_BYTES
    attributes = len(summary.attributes or {})
    print(
        f"summary span, {len(REGISTERED_CHECKS)}-row ledger: {size:6d} bytes of OTLP protobuf, {attributes} attributes, "
        f"{len(summary.events)} events  ({ratio:.2f}x the target of {TARGET_BYTES} bytes, target <= 1.00x)"
    )
    print(f"tool span with a finding   : {tool_size:6d} bytes")
    (summary_median, summary_min), (tool_median, tool_min) = times["summary"], times["tool"]
    print(
        f"encode time                : summary {summary_median * 1e6:6.1f} us (min {summary_min * 1e6:.1f}), "
        f"tool span {tool_median * 1e6:6.1f} us (min {tool_min * 1e6:.1f}): "
        f"{summary_median / tool_median:.2f}x (median), {summary_min / tool_min:.2f}x (min)"
    )
    return ratio


if __name__ == "__main__":
    main()
