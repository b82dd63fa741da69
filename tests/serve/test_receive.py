"""The stage between real parts: an agent's own instrumentation, the OpenTelemetry SDK's OTLP
exporters, the stage's receivers, and a test OTLP receiver as the next hop.

The laws under test:

- a pydantic-ai agent instrumented by pydantic-ai itself (content on, no ``ci.setup`` in it), exported
  by the SDK's OTLP/HTTP and OTLP/gRPC exporters, reaches the next hop through the stage (forwarding
  over OTLP/HTTP and over OTLP/gRPC) with the column finding written on its tool's span and a summary
  span under its run span;
- bad input is answered as OTLP says, and the stage goes on taking good requests after each:
  malformed protobuf and malformed JSON with HTTP 400 and a ``google.rpc.Status`` in the request's
  encoding (gRPC INVALID_ARGUMENT), a body past the bound with HTTP 413 (gRPC RESOURCE_EXHAUSTED),
  a gzip body that inflates past it with 413, another content type with 415, another method with
  405, a request past the receiver's room with 503 (retryable).
"""

from __future__ import annotations

import gzip
import http.client
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from tests.traces.shapes import document, triage_trace

from context_integrity.limits import SERVE_MAX_REQUEST_BYTES
from context_integrity.serve.forward import target_of
from context_integrity.serve.hold import HoldLimits
from context_integrity.serve.judging import TraceJudge
from context_integrity.serve.server import Server
from context_integrity.telemetry.schema import names

from ._agent import TOOL, book, run_agent
from ._parts import DIALS, spans_in
from ._receiver import GrpcOtlpReceiver, HttpOtlpReceiver

ARRIVE_S = 30


@dataclass
class Running:
    server: Server
    next_hop: HttpOtlpReceiver | GrpcOtlpReceiver

    @property
    def http(self) -> str:
        return self.server.addresses()["http"]

    @property
    def grpc(self) -> str:
        return self.server.addresses()["grpc"]


def serving(next_hop: HttpOtlpReceiver | GrpcOtlpReceiver) -> Running:
    endpoint = next_hop.url if isinstance(next_hop, HttpOtlpReceiver) else next_hop.endpoint
    server = Server(
        TraceJudge(book(), DIALS),
        target_of(endpoint),
        grpc=("127.0.0.1", 0),
        http=("127.0.0.1", 0),
        limits=HoldLimits(quiet_seconds=0.2, max_wait_seconds=10.0),
    )
    server.start()
    return Running(server, next_hop)


@pytest.fixture(params=["forward-http", "forward-grpc"])
def running(request: pytest.FixtureRequest) -> Iterator[Running]:
    next_hop = HttpOtlpReceiver().start() if request.param == "forward-http" else GrpcOtlpReceiver().start()
    started = serving(next_hop)
    yield started
    started.server.stop(bound_seconds=5)
    next_hop.stop()


def wait_for_summary(next_hop: HttpOtlpReceiver | GrpcOtlpReceiver) -> list[Any]:
    deadline = time.monotonic() + ARRIVE_S
    while time.monotonic() < deadline:
        spans = spans_in(list(next_hop.received.requests))
        if any(out.view.name == names.DISPOSITION_SPAN for out in spans):
            return spans
        time.sleep(0.05)
    pytest.fail("the judged trace did not reach the next hop")


@pytest.mark.parametrize("sender", ["http", "grpc"])
def test_an_instrumented_agents_spans_reach_the_next_hop_with_their_findings(
    running: Running, sender: str
) -> None:
    if sender == "http":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

        run_agent(HttpExporter(endpoint=f"http://{running.http}/v1/traces"))
    else:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        run_agent(GrpcExporter(endpoint=f"http://{running.grpc}", insecure=True))
    spans = wait_for_summary(running.next_hop)
    by_name = {out.view.name: out for out in spans}
    tool_span = by_name[names.tool_span_name(TOOL)]
    (finding,) = tool_span.findings
    assert finding.kind == "column-type-mismatch" and finding.seam == "write"
    assert finding.predicate == "logical_unit_number"
    assert tool_span.view.attributes[names.FINDINGS_COUNT] == 1
    run_span = next(out for out in spans if out.view.name.startswith(names.OPERATION_INVOKE_AGENT))
    summary = by_name[names.DISPOSITION_SPAN]
    assert summary.view.parent_span_id == run_span.view.span_id
    assert summary.view.resource["service.name"] == "storage-agent"
    assert summary.view.attributes[names.totals_attribute("findings")] == 1
    metrics = running.server.metrics
    assert (
        metrics.value(
            names.PROMETHEUS_FINDINGS_METRIC,
            kind="column-type-mismatch",
            seam="write",
            tool=TOOL,
            advisory="false",
            service_name="storage-agent",
        )
        == 1
    )


