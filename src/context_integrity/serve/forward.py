"""The forwarder: a bounded retry queue in front of the next OTLP endpoint.

Everything the stage forwards goes through one queue of serialized ``ExportTraceServiceRequest``
messages. One thread sends them, merged up to :data:`~context_integrity.limits.SERVE_FORWARD_BATCH_BYTES`
a request (two serialized messages of one type, concatenated, are the message holding both: no
re-encoding). When the target is down or answers a retryable error (OTLP's table: HTTP 429, 502,
503, 504 and no answer at all; gRPC UNAVAILABLE and its kin), the batch stays at the head of the
queue and is sent again after an exponential, jittered backoff, and what arrives meanwhile queues
behind it up to :data:`~context_integrity.limits.SERVE_RETRY_QUEUE_BYTES`; past that it is dropped
and counted, never waited for. An answer OTLP says not to retry (HTTP 400, gRPC INVALID_ARGUMENT…)
drops the batch and counts it.

Targets: ``http://host:port[/path]`` (OTLP/HTTP protobuf; the path defaults to ``/v1/traces``),
``https://…``, ``grpc://host:port`` (OTLP/gRPC, plaintext) and ``grpcs://host:port`` (TLS).
"""

from __future__ import annotations

import collections
import http.client
import logging
import random
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal, Protocol
from urllib.parse import urlsplit

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ..limits import (
    SERVE_FORWARD_BATCH_BYTES,
    SERVE_FORWARD_TIMEOUT_SECONDS,
    SERVE_RETRY_FIRST_SECONDS,
    SERVE_RETRY_MAX_SECONDS,
    SERVE_RETRY_QUEUE_BYTES,
)
from ..text import clip
from .metrics import DROPPED_QUEUE_FULL, DROPPED_REJECTED, DROPPED_SHUTDOWN, StageMetrics
from .wire import GRPC_EXPORT_PATH, PROTOBUF, TRACES_PATH

logger = logging.getLogger("context_integrity.serve")

Outcome = Literal["sent", "retry", "rejected"]
SENT: Final[Outcome] = "sent"
RETRY: Final[Outcome] = "retry"
REJECTED: Final[Outcome] = "rejected"

# OTLP/HTTP's retryable answers; every other 4xx and 5xx is final.
_RETRYABLE_HTTP: Final = frozenset({429, 502, 503, 504})
# OTLP/gRPC's retryable codes (RESOURCE_EXHAUSTED only with the server's RetryInfo, which the
# Python client does not surface: it is treated as final, as the specification says without it).
_RETRYABLE_GRPC: Final = frozenset(
    {
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DATA_LOSS,
    }
)
SCHEMES: Final = ("http", "https", "grpc", "grpcs")


class EndpointError(ValueError):
    """A ``--forward`` endpoint this stage cannot send to; the message names the fix."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What one send came to, and what the target said (for the log)."""

    outcome: Outcome
    detail: str = ""
    retry_after: float | None = None
    rejected_spans: int = 0


class Target(Protocol):
    """Where forwarded spans go: one serialized request at a time."""

    description: str

    def send(self, payload: bytes) -> Answer: ...

    def close(self) -> None: ...


def _partial(body: bytes) -> tuple[int, str]:
    """The spans a success answer says were rejected (OTLP's partial success), and why."""
    try:
        response = ExportTraceServiceResponse.FromString(body)
    except Exception:
        return 0, ""
    partial = response.partial_success
    return int(partial.rejected_spans), partial.error_message


class HttpTarget:
    """OTLP/HTTP with binary protobuf, over one kept-alive connection."""

    def __init__(self, url: str, timeout: float = SERVE_FORWARD_TIMEOUT_SECONDS) -> None:
        parts = urlsplit(url)
        if not parts.hostname:
            raise EndpointError(f"--forward {url!r} names no host; write http://HOST:PORT")
        self.description = url
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        try:
            self._port = parts.port or (443 if self._https else 80)
        except ValueError:
            raise EndpointError(f"--forward {url!r} has a port that is not a number") from None
        self._path = parts.path if parts.path not in ("", "/") else TRACES_PATH
        self._timeout = timeout
        self._connection: http.client.HTTPConnection | None = None

    def _connect(self) -> http.client.HTTPConnection:
        if self._connection is None:
            if self._https:
                self._connection = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self._timeout, context=ssl.create_default_context()
                )
            else:
                self._connection = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        return self._connection

    def send(self, payload: bytes) -> Answer:
        connection = self._connect()
        try:
            connection.request(
                "POST",
                self._path,
                body=payload,
                headers={"Content-Type": PROTOBUF, "Connection": "keep-alive"},
            )
            response = connection.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException) as error:
            self.close()
            return Answer(RETRY, f"no answer: {clip(str(error) or type(error).__name__, 200)}")
        status = response.status
        if 200 <= status < 300:
            rejected, why = _partial(body)
            return Answer(SENT, why, rejected_spans=rejected)
        detail = f"HTTP {status}"
        if status in _RETRYABLE_HTTP:
            return Answer(RETRY, detail, retry_after=_retry_after(response.getheader("Retry-After")))
        return Answer(REJECTED, detail)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None


