"""What ``context-integrity serve`` costs per span, against a pass-through relay, in one process.

Both paths run in this process, side by side, each behind its own OTLP/HTTP receiver (the stage's
own), each forwarding over OTLP/HTTP to a sink in another process:

- the floor: a pass-through relay: receive, decode, re-encode, forward; no judging;
- ``serve``: the stage as ``context-integrity serve`` runs it (the quiet period at 0, so each trace
  is judged as soon as its run span is in): every span read by the dialects, the agent work held
  by trace, judged, written on and forwarded with each run's summary span.

A sender in another process posts the same requests (the SDK batch processor's 512 spans a request)
to one path, then the other, over interleaved rounds; the CPU time this process spends until the
sink has taken every span is the path's cost (``time.process_time``: the sender's and the sink's
CPU are their own processes'). Two workloads:

- agent traces: a pydantic-ai agent under pydantic-ai's own instrumentation (content on), two tool
  calls, one of them returning a mistyped column: every span is agent work, every trace judged;
- traces with no agent work: an HTTP server span with its database and HTTP client spans, which the
  stage forwards at once.

Also printed: spans per second per core of ``serve`` (spans over its CPU seconds), and the memory
one held trace costs (``tracemalloc``, 1,000 agent traces held at once, beside their serialized
bytes). Target: CPU per span at most 1.5x the floor.

Run: ``python benchmarks/bench_serve.py [traces]`` (default 2,000 traces a round per workload).
"""

from __future__ import annotations

import gc
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from _harness import Measure, ratio, show
from context_integrity.contracts import define_contract
from context_integrity.judge import ContractBook, Dials
from context_integrity.serve.forward import Forwarder, target_of
from context_integrity.serve.hold import HoldLimits
from context_integrity.serve.judging import TraceJudge
from context_integrity.serve.metrics import StageMetrics
from context_integrity.serve.receive import HttpReceiver
from context_integrity.serve.server import Server
from context_integrity.telemetry.schema import names

TARGET = 1.5
ROUNDS = 5
BATCH_SPANS = 512  # the SDK batch processor's default export batch
TOOL = "host_group_mappings"
WAIT_S = 600

SINK = textwrap.dedent(
    """
    import sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
    """
)

SENDER = textwrap.dedent(
    """
    import http.client, sys
    host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    data = open(path, "rb").read()
    bodies, at = [], 0
    while at < len(data):
        size = int.from_bytes(data[at:at + 4], "big")
        bodies.append(data[at + 4:at + 4 + size])
        at += 4 + size
    connection = http.client.HTTPConnection(host, port, timeout=120)
    for body in bodies:
        connection.request("POST", "/v1/traces", body=body, headers={"Content-Type": "application/x-protobuf"})
        response = connection.getresponse()
        response.read()
        assert response.status == 200, response.status
    """
)


