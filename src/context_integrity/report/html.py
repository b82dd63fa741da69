"""The HTML report of a recording: one self-contained page (no script, no network, no external asset).

Per run: a waterfall like a trace viewer's (one row per span -- the run, each model call, each tool
call -- on a time axis with ticks, findings marked on the spans that carry them, a legend), each
finding with its message beside its witnesses, and the ledger as a table in which never-ran and
unreachable rows stand out, with what arms each unarmed check. Across runs: findings per kind and per
tool as bar charts, and how to read the page (what a witness's epoch and stratum mean). Every
recorded string is shown (:func:`~context_integrity.text.visible`: no control or bidi override is
written raw) and escaped; every table wraps inside its card. One function renders each section.

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
.waterfall { border: 1px solid #e4e7eb; border-radius: 4px; font-size: 12px; margin: 6px 0 10px; }
.wf-row { display: grid; grid-template-columns: minmax(160px, 32%) 70px minmax(0, 1fr); align-items: center;
  border-top: 1px solid #eef0f3; min-height: 22px; }
.wf-row.axis { border-top: 0; background: #f6f7f9; font-weight: 600; color: #5b6572; }
.wf-name { padding: 2px 8px; min-width: 0; overflow-wrap: anywhere; }
.wf-name .op { display: inline-block; min-width: 38px; font-size: 10px; font-weight: 700; color: #5b6572;
  text-transform: uppercase; }
.wf-dur { text-align: right; padding-right: 8px; color: #5b6572; font-variant-numeric: tabular-nums; }
.wf-track { position: relative; height: 20px; margin-right: 12px; overflow: hidden; }
.wf-tick { position: absolute; top: 0; bottom: 0; border-left: 1px solid #e4e7eb; }
.wf-tick span { position: absolute; top: 3px; left: 3px; font-size: 11px; white-space: nowrap; }
.wf-tick.end span { left: auto; right: 3px; }
.wf-bar { position: absolute; top: 4px; height: 12px; min-width: 2px; border-radius: 2px; background: #4c78a8; }
.wf-bar.agent { background: #9aa5b1; } .wf-bar.model { background: #72b7b2; } .wf-bar.err { background: #e45756; }
.wf-bar.found { box-shadow: 0 0 0 2px #b42318; }
.wf-mark { position: absolute; top: 4px; width: 9px; height: 9px; margin-left: -5px; background: #b42318;
  transform: rotate(45deg); border: 1px solid #fff; } .wf-mark.adv { background: #5b6572; }
.wf-count { margin-left: 6px; color: #b42318; font-weight: 700; white-space: nowrap; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; font-size: 12px; color: #5b6572; margin: 4px 0; }
.legend span { display: inline-flex; align-items: center; gap: 5px; }
.legend i { display: inline-block; width: 14px; height: 10px; border-radius: 2px; background: #4c78a8; }
.legend i.agent { background: #9aa5b1; } .legend i.model { background: #72b7b2; } .legend i.err { background: #e45756; }
.legend i.found { box-shadow: 0 0 0 2px #b42318; }
.legend i.mark, .legend i.adv { width: 9px; height: 9px; border-radius: 0; transform: rotate(45deg); background: #b42318; }
.legend i.adv { background: #5b6572; }
.scroll { max-width: 100%; overflow-x: auto; }
table.witnesses th { white-space: nowrap; } table.witnesses td { overflow-wrap: break-word; }
table.witnesses td.value, table.witnesses td.provenance { overflow-wrap: anywhere; min-width: 12ch; }
table.witnesses td.epoch, table.witnesses td.stratum { white-space: nowrap; }
table.ledger td { overflow-wrap: break-word; }
details.terms { background: #f6f7f9; border: 1px solid #e4e7eb; border-radius: 4px; padding: 6px 12px; margin: 8px 0; }
details.terms summary { cursor: pointer; font-weight: 600; } details.terms dt { font-weight: 600; margin-top: 6px; }
details.terms dd { margin: 2px 0 0 16px; }
.finding { display: grid; grid-template-columns: minmax(0, 1fr); gap: 4px;
  border: 1px solid #f1c4c0; border-left: 4px solid #b42318; border-radius: 4px; padding: 8px 12px;
  margin: 8px 0; background: #fffafa; } .finding.advisory { border-color: #d0d5dd; border-left-color: #5b6572;
  background: #fcfcfd; }
.finding .what { font-weight: 600; } .finding p { margin: 4px 0; overflow-wrap: anywhere; }
.finding > div { min-width: 0; }
.chart .row { display: grid; grid-template-columns: minmax(0, 260px) minmax(0, 1fr) 40px; align-items: center; gap: 8px; margin: 3px 0; }
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


# The operations a row names by a short word (model calls are told by MODEL_CALL_OPERATIONS).
_ROW_KINDS: Final = ((names.OPERATION_INVOKE_AGENT, "agent"), (names.OPERATION_EXECUTE_TOOL, "tool"))
_TICKS: Final = 5  # about this many ticks on a waterfall's axis
_NICE_STEPS: Final = (1, 2, 5)


def _duration(nanos: int) -> str:
    """A duration as a person reads it: µs, ms or s, three significant figures at most."""
    if nanos < 1_000_000:
        return f"{nanos / 1_000:.3g} µs"
    if nanos < 1_000_000_000:
        return f"{nanos / 1_000_000:.3g} ms"
    return f"{nanos / 1_000_000_000:.3g} s"


def _tick_step(total: int) -> int:
    """A round step (1, 2 or 5 times a power of ten, in ns) giving about ``_TICKS`` ticks over ``total``."""
    rough = max(total / _TICKS, 1)
    power = int(10 ** (len(str(int(rough))) - 1))
    return next((n * power for n in _NICE_STEPS if n * power >= rough), 10 * power)


def _axis(total: int) -> str:
    step = _tick_step(total)
    ticks = []
    for at in range(0, total + 1, step):
        left = at / total * 100
        end = " end" if left > 80 else ""
        label = _duration(at) if at else "0"
        ticks.append(f'<div class="wf-tick{end}" style="left:{left:.2f}%"><span>{_e(label)}</span></div>')
    return "".join(ticks)


def _gridlines(total: int) -> str:
    step = _tick_step(total)
    return "".join(
        f'<div class="wf-tick" style="left:{at / total * 100:.2f}%"></div>'
        for at in range(step, total + 1, step)
    )


def _row_kind(operation: str | None, name: str) -> tuple[str, str]:
    """The css class and the short word of a span's row."""
    if operation in names.MODEL_CALL_OPERATIONS:
        return "model", "model"
    for known, word in _ROW_KINDS:
        if operation == known or (operation is None and name.startswith(known + " ")):
            return word, word
    return "other", "span"


