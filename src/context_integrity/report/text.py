"""The text report of a recording: per run its findings and ledger, then the
calls outside any run, the findings counter, the problems, what the checks that filed
can never see, and a summary line.

A check quotes its ceiling (what it can never see) into every finding it files; the report
prints each finding without it and says each ceiling once, after the runs (:func:`split_ceiling`).

:func:`write_report` writes it as it reads: each run is written as soon as the
reader hands it out and then let go, so a report of a recording of any size
holds only the runs in flight. :func:`format_report` renders a whole
:class:`Recording` read before, with the same lines.
"""

from __future__ import annotations

import functools
import io
import operator
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final, Protocol, TextIO

from ..judge.registry import REGISTRY
from ..ledger import ROW_FIELDS
from ..recording.model import FindingRecord, Recording, RunRecord, ToolCallRecord
from ..recording.reader import RecordingStream
from ..telemetry.schema import COUNT_FIELDS, LAST_FIRED_FIELD, ROW_IDENTITY, names
from ..text import plural, visible, visible_lines
from .arming import unarmed_hints

_WIDTH: Final = 100
_ABSENT: Final = "-"


@functools.lru_cache(maxsize=64)
def _second(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


def _when(nanos: int | None) -> str:
    """An epoch-nanosecond time as UTC ISO 8601 with milliseconds."""
    if nanos is None:
        return _ABSENT
    seconds, rest = divmod(nanos, 1_000_000_000)
    try:
        return f"{_second(seconds)}.{rest // 1_000_000:03d}Z"
    except (OverflowError, ValueError, OSError):  # a record built by hand, past any time (the reader clamps)
        return "(out of range)"


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


_EXISTED: Final[dict[bool | None, str]] = {True: "yes", False: "no", None: "?"}
_HEADER: Final[tuple[str, ...]] = tuple(_column_label(f) for f in ROW_FIELDS)
_NUMERIC: Final[tuple[bool, ...]] = tuple(f in COUNT_FIELDS for f in ROW_FIELDS)
_MAX_WRAPPED: Final = 1024  # distinct texts whose wrapping is remembered: messages recur run after run


@functools.lru_cache(maxsize=_MAX_WRAPPED)
def _wrapped(text: str, indent: str) -> tuple[str, ...]:
    """``text`` wrapped to the report width: greedy, words kept whole unless longer than a line.

    Shown before it is wrapped (:func:`~context_integrity.text.visible`): a newline or another
    control a recorded string holds is written, never obeyed."""
    text = visible(text)
    limit = max(_WIDTH - len(indent), 1)
    bare = indent.rstrip()
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        words = paragraph.split()
        if not words:
            lines.append(bare)
            continue
        current: list[str] = []
        size = 0
        for word in words:
            while len(word) > limit:
                if current:
                    lines.append(indent + " ".join(current))
                    current, size = [], 0
                lines.append(indent + word[:limit])
                word = word[limit:]
            if current and size + 1 + len(word) > limit:
                lines.append(indent + " ".join(current))
                current, size = [], 0
            size += len(word) + (1 if current else 0)
            current.append(word)
        if current:
            lines.append(indent + " ".join(current))
    return tuple(lines)


# The ceiling of each (kind, seam) asked about, for the registry's entries as they were when asked.
_ceilings: dict[tuple[str | None, str | None], str] = {}
_ceilings_of: list[object] = [None]


def _ceiling(kind: str | None, seam: str | None) -> str:
    entries = REGISTRY.entries
    if _ceilings_of[0] is not entries:  # a check registered or unregistered since
        _ceilings.clear()
        _ceilings_of[0] = entries
    key = (kind, seam)
    found = _ceilings.get(key)
    if found is None:
        found = REGISTRY.ceiling_of(kind, seam)
        if len(_ceilings) < _MAX_WRAPPED:  # kinds a recording names are few; a hostile one is not kept
            _ceilings[key] = found
    return found


def split_ceiling(message: str, kind: str | None, seam: str | None) -> tuple[str, str]:
    """``message`` without the ceiling its check quoted into it, and that ceiling (``""``: none quoted)."""
    ceiling = _ceiling(kind, seam)
    at = message.find(ceiling) if ceiling else -1
    if at < 0:
        return message, ""
    before, after = message[:at].rstrip(" "), message[at + len(ceiling) :].lstrip(" ")
    return (f"{before} {after}" if before and after else before or after), ceiling


def _finding_lines(
    number: int, finding: FindingRecord, indent: str, *, verbose: bool, ceilings: dict[str, list[str]]
) -> list[str]:
    message, ceiling = split_ceiling(finding.message or "", finding.kind, finding.seam)
    if ceiling:
        quoted_by = ceilings.setdefault(ceiling, [])
        row = f"{finding.kind} @{finding.seam}"
        if row not in quoted_by:
            quoted_by.append(row)
    head = f"{indent}{number}. {finding.kind or '?'} @{finding.seam or '?'}"
    if finding.advisory:
        head += " (advisory)"
    if finding.tool_name:
        head += f", tool {finding.tool_name}"
    if finding.call_id:
        head += f", call {finding.call_id}"
    body = indent + "   "
    lines = [head, *_wrapped(message or "(no message recorded)", body)]
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
            lines.extend(_wrapped(f"witness {index}: {rendered or '(empty)'}", body))
    return lines


_PLAIN_FIELDS: Final = tuple(f for f in ROW_FIELDS if f != LAST_FIRED_FIELD)
_PLAIN_VALUES: Final = operator.itemgetter(*_PLAIN_FIELDS)
_LAST_FIRED_COLUMN: Final = ROW_FIELDS.index(LAST_FIRED_FIELD)
_LAST_FIRED_LABEL: Final = _column_label(LAST_FIRED_FIELD)
# The fast table appends the last-fired cell after every other column.
assert len(ROW_FIELDS) - 1 == _LAST_FIRED_COLUMN, "the last-fired column must be the table's last"


def _cells(row: dict[str, object]) -> list[str]:
    try:
        cells = list(map(str, _PLAIN_VALUES(row)))
    except KeyError:  # a row that lacks a field (said among the problems)
        cells = [_ABSENT if (value := row.get(f)) is None else str(value) for f in _PLAIN_FIELDS]
    cells.insert(_LAST_FIRED_COLUMN, _last_fired(row.get(LAST_FIRED_FIELD)))
    return cells


def _table_lines(
    indent: str,
    table: list[list[str]],
    header: tuple[str, ...] = _HEADER,
    numeric: tuple[bool, ...] = _NUMERIC,
) -> tuple[str, ...]:
    widths = [max(map(len, column)) for column in zip(header, *table, strict=True)]
    # One format per table: right-aligned counts, left-aligned names.
    layout = (
        indent
        + "  "
        + "  ".join(
            f"{{:{'>' if right else '<'}{width}}}" for width, right in zip(widths, numeric, strict=True)
        )
    )
    return (layout.format(*header).rstrip(), *(layout.format(*cells).rstrip() for cells in table))


@functools.lru_cache(maxsize=256)
def _plain_table(indent: str, rows: tuple[tuple[object, ...], ...]) -> tuple[str, ...]:
    """The table without its last-fired column, for rows whose other cells are ``rows``.

    Counts recur from run to run while the timestamps do not; the last-fired column
    is the last one and left-aligned, so the rest of the table never depends on it.
    """
    cells = [[_ABSENT if v is None else str(v) for v in row] for row in rows]
    return _table_lines(indent, cells, _HEADER[:_LAST_FIRED_COLUMN], _NUMERIC[:_LAST_FIRED_COLUMN])


def _table(indent: str, ledger: list[dict[str, object]]) -> list[str]:
    try:
        plain = _plain_table(indent, tuple(map(_PLAIN_VALUES, ledger)))
    except (KeyError, TypeError):  # a row that lacks a field, or holds an unhashable value
        return list(_table_lines(indent, [_cells(row) for row in ledger]))
    lines = [f"{plain[0]}  {_LAST_FIRED_LABEL}"]
    for line, row in zip(plain[1:], ledger, strict=True):
        fired = row.get(LAST_FIRED_FIELD)
        lines.append(f"{line}  {_ABSENT}" if fired is None else f"{line}  {_last_fired(fired)}")
    return lines


def _ledger_lines(run: RunRecord, indent: str, never_ran: list[dict[str, object]]) -> list[str]:
    if run.ledger is None:
        return [f"{indent}ledger: none recorded (no {names.DISPOSITION_SPAN} span for this run)"]
    existed = _EXISTED[run.work_existed]
    lines = [f"{indent}ledger (work existed: {existed}, posture: {run.posture or '?'}):"]
    lines.extend(_table(indent, run.ledger))
    if run.totals:
        lines.append(_totals_line(indent, tuple(run.totals.items())))
    for rows, sentence in unarmed_hints(run.ledger):
        lines.append(f"{indent}unarmed {rows}: {sentence}")
    check_field, seam_field = ROW_IDENTITY
    for row in never_ran:
        lines.append(
            f"{indent}! registered but never ran: {row.get(check_field)} @{row.get(seam_field)} "
            "reads all zero although work existed in this run"
        )
    return lines


@functools.lru_cache(maxsize=256)
def _totals_line(indent: str, items: tuple[tuple[str, int], ...]) -> str:
    totals = dict(items)
    ordered = [f for f in COUNT_FIELDS if f in totals] + sorted(set(totals) - set(COUNT_FIELDS))
    return f"{indent}totals: " + ", ".join(f"{_column_label(f)} {totals[f]}" for f in ordered)


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
        lines.extend(_wrapped(f"excused by an external ground: {rendered or '(no details)'}", indent))
    for error in call.internal_errors:
        rendered = ", ".join(f"{key} {value}" for key, value in error.items())
        lines.extend(_wrapped(f"context-integrity shielded an internal error: {rendered}", indent))
    return lines


@dataclass(slots=True)
class _Tally:
    runs: int = 0
    findings: int = 0
    never_ran: int = 0
    # Each ceiling a printed finding quoted (and left out of its message), with the rows that quoted it.
    ceilings: dict[str, list[str]] = field(default_factory=dict)


def _run_lines(index: int, run: RunRecord, *, verbose: bool, tally: _Tally) -> list[str]:
    out: list[str] = []
    outcome = run.outcome or f"span status {run.status}"
    out.append(f"run {index}: agent {run.agent}, trace {run.trace_id}, outcome {outcome}")
    out.append(
        f"  started {_when(run.start_time_unix_nano)}, took "
        f"{_duration(run.start_time_unix_nano, run.end_time_unix_nano)}, "
        f"{plural(len(run.tool_calls), 'tool call')}"
    )
    if run.status_message:
        out.extend(_wrapped(f"status message: {run.status_message}", "  "))
    if run.findings:
        out.append(f"  findings ({len(run.findings)}):")
        for number, finding in enumerate(run.findings, start=1):
            out.extend(_finding_lines(number, finding, "    ", verbose=verbose, ceilings=tally.ceilings))
    else:
        out.append("  findings: none")
    if run.notes:  # a run judged from a trace: what reading it assumed
        out.append("  notes:")
        for note in run.notes:
            out.extend(_wrapped(f"- {note}", "    "))
    if run.unreachable:
        out.append(f"  could not be judged ({len(run.unreachable)}):")
        for reason in run.unreachable:
            out.extend(_wrapped(f"- {reason}", "    "))
    for call in (*run.tool_calls, *run.other_calls):
        if call.external_grounds or call.internal_errors:
            out.append(f"  {_call_header(call)}:")
            out.extend(_call_extras(call, "    "))
    if run.internal_errors:
        from_calls = {id(e) for call in (*run.tool_calls, *run.other_calls) for e in call.internal_errors}
        for error in [e for e in run.internal_errors if id(e) not in from_calls]:
            rendered = ", ".join(f"{key} {value}" for key, value in error.items())
            out.extend(_wrapped(f"context-integrity shielded an internal error: {rendered}", "  "))
    never_ran = run.never_ran()
    out.extend(_ledger_lines(run, "  ", never_ran))
    out.append("")
    tally.runs += 1
    tally.findings += len(run.findings)
    tally.never_ran += len(never_ran)
    return out


def _rest_lines(recording: Recording, *, verbose: bool, tally: _Tally) -> list[str]:
    out: list[str] = []
    loose_findings = sum(len(call.findings) for call in recording.loose_calls)
    if recording.loose_calls:
        out.append(f"calls outside any run ({len(recording.loose_calls)}):")
        for call in recording.loose_calls:
            out.append(f"  {_call_header(call)}, trace {call.trace_id}")
            for number, finding in enumerate(call.findings, start=1):
                out.extend(_finding_lines(number, finding, "    ", verbose=verbose, ceilings=tally.ceilings))
            out.extend(_call_extras(call, "    "))
        out.append("")

    if recording.finding_counts:
        out.append("findings counter (latest recorded values):")
        for (kind, seam, tool), count in recording.finding_counts.items():
            out.append(f"  {kind} @{seam}, tool {tool or _ABSENT}: {count}")
        out.append("")

    if recording.dropped_spans:
        traces = recording.dropped_traces
        out.append(
            f"dropped: {plural(recording.dropped_spans, 'span')} could not be kept in the recording "
            "(its writer fell behind); the runs of these traces are incomplete:"
        )
        out.extend(_wrapped(", ".join(traces) if traces else "(traces not recorded)", "  "))
        out.append("")

    if tally.ceilings:
        out.append(
            "what the checks that filed can never see (each ceiling once; the findings above leave it out):"
        )
        for ceiling, rows in tally.ceilings.items():
            out.extend(_wrapped(f"{', '.join(rows)}: {ceiling}", "  "))
        out.append("")

    problems = len(recording.problems) + recording.unlisted_problems
    if problems:
        out.append(f"problems ({problems}):")
        for problem in recording.problems:
            out.extend(_wrapped(problem, "  "))
        if recording.unlisted_problems:
            out.append(f"  ... and {recording.unlisted_problems} more, not listed")
        out.append("")

    summary = [plural(tally.runs, "run"), plural(tally.findings + loose_findings, "finding")]
    if recording.loose_calls:
        summary.append(plural(len(recording.loose_calls), "call") + " outside any run")
    summary.append(plural(tally.never_ran, "never-ran row"))
    if recording.dropped_spans:
        summary.append(plural(recording.dropped_spans, "dropped span"))
    summary.append(plural(problems, "problem"))
    out.append("summary: " + ", ".join(summary))
    return out


class RunStream(Protocol):
    """Runs read as they go (a :class:`RecordingStream`, judged runs): ``rest`` is whole once they are."""

    rest: Recording

    def __iter__(self) -> Iterator[RunRecord]: ...


def write_report(
    source: Recording | RecordingStream | RunStream, out: TextIO, *, verbose: bool = False
) -> None:
    """Write the report of a recording to ``out``, each run as soon as it is read."""
    runs: Iterable[RunRecord]
    if isinstance(source, Recording):
        runs, rest = source.runs, source
    else:
        runs, rest = source, source.rest
    if rest.source:
        out.write(f"recording: {visible(rest.source)}\n")
        if rest.rotated:
            out.write(
                visible(
                    f"  (it rotated: older records are in {rest.rotated}; "
                    f"read them with `context-integrity report {rest.rotated}`)"
                )
                + "\n"
            )
        out.write("\n")
    tally = _Tally()
    # Every line passes visible(): what a recording holds never reaches the terminal as a control.
    for run in runs:
        lines = _run_lines(tally.runs + 1, run, verbose=verbose, tally=tally)
        lines.append("")  # one write per run, ending in its newline
        out.write("\n".join(visible_lines(lines)))
    out.write("\n".join(visible_lines(_rest_lines(rest, verbose=verbose, tally=tally))))
    out.write("\n")


def format_report(recording: Recording, *, verbose: bool = False) -> str:
    """The report of a :class:`Recording` read before, as one string."""
    buffer = io.StringIO()
    write_report(recording, buffer, verbose=verbose)
    return buffer.getvalue()
