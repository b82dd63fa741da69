"""Scale-out: N replicas behind the Collector's load-balancing exporter (routing key ``traceID``).

The laws under test:

- N replicas fed the same traces partitioned by trace id file exactly the findings, on exactly the
  spans, and write exactly the summaries one replica does: no state crosses traces;
- a routing change mid-trace (the replicas behind the exporter changed while a trace's spans were
  in flight, so a trace is split between two replicas): each replica judges only what it saw; no
  replica files a finding the whole trace would not; a finding the whole trace files is either
  filed by the replica that saw its evidence or counted ``unreachable`` by one that did not.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from tests.traces.shapes import (
    START,
    Trace,
    agent_attributes,
    chat_attributes,
    message,
    span_id,
    text,
    tool_attributes,
    tool_call,
    tool_definitions,
    tool_response,
    triage_book,
    triage_trace,
)

from context_integrity.contracts.file import parse_contracts
from context_integrity.judge import ContractBook
from context_integrity.serve.judging import TraceJudge
from context_integrity.telemetry.schema import decode_summary, names

from ._parts import DIALS, Rig, request_of, rig, small_traces

# The judge's contracts, as a file says them: typed rows that settle a host's wwpn, a lookup grounded
# in the listing, and the answer's claim of that wwpn.
CONTRACTS = """
[tools.list_hosts]
result_columns = { host = "string", wwpn = "string" }
settles = { entity = "host", facts = ["wwpn"] }

[tools.host_paths]
arguments_from = ["list_hosts"]

[claims]
wwpn = { entity = "esx-07", field = "wwpn" }
"""
HOSTS = [{"host": "esx-07", "wwpn": "c0:50:76:0a"}]


def book() -> ContractBook:
    declared = parse_contracts(CONTRACTS, source="the test's contracts")
    contracts = triage_book()
    for name in contracts.names():
        contracts.forget(name)
    contracts.declare_all(declared.tools, declared.claims, declared.toolsets)
    return contracts


def claiming_trace(wwpn: str) -> Trace:
    """An agent that lists the hosts and answers, as JSON, the wwpn of esx-07: ``wwpn``."""
    trace = Trace()
    agent = span_id()
    offered = tool_definitions("list_hosts", "host_paths")
    ask = message("user", text("What is the wwpn of esx-07?"))
    call = message("assistant", tool_call("call_1", "list_hosts", {}))
    listed = message("tool", tool_response("call_1", HOSTS))
    answer = json.dumps({"wwpn": wwpn})
    trace.span("chat test-model", chat_attributes([ask], [call], tools=offered), parent=agent)
    trace.span("execute_tool list_hosts", tool_attributes("list_hosts", "call_1", {}, HOSTS), parent=agent)
    trace.span(
        "chat test-model",
        chat_attributes([ask, call, listed], [message("assistant", text(answer))], tools=offered),
        parent=agent,
    )
    trace.span(
        "invoke_agent auditor",
        agent_attributes("auditor", answer),
        parent=None,
        span=agent,
        start=START,
        end=trace.tick(),
    )
    return trace


def replica() -> Rig:
    return rig(TraceJudge(book(), DIALS), quiet=0.0, max_wait=5.0)


def judged(replicas: list[Rig]) -> tuple[set[tuple[str, str, str, str]], dict[str, list[dict[str, object]]]]:
    """Every finding (trace, span, kind, seam) the replicas wrote, and each trace's summary rows."""
    findings: set[tuple[str, str, str, str]] = set()
    summaries: dict[str, list[dict[str, object]]] = {}
    for each in replicas:
        each.after(10.0)
        for out in each.target.spans():
            findings |= {(out.view.trace_id, out.view.span_id, f.kind, f.seam) for f in out.findings}
            if out.view.name == names.DISPOSITION_SPAN:
                rows = decode_summary(out.view.attributes, []).rows
                summaries.setdefault(out.view.trace_id, []).extend(sorted(rows, key=str))
    return findings, summaries


def route(trace_id: bytes, replicas: int) -> int:
    """A trace id's replica (any function of the trace id alone, as the exporter's ring is)."""
    return int.from_bytes(hashlib.sha256(trace_id).digest()[:4], "big") % replicas


def requests() -> list[ExportTraceServiceRequest]:
    mixed = [triage_trace(), triage_trace(capture=False), triage_trace(call_ids=False)]
    mixed += [claiming_trace("c0:50:76:0a"), claiming_trace("ff:ff:ff:ff")]
    return [request_of(*mixed), small_traces(300), small_traces(200, first=300, run_span=False)]


def partitioned(request: ExportTraceServiceRequest, replicas: int) -> list[ExportTraceServiceRequest]:
    """``request`` split as the load-balancing exporter splits it: each span to its trace's replica."""
    out = [ExportTraceServiceRequest() for _ in range(replicas)]
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                target = out[route(span.trace_id, replicas)]
                resource_out = target.resource_spans.add(resource=resource_spans.resource)
                resource_out.scope_spans.add(scope=scope_spans.scope).spans.append(span)
    return out


@pytest.mark.parametrize("replicas", [2, 3])
def test_replicas_fed_traces_partitioned_by_trace_id_file_what_one_replica_files(replicas: int) -> None:
    one = replica()
    many = [replica() for _ in range(replicas)]
    for request in requests():
        one.stage.accept(request)
        for index, part in enumerate(partitioned(request, replicas)):
            many[index].stage.accept(part)
    alone, alone_summaries = judged([one])
    together, together_summaries = judged(many)
    assert len(alone) > 50  # the scenarios file findings of several kinds
    assert len({kind for _, _, kind, _ in alone}) >= 3
    assert together == alone
    assert together_summaries == alone_summaries
    assert all(each.count(names.SERVE_TRACES_JUDGED) > 0 for each in many)  # every replica had work


@pytest.mark.parametrize("wwpn", ["c0:50:76:0a", "ff:ff:ff:ff"], ids=["supported", "contradicted"])
@pytest.mark.parametrize("cut", [1, 2, 3])
def test_a_trace_split_by_a_routing_change_is_judged_as_far_as_each_part_goes_never_further(
    wwpn: str, cut: int
) -> None:
    trace = claiming_trace(wwpn)
    whole, _ = judged_parts(trace, [range(len(trace.spans))])
    parts, unreachable = judged_parts(trace, [range(cut), range(cut, len(trace.spans))])
    assert parts <= whole  # nothing the whole trace would not file
    for _, _, kind, seam in whole - parts:
        assert (kind, seam) in unreachable  # what a part could not see is said, never guessed


def judged_parts(
    trace: Trace, parts: list[range]
) -> tuple[set[tuple[str, str, str, str]], set[tuple[str, str]]]:
    """The findings the replicas file when each gets one part of ``trace``, and the (check, seam)
    rows any of them counted unreachable."""
    replicas = []
    for part in parts:
        each = replica()
        piece = Trace(trace.trace_id)
        piece.spans = [trace.spans[index] for index in part]
        each.accept(piece)
        replicas.append(each)
    findings, summaries = judged(replicas)
    unreachable = {
        (str(row["check"]), str(row["seam"]))
        for rows in summaries.values()
        for row in rows
        if row.get("unreachable")
    }
    return findings, unreachable