def _readable(name: str, operation: str | None) -> str:
    """A span's name without the operation word its row already shows (``execute_tool x`` -> ``x``)."""
    for prefix in (operation, *(known for known, _ in _ROW_KINDS), names.OPERATION_CHAT):
        if prefix and name.startswith(prefix + " ") and len(name) > len(prefix) + 1:
            return name[len(prefix) + 1 :]
    return name


def _waterfall_row(
    *,
    name: str,
    operation: str | None,
    status: str,
    start: int | None,
    end: int | None,
    findings: list[tuple[int, FindingRecord]],
    run_start: int,
    total: int,
    depth: int,
    run_index: int,
) -> str:
    css, word = _row_kind(operation, name)
    classes = ["wf-bar", css]
    if status == "ERROR":
        classes.append("err")
    if findings:
        classes.append("found")
    count = ""
    if findings:
        first = findings[0][0]
        count = (
            f'<a class="wf-count" href="#finding-{run_index}-{first}">'
            f"{_e(plural(len(findings), 'finding'))}</a>"
        )
    label = (
        f'<div class="wf-name" style="padding-left:{8 + 14 * depth}px" title="{_e(name)}">'
        f'<span class="op">{_e(word)}</span> {_e(_readable(name, operation))}{count}</div>'
    )
    if start is None or end is None or end < start:
        return f'<div class="wf-row">{label}<div class="wf-dur">?</div><div class="wf-track"></div></div>'
    left = min(max((start - run_start) / total * 100, 0.0), 100.0)
    width = min(max((end - start) / total * 100, 0.0), 100.0 - left)
    marks = "".join(
        f'<a href="#finding-{run_index}-{number}" class="wf-mark{" adv" if finding.advisory else ""}" '
        f'style="left:{min(max(((finding.time_unix_nano or start) - run_start) / total * 100, 0.0), 100.0):.2f}%" '
        f'title="{_e(finding.kind)} @{_e(finding.seam)}"></a>'
        for number, finding in findings
    )
    bar = f'<div class="{" ".join(classes)}" style="left:{left:.2f}%;width:{width:.2f}%"></div>'
    return (
        f'<div class="wf-row">{label}<div class="wf-dur">{_e(_duration(end - start))}</div>'
        f'<div class="wf-track">{_gridlines(total)}{bar}{marks}</div></div>'
    )


def _legend() -> str:
    items = (
        ("agent", "agent run"),
        ("model", "model call"),
        ("", "tool call"),
        ("err", "ended in error"),
        ("found", "carries findings"),
        ("mark", "a finding, when it was filed"),
        ("adv", "an advisory finding"),
    )
    return (
        '<div class="legend">'
        + "".join(f'<span><i class="{c}"></i>{_e(t)}</span>' for c, t in items)
        + "</div>"
    )


def _depths(run: RunRecord, calls: list[ToolCallRecord]) -> dict[str, int]:
    """Each call's depth under the run span, by the parent chain among the spans shown."""
    parent_of = {call.span_id: call.parent_span_id for call in calls}
    depths: dict[str, int] = {}
    for call in calls:
        depth, current, seen = 1, call.parent_span_id, {call.span_id}
        while current in parent_of and current not in seen and current != run.span_id:
            seen.add(current)
            depth += 1
            current = parent_of[current]
        depths[call.span_id] = depth
    return depths


