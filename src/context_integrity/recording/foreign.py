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
is re-judged: the findings and ledgers read back are the ones that were recorded. A piece of the
wrong type (a tag that is not an object, a time that is not a number) is left out and said in
``problems``; nothing here raises on what a document holds.

:func:`read_trace` opens a path as any of the three and hands back a stream of its runs: OTLP/JSON
lines are streamed as they are read; a Tempo or Jaeger document, one JSON document, is read whole
(up to :data:`~context_integrity.limits.MAX_RECORDING_LINE_BYTES`) and converted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any, Final, Literal

from ..limits import MAX_RECORDING_LINE_BYTES
from ..text import clip
from .lines import OverlongLine, open_recording, recording_lines
from .otlp_json import RESOURCE_KEYS, json_type
from .reader import RecordingStream

SourceFormat = Literal["otlp-json", "tempo", "jaeger"]

# OTLP's status codes by name, for exports that write the enum name.
_STATUS_CODES: Final = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_JAEGER_STATUS: Final = {"OK": 1, "ERROR": 2}
_JAEGER_EVENT_FIELD: Final = "event"
_JAEGER_STATUS_TAG: Final = "otel.status_code"
_JAEGER_STATUS_MESSAGE_TAG: Final = "otel.status_description"
# Problems one conversion names before it only counts them.
_MAX_NAMED_PROBLEMS: Final = 20
# How an OTLP/JSON line begins as every writer we know writes it: streamed without a look.
_OTLP_RECORD_START: Final = b'{"resource'


def _loads(text: str) -> object:
    """The JSON document ``text`` is, or ``None`` when it is not one (nested too deeply, a number
    of more than 4300 digits, not JSON at all)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _shape(document: object) -> SourceFormat:
    if isinstance(document, dict):
        trace = document.get("trace")
        if "batches" in document or (isinstance(trace, dict) and "resourceSpans" in trace):
            return "tempo"
        data = document.get("data")
        if isinstance(data, list) and all(isinstance(t, dict) and "spans" in t for t in data):
            return "jaeger"
    return "otlp-json"


def detect(text: str) -> SourceFormat:
    """Which shape a document is: one JSON document from Tempo or Jaeger, else OTLP/JSON lines."""
    stripped = text.lstrip()
    if not stripped.startswith("{"):
        return "otlp-json"
    return _shape(_loads(stripped))  # several lines (a recording, a collector file export) parse as None


def _split_lines(text: str) -> list[str]:
    """``text`` cut at ``\\n`` only, each line keeping its newline (U+2028 and its kin are text)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def as_otlp_lines(text: str, problems: list[str] | None = None) -> tuple[SourceFormat, list[str]]:
    """The document as OTLP/JSON lines for :func:`~context_integrity.recording.read_recording_text`.

    What a Tempo or Jaeger document holds in the wrong shape is said in ``problems``.
    """
    found = detect(text)
    if found == "otlp-json":
        return found, _split_lines(text)
    return found, [converted_line(found, _loads(text), problems)]


def converted_line(found: SourceFormat, document: object, problems: list[str] | None = None) -> str:
    """A Tempo or Jaeger document as one OTLP/JSON line."""
    said = _Problems(problems)
    if not isinstance(document, dict):
        said(f"the {found} document is {json_type(document)}, not an object")
        document = {}
    converted = tempo_to_otlp(document, problems) if found == "tempo" else jaeger_to_otlp(document, problems)
    return json.dumps(converted) + "\n"


class _Problems:
    """Where a conversion says what it left out: named up to a bound, then counted."""

    __slots__ = ("_out", "unnamed")

    def __init__(self, out: list[str] | None) -> None:
        self._out = out
        self.unnamed = 0

    def __call__(self, text: str) -> None:
        if self._out is None:
            return
        if len(self._out) < _MAX_NAMED_PROBLEMS:
            self._out.append(text)
        else:
            self.unnamed += 1


def _list(value: object, what: str, said: _Problems) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        said(f"{what} is {json_type(value)}, not a list; it was left out")
        return []
    return value


def _dict(value: object, what: str, said: _Problems) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        said(f"{what} is {json_type(value)}, not an object; it was left out")
        return {}
    return value


# ── Tempo ───────────────────────────────────────────────────────────────


