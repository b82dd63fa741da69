"""``setup()``: where telemetry goes, the environment it honours, and the file recording.

The laws under test:
(a) an application's own SDK TracerProvider is kept: our processor joins it, its exporters stay;
(b) with no endpoint, traces are recorded as OTLP-JSON lines that ``context-integrity report``
    reads back, and setup says where, once;
(c) the standard OTEL_* environment picks the exporter and protocol; a bad value is refused
    with a message naming the variable and the choices;
(d) opt-in log events: each finding is also a log record named ``context_integrity.finding``,
    correlated with the span it is about.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.judge import REGISTERED_CHECKS
from context_integrity.recording import read_recording
from context_integrity.telemetry.schema import names

ROOT = Path(__file__).resolve().parents[2]


def _python(
    code: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    full_env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=ROOT,
    )


def test_an_application_provider_is_kept_and_joined_not_replaced() -> None:
    result = _python(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        import context_integrity as ci

        exporter = InMemorySpanExporter()
        app_provider = TracerProvider()
        app_provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(app_provider)

        ci.setup(check_column_types="warn")
        assert trace.get_tracer_provider() is app_provider

        @ci.tool(result_columns={"lun": "number"})
        def mappings():
            return [{"lun": ""}]

        with ci.run("q", agent_name="app"):
            mappings()
        names = sorted(s.name for s in exporter.get_finished_spans())
        print(names)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "'context_integrity.disposition'" in result.stdout
    assert "'execute_tool mappings'" in result.stdout
    assert "'invoke_agent app'" in result.stdout
    assert "recorded to" not in result.stderr  # no second exporter of ours


def test_with_no_endpoint_traces_are_recorded_and_report_reads_them(tmp_path: Path) -> None:
    recording = tmp_path / "recording.otlp.jsonl"
    result = _python(
        """
        import context_integrity as ci
        ci.setup(check_column_types="warn")
        ci.setup(check_column_types="warn")  # says where once, adds nothing

        @ci.tool(result_columns={"frames_per_sec": "number"})
        def port_counters():
            return [{"frames_per_sec": "1240"}]

        with ci.run("q", agent_name="fabric"):
            port_counters()
        ci.flush()
        """,
        env={"CONTEXT_INTEGRITY_RECORDING": str(recording)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.count(str(recording)) == 1, result.stderr
    lines = recording.read_text().splitlines()
    assert any('"resourceSpans"' in line for line in lines)
    assert any('"resourceMetrics"' in line for line in lines)
    parsed = read_recording(recording)
    assert parsed.problems == []
    (agent_run,) = parsed.runs
    assert agent_run.agent == "fabric"
    assert [f.kind for f in agent_run.findings] == ["column-type-mismatch"]
    assert agent_run.findings[0].tool_name == "port_counters"
    assert agent_run.ledger is not None
    assert [(row["check"], row["seam"]) for row in agent_run.ledger] == [
        (c.check, c.seam) for c in REGISTERED_CHECKS
    ]

    report = subprocess.run(
        [sys.executable, "-m", "context_integrity.cli", "report", str(recording)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=60,
    )
    assert report.returncode == 0, report.stderr
    assert "column-type-mismatch" in report.stdout
    assert "port_counters" in report.stdout


def test_report_on_a_missing_file_says_so_and_exits_2(tmp_path: Path) -> None:
    report = subprocess.run(
        [sys.executable, "-m", "context_integrity.cli", "report", str(tmp_path / "nope.jsonl")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=60,
    )
    assert report.returncode == 2
    assert "nope.jsonl" in report.stderr


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("OTEL_TRACES_EXPORTER", "zipkin", "OTEL_TRACES_EXPORTER"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", "OTEL_EXPORTER_OTLP_PROTOCOL"),
        ("OTEL_METRICS_EXPORTER", "statsd", "OTEL_METRICS_EXPORTER"),
    ],
)
def test_a_bad_environment_value_is_refused_naming_it(variable: str, value: str, named: str) -> None:
    result = _python(
        """
        import context_integrity as ci
        try:
            ci.setup()
        except ci.SetupError as error:
            print("REFUSED:", error)
        """,
        env={variable: value},
    )
    assert result.returncode == 0, result.stderr
    assert "REFUSED:" in result.stdout
    assert named in result.stdout
    assert repr(value) in result.stdout


def test_console_exporter_from_the_environment_prints_spans() -> None:
    result = _python(
        """
        import context_integrity as ci
        ci.setup()
        with ci.run("q", agent_name="console-agent"):
            pass
        ci.flush()
        """,
        env={"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "none"},
    )
    assert result.returncode == 0, result.stderr
    assert '"name": "invoke_agent console-agent"' in result.stdout
    assert '"name": "context_integrity.disposition"' in result.stdout


def test_an_unreachable_otlp_endpoint_never_breaks_the_agent() -> None:
    result = _python(
        """
        import context_integrity as ci
        ci.setup(check_column_types="enforce")

        @ci.tool(result_columns={"lun": "number"})
        def mappings():
            return [{"lun": ""}]

        with ci.run("q"):
            delivered = mappings()
        print("DELIVERED:", delivered[:16])
        ci.flush(timeout_millis=2000)
        """,
        env={
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
            "OTEL_METRICS_EXPORTER": "none",
        },
    )
    assert result.returncode == 0, result.stderr
    assert "DELIVERED: Result rejected:" in result.stdout


def test_log_events_are_finding_records_correlated_with_their_span(telemetry: Telemetry) -> None:
    log_exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]  # the SDK's __init__ is unannotated
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    ci.setup(
        tracer_provider=telemetry.provider,
        meter_provider=telemetry.meter_provider,
        logger_provider=logger_provider,
        log_events=True,
        check_column_types="warn",
    )

    @ci.tool(result_columns={"lun": "number"})
    def mappings() -> list[dict[str, Any]]:
        return [{"lun": ""}, {"lun": 1}]

    with ci.run("q"):
        mappings()
    (record,) = [r.log_record for r in log_exporter.get_finished_logs()]
    assert record.event_name == names.FINDING_LOG_EVENT_NAME
    attrs = dict(record.attributes or {})
    assert attrs[names.FINDING_KIND] == "column-type-mismatch"
    assert attrs[names.witness_attribute(1, "value")]
    span = telemetry.one(names.tool_span_name("mappings"))
    assert record.trace_id == span.context.trace_id
    assert record.span_id == span.context.span_id
    assert record.body is not None and "lun" in str(record.body)


def test_recording_lines_are_otlp_json_with_hex_ids(tmp_path: Path) -> None:
    recording = tmp_path / "r.jsonl"
    result = _python(
        """
        import context_integrity as ci
        ci.setup()
        with ci.run("q", agent_name="ids"):
            pass
        ci.flush()
        """,
        env={"CONTEXT_INTEGRITY_RECORDING": str(recording)},
    )
    assert result.returncode == 0, result.stderr
    spans = [
        span
        for line in recording.read_text().splitlines()
        for rs in json.loads(line).get("resourceSpans", [])
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]
    assert {s["name"] for s in spans} == {"invoke_agent ids", names.DISPOSITION_SPAN}
    for span in spans:
        assert len(span["traceId"]) == 32 and int(span["traceId"], 16)
        assert len(span["spanId"]) == 16 and int(span["spanId"], 16)
