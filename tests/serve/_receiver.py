"""A test OTLP receiver, over HTTP and gRPC, written from the specification rather than from the
stage's own receivers: it keeps every span it takes, and can be made to answer an error, or be
stopped and started again on the same port (a forward target killed and restarted)."""

from __future__ import annotations

import contextlib
import socket
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1 import trace_pb2


class Received:
    """Every span a receiver took, in order, thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: list[ExportTraceServiceRequest] = []
        self.answer_status = 200  # HTTP: what to answer (200, or an error)
        self.answer_code = grpc.StatusCode.OK  # gRPC likewise
        self.partial_rejects = 0  # spans a success says it rejected

    def take(self, request: ExportTraceServiceRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def spans(self) -> list[trace_pb2.Span]:
        with self._lock:
            return [
                span
                for request in self.requests
                for resource_spans in request.resource_spans
                for scope_spans in resource_spans.scope_spans
                for span in scope_spans.spans
            ]

    def response(self) -> ExportTraceServiceResponse:
        response = ExportTraceServiceResponse()
        if self.partial_rejects:
            response.partial_success.rejected_spans = self.partial_rejects
            response.partial_success.error_message = "the test rejects some"
        return response


class HttpOtlpReceiver:
    """``POST /v1/traces`` with binary protobuf."""

    def __init__(self, received: Received | None = None, port: int = 0) -> None:
        self.received = received or Received()
        self.port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()

    def start(self) -> HttpOtlpReceiver:
        received = self.received
        connections = self._connections

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                connections.add(self.connection)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                status = received.answer_status
                if status == 200:
                    received.take(ExportTraceServiceRequest.FromString(body))
                    payload = received.response().SerializeToString()
                else:
                    payload = b""
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:
                return

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        server.allow_reuse_address = True
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        """Stop listening and cut every open connection: the receiver is gone, as a killed one is."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        for connection in list(self._connections):
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()
        self._connections.clear()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> HttpOtlpReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Service(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, received: Received) -> None:
        self.received = received

    def Export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:
        code = self.received.answer_code
        if code != grpc.StatusCode.OK:
            context.abort(code, "the test receiver says no")
        self.received.take(request)
        return self.received.response()


class GrpcOtlpReceiver:
    """The trace service's Export over gRPC, from the generated servicer."""

    def __init__(self, received: Received | None = None, port: int = 0) -> None:
        self.received = received or Received()
        self.port = port
        self._server: grpc.Server | None = None

    def start(self) -> GrpcOtlpReceiver:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(  # type: ignore[no-untyped-call]
            _Service(self.received), server
        )
        self.port = server.add_insecure_port(f"127.0.0.1:{self.port}")
        server.start()
        self._server = server
        return self

    @property
    def endpoint(self) -> str:
        return f"grpc://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(0).wait(10)
            self._server = None

    def __enter__(self) -> GrpcOtlpReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
