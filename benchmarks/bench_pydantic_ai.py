"""What the pydantic-ai integration costs a real agent run, as a ratio to the same run without it.

A scripted 20-step run (19 tool calls, then the answer) on pydantic-ai's ``FunctionModel``, with
pydantic-ai's own instrumentation on in both cases, into the same SDK ``TracerProvider`` with an
exporter that keeps nothing. With the integration, every request is composed and judged, every
response's calls are judged (the tool declares ``arguments_from``, so every frame is read), and every
tool result (10 clean rows against a 3-column declaration, ``check_column_types="warn"``) is judged
at the write seam; one summary span closes the run. A second judged side, "columns", declares the
result columns alone (the usual first declaration): the write seam is judged, and compose and
choice find no check that reads the frame.
Side by side in one process, interleaved round by round (one run a side, many rounds: on a shared
machine the load changes within seconds). Target: <= 1.10x, for the median over rounds of each
round's judged run to its bare run.

A fourth contender, the control, is the bare run once more: its ratio is what the machine's noise
alone makes of two identical sides, so a figure closer to 1.0 than the control's distance from it
is within the method's resolution.

A third contender, "floor", is what pydantic-ai itself costs for having a capability like ours at
all: one with the same hooks (``for_run``, ``wrap_run``, ``get_wrapper_model`` -- a wrapper model only
where the host opened no chat span, as ours --, ``after_model_request``, ``on_model_request_error``,
``wrap_tool_execute``) that only hands each call on. What our work costs is the distance from it.

Run: ``python benchmarks/bench_pydantic_ai.py [ROUNDS]``. Returns (every seam, the columns alone).
"""

from __future__ import annotations

import dataclasses
import gc
import statistics
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.capabilities.abstract import WrapRunHandler, WrapToolExecuteHandler
from pydantic_ai.models import Model, ModelRequestContext, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.run import AgentRunResult
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext
from pydantic_ai.tools import ToolDefinition as PaiToolDefinition

import context_integrity as ci
from context_integrity.integrations import pydantic_ai as integration
from context_integrity.telemetry.spans import CHAT, find_host_span

STEPS = 20
TARGET = 1.10
ROWS: list[dict[str, Any]] = [{"key": f"k{i}", "value": f"v{i}", "size": i} for i in range(10)]
COLUMNS = {"key": "string", "value": "string", "size": "number"}


class _Discard(SpanExporter):
    """An exporter that keeps nothing, so neither side pays for storage."""

    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class _PassModel(WrapperModel):
    """The floor's wrapper model: hands each request on, as ours does around its seams."""

    async def request(
        self,
        messages: list[pm.ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> pm.ModelResponse:
        return await self.wrapped.request(messages, model_settings, model_request_parameters)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[pm.ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        async with self.wrapped.request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as streamed:
            yield streamed


@dataclass
class _Floor(AbstractCapability[Any]):
    """The floor: a capability with our hooks that does nothing in them."""

    id: str | None = "bench_floor"

    async def for_run(self, ctx: RunContext[Any]) -> AbstractCapability[Any]:
        return dataclasses.replace(self)

    async def wrap_run(self, ctx: RunContext[Any], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        return await handler()

    def get_wrapper_model(self, model: Model) -> Model | None:
        # As ours: a wrapper model only where the host opened no chat span around the call.
        return None if find_host_span(CHAT) is not None else _PassModel(model)

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, response: pm.ModelResponse
    ) -> pm.ModelResponse:
        return response

    async def on_model_request_error(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, error: Exception
    ) -> pm.ModelResponse:
        raise error

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: pm.ToolCallPart,
        tool_def: PaiToolDefinition,
        args: dict[str, Any],
        handler: WrapToolExecuteHandler,
    ) -> Any:
        return await handler(args)


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


# The bare run once more, as a contender of its own: its ratio to the bare run is what this machine's
# noise alone makes of two identical sides, the resolution of every other ratio printed beside it.
CONTROL = "without again"
# "with": every seam armed (the columns, and grounds, so compose and choice read every frame);
# "columns": the result columns alone.
JUDGED = ("with", "columns")
SIDES = ("without", "floor", *JUDGED, CONTROL)


def _declare(side: str) -> None:
    grounds = ["index"] if side == "with" else None
    ci.declare_tool("fetch", result_columns=COLUMNS, arguments_from=grounds, replace=True)


def _timed(agent: Agent[None, str], runs: int, side: str) -> float:
    (integration.instrument_all if side in JUDGED else integration.uninstrument_all)()
    _declare(side)
    capabilities = [_Floor()] if side == "floor" else None
    # Every batch starts from the same collector state: the garbage of the batch before is not
    # collected on this one's clock, whichever side it was.
    gc.collect()
    # CPU time of this process (every thread): on a shared machine, wall time mostly measures the
    # neighbours; the work both sides do here is all on our CPU.
    start = time.process_time()
    for _ in range(runs):
        result = agent.run_sync("start", capabilities=capabilities)
        assert result.usage.requests == STEPS
    return (time.process_time() - start) / runs * 1000


def main(rounds: int = 120, runs: int = 1) -> tuple[float, float]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Discard()))
    ci.shutdown()
    # The integration is switched by hand below, so both sides share one setup and one pipeline.
    ci.setup(tracer_provider=provider, check_column_types="warn", instrument=())
    # Every seam armed: the columns at write, and grounds so compose and choice read every frame.
    ci.declare_tool("index")
    agent = _agent(provider)
    samples: dict[str, list[float]] = {side: [] for side in SIDES}
    for side in SIDES:  # warm up every path
        _timed(agent, 2, side)
    for round_index in range(rounds):
        # Rotate which side goes first, so none always runs on a warmer machine.
        shift = round_index % len(SIDES)
        for side in SIDES[shift:] + SIDES[:shift]:
            samples[side].append(_timed(agent, runs, side))
    integration.uninstrument_all()
    ci.shutdown()
    print(
        f"pydantic-ai {STEPS}-step run, its own instrumentation on, {rounds} rounds x {runs} runs (CPU ms per run)"
    )
    without = samples["without"]
    labels = {
        "without": "without the integration",
        "floor": "a capability doing nothing",
        "with": "with the integration",
        "columns": "with it, the columns alone",
        CONTROL: "the bare run again (control)",
    }
    paired: dict[str, float] = {}
    for side in SIDES:
        median, least = statistics.median(samples[side]), min(samples[side])
        line = f"  {labels[side]:<29}: median {median:7.1f} ms   min {least:7.1f} ms"
        if side != "without":
            # Each round's sides ran back to back: their ratio is the least disturbed by the machine's drift.
            paired[side] = statistics.median(s / w for s, w in zip(samples[side], without, strict=True))
            line += (
                f"   ratio median {median / statistics.median(without):.3f}x   min {least / min(without):.3f}x"
                f"   per-round {paired[side]:.3f}x"
            )
        print(line)
    print(f"  target: with / without <= {TARGET}x (every seam, and the columns alone)")
    return paired["with"], paired["columns"]


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:2]))
