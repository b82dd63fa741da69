"""Reading a recording as it goes: ``RecordingStream`` and the streamed report.

The laws under test:

- A recording written in order (as an SDK pipeline writes one, children before
  their run, the summary after it) streams to exactly the runs and the report that
  reading it whole gives.
- Streaming holds only the runs in flight: reading 8x as many runs does not raise
  the peak memory (tracemalloc), while collecting them all does.
- Whatever the order of the lines, no call is lost: each is in a run or listed
  outside any run, with a problem saying why, and the same findings are counted.
- A run read twice is handed out once, even after its trace was let go.
- Runs that never get a summary come out at the end; past the bound on open
  traces the oldest is settled early, and said so.
- Problems past the listing bound are counted, not kept, and the report says so.
"""

from __future__ import annotations

import io
import random
import tracemalloc
import weakref
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.recording_shapes import (
    LOOKUP_FINDING,
    LOOKUP_TOOL,
    add_finding,
    emit_summary,
    run_span,
    scenario_ledger,
    tool_span,
)

from context_integrity.judge import REGISTERED_CHECKS
from context_integrity.limits import MAX_LISTED_PROBLEMS
from context_integrity.recording import RecordingStream, read_recording, read_recording_text, reader
from context_integrity.report import format_report, write_report
from context_integrity.telemetry.export.file_export import OtlpJsonLinesSpanExporter
from context_integrity.telemetry.schema import names


def record_runs(path: Path, runs: int, *, per_line: int = 10, summaries: bool = True) -> None:
    """``runs`` runs, each a tool call with a finding and (optionally) a summary, written the way
    the SDK's batch processor writes them: in end order, ``per_line`` runs a line."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer(names.INSTRUMENTATION_NAME)
    exporter = OtlpJsonLinesSpanExporter(path)
    for index in range(runs):
        with run_span(tracer, f"agent-{index % 3}") as run:
            with tool_span(tracer, LOOKUP_TOOL, f"call-{index}", [LOOKUP_FINDING.kind]) as span:
                add_finding(span, LOOKUP_FINDING, tool=LOOKUP_TOOL, call_id=f"call-{index}")
            if summaries:
                emit_summary(tracer, run, scenario_ledger())
        if (index + 1) % per_line == 0 or index + 1 == runs:
            exporter.export(memory.get_finished_spans())
            memory.clear()
    provider.shutdown()


def streamed_report(source: Path | list[str], *, verbose: bool = False) -> str:
    out = io.StringIO()
    write_report(RecordingStream(source, details=verbose), out, verbose=verbose)
    return out.getvalue()


@pytest.mark.parametrize("verbose", [False, True])
def test_a_recording_in_order_streams_to_the_report_read_whole(tmp_path: Path, verbose: bool) -> None:
    path = tmp_path / "r.jsonl"
    record_runs(path, 25)
    assert streamed_report(path, verbose=verbose) == format_report(read_recording(path), verbose=verbose)


def test_the_stream_hands_out_the_runs_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record_runs(path, 12)
    stream = RecordingStream(path)
    streamed = list(stream)
    whole = read_recording(path)
    assert streamed == whole.runs
    assert all(run.ledger is not None and len(run.ledger) == len(REGISTERED_CHECKS) for run in streamed)
    assert (stream.rest.problems, stream.rest.loose_calls, stream.rest.spans) == ([], [], whole.spans)


def _peak(fn: object) -> int:
    tracemalloc.start()
    try:
        fn()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_streaming_holds_the_runs_in_flight_not_the_recording(tmp_path: Path) -> None:
    few, many = tmp_path / "few.jsonl", tmp_path / "many.jsonl"
    record_runs(few, 40)
    record_runs(many, 320)

    def stream(path: Path) -> None:
        for _ in RecordingStream(path, details=False):
            pass

    streamed_few, streamed_many = _peak(lambda: stream(few)), _peak(lambda: stream(many))
    whole_few, whole_many = _peak(lambda: read_recording(few)), _peak(lambda: read_recording(many))
    assert streamed_many < 1.5 * streamed_few  # bounded by a line and the runs in it
    assert whole_many > 2.5 * whole_few  # the contrast: collecting grows with the recording


class _Probe:
    """Put into each parsed line's document, to see from outside whether the document is alive."""


