"""The default recording loses nothing it does not count, and has a bound.

The laws under test:

- Load: thousands of runs in a tight loop through ``ci.setup()``'s own default recording keep
  every span of every run (no run without its summary).
- When the writer cannot keep up (a slow or stuck file), every span that ended is either in the
  recording or counted as dropped: the count is in the recording itself (``report`` shows it and
  names the traces) and in one log line per stall; the span that ends waits for room at most once
  per stall, so ending spans never hangs on a stuck disk.
- Two processes appending to one recording never interleave partial lines.
- A torn line (a writer cut off part-way) costs only itself: the next writer ends it, and a reader
  of an older file that joined the two resynchronises at the next record.
- The recording rotates at its size: ``<name>.1`` takes the older lines, no line is split, and
  the report of the current file says where the older part went.
- The size comes from $CONTEXT_INTEGRITY_RECORDING_MAX_BYTES; a bad value is refused at setup,
  naming the variable and the fix.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

import context_integrity as ci
from context_integrity.judge import SetupError
from context_integrity.limits import MAX_RECORDING_BYTES, MIN_RECORDING_BYTES
from context_integrity.paths import RECORDING_ENV_VAR, rotated_path
from context_integrity.recording import read_recording, read_recording_text
from context_integrity.report import format_report
from context_integrity.telemetry.export.file_export import OtlpJsonLinesSpanExporter
from context_integrity.telemetry.export.recording_file import RECORDING_MAX_BYTES_ENV_VAR, RecordingFile
from context_integrity.telemetry.export.recording_processor import RecordingSpanProcessor
from context_integrity.telemetry.schema import names

ROOT = Path(__file__).resolve().parents[1]
SPANS_PER_DEMO_RUN = 5  # the run, three tool calls, the summary


def _python(script: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CONTEXT_INTEGRITY_"))}
    clean.update({"PYTHONPATH": str(ROOT / "src"), "OTEL_METRICS_EXPORTER": "none", **env})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        env=clean,
        timeout=300,
        cwd=ROOT,
    )


# ── Load ────────────────────────────────────────────────────────────────
AGENT = """
    import sys
    import context_integrity as ci
    from context_integrity import demo
    ci.setup(check_column_types="warn")
    for _ in range(int(sys.argv[1])):
        with ci.run(demo.QUESTION, agent_name=demo.AGENT_NAME):
            for step in demo.SCRIPT:
                step.tool(**step.arguments)
