"""The HTML report of a recording: one self-contained page (no script, no network, no external asset).

Per run: its tool and model calls as a timeline, each finding with its message beside its
witnesses, and the ledger as a table in which never-ran and unreachable rows stand out. Across
runs: findings per kind and per tool as bar charts. Every recorded string is shown
(:func:`~context_integrity.text.visible`: no control or bidi override is written raw) and escaped.

The page is written as the recording is read: the first :data:`~context_integrity.limits.MAX_HTML_RUNS`
runs are shown in full, the rest are counted (in the summary and the charts), so a recording of any
size makes a page a browser opens at once, in the memory of the runs in flight.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from html import escape
from typing import Final

from ..ledger import ROW_FIELDS
from ..limits import MAX_HTML_CHART_BARS, MAX_HTML_FINDINGS_PER_RUN, MAX_HTML_RUNS
from ..recording.model import FindingRecord, Recording, RunRecord, ToolCallRecord, row_untouched
from ..recording.reader import RecordingStream
from ..telemetry.schema import COUNT_FIELDS, LAST_FIRED_FIELD, names
from ..text import plural, visible
from .arming import unarmed_hints

_STYLE: Final = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d232b; background: #f6f7f9; }
header, main { max-width: 1200px; margin: 0 auto; padding: 16px 24px; }
header { border-bottom: 1px solid #d9dde3; background: #fff; max-width: none; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
section.run, section.summary { background: #fff; border: 1px solid #d9dde3; border-radius: 6px;
  padding: 8px 18px 16px; margin: 16px 0; }
.muted { color: #5b6572; } code { font: 12px ui-monospace, monospace; }
table { border-collapse: collapse; width: 100%; margin: 6px 0; }
th, td { border-bottom: 1px solid #e4e7eb; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f0f2f5; font-weight: 600; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.never-ran td { background: #fde2e1; font-weight: 600; } tr.unreachable td { background: #fff1cc; }
tr.fired td.findings { color: #b42318; font-weight: 700; }
.flag { display: inline-block; font-size: 11px; font-weight: 700; padding: 1px 6px; border-radius: 8px;
  background: #b42318; color: #fff; margin-left: 6px; } .flag.warn { background: #b54708; }
.flag.adv { background: #5b6572; }
.timeline { position: relative; border-left: 1px solid #c4cad3; margin: 6px 0 10px; }
.lane { position: relative; height: 22px; margin: 3px 0; }
.bar { position: absolute; height: 18px; top: 2px; min-width: 3px; border-radius: 3px; background: #4c78a8;
  color: #fff; font-size: 11px; line-height: 18px; padding: 0 4px; white-space: nowrap; overflow: visible; }
.bar.chat { background: #72b7b2; } .bar.err { background: #e45756; } .bar.found { outline: 2px solid #b42318; }
.finding { display: grid; grid-template-columns: minmax(260px, 1fr) minmax(320px, 1.3fr); gap: 14px;
  border: 1px solid #f1c4c0; border-left: 4px solid #b42318; border-radius: 4px; padding: 8px 12px;
  margin: 8px 0; background: #fffafa; } .finding.advisory { border-color: #d0d5dd; border-left-color: #5b6572;
  background: #fcfcfd; }
.finding .what { font-weight: 600; } .finding p { margin: 4px 0; }
.chart .row { display: grid; grid-template-columns: 260px 1fr 40px; align-items: center; gap: 8px; margin: 3px 0; }
.chart .fill { height: 14px; background: #b42318; border-radius: 2px; } .chart .fill.tool { background: #4c78a8; }
"""


def _e(value: object) -> str:
    # Controls and bidi overrides shown as their escapes: a recorded string cannot reorder the page.
    return escape(visible("" if value is None else str(value)), quote=True)


def _when(nanos: int | None) -> str:
    if nanos is None:
        return "-"
    try:
        return datetime.fromtimestamp(nanos / 1e9, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, ValueError, OSError):  # a record built by hand, past any time
        return "(out of range)"


def _last_fired(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value / 1000, tz=timezone.utc).strftime("%H:%M:%S.%f")[:-3]
        except (OverflowError, ValueError, OSError):
            return "(out of range)"
    return "-"


def _timeline(run: RunRecord) -> str:
    calls = sorted([*run.tool_calls, *run.other_calls], key=lambda c: c.start_time_unix_nano or 0)
    start, end = run.start_time_unix_nano, run.end_time_unix_nano
    if not calls or start is None or end is None or end <= start:
        return '<p class="muted">No calls with timings were recorded under this run.</p>'
    span = end - start
    lanes = []
    for call in calls:
        left = max(0.0, ((call.start_time_unix_nano or start) - start) / span * 100)
        width = max(
            0.4, ((call.end_time_unix_nano or end) - (call.start_time_unix_nano or start)) / span * 100
        )
        classes = ["bar"]
        if call.operation == names.OPERATION_CHAT:
            classes.append("chat")
        if call.status == "ERROR":
            classes.append("err")
        if call.findings:
            classes.append("found")
        label = call.name + (f" · {plural(len(call.findings), 'finding')}" if call.findings else "")
        lanes.append(
            f'<div class="lane"><div class="{" ".join(classes)}" style="left:{left:.2f}%;width:{width:.2f}%" '
            f'title="{_e(call.name)} ({_e(call.status)})">{_e(label)}</div></div>'
        )
    return f'<div class="timeline" aria-label="timeline">{"".join(lanes)}</div>'


