"""How the grounding checks' cost grows with the conversation: linear in turns, no cliff.

A conversation whose every turn is the shape agents produce: the model calls a
producer (``list_hosts``), its result (five JSON rows of ids) comes back, and the
next request asks a consumer (``hosts_by_wwpn``, ``arguments_from=["list_hosts"]``)
with an id that result served. Each turn is one compose (the request) and one
choice (the response) on the same judge, the frame holding the whole
conversation so far (append-only, as a host keeps its history).

Measured side by side in one process, over interleaved rounds (median and min):

* **linear**: the judge's total cost over a 400-turn conversation against a
  100-turn one. Linear is 4x; quadratic (every request re-reading the whole
  frame, as before) is 16x. Target: <= 6x.
* **per request**: the last request of the 400-turn conversation against the
  last of the 100-turn one: what a request costs should follow what it added,
  not how long the conversation is. Target: <= 2x.
* **no cliff**: through ``ci.run`` and ``run.request``, a request after 3,000
  producer results against one after 500 (the producer memory keeps 2,000).
  Target: <= 3x. It used to cascade past 2,000: 0.7 ms became 38-51 ms.

Also printed for information: the same 400/100 ratio for a naive ``str.find``
scan of every frame, which is what reading each request whole grows like.

Run: ``python benchmarks/bench_conversation.py``.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import context_integrity as ci
from _harness import Measure, ratio, show
from context_integrity.contracts import define_contract
from context_integrity.judge import ContractBook, Dials, RunJudge
from context_integrity.loop import Message, ModelResponse, RequestFrame, ToolCall, ToolDefinition

PRODUCER, CONSUMER = "list_hosts", "hosts_by_wwpn"
TOOLS = (ToolDefinition(PRODUCER), ToolDefinition(CONSUMER))
SHORT, LONG = 100, 400
LINEAR_TARGET, REQUEST_TARGET, CLIFF_TARGET = 6.0, 2.0, 3.0
FEW_RESULTS, MANY_RESULTS = 500, 3000


def _rows(turn: int) -> str:
    rows = [
        {"host": f"host-{turn:05d}-{i}", "wwpn": f"50:06:01:{turn % 256:02x}:{i:02x}:3c:a1:{turn // 256:02x}"}
        for i in range(5)
    ]
    return json.dumps(rows)


def conversation(turns: int) -> list[tuple[RequestFrame, ModelResponse]]:
    """The (request, response) of every turn, built ahead so only judging is timed."""
    history: list[Message] = [Message("user", "Which hosts on fabric A have no recent backup?")]
    steps: list[tuple[RequestFrame, ModelResponse]] = []
    for turn in range(turns):
        call = ToolCall(PRODUCER, f"p{turn}", {"fabric": "A", "page": turn})
        history.append(Message("assistant", f"Reading page {turn} of the hosts.", tool_calls=(call,)))
        history.append(Message("tool", _rows(turn), tool_name=PRODUCER, tool_call_id=f"p{turn}"))
        frame = RequestFrame(messages=tuple(history), system="You operate a storage fabric.", tools=TOOLS)
        ask = ToolCall(CONSUMER, f"c{turn}", {"host": f"host-{turn:05d}-3"})
        steps.append((frame, ModelResponse(calls=(ask,))))
    return steps


def _judge() -> RunJudge:
    book = ContractBook()
    book.declare(define_contract(PRODUCER))
    book.declare(define_contract(CONSUMER, arguments_from=[PRODUCER]))
    return RunJudge(book, Dials())


def judge_conversation(steps: list[tuple[RequestFrame, ModelResponse]]) -> tuple[float, float]:
    """(seconds for the whole conversation, seconds for its last request)."""
    judge = _judge()
    last = 0.0
    start = time.process_time()
    for frame, response in steps:
        began = time.process_time()
        judge.compose(frame)
        verdict = judge.choice(frame, response)
        last = time.process_time() - began
        assert not verdict.findings
    return time.process_time() - start, last


def naive_scan(steps: list[tuple[RequestFrame, ModelResponse]]) -> float:
    """Every request read whole: each argument searched in every message with ``str.find``."""
    start = time.process_time()
    for frame, response in steps:
        for call in response.calls:
            for value in call.arguments.values():
                needle = str(value).lower()
                any(str(m.content).lower().find(needle) >= 0 for m in frame.messages)
    return time.process_time() - start


class _Discard(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _producer_run(results: int) -> tuple[ci.Run, list[Message]]:
    """An open run whose conversation has served ``results`` producer results through frames."""
    history: list[Message] = [Message("user", "List every host.")]
    agent_run = ci.run("list every host", agent_name="bench")
    agent_run.__enter__()
    batch = 250
    for start in range(0, results, batch):
        for n in range(start, min(results, start + batch)):
            history.append(Message("tool", f"host-{n:06d} online", tool_name=PRODUCER, tool_call_id=f"r{n}"))
        agent_run.request(RequestFrame(messages=tuple(history), tools=TOOLS)).respond(ModelResponse())
    return agent_run, history


def _one_request(agent_run: ci.Run, history: list[Message], counter: list[int]) -> Callable[[], None]:
    def request() -> None:
        counter[0] += 1
        history.append(Message("user", f"and host {counter[0]}?"))  # the conversation goes on
        frame = RequestFrame(messages=tuple(history), tools=TOOLS)
        call = ToolCall(CONSUMER, f"c{counter[0]}", {"host": "host-000123"})
        agent_run.request(frame).respond(ModelResponse(calls=(call,)))

    return request


def cliff(rounds: int) -> Measure:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Discard()))
    ci.shutdown()
    ci.setup(tracer_provider=provider)
    ci.declare_tool(PRODUCER)
    ci.declare_tool(CONSUMER, arguments_from=[PRODUCER])
    few_run, few_history = _producer_run(FEW_RESULTS)
    many_run, many_history = _producer_run(MANY_RESULTS)
    few = _one_request(few_run, few_history, [0])
    many = _one_request(many_run, many_history, [0])
    few_samples: list[float] = []
    many_samples: list[float] = []
    few()
    many()
    pair = [(few, few_samples), (many, many_samples)]
    for round_ in range(rounds * 2):
        for fn, samples in pair if round_ % 2 == 0 else reversed(pair):
            began = time.process_time()
            for _ in range(20):
                fn()
            samples.append((time.process_time() - began) / 20)
    many_run.__exit__(None, None, None)
    few_run.__exit__(None, None, None)
    ci.shutdown()
    return ratio(
        f"run.request after {MANY_RESULTS:,} producer results / after {FEW_RESULTS}",
        many_samples,
        few_samples,
        CLIFF_TARGET,
        f"{statistics.median(few_samples) * 1e3:.2f} ms -> {statistics.median(many_samples) * 1e3:.2f} ms",
    )


def main(rounds: int = 7) -> list[Measure]:
    short, long = conversation(SHORT), conversation(LONG)
    totals: dict[int, list[float]] = {SHORT: [], LONG: []}
    lasts: dict[int, list[float]] = {SHORT: [], LONG: []}
    scans: dict[int, list[float]] = {SHORT: [], LONG: []}
    for _ in range(rounds):
        for turns, steps in ((SHORT, short), (LONG, long)):
            total, last = judge_conversation(steps)
            totals[turns].append(total)
            lasts[turns].append(last)
            scans[turns].append(naive_scan(steps))
    scan_growth = statistics.median(scans[LONG]) / statistics.median(scans[SHORT])
    per_turn_ms = statistics.median(totals[LONG]) / LONG * 1e3
    return show(
        [
            ratio(
                f"grounding, {LONG}-turn run / {SHORT}-turn run (total)",
                totals[LONG],
                totals[SHORT],
                LINEAR_TARGET,
                f"{per_turn_ms:.3f} ms/turn at {LONG}; a str.find scan of each frame grows {scan_growth:.1f}x",
            ),
            ratio(
                f"grounding, last request at turn {LONG} / at turn {SHORT}",
                lasts[LONG],
                lasts[SHORT],
                REQUEST_TARGET,
                f"{statistics.median(lasts[LONG]) * 1e3:.3f} ms",
            ),
            cliff(rounds),
        ]
    )


if __name__ == "__main__":
    main()