"""


def test_a_tight_loop_through_the_default_recording_keeps_every_span(tmp_path: Path) -> None:
    recording, runs = tmp_path / "recording.otlp.jsonl", 2000
    done = _python(AGENT, {RECORDING_ENV_VAR: str(recording)}, str(runs))
    assert done.returncode == 0, done.stderr
    read = read_recording(recording)
    assert read.spans == runs * SPANS_PER_DEMO_RUN
    assert (read.dropped_spans, read.problems) == (0, [])
    assert len(read.runs) == runs
    assert all(run.ledger is not None for run in read.runs)  # no summary lost apart from its run
    assert "could not be kept" not in done.stderr


# ── A writer that falls behind ──────────────────────────────────────────
class _Gated(SpanExporter):
    """Writes through to the recording only when its gate is open: a disk that stops answering."""

    def __init__(self, inner: OtlpJsonLinesSpanExporter) -> None:
        self.inner = inner
        self.gate = threading.Event()
        self.exported = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.gate.wait()
        self.exported += len(spans)
        return self.inner.export(spans)

    def shutdown(self) -> None:
        self.inner.shutdown()


def _spans_in(path: Path) -> int:
    return sum(
        len(scope["spans"])
        for line in path.read_text().splitlines()
        for resource in json.loads(line).get("resourceSpans", ())
        for scope in resource["scopeSpans"]
    )


def test_a_stuck_writer_costs_one_bounded_wait_and_every_span_is_kept_or_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "r.jsonl"
    recorder = OtlpJsonLinesSpanExporter(path)
    gated = _Gated(recorder)
    processor = RecordingSpanProcessor(
        gated, record_dropped=recorder.record_dropped, max_queue=50, batch=10, max_wait_millis=20
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer(names.INSTRUMENTATION_NAME)

    def a_tight_loop() -> None:
        for index in range(5000):
            with tracer.start_as_current_span(f"call {index}"):
                pass

    caplog.set_level(logging.WARNING, logger=names.INSTRUMENTATION_NAME)
    loop = threading.Thread(target=a_tight_loop)
    loop.start()
    loop.join(timeout=120)  # a hang detector: one 20 ms wait per stall, not one per span
    assert not loop.is_alive(), "ending spans waited on a stuck writer"
    gated.gate.set()
    assert processor.force_flush(30_000)
    provider.shutdown()

    assert processor.ended == 5000
    assert processor.dropped > 0  # the stall was long enough to drop
    assert _spans_in(path) + processor.dropped == processor.ended  # kept or counted, nothing else
    read = read_recording(path)
    assert read.dropped_spans == processor.dropped
    assert read.dropped_traces  # which runs are incomplete
    report = format_report(read)
    assert f"dropped: {processor.dropped} spans could not be kept" in " ".join(report.split())
    said = [r for r in caplog.records if "could not be kept" in r.getMessage()]
    assert 1 <= len(said) <= 2  # one line per stall (the stall, then what ended while it drained)


def test_a_writer_that_keeps_up_drops_nothing_however_tight_the_loop(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    recorder = OtlpJsonLinesSpanExporter(path)
    processor = RecordingSpanProcessor(
        recorder, record_dropped=recorder.record_dropped, max_queue=64, batch=16
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer(names.INSTRUMENTATION_NAME)
    for index in range(20_000):
        with tracer.start_as_current_span(f"s{index}"):
            pass
    provider.shutdown()
    assert (processor.dropped, _spans_in(path)) == (0, 20_000)


def test_spans_ended_after_shutdown_are_counted(tmp_path: Path) -> None:
    recorder = OtlpJsonLinesSpanExporter(tmp_path / "r.jsonl")
    processor = RecordingSpanProcessor(recorder, record_dropped=recorder.record_dropped)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer(names.INSTRUMENTATION_NAME)
    processor.shutdown()
    with tracer.start_as_current_span("late"):
        pass
    assert (processor.ended, processor.dropped) == (1, 1)


# ── Two processes ───────────────────────────────────────────────────────
APPENDER = """
    import sys
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from context_integrity.telemetry.export.file_export import OtlpJsonLinesSpanExporter
    path, who, lines, max_bytes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": who}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("t")
    for index in range(40):
        with tracer.start_as_current_span(f"{who} {index}", attributes={"pad": "x" * 2000}):
            pass
    batch = memory.get_finished_spans()
    exporter = OtlpJsonLinesSpanExporter(path, max_bytes=max_bytes)
    for _ in range(lines):
        exporter.export(batch)
