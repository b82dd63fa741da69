"""The stage, driven by hand: what is held, when it is judged, what is written, what goes out unjudged.

The laws under test:

- a span no dialect reads as agent work is forwarded at once and never held; a request holding only
  such spans goes out as the very bytes that came in;
- a trace with agent work is held until its agent run span has arrived and no span of it has arrived
  for the quiet period (each arrival restarts it), or until the maximum wait from its first span;
- the findings written on the spans are those the offline judge files over the same spans, each on
  the span it is about, as the ``context_integrity.finding`` event the library writes in process
  (the same attributes, from the same encoder), with the span-level count and kinds; a span with
  nothing on it goes out as it came;
- each run gets one ``context_integrity.disposition`` summary span under its run span, in the run's
  resource, holding the judged ledger; what the trace could not feed is one
  ``context_integrity.unreachable`` event each, with its reason, and never a finding;
- a span of agent work after its trace was judged is forwarded unchanged and counted late; one the
  hold has no room for (traces, bytes, spans of one trace) is forwarded unjudged and counted; a
  judge that fails forwards its trace unchanged and counts it; a trace the library judged in
  process already is forwarded unchanged and never judged twice; a receiver that cannot have the
  hold's lock in time forwards its spans unjudged instead of waiting;
- where the assembler needs a span no dialect reads (an application span between an agent and its
  tools) to place the work, it has its place, though the span itself went out at once;
- whatever happens, every span received is forwarded or counted dropped.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1 import trace_pb2
from tests.traces.shapes import (
    Trace,
    agent_attributes,
    document,
    span_id,
    tool_attributes,
    triage_book,
    triage_trace,
    write_lines,
)

from context_integrity.serve import stage as stage_module
from context_integrity.serve.judging import TraceJudge
from context_integrity.serve.view import span_of
from context_integrity.telemetry.schema import decode_summary, finding_event_attributes, names
from context_integrity.traces import JudgedRun, judge_runs, read_runs
from context_integrity.traces.detect import detect
from context_integrity.traces.dialects import DIALECTS, openai_agents, openinference, openllmetry, pydantic_ai

from ._parts import DIALS, Out, failing_judge, judge_counting, request_of, rig

HTTP_SPAN = {"http.request.method": "GET", "url.path": "/health"}


def plain_trace(spans: int = 3) -> Trace:
    trace = Trace()
    root = span_id()
    for _ in range(spans - 1):
        trace.span("GET /health", HTTP_SPAN, parent=root)
    trace.span("GET /", HTTP_SPAN, parent=None, span=root)
    return trace


def offline(trace: Trace, tmp_path: Path) -> list[JudgedRun]:
    runs = read_runs(write_lines(tmp_path / f"{trace.trace_id}.jsonl", [document(trace.spans)]))
    return list(judge_runs(runs, triage_book(), DIALS))


def by_id(spans: list[Out]) -> dict[str, Out]:
    return {out.view.span_id: out for out in spans}


def without_run_span(trace: Trace) -> tuple[Trace, Trace]:
    """The trace's spans but its agent run span, and the run span alone (as two deliveries)."""
    head, tail = Trace(trace.trace_id), Trace(trace.trace_id)
    for node in trace.spans:
        (tail if node["name"].startswith(names.OPERATION_INVOKE_AGENT) else head).spans.append(node)
    return head, tail


# ── what is held, and when it is judged ─────────────────────────────────


def test_spans_of_no_agent_work_go_out_at_once_as_the_bytes_that_came_in() -> None:
    test = rig()
    request = request_of(plain_trace())
    body = request.SerializeToString()
    test.stage.accept(request, body)
    assert len(test.stage.hold) == 0
    test.flush()
    assert test.target.payloads == [body]
    assert test.accounted() == (3, 3)


def test_an_agent_trace_waits_for_its_run_span_and_the_quiet_period() -> None:
    test = rig(quiet=1.0, max_wait=30.0)
    head, tail = without_run_span(triage_trace())
    test.accept(head)
    assert test.after(5.0) == 0 and test.target.spans() == []  # no run span yet: held
    test.accept(tail)
    assert test.after(0.9) == 0
    assert test.after(0.2) == 1
    assert {out.view.span_id for out in test.target.spans() if out.scope != names.INSTRUMENTATION_NAME} == {
        node["spanId"] for node in head.spans + tail.spans
    }


def test_each_arrival_restarts_the_quiet_period() -> None:
    test = rig(quiet=1.0)
    trace = triage_trace()
    head, tail = without_run_span(trace)
    test.accept(tail)
    assert test.after(0.8) == 0
    test.accept(head)  # the children's batch lands after the run span's
    assert test.after(0.8) == 0
    assert test.after(0.3) == 1


