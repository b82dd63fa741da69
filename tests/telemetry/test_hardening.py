"""No leak, no lost span, no poisoned thread, no hang (issue 8, items 3, 5, 6 and 7).

Everything is read back from a real SDK pipeline: the spans, events and log records an exporter
would be handed.
"""

from __future__ import annotations

import gc
import logging
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator, Sequence

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import StatusCode
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.limits import MAX_ATTRIBUTE_CHARS, MAX_STACKTRACE_CHARS
from context_integrity.redaction import REDACTED
from context_integrity.telemetry.run.summary import ABANDONED
from context_integrity.telemetry.schema import names

HUGE = 200_000
SECRET = "sk-live-SECRET-0123456789"


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _longest(spans: Sequence[ReadableSpan]) -> tuple[int, int, int]:
    """(longest span name, longest attribute string, longest event attribute string)."""
    name = max(len(s.name) for s in spans)
    attribute = max(
        (len(t) for s in spans for v in (s.attributes or {}).values() for t in _strings(v)), default=0
    )
    event = max(
        (len(t) for s in spans for e in s.events for v in (e.attributes or {}).values() for t in _strings(v)),
        default=0,
    )
    return name, attribute, event


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("cannot print me")

    __repr__ = __str__


# ── item 3: nothing model- or host-controlled leaves unclipped ───────────


def test_host_and_model_controlled_strings_leave_clipped(telemetry: Telemetry) -> None:
    log_exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]  # the SDK's __init__ is unannotated
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    ci.setup(
        tracer_provider=telemetry.provider,
        meter_provider=telemetry.meter_provider,
        logger_provider=logger_provider,
        log_events=True,
        check_column_types="warn",
        notice_empty_lookups=True,
    )
    tool_name = "t" * HUGE
    key = "k" * HUGE
    ci.declare_tool("producer")
    ci.declare_tool(tool_name, result_columns={"lun": "number"}, arguments_from=["producer"])

    @ci.tool(name="raiser")
    def raiser() -> None:
        raise ValueError("m" * HUGE)

    with ci.run("q", agent_name="a" * HUGE) as agent_run:
        agent_run.tool_result("producer", "p" * HUGE, ["v" * 10_000])
        agent_run.tool_result(tool_name, "c" * HUGE, [], arguments={key: "v" * 10_000})
        agent_run.tool_result(tool_name, "d" * HUGE, [{"lun": "x" * HUGE}])
        frame = ci.RequestFrame.of([ci.Message("user", "hi")], tools=[ci.ToolDefinition(tool_name)])
        with agent_run.request(frame, model="m" * HUGE) as call:
            call.respond(calls=[ci.ToolCall(tool_name, "e" * HUGE, {key: "w" * HUGE})])
        with pytest.raises(ValueError):
            raiser()
    kinds = {f.kind for f in agent_run.findings}
    assert {"empty-lookup", "column-type-mismatch", "unsupported-argument"} <= kinds
    spans = telemetry.finished()
    longest_name, longest_attribute, longest_event = _longest(spans)
    assert longest_name <= MAX_ATTRIBUTE_CHARS + len(names.OPERATION_EXECUTE_TOOL) + 1
    assert longest_attribute <= MAX_ATTRIBUTE_CHARS
    assert longest_event <= max(MAX_ATTRIBUTE_CHARS, MAX_STACKTRACE_CHARS)
    records = [r.log_record for r in log_exporter.get_finished_logs()]
    assert records and all(len(str(r.body)) <= MAX_ATTRIBUTE_CHARS for r in records)
    assert all(
        len(t) <= MAX_ATTRIBUTE_CHARS
        for r in records
        for v in (r.attributes or {}).values()
        for t in _strings(v)
    )


def _secret_run(telemetry: Telemetry) -> ci.Run:
    ci.declare_tool("producer")
    ci.declare_tool("lookup", result_columns={"lun": "number"}, arguments_from=["producer"])

    @ci.tool(name="raiser")
    def raiser() -> None:
        raise ValueError(f"token {SECRET} rejected")

    with ci.run("q") as agent_run:
        agent_run.tool_result("producer", "p1", [{"id": SECRET}])
        agent_run.tool_result("lookup", "c1", [], arguments={"id": SECRET})
        agent_run.tool_result("lookup", "c2", [{"lun": SECRET}])
        with pytest.raises(ValueError):
            raiser()
    return agent_run


def _exported_text(telemetry: Telemetry) -> list[str]:
    out: list[str] = []
    for span in telemetry.finished():
        for event in span.events:
            for value in (event.attributes or {}).values():
                out.extend(_strings(value))
        if span.status.description:
            out.append(span.status.description)
    return out


def test_the_redact_hook_sees_every_witness_value_and_message_before_export(telemetry: Telemetry) -> None:
    seen: list[str] = []

    def scrub(text: str) -> str:
        seen.append(text)
        return text.replace(SECRET, "[key]")

    telemetry.configure(check_column_types="warn", notice_empty_lookups=True, redact=scrub)
    agent_run = _secret_run(telemetry)
    assert {f.kind for f in agent_run.findings} == {"empty-lookup", "column-type-mismatch"}
    exported = _exported_text(telemetry)
    assert not [t for t in exported if SECRET in t]
    assert any("[key]" in t for t in exported) and any(SECRET in t for t in seen)