def _identity(payload: bytes) -> bytes:
    return payload


class GrpcTarget:
    """OTLP/gRPC: the trace service's Export, the request sent as the bytes it already is."""

    def __init__(self, address: str, *, tls: bool, timeout: float = SERVE_FORWARD_TIMEOUT_SECONDS) -> None:
        self.description = f"{'grpcs' if tls else 'grpc'}://{address}"
        self._channel = (
            grpc.secure_channel(address, grpc.ssl_channel_credentials())
            if tls
            else grpc.insecure_channel(address)
        )
        self._export = self._channel.unary_unary(
            GRPC_EXPORT_PATH, request_serializer=_identity, response_deserializer=_identity
        )
        self._timeout = timeout

    def send(self, payload: bytes) -> Answer:
        try:
            body = self._export(payload, timeout=self._timeout)
        except grpc.RpcError as error:
            code = error.code() if isinstance(error, grpc.Call) else grpc.StatusCode.UNKNOWN
            detail = f"gRPC {code.name}"
            return Answer(RETRY if code in _RETRYABLE_GRPC else REJECTED, detail)
        rejected, why = _partial(body)
        return Answer(SENT, why, rejected_spans=rejected)

    def close(self) -> None:
        self._channel.close()


def target_of(endpoint: str) -> Target:
    """The target ``--forward`` names: ``http(s)://host:port[/path]`` or ``grpc(s)://host:port``."""
    parts = urlsplit(endpoint)
    if parts.scheme in ("http", "https"):
        return HttpTarget(endpoint)
    if parts.scheme in ("grpc", "grpcs"):
        if not parts.hostname or parts.port is None:
            raise EndpointError(f"--forward {endpoint!r}: write {parts.scheme}://HOST:PORT")
        return GrpcTarget(parts.netloc, tls=parts.scheme == "grpcs")
    raise EndpointError(
        f"--forward {endpoint!r}: the endpoint must start with http://, https:// (OTLP/HTTP protobuf), "
        "grpc:// or grpcs:// (OTLP/gRPC)"
    )


@dataclass(frozen=True, slots=True)
class Batch:
    """One serialized request queued: its spans, and when the earliest of them was received."""

    payload: bytes
    spans: int
    received: float