# ── bad input ────────────────────────────────────────────────────────────


def post(address: str, body: bytes, content_type: str, **headers: str) -> tuple[int, bytes, str]:
    host, port = address.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request("POST", "/v1/traces", body=body, headers={"Content-Type": content_type, **headers})
        response = connection.getresponse()
        return response.status, response.read(), response.getheader("Content-Type") or ""
    finally:
        connection.close()


def good_request() -> bytes:
    return json.dumps(document(triage_trace().spans)).encode()


@pytest.fixture
def plain() -> Iterator[Running]:
    next_hop = HttpOtlpReceiver().start()
    started = serving(next_hop)
    yield started
    started.server.stop(bound_seconds=5)
    next_hop.stop()


def status_of(body: bytes, content_type: str) -> status_pb2.Status:
    if content_type == "application/json":
        return json_format.Parse(body, status_pb2.Status())
    return status_pb2.Status.FromString(body)


@pytest.mark.parametrize(
    ("body", "content_type", "headers", "http_status", "said"),
    [
        (b"\x0a\xff\xff\xff\xff\x0f", "application/x-protobuf", {}, 400, "not a protobuf"),
        (b'{"resourceSpans": [', "application/json", {}, 400, "not JSON"),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}',
            "application/json",
            {},
            400,
            "traceId",
        ),
        (b"\0" * (SERVE_MAX_REQUEST_BYTES + 1), "application/x-protobuf", {}, 413, "larger than"),
        (
            gzip.compress(b"\0" * (SERVE_MAX_REQUEST_BYTES + 1)),
            "application/x-protobuf",
            {"Content-Encoding": "gzip"},
            413,
            "larger than",
        ),
        (b"not gzip", "application/json", {"Content-Encoding": "gzip"}, 400, "gzip"),
        (b"hello", "text/plain", {}, 415, "content type"),
    ],
    ids=["protobuf", "json", "json-ids", "oversized", "gzip-bomb", "bad-gzip", "content-type"],
)
def test_bad_http_input_is_answered_as_otlp_says_and_the_stage_goes_on(
    plain: Running, body: bytes, content_type: str, headers: dict[str, str], http_status: int, said: str
) -> None:
    status, answer, answered_type = post(plain.http, body, content_type, **headers)
    assert status == http_status
    expected_type = "application/json" if content_type == "application/json" else "application/x-protobuf"
    assert answered_type == expected_type
    assert said in status_of(answer, answered_type).message
    status, answer, _ = post(plain.http, good_request(), "application/json")
    assert status == 200 and json.loads(answer) == {}
    reason = {400: "malformed", 413: "too_large", 415: "media_type"}[http_status]
    assert plain.server.metrics.value(names.SERVE_REQUESTS_REFUSED + "_total", reason=reason) == 1


def test_another_method_is_405_and_a_full_receiver_is_503(plain: Running) -> None:
    host, port = plain.http.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.request("GET", "/v1/traces")
    assert connection.getresponse().status == 405
    connection.close()
    assert plain.server.http is not None
    slots = plain.server.http.server.slots
    plain.server.http.server.slots = threading.BoundedSemaphore(1)
    plain.server.http.server.slots.acquire()
    try:
        status, _answer, _ = post(plain.http, good_request(), "application/json")
    finally:
        plain.server.http.server.slots = slots
    assert status == 503
    assert post(plain.http, good_request(), "application/json")[0] == 200


def test_bad_grpc_input_is_invalid_argument_or_resource_exhausted_and_the_stage_goes_on(
    plain: Running,
) -> None:
    with grpc.insecure_channel(plain.grpc, options=[("grpc.max_send_message_length", -1)]) as channel:
        raw = channel.unary_unary(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            request_serializer=lambda body: body,
            response_deserializer=lambda body: body,
        )
        with pytest.raises(grpc.RpcError) as refused:
            raw(b"\x0a\xff\xff\xff\xff\x0f", timeout=30)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "not a protobuf" in (refused.value.details() or "")
        with pytest.raises(grpc.RpcError) as too_large:
            raw(b"\0" * (SERVE_MAX_REQUEST_BYTES + 1), timeout=60)
        assert too_large.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)  # type: ignore[no-untyped-call]
        request = json_format.ParseDict({"resourceSpans": []}, ExportTraceServiceRequest())
        stub.Export(request, timeout=30)
    assert plain.server.metrics.value(names.SERVE_REQUESTS_REFUSED + "_total", reason="malformed") == 1