def test_a_redact_hook_that_raises_redacts_everything_it_was_given(telemetry: Telemetry) -> None:
    def broken(text: str) -> str:
        raise RuntimeError("hook broke")

    telemetry.configure(check_column_types="warn", notice_empty_lookups=True, redact=broken)
    _secret_run(telemetry)
    exported = _exported_text(telemetry)
    assert not [t for t in exported if SECRET in t]
    finding_messages = [
        dict(e.attributes or {})[names.FINDING_MESSAGE]
        for s in telemetry.finished()
        for e in s.events
        if e.name == names.FINDING_EVENT
    ]
    # Each quoted value the hook failed on is redacted whole; the sentences around them are ours.
    assert len(finding_messages) == 2
    assert all(isinstance(m, str) and f'"{REDACTED}"' in m for m in finding_messages)


# ── item 5: an exception that cannot be printed still ends its spans ──────


def test_an_unprintable_exception_still_ends_the_tool_span_the_run_span_and_the_summary(
    telemetry: Telemetry,
) -> None:
    telemetry.configure(check_column_types="warn")

    @ci.tool(name="explodes")
    def explodes() -> None:
        raise _Unprintable()

    with pytest.raises(_Unprintable), ci.run("q", agent_name="unprintable"):
        explodes()
    tool_span = telemetry.one(names.tool_span_name("explodes"))
    run_span = telemetry.one(names.run_span_name("unprintable"))
    (summary,) = telemetry.summaries()
    assert (
        tool_span.status.status_code is StatusCode.ERROR and run_span.status.status_code is StatusCode.ERROR
    )
    assert dict(summary.attributes or {})[names.RUN_OUTCOME] == "error"
    (event,) = [e for e in tool_span.events if e.name == names.EXCEPTION_EVENT]
    assert dict(event.attributes or {})[names.EXCEPTION_TYPE] == "_Unprintable"


# ── item 6: a run entered and never exited does not poison the thread ─────


def test_a_dropped_run_is_summarised_as_abandoned_and_the_next_run_is_not_its_child(
    telemetry: Telemetry,
) -> None:
    inst = telemetry.configure(check_column_types="warn")
    dropped = ci.run("q", agent_name="dropped")
    dropped.__enter__()
    assert ci.current_run() is dropped
    del dropped
    gc.collect()
    assert ci.current_run() is None
    with ci.run("q", agent_name="next"):
        pass
    first = telemetry.one(names.run_span_name("dropped"))
    second = telemetry.one(names.run_span_name("next"))
    assert second.parent is None  # the thread's trace context was given back
    outcomes = {
        s.parent.span_id: dict(s.attributes or {})[names.RUN_OUTCOME]
        for s in telemetry.summaries()
        if s.parent is not None
    }
    assert outcomes == {first.context.span_id: ABANDONED, second.context.span_id: "ok"}
    assert inst.processor is not None and not inst.processor._expected


def test_many_dropped_runs_are_released(telemetry: Telemetry) -> None:
    inst = telemetry.configure(check_column_types="warn")
    ci.declare_tool("big", result_columns={"lun": "number"})
    for _ in range(200):
        leaked = ci.run("q", agent_name="leak")
        leaked.__enter__()
        leaked.tool_result("big", None, [{"lun": "x" * 1000}])
        del leaked
    gc.collect()
    assert ci.current_run() is None
    assert len(telemetry.summaries()) == 200
    assert inst.processor is not None and not inst.processor._expected


# ── item 7: flush and exit keep their time, whatever the exporter does ────


class _Hanging(SpanExporter):
    """An exporter that never answers until the test lets it."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.release.wait()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.set()


def test_flush_returns_while_the_exporter_hangs_and_says_so(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    hanging = _Hanging()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(hanging))
    try:
        ci.setup(tracer_provider=provider, meter_provider=telemetry.meter_provider, check_column_types="warn")
        with ci.run("q"):
            pass
        with caplog.at_level(logging.WARNING, logger="context_integrity"):
            assert ci.flush(timeout_millis=200) is False
        assert not hanging.release.is_set()  # it returned while the exporter still hung
        (line,) = [r.getMessage() for r in caplog.records if "did not finish within 200 ms" in r.getMessage()]
        assert "not answering" in line
    finally:
        hanging.release.set()
        ci.shutdown()


def test_with_the_collector_down_flush_and_exit_are_bounded_and_the_unsent_are_counted() -> None:
    """A real OTLP exporter aimed at a port nobody listens on; memory stays bounded meanwhile."""
    script = textwrap.dedent(
        """
        import logging, resource, sys
        logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="LOG %(message)s")
        import context_integrity as ci
        ci.setup(endpoint="http://127.0.0.1:9", check_column_types="warn")
        ci.declare_tool("t", result_columns={"lun": "number"})
        def runs(n):
            for i in range(n):
                with ci.run("q") as run:
                    run.tool_result("t", None, [{"lun": "x" * 200}])
        runs(100)
        warm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        runs(800)  # 2,700 spans in all: past the batch queue's 2,048, so some are dropped
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - warm) * 1024
        print("FLUSH", ci.flush(timeout_millis=300))
        print("GROWN_MB", grown / 1e6)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,  # a guard against a hang, not a measurement: the bound itself is 3 s at exit
        env={"PYTHONPATH": ":".join(sys.path), "OTEL_METRICS_EXPORTER": "none", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert "FLUSH False" in done.stdout
    (line,) = [x for x in done.stdout.splitlines() if "flush did not finish within 300 ms" in x]
    waiting = int(line.split(": ", 2)[2].split(" span(s)")[0])
    assert waiting > 0
    grown = float(next(x for x in done.stdout.splitlines() if x.startswith("GROWN_MB")).split()[1])
    assert grown < 48  # the batch queue is bounded (2,048 spans); the runs themselves are released
    assert any("shutdown did not finish within" in x for x in done.stdout.splitlines())
