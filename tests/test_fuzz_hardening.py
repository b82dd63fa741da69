"""Hostile input at every seam, every check armed, warn and enforce (issue 8's standing fuzz).

The laws: no seam raises; every encounter is counted (each seam call adds exactly one
disposition to each row armed there); in enforce a result the column check found mistyped, or
could not judge, never goes back without the refusal. ``CI_FUZZ_EXAMPLES`` sets the count (the
suite runs a few thousand; the report's 100,000-case run set it by hand).
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any, Literal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_integrity.contracts import define_contract
from context_integrity.judge import ContractBook, Dials, RunJudge
from context_integrity.judge.seams import unjudged_refusal
from context_integrity.loop import Message, ModelResponse, RequestFrame, ToolCall, ToolDefinition

EXAMPLES = int(os.environ.get("CI_FUZZ_EXAMPLES", "2000"))


class _Raises:
    def __str__(self) -> str:
        raise RuntimeError("no str")

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no eq")

    __hash__ = None  # type: ignore[assignment]


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.binary(max_size=4),
    st.just(math.inf),
    st.builds(_Raises),
)
values = st.recursive(
    scalars,
    lambda kids: st.one_of(
        st.lists(kids, max_size=3),
        st.tuples(kids, kids),
        st.dictionaries(st.sampled_from(["lun", "host", "id", "x"]), kids, max_size=3),
    ),
    max_leaves=12,
)
messages = st.one_of(
    st.builds(
        Message,
        role=st.sampled_from(["user", "assistant", "tool", "system"]),
        content=values,
        tool_name=st.one_of(st.none(), st.sampled_from(["producer", "lookup"])),
        tool_call_id=st.one_of(st.none(), st.text(max_size=4)),
        tool_calls=st.lists(
            st.one_of(values, st.builds(ToolCall, st.just("lookup"), st.text(max_size=3), st.just({}))),
            max_size=2,
        ),
    ),
    values,
)
frames = st.builds(
    RequestFrame,
    messages=st.lists(messages, max_size=4),
    tools=st.lists(
        st.one_of(st.builds(ToolDefinition, st.sampled_from(["lookup", "producer"])), values), max_size=3
    ),
)
responses = st.builds(
    ModelResponse,
    calls=st.lists(
        st.one_of(st.builds(ToolCall, st.sampled_from(["lookup", "producer"]), values, values), values),
        max_size=3,
    ),
    text=st.one_of(st.none(), st.text(max_size=8)),
)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.sampled_from(["lookup", "producer", "other"]), values, values),
        st.tuples(st.just("compose"), frames),
        st.tuples(st.just("choice"), frames, responses),
        st.tuples(st.just("claim"), st.one_of(st.none(), st.text(max_size=8)), values),
    ),
    max_size=6,
)


def _book() -> ContractBook:
    book = ContractBook()
    book.declare(define_contract("producer"))
    book.declare(
        define_contract(
            "lookup",
            result_columns={"lun": "number", "host": {"type": "string", "nullable": True}},
            arguments_from=["producer"],
            input_schema={"properties": {"tier": {"enum": ["gold", "silver"]}}},
        )
    )
    return book


BOOK = _book()


def _rows_armed(judge: RunJudge, seam: str) -> list[Any]:
    return [row for entry in judge.armed[seam] for row in entry.rows]  # type: ignore[index]


def _unreachable(judge: RunJudge) -> int:
    return next(r.unreachable for r in judge.report() if r.check == "column-type-mismatch")


def _counted(judge: RunJudge) -> dict[Any, int]:
    return {(r.check, r.seam): r.checked + r.not_applicable + r.unreachable for r in judge.report()}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(mode=st.sampled_from(["warn", "enforce"]), script=steps)
def test_every_seam_survives_hostile_input_counts_once_and_enforce_never_passes_unjudged_rows(
    mode: Literal["warn", "enforce"], script: list[tuple[Any, ...]]
) -> None:
    judge = RunJudge(
        BOOK, Dials(check_column_types=mode, notice_empty_lookups=True, notice_prior_turn_evidence=True)
    )
    judge.begin()
    for step in script:
        seam = step[0]
        before = _counted(judge)
        _unreachable_before = _unreachable(judge)
        if seam == "write":
            _, tool, result, arguments = step
            verdict = judge.write(
                tool, "c1", result, arguments=arguments if isinstance(arguments, dict) else None
            )
            mistyped = any(f.kind in ("column-type-mismatch", "missing-column") for f in verdict.findings)
            unjudged = _unreachable(judge) > _unreachable_before
            if mode == "enforce" and tool == "lookup" and (mistyped or unjudged):
                assert verdict.refusal is not None and verdict.refusal.startswith("Result rejected")
            if mode == "warn":
                assert verdict.refusal is None
        elif seam == "compose":
            judge.compose(step[1])
        elif seam == "choice":
            judge.choice(step[1], step[2])
        else:
            judge.claim(step[1], step[2])
        after = _counted(judge)
        for row in _rows_armed(judge, seam):
            assert after[(row.check, row.seam)] - before[(row.check, row.seam)] >= 1, (seam, row)


def test_an_unreadable_result_in_enforce_is_refused() -> None:
    class Rows(list[dict[str, Any]]):
        def __len__(self) -> int:
            raise RuntimeError("no len")

    judge = RunJudge(BOOK, Dials(check_column_types="enforce"))
    judge.begin()
    assert judge.write("lookup", "c1", Rows([{"lun": ""}])).refusal == unjudged_refusal("lookup")


def test_many_runs_at_once_keep_exact_ledgers() -> None:
    runs, calls = 24, 60
    judges = [
        RunJudge(BOOK, Dials(check_column_types="enforce", notice_empty_lookups=True)) for _ in range(runs)
    ]
    refused: list[int] = [0] * runs

    def work(index: int) -> None:
        judge = judges[index]
        judge.begin()
        for i in range(calls):
            judge.write("producer", f"p{i}", [{"id": f"id-{index}-{i}"}])
            if judge.write("lookup", f"c{i}", [{"lun": "NaN-ish", "host": None}]).refusal is not None:
                refused[index] += 1
            judge.write("lookup", f"e{i}", [], arguments={"id": f"id-{index}-{i}"})

    threads = [threading.Thread(target=work, args=(index,)) for index in range(runs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert refused == [calls] * runs
    for judge in judges:
        rows = {(r.check, r.seam): r for r in judge.report()}
        mismatch = rows[("column-type-mismatch", "write")]
        lookups = rows[("empty-lookup", "write")]
        assert (mismatch.checked, mismatch.findings) == (calls, calls)
        assert (lookups.checked, lookups.findings, lookups.unreachable) == (2 * calls, calls, 0)
        assert judge.internal_errors == []
