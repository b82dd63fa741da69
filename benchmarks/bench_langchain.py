"""What the LangChain integration costs a real ``create_agent`` run, as a ratio to the bare agent.

A scripted 20-step run (20 model turns that each call one tool, then the answer: 21 model calls,
20 tool runs), side by side in one process, interleaved over many rounds of one run each with the order
rotating: the bare agent against the same agent with ``ContextIntegrityMiddleware`` (what
``instrument_all()`` appends), its tool declared with result columns and judged in warn (and
again with grounds declared too, so every seam reads every request and response), every span
going through an SDK provider to an exporter that keeps nothing. Target: <= 1.10x for the median over rounds of each round's judged run to its bare run (CPU
time: the machine is shared). A control, the bare agent once more, is measured beside them: its
ratio is what the machine's noise alone makes of two identical sides, the resolution of the rest.

Measured twice. LangChain has no OpenTelemetry of its own, so first with no telemetry on the bare
side: the spans of the judged run are all ours. Then with OpenInference's LangChain instrumentor
on in both sides, the usual way a LangChain application gets OpenTelemetry: the bare side pays
for its spans, and the judged side adopts them (its only span of its own is the summary).

A third contender, "spans only", is the floor for any integration that opens those spans: a
middleware with the same hooks that does nothing but open and end the same GenAI spans (one
``invoke_agent`` per run, a ``chat`` per model call, an ``execute_tool`` per tool call, made
current as ours are) through the same provider. What the checks cost is the distance from it.

Run: ``python benchmarks/bench_langchain.py [ROUNDS]``.
"""

from __future__ import annotations

import gc
import logging
import os
import statistics
import sys
import time
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import context_integrity as ci
from context_integrity.integrations import langchain as integration
from context_integrity.integrations._langchain_runs import remove_run_ends
from context_integrity.telemetry.schema import names
from context_integrity.telemetry.setup import current

STEPS = 20
TARGET = 1.10
COLUMNS = {"id": "number", "name": "string", "email": "string"}


class _Discard(SpanExporter):
    exported = 0  # counted, so each side can be held to the spans it should make

    def export(self, spans: Any) -> SpanExportResult:
        _Discard.exported += len(spans)
        return SpanExportResult.SUCCESS


class ScriptedModel(FakeMessagesListChatModel):
    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self.bind(tools=list(tools), tool_choice=tool_choice, **kwargs)


@tool
def get_row(i: int) -> list[dict[str, Any]]:
    """Fetch a row."""
    return [{"id": i, "name": f"row{i}", "email": f"u{i}@example.com"}]


@tool
def list_ids() -> list[int]:
    """List the row ids."""  # offered, never called: the ground get_row declares in "every seam"
    return list(range(STEPS))


# Every side offers both tools, so the model is sent the same tool list whichever side runs.
TOOLS = [get_row, list_ids]


class SpansOnly(AgentMiddleware[Any, Any, Any]):
    """The floor: the GenAI spans an integration must open for LangChain, and nothing else."""

    def __init__(self) -> None:
        super().__init__()
        instrumentation = current()
        assert instrumentation is not None
        self._tracer = instrumentation.tracer
        self._agent: Any = None

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        # As ours does, no node of its own: the agent span opens at the first model call, and
        # (the floor has no callback to learn the run's end) closes at the answer.
        if self._agent is None:
            self._agent = self._tracer.start_span(
                names.run_span_name("agent"),
                kind=trace.SpanKind.INTERNAL,
                attributes={
                    names.GEN_AI_OPERATION_NAME: names.OPERATION_INVOKE_AGENT,
                    names.GEN_AI_AGENT_NAME: "agent",
                },
            )
        span = self._tracer.start_span(
            names.chat_span_name("model"),
            context=trace.set_span_in_context(self._agent),
            kind=trace.SpanKind.CLIENT,
            attributes={
                names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT,
                names.GEN_AI_REQUEST_MODEL: "model",
            },
        )
        try:
            response = handler(request)
        finally:
            span.end()
        if not response.result[-1].tool_calls:
            self._agent.end()
        return response

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        call = request.tool_call
        span = self._tracer.start_span(
            names.tool_span_name(call["name"]),
            context=trace.set_span_in_context(self._agent),
            attributes={
                names.GEN_AI_OPERATION_NAME: names.OPERATION_EXECUTE_TOOL,
                names.GEN_AI_TOOL_NAME: call["name"],
                names.GEN_AI_TOOL_CALL_ID: call["id"],
                names.GEN_AI_TOOL_TYPE: names.TOOL_TYPE_FUNCTION,
            },
        )
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            return handler(request)
        finally:
            otel_context.detach(token)
            span.end()


def _script() -> ScriptedModel:
    turns = [
        AIMessage(content="", tool_calls=[{"name": "get_row", "args": {"i": i}, "id": f"call_{i:02d}"}])
        for i in range(STEPS)
    ]
    return ScriptedModel(responses=[*turns, AIMessage(content="all rows fetched")])


# The bare agent once more, as a contender of its own: its ratio to the bare agent is what this
# machine's noise alone makes of two identical sides, the resolution of every other ratio beside it.
CONTROL = "bare again"


def _agent(variant: str) -> Any:
    """The agent of one side, built (and its tool declared) as that side runs it."""
    if variant in ("bare", CONTROL, "spans only"):
        # The bare agent runs as it would without the library: no callback of ours either.
        remove_run_ends()
    else:
        # "columns": the write seam judged; "every seam": grounds declared too, so compose and
        # choice read every request and response.
        grounds = ["list_ids"] if variant == "every seam" else None
        ci.declare_tool("get_row", result_columns=COLUMNS, arguments_from=grounds, replace=True)
    middleware: list[Any]
    if variant in ("bare", CONTROL):
        middleware = []
    elif variant == "spans only":
        middleware = [SpansOnly()]
    else:
        middleware = [integration.ContextIntegrityMiddleware()]
    return create_agent(_script(), tools=TOOLS, middleware=middleware)


