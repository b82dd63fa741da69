"""What judging an OpenAI Agents SDK run costs, as a ratio to the same run without it.

A scripted 20-step run (19 tool-calling model turns and a final answer, the SDK's own
ScriptedModel) with and without :func:`instrument_all`, side by side in one process, interleaved
over rounds, the order alternating. The SDK's own tracing is on in both (its traces and spans
are made, with no processor registered, so nothing uploads); with the integration every request,
response and tool result is judged, the tool's 20-row result against a 3-column declaration, and
its spans go through an SDK ``TracerProvider`` whose exporter keeps nothing. Target: <= 1.10x.

Measured twice. The SDK's tracing is not OpenTelemetry, so first with that tracing only: the
spans of the judged run are all ours, and the bare run has none. Then with OpenInference's
Agents SDK instrumentor on in both sides, the usual way an Agents SDK application gets
OpenTelemetry: the bare side pays for its spans, and the judged side adopts them (its only span
of its own is the summary).

Rounds are short (one run a side) and many: on a shared machine the load changes within
seconds, and long rounds let one side run through a busy spell the other missed. The target's
figure is the median over rounds of each round's judged run to its bare run. Beside it, two
contenders that count for nothing. The control is the bare run once more: its ratio is what the
machine's noise alone makes of two identical sides, so a figure closer to 1.0 than the control's
distance from it is within the method's resolution. In the first configuration the floor is plain
``RunHooks`` that only open and end the spans the integration opens (the run's
``invoke_agent``, a ``chat`` per request, an ``execute_tool`` per call, with the same attributes,
and a summary span of as many attributes), through the same provider: what OpenTelemetry alone
costs, before any judging.

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
from _harness import Measure, ratio
from context_integrity.integrations import openai_agents

STEPS = 20
ROUNDS = 150
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


def _prepared(floor: Tracer | None = None) -> tuple[ScriptedModel, Agent[Any], _SpansOnly | None]:
    """One run's scripted model, agent and (for the floor) hooks, built as the run would build them."""
    model = _script()
    agent = Agent(name="bench", instructions="Read every page.", model=model, tools=[read_rows])
    return model, agent, _SpansOnly(floor) if floor is not None else None


async def _one(floor: Tracer | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of one run (CPU time is what a shared machine disturbs least)."""
    model, agent, hooks = _prepared(floor)
    # Every run starts from the same collector state: the garbage of the run before (whichever
    # side made it) and of building this agent is not collected on this run's clock.
    gc.collect()
    started, cpu = time.perf_counter(), time.process_time()
    result = await Runner.run(agent, "go", max_turns=STEPS + 1, hooks=hooks)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert result.final_output == "read them all" and len(model.calls) == STEPS
    return elapsed, cpu


async def _timed(armed: bool, floor: Tracer | None = None) -> tuple[float, float]:
    if armed:
        openai_agents.instrument_all()
    try:
        return await _one(floor)
    finally:
        if armed:
            openai_agents.uninstrument_all()


Side = tuple[bool, "Tracer | None"]
# The bare run once more, as a contender of its own: its ratio to the bare run is what this machine's
# noise alone makes of two identical sides, the resolution of every other ratio printed beside it.
CONTROL = "bare again"


async def _measure(rounds: int, sides: dict[str, Side], heading: str) -> float:
    """Every side interleaved over ``rounds`` of one run each; prints its lines, returns the
    target's figure: the median over rounds of the judged run's CPU time to the bare run's."""
    for judged, tracer in sides.values():  # warm-up of every side
        await _timed(judged, tracer)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    load = os.getloadavg()[0]
    order = list(sides)
    for round_index in range(rounds):  # the order rotates, so no side always runs first
        shift = round_index % len(order)
        for name in order[shift:] + order[:shift]:
            samples[name].append(await _timed(*sides[name]))
    load = (load + os.getloadavg()[0]) / 2
    print(f"{heading}, {rounds} interleaved rounds (load average {load:.1f}), CPU ms a run:")
    bare = [cpu for _, cpu in samples["bare"]]
    print(f"  {'bare':<24} median {statistics.median(bare) * 1e3:6.1f}  min {min(bare) * 1e3:6.1f}")
    labels = {"armed": "with the integration", "floor": "floor (its spans alone)", CONTROL: CONTROL}
    figures: dict[str, Measure] = {}
    for name in sides:
        if name == "bare":
            continue
        other = [cpu for _, cpu in samples[name]]
        figures[name] = measure = ratio(labels[name], other, bare, TARGET)
        print(
            f"  {labels[name]:<24} median {statistics.median(other) * 1e3:6.1f}  min {min(other) * 1e3:6.1f}"
            f"   per round {measure.median:.3f}x (min {measure.minimum:.3f}x)"
            f"   ratio of medians {statistics.median(other) / statistics.median(bare):.3f}x"
        )
    return figures["armed"].median


async def main(rounds: int = ROUNDS) -> tuple[float, float]:
    """The CPU ratio of the judged run to the bare one: with the SDK's own tracing only, and then
    with OpenInference's instrumentor turning that tracing into OpenTelemetry in both sides."""
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    set_trace_processors([])  # the SDK's tracing stays on; its default uploader does not
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Discard()))
    # instrument=(): setup() would otherwise arm the framework for the bare side too; the judged side calls instrument_all() itself.
    ci.setup(tracer_provider=provider, check_column_types="warn", instrument=())
    ci.declare_tool("read_rows", result_columns={"row": "number", "value": "number", "label": "string"})
    floor = provider.get_tracer("bench.floor")
    # The SDK's tracing is not OpenTelemetry: every span of the judged run is ours, the floor beside it.
    alone = await _measure(
        rounds,
        {"bare": (False, None), "armed": (True, None), "floor": (False, floor), CONTROL: (False, None)},
        f"{STEPS}-step Agents SDK run, the SDK's own tracing only",
    )
    # The usual way an Agents SDK application gets OpenTelemetry: the bare side pays for
    # OpenInference's spans, and the judged side adopts them (its only span of its own is the summary).
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        beside = await _measure(
            rounds,
            {"bare": (False, None), "armed": (True, None), CONTROL: (False, None)},
            f"{STEPS}-step Agents SDK run, OpenInference's instrumentor on in both sides",
        )
    finally:
        instrumentor.uninstrument()
        set_trace_processors([])
    for figure, configuration in ((alone, "the SDK's tracing only"), (beside, "beside OpenInference")):
        verdict = "met" if figure <= TARGET else "MISSED"
        print(f"target <= {TARGET:.2f}x (cpu, per round), {configuration}: {verdict} ({figure:.3f}x)")
    ci.shutdown()
    return alone, beside


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS))
