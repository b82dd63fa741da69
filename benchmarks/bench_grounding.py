"""What does the choice-seam check cost, next to the least a substring scan could do, and how does it grow?

The reference shape: one request frame of 200 messages carrying ~100 KB of ground (system prompt,
user messages and tool results, plus a few short assistant turns), and one model response whose armed
call has 20 string arguments. Measured, in one process, with the repetitions interleaved so drift lands
on every contender alike, and reported as medians:

* **check**: the whole choice seam as a run performs it -- ``RunJudge.judge_response(frame, response)``:
  splitting the frame into ground and the model's own text, reading the tool's enums, running
  ``check_unsupported_arguments`` and noting the ledger;
* **floor**: a plain scan of the same frame -- for each argument, ``text.lower().find(needle)`` over
  every message -- with no splitting, no fences, no findings: the issue's floor;
* **lowered-once** (information): the same scan with every message lowered once per call instead of once
  per argument -- the least any substring grounding can do, since the check itself lowers its corpus
  once. check / lowered-once is the check's own overhead over pure searching.

Both are measured at 1x, 10x and 100x the frame (200 / 2,000 / 20,000 messages; ~100 KB / 1 MB / 10 MB).
The table prints check / floor at each size, and time(Nx) / time(1x) for each contender: a linear cost
prints about 10 and 100 there; a quadratic one would print about 100 and 10,000.

Two response shapes are measured. **served**: every argument is served, only in the frame's LAST
message, so every search runs to the end of the corpus (the worst case for a passing check, and the
same work the floor always does). **unserved**: no argument is served anywhere, so the check also
searches the model's own text and builds 20 findings (information: the worst case overall).

It is a measurement, not a test: it prints and exits 0. Runs in well under a minute.

    PYTHONPATH=src python benchmarks/bench_grounding.py
"""

from __future__ import annotations

import statistics
import sys
import timeit
from collections.abc import Callable

from context_integrity.contracts import define_contract
from context_integrity.judge import ContractBook, Dials, RunJudge
from context_integrity.loop import Message, ModelResponse, RequestFrame, ToolCall, ToolDefinition

MESSAGES = 200
ARGUMENTS = 20
SCALES = (1, 10, 100)
REPEATS = 11
# Calls per timed sample at each scale, so a sample is long enough to measure and 100x stays quick.
LOOPS = {1: 20, 10: 2, 100: 1}
TOOL = "hosts_by_wwpn"
PRODUCER = "list_hosts"
FILLER = "initiator logged in on fabric A, zone default, port state online; "  # 66 characters

SERVED = {f"a{i:02d}": f"HOST-{i * 7919:08d}-{i:02d}" for i in range(ARGUMENTS)}
UNSERVED = {f"a{i:02d}": f"GHOST-{i * 104729:09d}-{i:02d}" for i in range(ARGUMENTS)}


def frame(scale: int) -> RequestFrame:
    """~100 KB of ground per 200 messages; the served values appear only in the very last message."""
    messages: list[Message] = []
    count = MESSAGES * scale
    for i in range(count):
        if i % 10 == 5:  # one message in ten is the model's own short turn: not ground
            messages.append(Message("assistant", f"Checking the next batch of hosts ({i})."))
            continue
        role = "user" if i == 0 else "tool"
        text = f"row {i}: " + FILLER * 8 + f"host-{i:08d}"
        if i == count - 1:
            text += " " + " ".join(SERVED.values())
        messages.append(Message(role, text, tool_name=None if role == "user" else PRODUCER))
    return RequestFrame.of(
        messages,
        system="You operate a storage fabric. Use the tools; never guess identifiers.",
        tools=[ToolDefinition(PRODUCER), ToolDefinition(TOOL)],
    )


def ground_bytes(request: RequestFrame) -> int:
    texts = [request.system or ""] + [str(m.content) for m in request.messages if m.role != "assistant"]
    return sum(len(t.encode()) for t in texts)


def judge() -> RunJudge:
    book = ContractBook()
    book.declare(define_contract(PRODUCER))
    book.declare(define_contract(TOOL, arguments_from=[PRODUCER]))
    return RunJudge(book, Dials())