class Forwarder:
    """The retry queue and the thread that empties it into the target."""

    def __init__(
        self,
        target: Target,
        metrics: StageMetrics,
        *,
        cap_bytes: int = SERVE_RETRY_QUEUE_BYTES,
        batch_bytes: int = SERVE_FORWARD_BATCH_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.target = target
        self._metrics = metrics
        self._cap = cap_bytes
        self._batch = batch_bytes
        self._clock = clock
        self._queue: collections.deque[Batch] = collections.deque()
        self._bytes = 0
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._stopping = False
        self._sending = 0  # spans taken off the queue and not yet settled
        self._thread = threading.Thread(target=self._run, name="serve-forward", daemon=True)
        self._failing_since: float | None = None

    @property
    def queued_bytes(self) -> int:
        return self._bytes

    def start(self) -> None:
        self._thread.start()

    def put(self, payload: bytes, spans: int, received: float) -> bool:
        """Queue one serialized request; ``False`` (dropped and counted) when it would pass the cap."""
        if spans <= 0:
            return True
        size = len(payload)
        with self._lock:
            if self._stopping or self._bytes + size > self._cap:
                accepted = False
            else:
                self._queue.append(Batch(payload, spans, received))
                self._bytes += size
                accepted = True
                self._wake.notify()
        if not accepted:
            self._metrics.dropped.labels(DROPPED_QUEUE_FULL if not self._stopping else DROPPED_SHUTDOWN).inc(
                spans
            )
        self._metrics.queue_bytes.set(self._bytes)
        return accepted

    def idle(self) -> bool:
        """Nothing queued and nothing in flight."""
        with self._lock:
            return not self._queue and not self._sending

    def _take(self) -> list[Batch]:
        """The batches of the next request, left at the head of the queue until they are settled."""
        taken: list[Batch] = []
        size = 0
        for batch in self._queue:
            if taken and size + len(batch.payload) > self._batch:
                break
            taken.append(batch)
            size += len(batch.payload)
        return taken

    def _settle(self, taken: list[Batch]) -> bool:
        """Take the sent batches off the queue; ``False`` if the shutdown dropped them meanwhile
        (they were counted then)."""
        with self._lock:
            self._sending = 0
            if not self._queue or self._queue[0] is not taken[0]:
                return False
            for _ in taken:
                batch = self._queue.popleft()
                self._bytes -= len(batch.payload)
        self._metrics.queue_bytes.set(self._bytes)
        return True

    def send_once(self) -> Answer | None:
        """Send the next request, if any, and settle it unless it is to be retried; ``None``: nothing queued."""
        with self._lock:
            taken = self._take()
            self._sending = sum(batch.spans for batch in taken)
        if not taken:
            return None
        payload = taken[0].payload if len(taken) == 1 else b"".join(batch.payload for batch in taken)
        try:
            answer = self.target.send(payload)
        except Exception as error:  # a target that raises is a target that did not take the batch
            answer = Answer(RETRY, f"{type(error).__name__}: {clip(str(error), 200)}")
        spans = sum(batch.spans for batch in taken)
        if answer.outcome == RETRY:
            with self._lock:
                self._sending = 0
            self._metrics.forward_failures.inc()
            return answer
        if not self._settle(taken):
            return answer
        if answer.outcome == SENT:
            accepted = spans - min(answer.rejected_spans, spans)
            self._metrics.forwarded.inc(accepted)
            if accepted < spans:
                self._metrics.dropped.labels(DROPPED_REJECTED).inc(spans - accepted)
                logger.warning(
                    "the forward target took a batch but refused %d of its %d spans: %s",
                    spans - accepted,
                    spans,
                    answer.detail or "(no reason given)",
                )
            self._metrics.latency.observe(max(0.0, self._clock() - min(b.received for b in taken)))
        else:
            self._metrics.dropped.labels(DROPPED_REJECTED).inc(spans)
            logger.warning(
                "the forward target refused a batch of %d spans for good (%s); it was dropped",
                spans,
                answer.detail,
                extra={"target": self.target.description},
            )
        return answer

    def _run(self) -> None:
        delay = SERVE_RETRY_FIRST_SECONDS
        while True:
            with self._lock:
                while not self._queue and not self._stopping:
                    self._wake.wait()
                if not self._queue and self._stopping:
                    return
            answer = self.send_once()
            if answer is None or answer.outcome != RETRY:
                if self._failing_since is not None:
                    logger.info(
                        "the forward target answers again, after %.1f s",
                        self._clock() - self._failing_since,
                        extra={"target": self.target.description},
                    )
                    self._failing_since = None
                delay = SERVE_RETRY_FIRST_SECONDS
                continue
            if self._failing_since is None:
                self._failing_since = self._clock()
                logger.warning(
                    "the forward target did not take a batch (%s); retrying with backoff, queueing up "
                    "to %d bytes meanwhile",
                    answer.detail,
                    self._cap,
                    extra={"target": self.target.description},
                )
            wait = answer.retry_after if answer.retry_after is not None else delay
            wait = min(wait, SERVE_RETRY_MAX_SECONDS) * random.uniform(0.8, 1.2)
            with self._lock:
                if self._stopping and self._give_up_at is not None and self._clock() >= self._give_up_at:
                    return
                self._wake.wait(wait)
            delay = min(delay * 2, SERVE_RETRY_MAX_SECONDS)

    _give_up_at: float | None = None

    def close(self, deadline: float) -> int:
        """Stop taking batches, send what is queued until ``deadline`` (on the forwarder's clock), then
        drop the rest and count it; the spans dropped."""
        with self._lock:
            self._stopping = True
            self._give_up_at = deadline
            self._wake.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=max(0.0, deadline - self._clock()))
        with self._lock:
            left = sum(batch.spans for batch in self._queue)
            self._queue.clear()
            self._bytes = 0
        if left:
            self._metrics.dropped.labels(DROPPED_SHUTDOWN).inc(left)
        self._metrics.queue_bytes.set(0)
        try:
            self.target.close()
        except Exception:
            logger.debug("closing the forward target failed", exc_info=True)
        return left