def _waterfall(index: int, run: RunRecord) -> str:
    """The run as a trace viewer draws it: one row per span on the run's time axis."""
    calls = sorted([*run.tool_calls, *run.other_calls], key=lambda c: c.start_time_unix_nano or 0)
    start, end = run.start_time_unix_nano, run.end_time_unix_nano
    if start is None or end is None or end <= start:
        return '<p class="muted">The run span has no timings recorded, so there is no waterfall to draw.</p>'
    total = end - start
    numbered: dict[str, list[tuple[int, FindingRecord]]] = {}
    for number, finding in enumerate(run.findings, start=1):
        numbered.setdefault(finding.span_id, []).append((number, finding))
    depths = _depths(run, calls)
    rows = [
        f'<div class="wf-row axis"><div class="wf-name">span</div><div class="wf-dur">duration</div>'
        f'<div class="wf-track">{_axis(total)}</div></div>',
        _waterfall_row(
            name=run.name,
            operation=names.OPERATION_INVOKE_AGENT,
            status=run.status,
            start=start,
            end=end,
            findings=numbered.get(run.span_id, []),
            run_start=start,
            total=total,
            depth=0,
            run_index=index,
        ),
    ]
    for call in calls:
        rows.append(
            _waterfall_row(
                name=call.name,
                operation=call.operation,
                status=call.status,
                start=call.start_time_unix_nano,
                end=call.end_time_unix_nano,
                findings=numbered.get(call.span_id, []),
                run_start=start,
                total=total,
                depth=depths.get(call.span_id, 1),
                run_index=index,
            )
        )
    return f'{_legend()}<div class="waterfall" aria-label="waterfall">{"".join(rows)}</div>'


def _witness_table(finding: FindingRecord) -> str:
    if not finding.witnesses:
        return '<p class="muted">No witness was recorded with this finding.</p>'
    head = "".join(
        f'<th><a href="#reading" title="{_e(_TERMS[f])}">{_e(f)}</a></th>'
        if f in _TERMS
        else f"<th>{_e(f)}</th>"
        for f in names.WITNESS_FIELDS
    )
    rows = "".join(
        "<tr>"
        + "".join(f'<td class="{_e(f)}">{_e(w.get(f, ""))}</td>' for f in names.WITNESS_FIELDS)
        + "</tr>"
        for w in finding.witnesses
    )
    # Wrapped inside the card; a value too long to wrap scrolls within it, never past it.
    return f'<div class="scroll"><table class="witnesses"><tr>{head}</tr>{rows}</table></div>'


def _finding(finding: FindingRecord, anchor: str = "") -> str:
    where = [f"{finding.kind} @{finding.seam}"]
    if finding.tool_name:
        where.append(f"tool {finding.tool_name}")
    if finding.call_id:
        where.append(f"call {finding.call_id}")
    tag = '<span class="flag adv">advisory</span>' if finding.advisory else ""
    anchored = f' id="{anchor}"' if anchor else ""
    subjects = f'<p class="muted">about: {_e(", ".join(finding.subjects))}</p>' if finding.subjects else ""
    return (
        f'<div class="finding{" advisory" if finding.advisory else ""}"{anchored}>'
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
        f'outcome {_e(run.outcome or "?")}</p><div class="scroll"><table class="ledger"><tr>{head}</tr>'
        f"{''.join(body)}</table></div>"
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
        "".join(_finding(f, f"finding-{index}-{n}") for n, f in enumerate(shown, start=1))
        or '<p class="muted">No findings were filed in this run.</p>'
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
        f"<h3>Waterfall</h3>{_waterfall(index, run)}<h3>Findings</h3>{findings}<h3>Ledger</h3>{_ledger(run)}</section>"
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


# The witness fields a reader cannot guess, said in the reading guide and on their column heads.
_TERMS: Final = {
    "epoch": "how many model requests the run had composed when the witness was taken (0: before the "
    "first); two witnesses of one finding with different epochs were true at different points of the run",
    "stratum": "asserted: what the run's tools or answer stated as current; quoted: an earlier value "
    "repeated as history, shown for context and never taken as evidence of the present",
}


def _reading_guide() -> str:
    terms = "".join(f"<dt>{_e(term)}</dt><dd>{_e(meaning)}</dd>" for term, meaning in _TERMS.items())
    return (
        '<details class="terms" id="reading"><summary>How to read this page</summary><dl>'
        "<dt>waterfall</dt><dd>each run's spans on its time axis, one row each: the agent run, its model "
        "calls and its tool calls; a diamond marks a finding when it was filed, on the span that carries it "
        "(follow it to the finding).</dd>"
        "<dt>findings</dt><dd>each with the message its check wrote and its witnesses: the assertions it "
        "rests on, each with its subject, predicate, value and provenance.</dd>"
        f"{terms}"
        "<dt>ledger</dt><dd>what each registered check concluded at each encounter (its findings column "
        "counts encounters that failed, so a defect seen at every request counts at each); a row that never "
        "ran, and an unreachable one, stand out.</dd></dl></details>"
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
        f'<section class="summary"><h2>Across runs</h2>{_reading_guide()}{_chart("Findings by kind", by_kind, "")}'
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