def test_a_line_is_let_go_before_the_next_is_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A line's document is tens of thousands of objects; one still held while the next is parsed
    # doubles the read's peak (bench_read_back measured 1.77x the parse's peak against 1.14x).
    path = tmp_path / "r.jsonl"
    record_runs(path, 30, per_line=5)
    parse = reader.parse_json
    previous: list[weakref.ref[_Probe]] = []
    held_at_next_parse: list[bool] = []

    def probed(text: str) -> object:
        if previous:
            held_at_next_parse.append(previous[-1]() is not None)
        document = parse(text)
        probe = _Probe()
        assert isinstance(document, dict)
        document["probe"] = probe  # a key no reader looks at
        previous.append(weakref.ref(probe))
        return document

    monkeypatch.setattr(reader, "parse_json", probed)
    runs = list(RecordingStream(path, details=False))
    assert len(runs) == 30 and len(held_at_next_parse) == 5  # six lines, five parsed after another
    assert held_at_next_parse == [False] * 5


def test_in_any_order_no_call_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record_runs(path, 30, per_line=1)
    lines = path.read_text().splitlines(keepends=True)
    whole = read_recording_text(lines)
    expected = sum(len(run.findings) for run in whole.runs)
    for seed in range(5):
        random.Random(seed).shuffle(lines)
        stream = RecordingStream(lines)
        runs = list(stream)
        in_runs = sum(len(run.findings) for run in runs)
        loose = sum(len(call.findings) for call in stream.rest.loose_calls)
        assert in_runs + loose == expected
        assert len(runs) == len(whole.runs)
        # A call that arrived after its run was handed out is named, never silently dropped.
        late = [p for p in stream.rest.problems if "arrived after its run" in p]
        assert len(late) == len(stream.rest.loose_calls)


def test_a_run_read_twice_is_handed_out_once(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record_runs(path, 3, per_line=3)
    lines = path.read_text().splitlines(keepends=True)
    stream = RecordingStream([*lines, *lines])
    assert len(list(stream)) == 3
    assert sum("already read" in p for p in stream.rest.problems) >= 3


def test_runs_without_a_summary_come_out_at_the_end_in_start_order(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record_runs(path, 6, summaries=False)
    runs = list(RecordingStream(path))
    assert [run.ledger for run in runs] == [None] * 6
    starts = [run.start_time_unix_nano or 0 for run in runs]
    assert starts == sorted(starts)


def test_past_the_bound_on_open_traces_the_oldest_is_settled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.jsonl"
    record_runs(path, 8, summaries=False, per_line=1)
    monkeypatch.setattr(reader, "MAX_OPEN_TRACES_READ", 3)
    stream = RecordingStream(path)
    runs = list(stream)
    assert len(runs) == 8  # nothing lost: settled early, or at the end
    settled = [p for p in stream.rest.problems if "more than 3 traces were open" in p]
    assert len(settled) == 5


def test_problems_past_the_bound_are_counted_not_kept() -> None:
    lines = ["not json\n"] * (MAX_LISTED_PROBLEMS + 7)
    stream = RecordingStream(lines)
    assert list(stream) == []
    assert len(stream.rest.problems) == MAX_LISTED_PROBLEMS
    assert stream.rest.unlisted_problems == 7
    report = streamed_report(lines)
    assert f"problems ({MAX_LISTED_PROBLEMS + 7}):" in report
    assert "... and 7 more, not listed" in report
    assert report.rstrip().endswith(f"{MAX_LISTED_PROBLEMS + 7} problems")


def test_a_missing_file_is_said_when_the_stream_is_made(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        RecordingStream(tmp_path / "nowhere.jsonl")


def test_the_summary_line_of_a_stream_counts_what_it_wrote(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record_runs(path, 4)
    report = streamed_report(path)
    last = report.rstrip().splitlines()[-1]
    assert last.startswith("summary: 4 runs, 4 findings")
