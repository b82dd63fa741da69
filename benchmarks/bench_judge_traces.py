"""What judging recorded traces costs, as a ratio to streaming the same file through the recording reader.

The recording is made by a third-party instrumentation, with no ``ci.setup()`` in the agent: a
pydantic-ai agent on its ``FunctionModel`` (an index tool, then five lookups, one of an id the index
never served; the lookups' rows hold a number as a string), instrumented by ``--instrumentation``:

- ``pydantic-ai`` (the default): pydantic-ai's own OpenTelemetry instrumentation (format 5), read by
  the first dialect that claims its spans;
- ``openinference``: OpenInference's span processor for pydantic-ai, which rewrites those spans into
  OpenInference's attributes (needs the ``openinference`` dialect).

A few real runs are recorded through the SDK into OTLP/JSON lines (our OTLP/JSON-lines exporter, the
shape the Collector's ``file`` exporter writes), then replicated with fresh trace and span ids to the
number of runs asked, about 500 spans a line as a batch exporter writes them.

Side by side in one process, over interleaved rounds (median and min of the per-round ratios):

- the floor: streaming the file through the recording reader (``RecordingStream``, every run read
  back), which parses every line and reads every span;
- judging: ``judge_runs(read_runs(path), contracts, dials)``, every run read into steps and judged
  (the lookups declare their columns and their ground, ``check_column_types="warn"``, so every
  request, response and result is judged).

Target: <= 2.0x the floor. Memory: the ``tracemalloc`` peak of one judging pass over 1,000 runs and
over the full file, printed side by side: it must be flat in the number of runs.

Run: ``python benchmarks/bench_judge_traces.py [RUNS] [--instrumentation pydantic-ai|openinference]``
(default 10,000 runs).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from _harness import cpu_seconds, peak_bytes
from context_integrity.contracts import define_contract
from context_integrity.judge import ContractBook, Dials
from context_integrity.recording import RecordingStream
from context_integrity.telemetry.export.file_export import OtlpJsonLinesSpanExporter
from context_integrity.traces import judge_runs, read_runs

TARGET = 2.0
RECORDED_RUNS = 4
SPANS_PER_LINE = 500
ROWS = [{"key": f"host-{i:04d}", "size": str(i * 10)} for i in range(8)]
DIALS = Dials(check_column_types="warn", notice_empty_lookups=True)


def _contracts() -> ContractBook:
    book = ContractBook()
    book.declare(define_contract("index"))
    book.declare(
        define_contract("fetch", result_columns={"key": "string", "size": "number"}, arguments_from=["index"])
    )
    return book


def _script(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
    step = sum(isinstance(m, pm.ModelResponse) for m in messages)
    if step == 0:
        return pm.ModelResponse(parts=[pm.ToolCallPart("index", {}, tool_call_id="call_0")])
    if step <= 5:
        key = "host-0099" if step == 4 else f"host-{step:04d}"  # one id the index never served
        return pm.ModelResponse(parts=[pm.ToolCallPart("fetch", {"key": key}, tool_call_id=f"call_{step}")])
    return pm.ModelResponse(parts=[pm.TextPart("All five keys were looked up.")])


def record(path: Path, instrumentation: str) -> None:
    """A few real runs of the agent, recorded by ``instrumentation`` alone."""
    provider = TracerProvider()
    if instrumentation == "openinference":
        from openinference.instrumentation.pydantic_ai import OpenInferenceSpanProcessor

        provider.add_span_processor(OpenInferenceSpanProcessor())
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonLinesSpanExporter(path)))
    agent: Agent[None, str] = Agent(FunctionModel(_script), name="lookup", instructions="Look every key up.")
    agent.instrument = InstrumentationSettings(tracer_provider=provider)

    @agent.tool_plain
    def index() -> list[str]:
        return [row["key"] for row in ROWS]

    @agent.tool_plain
    def fetch(key: str) -> list[dict[str, Any]]:
        return [row for row in ROWS if row["key"] <= key] or ROWS[:1]

    for _ in range(RECORDED_RUNS):
        agent.run_sync("Look up hosts 1 to 5.")
    provider.shutdown()


def _spans(path: Path) -> list[list[dict[str, Any]]]:
    """The recorded spans, each run's apart, as (resource, scope, span) documents in export order."""
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for line in path.read_text().splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    entry = {
                        "resource": resource.get("resource", {}),
                        "scope": scope.get("scope", {}),
                        "span": span,
                    }
                    by_trace.setdefault(span["traceId"], []).append(entry)
    return list(by_trace.values())


