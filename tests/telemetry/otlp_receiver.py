"""A receiver that speaks OTLP/HTTP (protobuf, gzip or not) and keeps every request it is sent.

The tests that prove telemetry leaves over real OTLP (``setup()``'s pipeline, ``judge --export``)
send it to this receiver and read back the decoded requests.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

_CODECS: dict[str, tuple[type[Message], type[Message]]] = {
    "/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
    "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse),
    "/v1/logs": (ExportLogsServiceRequest, ExportLogsServiceResponse),
}


class Receiver(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: dict[str, list[object]] = {path: [] for path in _CODECS}
        self.headers_seen: list[str] = []


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        codec = _CODECS.get(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if codec is None:
            self.send_response(404)
            self.end_headers()
            return
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request_type, response_type = codec
        request = request_type()
        request.ParseFromString(body)
        self.server.received[self.path].append(request)
        self.server.headers_seen.append(self.headers.get("x-team", ""))
        payload = response_type().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def attributes_of(items: object) -> dict[str, object]:
    out: dict[str, object] = {}
    for item in items:  # type: ignore[attr-defined]
        value = item.value
        kind = value.WhichOneof("value")
        out[item.key] = getattr(value, kind) if kind else None
    return out


def records_of(receiver: Receiver) -> list[object]:
    return [
        record
        for request in receiver.received["/v1/logs"]
        for resource_logs in request.resource_logs  # type: ignore[attr-defined]
        for scope_logs in resource_logs.scope_logs
        for record in scope_logs.log_records
    ]


def spans_of(receiver: Receiver) -> list[object]:
    return [
        span
        for request in receiver.received["/v1/traces"]
        for resource_spans in request.resource_spans  # type: ignore[attr-defined]
        for scope_spans in resource_spans.scope_spans
        for span in scope_spans.spans
    ]
