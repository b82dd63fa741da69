"""Judged runs rendered by the one set of renderers: the text and HTML reports and find_context_errors.

The laws under test: a judged run becomes the record a recording reads back as, each finding encoded
and decoded by the telemetry's own pair and on its span; the reports and ``find_context_errors``
print, beside the ledger, what could not be judged and why, and the notes the reading made.
"""

from __future__ import annotations

from pathlib import Path

from tests.traces.shapes import document, triage_book, triage_trace, write_lines

from context_integrity.judge import Dials
from context_integrity.report import find_context_errors, format_html, format_report
from context_integrity.traces import judge_runs, read_runs, recording_of


def test_a_judged_run_renders_like_a_recorded_one_with_what_it_could_not_judge(tmp_path: Path) -> None:
    captured, uncaptured = triage_trace(call_ids=False), triage_trace(capture=False)
    path = write_lines(tmp_path / "t.jsonl", [document(captured.spans), document(uncaptured.spans)])
    runs = read_runs(path)
    judged = list(judge_runs(runs, triage_book(), Dials(check_column_types="warn")))
    recording = recording_of(judged, source=runs.description, problems=runs.problems, spans=runs.spans)
    assert recording.spans == len(captured.spans) + len(uncaptured.spans)
    first, second = recording.runs
    assert [(f.kind, f.seam, f.tool_name, f.call_id, f.span_id) for f in first.findings] == [
        (f.finding.kind, f.finding.seam, f.tool_name, f.call_id, f.span_id) for f in judged[0].findings
    ]
    assert first.findings and first.findings[0].message == judged[0].findings[0].finding.message
    assert [c.tool_name for c in first.tool_calls] == ["list_hosts", "host_paths"]
    assert first.ledger == [row.as_dict() for row in judged[0].ledger]
    text = format_report(recording)
    assert "read as genai" in text and "joined to the model's call" in text
    assert "could not be judged" in text and "gen_ai.tool.call.result" in text
    assert "content capture is off" in format_html(recording)
    answer = find_context_errors(recording)
    assert "could not be judged" in answer and "content capture is off" in answer
    assert second.unreachable and not first.unreachable
