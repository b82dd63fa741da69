"""What the LangChain integration costs a real ``create_agent`` run, as a ratio to the bare agent.

A scripted 20-step run (20 model turns that each call one tool, then the answer: 21 model calls,
20 tool runs), side by side in one process, interleaved over several rounds with the order
alternating: the bare agent against the same agent with ``ContextIntegrityMiddleware`` (what
``ci.setup()`` appends), its tool declared with result columns and judged in warn, every span
going through an SDK provider to an exporter that keeps nothing. LangChain has no OpenTelemetry
of its own, so the spans of the second run are all ours. Target: median ratio <= 1.10x.

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


def _one_run(variant: str) -> float:
    if variant == "bare":
        # The bare agent runs as it would without the library: no callback of ours either.
        integration.remove_run_ends()
    middleware = [integration.ContextIntegrityMiddleware()] if variant == "with" else []
    agent = create_agent(_script(), tools=[get_row], middleware=middleware)  # built outside the clock
    started = time.perf_counter()
    out = agent.invoke({"messages": [{"role": "user", "content": "fetch 20 rows"}]})
    elapsed = time.perf_counter() - started
    assert sum(isinstance(m, ToolMessage) for m in out["messages"]) == STEPS
    return elapsed


def main(rounds: int) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Discard()))
    ci.setup(tracer_provider=provider, check_column_types="warn")
    ci.declare_tool("get_row", result_columns={"id": "number", "name": "string", "email": "string"})
    variants = ("bare", "with")
    for variant in variants:  # warm-up: imports, schema caches
        _one_run(variant)
    times: dict[str, list[float]] = {v: [] for v in variants}
    for r in range(rounds):
        for variant in variants if r % 2 == 0 else tuple(reversed(variants)):
            times[variant].append(_one_run(variant))
    bare_median, bare_min = statistics.median(times["bare"]), min(times["bare"])
    print(f"LangChain create_agent, {STEPS} tool steps + answer, {rounds} rounds (interleaved)")
    for variant in variants:
        median, low = statistics.median(times[variant]), min(times[variant])
        print(
            f"  {variant:<5} median {median * 1000:7.1f} ms  min {low * 1000:7.1f} ms  "
            f"ratio median {median / bare_median:4.2f}x  min {low / bare_min:4.2f}x"
        )
    ratio = statistics.median(times["with"]) / bare_median
    print(f"target <= {TARGET:.2f}x: {'met' if ratio <= TARGET else 'MISSED'} ({ratio:.2f}x)")
    ci.shutdown()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9)