# ── the workloads ────────────────────────────────────────────────────────


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "storage-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def agent_spans(traces: int) -> list[ReadableSpan]:
    """A pydantic-ai agent's runs, as pydantic-ai's own instrumentation writes them (content on)."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    provider, exporter = _provider()

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("list_hosts", {}, tool_call_id="c1")])
        if len(messages) == 3:
            return ModelResponse(parts=[ToolCallPart(TOOL, {"host": "esx-07"}, tool_call_id="c2")])
        return ModelResponse(parts=[TextPart("LUN 0 is mapped to hg-1.")])

    agent = Agent(FunctionModel(model), name="storage")
    agent.instrument = InstrumentationSettings(tracer_provider=provider, include_content=True)

    @agent.tool_plain
    def list_hosts() -> list[dict[str, object]]:
        return [{"host": "esx-07", "wwpn": "c0:50:76:0a:11:7e:00:10"}, {"host": "esx-08", "wwpn": "c0:50"}]

    @agent.tool_plain
    def host_group_mappings(host: str) -> list[dict[str, object]]:
        return [
            {"logical_unit_number": "", "host_group": "hg-1"},
            {"logical_unit_number": 1, "host_group": "hg-1"},
        ]

    for _ in range(traces):
        agent.run_sync("Which host group has LUN 0 on esx-07?")
    return list(exporter.get_finished_spans())


def plain_spans(traces: int) -> list[ReadableSpan]:
    """A web service's requests: a server span, a database query and an outgoing HTTP call each."""
    from opentelemetry.trace import SpanKind

    provider, exporter = _provider()
    tracer = provider.get_tracer("web")
    for index in range(traces):
        with tracer.start_as_current_span("GET /orders/{id}", kind=SpanKind.SERVER) as server:
            server.set_attributes(
                {"http.request.method": "GET", "http.route": "/orders/{id}", "url.path": f"/orders/{index}"}
            )
            with tracer.start_as_current_span("SELECT orders", kind=SpanKind.CLIENT) as query:
                query.set_attributes(
                    {"db.system": "postgresql", "db.query.text": "SELECT * FROM orders WHERE id = $1"}
                )
            with tracer.start_as_current_span("GET", kind=SpanKind.CLIENT) as call:
                call.set_attributes({"http.request.method": "GET", "url.full": "http://inventory/items"})
            server.set_attribute("http.response.status_code", 200)
    return list(exporter.get_finished_spans())


def bodies_of(spans: Sequence[ReadableSpan]) -> list[bytes]:
    """The spans as the SDK's OTLP exporter sends them: a request per batch."""
    return [
        encode_spans(spans[at : at + BATCH_SPANS]).SerializeToString()
        for at in range(0, len(spans), BATCH_SPANS)
    ]


def book() -> ContractBook:
    contracts = ContractBook()
    contracts.declare(define_contract("list_hosts", result_columns={"host": "string", "wwpn": "string"}))
    contracts.declare(
        define_contract(
            TOOL,
            result_columns={"logical_unit_number": "number", "host_group": "string"},
            arguments_from=["list_hosts"],
        )
    )
    return contracts


# ── the two paths ────────────────────────────────────────────────────────


class Relay:
    """The floor: receive, decode, re-encode, forward."""

    def __init__(self, sink: str) -> None:
        self.metrics = StageMetrics()
        self.forwarder = Forwarder(target_of(sink), self.metrics)
        self.receiver = HttpReceiver(("127.0.0.1", 0), self.accept, self.metrics)

    def accept(self, request: ExportTraceServiceRequest, body: bytes | None) -> None:
        count = sum(len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans)
        self.metrics.received.inc(count)
        self.forwarder.put(request.SerializeToString(), count, time.monotonic())

    def start(self) -> None:
        self.forwarder.start()
        self.receiver.start()

    @property
    def port(self) -> int:
        return self.receiver.address[1]

    def stop(self) -> None:
        self.receiver.stop()
        self.forwarder.close(time.monotonic() + 10)


class Stage:
    def __init__(self, sink: str) -> None:
        self.server = Server(
            TraceJudge(book(), Dials(check_column_types="warn", notice_empty_lookups=True)),
            target_of(sink),
            grpc=None,
            http=("127.0.0.1", 0),
            limits=HoldLimits(quiet_seconds=0.0, max_wait_seconds=60.0),
        )
        self.metrics = self.server.metrics

    def start(self) -> None:
        self.server.start()

    @property
    def port(self) -> int:
        assert self.server.http is not None
        return self.server.http.address[1]

    def stop(self) -> None:
        self.server.stop(bound_seconds=10)


def _forwarded(metrics: StageMetrics) -> float:
    return metrics.value(names.SERVE_SPANS_FORWARDED + "_total")


