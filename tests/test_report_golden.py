"""The report of a fixed recording, byte for byte: what the reader and the text report
printed before their hot paths were reworked for speed.

``data/demo_runs.jsonl`` holds four runs of the demo's scripted agent (tool spans with
findings and witnesses, run spans, summaries with their ledger), two runs a line, as the
recording's exporter wrote them; ``demo_runs.plain.txt`` and ``demo_runs.verbose.txt`` are
the reports written of it. A change to the reader or the report that alters a byte of either fails
here; one that means to must regenerate them (the last did so to print each check's ceiling once,
after the runs, rather than in every finding).
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from context_integrity import COLUMN_TYPE_CEILING
from context_integrity.recording import RecordingStream, read_recording_text
from context_integrity.report import format_report, write_report

DATA = Path(__file__).parent / "data"


def _lines() -> list[str]:
    return (DATA / "demo_runs.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)


def _expected(verbose: bool) -> str:
    return (DATA / f"demo_runs.{'verbose' if verbose else 'plain'}.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("verbose", [False, True])
def test_the_streamed_report_is_the_one_written_before(verbose: bool) -> None:
    out = io.StringIO()
    write_report(RecordingStream(_lines(), details=verbose), out, verbose=verbose)
    assert out.getvalue() == _expected(verbose)


@pytest.mark.parametrize("verbose", [False, True])
def test_the_report_read_whole_is_the_one_written_before(verbose: bool) -> None:
    assert format_report(read_recording_text(_lines()), verbose=verbose) == _expected(verbose)


def test_the_fixed_recording_has_what_the_report_prints() -> None:
    recording = read_recording_text(_lines())
    assert len(recording.runs) == 4
    assert all(run.findings and run.ledger for run in recording.runs)
    assert not recording.problems


@pytest.mark.parametrize("verbose", [False, True])
def test_the_ceiling_is_said_once_not_in_every_finding(verbose: bool) -> None:
    recording = read_recording_text(_lines())
    quoted = [f for run in recording.runs for f in run.findings if COLUMN_TYPE_CEILING in (f.message or "")]
    assert len(quoted) == 12  # every column finding of the four runs quotes it
    report = " ".join(format_report(recording, verbose=verbose).split())
    assert report.count(" ".join(COLUMN_TYPE_CEILING.split())) == 1
    assert f"column-type-mismatch @write: {' '.join(COLUMN_TYPE_CEILING.split())}" in report
