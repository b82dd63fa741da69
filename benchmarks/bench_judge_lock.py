"""What the run's lock costs a tool call: RunJudge.write with its RLock against a no-op lock.

Interleaved over rounds; prints microseconds per call (median and min) and the ratio.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from typing import Any

from context_integrity.contracts import define_contract
from context_integrity.judge import ContractBook, Dials, RunJudge

CALLS = 2000
ROWS = [{"lun": i, "host": f"host-{i}"} for i in range(10)]


class _NoLock(contextlib.AbstractContextManager[None]):
    def __exit__(self, *_: Any) -> None:
        return None


def _judge(locked: bool) -> RunJudge:
    book = ContractBook()
    book.declare(define_contract("lookup", result_columns={"lun": "number", "host": "string"}))
    judge = RunJudge(book, Dials(check_column_types="enforce"))
    judge.begin()
    if not locked:
        judge.lock = _NoLock()  # type: ignore[assignment]
    return judge


def _per_call_us(judge: RunJudge) -> float:
    start = time.perf_counter()
    for i in range(CALLS):
        judge.write("lookup", f"c{i}", ROWS)
    return (time.perf_counter() - start) / CALLS * 1e6


def main() -> None:
    locked: list[float] = []
    bare: list[float] = []
    for _ in range(7):
        locked.append(_per_call_us(_judge(True)))
        bare.append(_per_call_us(_judge(False)))
    print(f"RunJudge.write, 10 clean rows, enforce; us per call over {CALLS} calls (median / min)")
    print(f"  with the run lock  {statistics.median(locked):7.2f} / {min(locked):7.2f}")
    print(f"  no lock            {statistics.median(bare):7.2f} / {min(bare):7.2f}")
    print(f"  ratio              {statistics.median(locked) / statistics.median(bare):7.3f}")


if __name__ == "__main__":
    main()
