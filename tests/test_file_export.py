"""The OTLP/JSON-lines exporters that write the local recording.

The laws under test:

- One export, one line: each non-empty ``export()`` appends exactly one JSON
  object with one OTLP key (``resourceSpans`` / ``resourceMetrics`` /
  ``resourceLogs``); an empty batch appends nothing.
- The line is OTLP/JSON, not plain protobuf JSON: trace and span ids (on
  spans, parents, links, log records and exemplars) are lowercase hex of 32/16
  digits equal to the SDK's own ids, enums are integers, keys are lowerCamelCase,
  attributes are ``{key, value: {stringValue|intValue|boolValue|doubleValue|arrayValue}}``;
  turning the ids back into base64 gives exactly the SDK's protobuf request.
- Never break the host: an unwritable path, a deleted file or an encoder that
  chokes never raises; a failed write returns FAILURE and warns once (logger
  ``context_integrity``) naming the path, until a write succeeds again.
- The parent directory is created; a deleted recording is started again;
  concurrent exports never interleave lines; after shutdown nothing is written.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import ParseDict
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    InMemoryMetricReader,
    MetricExportResult,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from tests.recording_shapes import LOOKUP_FINDING, add_finding, hex_span_id, hex_trace_id, run_span, tool_span

from context_integrity.paths import RECORDING_ENV_VAR
from context_integrity.recording.otlp_json import (
    RESOURCE_LOGS,
    RESOURCE_METRICS,
    RESOURCE_SPANS,
    SPAN_ID_HEX_CHARS,
    TRACE_ID_HEX_CHARS,
)
from context_integrity.telemetry.export.file_export import (
    OtlpJsonLinesLogExporter,
    OtlpJsonLinesMetricExporter,
    OtlpJsonLinesSpanExporter,
)
from context_integrity.telemetry.schema import names

VALUE_KEYS = {
    "stringValue",
    "intValue",
    "boolValue",
    "doubleValue",
    "arrayValue",
    "kvlistValue",
    "bytesValue",
}
HEX_DIGITS = set("0123456789abcdef")


# ── A structural OTLP/JSON validator ────────────────────────────────────
def assert_hex_id(value: object, size: int) -> None:
    assert isinstance(value, str) and len(value) == size and set(value) <= HEX_DIGITS, value


def assert_any_value(value: object) -> None:
    assert isinstance(value, dict) and len(value) == 1 and set(value) <= VALUE_KEYS, value
    if "arrayValue" in value:
        for item in value["arrayValue"].get("values", []):
            assert_any_value(item)


def assert_attributes(attributes: object) -> None:
    assert isinstance(attributes, list)
    for attribute in attributes:
        assert set(attribute) == {"key", "value"}, attribute
        assert isinstance(attribute["key"], str)
        assert_any_value(attribute["value"])


def assert_camel_case_keys(node: object) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            assert "_" not in key, key
            if key != "attributes":  # attribute keys are data, not field names
                assert_camel_case_keys(value)
    elif isinstance(node, list):
        for item in node:
            assert_camel_case_keys(item)


def assert_span_line(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Validate one span line; return its spans."""
    assert list(document) == [RESOURCE_SPANS]
    assert_camel_case_keys(document)
    spans: list[dict[str, Any]] = []
    for resource_spans in document[RESOURCE_SPANS]:
        assert_attributes(resource_spans["resource"]["attributes"])
        for scope_spans in resource_spans["scopeSpans"]:
            assert isinstance(scope_spans["scope"]["name"], str)
            for span in scope_spans["spans"]:
                assert_hex_id(span["traceId"], TRACE_ID_HEX_CHARS)
                assert_hex_id(span["spanId"], SPAN_ID_HEX_CHARS)
                if "parentSpanId" in span:
                    assert_hex_id(span["parentSpanId"], SPAN_ID_HEX_CHARS)
                assert isinstance(span["kind"], int)
                assert isinstance(span["name"], str)
                assert int(span["startTimeUnixNano"]) <= int(span["endTimeUnixNano"])
                assert_attributes(span.get("attributes", []))
                for event in span.get("events", []):
                    assert isinstance(event["name"], str) and int(event["timeUnixNano"]) > 0
                    assert_attributes(event.get("attributes", []))
                for link in span.get("links", []):
                    assert_hex_id(link["traceId"], TRACE_ID_HEX_CHARS)
                    assert_hex_id(link["spanId"], SPAN_ID_HEX_CHARS)
                assert isinstance(span["status"].get("code", 0), int)
                spans.append(span)
    return spans