def test_a_trace_whose_run_span_never_comes_is_judged_at_the_maximum_wait() -> None:
    test = rig(quiet=1.0, max_wait=10.0)
    head, _ = without_run_span(triage_trace())
    test.accept(head)
    assert test.after(9.9) == 0
    assert test.after(0.2) == 1
    summaries = [out for out in test.target.spans() if out.view.name == names.DISPOSITION_SPAN]
    assert len(summaries) == 1  # judged as one run rooted where the trace's work is


# ── what is written ──────────────────────────────────────────────────────


def test_the_findings_are_the_offline_judges_on_the_same_spans_as_the_library_writes_them(
    tmp_path: Path,
) -> None:
    trace = triage_trace()
    (expected,) = offline(trace, tmp_path)
    assert expected.findings  # the scenario files one: the made-up host
    test = rig()
    request = request_of(trace)
    sent = {
        span.span_id.hex(): span
        for rs in request.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    }
    test.stage.accept(request)
    test.after(5.0)
    out = by_id(test.target.spans())
    about = {f.span_id for f in expected.findings}
    for judged in expected.findings:
        (written,) = out[judged.span_id].findings
        event = next(e for e in out[judged.span_id].view.events if e.name == names.FINDING_EVENT)
        assert dict(event.attributes) == finding_event_attributes(
            judged.finding, tool_name=judged.tool_name, call_id=judged.call_id
        )
        assert written.kind == judged.finding.kind and written.seam == judged.finding.seam
        attributes = out[judged.span_id].view.attributes
        assert attributes[names.FINDINGS_COUNT] == 1
        assert attributes[names.FINDINGS_KINDS] == [judged.finding.kind]
    for sid, span in sent.items():
        if sid not in about:
            assert out[sid].proto == span  # nothing filed on it: as it came
        else:
            assert out[sid].proto.events[: len(span.events)] == span.events


def test_each_run_gets_a_summary_span_under_its_run_span_holding_the_ledger(tmp_path: Path) -> None:
    trace = triage_trace()
    (expected,) = offline(trace, tmp_path)
    test = rig()
    test.accept(trace)
    test.after(5.0)
    (summary,) = [out for out in test.target.spans() if out.view.name == names.DISPOSITION_SPAN]
    assert summary.scope == names.INSTRUMENTATION_NAME
    assert summary.view.trace_id == trace.trace_id
    assert summary.view.parent_span_id == expected.run.span_id
    assert summary.view.resource["service.name"] == "agent"
    problems: list[str] = []
    fields = decode_summary(summary.view.attributes, problems)
    assert problems == []
    assert {(row["check"], row["seam"]): row for row in fields.rows} == {
        (row.check, row.seam): row.as_dict() for row in expected.ledger
    }
    assert fields.totals == expected.totals
    assert fields.dials == DIALS.in_force()
    assert summary.view.start_time_unix_nano == expected.run.end_time_unix_nano


def test_what_the_trace_cannot_feed_is_unreachable_with_its_reason_never_a_finding(tmp_path: Path) -> None:
    trace = triage_trace(capture=False)
    (expected,) = offline(trace, tmp_path)
    test = rig()
    test.accept(trace)
    test.after(5.0)
    spans = test.target.spans()
    assert not any(out.findings for out in spans)
    (summary,) = [out for out in spans if out.view.name == names.DISPOSITION_SPAN]
    events = [e for e in summary.view.events if e.name == names.UNREACHABLE_EVENT]
    assert [e.attributes[names.UNREACHABLE_REASON] for e in events] == [
        u.reason for u in expected.unreachable
    ]
    assert any("content capture is off" in str(e.attributes[names.UNREACHABLE_REASON]) for e in events)
    rows = decode_summary(summary.view.attributes, []).rows
    assert sum(int(row["unreachable"]) for row in rows) > 0  # type: ignore[call-overload]


def test_an_application_span_between_an_agent_and_its_tools_gives_its_place(tmp_path: Path) -> None:
    """Two runs in one trace, each calling its tool under an application span no dialect reads: the
    application spans go out at once, and still place each tool in its run."""
    trace = Trace()
    root = span_id()
    for agent in ("first", "second"):
        run, work = span_id(), span_id()
        trace.span(
            "execute_tool list_hosts",
            tool_attributes("list_hosts", f"{agent}-call", {}, [{"host": "h1", "wwpn": 7}]),
            parent=work,
        )
        trace.span("POST /work", HTTP_SPAN, parent=run, span=work)
        trace.span(f"invoke_agent {agent}", agent_attributes(agent, "done"), parent=root, span=run)
    trace.span("POST /ask", HTTP_SPAN, parent=None, span=root)
    expected = offline(trace, tmp_path)
    assert sorted(f.finding.kind for run in expected for f in run.findings) == ["column-type-mismatch"] * 2
    test = rig()
    agent_work, application = Trace(trace.trace_id), Trace(trace.trace_id)
    for node in trace.spans:
        (application if node["name"].startswith("POST") else agent_work).spans.append(node)
    test.accept(agent_work)
    # The application's spans come in a request of their own, as its own exporter sends them: the
    # request goes out as the bytes that came, and their places are kept all the same.
    request = request_of(application)
    body = request.SerializeToString()
    test.stage.accept(request, body)
    test.flush()
    assert test.target.payloads == [body]
    assert {out.view.name for out in test.target.spans()} == {"POST /work", "POST /ask"}  # at once
    test.after(5.0)
    written = [(out.view.span_id, f.kind) for out in test.target.spans() for f in out.findings]
    assert sorted(written) == sorted((f.span_id, f.finding.kind) for run in expected for f in run.findings)


