"""Tempo and Jaeger as their documented HTTP APIs answer, served from a local HTTP server.

No Tempo or Jaeger binary installs here, so these serve what their documentation gives:

- Tempo (``docs/sources/tempo/api_docs``): ``GET /api/traces/<id>`` answers ``{"batches":
  [ResourceSpans]}`` (protobuf JSON: ids in base64, ``SPAN_KIND_*`` and ``STATUS_CODE_*`` enum names;
  older versions name the scope list ``instrumentationLibrarySpans``); ``GET /api/search`` answers
  ``{"traces": [{"traceID", "rootServiceName", "rootTraceName", "startTimeUnixNano", "durationMs"}],
  "metrics": {...}}``.
- Jaeger (the query service's HTTP API, ``/api/traces``): ``{"data": [{"traceID", "spans":
  [{"traceID", "spanID", "operationName", "references", "startTime", "duration", "tags", "logs",
  "processID"}], "processes": {...}}], "total", "limit", "offset", "errors"}``, times in
  microseconds, tags ``{key, type, value}``.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from tests.test_find_context_errors import _jaeger_tag

Route = Callable[[str, dict[str, list[str]]], tuple[int, object]]


@dataclass
class FakeBackend:
    """A local HTTP server answering each path through ``route``; ``asked`` lists what was asked."""

    url: str
    asked: list[tuple[str, dict[str, list[str]]]] = field(default_factory=list)


@contextmanager
def serving(route: Route) -> Iterator[FakeBackend]:
    backend = FakeBackend("")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parsed = urlparse(self.path)
            query = parse_qs(parsed.query)
            backend.asked.append((parsed.path, query))
            status, body = route(parsed.path, query)
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    backend.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield backend
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _b64(hex_id: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_id)).decode()


_STATUS = ["STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"]


def tempo_trace(document: Mapping[str, Any], *, old_scope_name: bool = False) -> dict[str, Any]:
    """An OTLP/JSON document as Tempo's ``/api/traces/<id>`` answers it."""
    batches = json.loads(json.dumps(document["resourceSpans"]))
    for batch in batches:
        for scope in batch["scopeSpans"]:
            for span in scope["spans"]:
                span["traceId"] = _b64(span["traceId"])
                span["spanId"] = _b64(span["spanId"])
                if span.get("parentSpanId"):
                    span["parentSpanId"] = _b64(span["parentSpanId"])
                span["kind"] = "SPAN_KIND_INTERNAL"
                span["status"] = {"code": _STATUS[span.get("status", {}).get("code", 0)]}
        if old_scope_name:
            batch["instrumentationLibrarySpans"] = batch.pop("scopeSpans")
    return {"batches": batches}


def tempo_search(trace_ids: list[str], service: str) -> dict[str, Any]:
    return {
        "traces": [
            {
                "traceID": trace_id,
                "rootServiceName": service,
                "rootTraceName": "invoke_agent triage",
                "startTimeUnixNano": "1750000000000000000",
                "durationMs": 12,
            }
            for trace_id in trace_ids
        ],
        "metrics": {"inspectedTraces": len(trace_ids), "inspectedBytes": "1024", "totalBlocks": 1},
    }


def _plain(node: Mapping[str, Any]) -> object:
    """An OTLP/JSON AnyValue as the plain value Jaeger's tags carry."""
    if "stringValue" in node:
        return node["stringValue"]
    if "intValue" in node:
        return int(node["intValue"])
    if "boolValue" in node:
        return node["boolValue"]
    if "doubleValue" in node:
        return node["doubleValue"]
    if "arrayValue" in node:
        return [_plain(v) for v in node["arrayValue"].get("values", [])]
    return json.dumps(node)


def jaeger_trace(document: Mapping[str, Any], service: str = "agent") -> dict[str, Any]:
    """One OTLP/JSON trace as Jaeger's ``/api/traces/<id>`` answers it (its ``data`` entry)."""
    spans: list[dict[str, Any]] = []
    trace_id = ""
    for batch in document["resourceSpans"]:
        for scope in batch["scopeSpans"]:
            for span in scope["spans"]:
                trace_id = span["traceId"]
                start_us = int(span["startTimeUnixNano"]) // 1000
                spans.append(
                    {
                        "traceID": trace_id,
                        "spanID": span["spanId"],
                        "operationName": span["name"],
                        "references": (
                            [{"refType": "CHILD_OF", "traceID": trace_id, "spanID": span["parentSpanId"]}]
                            if span.get("parentSpanId")
                            else []
                        ),
                        "startTime": start_us,
                        "duration": int(span["endTimeUnixNano"]) // 1000 - start_us,
                        "tags": [
                            _jaeger_tag(a["key"], _plain(a["value"])) for a in span.get("attributes", [])
                        ]
                        + [{"key": "otel.scope.name", "type": "string", "value": scope["scope"]["name"]}],
                        "logs": [],
                        "processID": "p1",
                        "warnings": None,
                    }
                )
    return {
        "traceID": trace_id,
        "spans": spans,
        "processes": {"p1": {"serviceName": service, "tags": []}},
        "warnings": None,
    }


def jaeger_answer(traces: list[dict[str, Any]]) -> dict[str, Any]:
    return {"data": traces, "total": 0, "limit": 0, "offset": 0, "errors": None}
