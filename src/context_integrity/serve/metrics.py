"""The stage's own telemetry: Prometheus metrics on ``/metrics``, ``/healthz`` and ``/readyz``.

Every span the stage receives ends in exactly one of: forwarded (``spans_forwarded``) or dropped
(``spans_dropped`` by reason), so ``received = forwarded + dropped + in flight`` always holds and a
test or an operator can check it. Along the way a span may be counted late (its trace was judged
before it arrived) or unjudged (forwarded without judging, by reason). Traces judged are counted with
their judging time; findings count under the library's own findings metric, with the labels the
in-process counter carries plus the run's service, so the shipped alert rules page on either.

The names are :mod:`context_integrity.telemetry.schema.names`'; the metrics live in a registry of
the stage's own, never the process-wide default, so two stages in one process (the tests, the
benchmark) count apart.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Final

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from ..limits import SERVE_MAX_FINDINGS_SERIES
from ..telemetry.schema import names

# Why a span is dropped: the retry queue was full, the forward target refused it for good, the
# shutdown bound ran out before the target took it.
DROPPED_QUEUE_FULL: Final = "queue_full"
DROPPED_REJECTED: Final = "rejected"
DROPPED_SHUTDOWN: Final = "shutdown"
DROPPED_REASONS: Final = (DROPPED_QUEUE_FULL, DROPPED_REJECTED, DROPPED_SHUTDOWN)
# Why a span of agent work is forwarded without judging: the hold was full, its trace was past its
# own bound, the judge failed, the shutdown came before its run ended, the library judged its run in
# process already.
UNJUDGED_HOLD_FULL: Final = "hold_full"
UNJUDGED_TRACE_FULL: Final = "trace_full"
UNJUDGED_JUDGE_FAILED: Final = "judge_failed"
UNJUDGED_SHUTDOWN: Final = "shutdown"
UNJUDGED_AT_SOURCE: Final = "judged_at_source"
UNJUDGED_BUSY: Final = "busy"
UNJUDGED_REASONS: Final = (
    UNJUDGED_HOLD_FULL,
    UNJUDGED_TRACE_FULL,
    UNJUDGED_JUDGE_FAILED,
    UNJUDGED_SHUTDOWN,
    UNJUDGED_AT_SOURCE,
    UNJUDGED_BUSY,
)
# Why a request is refused before any of it is taken: it could not be read, it was too large, the
# receiver had no room for one more request at once, or its content type is not OTLP's.
REFUSED_MALFORMED: Final = "malformed"
REFUSED_TOO_LARGE: Final = "too_large"
REFUSED_BUSY: Final = "busy"
REFUSED_MEDIA_TYPE: Final = "media_type"
REFUSED_REASONS: Final = (REFUSED_MALFORMED, REFUSED_TOO_LARGE, REFUSED_BUSY, REFUSED_MEDIA_TYPE)

# A tool or service past the findings counter's bound is counted under this label value.
OTHER: Final = "other"

# Seconds: a span forwarded at once takes milliseconds; a held one waits out its trace.
_LATENCY_BUCKETS: Final = (0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
_JUDGE_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5)


class StageMetrics:
    """The stage's counters, gauges and histograms, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry(auto_describe=True)
        self.received = Counter(names.SERVE_SPANS_RECEIVED, "Spans received.", registry=registry)
        self.forwarded = Counter(
            names.SERVE_SPANS_FORWARDED, "Spans the forward target accepted.", registry=registry
        )
        self.late = Counter(
            names.SERVE_SPANS_LATE,
            "Spans that arrived after their trace was judged (forwarded unchanged).",
            registry=registry,
        )
        self.dropped = Counter(
            names.SERVE_SPANS_DROPPED,
            "Spans dropped, by reason: the retry queue was full, the target refused them for good, "
            "or the shutdown bound ran out.",
            [names.SERVE_REASON],
            registry=registry,
        )
        self.unjudged = Counter(
            names.SERVE_SPANS_UNJUDGED,
            "Spans of agent work forwarded without judging, by reason.",
            [names.SERVE_REASON],
            registry=registry,
        )
        self.refused = Counter(
            names.SERVE_REQUESTS_REFUSED,
            "Requests refused before any of their spans was taken, by reason.",
            [names.SERVE_REASON],
            registry=registry,
        )
        self.judged = Counter(names.SERVE_TRACES_JUDGED, "Traces judged.", registry=registry)
        self.held_traces = Gauge(
            names.SERVE_TRACES_HELD, "Traces held, waiting to be judged.", registry=registry
        )
        self.held_bytes = Gauge(
            names.SERVE_HELD_BYTES, "Serialized bytes of the spans held.", registry=registry
        )
        self.queue_bytes = Gauge(
            names.SERVE_QUEUE_BYTES,
            "Bytes in the retry queue in front of the forward target.",
            registry=registry,
        )
        self.forward_failures = Counter(
            names.SERVE_FORWARD_FAILURES,
            "Sends to the forward target that failed and will be retried.",
            registry=registry,
        )
        self.latency = Histogram(
            names.SERVE_FORWARD_SECONDS,
            "Seconds from a batch's earliest span's receipt to the target accepting it.",
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.judge_seconds = Histogram(
            names.SERVE_JUDGE_SECONDS,
            "Seconds spent judging one trace.",
            buckets=_JUDGE_BUCKETS,
            registry=registry,
        )
        self.findings = Counter(
            names.FINDINGS_METRIC.replace(".", "_"),
            "Findings filed, by kind, seam, tool, advisory and the run's service.",
            [
                names.METRIC_KIND,
                names.METRIC_SEAM,
                names.METRIC_TOOL,
                names.METRIC_ADVISORY,
                names.SERVE_SERVICE_LABEL,
            ],
            registry=registry,
        )
        self._series: set[tuple[str, ...]] = set()
        for reason in DROPPED_REASONS:
            self.dropped.labels(reason)
        for reason in UNJUDGED_REASONS:
            self.unjudged.labels(reason)
        for reason in REFUSED_REASONS:
            self.refused.labels(reason)

    def finding(self, kind: str, seam: str, tool: str | None, advisory: bool, service: str | None) -> None:
        """Count one finding; a new tool or service past the bound counts under ``other``."""
        labels = (kind, seam, tool or "", "true" if advisory else "false", service or "")
        if labels not in self._series:
            if len(self._series) >= SERVE_MAX_FINDINGS_SERIES:
                labels = (kind, seam, OTHER, labels[3], OTHER)
            self._series.add(labels)
        self.findings.labels(*labels).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    def value(self, name: str, **labels: str) -> float:
        """A sample's current value (``0`` if absent): what a test or the shutdown log reads."""
        found = self.registry.get_sample_value(name, labels)
        return float(found) if found is not None else 0.0


class ServedOnThread:
    """An HTTP server answering on a thread of its own: started, and stopped within seconds."""

    server: ThreadingHTTPServer
    _thread: threading.Thread

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)


class HealthServer(ServedOnThread):
    """``/metrics``, ``/healthz`` (the process answers) and ``/readyz`` (it is taking spans)."""

    def __init__(self, address: tuple[str, int], metrics: StageMetrics, ready: Callable[[], bool]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._answer(200, metrics.exposition(), CONTENT_TYPE_LATEST)
                elif path == "/healthz":
                    self._answer(200, b"ok\n")
                elif path == "/readyz":
                    is_ready = ready()
                    self._answer(200 if is_ready else 503, b"ready\n" if is_ready else b"not ready\n")
                else:
                    self._answer(404, b"not found: /metrics, /healthz, /readyz\n")

            def _answer(
                self, status: int, body: bytes, content_type: str = "text/plain; charset=utf-8"
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(address, Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, name="serve-metrics", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.server.server_address[:2]
        return str(host), int(port)
