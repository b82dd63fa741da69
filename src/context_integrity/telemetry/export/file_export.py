"""Exporters that append OTLP/JSON lines to a local file: the recording.

Each ``export()`` call appends exactly one line, a JSON object in the OTLP/JSON
encoding the OpenTelemetry Collector's ``file`` exporter writes and its
``otlpjsonfile`` receiver reads (``{"resourceSpans": [...]}``,
``{"resourceMetrics": [...]}`` or ``{"resourceLogs": [...]}``). So a recording
can be replayed into a collector, and ``context-integrity report`` can read it
without any OpenTelemetry installed.

Spans, the bulk of a recording, are encoded straight to OTLP/JSON by
:mod:`.otlp_json` (equal to the SDK's protobuf encoding, ids in hex). Metrics
and logs, written far less often, take the SDK's own protobuf encoding rendered
with protobuf's JSON mapping and corrected where OTLP/JSON deviates from it:
trace and span ids are lowercase hex, not base64 (enums as integers and
lowerCamelCase keys are asked of the mapping directly).

Lines go through :class:`~.recording_file.RecordingFile`: one whole write each, under
a lock shared with other processes, a torn line ended before the next, rotation at the
recording's size. :class:`~.recording_processor.RecordingSpanProcessor` feeds the span
exporter and writes a drop record into the file for any span it could not keep.

A recording must never break the host: ``export()`` never raises. A file that
cannot be written is logged once (logger ``context_integrity``) and reported as
a failed export; the next successful write re-arms the warning.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    MetricExporter,
    MetricExportResult,
    MetricsData,
)
from opentelemetry.sdk.metrics.view import Aggregation
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ...paths import default_recording_path
from ..schema import dropped_attributes, names
from .otlp_json import attributes, resource_json, spans_document
from .recording_file import RecordingFile

try:  # SDK >= 1.39 names the log exporter interface LogRecordExporter.
    from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
except ImportError:  # pragma: no cover - older SDKs
    from opentelemetry.sdk._logs.export import (  # type: ignore[assignment, no-redef, unused-ignore]
        LogExporter as LogRecordExporter,
    )
    from opentelemetry.sdk._logs.export import (  # type: ignore[assignment, no-redef, unused-ignore]
        LogExportResult as LogRecordExportResult,
    )

__all__ = [
    "OtlpJsonLinesLogExporter",
    "OtlpJsonLinesMetricExporter",
    "OtlpJsonLinesSpanExporter",
    "default_recording_path",
    "spans_document",
    "to_otlp_json",
]

_logger = logging.getLogger(names.INSTRUMENTATION_NAME)

# Byte fields that OTLP/JSON writes as hex: on spans, links, log records and
# metric exemplars alike.
_HEX_ID_FIELDS: Final = frozenset({"traceId", "spanId", "parentSpanId"})
# Attribute lists never hold id fields; skipping them keeps the walk short.
_NO_IDS_BELOW: Final = frozenset({"attributes", "resource", "scope"})


def _hex_ids(node: object) -> None:
    """Rewrite, in place, every trace/span id from base64 to lowercase hex."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _HEX_ID_FIELDS and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            elif key not in _NO_IDS_BELOW:
                _hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids(item)


def to_otlp_json(request: Message) -> dict[str, Any]:
    """An OTLP export request as the OTLP/JSON object the Collector writes."""
    document: dict[str, Any] = MessageToDict(request, use_integers_for_enums=True)
    _hex_ids(document)
    return document


def _json_line(document: dict[str, Any]) -> bytes:
    try:
        text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate in some attribute: escape everything instead of failing.
        return (json.dumps(document, separators=(",", ":")) + "\n").encode("ascii")


class _JsonLinesFile:
    """Encodes documents and appends them as lines of the recording; thread-safe, never raising.

    A file that cannot be written is logged once (logger ``context_integrity``) and reported
    as a failed export; the next successful write re-arms the warning.
    """

    def __init__(self, path: str | os.PathLike[str], max_bytes: int | None) -> None:
        self.file = RecordingFile(path, max_bytes=max_bytes)
        self.path = self.file.path
        self._warned = False
        self.closed = False

    def append(self, encode: Callable[[], dict[str, Any] | None]) -> bool:
        """Encode one document and append it as a line; ``False`` on failure."""
        try:
            document = encode()
            if document is None:
                return True  # nothing to record: OTLP says send no empty envelopes
            line = _json_line(document)
        except Exception as error:  # an encoder bug must not reach the host
            self._warn(f"could not encode telemetry for the recording at {self.path}: {error!r}")
            return False
        try:
            self.file.append(line)
        except OSError as error:
            self._warn(f"could not write the recording at {self.path}: {error}")
            return False
        self._warned = False
        return True

    def _warn(self, message: str) -> None:
        # Once per run of failures: a full disk must not flood the host's log.
        if not self._warned:
            self._warned = True
            _logger.warning("%s (further failures are not logged until a write succeeds)", message)