def replicate(recorded: Path, path: Path, runs: int) -> None:
    """``runs`` runs, each a recorded one with fresh ids, written about 500 spans a line."""
    traces = _spans(recorded)
    ids = itertools.count(1)
    with path.open("w") as out:
        pending: list[dict[str, Any]] = []
        for number in range(runs):
            trace_id = f"{next(ids):032x}"
            renamed: dict[str, str] = {}
            for entry in traces[number % len(traces)]:
                span = dict(entry["span"])
                span["traceId"] = trace_id
                span["spanId"] = renamed.setdefault(span["spanId"], f"{next(ids):016x}")
                if span.get("parentSpanId"):
                    span["parentSpanId"] = renamed.setdefault(span["parentSpanId"], f"{next(ids):016x}")
                pending.append({**entry, "span": span})
            if len(pending) >= SPANS_PER_LINE or number == runs - 1:
                out.write(json.dumps({"resourceSpans": list(_batched(pending))}) + "\n")
                pending = []


def _batched(entries: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for entry in entries:
        yield {
            "resource": entry["resource"],
            "scopeSpans": [{"scope": entry["scope"], "spans": [entry["span"]]}],
        }


def _floor(path: Path) -> int:
    return sum(1 for _ in RecordingStream(path, details=False))


def _judge(path: Path) -> int:
    contracts = _contracts()
    return sum(1 for _ in judge_runs(read_runs(path), contracts, DIALS))


def main(runs: int = 10_000, instrumentation: str = "pydantic-ai", rounds: int = 5) -> float:
    with tempfile.TemporaryDirectory() as directory:
        recorded = Path(directory) / "recorded.jsonl"
        record(recorded, instrumentation)
        path = Path(directory) / "traces.jsonl"
        replicate(recorded, path, runs)
        small = Path(directory) / "traces-1k.jsonl"
        replicate(recorded, small, min(1000, runs))
        contracts = _contracts()
        sample = list(judge_runs(read_runs(recorded), contracts, DIALS))
        findings = sorted({f.finding.kind for run in sample for f in run.findings})
        dialects = sorted({d for run in sample for d in run.run.dialects})
        judged = _judge(path)
        assert judged == runs, f"{judged} runs judged of {runs}"
        times: dict[str, list[float]] = {"floor": [], "judge": []}
        cases = {"floor": _floor, "judge": _judge}
        for round_number in range(rounds):
            order = list(cases.items()) if round_number % 2 == 0 else list(cases.items())[::-1]
            for key, fn in order:
                times[key].append(cpu_seconds(fn, path))
        peak_small, peak_full = peak_bytes(_judge, small), peak_bytes(_judge, path)
        size = path.stat().st_size
    ratios = [j / f for j, f in zip(times["judge"], times["floor"], strict=True)]
    ratio = statistics.median(ratios)
    print(
        f"{runs} runs recorded by {instrumentation} ({RECORDED_RUNS} real runs replicated), {size / 1e6:.0f} MB, "
        f"{rounds} interleaved rounds; read as {', '.join(dialects)}; each run files {', '.join(findings)}"
    )
    print(
        f"floor (the recording reader)   : {statistics.median(times['floor']):6.2f} s (min {min(times['floor']):.2f})"
    )
    print(
        f"read and judged                : {statistics.median(times['judge']):6.2f} s (min {min(times['judge']):.2f})"
    )
    print(
        f"ratio to the floor             : {ratio:.2f}x median, {min(ratios):.2f}x min (target <= {TARGET}x)"
    )
    print(
        f"judging's peak memory          : {peak_small / 1e6:.1f} MB over {min(1000, runs)} runs, "
        f"{peak_full / 1e6:.1f} MB over {runs} (flat in the number of runs)"
    )
    return ratio


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="?", type=int, default=10_000)
    parser.add_argument("--instrumentation", choices=("pydantic-ai", "openinference"), default="pydantic-ai")
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    main(options.runs, options.instrumentation, options.rounds)
