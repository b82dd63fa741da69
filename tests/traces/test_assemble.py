"""The run assembler: spans in any order grouped into runs, and every oddity counted and said.

The laws under test:

- Order does not matter: a trace's spans in any order (children first as exported, the root first,
  shuffled) assemble into the same run with its steps in start order, judged the same.
- A run is handed out as soon as its trace's root span has arrived; later spans of that trace are
  counted and said, never silently dropped.
- Nested agent spans fold into the outermost run; a trace of agent work with no agent span is one run
  rooted at the trace's root, and says so.
- Duplicate span ids, spans whose parent is not in the trace, a trace no dialect reads, malformed JSON
  in attributes: said in one line each, judged as far as they can be, never a traceback.
- Traces in flight are bounded: past the limit the oldest is judged with what it had, and said.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable

from tests.traces.shapes import (
    Trace,
    agent_attributes,
    chat_attributes,
    document,
    message,
    span_id,
    text,
    tool_attributes,
    triage_book,
    triage_trace,
)

from context_integrity.judge import Dials
from context_integrity.telemetry.schema import names
from context_integrity.traces import JudgedRun, Span, TracedRun, judge_runs, read_runs
from context_integrity.traces.assemble import Assembler
from context_integrity.traces.model import AnswerStep, ModelStep, ToolStep
from context_integrity.traces.problems import Problems
from context_integrity.traces.sources import spans_of_document

UNSUPPORTED = {("unsupported-argument", "choice", "host_paths", "call_2")}


def spans_of(*traces: Trace) -> list[Span]:
    return [span for trace in traces for span in spans_of_document(document(trace.spans), "test")]


def read(spans: Iterable[Span]) -> tuple[list[TracedRun], list[str]]:
    runs = read_runs(spans)
    out = list(runs)
    return out, runs.problems.listed


def judged(runs: Iterable[TracedRun]) -> list[JudgedRun]:
    return list(judge_runs(runs, triage_book(), Dials()))


def findings(run: JudgedRun) -> set[tuple[str, str, str | None, str | None]]:
    return {(f.finding.kind, f.finding.seam, f.tool_name, f.call_id) for f in run.findings}


def shape(run: TracedRun) -> list[tuple[str, str]]:
    return [(type(step).__name__, getattr(step, "span_id", "")) for step in run.steps]


def test_order_does_not_matter() -> None:
    spans = spans_of(triage_trace())
    exported, problems = read(spans)
    assert problems == []
    (run,) = exported
    kinds = [type(step).__name__ for step in run.steps]
    assert kinds == ["ModelStep", "ToolStep", "ModelStep", "ToolStep", "ModelStep", "AnswerStep"]
    shuffled = list(spans)
    for seed in range(5):
        random.Random(seed).shuffle(shuffled)
        # Without the order of ends, the trace is whole only at the end of the source.
        runs = read_runs(shuffled, whole_traces=True)
        (again,) = list(runs)
        assert shape(again) == shape(run)
        assert findings(judged([again])[0]) == UNSUPPORTED


def test_a_run_comes_out_when_its_root_arrives_and_later_spans_are_said() -> None:
    trace = triage_trace()
    spans = spans_of(trace)
    assembler_problems = Problems()
    assembler = Assembler(assembler_problems.say)
    handed: list[int] = []
    for index, span in enumerate(spans):
        if list(assembler.add(span)):
            handed.append(index)
    assert handed == [len(spans) - 1]  # the root is the last span exported
    late = spans_of_document(document([trace.spans[1]]), "late")  # a tool span, again, after its trace
    list(assembler.add(next(iter(late))))
    assert assembler.late == 1
    assert any("arrived after its trace was judged" in p for p in assembler_problems.listed)


def test_nested_agent_spans_fold_into_the_outer_run() -> None:
    trace = triage_trace()
    outer = trace.spans[-1]["spanId"]
    inner = trace.span("invoke_agent helper", agent_attributes("helper"), parent=outer)
    helper = trace.spans.pop()
    # The second model call and its tool ran inside a sub-agent, which ended before the outer one.
    trace.spans[2]["parentSpanId"] = inner
    trace.spans[3]["parentSpanId"] = inner
    trace.spans.insert(4, helper)
    (run,), problems = read(spans_of(trace))
    assert problems == []
    assert run.agent_name == "triage" and run.span_id == outer
    assert any("nested agent span" in note for note in run.notes)
    assert findings(judged([run])[0]) == UNSUPPORTED


def test_agent_work_without_an_agent_span_is_one_run_rooted_at_the_trace_root() -> None:
    trace = triage_trace()
    root = trace.spans[-1]
    root["attributes"] = [{"key": "http.route", "value": {"stringValue": "/triage"}}]
    root["name"] = "POST /triage"
    (run,), problems = read(spans_of(trace))
    assert problems == []
    assert run.span_id == root["spanId"]
    assert any("no span in this trace says it is an agent run" in note for note in run.notes)
    (judged_run,) = judged([run])
    assert findings(judged_run) == UNSUPPORTED
    reasons = {u.seam: u.reason for u in judged_run.unreachable}
    assert set(reasons) == set()  # nothing armed at the claim seam under these declarations


def test_duplicate_span_ids_are_read_once_and_said() -> None:
    trace = triage_trace()
    trace.spans.insert(2, json.loads(json.dumps(trace.spans[1])))
    (run,), problems = read(spans_of(trace))
    assert len([s for s in run.steps if isinstance(s, ToolStep)]) == 2
    assert problems == [
        f"trace {trace.trace_id}: 1 span arrived a second time with the same span id; the first copy of each was read"
    ]


def test_spans_whose_parent_is_missing_are_said_and_judged_with_their_run() -> None:
    trace = triage_trace()
    lost = span_id()
    trace.spans[1]["parentSpanId"] = lost  # the list_hosts execution hangs from a span never exported
    (run,), problems = read(spans_of(trace))
    assert problems == [
        f"trace {trace.trace_id}: 1 span hang from a parent that is not in the trace (a span missing "
        "from the export, or a trace cut short)"
    ]
    assert any("sit outside the agent span" in note for note in run.notes)
    assert findings(judged([run])[0]) == UNSUPPORTED


def test_a_missing_tool_span_leaves_its_write_unreachable() -> None:
    trace = triage_trace()
    del trace.spans[1]  # list_hosts ran (the next request holds its result) but its span is gone
    (run,), _ = read(spans_of(trace))
    book = triage_book()
    (judged_run,) = judge_runs([run], book, Dials(check_column_types="warn"))
    (missing,) = [u for u in judged_run.unreachable if u.seam == "write"]
    assert "the execution of 'list_hosts' (call call_1) is missing from the trace" in missing.reason
    rows = {(r.check, r.seam): r for r in judged_run.ledger}
    assert rows["column-type-mismatch", "write"].unreachable == 1


def test_a_trace_no_dialect_reads_is_said_in_one_line() -> None:
    trace = Trace()
    root = span_id()
    trace.span("SELECT hosts", {"db.system": "postgresql"}, parent=root)
    trace.span("GET /hosts", {"http.method": "GET"}, parent=None, span=root)
    runs, problems = read(spans_of(trace))
    assert runs == []
    (said,) = problems
    assert said.startswith(f"trace {trace.trace_id}: no span is in a dialect this reader knows (2 spans")
    assert "'SELECT hosts'" in said and "nothing in it could be judged" in said


def test_malformed_json_in_attributes_is_unreachable_with_its_reason() -> None:
    trace = Trace()
    agent = span_id()
    attrs = chat_attributes([message("user", text("q"))], None)
    attrs[names.GEN_AI_INPUT_MESSAGES] = '[{"role": "user", "parts": [{"type": "text", "content": "q"'
    trace.span("chat test-model", attrs, parent=agent)
    attrs = tool_attributes("host_paths", "c1", {"host": "h"})
    attrs[names.GEN_AI_TOOL_CALL_RESULT] = '[{"path": "vmhba2…'
    trace.span("execute_tool host_paths", attrs, parent=agent)
    trace.span("invoke_agent triage", agent_attributes("triage", "done"), parent=None, span=agent)
    (run,), problems = read(spans_of(trace))
    assert problems == []
    (judged_run,) = judge_runs([run], triage_book(), Dials(notice_empty_lookups=True))
    reasons = {u.seam: u.reason for u in judged_run.unreachable}
    assert "gen_ai.input.messages is not readable JSON" in reasons["compose"]
    assert "gen_ai.tool.call.result was cut short when it was recorded" in reasons["write"]
    model = next(s for s in run.steps if isinstance(s, ModelStep))
    assert model.request is None and model.response is None


def test_traces_in_flight_are_bounded_and_the_oldest_is_judged_early() -> None:
    traces = [triage_trace() for _ in range(3)]
    # Only the children of each, no roots: every trace stays open until the bound pushes it out.
    spans = [span for trace in traces for span in spans_of_document(document(trace.spans[:-1]), "t")]
    problems = Problems()
    assembler = Assembler(problems.say, max_open_traces=2)
    early: list[TracedRun] = []
    for span in spans:
        early.extend(assembler.add(span))
    assert [run.trace_id for run in early] == [traces[0].trace_id]
    assert any(
        f"trace {traces[0].trace_id} was still waiting for its root span" in p for p in problems.listed
    )
    rest = list(assembler.finish())
    assert [run.trace_id for run in rest] == [traces[1].trace_id, traces[2].trace_id]


def test_a_trace_past_its_bound_keeps_what_came_first_and_says_so() -> None:
    trace = triage_trace()
    problems = Problems()
    assembler = Assembler(problems.say, max_spans_per_trace=3)
    runs = [run for span in spans_of(trace) for run in assembler.add(span)] + list(assembler.finish())
    (run,) = runs
    assert run.span_count == 3  # the first three spans; the rest counted
    (said,) = [p for p in problems.listed if "past the bound" in p]
    assert said.startswith(f"trace {trace.trace_id}: 3 spans past the bound on one trace")


def test_an_answer_is_placed_where_it_was_given() -> None:
    (run,), _ = read(spans_of(triage_trace()))
    assert isinstance(run.steps[-1], AnswerStep)