# ── what goes out unjudged, and is counted ───────────────────────────────


def test_agent_work_after_its_trace_was_judged_goes_out_unchanged_and_counted_late() -> None:
    test = rig()
    trace = triage_trace()
    test.accept(trace)
    test.after(5.0)
    late = Trace(trace.trace_id)
    late.span("execute_tool list_hosts", tool_attributes("list_hosts", "call_9", {}, []), parent=None)
    late.span("GET /health", HTTP_SPAN, parent=None)
    request = request_of(late)
    test.stage.accept(request)
    test.flush()
    assert test.count(names.SERVE_SPANS_LATE) == 1  # the agent work; the application span is not late
    forwarded = test.target.requests[-1]
    assert forwarded == request
    assert test.accounted() == (8, 8)


def test_a_full_hold_forwards_new_traces_unjudged_at_once() -> None:
    calls: list[object] = []
    test = rig(judge_counting(calls, TraceJudge(triage_book(), DIALS)), max_traces=2)  # type: ignore[arg-type]
    traces = [triage_trace() for _ in range(3)]
    test.accept(*traces)
    test.flush()
    third = {node["spanId"] for node in traces[2].spans}
    assert {out.view.span_id for out in test.target.spans()} == third
    assert test.count(names.SERVE_SPANS_UNJUDGED, reason="hold_full") == len(traces[2].spans)
    test.after(5.0)
    assert len(calls) == 2
    assert test.accounted() == (18, 18)


def test_the_held_bytes_are_bounded_too() -> None:
    test = rig(max_bytes=1)
    test.accept(triage_trace())
    test.flush()
    assert test.count(names.SERVE_SPANS_UNJUDGED, reason="hold_full") == 6
    assert len(test.stage.hold) == 0


def test_spans_past_one_traces_bound_go_out_unjudged_and_the_trace_is_judged_with_what_it_held() -> None:
    test = rig(max_spans_per_trace=3)
    test.accept(triage_trace())
    test.flush()
    assert test.count(names.SERVE_SPANS_UNJUDGED, reason="trace_full") == 3
    assert test.after(31.0) == 1  # no run span among the three: the maximum wait
    assert test.accounted() == (6, 6)


def test_a_judge_that_fails_forwards_its_trace_unchanged_and_counts_it() -> None:
    test = rig(failing_judge)
    request = request_of(triage_trace())
    test.stage.accept(request)
    test.after(5.0)
    sent = [span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]
    out = [o.proto for o in test.target.spans()]
    assert sorted(out, key=lambda s: s.span_id) == sorted(sent, key=lambda s: s.span_id)
    assert test.count(names.SERVE_SPANS_UNJUDGED, reason="judge_failed") == 6
    assert test.count(names.SERVE_TRACES_JUDGED) == 0


def test_a_run_the_library_judged_in_process_is_not_judged_again() -> None:
    calls: list[object] = []
    test = rig(judge_counting(calls, TraceJudge(triage_book(), DIALS)))  # type: ignore[arg-type]
    trace = triage_trace()
    run_span = next(n["spanId"] for n in trace.spans if n["name"].startswith(names.OPERATION_INVOKE_AGENT))
    ours = Trace(trace.trace_id)
    ours.span(names.DISPOSITION_SPAN, {names.POSTURE: "observe"}, parent=run_span)
    request = request_of(trace)
    summary = request_of(ours)
    summary.resource_spans[0].scope_spans[0].scope.name = names.INSTRUMENTATION_NAME
    test.stage.accept(request)
    test.stage.accept(summary)
    test.after(5.0)
    assert calls == []
    assert test.count(names.SERVE_SPANS_UNJUDGED, reason="judged_at_source") == 6
    assert not any(out.findings for out in test.target.spans())
    assert test.accounted() == (7, 7)