def _one_run(variant: str, host_spans: int = 0) -> tuple[float, float]:
    """Wall time and this process's CPU time of one run (CPU time is less hurt by a busy machine)."""
    agent = _agent(variant)  # built outside the clock
    # Every run starts from the same collector state: the garbage of the run before (and of
    # building this agent) is not collected on this run's clock, whichever contender it was.
    gc.collect()
    exported = _Discard.exported
    wall, cpu = time.perf_counter(), time.process_time()
    out = agent.invoke({"messages": [{"role": "user", "content": "fetch 20 rows"}]})
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert sum(isinstance(m, ToolMessage) for m in out["messages"]) == STEPS
    # Each side is what it says: the bare agent exports no span, the floor its GenAI spans alone
    # (an invoke_agent, a chat per model call, an execute_tool per tool call), ours those and the summary.
    # Beside OpenInference (host_spans: what it exports for the bare run) ours adopts its spans.
    spans = _Discard.exported - exported
    ours = 2 * STEPS + 2 if host_spans == 0 else 0
    expected = host_spans + {"bare": 0, CONTROL: 0, "spans only": 2 * STEPS + 2}.get(variant, ours + 1)
    assert spans == expected, f"{variant}: {spans} spans, expected {expected}"
    return wall, cpu


def _measure(rounds: int, variants: tuple[str, ...], host_spans: int) -> dict[str, float]:
    """The ratios of each contender to the bare agent, printed; keyed "<clock> <variant>"."""
    for variant in variants:  # warm-up: imports, schema caches
        _one_run(variant, host_spans)
    times: dict[str, list[tuple[float, float]]] = {v: [] for v in variants}
    for r in range(rounds):
        shift = r % len(variants)  # the order rotates, so no contender always runs first
        for variant in variants[shift:] + variants[:shift]:
            times[variant].append(_one_run(variant, host_spans))
    ratios: dict[str, float] = {}
    for clock, index in (("wall", 0), ("cpu", 1)):
        bare = [t[index] for t in times["bare"]]
        print(f"  {clock:<4} bare        median {statistics.median(bare) * 1000:6.1f} ms")
        for variant in variants[1:]:
            judged = [t[index] for t in times[variant]]
            median = statistics.median(judged) / statistics.median(bare)
            # The target's figure: each round's own ratio, the sides of one round having run
            # seconds apart, under one load; its median over the rounds.
            per_round = statistics.median(j / b for j, b in zip(judged, bare, strict=True))
            ratios[f"{clock} {variant}"] = per_round
            print(
                f"  {clock:<4} {variant:<11} median {statistics.median(judged) * 1000:6.1f} ms  "
                f"ratio median {median:4.2f}x  min {min(judged) / min(bare):4.2f}x  per round {per_round:4.2f}x"
            )
    return ratios


def _verdicts(ratios: dict[str, float], beside: str) -> None:
    for variant in ("columns", "every seam"):
        ratio = ratios[f"cpu {variant}"]
        verdict = "met" if ratio <= TARGET else "MISSED"
        print(f"target <= {TARGET:.2f}x (cpu, per round), {variant}, {beside}: {verdict} ({ratio:.3f}x)")


def main(rounds: int = 100) -> tuple[float, float, float, float]:
    """The CPU ratios of the two judged sides to the bare agent (columns, every seam), with no
    telemetry on the bare side and then with OpenInference's instrumentor on in both."""
    from openinference.instrumentation.langchain import LangChainInstrumentor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Discard()))
    # instrument=(): setup() would otherwise arm the framework for the bare side too; the judged side adds the middleware itself.
    ci.setup(tracer_provider=provider, check_column_types="warn", instrument=())
    ci.declare_tool("list_ids")  # the ground the every-seam side names
    print(f"LangChain create_agent, {STEPS} tool steps + answer, {rounds} rounds (interleaved)")
    print("no telemetry on the bare side (LangChain has none of its own): every span is ours")
    alone = _measure(rounds, ("bare", "spans only", "columns", "every seam", CONTROL), host_spans=0)
    floor = alone["cpu spans only"]
    for variant in ("columns", "every seam"):
        print(
            f"  cpu {variant} / spans only: {alone[f'cpu {variant}'] / floor:4.2f}x (what the checks add to the floor)"
        )
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    # OpenInference's chat spans carry every message as attributes, past the SDK's default limit
    # of 128: the SDK says so at WARNING on each of them, on both sides alike.
    attribute_log = logging.getLogger("opentelemetry.attributes")
    level = attribute_log.level
    attribute_log.setLevel(logging.ERROR)
    try:
        exported = _Discard.exported
        remove_run_ends()
        agent = create_agent(_script(), tools=TOOLS)
        agent.invoke({"messages": [{"role": "user", "content": "fetch 20 rows"}]})
        host_spans = _Discard.exported - exported
        print(
            f"OpenInference's LangChain instrumentor on in both sides ({host_spans} spans of its own a run)"
        )
        beside = _measure(rounds, ("bare", "columns", "every seam", CONTROL), host_spans=host_spans)
    finally:
        instrumentor.uninstrument()
        attribute_log.setLevel(level)
    print(f"  load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    _verdicts(alone, "no telemetry")
    _verdicts(beside, "beside OpenInference")
    ci.shutdown()
    return (
        alone["cpu columns"],
        alone["cpu every seam"],
        beside["cpu columns"],
        beside["cpu every seam"],
    )


if __name__ == "__main__":
    main(int(sys.argv[1])) if len(sys.argv) > 1 else main()