def tempo_to_otlp(document: dict[str, Any], problems: list[str] | None = None) -> dict[str, Any]:
    said = _Problems(problems)
    trace = document.get("trace")
    if isinstance(trace, dict):
        batches = _list(trace.get("resourceSpans"), "trace.resourceSpans", said)
    else:
        batches = _list(document.get("batches"), "batches", said)
    out = []
    for batch in batches:
        if not isinstance(batch, dict):
            said(f"a Tempo batch is {json_type(batch)}, not an object; it was left out")
            continue
        scopes = batch.get("scopeSpans", batch.get("instrumentationLibrarySpans"))
        out.append(
            {
                "resource": batch.get("resource", {}),
                "scopeSpans": [
                    {
                        **scope,
                        "spans": [
                            _tempo_span(s)
                            for s in _list(scope.get("spans"), "a scope's spans", said)
                            if isinstance(s, dict)
                        ],
                    }
                    for scope in _list(scopes, "scopeSpans", said)
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


def jaeger_to_otlp(document: dict[str, Any], problems: list[str] | None = None) -> dict[str, Any]:
    said = _Problems(problems)
    resource_spans: list[dict[str, Any]] = []
    for trace in _list(document.get("data"), "data", said):
        if not isinstance(trace, dict):
            said(f"a Jaeger trace is {json_type(trace)}, not an object; it was left out")
            continue
        processes = _dict(trace.get("processes"), "processes", said)
        by_process: dict[str, list[dict[str, Any]]] = {}
        for span in _list(trace.get("spans"), "spans", said):
            if isinstance(span, dict):
                by_process.setdefault(_text(span.get("processID", "")), []).append(_jaeger_span(span, said))
            else:
                said(f"a Jaeger span is {json_type(span)}, not an object; it was left out")
        for process_id, spans in by_process.items():
            process = _dict(processes.get(process_id), f"process {clip(process_id, 40)!r}", said)
            resource = _attributes(_list(process.get("tags"), "a process's tags", said), said)
            if "serviceName" in process:
                resource.insert(0, _attribute("service.name", process["serviceName"]))
            resource_spans.append({"resource": {"attributes": resource}, "scopeSpans": [{"spans": spans}]})
    return {"resourceSpans": resource_spans}


def _text(value: object) -> str:
    """A scalar as text; anything else as its JSON type (an id, a key must be text to be read)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return "" if value is None else str(value)
    return json_type(value)


def _jaeger_id(value: object, size: int) -> str:
    text = _text(value) if value else ""
    return text.rjust(size, "0") if text else text


# A time in microseconds longer than this is past any time a trace can have: the reader clamps it
# without this ever parsing it (Python will not parse more than 4300 digits).
_MAX_MICROS_DIGITS: Final = 30


def _nanos(micros: object, what: str, said: _Problems) -> str | None:
    """Jaeger's microseconds as OTLP's nanoseconds (a decimal string), or ``None`` when it is not a
    time; the reader clamps one out of range."""
    if micros is None or micros == 0:
        return "0"
    if isinstance(micros, int) and not isinstance(micros, bool):
        return str(micros * 1000)
    if isinstance(micros, float) and micros.is_integer():
        return str(int(micros) * 1000)
    if isinstance(micros, str) and micros.isdecimal():
        return micros + "000" if len(micros) > _MAX_MICROS_DIGITS else str(int(micros) * 1000)
    said(f"a Jaeger {what} {clip(_text(micros), 40)!r} is not a time in microseconds; it was read as no time")
    return None


def _jaeger_span(span: dict[str, Any], said: _Problems) -> dict[str, Any]:
    start = _nanos(span.get("startTime", 0), "startTime", said)
    duration = _nanos(span.get("duration", 0), "duration", said)
    end: str | None = None
    if start is not None and duration is not None:
        # A time past any a trace can have is not added to (nor parsed): the reader clamps it.
        longest = max(start, duration, key=len)
        end = longest if len(longest) > _MAX_MICROS_DIGITS else str(int(start) + int(duration))
    references = _list(span.get("references"), "a span's references", said)
    parent = next(
        (ref for ref in references if isinstance(ref, dict) and ref.get("refType") == "CHILD_OF"),
        None,
    )
    tags = [t for t in _list(span.get("tags"), "a span's tags", said) if isinstance(t, dict)]
    status_tag = next((t.get("value") for t in tags if t.get("key") == _JAEGER_STATUS_TAG), None)
    status_message = next((t.get("value") for t in tags if t.get("key") == _JAEGER_STATUS_MESSAGE_TAG), "")
    error = any(t.get("key") == "error" and t.get("value") in (True, "true") for t in tags)
    code = _JAEGER_STATUS.get(_text(status_tag), 2 if error else 0)
    out: dict[str, Any] = {
        "traceId": _jaeger_id(span.get("traceID"), 32),
        "spanId": _jaeger_id(span.get("spanID"), 16),
        "name": span.get("operationName"),
        "attributes": _attributes(tags, said),
        "events": [
            _jaeger_event(log, said)
            for log in _list(span.get("logs"), "a span's logs", said)
            if isinstance(log, dict)
        ],
        "status": {"code": code, "message": _text(status_message or "")},
    }
    if start is not None:
        out["startTimeUnixNano"] = start
    if end is not None:
        out["endTimeUnixNano"] = end
    if parent is not None:
        out["parentSpanId"] = _jaeger_id(parent.get("spanID"), 16)
    return out


def _jaeger_event(log: dict[str, Any], said: _Problems) -> dict[str, Any]:
    fields = [f for f in _list(log.get("fields"), "a log's fields", said) if isinstance(f, dict)]
    name = next((f.get("value") for f in fields if f.get("key") == _JAEGER_EVENT_FIELD), None)
    out: dict[str, Any] = {
        "name": _text(name),
        "attributes": _attributes((f for f in fields if f.get("key") != _JAEGER_EVENT_FIELD), said),
    }
    time = _nanos(log.get("timestamp", 0), "log timestamp", said)
    if time is not None:
        out["timeUnixNano"] = time
    return out


def _attributes(tags: Iterable[object], said: _Problems) -> list[dict[str, Any]]:
    out = []
    for tag in tags:
        if isinstance(tag, dict):
            out.append(_attribute(_text(tag.get("key")), tag.get("value"), tag.get("type")))
        else:
            said(f"a Jaeger tag is {json_type(tag)}, not a {{key, type, value}} object; it was left out")
    return out


def _attribute(key: str, value: object, kind: object = None) -> dict[str, Any]:
    return {"key": key, "value": _any_value(value, kind)}


def _any_value(value: object, kind: object = None) -> dict[str, Any]:
    if kind == "bool" or isinstance(value, bool):
        return {"boolValue": value in (True, "true")}
    if isinstance(value, int) and kind in (None, "int64"):
        return {"intValue": str(value)}
    if kind == "int64" and isinstance(value, str) and value.lstrip("-").isdecimal():
        return {"intValue": value}
    if isinstance(value, float) or (kind == "float64" and isinstance(value, int)):
        return {"doubleValue": float(value)}
    text = _text(value)
    if text.startswith("[") and text.endswith("]"):
        items = _loads(text)
        if isinstance(items, list) and all(isinstance(i, (str, int, float, bool)) for i in items):
            return {"arrayValue": {"values": [_any_value(i) for i in items]}}
    return {"stringValue": text}


# ── Any of the three, from a path ───────────────────────────────────────


def read_trace(
    path: str | os.PathLike[str], *, details: bool = True, hold: bool = False
) -> tuple[SourceFormat, RecordingStream]:
    """The trace at ``path`` as a stream of its runs, and which shape it was.

    OTLP/JSON lines (our recording, a collector file export) are streamed as they are read, so
    memory follows the runs in flight. A Tempo or Jaeger document is one JSON document: read whole
    up to :data:`~context_integrity.limits.MAX_RECORDING_LINE_BYTES` and converted. A path that is
    not a readable regular file raises an :class:`OSError` whose message says what it is instead.
    """
    with open_recording(path) as handle:
        first = next(recording_lines(handle), b"")
        if isinstance(first, OverlongLine):
            return "otlp-json", RecordingStream(path, details=details, hold=hold)
        head = first.lstrip()
        if not head.startswith(b"{") or head.startswith(_OTLP_RECORD_START):
            return "otlp-json", RecordingStream(path, details=details, hold=hold)
        document = _loads(first.decode("utf-8", "replace"))
        if document is None:  # not a whole document on its first line: perhaps one printed over many
            handle.seek(0)
            whole = handle.read(MAX_RECORDING_LINE_BYTES + 1)
            if len(whole) <= MAX_RECORDING_LINE_BYTES:
                document = _loads(whole.decode("utf-8", "replace"))
    found = _shape(document)
    if found == "otlp-json" or (isinstance(document, dict) and any(key in document for key in RESOURCE_KEYS)):
        return "otlp-json", RecordingStream(path, details=details, hold=hold)
    problems: list[str] = []
    stream = RecordingStream([converted_line(found, document, problems)], details=details, hold=hold)
    stream.rest.source = str(path)
    stream.rest.problems.extend(f"the {found} document: {text}" for text in problems)
    return found, stream
