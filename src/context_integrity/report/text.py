"""The text report of a recording: per run its findings and ledger, then the
calls outside any run, the findings counter, the problems and a summary line."""

from __future__ import annotations

import textwrap
from datetime import datetime, timezone
from typing import Final

from ..ledger import ROW_FIELDS
from ..recording.model import FindingRecord, Recording, RunRecord, ToolCallRecord
from ..telemetry import names
from ..telemetry.schema import COUNT_FIELDS, LAST_FIRED_FIELD, ROW_IDENTITY
from ..text import plural

_WIDTH: Final = 100
_ABSENT: Final = "-"


def _when(nanos: int | None) -> str:
    if nanos is None:
        return _ABSENT
    moment = datetime.fromtimestamp(nanos / 1e9, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _last_fired(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return _when(value * 1_000_000)
    return _ABSENT


def _duration(start: int | None, end: int | None) -> str:
    if start is None or end is None:
        return "?"
    seconds = (end - start) / 1e9
    return f"{seconds:.3f} s" if seconds < 10 else f"{seconds:.1f} s"


def _column_label(row_field: str) -> str:
    return row_field.removesuffix("_at").replace("_", " ")


def _wrap(text: str, indent: str) -> list[str]:
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        lines.extend(
            textwrap.wrap(
                paragraph,
                width=_WIDTH,
                initial_indent=indent,
                subsequent_indent=indent,
                break_long_words=True,
                break_on_hyphens=False,
            )
            or [indent.rstrip()]
        )
    return lines


def _finding_lines(number: int, finding: FindingRecord, indent: str, *, verbose: bool) -> list[str]:
    where = f"{finding.kind or '?'} @{finding.seam or '?'}"
    if finding.advisory:
        where += " (advisory)"
    parts = [where]
    if finding.tool_name:
        parts.append(f"tool {finding.tool_name}")
    if finding.call_id:
        parts.append(f"call {finding.call_id}")
    lines = [f"{indent}{number}. " + ", ".join(parts)]
    body = indent + "   "
    lines.extend(_wrap(finding.message or "(no message recorded)", body))
    if verbose:
        lines.append(f"{body}on span: {finding.span_name} ({finding.span_id})")
        if finding.subjects:
            lines.append(f"{body}subjects: {', '.join(finding.subjects)}")
        if finding.predicate is not None:
            lines.append(f"{body}predicate: {finding.predicate}")
        if finding.epoch is not None:
            lines.append(f"{body}epoch: {finding.epoch}")
        if finding.identity:
            lines.append(f"{body}identity: {finding.identity}")
        for index, witness in enumerate(finding.witnesses):
            rendered = "; ".join(f"{key}={witness[key]}" for key in names.WITNESS_FIELDS if key in witness)
            lines.extend(_wrap(f"witness {index}: {rendered or '(empty)'}", body))
    return lines


def _ledger_lines(run: RunRecord, indent: str) -> list[str]:
    if run.ledger is None:
        return [f"{indent}ledger: none recorded (no {names.DISPOSITION_SPAN} span for this run)"]
    existed = {True: "yes", False: "no", None: "?"}[run.work_existed]
    lines = [f"{indent}ledger (work existed: {existed}, posture: {run.posture or '?'}):"]
    header = [_column_label(f) for f in ROW_FIELDS]
    table: list[list[str]] = []
    for row in run.ledger:
        cells = []
        for row_field in ROW_FIELDS:
            value = row.get(row_field)
            if row_field == LAST_FIRED_FIELD:
                cells.append(_last_fired(value))
            else:
                cells.append(_ABSENT if value is None else str(value))
        table.append(cells)
    widths = [max(len(line[i]) for line in [header, *table]) for i in range(len(header))]
    numeric = [f in COUNT_FIELDS for f in ROW_FIELDS]

    def render(cells: list[str]) -> str:
        padded = [
            cell.rjust(width) if is_number else cell.ljust(width)
            for cell, width, is_number in zip(cells, widths, numeric, strict=True)
        ]
        return (indent + "  " + "  ".join(padded)).rstrip()

    lines.append(render(header))
    lines.extend(render(cells) for cells in table)
    if run.totals:
        ordered = [f for f in COUNT_FIELDS if f in run.totals] + sorted(set(run.totals) - set(COUNT_FIELDS))
        lines.append(f"{indent}totals: " + ", ".join(f"{_column_label(f)} {run.totals[f]}" for f in ordered))
    check_field, seam_field = ROW_IDENTITY
    for row in run.never_ran():
        lines.append(
            f"{indent}! registered but never ran: {row.get(check_field)} @{row.get(seam_field)} "
            "reads all zero although work existed in this run"
        )
    return lines


def _call_header(call: ToolCallRecord) -> str:
    parts = [call.name]
    if call.call_id:
        parts.append(f"call {call.call_id}")
    parts.append(f"status {call.status}")
    if call.error_type:
        parts.append(f"error {call.error_type}")
    return ", ".join(parts)


def _call_extras(call: ToolCallRecord, indent: str) -> list[str]:
    lines: list[str] = []
    for ground in call.external_grounds:
        rendered = ", ".join(f"{key} {value}" for key, value in ground.items())
        lines.extend(_wrap(f"excused by an external ground: {rendered or '(no details)'}", indent))
    for error in call.internal_errors:
        rendered = ", ".join(f"{key} {value}" for key, value in error.items())
        lines.extend(_wrap(f"context-integrity shielded an internal error: {rendered}", indent))
    return lines


def format_report(recording: Recording, *, verbose: bool = False) -> str:
    """The recording as plain text: per run its findings and ledger, then the
    calls outside any run, the findings counter, the problems and a summary."""
    out: list[str] = []
    if recording.source:
        out.append(f"recording: {recording.source}")
        out.append("")
    never_ran_total = 0
    for index, run in enumerate(recording.runs, start=1):
        outcome = run.outcome or f"span status {run.status}"
        out.append(f"run {index}: agent {run.agent}, trace {run.trace_id}, outcome {outcome}")
        out.append(
            f"  started {_when(run.start_time_unix_nano)}, took "
            f"{_duration(run.start_time_unix_nano, run.end_time_unix_nano)}, "
            f"{plural(len(run.tool_calls), 'tool call')}"
        )
        if run.status_message:
            out.extend(_wrap(f"status message: {run.status_message}", "  "))
        if run.findings:
            out.append(f"  findings ({len(run.findings)}):")
            for number, finding in enumerate(run.findings, start=1):
                out.extend(_finding_lines(number, finding, "    ", verbose=verbose))
        else:
            out.append("  findings: none")
        for call in [*run.tool_calls, *run.other_calls]:
            extras = _call_extras(call, "    ")
            if extras:
                out.append(f"  {_call_header(call)}:")
                out.extend(extras)
        from_calls = {id(e) for call in [*run.tool_calls, *run.other_calls] for e in call.internal_errors}
        for error in [e for e in run.internal_errors if id(e) not in from_calls]:
            rendered = ", ".join(f"{key} {value}" for key, value in error.items())
            out.extend(_wrap(f"context-integrity shielded an internal error: {rendered}", "  "))
        out.extend(_ledger_lines(run, "  "))
        never_ran_total += len(run.never_ran())
        out.append("")

    loose_findings = sum(len(call.findings) for call in recording.loose_calls)
    if recording.loose_calls:
        out.append(f"calls outside any run ({len(recording.loose_calls)}):")
        for call in recording.loose_calls:
            out.append(f"  {_call_header(call)}, trace {call.trace_id}")
            for number, finding in enumerate(call.findings, start=1):
                out.extend(_finding_lines(number, finding, "    ", verbose=verbose))
            out.extend(_call_extras(call, "    "))
        out.append("")

    if recording.finding_counts:
        out.append("findings counter (latest recorded values):")
        for (kind, seam, tool), count in recording.finding_counts.items():
            out.append(f"  {kind} @{seam}, tool {tool or _ABSENT}: {count}")
        out.append("")

    if recording.problems:
        out.append(f"problems ({len(recording.problems)}):")
        for problem in recording.problems:
            out.extend(_wrap(problem, "  "))
        out.append("")

    run_findings = sum(len(run.findings) for run in recording.runs)
    summary = [
        plural(len(recording.runs), "run"),
        plural(run_findings + loose_findings, "finding"),
    ]
    if recording.loose_calls:
        summary.append(plural(len(recording.loose_calls), "call") + " outside any run")
    summary.append(plural(never_ran_total, "never-ran row"))
    summary.append(plural(len(recording.problems), "problem"))
    out.append("summary: " + ", ".join(summary))
    return "\n".join(out) + "\n"