def _round(path: Relay | Stage, file: Path, spans: int) -> float:
    """Send the file's requests to ``path``; this process's CPU seconds until the sink took them all."""
    gc.collect()
    target = _forwarded(path.metrics) + spans
    started = time.process_time()
    sender = subprocess.Popen([sys.executable, "-c", SENDER, "127.0.0.1", str(path.port), str(file)])
    deadline = time.monotonic() + WAIT_S
    while _forwarded(path.metrics) < target:
        if time.monotonic() > deadline:
            raise RuntimeError("the spans did not all reach the sink")
        time.sleep(0.005)
    used = time.process_time() - started
    if sender.wait(timeout=WAIT_S) != 0:
        raise RuntimeError("the sender failed")
    return used


def _write(bodies: list[bytes], path: Path) -> Path:
    path.write_bytes(b"".join(len(body).to_bytes(4, "big") + body for body in bodies))
    return path


def held_trace_memory(spans: list[ReadableSpan]) -> tuple[float, float]:
    """Bytes of memory and of serialized spans per held trace, 1,000 agent traces held at once."""
    from context_integrity.serve.stage import Stage as Core

    class Nowhere:
        description = "nowhere"

        def send(self, payload: bytes) -> Any:
            raise AssertionError("nothing is forwarded while the traces are held")

        def close(self) -> None:
            return None

    metrics = StageMetrics()
    core = Core(
        TraceJudge(book(), Dials()),
        Forwarder(Nowhere(), metrics),
        metrics,
        limits=HoldLimits(quiet_seconds=60.0, max_wait_seconds=600.0),
    )
    work = [
        span for span in spans if not span.name.startswith(names.OPERATION_INVOKE_AGENT)
    ]  # runs not ended
    requests = [ExportTraceServiceRequest.FromString(body) for body in bodies_of(work)]
    traces = len({span.context.trace_id for span in work})
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for request in requests:
        core.accept(request)
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(core.hold) == traces, (len(core.hold), traces)
    return used / traces, core.hold.bytes / traces


def main(argv: Sequence[str] = ()) -> list[Measure]:
    traces = int(argv[0]) if argv else 2000
    sink = subprocess.Popen([sys.executable, "-c", SINK], stdout=subprocess.PIPE, text=True)
    assert sink.stdout is not None
    sink_url = f"http://127.0.0.1:{sink.stdout.readline().strip()}"
    relay, stage = Relay(sink_url), Stage(sink_url)
    relay.start()
    stage.start()
    measures: list[Measure] = []
    try:
        with tempfile.TemporaryDirectory() as directory:
            workloads: list[tuple[str, list[ReadableSpan]]] = [
                ("agent traces (every span agent work)", agent_spans(traces)),
                ("traces with no agent work", plain_spans(traces)),
            ]
            for label, spans in workloads:
                file = _write(bodies_of(spans), Path(directory) / "requests.bin")
                count = len(spans)
                floor: list[float] = []
                served: list[float] = []
                _round(relay, file, count), _round(stage, file, count)  # warm both paths
                for index in range(ROUNDS):
                    order: list[tuple[list[float], Relay | Stage]] = [(floor, relay), (served, stage)]
                    for samples, path in order if index % 2 == 0 else reversed(order):
                        samples.append(_round(path, file, count))
                per_span = statistics.median(served) / count
                print(
                    f"  {label}: {count:,} spans a round; floor {statistics.median(floor) / count * 1e6:.1f} us/span, "
                    f"serve {per_span * 1e6:.1f} us/span, {1 / per_span:,.0f} spans/s per core"
                )
                measures.append(ratio(f"serve CPU per span, {label}", served, floor, TARGET))
            memory, serialized = held_trace_memory(workloads[0][1][: 1000 * (len(workloads[0][1]) // traces)])
            print(
                f"  memory per held trace: {memory / 1024:.1f} KiB ({serialized / 1024:.1f} KiB of serialized "
                f"spans; {memory / serialized:.1f}x)"
            )
    finally:
        stage.stop()
        relay.stop()
        sink.terminate()
        sink.wait(timeout=30)
    return show(measures)


if __name__ == "__main__":
    main(sys.argv[1:])
