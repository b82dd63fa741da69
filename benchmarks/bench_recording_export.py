"""What the local recording costs to write, as a ratio to OTLP protobuf encoding.

Side by side, in one process, over interleaved rounds (median and min): the
recording's span exporter appending one batch of real demo spans (tool spans
with findings, run spans, summaries) to a file, against the SDK's OTLP protobuf
encoding of the same batch, ``encode_spans(batch).SerializeToString()``: what
any OTLP exporter pays before the network. Target: <= 1.5x. Also printed: the
encoding the recording used before (protobuf, then ``MessageToDict``, then ids
rewritten to hex, then JSON), which measured 2.85x.

Run: ``python benchmarks/bench_recording_export.py``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from _workload import demo_spans, interleaved
from context_integrity.telemetry.export.file_export import OtlpJsonLinesSpanExporter, to_otlp_json

TARGET = 1.5
RUNS_PER_BATCH = 100  # 5 spans a run: about the SDK batch processor's 512-span batch


def main(rounds: int = 9, number: int = 20) -> float:
    batch = demo_spans(RUNS_PER_BATCH)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "recording.otlp.jsonl"
        exporter = OtlpJsonLinesSpanExporter(path)

        def before() -> bytes:
            document = to_otlp_json(encode_spans(batch))
            return (json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n").encode()

        times = interleaved(
            {
                "protobuf": lambda: encode_spans(batch).SerializeToString(),
                "recording": lambda: exporter.export(batch),
                "before": before,
            },
            rounds=rounds,
            number=number,
            between=lambda: os.truncate(path, 0) if path.exists() else None,
        )
        line_bytes = len(before())
    protobuf, recording, previous = times["protobuf"], times["recording"], times["before"]
    ratio = recording[0] / protobuf[0]
    print(
        f"batch: {len(batch)} spans of {RUNS_PER_BATCH} demo runs, {line_bytes / 1024:.0f} KiB of OTLP/JSON"
    )
    print(
        f"OTLP protobuf encode_spans + SerializeToString : {protobuf[0] * 1e3:7.2f} ms (min {protobuf[1] * 1e3:.2f})"
    )
    print(
        f"recording export (encode + one append)         : {recording[0] * 1e3:7.2f} ms (min {recording[1] * 1e3:.2f})"
        f"  {ratio:.2f}x median, {recording[1] / protobuf[1]:.2f}x min (target <= {TARGET}x)"
    )
    print(
        f"  before: protobuf -> MessageToDict -> hex -> JSON: {previous[0] * 1e3:7.2f} ms"
        f"  {previous[0] / protobuf[0]:.2f}x"
    )
    return ratio


if __name__ == "__main__":
    main()
