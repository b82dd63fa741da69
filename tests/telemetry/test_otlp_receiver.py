"""All three signals over real OTLP/HTTP, decoded by a receiver that speaks the protocol.

The laws under test: with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set and ``log_events=True``, one
``setup()`` sends (a) the tool span with its finding event and the summary span to ``/v1/traces``,
(b) the findings counter to ``/v1/metrics``, and (c) each finding as a log record named
``context_integrity.finding`` to ``/v1/logs``, correlated with the span it is about; (d) the
headers from ``OTEL_EXPORTER_OTLP_HEADERS`` ride every request.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

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

from context_integrity.telemetry.schema import names

ROOT = Path(__file__).resolve().parents[2]
_CODECS: dict[str, tuple[type[Message], type[Message]]] = {
    "/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
    "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse),
    "/v1/logs": (ExportLogsServiceRequest, ExportLogsServiceResponse),
}


class _Receiver(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: dict[str, list[object]] = {path: [] for path in _CODECS}
        self.headers_seen: list[str] = []


class _Handler(BaseHTTPRequestHandler):
    server: _Receiver

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
def receiver() -> Iterator[_Receiver]:
    server = _Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _attributes(items: object) -> dict[str, object]:
    out: dict[str, object] = {}
    for item in items:  # type: ignore[attr-defined]
        value = item.value
        kind = value.WhichOneof("value")
        out[item.key] = getattr(value, kind) if kind else None
    return out


def test_traces_metrics_and_log_events_reach_a_real_otlp_http_receiver(receiver: _Receiver) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        {
            "PYTHONPATH": str(ROOT / "src"),
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.server_address[1]}",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-team=storage",
            "OTEL_SERVICE_NAME": "otlp-proof",
        }
    )
    code = """
        import context_integrity as ci
        ci.setup(check_column_types="warn", log_events=True)

        @ci.tool(result_columns={"logical_unit_number": "number"})
        def host_group_mappings():
            return [{"logical_unit_number": ""}, {"logical_unit_number": 3}]

        with ci.run("q", agent_name="otlp-agent"):
            host_group_mappings()
        assert ci.flush()
        ci.shutdown()
    """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr

    spans = [
        span
        for request in receiver.received["/v1/traces"]
        for resource_spans in request.resource_spans  # type: ignore[attr-defined]
        for scope_spans in resource_spans.scope_spans
        for span in scope_spans.spans
    ]
    by_name = {span.name: span for span in spans}
    tool_span = by_name[names.tool_span_name("host_group_mappings")]
    (finding,) = [e for e in tool_span.events if e.name == names.FINDING_EVENT]
    finding_attrs = _attributes(finding.attributes)
    assert finding_attrs[names.FINDING_KIND] == "column-type-mismatch"
    assert names.witness_attribute(1, "value") in finding_attrs
    summary = by_name[names.DISPOSITION_SPAN]
    assert summary.parent_span_id == by_name[names.run_span_name("otlp-agent")].span_id

    points = [
        (metric.name, _attributes(point.attributes), point.as_int)
        for request in receiver.received["/v1/metrics"]
        for resource_metrics in request.resource_metrics  # type: ignore[attr-defined]
        for scope_metrics in resource_metrics.scope_metrics
        for metric in scope_metrics.metrics
        for point in metric.sum.data_points
    ]
    assert (
        names.FINDINGS_METRIC,
        {
            names.METRIC_KIND: "column-type-mismatch",
            names.METRIC_SEAM: "write",
            names.METRIC_TOOL: "host_group_mappings",
            names.METRIC_ADVISORY: False,
        },
        1,
    ) in points

    records = [
        record
        for request in receiver.received["/v1/logs"]
        for resource_logs in request.resource_logs  # type: ignore[attr-defined]
        for scope_logs in resource_logs.scope_logs
        for record in scope_logs.log_records
    ]
    (record,) = records
    assert record.event_name == names.FINDING_LOG_EVENT_NAME
    assert record.trace_id == tool_span.trace_id
    assert record.span_id == tool_span.span_id
    assert _attributes(record.attributes)[names.FINDING_KIND] == "column-type-mismatch"
    assert "logical_unit_number" in record.body.string_value

    assert receiver.headers_seen and set(receiver.headers_seen) == {"storage"}


def _records(receiver: _Receiver) -> list[object]:
    return [
        record
        for request in receiver.received["/v1/logs"]
        for resource_logs in request.resource_logs  # type: ignore[attr-defined]
        for scope_logs in resource_logs.scope_logs
        for record in scope_logs.log_records
    ]


def _spans(receiver: _Receiver) -> list[object]:
    return [
        span
        for request in receiver.received["/v1/traces"]
        for resource_spans in request.resource_spans  # type: ignore[attr-defined]
        for scope_spans in resource_spans.scope_spans
        for span in scope_spans.spans
    ]


def test_evaluation_events_reach_the_receiver_inside_the_evaluated_spans(receiver: _Receiver) -> None:
    """(e) ``evaluation_events=True``: one ``gen_ai.evaluation.result`` per finding, in its span's
    trace and span, with the kind namespaced, label ``fail``, the message as explanation, the chat
    span's response id, and the evaluator's provenance; no ``context_integrity.finding`` records."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        {
            "PYTHONPATH": str(ROOT / "src"),
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.server_address[1]}",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        }
    )
    code = """
        import context_integrity as ci
        from context_integrity.loop import Message, ModelResponse, RequestFrame, ToolCall, ToolDefinition
        ci.setup(check_column_types="warn", evaluation_events=True)
        ci.declare_tool("search")
        ci.declare_tool("lookup", arguments_from=["search"])

        @ci.tool(result_columns={"logical_unit_number": "number"})
        def host_group_mappings():
            return [{"logical_unit_number": ""}]

        with ci.run("q", agent_name="eval-agent") as run:
            frame = RequestFrame.of(
                [Message("user", "find order 12")], tools=[ToolDefinition("search"), ToolDefinition("lookup")]
            )
            with run.request(frame, model="scripted") as call:
                call.respond(
                    ModelResponse(
                        calls=(ToolCall("lookup", "c1", {"order_id": "ORD-99871"}),), response_id="chatcmpl-42"
                    )
                )
            host_group_mappings()
        assert ci.flush()
        ci.shutdown()
    """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr

    from context_integrity.judge.registry import REGISTRY
    from context_integrity.telemetry.setup import VERSION

    by_name = {span.name: span for span in _spans(receiver)}  # type: ignore[attr-defined]
    chat = by_name[names.chat_span_name("scripted")]
    tool_span = by_name[names.tool_span_name("host_group_mappings")]
    records = {
        _attributes(r.attributes)[names.GEN_AI_EVALUATION_NAME]: r  # type: ignore[attr-defined]
        for r in _records(receiver)
    }
    assert {r.event_name for r in records.values()} == {names.GEN_AI_EVALUATION_RESULT_EVENT}  # type: ignore[attr-defined]
    assert set(records) == {
        names.evaluation_name("unsupported-argument"),
        names.evaluation_name("column-type-mismatch"),
    }
    for kind, span in (("unsupported-argument", chat), ("column-type-mismatch", tool_span)):
        record = records[names.evaluation_name(kind)]
        assert (record.trace_id, record.span_id) == (span.trace_id, span.span_id)  # type: ignore[attr-defined]
        attributes = _attributes(record.attributes)  # type: ignore[attr-defined]
        (finding_event,) = [e for e in span.events if e.name == names.FINDING_EVENT]  # type: ignore[attr-defined]
        finding = _attributes(finding_event.attributes)
        assert attributes[names.GEN_AI_EVALUATION_SCORE_LABEL] == names.EVALUATION_LABEL_FAIL
        assert attributes[names.GEN_AI_EVALUATION_SCORE_VALUE] == names.EVALUATION_SCORE_FAIL
        assert attributes[names.GEN_AI_EVALUATION_EXPLANATION] == finding[names.FINDING_MESSAGE]
        for attributes_of in (attributes, finding):
            assert attributes_of[names.EVALUATOR_VERSION] == VERSION
            assert attributes_of[names.EVALUATOR_RULE_VERSION] == REGISTRY.rule_version(kind)
    assert (
        _attributes(records[names.evaluation_name("unsupported-argument")].attributes)[  # type: ignore[attr-defined]
            names.GEN_AI_RESPONSE_ID
        ]
        == "chatcmpl-42"
    )
    assert names.GEN_AI_RESPONSE_ID not in _attributes(
        records[names.evaluation_name("column-type-mismatch")].attributes  # type: ignore[attr-defined]
    )
