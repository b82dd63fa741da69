"""The OTLP receivers: gRPC (the trace service's Export) and HTTP (``POST /v1/traces``).

Both hand each decoded request to one ``accept`` callable and answer as the OTLP specification says:

- success: an empty ``ExportTraceServiceResponse`` (HTTP 200, in the request's encoding);
- a body that is not a request (bad protobuf, bad JSON, bad gzip): HTTP 400 with a
  ``google.rpc.Status`` body in the request's encoding, gRPC ``INVALID_ARGUMENT``; not retryable;
- a body past :data:`~context_integrity.limits.SERVE_MAX_REQUEST_BYTES` (as sent, or once gzip is
  undone): HTTP 413, gRPC ``RESOURCE_EXHAUSTED`` (gRPC refuses it before it is read);
- HTTP with another content type: 415; another path: 404; another method: 405;
- more than :data:`~context_integrity.limits.SERVE_MAX_HTTP_REQUESTS` requests at once: HTTP 503,
  which OTLP clients retry with backoff.

Nothing a client sends ends the process: every failure is an answer, counted by reason.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ..limits import SERVE_GRPC_WORKERS, SERVE_MAX_HTTP_REQUESTS, SERVE_MAX_REQUEST_BYTES
from .metrics import (
    REFUSED_BUSY,
    REFUSED_MALFORMED,
    REFUSED_MEDIA_TYPE,
    REFUSED_TOO_LARGE,
    ServedOnThread,
    StageMetrics,
)
from .wire import (
    GRPC_METHOD,
    GRPC_SERVICE,
    GZIP,
    INVALID_ARGUMENT,
    PROTOBUF,
    RESOURCE_EXHAUSTED,
    TRACES_PATH,
    UNAVAILABLE,
    BadRequest,
    TooLarge,
    gunzip,
    read_protobuf,
    reader_for,
    status,
    success,
    too_large_message,
)

logger = logging.getLogger("context_integrity.serve")

Accept = Callable[[ExportTraceServiceRequest, "bytes | None"], None]
Address = tuple[str, int]

_EMPTY_RESPONSE: Final = success(PROTOBUF)
# A refused body is read and thrown away up to this size (the client then reads the refusal);
# past it the connection is closed unread.
_MAX_DISCARDED_BYTES: Final = 4 * SERVE_MAX_REQUEST_BYTES


def parse_address(text: str, option: str) -> Address:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6; port 0 picks a free one). Raises ``ValueError``
    naming ``option`` and the fix."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"{option} {text!r}: write HOST:PORT, e.g. 0.0.0.0:4317 (port 0 picks a free one)")
    return host, int(port)


def show_address(address: Address) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# ── gRPC ────────────────────────────────────────────────────────────────


def _identity(data: bytes) -> bytes:
    return data


class GrpcReceiver:
    """The trace service's Export, over gRPC; the request taken as raw bytes so that a body that is
    not a request is answered INVALID_ARGUMENT with the reason, never a stack trace."""

    def __init__(self, address: Address, accept: Accept, metrics: StageMetrics) -> None:
        self._accept = accept
        self._metrics = metrics
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=SERVE_GRPC_WORKERS, thread_name_prefix="serve-grpc"),
            options=[
                ("grpc.max_receive_message_length", SERVE_MAX_REQUEST_BYTES),
                ("grpc.so_reuseport", 0),
            ],
        )
        handler = grpc.method_handlers_generic_handler(
            GRPC_SERVICE,
            {
                GRPC_METHOD: grpc.unary_unary_rpc_method_handler(
                    self._export, request_deserializer=_identity, response_serializer=_identity
                )
            },
        )
        self.server.add_generic_rpc_handlers((handler,))
        host, port = address
        bound = self.server.add_insecure_port(show_address((host, port)))
        if bound == 0:
            raise OSError(f"cannot listen for gRPC on {show_address(address)}")
        self.address: Address = (host, bound)

    def _export(self, body: bytes, context: grpc.ServicerContext) -> bytes:
        try:
            request = read_protobuf(body)
        except BadRequest as error:
            self._metrics.refused.labels(REFUSED_MALFORMED).inc()
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
            raise  # abort raises; this line is never reached
        try:
            self._accept(request, body)
        except Exception as error:  # our own bug: answered retryable, never a crash
            logger.error("taking a gRPC request failed: %r", error, exc_info=error)
            context.abort(grpc.StatusCode.UNAVAILABLE, "the stage failed to take the request; retry")
            raise
        return _EMPTY_RESPONSE

    def start(self) -> None:
        self.server.start()

    def stop(self, grace: float) -> None:
        self.server.stop(grace).wait(grace + 1)


# ── HTTP ────────────────────────────────────────────────────────────────


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Connections waiting to be accepted: a burst of senders queues here rather than being refused.
    request_queue_size = 128

    def __init__(self, address: Address, handler: type[BaseHTTPRequestHandler]) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, handler)
        self.slots = threading.BoundedSemaphore(SERVE_MAX_HTTP_REQUESTS)


class HttpReceiver(ServedOnThread):
    """``POST /v1/traces`` in binary protobuf or OTLP/JSON, gzip or not, over HTTP/1.1 keep-alive."""

    server: _Server

    def __init__(self, address: Address, accept: Accept, metrics: StageMetrics) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            server: _Server

            def do_POST(self) -> None:
                if not self.server.slots.acquire(blocking=False):
                    metrics.refused.labels(REFUSED_BUSY).inc()
                    self._refuse(503, UNAVAILABLE, "too many requests at once; retry", PROTOBUF, drain=True)
                    return
                try:
                    receiver._post(self)
                finally:
                    self.server.slots.release()

            def do_GET(self) -> None:
                self._refuse(405, INVALID_ARGUMENT, f"send spans with POST {TRACES_PATH}", PROTOBUF)

            do_PUT = do_DELETE = do_PATCH = do_GET

            def _refuse(
                self, http_status: int, code: int, message: str, encoding: str, *, drain: bool = False
            ) -> None:
                if drain:
                    self._drain()
                self.answer(http_status, status(code, message, encoding), encoding)

            def _drain(self) -> None:
                """Read and discard a body we refuse, so that the client, still sending it, reads our
                answer rather than a broken pipe; a body past any sense is not read, and the
                connection is closed instead."""
                length = (self.headers.get("Content-Length") or "").strip()
                left = int(length) if length.isdigit() else -1
                if not 0 <= left <= _MAX_DISCARDED_BYTES:
                    self.close_connection = True
                    return
                while left > 0:
                    chunk = self.rfile.read(min(left, 65536))
                    if not chunk:
                        break
                    left -= len(chunk)
                self.close_connection = True

            def answer(self, http_status: int, body: bytes, encoding: str, **headers: str) -> None:
                self.send_response(http_status)
                self.send_header("Content-Type", encoding)
                self.send_header("Content-Length", str(len(body)))
                for key, value in headers.items():
                    self.send_header(key.replace("_", "-"), value)
                if self.close_connection:
                    self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self._accept = accept
        self._metrics = metrics
        self.server = _Server(address, Handler)
        host, port = self.server.server_address[:2]
        self.address: Address = (str(host), int(port))
        self._thread = threading.Thread(target=self.server.serve_forever, name="serve-http", daemon=True)

    def _post(self, handler: Any) -> None:
        metrics = self._metrics
        path = handler.path.split("?", 1)[0]
        found = reader_for(handler.headers.get("Content-Type"))
        encoding = found[0] if found is not None else PROTOBUF
        if path != TRACES_PATH:
            handler._refuse(
                404,
                INVALID_ARGUMENT,
                f"no such path {path!r}: send spans to {TRACES_PATH}",
                encoding,
                drain=True,
            )
            return
        if found is None:
            metrics.refused.labels(REFUSED_MEDIA_TYPE).inc()
            handler._refuse(
                415,
                INVALID_ARGUMENT,
                "the content type must be application/x-protobuf or application/json",
                encoding,
                drain=True,
            )
            return
        _, read = found
        length = handler.headers.get("Content-Length")
        if length is None or not length.strip().isdigit():
            # Chunked bodies are not taken: OTLP exporters always say how long a body is.
            metrics.refused.labels(REFUSED_MALFORMED).inc()
            handler.close_connection = True
            handler._refuse(411, INVALID_ARGUMENT, "the request must say its Content-Length", encoding)
            return
        size = int(length)
        if size > SERVE_MAX_REQUEST_BYTES:
            metrics.refused.labels(REFUSED_TOO_LARGE).inc()
            handler._refuse(413, RESOURCE_EXHAUSTED, too_large_message(), encoding, drain=True)
            return
        body = handler.rfile.read(size)
        if len(body) < size:
            handler.close_connection = True
            return  # the client went away mid-body: nobody to answer
        try:
            if (handler.headers.get("Content-Encoding") or "").strip().lower() == GZIP:
                body = gunzip(body)
            request = read(body)
        except TooLarge as error:
            metrics.refused.labels(REFUSED_TOO_LARGE).inc()
            handler._refuse(413, RESOURCE_EXHAUSTED, str(error), encoding)
            return
        except BadRequest as error:
            metrics.refused.labels(REFUSED_MALFORMED).inc()
            handler._refuse(400, INVALID_ARGUMENT, str(error), encoding)
            return
        try:
            self._accept(request, body if encoding == PROTOBUF else None)
        except Exception as error:  # our own bug: answered retryable, never a crash
            logger.error("taking an HTTP request failed: %r", error, exc_info=error)
            handler._refuse(503, UNAVAILABLE, "the stage failed to take the request; retry", encoding)
            return
        handler.answer(200, success(encoding), encoding)
