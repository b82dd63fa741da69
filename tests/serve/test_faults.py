"""The stage under faults, on 10,000 traces, over real sockets: nothing lost, nothing blocked.

The laws under test:

- the forward target killed and restarted midway: every span the stage received reaches the next
  hop (the retry queue holds them meanwhile), every trace is judged, every finding is on its span,
  and the stage's own account says so (received = forwarded, nothing dropped);
- a sender flooding past the hold buffer: every request is answered at once, the hold never holds
  more than its bound, what has no room is forwarded unjudged and counted, and every span is
  forwarded or counted;
- 1,000 traces open at once hold no more memory than the bound ``limits`` states for the bytes
  they hold.
"""

from __future__ import annotations

import gc
import http.client
import threading
import time
import tracemalloc
from collections.abc import Iterator

import pytest
from tests.traces.shapes import triage_book, triage_trace

from context_integrity.limits import SERVE_HELD_MEMORY_PER_BYTE
from context_integrity.serve.forward import target_of
from context_integrity.serve.hold import HoldLimits
from context_integrity.serve.judging import TraceJudge
from context_integrity.serve.server import Server
from context_integrity.telemetry.schema import names

from ._parts import DIALS, MISTYPED_EVERY, request_of, rig, small_traces, span_keys, spans_in
from ._receiver import HttpOtlpReceiver, Received
from .test_stage import without_run_span

TRACES = 10_000
PER_REQUEST = 100
SETTLE_S = 120


class Sender:
    """Posts serialized requests to the stage's OTLP/HTTP receiver over one kept-alive connection."""

    def __init__(self, address: str) -> None:
        host, port = address.rsplit(":", 1)
        self.connection = http.client.HTTPConnection(host, int(port), timeout=30)
        self.answers: list[int] = []

    def post(self, body: bytes) -> None:
        self.connection.request(
            "POST", "/v1/traces", body=body, headers={"Content-Type": "application/x-protobuf"}
        )
        response = self.connection.getresponse()
        response.read()
        self.answers.append(response.status)

    def close(self) -> None:
        self.connection.close()


def counted(server: Server, name: str, **labels: str) -> int:
    return int(server.metrics.value(name + "_total", **labels))


def settle(server: Server, expected: int) -> None:
    """Wait until every span received is forwarded or dropped, and nothing is held."""
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        done = counted(server, names.SERVE_SPANS_FORWARDED) + sum(
            counted(server, names.SERVE_SPANS_DROPPED, reason=r)
            for r in ("queue_full", "rejected", "shutdown")
        )
        if done >= expected and len(server.stage.hold) == 0 and server.forwarder.idle():
            return
        time.sleep(0.05)
    pytest.fail(f"the stage did not settle: {server.metrics.exposition().decode()[-3000:]}")


@pytest.fixture
def next_hop() -> Iterator[HttpOtlpReceiver]:
    receiver = HttpOtlpReceiver().start()
    yield receiver
    receiver.stop()


def serving(next_hop: HttpOtlpReceiver, limits: HoldLimits) -> Server:
    server = Server(
        TraceJudge(triage_book(), DIALS),
        target_of(next_hop.url),
        grpc=None,
        http=("127.0.0.1", 0),
        limits=limits,
    )
    server.start()
    return server


def test_the_forward_target_killed_and_restarted_midway_loses_nothing(next_hop: HttpOtlpReceiver) -> None:
    server = serving(next_hop, HoldLimits(quiet_seconds=0.05, max_wait_seconds=5.0))
    sender = Sender(server.addresses()["http"])
    restarted: list[HttpOtlpReceiver] = []
    sent = set()
    try:
        for first in range(0, TRACES, PER_REQUEST):
            if first == TRACES // 2:
                next_hop.stop()  # the target dies with half the traces sent
            if first == TRACES // 2 + 10 * PER_REQUEST:
                # ... and comes back on the same port once the stage has met the outage, while the
                # stage keeps taking spans
                deadline = time.monotonic() + SETTLE_S
                while counted(server, names.SERVE_FORWARD_FAILURES) == 0 and time.monotonic() < deadline:
                    time.sleep(0.01)
                restarted.append(HttpOtlpReceiver(next_hop.received, port=next_hop.port).start())
            request = small_traces(PER_REQUEST, first=first)
            sent |= span_keys(s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans)
            sender.post(request.SerializeToString())
        assert set(sender.answers) == {200}
        settle(server, 2 * TRACES)
        assert counted(server, names.SERVE_FORWARD_FAILURES) > 0  # the outage was met
        assert counted(server, names.SERVE_SPANS_RECEIVED) == 2 * TRACES
        assert counted(server, names.SERVE_SPANS_FORWARDED) == 2 * TRACES
        assert counted(server, names.SERVE_TRACES_JUDGED) == TRACES
        out = spans_in(next_hop.received.requests)
        assert span_keys(o.proto for o in out if o.scope != names.INSTRUMENTATION_NAME) == sent
        summaries = {o.view.trace_id for o in out if o.view.name == names.DISPOSITION_SPAN}
        assert len(summaries) == TRACES
        found = {o.view.trace_id for o in out for f in o.findings if f.kind == "column-type-mismatch"}
        assert found == {index.to_bytes(16, "big").hex() for index in range(0, TRACES, MISTYPED_EVERY)}
    finally:
        sender.close()
        server.stop(bound_seconds=10)
        for receiver in restarted:
            receiver.stop()


def test_a_sender_flooding_past_the_hold_is_answered_at_once_and_nothing_is_lost(
    next_hop: HttpOtlpReceiver,
) -> None:
    bound = 200
    server = serving(next_hop, HoldLimits(quiet_seconds=30.0, max_wait_seconds=60.0, max_traces=bound))
    sender = Sender(server.addresses()["http"])
    most_held = 0
    watching = threading.Event()

    def watch() -> None:
        nonlocal most_held
        while not watching.is_set():
            most_held = max(most_held, len(server.stage.hold))
            time.sleep(0.001)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for first in range(0, TRACES, PER_REQUEST):
            sender.post(small_traces(PER_REQUEST, first=first).SerializeToString())
        assert set(sender.answers) == {200}
        held = len(server.stage.hold)
        assert held == bound
        unjudged = counted(server, names.SERVE_SPANS_UNJUDGED, reason="hold_full")
        assert unjudged == 2 * (TRACES - bound)
    finally:
        watching.set()
        watcher.join()
        sender.close()
        server.stop(bound_seconds=15)  # the held traces' runs ended: judged at the stop
    assert most_held <= bound
    assert counted(server, names.SERVE_TRACES_JUDGED) == bound
    assert counted(server, names.SERVE_SPANS_RECEIVED) == 2 * TRACES
    assert counted(server, names.SERVE_SPANS_FORWARDED) == 2 * TRACES
    received: Received = next_hop.received
    assert len(span_keys(received.spans())) == 2 * TRACES + bound  # with the summaries


def test_a_thousand_traces_open_at_once_stay_within_the_stated_memory_bound() -> None:
    test = rig(max_wait=600.0)
    requests = [request_of(without_run_span(triage_trace())[0]) for _ in range(1000)]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for request in requests:
            test.stage.accept(request)
        gc.collect()
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(test.stage.hold) == 1000
    assert test.stage.hold.bytes <= test.stage.hold.limits.max_bytes
    assert used <= SERVE_HELD_MEMORY_PER_BYTE * test.stage.hold.bytes, (used, test.stage.hold.bytes)
    assert test.after(601.0) == 1000  # all judged at the maximum wait
    assert test.accounted() == (5000, 5000)
