"""All three signals over real OTLP/HTTP, decoded by a receiver that speaks the protocol.

The laws under test: with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set and ``log_events=True``, one
``setup()`` sends (a) the tool span with its finding event and the summary span to ``/v1/traces``,
(b) the findings counter to ``/v1/metrics``, and (c) each finding as a log record named
``context_integrity.finding`` to ``/v1/logs``, correlated with the span it is about; (d) the
headers from ``OTEL_EXPORTER_OTLP_HEADERS`` ride every request.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.telemetry.otlp_receiver import Receiver, attributes_of, receiver, records_of, spans_of

from context_integrity.telemetry.schema import names

ROOT = Path(__file__).resolve().parents[2]
__all__ = ["receiver"]  # the fixture, imported for the tests below


def test_traces_metrics_and_log_events_reach_a_real_otlp_http_receiver(receiver: Receiver) -> None:
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
    finding_attrs = attributes_of(finding.attributes)
    assert finding_attrs[names.FINDING_KIND] == "column-type-mismatch"
    assert names.witness_attribute(1, "value") in finding_attrs
    summary = by_name[names.DISPOSITION_SPAN]
    assert summary.parent_span_id == by_name[names.run_span_name("otlp-agent")].span_id

    points = [
        (metric.name, attributes_of(point.attributes), point.as_int)
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
    assert attributes_of(record.attributes)[names.FINDING_KIND] == "column-type-mismatch"
    assert "logical_unit_number" in record.body.string_value

    assert receiver.headers_seen and set(receiver.headers_seen) == {"storage"}


def test_evaluation_events_reach_the_receiver_inside_the_evaluated_spans(receiver: Receiver) -> None:
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

    by_name = {span.name: span for span in spans_of(receiver)}  # type: ignore[attr-defined]
    chat = by_name[names.chat_span_name("scripted")]
    tool_span = by_name[names.tool_span_name("host_group_mappings")]
    records = {
        attributes_of(r.attributes)[names.GEN_AI_EVALUATION_NAME]: r  # type: ignore[attr-defined]
        for r in records_of(receiver)
    }
    assert {r.event_name for r in records.values()} == {names.GEN_AI_EVALUATION_RESULT_EVENT}  # type: ignore[attr-defined]
    assert set(records) == {
        names.evaluation_name("unsupported-argument"),
        names.evaluation_name("column-type-mismatch"),
    }
    for kind, span in (("unsupported-argument", chat), ("column-type-mismatch", tool_span)):
        record = records[names.evaluation_name(kind)]
        assert (record.trace_id, record.span_id) == (span.trace_id, span.span_id)  # type: ignore[attr-defined]
        attributes = attributes_of(record.attributes)  # type: ignore[attr-defined]
        (finding_event,) = [e for e in span.events if e.name == names.FINDING_EVENT]  # type: ignore[attr-defined]
        finding = attributes_of(finding_event.attributes)
        assert attributes[names.GEN_AI_EVALUATION_SCORE_LABEL] == names.EVALUATION_LABEL_FAIL
        assert attributes[names.GEN_AI_EVALUATION_SCORE_VALUE] == names.EVALUATION_SCORE_FAIL
        assert attributes[names.GEN_AI_EVALUATION_EXPLANATION] == finding[names.FINDING_MESSAGE]
        for carried in (attributes, finding):
            assert carried[names.EVALUATOR_VERSION] == VERSION
            assert carried[names.EVALUATOR_RULE_VERSION] == REGISTRY.rule_version(kind)
    assert (
        attributes_of(records[names.evaluation_name("unsupported-argument")].attributes)[  # type: ignore[attr-defined]
            names.GEN_AI_RESPONSE_ID
        ]
        == "chatcmpl-42"
    )
    assert names.GEN_AI_RESPONSE_ID not in attributes_of(
        records[names.evaluation_name("column-type-mismatch")].attributes  # type: ignore[attr-defined]
    )