"""


def _run_appenders(path: Path, lines: int, max_bytes: int) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(APPENDER), str(path), who, str(lines), str(max_bytes)],
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
            cwd=ROOT,
        )
        for who in ("one", "two")
    ]
    for proc in procs:
        assert proc.wait(timeout=300) == 0


def _whole_lines(path: Path) -> list[dict[str, object]]:
    text = path.read_text()
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]  # a partial line would not parse


def test_two_processes_appending_never_interleave_partial_lines(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    _run_appenders(path, lines=60, max_bytes=MAX_RECORDING_BYTES)
    documents = _whole_lines(path)
    services = [
        attribute["value"]["stringValue"]
        for document in documents
        for attribute in document["resourceSpans"][0]["resource"]["attributes"]  # type: ignore[index]
        if attribute["key"] == "service.name"
    ]
    assert sorted(services) == ["one"] * 60 + ["two"] * 60


def test_two_processes_rotating_one_recording_leave_only_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    _run_appenders(path, lines=40, max_bytes=MIN_RECORDING_BYTES * 4)
    assert rotated_path(path).exists()
    for part in (path, rotated_path(path)):
        assert _whole_lines(part)
        assert part.stat().st_size <= MIN_RECORDING_BYTES * 4 + 200_000  # the bound, give or take a line


# ── A torn line ─────────────────────────────────────────────────────────
def _batch_line(tmp_path: Path, name: str = "whole") -> str:
    """One line of the recording: a span of its own (a new trace each time)."""
    scratch = tmp_path / f"scratch-{name}.jsonl"
    provider = TracerProvider()
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonLinesSpanExporter(scratch)))
    with provider.get_tracer("t").start_as_current_span(name):
        pass
    provider.shutdown()
    return scratch.read_text()


def test_a_torn_line_costs_only_itself(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    first, torn, after = (_batch_line(tmp_path, name) for name in ("first", "torn", "after"))
    path.write_text(first + torn[: len(torn) // 2])  # a writer cut off part-way through its line
    RecordingFile(path).append(after.encode())
    lines = path.read_text().splitlines()
    assert len(lines) == 3 and lines[2] == after.rstrip("\n")  # the record after the tear is whole
    read = read_recording(path)
    assert read.spans == 2
    assert len(read.problems) == 1 and read.problems[0].startswith("line 2: not JSON")


def test_a_reader_resynchronises_after_a_torn_record_on_the_same_line(tmp_path: Path) -> None:
    first, torn, after = (_batch_line(tmp_path, name) for name in ("first", "torn", "after"))
    joined = torn[: len(torn) // 3] + after  # what an older writer left: the tear and the next record
    read = read_recording_text([first, joined])
    assert read.spans == 2
    [problem] = read.problems
    assert problem.startswith("line 2: a torn record")


# ── Rotation ────────────────────────────────────────────────────────────
def test_the_recording_rotates_at_its_size_and_splits_no_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    line = _batch_line(tmp_path).encode()
    file = RecordingFile(path, max_bytes=MIN_RECORDING_BYTES)
    writes = MIN_RECORDING_BYTES // len(line) + 5
    for _ in range(writes):
        file.append(line)
    older = rotated_path(path)
    assert file.rotations == 1 and older.exists()
    assert path.stat().st_size <= MIN_RECORDING_BYTES and older.stat().st_size <= MIN_RECORDING_BYTES
    assert len(_whole_lines(path)) + len(_whole_lines(older)) == writes  # one rotation: nothing lost
    report = format_report(read_recording(path))
    assert f"older records are in {older}" in report


def test_rotation_keeps_one_older_part(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    line = _batch_line(tmp_path).encode()
    file = RecordingFile(path, max_bytes=MIN_RECORDING_BYTES)
    for _ in range(4 * (MIN_RECORDING_BYTES // len(line) + 1)):
        file.append(line)
    assert file.rotations >= 3
    assert rotated_path(path).exists() and not rotated_path(path, 2).exists()
    total = path.stat().st_size + rotated_path(path).stat().st_size
    assert total <= 2 * MIN_RECORDING_BYTES  # the bound on disk


# ── The size, configured ────────────────────────────────────────────────
def test_the_size_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(RECORDING_MAX_BYTES_ENV_VAR, raising=False)
    assert RecordingFile(tmp_path / "a").max_bytes == MAX_RECORDING_BYTES
    monkeypatch.setenv(RECORDING_MAX_BYTES_ENV_VAR, str(MIN_RECORDING_BYTES * 3))
    assert RecordingFile(tmp_path / "b").max_bytes == MIN_RECORDING_BYTES * 3
    assert OtlpJsonLinesSpanExporter(tmp_path / "c").recording.max_bytes == MIN_RECORDING_BYTES * 3


@pytest.mark.parametrize("bad", ["lots", "-1", "1.5e6", str(MIN_RECORDING_BYTES - 1)])
def test_a_bad_size_is_refused_at_setup_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, bad: str, isolated_contracts: None
) -> None:
    ci.shutdown()
    monkeypatch.setenv(RECORDING_MAX_BYTES_ENV_VAR, bad)
    with pytest.raises(SetupError) as refused:
        ci.setup(tracer_provider=TracerProvider())
    message = str(refused.value)
    assert RECORDING_MAX_BYTES_ENV_VAR in message and str(MIN_RECORDING_BYTES) in message
    assert "unset it" in message
    assert ci.telemetry.setup.current() is None  # nothing was configured
