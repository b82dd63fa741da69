"""Enforce fails closed, every encounter is counted, and work on other threads belongs to its run.

Issue 8, items 1 and 2. Each failure here is one of our own (the judge's bookkeeping, a span we
could not open, emission): the model gets the refusal, never rows nobody judged, and the seam's
rows still count the encounter (``unreachable``).
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.contracts import define_contract
from context_integrity.judge import ContractBook, Dials, RunJudge
from context_integrity.judge import seams as seams_module
from context_integrity.judge.seams import unjudged_refusal
from context_integrity.ledger import LedgerRow
from context_integrity.telemetry.emit import SpanEmitter
from context_integrity.telemetry.run import tool_call as tool_call_module
from context_integrity.telemetry.run.context import CarryingExecutor
from context_integrity.telemetry.schema import names

BAD_ROWS = [{"lun": ""}]


def _row(rows: list[LedgerRow], check: str, seam: str) -> LedgerRow:
    return next(r for r in rows if (r.check, r.seam) == (check, seam))


@pytest.fixture
def enforce(telemetry: Telemetry) -> Telemetry:
    telemetry.configure(check_column_types="enforce", notice_empty_lookups=True)
    ci.declare_tool("producer")
    ci.declare_tool("luns", result_columns={"lun": "number"}, arguments_from=["producer"])
    return telemetry


def _boom(*_: Any, **__: Any) -> Any:
    raise RuntimeError("our bookkeeping broke")


class _Unreadable(list[dict[str, Any]]):
    """A rowset whose rows raise when read: the column check cannot complete on it."""

    def __iter__(self) -> Iterator[dict[str, Any]]:
        raise RuntimeError("rows exploded")


# ── item 1: enforce fails closed ─────────────────────────────────────────


def test_a_result_the_column_check_could_not_read_is_refused_in_enforce(enforce: Telemetry) -> None:
    class Rows(list[dict[str, Any]]):
        def __len__(self) -> int:
            raise RuntimeError("len exploded")

    rows = Rows([{"lun": ""}])
    with ci.run("q") as agent_run:
        delivered = agent_run.tool_result("luns", "c1", rows)
    assert delivered == unjudged_refusal("luns")
    assert _row(agent_run.ledger(), "column-type-mismatch", "write").unreachable == 1


def test_a_list_subclass_is_read_through_the_base_type_bounded_by_len(enforce: Telemetry) -> None:
    """Item 4: an endless or side-effecting ``__iter__`` is never called; ``len`` bounds the read."""
    touched: list[str] = []

    class Endless(list[dict[str, Any]]):
        def __iter__(self) -> Iterator[dict[str, Any]]:
            touched.append("iter")
            while True:
                yield {"lun": 1}

    class Shorter(list[dict[str, Any]]):
        def __len__(self) -> int:
            return 1

    with ci.run("q") as agent_run:
        refused = agent_run.tool_result("luns", "c1", Endless([{"lun": ""}]))
        passed = agent_run.tool_result("luns", "c2", Shorter([{"lun": 1}, {"lun": ""}]))
    assert isinstance(refused, str) and refused.startswith("Result rejected: ") and touched == []
    assert isinstance(passed, Shorter)  # only the one row len admits was read, and it is a number
    row = _row(agent_run.ledger(), "column-type-mismatch", "write")
    assert (row.checked, row.findings) == (2, 1)


def test_the_judges_own_bookkeeping_raising_refuses_and_counts_unreachable(
    enforce: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(seams_module, "ToolResultSeen", _boom)
    with ci.run("q") as agent_run:
        delivered = agent_run.tool_result("luns", "c1", BAD_ROWS)
        unjudged = agent_run.tool_result("producer", "c2", BAD_ROWS)
    assert delivered == unjudged_refusal("luns")
    assert unjudged is BAD_ROWS  # no columns declared: nothing to enforce, nothing withheld
    rows = agent_run.ledger()
    assert _row(rows, "column-type-mismatch", "write").unreachable == 2
    assert _row(rows, "empty-lookup", "write").unreachable == 2


def test_a_refusal_stands_when_emitting_its_findings_fails(
    enforce: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SpanEmitter, "findings", _boom)
    with ci.run("q") as agent_run:
        delivered = agent_run.tool_result("luns", "c1", BAD_ROWS)
    assert isinstance(delivered, str) and delivered.startswith("Result rejected: ")
    assert enforce.one(names.tool_span_name("luns")).end_time is not None


def test_a_tool_span_that_cannot_open_still_refuses_in_enforce(
    enforce: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    @ci.tool(name="decorated", result_columns={"lun": "number"})
    def decorated() -> list[dict[str, Any]]:
        return BAD_ROWS

    monkeypatch.setattr(tool_call_module, "start_held", _boom)  # where a tool span of ours starts
    with ci.run("q") as agent_run:
        from_decorated: object = decorated()  # typed as the function's rows; enforce refuses them
        from_reported = agent_run.tool_result("luns", "c1", BAD_ROWS)
    assert from_decorated == unjudged_refusal("decorated")
    assert from_reported == unjudged_refusal("luns")
    assert _row(agent_run.ledger(), "column-type-mismatch", "write").unreachable == 2


@pytest.mark.parametrize("call_id", [["x"], {"a": 1}, 12, object(), "c" * 100_000])
def test_an_odd_call_id_is_judged_and_refused(enforce: Telemetry, call_id: Any) -> None:
    with ci.run("q") as agent_run:
        agent_run.tool_result("producer", call_id, [{"id": "LUN-0007"}])
        delivered = agent_run.tool_result("luns", call_id, BAD_ROWS)
    assert isinstance(delivered, str) and delivered.startswith("Result rejected: ")
    assert _row(agent_run.ledger(), "column-type-mismatch", "write").findings == 1


def test_one_runs_tools_on_many_threads_keep_exact_books_and_never_pass_mistyped_rows() -> None:
    book = ContractBook()
    book.declare(define_contract("prod", result_columns={"lun": "number"}))
    book.declare(define_contract("cons", result_columns={"lun": "number"}, arguments_from=["prod"]))
    judge = RunJudge(book, Dials(check_column_types="enforce", notice_empty_lookups=True))
    judge.begin()
    threads, per_thread = 6, 150
    unrefused: list[int] = []
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can

    def work(t: int) -> None:
        for i in range(per_thread):
            verdict = judge.write("prod", f"p{t}-{i}", [{"lun": "bad", "id": f"id-{t}-{i}"}])
            if verdict.refusal is None:
                unrefused.append(i)
            judge.write("cons", f"c{t}-{i}", [], arguments={"q": f"id-{t}-{i}"})

    try:
        workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(before)
    calls = threads * per_thread
    assert unrefused == [] and judge.internal_errors == []
    rows = judge.report()
    assert _row(rows, "column-type-mismatch", "write").findings == calls
    assert _row(rows, "column-type-mismatch", "write").not_applicable == calls  # the empty lookups
    lookups = _row(rows, "empty-lookup", "write")
    assert (lookups.checked, lookups.findings, lookups.unreachable) == (calls, calls, 0)
    assert lookups.not_applicable == calls  # the producers' own results


# ── item 1: work started inside a run is attributed to it ─────────────────


def _under_run(telemetry: Telemetry, agent: str) -> tuple[int, int]:
    """(tool spans under the run span, the run's write-seam checked count)."""
    run_span = telemetry.one(names.run_span_name(agent))
    tools = [s for s in telemetry.named(names.tool_span_name("luns")) if s.parent is not None]
    under = [s for s in tools if s.parent is not None and s.parent.span_id == run_span.context.span_id]
    return len(under), len(tools)


@pytest.fixture
def luns_tool(telemetry: Telemetry) -> Any:
    telemetry.configure(check_column_types="warn")

    @ci.tool(name="luns", result_columns={"lun": "number"})
    def luns(n: int) -> list[dict[str, Any]]:
        return BAD_ROWS

    return luns


def _mismatches(agent_run: ci.Run) -> int:
    return _row(agent_run.ledger(), "column-type-mismatch", "write").findings


def test_carry_run_attributes_executor_submit_to_the_run(telemetry: Telemetry, luns_tool: Any) -> None:
    with ci.run("q", agent_name="submit") as agent_run, ThreadPoolExecutor(2) as pool:
        for future in [pool.submit(ci.carry_run(luns_tool), n) for n in range(4)]:
            future.result()
    assert _mismatches(agent_run) == 4
    assert _under_run(telemetry, "submit") == (4, 4)


def test_carry_run_attributes_threading_thread_to_the_run(telemetry: Telemetry, luns_tool: Any) -> None:
    with ci.run("q", agent_name="thread") as agent_run:
        workers = [threading.Thread(target=ci.carry_run(luns_tool), args=(n,)) for n in range(3)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert _mismatches(agent_run) == 3
    assert _under_run(telemetry, "thread") == (3, 3)


def test_run_in_executor_is_attributed_with_carry_run_or_the_carrying_executor(
    telemetry: Telemetry, luns_tool: Any
) -> None:
    async def main() -> ci.Run:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(CarryingExecutor(2))
        async with ci.run("q", agent_name="executor") as agent_run:
            await loop.run_in_executor(None, luns_tool, 1)
            with ThreadPoolExecutor(1) as plain:
                await loop.run_in_executor(plain, ci.carry_run(luns_tool), 2)
        return agent_run

    agent_run = asyncio.run(main())
    assert _mismatches(agent_run) == 2
    assert _under_run(telemetry, "executor") == (2, 2)


# ── item 2: every encounter is counted ───────────────────────────────────


class _RaisingContent(ci.Message):
    pass


class _Exploding:
    def __str__(self) -> str:
        raise RuntimeError("content exploded")

    __repr__ = __str__

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("content exploded")


@pytest.mark.parametrize(
    "frame",
    [
        ci.RequestFrame(messages=(ci.Message("user", "hi"),), tools=(None,)),  # type: ignore[arg-type]
        ci.RequestFrame(messages=(None, 42), tools=()),  # type: ignore[arg-type]
        ci.RequestFrame(
            messages=(ci.Message("assistant", "x", tool_calls=(None, 5)),),  # type: ignore[arg-type]
            tools=(ci.ToolDefinition("luns"),),
        ),
        ci.RequestFrame(
            messages=(ci.Message("tool", _Exploding(), tool_name="producer", tool_call_id="c1"),),
            tools=(ci.ToolDefinition("luns"),),
        ),
    ],
    ids=["tools-hold-None", "messages-hold-garbage", "garbage-tool-calls", "content-raises"],
)
def test_a_request_that_cannot_be_read_is_counted_unreachable(
    enforce: Telemetry, frame: ci.RequestFrame
) -> None:
    with ci.run("q") as agent_run:
        agent_run.tool_result("producer", "c1", [{"id": "LUN-0007"}])
        with agent_run.request(frame) as call:
            call.respond(calls=[ci.ToolCall("luns", "c2", {"id": "LUN-0007"})])
    row = _row(agent_run.ledger(), "dangling-reference", "compose")
    assert row.checked + row.not_applicable + row.unreachable == 1


def test_a_response_holding_garbage_is_counted_unreachable(enforce: Telemetry) -> None:
    frame = ci.RequestFrame(messages=(ci.Message("user", "hi"),), tools=(ci.ToolDefinition("luns"),))
    with ci.run("q") as agent_run, agent_run.request(frame) as call:
        call.respond(calls=[None, ci.ToolCall("luns", ["odd"], {"id": "x"})])  # type: ignore[list-item, arg-type]
    row = _row(agent_run.ledger(), "unsupported-argument", "choice")
    assert row.checked + row.not_applicable + row.unreachable == 1


@pytest.mark.parametrize(
    ("arguments", "path"),
    [('{"id": "LUN-0007"}', "id"), ("LUN-0007", "$"), (["LUN-0007"], "$.0"), (b'{"id": "LUN-0007"}', "id")],
)
def test_tool_result_takes_arguments_of_any_shape(enforce: Telemetry, arguments: Any, path: str) -> None:
    with ci.run("q") as agent_run:
        agent_run.tool_result("producer", "c1", [{"id": "LUN-0007"}])
        delivered = agent_run.tool_result("luns", "c2", [], arguments=arguments)
    assert delivered == []
    (finding,) = [f for f in agent_run.findings if f.kind == "empty-lookup"]
    assert finding.predicate == path


@pytest.mark.parametrize("arguments", [5, None, object(), "[1, 2]", "{not json"])
def test_tool_result_never_raises_on_arguments(enforce: Telemetry, arguments: Any) -> None:
    with ci.run("q") as agent_run:
        delivered = agent_run.tool_result("luns", "c2", [], arguments=arguments)
    assert delivered == []
    assert _row(agent_run.ledger(), "empty-lookup", "write").unreachable == 1
