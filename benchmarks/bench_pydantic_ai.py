"""What the pydantic-ai integration costs a real agent run, as a ratio to the same run without it.

A scripted 20-step run (19 tool calls, then the answer) on pydantic-ai's ``FunctionModel``, with
pydantic-ai's own instrumentation on in both cases, into the same SDK ``TracerProvider`` with an
exporter that keeps nothing. With the integration, every request is composed and judged, every
response's calls are judged (the tool declares ``arguments_from``, so every frame is read), and every
tool result (10 clean rows against a 3-column declaration, ``check_column_types="warn"``) is judged
at the write seam; one summary span closes the run.
Side by side in one process, interleaved round by round. Target: <= 1.10x.

Run: ``python benchmarks/bench_pydantic_ai.py``.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

import context_integrity as ci
from context_integrity.integrations import pydantic_ai as integration

STEPS = 20
TARGET = 1.10
ROWS = [{"key": f"k{i}", "value": f"v{i}", "size": i} for i in range(10)]
COLUMNS = {"key": "string", "value": "string", "size": "number"}


class _Discard(SpanExporter):
    """An exporter that keeps nothing, so neither side pays for storage."""

    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _script(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
    step = sum(isinstance(m, pm.ModelResponse) for m in messages)
    if step < STEPS - 1:
        return pm.ModelResponse(
            parts=[pm.ToolCallPart("fetch", {"key": f"k{step}"}, tool_call_id=f"call_{step}")]
        )
    return pm.ModelResponse(parts=[pm.TextPart(f"done after {step} tool calls")])


def _agent(provider: TracerProvider) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(FunctionModel(_script), name="bench")
    agent.instrument = InstrumentationSettings(tracer_provider=provider)

    @agent.tool_plain
    def fetch(key: str) -> list[dict[str, Any]]:
        return ROWS

    @agent.tool_plain
    def index() -> list[str]:  # offered, never called: the ground fetch declares
        return [row["key"] for row in ROWS]

    return agent


def _timed(agent: Agent[None, str], runs: int) -> float:
    # CPU time of this process (every thread): on a shared machine, wall time mostly measures the
    # neighbours; the work both sides do here is all on our CPU.
    start = time.process_time()
    for _ in range(runs):
        result = agent.run_sync("start")
        assert result.usage.requests == STEPS
    return (time.process_time() - start) / runs * 1000


def main(rounds: int = 9, runs: int = 5) -> float:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Discard()))
    ci.shutdown()
    # The integration is switched by hand below, so both sides share one setup and one pipeline.
    ci.setup(tracer_provider=provider, check_column_types="warn", instrument=())
    # Every seam armed: the columns at write, and grounds so compose and choice read every frame.
    ci.declare_tool("fetch", result_columns=COLUMNS, arguments_from=["index"])
    agent = _agent(provider)
    samples: dict[str, list[float]] = {"without": [], "with": []}
    for armed in (False, True):  # warm up both paths
        (integration.instrument_all if armed else integration.uninstrument_all)()
        _timed(agent, 2)
    for round_index in range(rounds):
        # Alternate which side goes first, so neither always runs on a warmer machine.
        order = ("without", "with") if round_index % 2 == 0 else ("with", "without")
        for side in order:
            (integration.instrument_all if side == "with" else integration.uninstrument_all)()
            samples[side].append(_timed(agent, runs))
    integration.uninstrument_all()
    ci.shutdown()
    without_median, with_median = statistics.median(samples["without"]), statistics.median(samples["with"])
    without_min, with_min = min(samples["without"]), min(samples["with"])
    # Each round's two sides ran back to back: their ratio is the least disturbed by the machine's drift.
    paired = statistics.median(w / wo for w, wo in zip(samples["with"], samples["without"], strict=True))
    print(
        f"pydantic-ai {STEPS}-step run, its own instrumentation on, {rounds} rounds x {runs} runs (CPU ms per run)"
    )
    print(f"  without the integration : median {without_median:7.1f} ms   min {without_min:7.1f} ms")
    print(f"  with the integration    : median {with_median:7.1f} ms   min {with_min:7.1f} ms")
    print(
        f"  ratio                   : median {with_median / without_median:.3f}x   min {with_min / without_min:.3f}x   "
        f"median of per-round ratios {paired:.3f}x   (target <= {TARGET}x)"
    )
    return paired


if __name__ == "__main__":
    main()
