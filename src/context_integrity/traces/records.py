"""Judged runs as the records a recording reads back as, so one renderer shows both.

:func:`run_record` turns a :class:`~.replay.JudgedRun` into a
:class:`~context_integrity.recording.RunRecord`: each finding encoded and decoded by the same pair
the telemetry writes and the recording reader reads (:mod:`context_integrity.telemetry.schema`), on
the span it belongs on; the ledger; the tool calls. The text and HTML reports and
``find_context_errors`` then render a judged run as they render a recorded one, with the run's notes
and its unreachable encounters' reasons beside the ledger.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..recording.model import FindingRecord, Recording, RunRecord, ToolCallRecord
from ..telemetry.schema import decode_finding, finding_attributes, names
from .model import ModelStep, ToolStep
from .problems import Problems
from .replay import JudgedFinding, JudgedRun


def finding_record(judged: JudgedFinding, trace_id: str) -> FindingRecord:
    """A judged finding as a recording reads it back."""
    attributes = finding_attributes(judged.finding, tool_name=judged.tool_name, call_id=judged.call_id)
    return decode_finding(
        attributes, [], FindingRecord, judged.span_name, judged.time_unix_nano, trace_id, judged.span_id
    )


def run_record(judged: JudgedRun) -> RunRecord:
    run = judged.run
    record = RunRecord(
        trace_id=run.trace_id,
        span_id=run.span_id,
        parent_span_id=None,
        agent=run.agent_name,
        name=run.name or names.run_span_name(run.agent_name),
        status=run.status,
        status_message=run.status_message,
        start_time_unix_nano=run.start_time_unix_nano,
        end_time_unix_nano=run.end_time_unix_nano,
    )
    by_span: dict[str, list[FindingRecord]] = {}
    for finding in judged.findings:
        found = finding_record(finding, run.trace_id)
        record.findings.append(found)
        by_span.setdefault(finding.span_id, []).append(found)
    for step in run.steps:
        if isinstance(step, ToolStep):
            record.tool_calls.append(_call(run.trace_id, run.span_id, step, by_span.get(step.span_id, [])))
        elif isinstance(step, ModelStep) and step.span_id in by_span:
            record.other_calls.append(_call(run.trace_id, run.span_id, step, by_span[step.span_id]))
    record.ledger = [row.as_dict() for row in judged.ledger]
    record.totals = judged.totals
    record.posture = judged.dials.reported_posture()
    record.work_existed = judged.work_existed
    record.outcome = "error" if run.status == "error" else "ok"
    record.notes = [f"read as {', '.join(run.dialects) or 'no known dialect'}", *run.notes]
    record.notes.extend(f"{m.what}: {m.why}" for m in run.missing)
    record.notes.extend(f"context-integrity shielded an internal error: {e}" for e in judged.internal_errors)
    record.unreachable = [u.sentence() for u in judged.unreachable]
    return record


def _call(
    trace_id: str, run_span: str, step: ModelStep | ToolStep, findings: list[FindingRecord]
) -> ToolCallRecord:
    is_tool = isinstance(step, ToolStep)
    return ToolCallRecord(
        trace_id=trace_id,
        span_id=step.span_id,
        parent_span_id=run_span,
        name=step.name
        or (names.tool_span_name(step.tool_name) if isinstance(step, ToolStep) else "model call"),
        operation=names.OPERATION_EXECUTE_TOOL if is_tool else names.OPERATION_CHAT,
        tool_name=step.tool_name if isinstance(step, ToolStep) else None,
        call_id=step.call_id if isinstance(step, ToolStep) else None,
        tool_type=None,
        status="error" if step.error is not None else "unset",
        status_message=step.error or "",
        start_time_unix_nano=step.start_time_unix_nano,
        end_time_unix_nano=step.end_time_unix_nano,
        findings_count=len(findings),
        findings_kinds=list(dict.fromkeys(f.kind for f in findings)),
        findings=findings,
    )


def recording_of(
    judged: Iterable[JudgedRun], *, source: str | None = None, problems: Problems | None = None
) -> Recording:
    """Judged runs, with what reading them could not use, as one :class:`Recording` for the renderers."""
    recording = Recording(source=source)
    recording.runs = [run_record(run) for run in judged]
    if problems is not None:
        recording.problems = list(problems.listed)
        recording.unlisted_problems = problems.unlisted
    return recording