def test_a_receiver_that_cannot_have_the_lock_in_time_forwards_unjudged_rather_than_wait() -> None:
    test = rig()
    accepted = threading.Event()

    def hold_the_lock() -> None:
        test.stage.hold.lock.acquire()
        accepted.wait(30)

    def send() -> None:
        test.accept(triage_trace())
        accepted.set()

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    try:
        done = threading.Thread(target=send)
        done.start()
        done.join(timeout=10)
        assert accepted.is_set()  # it returned while the lock was still held elsewhere
    finally:
        accepted.set()
        holder.join()
        test.stage.hold.lock.release()
    test.flush()
    assert test.count(names.SERVE_SPANS_UNJUDGED, reason="busy") == 6
    assert test.accounted() == (6, 6)


def test_a_span_without_a_proper_trace_id_goes_out_as_it_came() -> None:
    test = rig()
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.CopyFrom(trace_pb2.Span(trace_id=b"\x01" * 5, span_id=b"\x02" * 8, name="odd"))
    span.attributes.add(key=names.GEN_AI_OPERATION_NAME).value.string_value = names.OPERATION_EXECUTE_TOOL
    test.stage.accept(request)
    test.flush()
    assert [out.proto for out in test.target.spans()] == [span]
    assert len(test.stage.hold) == 0


# ── the cheap test a span meets before it is decoded ─────────────────────

KEYS = st.sampled_from(
    [
        names.GEN_AI_OPERATION_NAME,
        names.GEN_AI_TOOL_NAME,
        "gen_ai.operation",
        "operation.name",
        "http.request.method",
        "x" + names.GEN_AI_OPERATION_NAME,
        pydantic_ai.ALL_MESSAGES,
        openinference.SPAN_KIND,
        openllmetry.SPAN_KIND,
        openllmetry.ENTITY_INPUT,
        "openinference.span",
    ]
)
SCOPES = st.sampled_from(
    [
        names.INSTRUMENTATION_NAME,
        "context_integrity.other",
        "web",
        "",
        pydantic_ai.SCOPE,
        openai_agents.LOGFIRE_SCOPE,
        openai_agents.CONTRIB_SCOPE,
        "logfire",
    ]
)
OPERATIONS = st.sampled_from(
    [
        names.OPERATION_EXECUTE_TOOL,
        names.OPERATION_CHAT,
        names.OPERATION_INVOKE_AGENT,
        "embeddings",
        "",
        "GET",
        openinference.KIND_TOOL,
        openllmetry.KIND_TOOL,
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(KEYS, max_size=4), OPERATIONS, SCOPES), min_size=1, max_size=6))
def test_a_span_is_held_exactly_when_a_dialect_reads_agent_work_in_it(
    shapes: list[tuple[list[str], str, str]],
) -> None:
    """The signs let the stage skip decoding spans no dialect could claim; they must never skip one
    a dialect would read as agent work, nor hold one it would not."""
    test = rig()
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    expected: dict[bytes, bool] = {}
    for index, (keys, operation, scope) in enumerate(shapes):
        scope_spans = resource_spans.scope_spans.add()
        scope_spans.scope.name = scope
        span = scope_spans.spans.add()
        span.trace_id = index.to_bytes(16, "big")
        span.span_id = (index + 1).to_bytes(8, "big")
        span.name = names.tool_span_name("lookup")
        for key in dict.fromkeys(keys):
            pair = span.attributes.add(key=key)
            kinds = (names.GEN_AI_OPERATION_NAME, openinference.SPAN_KIND, openllmetry.SPAN_KIND)
            pair.value.string_value = operation if key in kinds else "lookup"
        _, reading = detect(span_of(span, {}, scope), lambda text: None)
        expected[span.trace_id] = reading is not None
    test.stage.accept(request)
    assert {trace_id: test.stage.hold.is_held(trace_id) for trace_id in expected} == expected


def test_a_request_with_no_agent_work_is_forwarded_without_decoding_a_span(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every dialect says its signs, so a web service's spans reach no dialect: with one dialect
    without signs, every span of every request would be decoded and asked of each dialect."""
    assert all(getattr(dialect, "signs", None) for dialect in DIALECTS)
    decoded: list[trace_pb2.Span] = []

    def counted(span: trace_pb2.Span, *args: Any) -> Any:
        decoded.append(span)
        return span_of(span, *args)

    monkeypatch.setattr(stage_module, "span_of", counted)
    test = rig()
    request = ExportTraceServiceRequest()
    scope_spans = request.resource_spans.add().scope_spans.add()
    scope_spans.scope.name = "opentelemetry.instrumentation.flask"
    span = scope_spans.spans.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="GET /orders/{id}")
    span.attributes.add(key="http.request.method").value.string_value = "GET"
    test.stage.accept(request, request.SerializeToString())
    test.flush()
    assert decoded == []
    assert [out.proto for out in test.target.spans()] == [span]