_WARN: Final = 13  # OTLP SeverityNumber SEVERITY_NUMBER_WARN


def _dropped_document(count: int, traces: Sequence[str], resource: Resource | None) -> dict[str, Any]:
    """A drop record: one OTLP/JSON log record, so the recording stays OTLP a collector can replay."""
    now = str(time.time_ns())
    record: dict[str, Any] = {
        "timeUnixNano": now,
        "observedTimeUnixNano": now,
        "severityNumber": _WARN,
        "severityText": "WARN",
        "body": {
            "stringValue": f"{names.RECORDING_DROPPED_EVENT}: {count} span(s) could not be kept in the recording"
        },
        "attributes": attributes(dropped_attributes(count, traces)),
    }
    return {
        "resourceLogs": [
            {
                "resource": resource_json(resource) if resource is not None else {},
                "scopeLogs": [{"scope": {"name": names.INSTRUMENTATION_NAME}, "logRecords": [record]}],
            }
        ]
    }


class OtlpJsonLinesSpanExporter(SpanExporter):
    """Appends each batch of spans to ``path`` as one ``{"resourceSpans": [...]}`` line.

    ``max_bytes`` is the size the file rotates at (default: ``$CONTEXT_INTEGRITY_RECORDING_MAX_BYTES``,
    else :data:`~context_integrity.limits.MAX_RECORDING_BYTES`).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, max_bytes: int | None = None) -> None:
        self._file = _JsonLinesFile(path if path is not None else default_recording_path(), max_bytes)

    @property
    def recording(self) -> RecordingFile:
        return self._file.file

    def record_dropped(self, count: int, traces: Sequence[str], resource: Resource | None = None) -> bool:
        """Write, into the recording itself, that ``count`` spans of these traces could not be kept."""
        if self._file.closed or count <= 0:
            return False
        return self._file.append(lambda: _dropped_document(count, traces, resource))

    @property
    def path(self) -> Path:
        return self._file.path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._file.closed:
            return SpanExportResult.FAILURE
        if not spans:
            return SpanExportResult.SUCCESS

        def encode() -> dict[str, Any] | None:
            return spans_document(spans) or None

        return SpanExportResult.SUCCESS if self._file.append(encode) else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self._file.closed = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # every export is written before it returns


class OtlpJsonLinesMetricExporter(MetricExporter):
    """Appends each metrics collection to ``path`` as one ``{"resourceMetrics": [...]}`` line.

    Cumulative temporality unless told otherwise (the SDK's default when
    ``preferred_temporality`` is ``None``); the recording reader keeps the
    latest point of each cumulative series and adds delta points up.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        preferred_temporality: dict[type, AggregationTemporality] | None = None,
        preferred_aggregation: dict[type, Aggregation] | None = None,
        *,
        max_bytes: int | None = None,
    ) -> None:
        super().__init__(
            preferred_temporality=preferred_temporality,
            preferred_aggregation=preferred_aggregation,
        )
        self._file = _JsonLinesFile(path if path is not None else default_recording_path(), max_bytes)

    @property
    def path(self) -> Path:
        return self._file.path

    def export(
        self,
        metrics_data: MetricsData,
        timeout_millis: float = 10_000,
        **kwargs: Any,
    ) -> MetricExportResult:
        if self._file.closed:
            return MetricExportResult.FAILURE

        def encode() -> dict[str, Any] | None:
            document = to_otlp_json(encode_metrics(metrics_data))
            has_points = any(
                scope.get("metrics")
                for rm in document.get("resourceMetrics", ())
                for scope in rm.get("scopeMetrics", ())
            )
            return document if has_points else None

        return MetricExportResult.SUCCESS if self._file.append(encode) else MetricExportResult.FAILURE

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self._file.closed = True


class OtlpJsonLinesLogExporter(LogRecordExporter):
    """Appends each batch of log records to ``path`` as one ``{"resourceLogs": [...]}`` line."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, max_bytes: int | None = None) -> None:
        self._file = _JsonLinesFile(path if path is not None else default_recording_path(), max_bytes)

    @property
    def path(self) -> Path:
        return self._file.path

    def export(self, batch: Sequence[Any]) -> LogRecordExportResult:
        if self._file.closed:
            return LogRecordExportResult.FAILURE
        if not batch:
            return LogRecordExportResult.SUCCESS

        def encode() -> dict[str, Any] | None:
            document = to_otlp_json(encode_logs(batch))
            has_records = any(
                scope.get("logRecords")
                for rl in document.get("resourceLogs", ())
                for scope in rl.get("scopeLogs", ())
            )
            return document if has_records else None

        return LogRecordExportResult.SUCCESS if self._file.append(encode) else LogRecordExportResult.FAILURE

    def shutdown(self) -> None:
        self._file.closed = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
