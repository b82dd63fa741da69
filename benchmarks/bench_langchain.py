"""What the LangChain integration costs a real ``create_agent`` run, as a ratio to the bare agent.

A scripted 20-step run (20 model turns that each call one tool, then the answer: 21 model calls,
20 tool runs), side by side in one process, interleaved over several rounds with the order
alternating: the bare agent against the same agent with ``ContextIntegrityMiddleware`` (what
``instrument_all()`` appends), its tool declared with result columns and judged in warn (and
again with grounds declared too, so every seam reads every request and response), every span
going through an SDK provider to an exporter that keeps nothing. LangChain has no OpenTelemetry
of its own, so the spans of the second run are all ours. Target: median ratio <= 1.10x (CPU time: the machine is shared).

Run: ``python benchmarks/bench_langchain.py [ROUNDS]``.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import context_integrity as ci
from context_integrity.integrations import langchain as integration

STEPS = 20
TARGET = 1.10
COLUMNS = {"id": "number", "name": "string", "email": "string"}


class _Discard(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class ScriptedModel(FakeMessagesListChatModel):
    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self.bind(tools=list(tools), tool_choice=tool_choice, **kwargs)


@tool
def get_row(i: int) -> list[dict[str, Any]]:
    """Fetch a row."""
    return [{"id": i, "name": f"row{i}", "email": f"u{i}@example.com"}]


def _script() -> ScriptedModel:
    turns = [
        AIMessage(content="", tool_calls=[{"name": "get_row", "args": {"i": i}, "id": f"call_{i:02d}"}])
        for i in range(STEPS)
    ]
    return ScriptedModel(responses=[*turns, AIMessage(content="all rows fetched")])


def _one_run(variant: str) -> tuple[float, float]:
    """Wall time and this process's CPU time of one run (CPU time is less hurt by a busy machine)."""
    if variant == "bare":
        # The bare agent runs as it would without the library: no callback of ours either.
        integration.remove_run_ends()
    else:
        # "columns": the write seam judged; "every seam": grounds declared too, so compose and
        # choice read every request and response.
        grounds = ["list_ids"] if variant == "every seam" else None
        ci.declare_tool("get_row", result_columns=COLUMNS, arguments_from=grounds, replace=True)
    middleware = [] if variant == "bare" else [integration.ContextIntegrityMiddleware()]
    agent = create_agent(_script(), tools=[get_row], middleware=middleware)  # built outside the clock
    wall, cpu = time.perf_counter(), time.process_time()
    out = agent.invoke({"messages": [{"role": "user", "content": "fetch 20 rows"}]})
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert sum(isinstance(m, ToolMessage) for m in out["messages"]) == STEPS
    return wall, cpu


def main(rounds: int) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Discard()))
    # instrument=(): setup() would otherwise arm the framework for the bare side too; the judged side adds the middleware itself.
    ci.setup(tracer_provider=provider, check_column_types="warn", instrument=())
    variants = ("bare", "columns", "every seam")
    for variant in variants:  # warm-up: imports, schema caches
        _one_run(variant)
    times: dict[str, list[tuple[float, float]]] = {v: [] for v in variants}
    for r in range(rounds):
        for variant in variants if r % 2 == 0 else tuple(reversed(variants)):
            times[variant].append(_one_run(variant))
    print(f"LangChain create_agent, {STEPS} tool steps + answer, {rounds} rounds (interleaved)")
    ratios: dict[str, float] = {}
    for clock, index in (("wall", 0), ("cpu", 1)):
        bare = [t[index] for t in times["bare"]]
        print(f"  {clock:<4} bare        median {statistics.median(bare) * 1000:6.1f} ms")
        for variant in variants[1:]:
            judged = [t[index] for t in times[variant]]
            median = statistics.median(judged) / statistics.median(bare)
            ratios[f"{clock} {variant}"] = median
            print(
                f"  {clock:<4} {variant:<11} median {statistics.median(judged) * 1000:6.1f} ms  "
                f"ratio median {median:4.2f}x  min {min(judged) / min(bare):4.2f}x"
            )
    for variant in variants[1:]:
        ratio = ratios[f"cpu {variant}"]
        verdict = "met" if ratio <= TARGET else "MISSED"
        print(f"target <= {TARGET:.2f}x (cpu median), {variant}: {verdict} ({ratio:.2f}x)")
    ci.shutdown()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9)
