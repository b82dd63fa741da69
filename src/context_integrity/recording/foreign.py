"""Traces from other backends' query APIs, as the OTLP/JSON the recording reader reads.

Three shapes arrive here besides our own recording (which is already OTLP/JSON lines, as is the
OpenTelemetry Collector's ``file`` exporter):

- **Tempo** ``GET /api/traces/{id}``: ``{"batches": [ResourceSpans, ...]}`` (older Tempo writes
  ``instrumentationLibrarySpans`` for ``scopeSpans``); ``GET /api/v2/traces/{id}``:
  ``{"trace": {"resourceSpans": [...]}}``. Ids may be base64, kinds and status codes enum names.
- **Jaeger** ``GET /api/traces/{id}``: ``{"data": [{"traceID", "spans": [...], "processes"}]}``,
  each span with ``operationName``, ``references``, ``startTime``/``duration`` in microseconds,
  ``tags`` ``[{key, type, value}]`` and ``logs`` ``[{timestamp, fields}]``; a span event is a log
  whose ``event`` field names it (the OpenTelemetry-to-Jaeger translation). Jaeger flattens an
  array attribute to its JSON text; a tag that reads back as a JSON array of scalars is one again.

Each is turned into one OTLP/JSON document, so one reader decodes every source alike and nothing
is re-judged: the findings and ledgers read back are the ones that were recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final, Literal

SourceFormat = Literal["otlp-json", "tempo", "jaeger"]

# OTLP's status codes by name, for exports that write the enum name.
_STATUS_CODES: Final = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_JAEGER_STATUS: Final = {"OK": 1, "ERROR": 2}
_JAEGER_EVENT_FIELD: Final = "event"
_JAEGER_STATUS_TAG: Final = "otel.status_code"
_JAEGER_STATUS_MESSAGE_TAG: Final = "otel.status_description"


def detect(text: str) -> SourceFormat:
    """Which shape a document is: one JSON document from Tempo or Jaeger, else OTLP/JSON lines."""
    stripped = text.lstrip()
    if not stripped.startswith("{"):
        return "otlp-json"
    try:
        document = json.loads(stripped)
    except json.JSONDecodeError:
        return "otlp-json"  # several lines: a recording or a collector file export
    if isinstance(document, dict):
        if "batches" in document or (
            isinstance(document.get("trace"), dict) and "resourceSpans" in document["trace"]
        ):
            return "tempo"
        data = document.get("data")
        if isinstance(data, list) and all(isinstance(t, dict) and "spans" in t for t in data):
            return "jaeger"
    return "otlp-json"


def as_otlp_lines(text: str) -> tuple[SourceFormat, list[str]]:
    """The document as OTLP/JSON lines for :func:`~context_integrity.recording.read_recording_text`."""
    found = detect(text)
    if found == "otlp-json":
        return found, text.splitlines(keepends=True)
    document = json.loads(text)
    converted = tempo_to_otlp(document) if found == "tempo" else jaeger_to_otlp(document)
    return found, [json.dumps(converted) + "\n"]


# ── Tempo ───────────────────────────────────────────────────────────────


def tempo_to_otlp(document: dict[str, Any]) -> dict[str, Any]:
    batches = document["trace"]["resourceSpans"] if "trace" in document else document.get("batches", [])
    out = []
    for batch in batches if isinstance(batches, list) else []:
        if not isinstance(batch, dict):
            continue
        scopes = batch.get("scopeSpans", batch.get("instrumentationLibrarySpans")) or []
        out.append(
            {
                "resource": batch.get("resource", {}),
                "scopeSpans": [
                    {
                        **scope,
                        "spans": [_tempo_span(s) for s in scope.get("spans", []) if isinstance(s, dict)],
                    }
                    for scope in scopes
                    if isinstance(scope, dict)
                ],
            }
        )
    return {"resourceSpans": out}


def _tempo_span(span: dict[str, Any]) -> dict[str, Any]:
    fixed = dict(span)
    status = fixed.get("status")
    if isinstance(status, dict) and isinstance(status.get("code"), str) and status["code"] in _STATUS_CODES:
        fixed["status"] = {**status, "code": _STATUS_CODES[status["code"]]}
    fixed.pop("kind", None)  # an enum name in some exports; the reader does not need it
    return fixed


# ── Jaeger ──────────────────────────────────────────────────────────────


def jaeger_to_otlp(document: dict[str, Any]) -> dict[str, Any]:
    resource_spans: list[dict[str, Any]] = []
    for trace in document.get("data", []):
        if not isinstance(trace, dict):
            continue
        processes = trace.get("processes", {}) if isinstance(trace.get("processes"), dict) else {}
        by_process: dict[str, list[dict[str, Any]]] = {}
        for span in trace.get("spans", []):
            if isinstance(span, dict):
                by_process.setdefault(str(span.get("processID", "")), []).append(_jaeger_span(span))
        for process_id, spans in by_process.items():
            process = processes.get(process_id, {}) if isinstance(processes.get(process_id), dict) else {}
            resource = _attributes(process.get("tags", []))
            if "serviceName" in process:
                resource.insert(0, _attribute("service.name", process["serviceName"]))
            resource_spans.append({"resource": {"attributes": resource}, "scopeSpans": [{"spans": spans}]})
    return {"resourceSpans": resource_spans}


def _jaeger_id(value: object, size: int) -> str:
    text = str(value or "")
    return text.rjust(size, "0") if text else text


def _jaeger_span(span: dict[str, Any]) -> dict[str, Any]:
    start_us = int(span.get("startTime", 0) or 0)
    duration_us = int(span.get("duration", 0) or 0)
    parent = next(
        (
            ref
            for ref in span.get("references", []) or []
            if isinstance(ref, dict) and ref.get("refType") == "CHILD_OF"
        ),
        None,
    )
    tags = [t for t in span.get("tags", []) or [] if isinstance(t, dict)]
    status_tag = next((t.get("value") for t in tags if t.get("key") == _JAEGER_STATUS_TAG), None)
    status_message = next((t.get("value") for t in tags if t.get("key") == _JAEGER_STATUS_MESSAGE_TAG), "")
    error = any(t.get("key") == "error" and t.get("value") in (True, "true") for t in tags)
    code = _JAEGER_STATUS.get(str(status_tag), 2 if error else 0)
    out: dict[str, Any] = {
        "traceId": _jaeger_id(span.get("traceID"), 32),
        "spanId": _jaeger_id(span.get("spanID"), 16),
        "name": span.get("operationName"),
        "startTimeUnixNano": str(start_us * 1000),
        "endTimeUnixNano": str((start_us + duration_us) * 1000),
        "attributes": _attributes(tags),
        "events": [_jaeger_event(log) for log in span.get("logs", []) or [] if isinstance(log, dict)],
        "status": {"code": code, "message": str(status_message or "")},
    }
    if parent is not None:
        out["parentSpanId"] = _jaeger_id(parent.get("spanID"), 16)
    return out


def _jaeger_event(log: dict[str, Any]) -> dict[str, Any]:
    fields = [f for f in log.get("fields", []) or [] if isinstance(f, dict)]
    name = next((f.get("value") for f in fields if f.get("key") == _JAEGER_EVENT_FIELD), None)
    return {
        "name": str(name) if name is not None else "",
        "timeUnixNano": str(int(log.get("timestamp", 0) or 0) * 1000),
        "attributes": _attributes(f for f in fields if f.get("key") != _JAEGER_EVENT_FIELD),
    }


def _attributes(tags: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [_attribute(str(tag.get("key")), tag.get("value"), tag.get("type")) for tag in tags]


def _attribute(key: str, value: object, kind: object = None) -> dict[str, Any]:
    return {"key": key, "value": _any_value(value, kind)}


def _any_value(value: object, kind: object = None) -> dict[str, Any]:
    if kind == "bool" or isinstance(value, bool):
        return {"boolValue": value in (True, "true")}
    if kind == "int64" or (isinstance(value, int) and kind is None):
        return {"intValue": str(value)}
    if kind == "float64" or isinstance(value, float):
        return {"doubleValue": float(value)}  # type: ignore[arg-type]
    text = str(value)
    if text.startswith("[") and text.endswith("]"):
        try:
            items = json.loads(text)
        except json.JSONDecodeError:
            items = None
        if isinstance(items, list) and all(isinstance(i, (str, int, float, bool)) for i in items):
            return {"arrayValue": {"values": [_any_value(i) for i in items]}}
    return {"stringValue": text}