def lines_of(path: Path) -> list[dict[str, Any]]:
    text = path.read_text()
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


# ── Spans ───────────────────────────────────────────────────────────────
def finished_spans() -> tuple[list[ReadableSpan], dict[str, str]]:
    """A run span with a tool span (a finding, a link, an error status) under it."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer(names.INSTRUMENTATION_NAME)
    with run_span(tracer, "agent") as run:
        with tracer.start_as_current_span("linked", kind=SpanKind.CLIENT) as linked:
            pass
        with tool_span(tracer, "lookup", "c1", [LOOKUP_FINDING.kind]) as tool:
            tool.add_link(linked.get_span_context())
            add_finding(tool, LOOKUP_FINDING, tool="lookup", call_id="c1")
            tool.set_attribute("ratio", 0.5)
            tool.set_status(StatusCode.ERROR, "boom")
    provider.shutdown()
    ids = {
        "trace": hex_trace_id(run),
        "run": hex_span_id(run),
        "tool": hex_span_id(tool),
        "linked": hex_span_id(linked),
    }
    return list(memory.get_finished_spans()), ids


def test_one_export_appends_one_otlp_json_line_with_the_sdk_ids_in_hex(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    spans, ids = finished_spans()
    assert OtlpJsonLinesSpanExporter(path).export(spans) is SpanExportResult.SUCCESS
    [document] = lines_of(path)
    exported = {span["name"]: span for span in assert_span_line(document)}
    run, tool = exported[names.run_span_name("agent")], exported[names.tool_span_name("lookup")]
    assert run["traceId"] == tool["traceId"] == ids["trace"]
    assert run["spanId"] == ids["run"] and "parentSpanId" not in run
    assert tool["spanId"] == ids["tool"] and tool["parentSpanId"] == ids["run"]
    assert tool["links"][0] == {"traceId": ids["trace"], "spanId": ids["linked"], "flags": 256}
    assert exported["linked"]["kind"] == 3  # SPAN_KIND_CLIENT, as an integer
    assert tool["status"] == {"code": 2, "message": "boom"}  # STATUS_CODE_ERROR
    finding = tool["events"][0]
    assert finding["name"] == names.FINDING_EVENT
    values = {a["key"]: a["value"] for a in finding["attributes"]}
    assert values[names.FINDING_KIND] == {"stringValue": LOOKUP_FINDING.kind}
    assert values[names.FINDING_ADVISORY] == {"boolValue": False}
    assert values[names.FINDING_WITNESS_COUNT] == {"intValue": str(len(LOOKUP_FINDING.witnesses))}
    assert values[names.FINDING_SUBJECTS] == {
        "arrayValue": {"values": [{"stringValue": s.render()} for s in LOOKUP_FINDING.subjects]}
    }
    assert {a["key"]: a["value"] for a in tool["attributes"]}["ratio"] == {"doubleValue": 0.5}


def test_the_line_is_the_sdk_protobuf_request_with_hex_ids(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    spans, _ = finished_spans()
    OtlpJsonLinesSpanExporter(path).export(spans)
    [document] = lines_of(path)

    def to_base64(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("traceId", "spanId", "parentSpanId"):
                    node[key] = base64.b64encode(bytes.fromhex(value)).decode()
                else:
                    to_base64(value)
        elif isinstance(node, list):
            for item in node:
                to_base64(item)

    to_base64(document)
    assert ParseDict(document, ExportTraceServiceRequest()) == encode_spans(spans)


def test_each_export_is_its_own_line_and_an_empty_batch_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    exporter = OtlpJsonLinesSpanExporter(path)
    spans, _ = finished_spans()
    assert exporter.export([]) is SpanExportResult.SUCCESS
    assert not path.exists()
    for span in spans:
        exporter.export([span])
    documents = lines_of(path)
    assert len(documents) == len(spans)
    assert [assert_span_line(d)[0]["name"] for d in documents] == [s.name for s in spans]


def test_the_parent_directory_is_created_and_the_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "rec.jsonl"
    spans, _ = finished_spans()
    assert OtlpJsonLinesSpanExporter(path).export(spans) is SpanExportResult.SUCCESS
    assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0


def test_a_recording_deleted_between_exports_is_started_again(tmp_path: Path) -> None:
    path = tmp_path / "d" / "rec.jsonl"
    exporter = OtlpJsonLinesSpanExporter(path)
    spans, _ = finished_spans()
    exporter.export(spans[:1])
    path.unlink()
    path.parent.rmdir()
    assert exporter.export(spans[1:2]) is SpanExportResult.SUCCESS
    assert [assert_span_line(d)[0]["name"] for d in lines_of(path)] == [spans[1].name]


def test_concurrent_exports_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    exporter = OtlpJsonLinesSpanExporter(path)
    spans, _ = finished_spans()
    threads, per_thread = 8, 25

    def hammer() -> None:
        for _ in range(per_thread):
            exporter.export(spans)

    workers = [threading.Thread(target=hammer) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    documents = lines_of(path)
    assert len(documents) == threads * per_thread
    assert all(len(assert_span_line(d)) == len(spans) for d in documents)


def test_after_shutdown_exports_fail_and_write_nothing(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    exporter = OtlpJsonLinesSpanExporter(path)
    assert exporter.force_flush() is True
    exporter.shutdown()
    spans, _ = finished_spans()
    assert exporter.export(spans) is SpanExportResult.FAILURE
    assert not path.exists()


def test_without_a_path_the_default_recording_path_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RECORDING_ENV_VAR, str(tmp_path / "env.jsonl"))
    assert OtlpJsonLinesSpanExporter().path == tmp_path / "env.jsonl"
    assert OtlpJsonLinesMetricExporter().path == tmp_path / "env.jsonl"
    assert OtlpJsonLinesLogExporter().path == tmp_path / "env.jsonl"


# ── Never break the host ────────────────────────────────────────────────
def unwritable(tmp_path: Path) -> Path:
    """A path whose parent is a regular file: no one can write there, root included."""
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    return blocker / "rec.jsonl"


def warnings_from(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r for r in caplog.records if r.name == names.INSTRUMENTATION_NAME and r.levelno == logging.WARNING
    ]


def test_an_unwritable_path_fails_the_export_and_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = unwritable(tmp_path)
    exporter = OtlpJsonLinesSpanExporter(path)
    spans, _ = finished_spans()
    with caplog.at_level(logging.WARNING, logger=names.INSTRUMENTATION_NAME):
        assert exporter.export(spans) is SpanExportResult.FAILURE
        assert exporter.export(spans) is SpanExportResult.FAILURE
    [warning] = warnings_from(caplog)
    assert str(path) in warning.getMessage()


def test_the_warning_is_re_armed_after_a_write_succeeds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = unwritable(tmp_path)
    exporter = OtlpJsonLinesSpanExporter(path)
    spans, _ = finished_spans()
    with caplog.at_level(logging.WARNING, logger=names.INSTRUMENTATION_NAME):
        exporter.export(spans)
        (tmp_path / "blocker").unlink()
        assert exporter.export(spans) is SpanExportResult.SUCCESS
        path.unlink()
        path.parent.rmdir()
        (tmp_path / "blocker").write_text("again")
        exporter.export(spans)
    assert len(warnings_from(caplog)) == 2


def test_a_directory_in_place_of_the_file_fails_without_raising(tmp_path: Path) -> None:
    spans, _ = finished_spans()
    assert OtlpJsonLinesSpanExporter(tmp_path).export(spans) is SpanExportResult.FAILURE


def test_an_encoding_failure_fails_the_export_without_raising(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "rec.jsonl"
    with caplog.at_level(logging.WARNING, logger=names.INSTRUMENTATION_NAME):
        result = OtlpJsonLinesSpanExporter(path).export([object()])  # type: ignore[list-item]
    assert result is SpanExportResult.FAILURE
    assert not path.exists()
    assert str(path) in warnings_from(caplog)[0].getMessage()


def test_metric_and_log_exporters_fail_without_raising_on_an_unwritable_path(tmp_path: Path) -> None:
    path = unwritable(tmp_path)
    metric_reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[metric_reader])
    meter_provider.get_meter("t").create_counter(names.FINDINGS_METRIC).add(1)
    metrics_data = metric_reader.get_metrics_data()
    assert metrics_data is not None
    assert OtlpJsonLinesMetricExporter(path).export(metrics_data) is MetricExportResult.FAILURE
    meter_provider.shutdown()

    memory = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]  # the SDK's __init__ is unannotated
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    _emit_log(logger_provider, "hello")
    batch = memory.get_finished_logs()
    assert batch
    assert OtlpJsonLinesLogExporter(path).export(batch) is LogRecordExportResult.FAILURE
    assert not path.exists()


# ── Metrics and logs ────────────────────────────────────────────────────
def test_a_metrics_collection_is_one_resource_metrics_line_with_hex_exemplar_ids(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    reader = PeriodicExportingMetricReader(
        OtlpJsonLinesMetricExporter(path), export_interval_millis=3_600_000
    )
    meter_provider = MeterProvider(metric_readers=[reader])
    counter = meter_provider.get_meter(names.INSTRUMENTATION_NAME).create_counter(
        names.FINDINGS_METRIC, unit=names.FINDINGS_METRIC_UNIT
    )
    tracer_provider = TracerProvider()
    with tracer_provider.get_tracer("t").start_as_current_span("inside") as span:
        counter.add(2, {names.METRIC_KIND: "empty-lookup", names.METRIC_SEAM: "write"})
    assert reader.force_flush() is True
    meter_provider.shutdown()
    documents = lines_of(path)
    assert all(list(d) == [RESOURCE_METRICS] for d in documents)
    assert_camel_case_keys(documents[0])
    [metric] = documents[0][RESOURCE_METRICS][0]["scopeMetrics"][0]["metrics"]
    assert metric["name"] == names.FINDINGS_METRIC and metric["unit"] == names.FINDINGS_METRIC_UNIT
    assert metric["sum"]["aggregationTemporality"] == 2  # cumulative, as an integer
    assert metric["sum"]["isMonotonic"] is True
    [point] = metric["sum"]["dataPoints"]
    assert point["asInt"] == "2"
    assert_attributes(point["attributes"])
    [exemplar] = point["exemplars"]
    assert exemplar["traceId"] == hex_trace_id(span)
    assert exemplar["spanId"] == hex_span_id(span)


def _emit_log(provider: LoggerProvider, message: str) -> None:
    """One log record through the logs API, in the current span's context."""
    provider.get_logger(names.INSTRUMENTATION_NAME).emit(
        body=message, severity_number=SeverityNumber.WARN, event_name=names.FINDING_LOG_EVENT_NAME
    )


def test_a_log_batch_is_one_resource_logs_line_with_hex_ids(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(OtlpJsonLinesLogExporter(path)))
    tracer_provider = TracerProvider()
    with tracer_provider.get_tracer("t").start_as_current_span("inside") as span:
        _emit_log(logger_provider, "a finding was filed")
    logger_provider.shutdown()
    [document] = lines_of(path)
    assert list(document) == [RESOURCE_LOGS]
    assert_camel_case_keys(document)
    [record] = document[RESOURCE_LOGS][0]["scopeLogs"][0]["logRecords"]
    assert record["traceId"] == hex_trace_id(span)
    assert record["spanId"] == hex_span_id(span)
    assert record["body"] == {"stringValue": "a finding was filed"}
    assert record["eventName"] == names.FINDING_LOG_EVENT_NAME
    assert isinstance(record["severityNumber"], int)


def test_the_recording_is_appended_never_truncated(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    path.write_text('{"resourceLogs":[]}\n')
    spans, _ = finished_spans()
    OtlpJsonLinesSpanExporter(path).export(spans)
    assert [list(d) for d in lines_of(path)] == [[RESOURCE_LOGS], [RESOURCE_SPANS]]
    assert os.path.getsize(path) > 0
