"""The forwarder: a bounded retry queue in front of a real OTLP receiver, over HTTP and over gRPC.

The laws under test:

- queued requests go out merged into one request, every span of them once;
- what the target answers retryable (HTTP 503, gRPC UNAVAILABLE, no answer at all) is sent again
  after a backoff until it is taken; what it refuses for good (HTTP 400, gRPC INVALID_ARGUMENT) is
  dropped and counted; spans a success says it rejected (OTLP partial success) are counted dropped;
- while the target is down, what arrives queues up to the byte cap, and past it is dropped and
  counted at once (the caller never waits);
- closing sends what it can until the deadline, then drops the rest and counts it;
- a ``--forward`` endpoint that is not OTLP's says so.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from tests.traces.shapes import triage_trace

from context_integrity.serve.forward import EndpointError, Forwarder, target_of
from context_integrity.serve.metrics import StageMetrics
from context_integrity.telemetry.schema import names

from ._parts import request_of, wait_for
from ._receiver import GrpcOtlpReceiver, HttpOtlpReceiver, Received


def payload() -> tuple[bytes, int]:
    request = request_of(triage_trace())
    return request.SerializeToString(), 6


def count(metrics: StageMetrics, name: str, **labels: str) -> int:
    return int(metrics.value(name + "_total", **labels))


@pytest.fixture(params=["http", "grpc"])
def receiver(request: pytest.FixtureRequest) -> Iterator[HttpOtlpReceiver | GrpcOtlpReceiver]:
    started: HttpOtlpReceiver | GrpcOtlpReceiver = (
        HttpOtlpReceiver().start() if request.param == "http" else GrpcOtlpReceiver().start()
    )
    yield started
    started.stop()


def endpoint(receiver: HttpOtlpReceiver | GrpcOtlpReceiver) -> str:
    return receiver.url if isinstance(receiver, HttpOtlpReceiver) else receiver.endpoint


def say_down(received: Received, down: bool, *, final: bool = False) -> None:
    received.answer_status = (400 if final else 503) if down else 200
    received.answer_code = (
        (grpc.StatusCode.INVALID_ARGUMENT if final else grpc.StatusCode.UNAVAILABLE)
        if down
        else grpc.StatusCode.OK
    )


def test_queued_requests_go_out_merged_every_span_once(receiver: HttpOtlpReceiver | GrpcOtlpReceiver) -> None:
    metrics = StageMetrics()
    forwarder = Forwarder(target_of(endpoint(receiver)), metrics)
    sent = [payload() for _ in range(5)]
    for body, spans in sent:
        forwarder.put(body, spans, time.monotonic())
    assert forwarder.send_once() is not None  # one request took all five
    assert len(receiver.received.requests) == 1
    expected = ExportTraceServiceRequest.FromString(b"".join(body for body, _ in sent))
    assert receiver.received.requests[0] == expected
    assert count(metrics, names.SERVE_SPANS_FORWARDED) == 30
    forwarder.close(time.monotonic() + 5)


def test_a_retryable_answer_is_sent_again_until_taken(receiver: HttpOtlpReceiver | GrpcOtlpReceiver) -> None:
    metrics = StageMetrics()
    forwarder = Forwarder(target_of(endpoint(receiver)), metrics)
    say_down(receiver.received, True)
    forwarder.start()
    body, spans = payload()
    forwarder.put(body, spans, time.monotonic())
    wait_for(lambda: count(metrics, names.SERVE_FORWARD_FAILURES) >= 2, "two failed sends")
    say_down(receiver.received, False)
    wait_for(lambda: count(metrics, names.SERVE_SPANS_FORWARDED) == spans, "the retry to land")
    assert len(receiver.received.spans()) == spans
    assert forwarder.close(time.monotonic() + 5) == 0


def test_a_final_refusal_is_dropped_and_counted(receiver: HttpOtlpReceiver | GrpcOtlpReceiver) -> None:
    metrics = StageMetrics()
    forwarder = Forwarder(target_of(endpoint(receiver)), metrics)
    say_down(receiver.received, True, final=True)
    body, spans = payload()
    forwarder.put(body, spans, time.monotonic())
    forwarder.send_once()
    assert count(metrics, names.SERVE_SPANS_DROPPED, reason="rejected") == spans
    assert forwarder.idle()


def test_spans_a_success_says_it_rejected_are_counted_dropped(
    receiver: HttpOtlpReceiver | GrpcOtlpReceiver,
) -> None:
    metrics = StageMetrics()
    forwarder = Forwarder(target_of(endpoint(receiver)), metrics)
    receiver.received.partial_rejects = 2
    body, spans = payload()
    forwarder.put(body, spans, time.monotonic())
    forwarder.send_once()
    assert count(metrics, names.SERVE_SPANS_FORWARDED) == spans - 2
    assert count(metrics, names.SERVE_SPANS_DROPPED, reason="rejected") == 2


def test_past_the_byte_cap_what_arrives_is_dropped_at_once_and_counted() -> None:
    with HttpOtlpReceiver() as receiver:
        metrics = StageMetrics()
        body, spans = payload()
        forwarder = Forwarder(target_of(receiver.url), metrics, cap_bytes=3 * len(body))
        say_down(receiver.received, True)
        forwarder.start()
        accepted = [forwarder.put(body, spans, time.monotonic()) for _ in range(5)]
        assert accepted == [True, True, True, False, False]
        assert count(metrics, names.SERVE_SPANS_DROPPED, reason="queue_full") == 2 * spans
        assert metrics.value(names.SERVE_QUEUE_BYTES) == 3 * len(body)
        say_down(receiver.received, False)
        wait_for(forwarder.idle, "the queue to empty")
        assert len(receiver.received.spans()) == 3 * spans
        forwarder.close(time.monotonic() + 5)


def test_a_target_that_is_gone_is_retried_and_closing_drops_what_is_left_by_the_deadline() -> None:
    receiver = HttpOtlpReceiver().start()
    url = receiver.url
    receiver.stop()  # nothing listens there now: connection refused, every time
    metrics = StageMetrics()
    forwarder = Forwarder(target_of(url), metrics)
    forwarder.start()
    body, spans = payload()
    forwarder.put(body, spans, time.monotonic())
    wait_for(lambda: count(metrics, names.SERVE_FORWARD_FAILURES) >= 1, "a failed send")
    started = time.monotonic()
    assert forwarder.close(started + 1.0) == spans
    assert time.monotonic() - started < 1.0 + 5.0  # bounded by the deadline (and one send's timeout)
    assert count(metrics, names.SERVE_SPANS_DROPPED, reason="shutdown") == spans
    assert not forwarder.put(body, spans, time.monotonic())  # closed: counted, not queued
    assert count(metrics, names.SERVE_SPANS_DROPPED, reason="shutdown") == 2 * spans


@pytest.mark.parametrize(
    ("endpoint_text", "said"),
    [
        ("collector:4318", "must start with http://"),
        ("ftp://collector:21", "must start with http://"),
        ("grpc://collector", "grpc://HOST:PORT"),
        ("http://:4318", "names no host"),
    ],
)
def test_an_endpoint_that_is_not_otlps_says_so(endpoint_text: str, said: str) -> None:
    with pytest.raises(EndpointError, match=said):
        target_of(endpoint_text)
