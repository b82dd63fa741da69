"""Reads a recording back: OTLP/JSON lines into runs, findings and ledgers.

Every attribute is decoded by the partner of the function that encoded it
(:mod:`context_integrity.telemetry.schema`), and every name comes from
:mod:`context_integrity.telemetry.names`, so the writer and the reader cannot
drift apart silently.

Reading streams the file line by line and keeps only what the report needs from
each span (never the raw JSON). Nothing is dropped silently: a line or span that
cannot be read becomes an entry in :attr:`Recording.problems` naming the line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ..paths import RECORDING_ENV_VAR, RECORDING_FILE_NAME, STATE_DIR_NAME, XDG_STATE_HOME_VAR
from ..telemetry import names, schema
from ..text import clip, plural
from .metrics import FindingCounter
from .model import FindingRecord, Recording, RunRecord, ToolCallRecord
from .otlp_json import (
    RESOURCE_KEYS,
    RESOURCE_LOGS,
    RESOURCE_METRICS,
    RESOURCE_SPANS,
    SPAN_ID_HEX_CHARS,
    STATUS_NAMES,
    TRACE_ID_HEX_CHARS,
    Malformed,
    as_list,
    as_object,
    attributes,
    hex_id,
    int64,
    json_type,
)


def read_recording(path: str | os.PathLike[str]) -> Recording:
    """Read a recording file. A missing file raises :class:`FileNotFoundError`
    whose message says what the file is and how one comes to exist."""
    location = Path(path)
    try:
        handle = location.open("rb")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"No recording at {location}. One is written there when an agent instrumented with "
            f"ci.setup() runs without an OTLP endpoint configured; run one first, or pass the path "
            f"of an existing recording (the default path comes from ${RECORDING_ENV_VAR}, else "
            f"${XDG_STATE_HOME_VAR}/{STATE_DIR_NAME}/{RECORDING_FILE_NAME})."
        ) from None
    except IsADirectoryError:
        raise IsADirectoryError(
            f"{location} is a directory; pass the recording file inside it "
            f"(normally named {RECORDING_FILE_NAME})."
        ) from None
    with handle:
        recording = _read(_decoded_lines(handle))
    recording.source = str(location)
    return recording


def read_recording_text(lines: Iterable[str]) -> Recording:
    """Read a recording from lines of text (with or without their newlines)."""
    return _read((text, None) for text in lines)


def _decoded_lines(handle: Iterable[bytes]) -> Iterator[tuple[str, str | None]]:
    """Each line as text, or an empty text and the reason it could not be decoded."""
    for raw in handle:
        try:
            yield raw.decode("utf-8"), None
        except UnicodeDecodeError as error:
            yield ("\n" if raw.endswith(b"\n") else ""), f"not UTF-8 ({error.reason} at byte {error.start})"


def _read(lines: Iterable[tuple[str, str | None]]) -> Recording:
    reader = _Reader()
    pending: tuple[int, str, str | None] | None = None
    saw_terminated_line = False
    number = 0
    # One line of look-ahead: only the last line can be "truncated".
    for number, (text, decode_error) in enumerate(lines, start=1):
        if pending is not None:
            reader.feed(*pending, last=False, earlier_lines_terminated=saw_terminated_line)
            saw_terminated_line = saw_terminated_line or pending[1].endswith("\n")
        pending = (number, text, decode_error)
    if pending is not None:
        reader.feed(*pending, last=True, earlier_lines_terminated=saw_terminated_line)
    return reader.finish(total_lines=number)


def _optional_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _optional_int(value: object) -> int | None:
    return value if schema.is_int(value) else None  # type: ignore[return-value]


def _str_list(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


@dataclass(slots=True)
class _Event:
    name: str
    time: int | None
    attributes: dict[str, object]
    dropped_attributes: int


@dataclass(slots=True)
class _Disposition:
    line: int
    trace_id: str
    span_id: str
    parent_span_id: str | None
    summary: schema.SummaryFields


_OUR_CALL_EVENTS: Final = frozenset(
    {names.FINDING_EVENT, names.EXTERNAL_GROUND_EVENT, names.INTERNAL_ERROR_EVENT}
)
_RUN_PREFIX: Final = names.run_span_name("")
_TOOL_PREFIX: Final = names.tool_span_name("")


class _Reader:
    """Accumulates what a recording says, line by line, then links it up."""

    def __init__(self) -> None:
        self.recording = Recording()
        # Every span's parent, so any call can be traced to its run however
        # deep it sits; keyed by trace id + span id.
        self._parents: dict[str, str | None] = {}
        self._runs: dict[str, RunRecord] = {}
        self._run_lines: dict[str, int] = {}
        self._calls: list[tuple[int, ToolCallRecord]] = []
        self._run_findings: list[tuple[str, FindingRecord]] = []
        self._run_errors: list[tuple[str, dict[str, object]]] = []
        self._dispositions: list[_Disposition] = []
        self._counter = FindingCounter()
        self._data_lines = 0

    # -- lines ------------------------------------------------------------
    def problem(self, line: int | None, text: str) -> None:
        self.recording.problems.append(f"line {line}: {text}" if line is not None else text)

    def feed(
        self, number: int, text: str, decode_error: str | None, *, last: bool, earlier_lines_terminated: bool
    ) -> None:
        if decode_error is not None:
            self._data_lines += 1
            self.problem(number, decode_error)
            return
        if not text.strip():
            return
        self._data_lines += 1
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            if last and not text.endswith("\n") and earlier_lines_terminated:
                self.problem(
                    number,
                    f"truncated: the file ends part-way through this line, so it was skipped "
                    f"(a writer was interrupted or is still writing; {error.msg} at column {error.colno})",
                )
            else:
                self.problem(number, f"not JSON ({error.msg} at column {error.colno})")
            return
        except RecursionError:
            self.problem(number, "not readable JSON (nested too deeply)")
            return
        if not isinstance(document, dict):
            self.problem(number, f"expected a JSON object, found {json_type(document)}")
            return
        present = [key for key in RESOURCE_KEYS if key in document]
        if not present:
            keys = ", ".join(clip(str(key), 40) for key in list(document)[:5]) or "none"
            self.problem(
                number,
                f"no {', '.join(RESOURCE_KEYS[:-1])} or {RESOURCE_KEYS[-1]} key, so it is not OTLP/JSON "
                f"(keys found: {keys})",
            )
            return
        for key in present:
            try:
                if key == RESOURCE_SPANS:
                    self._spans_line(number, document[key])
                elif key == RESOURCE_METRICS:
                    self._counter.line(document[key], lambda text: self.problem(number, text))
                else:
                    self._logs_line(document[key])
            except Malformed as error:
                self.problem(number, f"{key}: {error}")
            except RecursionError:
                self.problem(number, f"{key}: nested too deeply to read")

    # -- spans ------------------------------------------------------------
    def _spans_line(self, number: int, resource_spans: object) -> None:
        for resource_entry in as_list(resource_spans, RESOURCE_SPANS):
            resource = as_object(resource_entry, "a resourceSpans entry")
            for scope_entry in as_list(resource.get("scopeSpans"), "scopeSpans"):
                scope = as_object(scope_entry, "a scopeSpans entry")
                for span in as_list(scope.get("spans"), "spans"):
                    self.recording.spans += 1
                    try:
                        self._span(number, as_object(span, "a span"))
                    except Malformed as error:
                        name = span.get("name") if isinstance(span, dict) else None
                        label = f"span {clip(name, 60)!r}" if isinstance(name, str) else "a span"
                        self.problem(number, f"{label} skipped: {error}")

    def _span(self, number: int, span: dict[str, object]) -> None:
        trace_id = hex_id(span.get("traceId"), TRACE_ID_HEX_CHARS, "traceId")
        span_id = hex_id(span.get("spanId"), SPAN_ID_HEX_CHARS, "spanId")
        raw_parent = span.get("parentSpanId")
        parent_id = hex_id(raw_parent, SPAN_ID_HEX_CHARS, "parentSpanId") if raw_parent else None
        name = span.get("name")
        if not isinstance(name, str):
            raise Malformed("it has no name")
        key = trace_id + span_id
        if key in self._parents:
            self.problem(
                number, f"span {clip(name, 60)!r} ({span_id}) was already read; this copy was ignored"
            )
            return
        self._parents[key] = parent_id

        skipped: list[str] = []
        attrs = attributes(span.get("attributes"), skipped)
        operation = _optional_str(attrs.get(names.GEN_AI_OPERATION_NAME))
        is_run = operation == names.OPERATION_INVOKE_AGENT or (
            operation is None and name.startswith(_RUN_PREFIX)
        )
        is_tool = operation == names.OPERATION_EXECUTE_TOOL or (
            operation is None and name.startswith(_TOOL_PREFIX)
        )
        is_disposition = name == names.DISPOSITION_SPAN
        events = self._events(number, name, span.get("events"), skipped)
        if skipped:
            self.problem(
                number,
                f"span {clip(name, 60)!r} ({span_id}): {plural(len(skipped), 'attribute')} could not be "
                f"read and {'was' if len(skipped) == 1 else 'were'} left out (first: {skipped[0]})",
            )
        dropped_events = int64(span.get("droppedEventsCount"), "droppedEventsCount") or 0
        if dropped_events:
            self.problem(
                number,
                f"span {clip(name, 60)!r} ({span_id}) dropped {dropped_events} event(s) at the SDK's "
                f"per-span event limit; findings among them are missing from this report "
                f"(its {names.FINDINGS_COUNT} attribute still counts them)",
            )
        if not (is_run or is_tool or is_disposition or any(e.name in _OUR_CALL_EVENTS for e in events)):
            return  # only its place in the tree matters

        status_node = span.get("status")
        status = as_object(status_node, "status") if status_node is not None else {}
        status_code = int64(status.get("code"), "status.code") or 0
        status_name = STATUS_NAMES.get(status_code, f"code {status_code}")
        status_message = _optional_str(status.get("message")) or ""
        start = int64(span.get("startTimeUnixNano"), "startTimeUnixNano")
        end = int64(span.get("endTimeUnixNano"), "endTimeUnixNano")

        if is_disposition:
            self._dispositions.append(
                _Disposition(number, trace_id, span_id, parent_id, self._summary(number, attrs))
            )
            return

        findings = [
            self._finding(number, event, attrs, name, trace_id, span_id)
            for event in events
            if event.name == names.FINDING_EVENT
        ]
        errors = [
            schema.decode_internal_error(event.attributes)
            for event in events
            if event.name == names.INTERNAL_ERROR_EVENT
        ]
        if is_run:
            agent = _optional_str(attrs.get(names.GEN_AI_AGENT_NAME))
            if agent is None:
                agent = name[len(_RUN_PREFIX) :] if name.startswith(_RUN_PREFIX) else name
            run = RunRecord(
                trace_id=trace_id,
                span_id=span_id,
                parent_span_id=parent_id,
                agent=agent,
                name=name,
                status=status_name,
                status_message=status_message,
                start_time_unix_nano=start,
                end_time_unix_nano=end,
            )
            self._runs[key] = run
            self._run_lines[key] = number
            self._run_findings.extend((key, finding) for finding in findings)
            self._run_errors.extend((key, error) for error in errors)
            return

        call = ToolCallRecord(
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=parent_id,
            name=name,
            operation=operation,
            tool_name=_optional_str(attrs.get(names.GEN_AI_TOOL_NAME)),
            call_id=_optional_str(attrs.get(names.GEN_AI_TOOL_CALL_ID)),
            tool_type=_optional_str(attrs.get(names.GEN_AI_TOOL_TYPE)),
            status=status_name,
            status_message=status_message,
            start_time_unix_nano=start,
            end_time_unix_nano=end,
            error_type=_optional_str(attrs.get(names.ERROR_TYPE)),
            findings_count=_optional_int(attrs.get(names.FINDINGS_COUNT)),
            findings_kinds=_str_list(attrs.get(names.FINDINGS_KINDS)),
            findings=findings,
            external_grounds=[
                schema.decode_external_ground(event.attributes)
                for event in events
                if event.name == names.EXTERNAL_GROUND_EVENT
            ],
            internal_errors=errors,
        )
        self._calls.append((number, call))

    def _events(self, number: int, span_name: str, node: object, skipped: list[str]) -> list[_Event]:
        kept: list[_Event] = []
        for entry in as_list(node, "events"):
            event = as_object(entry, "an event")
            name = event.get("name")
            if not isinstance(name, str) or name not in _OUR_CALL_EVENTS:
                continue
            attrs = attributes(event.get("attributes"), skipped)
            dropped = int64(event.get("droppedAttributesCount"), "droppedAttributesCount") or 0
            if dropped:
                self.problem(
                    number,
                    f"a {name} event on span {clip(span_name, 60)!r} lost {dropped} attribute(s) to the "
                    "SDK's per-event attribute limit; what remains is reported",
                )
            kept.append(_Event(name, int64(event.get("timeUnixNano"), "timeUnixNano"), attrs, dropped))
        return kept

    def _finding(
        self,
        number: int,
        event: _Event,
        span_attributes: Mapping[str, object],
        span_name: str,
        trace_id: str,
        span_id: str,
    ) -> FindingRecord:
        problems: list[str] = []
        record = schema.decode_finding(
            event.attributes,
            problems,
            FindingRecord,
            lossy=event.dropped_attributes > 0,
            span_name=span_name,
            time_unix_nano=event.time,
            trace_id=trace_id,
            span_id=span_id,
        )
        for problem in problems:
            self.problem(number, f"a finding on span {clip(span_name, 60)!r} {problem}")
        # A finding on its own tool span may leave the tool to the span.
        if record.tool_name is None:
            record.tool_name = _optional_str(span_attributes.get(names.GEN_AI_TOOL_NAME))
        if record.call_id is None:
            record.call_id = _optional_str(span_attributes.get(names.GEN_AI_TOOL_CALL_ID))
        return record

    def _summary(self, number: int, attrs: Mapping[str, object]) -> schema.SummaryFields:
        problems: list[str] = []
        summary = schema.decode_summary(attrs, problems)
        for problem in problems:
            self.problem(number, problem)
        return summary

    def _logs_line(self, resource_logs: object) -> None:
        for resource_entry in as_list(resource_logs, RESOURCE_LOGS):
            resource = as_object(resource_entry, "a resourceLogs entry")
            for scope_entry in as_list(resource.get("scopeLogs"), "scopeLogs"):
                scope = as_object(scope_entry, "a scopeLogs entry")
                self.recording.log_records += len(as_list(scope.get("logRecords"), "logRecords"))

    # -- linking ------------------------------------------------------------
    def _owner(self, trace_id: str, parent_id: str | None) -> tuple[RunRecord | None, str | None]:
        """The nearest run span above a span, or the parent id where the chain
        breaks (a span that is not in the recording)."""
        seen: set[str] = set()
        current = parent_id
        while current is not None:
            key = trace_id + current
            run = self._runs.get(key)
            if run is not None:
                return run, None
            if key not in self._parents or key in seen:
                return None, current
            seen.add(key)
            current = self._parents[key]
        return None, None

    def finish(self, *, total_lines: int) -> Recording:
        recording = self.recording
        recording.lines = total_lines
        if self._data_lines == 0:
            recording.problems.append(
                "the recording is empty: nothing has been exported to it yet"
                if total_lines == 0
                else "the recording holds only blank lines: nothing has been exported to it yet"
            )
        for run_key, finding in self._run_findings:
            self._runs[run_key].findings.append(finding)
        for run_key, error in self._run_errors:
            self._runs[run_key].internal_errors.append(error)

        for number, call in self._calls:
            run, broken_at = self._owner(call.trace_id, call.parent_span_id)
            if run is None:
                if broken_at is not None:
                    self.problem(
                        number,
                        f"span {clip(call.name, 60)!r} hangs from span {broken_at}, which is not in the "
                        f"recording (a run still in progress, or a recording cut short); "
                        "it is listed with the calls outside any run",
                    )
                recording.loose_calls.append(call)
                continue
            if call.operation == names.OPERATION_EXECUTE_TOOL or (
                call.operation is None and call.name.startswith(_TOOL_PREFIX)
            ):
                run.tool_calls.append(call)
            else:
                run.other_calls.append(call)
            run.findings.extend(call.findings)
            run.internal_errors.extend(call.internal_errors)

        for disposition in self._dispositions:
            run, _ = self._owner(disposition.trace_id, disposition.parent_span_id)
            if run is None:
                self.problem(
                    disposition.line,
                    f"a {names.DISPOSITION_SPAN} span ({disposition.span_id}) has no run span above it "
                    "in the recording; its ledger is not reported",
                )
                continue
            if run.ledger is not None:
                self.problem(
                    disposition.line,
                    f"run {run.span_id} has a second {names.DISPOSITION_SPAN} span ({disposition.span_id}); "
                    "the first one read is reported",
                )
                continue
            summary = disposition.summary
            run.ledger = summary.rows
            run.totals = summary.totals
            run.posture = summary.posture
            run.work_existed = summary.work_existed
            run.outcome = summary.outcome

        for run in self._runs.values():
            run.findings.sort(key=lambda f: f.time_unix_nano or 0)
            run.tool_calls.sort(key=lambda c: c.start_time_unix_nano or 0)
            run.other_calls.sort(key=lambda c: c.start_time_unix_nano or 0)
        recording.runs = sorted(
            self._runs.values(),
            key=lambda r: (r.start_time_unix_nano or 0, self._run_lines[r.trace_id + r.span_id]),
        )
        recording.loose_calls.sort(key=lambda c: c.start_time_unix_nano or 0)

        recording.finding_counts = self._counter.counts()
        recording.metric_points = self._counter.points
        return recording