def _witness_table(finding: FindingRecord) -> str:
    if not finding.witnesses:
        return '<p class="muted">No witness was recorded with this finding.</p>'
    head = "".join(f"<th>{_e(f)}</th>" for f in names.WITNESS_FIELDS)
    rows = "".join(
        "<tr>" + "".join(f"<td>{_e(w.get(f, ''))}</td>" for f in names.WITNESS_FIELDS) + "</tr>"
        for w in finding.witnesses
    )
    return f'<table class="witnesses"><tr>{head}</tr>{rows}</table>'


def _finding(finding: FindingRecord) -> str:
    where = [f"{finding.kind} @{finding.seam}"]
    if finding.tool_name:
        where.append(f"tool {finding.tool_name}")
    if finding.call_id:
        where.append(f"call {finding.call_id}")
    tag = '<span class="flag adv">advisory</span>' if finding.advisory else ""
    subjects = f'<p class="muted">about: {_e(", ".join(finding.subjects))}</p>' if finding.subjects else ""
    return (
        f'<div class="finding{" advisory" if finding.advisory else ""}">'
        f'<div><p class="what">{_e(" · ".join(where))}{tag}</p><p>{_e(finding.message)}</p>{subjects}'
        f'<p class="muted">span <code>{_e(finding.span_id)}</code> {_e(finding.span_name)}</p></div>'
        f"<div>{_witness_table(finding)}</div></div>"
    )


def _ledger(run: RunRecord) -> str:
    if run.ledger is None:
        return '<p><span class="flag">no ledger</span> No disposition summary was recorded for this run.</p>'
    head = "".join(f"<th>{_e(f.replace('_', ' '))}</th>" for f in ROW_FIELDS)
    body = []
    for row in run.ledger:
        classes = []
        note = ""
        if run.work_existed and row_untouched(row):
            classes.append("never-ran")
            note = '<span class="flag">registered but never ran</span>'
        elif isinstance(row.get("unreachable"), int) and row.get("unreachable"):
            classes.append("unreachable")
            note = '<span class="flag warn">unreachable: silent, not clean</span>'
        if isinstance(row.get("findings"), int) and row.get("findings"):
            classes.append("fired")
        cells = []
        for field in ROW_FIELDS:
            value = row.get(field)
            if field == LAST_FIRED_FIELD:
                cells.append(f"<td>{_e(_last_fired(value))}</td>")
            elif field in COUNT_FIELDS:
                extra = " findings" if field == "findings" else ""
                cells.append(f'<td class="n{extra}">{_e(0 if value is None else value)}</td>')
            else:
                cells.append(f"<td>{_e(value)}{note if field == 'seam' else ''}</td>")
        body.append(f'<tr class="{" ".join(classes)}">{"".join(cells)}</tr>')
    existed = {True: "yes", False: "no", None: "?"}[run.work_existed]
    arming = "".join(
        f"<li><b>{_e(check)}</b>: {_e(sentence)}</li>" for check, sentence in unarmed_hints(run.ledger)
    )
    return (
        f'<p class="muted">posture {_e(run.posture or "?")} · work existed: {existed} · '
        f'outcome {_e(run.outcome or "?")}</p><table class="ledger"><tr>{head}</tr>{"".join(body)}</table>'
        + (
            f'<p class="muted">Unarmed checks, and what arms them:</p><ul class="arming">{arming}</ul>'
            if arming
            else ""
        )
    )


def _judged(run: RunRecord) -> str:
    """A run judged from a trace: what reading it assumed, and what could not be judged, and why."""
    out = ""
    if run.notes:
        out += f'<ul class="muted">{"".join(f"<li>{_e(note)}</li>" for note in run.notes)}</ul>'
    if run.unreachable:
        items = "".join(f"<li>{_e(reason)}</li>" for reason in run.unreachable)
        out += f'<h3>Could not be judged <span class="flag warn">unreachable</span></h3><ul>{items}</ul>'
    return out


def _run(index: int, run: RunRecord) -> str:
    shown = run.findings[:MAX_HTML_FINDINGS_PER_RUN]
    findings = (
        "".join(_finding(f) for f in shown) or '<p class="muted">No findings were filed in this run.</p>'
    )
    if len(run.findings) > len(shown):
        findings += (
            f'<p class="muted">… and {plural(len(run.findings) - len(shown), "more finding")}, not shown '
            "(`context-integrity report -v` lists every one).</p>"
        )
    findings += _judged(run)
    return (
        f'<section class="run" id="run-{index}"><h2>Run {index}: {_e(run.agent)}</h2>'
        f'<p class="muted">trace <code>{_e(run.trace_id)}</code> · started {_e(_when(run.start_time_unix_nano))} · '
        f"{plural(len(run.tool_calls), 'tool call')} · {plural(len(run.findings), 'finding')}</p>"
        f"<h3>Timeline</h3>{_timeline(run)}<h3>Findings</h3>{findings}<h3>Ledger</h3>{_ledger(run)}</section>"
    )


