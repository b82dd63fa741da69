"""Spans into runs: every call and summary to the nearest run span above it.

A recording lists spans in the order they ended, batch by batch, and several
processes may append to one file, so a call often arrives before its run span
and a summary may arrive before or after it. The assembler keeps, per trace,
each span's parent and whatever is still waiting for its run.

Streaming, a run is handed out as soon as both its span and its summary have
been read, with every call read so far that hangs under it, and what it held is
let go; a trace is forgotten once nothing in it waits any more. Memory then
follows the runs still open, not the size of the recording. Without streaming
(``hold``), every run waits for the end of the input, so the order of the lines
cannot change the result.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..telemetry.schema import names
from ..text import clip
from .model import FindingRecord, RunRecord, ToolCallRecord
from .spans import SpanRead, Summary, is_tool_call

Problem = Callable[[int | None, str], None]


@dataclass(slots=True)
class _OpenRun:
    record: RunRecord
    line: int
    summary: Summary | None = None


class _Trace:
    __slots__ = ("calls", "done", "parents", "runs", "summaries")

    def __init__(self) -> None:
        # Every span read in this trace and its parent, so a call can be traced to
        # its run however deep it sits.
        self.parents: dict[str, str | None] = {}
        self.runs: dict[str, _OpenRun] = {}
        self.calls: list[tuple[int, ToolCallRecord]] = []
        self.summaries: list[Summary] = []
        # Runs already handed out, so a second summary or a late call is named as such.
        self.done: set[str] = set()


class Assembler:
    """Takes spans in any order; hands out runs, then what belongs to none."""

    def __init__(self, problem: Problem, *, hold: bool, max_open_traces: int) -> None:
        self._problem = problem
        self._hold = hold
        self._max_open_traces = max_open_traces
        self._traces: OrderedDict[str, _Trace] = OrderedDict()
        # Runs handed out from traces since forgotten (trace id + span id), so a span that
        # arrives after its run was reported is named as such; bounded like the open traces.
        self._reported: OrderedDict[str, None] = OrderedDict()
        self.loose_calls: list[ToolCallRecord] = []

    def add(self, number: int, read: SpanRead) -> bool:
        """Take in one span; ``False`` when it was read before (the copy is ignored)."""
        trace_id = read.trace_id
        if type(read) is RunRecord and trace_id + read.span_id in self._reported:
            return False  # a copy of a run already handed out
        trace = self._traces.get(trace_id)
        if trace is None:
            trace = self._traces[trace_id] = _Trace()
        parents = trace.parents
        span_id = read.span_id
        if span_id in parents:
            return False
        parents[span_id] = read.parent_span_id
        if type(read) is ToolCallRecord:
            trace.calls.append((number, read))
        elif type(read) is RunRecord:
            trace.runs[span_id] = _OpenRun(read, number)
        elif type(read) is Summary:
            trace.summaries.append(read)
        return True

    def completed(self, trace_id: str) -> Iterator[RunRecord]:
        """The runs of this trace that are whole (span and summary read), streaming only."""
        if self._hold:
            return
        trace = self._traces.get(trace_id)
        if trace is not None:
            if trace.summaries:
                self._place_summaries(trace, final=False)
            whole = [key for key, run in trace.runs.items() if run.summary is not None]
            if whole:
                yield from self._hand_out(trace, whole)
            if not trace.runs and not trace.calls and not trace.summaries:
                del self._traces[trace_id]
        while len(self._traces) > self._max_open_traces:
            # Too many traces wait for a run or a summary that may never come:
            # the oldest is settled now with what it has.
            oldest, stale = self._traces.popitem(last=False)
            self._problem(
                None,
                f"trace {oldest} was still waiting for a run span or a summary when more than "
                f"{self._max_open_traces} traces were open; it is reported with what it had",
            )
            yield from self._settle(stale)

    def finish(self) -> Iterator[RunRecord]:
        """Everything still open, settled: runs in start order, then the calls no run owns."""
        runs: list[tuple[int, int, RunRecord]] = []
        while self._traces:
            _, trace = self._traces.popitem(last=False)
            lines = {id(run.record): run.line for run in trace.runs.values()}
            for record in self._settle(trace):
                runs.append((record.start_time_unix_nano or 0, lines.get(id(record), 0), record))
        runs.sort(key=lambda item: (item[0], item[1]))
        for _, _, record in runs:
            yield record
        self.loose_calls.sort(key=lambda c: c.start_time_unix_nano or 0)

    # -- linking ----------------------------------------------------------
    def _owner(self, trace: _Trace, parent_id: str | None) -> tuple[str | None, str | None]:
        """The nearest run span above a span (open or handed out), or the parent id where the
        chain breaks (a span that is not in the recording)."""
        if parent_id is None:
            return None, None
        if parent_id in trace.runs or parent_id in trace.done:
            return parent_id, None  # the usual case: the span hangs right under its run
        seen: set[str] = set()
        current: str | None = parent_id
        while current is not None:
            if current in trace.runs or current in trace.done:
                return current, None
            if current not in trace.parents or current in seen:
                return None, current
            seen.add(current)
            current = trace.parents[current]
        return None, None

    def _place_summaries(self, trace: _Trace, *, final: bool) -> None:
        waiting: list[Summary] = []
        for summary in trace.summaries:
            owner, _ = self._owner(trace, summary.parent_span_id)
            run = trace.runs.get(owner) if owner is not None else None
            if owner is not None and (run is None or run.summary is not None):
                self._problem(
                    summary.line,
                    f"run {owner} has a second {names.DISPOSITION_SPAN} span ({summary.span_id}); "
                    "the first one read is reported",
                )
            elif run is not None:
                run.summary = summary
            elif final:
                self._problem(
                    summary.line,
                    f"a {names.DISPOSITION_SPAN} span ({summary.span_id}) has no run span above it "
                    "in the recording; its ledger is not reported. The run span went to another "
                    "TracerProvider: most often one built after ci.setup() (logfire.configure() called "
                    "after it); call ci.setup() after the application configures OpenTelemetry",
                )
            else:
                waiting.append(summary)
        trace.summaries = waiting

    def _hand_out(self, trace: _Trace, keys: list[str]) -> Iterator[RunRecord]:
        """Give these runs every call that hangs under them, and hand them out."""
        handing = set(keys)
        waiting: list[tuple[int, ToolCallRecord]] = []
        for number, call in trace.calls:
            owner, _ = self._owner(trace, call.parent_span_id)
            if owner in handing:
                _attach(trace.runs[owner].record, call)
            elif owner is not None and owner in trace.done:
                self._problem(
                    number,
                    f"span {clip(call.name, 60)!r} arrived after its run ({owner}) was reported; "
                    "it is listed with the calls outside any run",
                )
                self.loose_calls.append(call)
            else:
                waiting.append((number, call))
        trace.calls = waiting
        for key in keys:
            open_run = trace.runs.pop(key)
            trace.done.add(key)
            self._reported[open_run.record.trace_id + key] = None
            while len(self._reported) > self._max_open_traces:
                self._reported.popitem(last=False)
            yield _finished(open_run)

    def _settle(self, trace: _Trace) -> Iterator[RunRecord]:
        """The end for one trace: its runs with whatever they have, its orphans reported."""
        self._place_summaries(trace, final=True)
        keys = list(trace.runs)
        runs = {key: trace.runs[key] for key in keys}
        for number, call in trace.calls:
            owner, broken_at = self._owner(trace, call.parent_span_id)
            if owner is not None and owner in runs:
                _attach(runs[owner].record, call)
                continue
            if owner is None and broken_at is not None and call.trace_id + broken_at in self._reported:
                owner = broken_at
            if owner is not None:
                self._problem(
                    number,
                    f"span {clip(call.name, 60)!r} arrived after its run ({owner}) was reported; "
                    "it is listed with the calls outside any run",
                )
            elif broken_at is not None:
                self._problem(
                    number,
                    f"span {clip(call.name, 60)!r} hangs from span {broken_at}, which is not in the "
                    f"recording (a run still in progress, or a recording cut short); "
                    "it is listed with the calls outside any run",
                )
            self.loose_calls.append(call)
        trace.calls = []
        for key in keys:
            yield _finished(trace.runs.pop(key))


def _attach(run: RunRecord, call: ToolCallRecord) -> None:
    (run.tool_calls if is_tool_call(call) else run.other_calls).append(call)
    run.findings.extend(call.findings)
    run.internal_errors.extend(call.internal_errors)


def _finished(open_run: _OpenRun) -> RunRecord:
    run = open_run.record
    if open_run.summary is not None:
        fields = open_run.summary.fields
        run.ledger = fields.rows
        run.totals = fields.totals
        run.posture = fields.posture
        run.work_existed = fields.work_existed
        run.outcome = fields.outcome
        run.profile = fields.profile
    if len(run.findings) > 1:
        run.findings.sort(key=_finding_time)
    if len(run.tool_calls) > 1:
        run.tool_calls.sort(key=_call_start)
    if len(run.other_calls) > 1:
        run.other_calls.sort(key=_call_start)
    return run


def _finding_time(finding: FindingRecord) -> int:
    return finding.time_unix_nano or 0


def _call_start(call: ToolCallRecord) -> int:
    return call.start_time_unix_nano or 0