def floor(request: RequestFrame, needles: list[str]) -> int:
    hits = 0
    for needle in needles:
        for message in request.messages:
            if message.content.lower().find(needle) >= 0:  # type: ignore[union-attr]
                hits += 1
    return hits


def lowered_once(request: RequestFrame, needles: list[str]) -> int:
    texts = [message.content.lower() for message in request.messages]  # type: ignore[union-attr]
    hits = 0
    for needle in needles:
        for text in texts:
            if text.find(needle) >= 0:
                hits += 1
    return hits


def contenders(scale: int, arguments: dict[str, str]) -> dict[str, Callable[[], object]]:
    request = frame(scale)
    response = ModelResponse(calls=(ToolCall(TOOL, "c1", arguments),))
    run_judge = judge()
    needles = [value.lower() for value in arguments.values()]
    return {
        "check": lambda: run_judge.judge_response(request, response),
        "floor": lambda: floor(request, needles),
        "lowered-once": lambda: lowered_once(request, needles),
    }


def measure(arguments: dict[str, str]) -> dict[tuple[int, str], float]:
    """Median seconds per call for every (scale, contender), all repetitions interleaved."""
    prepared = {scale: contenders(scale, arguments) for scale in SCALES}
    samples: dict[tuple[int, str], list[float]] = {
        (scale, name): [] for scale in SCALES for name in ("check", "floor", "lowered-once")
    }
    for _ in range(REPEATS):
        for scale in SCALES:
            for name, call in prepared[scale].items():
                loops = LOOPS[scale]
                (total,) = timeit.repeat(call, number=loops, repeat=1)
                samples[(scale, name)].append(total / loops)
    return {key: statistics.median(values) for key, values in samples.items()}


def table(label: str, arguments: dict[str, str]) -> None:
    medians = measure(arguments)
    print(f"\n{label}")
    header = (
        f"{'size':>5} {'messages':>9} {'ground':>9} {'floor ms':>10} {'check ms':>10} "
        f"{'check/floor':>12} {'floor Nx/1x':>12} {'check Nx/1x':>12} {'check/lowered-once':>19}"
    )
    print(header)
    print("-" * len(header))
    for scale in SCALES:
        request = frame(scale)
        floor_s, check_s = medians[(scale, "floor")], medians[(scale, "check")]
        print(
            f"{scale:>4}x {len(request.messages):>9,} {ground_bytes(request) / 1000:>7,.0f}KB "
            f"{floor_s * 1e3:>10.2f} {check_s * 1e3:>10.2f} {check_s / floor_s:>11.2f}x "
            f"{floor_s / medians[(1, 'floor')]:>11.1f}x {check_s / medians[(1, 'check')]:>11.1f}x "
            f"{check_s / medians[(scale, 'lowered-once')]:>18.2f}x"
        )


def sanity() -> None:
    """The measured check really judges: served arguments pass, unserved ones file 20 findings."""
    request = frame(1)
    assert 90_000 <= ground_bytes(request) <= 110_000, ground_bytes(request)
    passed = judge().judge_response(request, ModelResponse(calls=(ToolCall(TOOL, "c1", SERVED),)))
    failed = judge().judge_response(request, ModelResponse(calls=(ToolCall(TOOL, "c1", UNSERVED),)))
    assert passed.findings == [] and len(failed.findings) == ARGUMENTS
    needles = [v.lower() for v in SERVED.values()]
    assert floor(request, needles) == lowered_once(request, needles) == ARGUMENTS


def main() -> int:
    sanity()
    print(
        f"choice seam: 1 armed call x {ARGUMENTS} string arguments; median of {REPEATS} interleaved "
        f"repetitions ({', '.join(f'{s}x: {n} call(s) per sample' for s, n in LOOPS.items())})"
    )
    table("served (every value only in the last message; the check passes)", SERVED)
    table("unserved (no value anywhere; the check files 20 findings)  [info]", UNSERVED)
    return 0


if __name__ == "__main__":
    sys.exit(main())