_OTHER: Final = "(all others)"


def _chart(title: str, counts: Mapping[str, int], css: str) -> str:
    if not counts:
        return f'<h3>{_e(title)}</h3><p class="muted">Nothing to chart: no findings were filed.</p>'
    top = max(counts.values())
    rows = "".join(
        f'<div class="row"><span>{_e(label)}</span><div class="fill {css}" style="width:{count / top * 100:.1f}%">'
        f"</div><span>{count}</span></div>"
        for label, count in sorted(counts.items(), key=lambda item: (item[0] == _OTHER, -item[1], item[0]))
    )
    return f'<h3>{_e(title)}</h3><div class="chart">{rows}</div>'


class _Bars(Counter[str]):
    """Counts per label, of at most :data:`MAX_HTML_CHART_BARS` labels: past them, one bar for all others."""

    def add(self, label: str) -> None:
        if label in self or len(self) < MAX_HTML_CHART_BARS - 1:
            self[label] += 1
        else:
            self[_OTHER] += 1


def _loose(calls: list[ToolCallRecord]) -> str:
    if not calls:
        return ""
    findings = [f for call in calls for f in call.findings]
    items = "".join(_finding(f) for f in findings[:MAX_HTML_FINDINGS_PER_RUN])
    if len(findings) > MAX_HTML_FINDINGS_PER_RUN:
        items += (
            f'<p class="muted">… and {plural(len(findings) - MAX_HTML_FINDINGS_PER_RUN, "more finding")}.</p>'
        )
    return (
        f'<section class="run"><h2>Calls outside any run ({len(calls)})</h2>'
        f"{items or '<p class=muted>No findings.</p>'}</section>"
    )


def format_html(recording: Recording | RecordingStream, *, title: str = "context-integrity report") -> str:
    """The recording as one self-contained HTML page; a :class:`RecordingStream` is read as the page
    is written (the first :data:`~context_integrity.limits.MAX_HTML_RUNS` runs in full, the rest
    counted)."""
    runs: Iterable[RunRecord]
    if isinstance(recording, RecordingStream):
        runs, rest = recording, recording.rest
    else:
        runs, rest = recording.runs, recording
    by_kind, by_tool = _Bars(), _Bars()
    sections: list[str] = []
    run_count = findings = never_ran = 0
    for run in runs:
        run_count += 1
        never_ran += len(run.never_ran())
        for finding in run.findings:
            findings += 1
            if finding.kind:
                by_kind.add(finding.kind)
            by_tool.add(finding.tool_name or "(no tool)")
        if run_count <= MAX_HTML_RUNS:
            sections.append(_run(run_count, run))
    for finding in (f for call in rest.loose_calls for f in call.findings):
        findings += 1
        if finding.kind:
            by_kind.add(finding.kind)
        by_tool.add(finding.tool_name or "(no tool)")
    if run_count > MAX_HTML_RUNS:
        sections.append(
            f'<section class="run"><h2>{plural(run_count - MAX_HTML_RUNS, "more run")}</h2>'
            f'<p class="muted">The page shows the first {MAX_HTML_RUNS} of {plural(run_count, "run")} in full '
            "(limits.MAX_HTML_RUNS); the summary and the charts above count every one. "
            "<code>context-integrity report</code> prints them all.</p></section>"
        )
    problem_count = len(rest.problems) + rest.unlisted_problems
    problems = "".join(f"<li>{_e(p)}</li>" for p in rest.problems)
    if rest.unlisted_problems:
        problems += f"<li>… and {rest.unlisted_problems} more, not listed</li>"
    summary = (
        f"{plural(run_count, 'run')} · {plural(findings, 'finding')} · "
        f"{plural(never_ran, 'never-ran row')} · {plural(problem_count, 'problem')}"
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # Nothing may load from anywhere: the page is read offline, attached to a ticket, opened in CI.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>"
        f'<header><h1>{_e(title)}</h1><p class="muted">{_e(rest.source or "")}</p>'
        f'<p id="summary">{_e(summary)}</p></header><main>'
        f'<section class="summary"><h2>Across runs</h2>{_chart("Findings by kind", by_kind, "")}'
        f"{_chart('Findings by tool', by_tool, 'tool')}</section>"
        + "".join(sections)
        + _loose(rest.loose_calls)
        + (
            f'<section class="run"><h2>Problems reading the recording</h2><ul>{problems}</ul></section>'
            if problems
            else ""
        )
        + "</main></body></html>\n"
    )
