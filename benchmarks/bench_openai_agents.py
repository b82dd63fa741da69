"""What judging an OpenAI Agents SDK run costs, as a ratio to the same run without it.

A scripted 20-step run (19 tool-calling model turns and a final answer, the SDK's own
ScriptedModel) with and without :func:`instrument_all`, side by side in one process, interleaved
over rounds, the order alternating. The SDK's own tracing is on in both (its processors discard, so nothing uploads);
with the integration every request, response and tool result is judged, the tool's 20-row result
against a 3-column declaration, and its spans go through an SDK ``TracerProvider`` whose exporter
keeps nothing. Target: <= 1.10x.

Run: ``python benchmarks/bench_openai_agents.py [ROUNDS]``.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from typing import Any

os.environ.setdefault("OPENAI_API_KEY", "sk-offline-never-used")

from agents import Agent, Runner, function_tool, set_trace_processors
from agents.testing import ScriptedModel, assistant_message, function_call
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import context_integrity as ci
from context_integrity.integrations import openai_agents

STEPS = 20
RUNS_PER_ROUND = 10
ROUNDS = 7
TARGET = 1.10
ROWS = [{"row": i, "value": i * i, "label": f"r-{i}"} for i in range(20)]


class _Discard(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


@function_tool
def read_rows(page: int) -> list[dict[str, Any]]:
    """Read one page of rows."""
    return ROWS


def _script() -> ScriptedModel:
    steps: list[list[Any]] = [
        [function_call("read_rows", {"page": i}, call_id=f"call_{i:02d}")] for i in range(STEPS - 1)
    ]
    steps.append([assistant_message("read them all")])
    return ScriptedModel(steps)


async def _one() -> tuple[float, float]:
    """Wall and CPU seconds of one run (CPU time is what a shared machine disturbs least)."""
    model = _script()
    agent = Agent(name="bench", instructions="Read every page.", model=model, tools=[read_rows])
    started, cpu = time.perf_counter(), time.process_time()
    result = await Runner.run(agent, "go", max_turns=STEPS + 1)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert result.final_output == "read them all" and len(model.calls) == STEPS
    return elapsed, cpu


async def _batch(armed: bool) -> list[tuple[float, float]]:
    if armed:
        openai_agents.instrument_all()
    try:
        return [await _one() for _ in range(RUNS_PER_ROUND)]
    finally:
        if armed:
            openai_agents.uninstrument_all()


async def main(rounds: int = ROUNDS) -> float:
    set_trace_processors([])  # the SDK's tracing stays on; its default uploader does not
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Discard()))
    # instrument=(): setup() would otherwise arm the framework for the bare side too; the judged side calls instrument_all() itself.
    ci.setup(tracer_provider=provider, check_column_types="warn", instrument=())
    ci.declare_tool("read_rows", result_columns={"row": "number", "value": "number", "label": "string"})
    await _batch(False)
    await _batch(True)  # warm-up of both sides
    bare: list[tuple[float, float]] = []
    armed: list[tuple[float, float]] = []
    for round_index in range(rounds):  # the order alternates, so neither side always runs first
        for side in (False, True) if round_index % 2 == 0 else (True, False):
            (armed if side else bare).extend(await _batch(side))
    print(f"{STEPS}-step Agents SDK run, {rounds} interleaved rounds of {RUNS_PER_ROUND}:")
    for index, clock in enumerate(("wall", "cpu")):
        without = [sample[index] for sample in bare]
        with_ = [sample[index] for sample in armed]
        median = statistics.median(with_) / statistics.median(without)
        best = min(with_) / min(without)
        print(
            f"  {clock:>4}: without median {statistics.median(without) * 1e3:.1f} ms (min {min(without) * 1e3:.1f})"
            f", with median {statistics.median(with_) * 1e3:.1f} ms (min {min(with_) * 1e3:.1f})"
            f"; ratio median {median:.3f}x, min {best:.3f}x (target <= {TARGET:.2f}x)"
        )
    ratio = statistics.median(s[1] for s in armed) / statistics.median(s[1] for s in bare)
    print(f"target <= {TARGET:.2f}x (cpu median): {'met' if ratio <= TARGET else 'MISSED'} ({ratio:.2f}x)")
    return ratio


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS))
