"""What judging an OpenAI Agents SDK run costs, as a ratio to the same run without it.

A scripted 20-step run (19 tool-calling model turns and a final answer, the SDK's own
ScriptedModel) with and without :func:`instrument_all`, side by side in one process, interleaved
over rounds, the order alternating. The SDK's own tracing is on in both (its processors discard, so nothing uploads);
with the integration every request, response and tool result is judged, the tool's 20-row result
against a 3-column declaration, and its spans go through an SDK ``TracerProvider`` whose exporter
keeps nothing. Target: <= 1.10x.

Rounds are short (two runs a side) and many: on a shared machine the load changes within
seconds, and long rounds let one side run through a busy spell the other missed. A third side,
the floor, is printed beside them and counts for nothing: plain ``RunHooks`` that only open and
end the spans the integration opens (the run's ``invoke_agent``, a ``chat`` per request, an
``execute_tool`` per call, with the same attributes, and a summary span of as many attributes),
through the same provider: what OpenTelemetry alone costs, before any judging. Beside the ratio
of medians (the target's figure) each side's median ratio to the bare runs of its own round is
printed: when the load comes in spells the run times split in two modes, and the median of a
side can land in either.

Run: ``python benchmarks/bench_openai_agents.py [ROUNDS]``.
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import sys
import time
from typing import Any

os.environ.setdefault("OPENAI_API_KEY", "sk-offline-never-used")

from agents import Agent, RunHooks, Runner, function_tool, set_trace_processors
from agents.testing import ScriptedModel, assistant_message, function_call
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Span, SpanKind, Tracer

import context_integrity as ci
from context_integrity.integrations import openai_agents

STEPS = 20
RUNS_PER_ROUND = 2
ROUNDS = 60
# The attributes of the integration's summary span in this run (its ledger rows, totals and dials).
SUMMARY_ATTRIBUTES = 44
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


class _SpansOnly(RunHooks[Any]):
    """The floor: the integration's spans and attributes, opened and ended, nothing judged."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.run: Span | None = None
        self.parent: Any = None
        self.chat: Span | None = None
        self.tools: dict[str, Span] = {}

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        if self.run is None:
            self.run = self.tracer.start_span(
                f"invoke_agent {agent.name}",
                kind=SpanKind.INTERNAL,
                attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent.name},
            )
            self.parent = trace.set_span_in_context(self.run)

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        model = type(agent.model).__name__
        self.chat = self.tracer.start_span(
            f"chat {model}",
            context=self.parent,
            kind=SpanKind.CLIENT,
            attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": model},
        )

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        if self.chat is not None:
            self.chat.end()

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        self.tools[context.tool_call_id] = self.tracer.start_span(
            f"execute_tool {tool.name}",
            context=self.parent,
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool.name,
                "gen_ai.tool.call.id": context.tool_call_id,
                "gen_ai.tool.type": "function",
            },
        )

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        self.tools.pop(context.tool_call_id).end()

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        summary = {f"floor.summary.{i}": i for i in range(SUMMARY_ATTRIBUTES)}
        self.tracer.start_span("context_integrity.disposition", context=self.parent, attributes=summary).end()
        if self.run is not None:
            self.run.end()


async def _one(floor: Tracer | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of one run (CPU time is what a shared machine disturbs least)."""
    model = _script()
    agent = Agent(name="bench", instructions="Read every page.", model=model, tools=[read_rows])
    hooks = _SpansOnly(floor) if floor is not None else None
    # Every run starts from the same collector state: the garbage of the run before (whichever
    # side made it) and of building this agent is not collected on this run's clock.
    gc.collect()
    started, cpu = time.perf_counter(), time.process_time()
    result = await Runner.run(agent, "go", max_turns=STEPS + 1, hooks=hooks)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert result.final_output == "read them all" and len(model.calls) == STEPS
    return elapsed, cpu


async def _batch(armed: bool, floor: Tracer | None = None) -> list[tuple[float, float]]:
    if armed:
        openai_agents.instrument_all()
    try:
        return [await _one(floor) for _ in range(RUNS_PER_ROUND)]
    finally:
        if armed:
            openai_agents.uninstrument_all()


def _line(label: str, base: list[float], other: list[float]) -> str:
    median = statistics.median(other) / statistics.median(base)
    best = min(other) / min(base)
    return (
        f"{label} median {statistics.median(other) * 1e3:.1f} ms (min {min(other) * 1e3:.1f})"
        f"; ratio median {median:.3f}x, min {best:.3f}x"
    )


async def main(rounds: int = ROUNDS) -> float:
    set_trace_processors([])  # the SDK's tracing stays on; its default uploader does not
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Discard()))
    # instrument=(): setup() would otherwise arm the framework for the bare side too; the judged side calls instrument_all() itself.
    ci.setup(tracer_provider=provider, check_column_types="warn", instrument=())
    ci.declare_tool("read_rows", result_columns={"row": "number", "value": "number", "label": "string"})
    floor = provider.get_tracer("bench.floor")
    sides: dict[str, tuple[bool, Tracer | None]] = {
        "bare": (False, None),
        "armed": (True, None),
        "floor": (False, floor),
    }
    for judged, tracer in sides.values():  # warm-up of every side
        await _batch(judged, tracer)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    load = os.getloadavg()[0]
    for round_index in range(rounds):  # the order alternates, so no side always runs first
        order = list(sides) if round_index % 2 == 0 else list(reversed(sides))
        for name in order:
            samples[name].extend(await _batch(*sides[name]))
    load = (load + os.getloadavg()[0]) / 2
    print(
        f"{STEPS}-step Agents SDK run, {rounds} interleaved rounds of {RUNS_PER_ROUND} (load average {load:.1f}):"
    )
    for index, clock in enumerate(("wall", "cpu")):
        bare, with_, spans = (
            [sample[index] for sample in samples[name]] for name in ("bare", "armed", "floor")
        )
        print(
            f"  {clock:>4}: without median {statistics.median(bare) * 1e3:.1f} ms (min {min(bare) * 1e3:.1f})"
            f"; {_line('with', bare, with_)} (target <= {TARGET:.2f}x)"
        )
        print(f"        {_line('floor (its spans alone)', bare, spans)}")
    # Each round's sides ran within a second of each other, under much the same load: the median of
    # the rounds' own ratios is steadier than the ratio of medians when the load comes in spells.
    print("   cpu, per round (the median of each round's ratio to its own bare runs):", end="")
    for name, label in (("armed", "with"), ("floor", "floor")):
        per_round = [
            sum(s[1] for s in samples[name][i : i + RUNS_PER_ROUND])
            / sum(s[1] for s in samples["bare"][i : i + RUNS_PER_ROUND])
            for i in range(0, len(samples["bare"]), RUNS_PER_ROUND)
        ]
        print(f" {label} {statistics.median(per_round):.3f}x", end="")
    print()
    ratio = statistics.median(s[1] for s in samples["armed"]) / statistics.median(
        s[1] for s in samples["bare"]
    )
    print(f"target <= {TARGET:.2f}x (cpu median): {'met' if ratio <= TARGET else 'MISSED'} ({ratio:.2f}x)")
    return ratio


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS))
