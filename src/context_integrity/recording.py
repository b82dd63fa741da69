"""Reads a recording back: the OTLP/JSON lines the local file exporters write.

When no OTLP endpoint is configured, ``ci.setup()`` appends every export to a
local file, one JSON object per line, in the same OTLP/JSON shape the
OpenTelemetry Collector's ``file`` exporter writes (``{"resourceSpans": [...]}``,
``{"resourceMetrics": [...]}``, ``{"resourceLogs": [...]}``). This module turns
that file back into runs, findings and disposition ledgers, and formats them for
``context-integrity report``.

It deliberately imports no OpenTelemetry: a recording is plain JSON, and reading
one must work wherever the package is installed. Every name it looks for comes
from :mod:`context_integrity.telemetry.names` and :data:`ledger.ROW_FIELDS`, so
the writer and the reader cannot drift apart silently.

Reading streams the file line by line and keeps only what the report needs from
each span (never the raw JSON), so memory grows with the number of runs, calls
and findings, not with the size of the spans around them. Nothing is dropped
silently: a line or span that cannot be read becomes an entry in
:attr:`Recording.problems` naming the line.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import textwrap
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Final

from .ledger import ROW_FIELDS, LedgerRow
from .telemetry import names
from .text import clip, plural

# ── Where the recording lives ───────────────────────────────────────────
RECORDING_ENV_VAR: Final = "CONTEXT_INTEGRITY_RECORDING"
_XDG_STATE_HOME: Final = "XDG_STATE_HOME"
_STATE_DIR_NAME: Final = "context-integrity"
RECORDING_FILE_NAME: Final = "recording.otlp.jsonl"


def default_recording_path() -> Path:
    """Where the local recording is written and read when no path is given.

    ``$CONTEXT_INTEGRITY_RECORDING`` if set, else
    ``$XDG_STATE_HOME/context-integrity/recording.otlp.jsonl`` with
    ``XDG_STATE_HOME`` defaulting to ``~/.local/state``. A relative
    ``XDG_STATE_HOME`` is ignored, as the XDG base-directory rules require.
    """
    explicit = os.environ.get(RECORDING_ENV_VAR)
    if explicit:
        return Path(explicit).expanduser()
    state_home = os.environ.get(_XDG_STATE_HOME)
    base = Path(state_home) if state_home and os.path.isabs(state_home) else Path.home() / ".local" / "state"
    return base / _STATE_DIR_NAME / RECORDING_FILE_NAME


# ── OTLP/JSON vocabulary (the protocol's own field names) ───────────────
RESOURCE_SPANS: Final = "resourceSpans"
RESOURCE_METRICS: Final = "resourceMetrics"
RESOURCE_LOGS: Final = "resourceLogs"
RESOURCE_KEYS: Final[tuple[str, ...]] = (RESOURCE_SPANS, RESOURCE_METRICS, RESOURCE_LOGS)

TRACE_ID_HEX_CHARS: Final = 32
SPAN_ID_HEX_CHARS: Final = 16

# Span status codes in OTLP (STATUS_CODE_UNSET, _OK, _ERROR).
_STATUS_NAMES: Final[Mapping[int, str]] = {0: "unset", 1: "ok", 2: "error"}
# Metric aggregation temporality in OTLP.
_TEMPORALITY_DELTA: Final = 1

# The ledger columns that count encounters (every row field but the
# identifying pair and the timestamp), derived so a new count column shows up
# in the report without touching this module.
_ROW_IDENTITY: Final[tuple[str, ...]] = ROW_FIELDS[:2]
_LAST_FIRED_FIELD: Final = ROW_FIELDS[-1]
COUNT_FIELDS: Final[tuple[str, ...]] = tuple(
    f for f in ROW_FIELDS if f not in (*_ROW_IDENTITY, _LAST_FIRED_FIELD)
)

# Kind, seam and tool: the attribute set the findings counter is summarised by.
FindingCountKey = tuple[str, str, str]


# ── What a recording reads back as ──────────────────────────────────────
@dataclass(slots=True)
class FindingRecord:
    """One ``context_integrity.finding`` event, as plain data.

    ``witnesses`` hold the fields of :data:`names.WITNESS_FIELDS` that were
    recorded (``epoch`` is absent when the witness had none).
    """

    kind: str
    seam: str
    predicate: str | None
    advisory: bool
    message: str
    identity: str
    tool_name: str | None
    call_id: str | None
    span_name: str
    witnesses: list[dict[str, object]] = field(default_factory=list)
    subjects: list[str] = field(default_factory=list)
    epoch: int | None = None
    time_unix_nano: int | None = None
    trace_id: str = ""
    span_id: str = ""


@dataclass(slots=True)
class ToolCallRecord:
    """A call span: an ``execute_tool`` span, or another span (a ``chat`` span,
    say) that carried our events. ``operation`` says which."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    operation: str | None
    tool_name: str | None
    call_id: str | None
    tool_type: str | None
    status: str
    status_message: str
    start_time_unix_nano: int | None
    end_time_unix_nano: int | None
    error_type: str | None = None
    # The span-level summary attributes, as recorded (None when absent).
    findings_count: int | None = None
    findings_kinds: list[str] = field(default_factory=list)
    findings: list[FindingRecord] = field(default_factory=list)
    external_grounds: list[dict[str, object]] = field(default_factory=list)
    internal_errors: list[dict[str, object]] = field(default_factory=list)


@dataclass(slots=True)
class RunRecord:
    """One ``invoke_agent`` span with everything recorded under it.

    ``ledger``, ``totals``, ``posture``, ``work_existed`` and ``outcome`` come
    from the run's ``context_integrity.disposition`` summary span; ``ledger`` is
    ``None`` when no summary span was recorded for the run.
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    agent: str
    name: str
    status: str
    status_message: str
    start_time_unix_nano: int | None
    end_time_unix_nano: int | None
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    # Non-tool spans in the run that carried our events (chat spans with findings).
    other_calls: list[ToolCallRecord] = field(default_factory=list)
    findings: list[FindingRecord] = field(default_factory=list)
    internal_errors: list[dict[str, object]] = field(default_factory=list)
    ledger: list[dict[str, object]] | None = None
    totals: dict[str, int] = field(default_factory=dict)
    posture: str | None = None
    work_existed: bool | None = None
    outcome: str | None = None

    def never_ran(self) -> list[dict[str, object]]:
        """Ledger rows that read all-zero although the run says work existed."""
        if not self.work_existed or not self.ledger:
            return []
        return [row for row in self.ledger if _row_untouched(row)]


@dataclass(slots=True)
class Recording:
    """Everything read from one recording."""

    runs: list[RunRecord] = field(default_factory=list)
    loose_calls: list[ToolCallRecord] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Latest value of the findings counter per (kind, seam, tool), summed over
    # every other attribute (advisory, the process that wrote it).
    finding_counts: dict[FindingCountKey, int] = field(default_factory=dict)
    lines: int = 0
    spans: int = 0
    metric_points: int = 0
    log_records: int = 0
    source: str | None = None


# ── Reading ─────────────────────────────────────────────────────────────
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
            f"${_XDG_STATE_HOME}/{_STATE_DIR_NAME}/{RECORDING_FILE_NAME})."
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


class _Malformed(ValueError):
    """A piece of a line that is not the OTLP/JSON it claims to be."""


def _object(value: object, what: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise _Malformed(f"{what} is {_json_type(value)}, not an object")
    return value


def _list(value: object, what: str) -> list[object]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Malformed(f"{what} is {_json_type(value)}, not a list")
    return value


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _int64(value: object, what: str) -> int | None:
    """An OTLP 64-bit integer: a decimal string or a JSON number."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise _Malformed(f"{what} is a boolean, not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            raise _Malformed(f"{what} {clip(value, 40)!r} is not an integer") from None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise _Malformed(f"{what} is {_json_type(value)}, not an integer")


def _double(value: object, what: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        return float(value.replace("Infinity", "inf"))
    raise _Malformed(f"{what} is {_json_type(value)}, not a number")


def _any_value(node: object) -> object:
    """An OTLP ``AnyValue`` as a Python value (``None`` for an empty value)."""
    value = _object(node, "an attribute value")
    if "stringValue" in value:
        text = value["stringValue"]
        if not isinstance(text, str):
            raise _Malformed("a stringValue is not a string")
        return text
    if "boolValue" in value:
        flag = value["boolValue"]
        if not isinstance(flag, bool):
            raise _Malformed("a boolValue is not a boolean")
        return flag
    if "intValue" in value:
        return _int64(value["intValue"], "an intValue")
    if "doubleValue" in value:
        return _double(value["doubleValue"], "a doubleValue")
    if "arrayValue" in value:
        array = _object(value["arrayValue"], "an arrayValue")
        return [_any_value(item) for item in _list(array.get("values"), "arrayValue.values")]
    if "kvlistValue" in value:
        kvlist = _object(value["kvlistValue"], "a kvlistValue")
        return _attributes(kvlist.get("values"))
    if "bytesValue" in value:
        # Left base64-encoded, as OTLP/JSON writes bytes.
        return value["bytesValue"]
    return None


def _attributes(node: object, skipped: list[str] | None = None) -> dict[str, object]:
    """An OTLP attribute list as a dict. With ``skipped``, an unreadable
    attribute is left out and its reason appended there, instead of failing
    the whole list (one odd attribute must not cost a span its findings)."""
    out: dict[str, object] = {}
    for entry in _list(node, "attributes"):
        key = entry.get("key") if isinstance(entry, dict) else None
        try:
            if not isinstance(entry, dict) or not isinstance(key, str):
                raise _Malformed("an attribute is not a {key, value} object with a string key")
            out[key] = _any_value(entry.get("value", {}))
        except _Malformed as error:
            if skipped is None:
                raise
            skipped.append(f"{clip(key, 60)}: {error}" if isinstance(key, str) else str(error))
    return out


def _hex_id(value: object, size: int, what: str) -> str:
    """A trace or span id as lowercase hex; tolerates the base64 of plain
    protobuf JSON, which some producers write instead of OTLP/JSON's hex."""
    if not isinstance(value, str):
        raise _Malformed(f"{what} is {_json_type(value)}, not a string")
    if len(value) == size:
        try:
            bytes.fromhex(value)
            return value.lower()
        except ValueError:
            pass
    try:
        decoded = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if len(decoded) * 2 == size:
        return decoded.hex()
    raise _Malformed(f"{what} {clip(value, 40)!r} is not a {size}-hex-digit id")


def _optional_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _optional_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str_list(value: object) -> list[str]:
    if isinstance(value, list):
        return [str(item) for item in value]
    return []


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
    ledger: list[dict[str, object]]
    totals: dict[str, int]
    posture: str | None
    work_existed: bool | None
    outcome: str | None


_OUR_CALL_EVENTS: Final = frozenset(
    {names.FINDING_EVENT, names.EXTERNAL_GROUND_EVENT, names.INTERNAL_ERROR_EVENT}
)
_KEPT_EVENTS: Final = _OUR_CALL_EVENTS | {names.DISPOSITION_ROW_EVENT}
_RUN_PREFIX: Final = names.run_span_name("")
_TOOL_PREFIX: Final = names.tool_span_name("")
_ROW_SCALAR_PREFIX: Final = names.ROW_PREFIX + "."
_TOTALS_PREFIX: Final = names.TOTALS_PREFIX + "."


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
        # Findings counter points per cumulative series, keyed by kind, seam,
        # tool and then the series' identity: (time, value) of its latest point.
        self._cumulative: dict[tuple[object, ...], tuple[int, int]] = {}
        self._delta: dict[FindingCountKey, int] = {}
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
            self.problem(number, f"expected a JSON object, found {_json_type(document)}")
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
        handlers = {
            RESOURCE_SPANS: self._spans_line,
            RESOURCE_METRICS: self._metrics_line,
            RESOURCE_LOGS: self._logs_line,
        }
        for key in present:
            try:
                handlers[key](number, document[key])
            except _Malformed as error:
                self.problem(number, f"{key}: {error}")
            except RecursionError:
                self.problem(number, f"{key}: nested too deeply to read")

    # -- spans ------------------------------------------------------------
    def _spans_line(self, number: int, resource_spans: object) -> None:
        for resource_entry in _list(resource_spans, RESOURCE_SPANS):
            resource = _object(resource_entry, "a resourceSpans entry")
            for scope_entry in _list(resource.get("scopeSpans"), "scopeSpans"):
                scope = _object(scope_entry, "a scopeSpans entry")
                for span in _list(scope.get("spans"), "spans"):
                    self.recording.spans += 1
                    try:
                        self._span(number, _object(span, "a span"))
                    except _Malformed as error:
                        name = span.get("name") if isinstance(span, dict) else None
                        label = f"span {clip(name, 60)!r}" if isinstance(name, str) else "a span"
                        self.problem(number, f"{label} skipped: {error}")

    def _span(self, number: int, span: dict[str, object]) -> None:
        trace_id = _hex_id(span.get("traceId"), TRACE_ID_HEX_CHARS, "traceId")
        span_id = _hex_id(span.get("spanId"), SPAN_ID_HEX_CHARS, "spanId")
        raw_parent = span.get("parentSpanId")
        parent_id = _hex_id(raw_parent, SPAN_ID_HEX_CHARS, "parentSpanId") if raw_parent else None
        name = span.get("name")
        if not isinstance(name, str):
            raise _Malformed("it has no name")
        key = trace_id + span_id
        if key in self._parents:
            self.problem(
                number, f"span {clip(name, 60)!r} ({span_id}) was already read; this copy was ignored"
            )
            return
        self._parents[key] = parent_id

        skipped: list[str] = []
        attributes = _attributes(span.get("attributes"), skipped)
        operation = _optional_str(attributes.get(names.GEN_AI_OPERATION_NAME))
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
        dropped_events = _int64(span.get("droppedEventsCount"), "droppedEventsCount") or 0
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
        status = _object(status_node, "status") if status_node is not None else {}
        status_code = _int64(status.get("code"), "status.code") or 0
        status_name = _STATUS_NAMES.get(status_code, f"code {status_code}")
        status_message = _optional_str(status.get("message")) or ""
        start = _int64(span.get("startTimeUnixNano"), "startTimeUnixNano")
        end = _int64(span.get("endTimeUnixNano"), "endTimeUnixNano")

        if is_disposition:
            self._dispositions.append(
                self._disposition(number, trace_id, span_id, parent_id, attributes, events)
            )
            return

        findings = [
            self._finding(number, event, attributes, name, trace_id, span_id)
            for event in events
            if event.name == names.FINDING_EVENT
        ]
        errors = [_internal_error(event) for event in events if event.name == names.INTERNAL_ERROR_EVENT]
        if is_run:
            agent = _optional_str(attributes.get(names.GEN_AI_AGENT_NAME))
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
            tool_name=_optional_str(attributes.get(names.GEN_AI_TOOL_NAME)),
            call_id=_optional_str(attributes.get(names.GEN_AI_TOOL_CALL_ID)),
            tool_type=_optional_str(attributes.get(names.GEN_AI_TOOL_TYPE)),
            status=status_name,
            status_message=status_message,
            start_time_unix_nano=start,
            end_time_unix_nano=end,
            error_type=_optional_str(attributes.get(names.ERROR_TYPE)),
            findings_count=_optional_int(attributes.get(names.FINDINGS_COUNT)),
            findings_kinds=_str_list(attributes.get(names.FINDINGS_KINDS)),
            findings=findings,
            external_grounds=[
                _external_ground(event) for event in events if event.name == names.EXTERNAL_GROUND_EVENT
            ],
            internal_errors=errors,
        )
        self._calls.append((number, call))

    def _events(self, number: int, span_name: str, node: object, skipped: list[str]) -> list[_Event]:
        kept: list[_Event] = []
        for entry in _list(node, "events"):
            event = _object(entry, "an event")
            name = event.get("name")
            if not isinstance(name, str) or name not in _KEPT_EVENTS:
                continue
            attributes = _attributes(event.get("attributes"), skipped)
            dropped = _int64(event.get("droppedAttributesCount"), "droppedAttributesCount") or 0
            if dropped:
                self.problem(
                    number,
                    f"a {name} event on span {clip(span_name, 60)!r} lost {dropped} attribute(s) to the "
                    "SDK's per-event attribute limit; what remains is reported",
                )
            kept.append(_Event(name, _int64(event.get("timeUnixNano"), "timeUnixNano"), attributes, dropped))
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
        attrs = event.attributes
        missing = [
            key for key in (names.FINDING_KIND, names.FINDING_SEAM, names.FINDING_MESSAGE) if key not in attrs
        ]
        if missing:
            self.problem(
                number,
                f"a finding on span {clip(span_name, 60)!r} lacks {', '.join(missing)}; "
                "it is reported with what it has",
            )
        witnesses: list[dict[str, object]] = []
        declared = _optional_int(attrs.get(names.FINDING_WITNESS_COUNT))
        # A declared count can never exceed the attributes present (a corrupt
        # count must not make the reader loop for ever).
        count = min(declared, len(attrs)) if declared is not None else _count_witnesses(attrs)
        for index in range(count):
            witness = {
                witness_field: attrs[names.witness_attribute(index, witness_field)]
                for witness_field in names.WITNESS_FIELDS
                if names.witness_attribute(index, witness_field) in attrs
            }
            if not witness and not event.dropped_attributes:
                self.problem(
                    number,
                    f"a finding on span {clip(span_name, 60)!r} declares {count} witness(es) "
                    f"but witness {index} has no attributes",
                )
            witnesses.append(witness)
        tool_name = _optional_str(attrs.get(names.GEN_AI_TOOL_NAME))
        call_id = _optional_str(attrs.get(names.GEN_AI_TOOL_CALL_ID))
        return FindingRecord(
            kind=str(attrs.get(names.FINDING_KIND, "")),
            seam=str(attrs.get(names.FINDING_SEAM, "")),
            predicate=_optional_str(attrs.get(names.FINDING_PREDICATE)),
            advisory=attrs.get(names.FINDING_ADVISORY) is True,
            message=str(attrs.get(names.FINDING_MESSAGE, "")),
            identity=str(attrs.get(names.FINDING_IDENTITY, "")),
            tool_name=tool_name or _optional_str(span_attributes.get(names.GEN_AI_TOOL_NAME)),
            call_id=call_id or _optional_str(span_attributes.get(names.GEN_AI_TOOL_CALL_ID)),
            span_name=span_name,
            witnesses=witnesses,
            subjects=_str_list(attrs.get(names.FINDING_SUBJECTS)),
            epoch=_optional_int(attrs.get(names.FINDING_EPOCH)),
            time_unix_nano=event.time,
            trace_id=trace_id,
            span_id=span_id,
        )

    def _disposition(
        self,
        number: int,
        trace_id: str,
        span_id: str,
        parent_id: str | None,
        attributes: Mapping[str, object],
        events: list[_Event],
    ) -> _Disposition:
        rows: list[dict[str, object]] = []
        for index, event in enumerate(e for e in events if e.name == names.DISPOSITION_ROW_EVENT):
            row = {
                row_field: event.attributes[names.row_event_attribute(row_field)]
                for row_field in ROW_FIELDS
                if names.row_event_attribute(row_field) in event.attributes
            }
            absent = [f for f in ROW_FIELDS if f not in row and f != _LAST_FIRED_FIELD]
            if absent:
                self.problem(number, f"ledger row {index} lacks {', '.join(absent)}")
            not_counts = [f for f in (*COUNT_FIELDS, _LAST_FIRED_FIELD) if f in row and not _is_int(row[f])]
            if not_counts:
                self.problem(number, f"ledger row {index} has non-integer {', '.join(not_counts)}")
            rows.append(row)
        if not rows:
            rows = _rows_from_scalars(attributes)
            if rows:
                self.problem(
                    number,
                    f"the summary span carries no {names.DISPOSITION_ROW_EVENT} events; "
                    "the ledger was rebuilt from its per-row attributes",
                )
        totals = {
            key[len(_TOTALS_PREFIX) :]: value
            for key, value in attributes.items()
            if key.startswith(_TOTALS_PREFIX) and isinstance(value, int) and not isinstance(value, bool)
        }
        work_existed = attributes.get(names.WORK_EXISTED)
        return _Disposition(
            line=number,
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=parent_id,
            ledger=rows,
            totals=totals,
            posture=_optional_str(attributes.get(names.POSTURE)),
            work_existed=work_existed if isinstance(work_existed, bool) else None,
            outcome=_optional_str(attributes.get(names.RUN_OUTCOME)),
        )

    # -- metrics and logs ---------------------------------------------------
    def _metrics_line(self, number: int, resource_metrics: object) -> None:
        for resource_entry in _list(resource_metrics, RESOURCE_METRICS):
            resource = _object(resource_entry, "a resourceMetrics entry")
            resource_node = resource.get("resource")
            resource_attrs = (
                _attributes(_object(resource_node, "resource").get("attributes")) if resource_node else {}
            )
            resource_key = json.dumps(resource_attrs, sort_keys=True, default=str)
            for scope_entry in _list(resource.get("scopeMetrics"), "scopeMetrics"):
                scope = _object(scope_entry, "a scopeMetrics entry")
                scope_node = scope.get("scope")
                scope_name = _object(scope_node, "scope").get("name") if scope_node else None
                for metric_entry in _list(scope.get("metrics"), "metrics"):
                    metric = _object(metric_entry, "a metric")
                    if metric.get("name") != names.FINDINGS_METRIC:
                        continue
                    total = metric.get("sum")
                    if total is None:
                        self.problem(number, f"{names.FINDINGS_METRIC} is not a sum; it was not summarised")
                        continue
                    total_node = _object(total, "sum")
                    delta = total_node.get("aggregationTemporality") == _TEMPORALITY_DELTA
                    for point_entry in _list(total_node.get("dataPoints"), "dataPoints"):
                        self._finding_point(
                            _object(point_entry, "a data point"), (resource_key, scope_name), delta=delta
                        )

    def _finding_point(self, point: dict[str, object], origin: tuple[object, ...], *, delta: bool) -> None:
        self.recording.metric_points += 1
        attrs = _attributes(point.get("attributes"))
        if "asInt" in point:
            value = _int64(point["asInt"], "asInt") or 0
        else:
            double = _double(point.get("asDouble", 0), "asDouble")
            value = int(double) if math.isfinite(double) else 0
        key: FindingCountKey = (
            str(attrs.get(names.METRIC_KIND, "")),
            str(attrs.get(names.METRIC_SEAM, "")),
            str(attrs.get(names.METRIC_TOOL, "")),
        )
        if delta:
            self._delta[key] = self._delta.get(key, 0) + value
            return
        # A cumulative series is one process's counter for one attribute set
        # since its start time: keep its latest point, then add series up.
        series = (*origin, json.dumps(attrs, sort_keys=True, default=str), point.get("startTimeUnixNano"))
        time = _int64(point.get("timeUnixNano"), "timeUnixNano") or 0
        series_key = (*key, *series)
        previous = self._cumulative.get(series_key)
        if previous is None or time >= previous[0]:
            self._cumulative[series_key] = (time, value)

    def _logs_line(self, number: int, resource_logs: object) -> None:
        for resource_entry in _list(resource_logs, RESOURCE_LOGS):
            resource = _object(resource_entry, "a resourceLogs entry")
            for scope_entry in _list(resource.get("scopeLogs"), "scopeLogs"):
                scope = _object(scope_entry, "a scopeLogs entry")
                self.recording.log_records += len(_list(scope.get("logRecords"), "logRecords"))

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

        for summary in self._dispositions:
            run, _ = self._owner(summary.trace_id, summary.parent_span_id)
            if run is None:
                self.problem(
                    summary.line,
                    f"a {names.DISPOSITION_SPAN} span ({summary.span_id}) has no run span above it "
                    "in the recording; its ledger is not reported",
                )
                continue
            if run.ledger is not None:
                self.problem(
                    summary.line,
                    f"run {run.span_id} has a second {names.DISPOSITION_SPAN} span ({summary.span_id}); "
                    "the first one read is reported",
                )
                continue
            run.ledger = summary.ledger
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

        counts: dict[FindingCountKey, int] = dict(self._delta)
        for series_key, (_, value) in self._cumulative.items():
            key: FindingCountKey = (str(series_key[0]), str(series_key[1]), str(series_key[2]))
            counts[key] = counts.get(key, 0) + value
        recording.finding_counts = dict(sorted(counts.items()))
        return recording


def _count_witnesses(attrs: Mapping[str, object]) -> int:
    """How many witnesses an event carries when it does not say."""
    count = 0
    while any(names.witness_attribute(count, f) in attrs for f in names.WITNESS_FIELDS):
        count += 1
    return count


def _external_ground(event: _Event) -> dict[str, object]:
    keys = {
        "path": names.EXTERNAL_GROUND_PATH,
        "value": names.EXTERNAL_GROUND_VALUE,
        "source": names.EXTERNAL_GROUND_SOURCE,
    }
    return {label: event.attributes[key] for label, key in keys.items() if key in event.attributes}


def _internal_error(event: _Event) -> dict[str, object]:
    keys = {"where": names.INTERNAL_ERROR_WHERE, "type": names.INTERNAL_ERROR_TYPE}
    return {label: event.attributes[key] for label, key in keys.items() if key in event.attributes}


def _rows_from_scalars(attributes: Mapping[str, object]) -> list[dict[str, object]]:
    """Ledger rows from ``context_integrity.row.<check>.<seam>.<field>`` span attributes."""
    rows: dict[tuple[str, str], dict[str, object]] = {}
    check_field, seam_field = _ROW_IDENTITY
    for key, value in attributes.items():
        if not key.startswith(_ROW_SCALAR_PREFIX):
            continue
        parts = key[len(_ROW_SCALAR_PREFIX) :].split(".")
        if len(parts) != 3 or parts[2] not in ROW_FIELDS:
            continue
        check, seam, row_field = parts
        row = rows.setdefault((check, seam), {check_field: check, seam_field: seam})
        row[row_field] = value
    return [{f: row[f] for f in ROW_FIELDS if f in row} for row in rows.values()]


def _row_untouched(row: Mapping[str, object]) -> bool:
    """Whether a row records no encounter at all, by the ledger's own rule."""
    if not all(_is_int(row[f]) for f in COUNT_FIELDS if f in row):
        return False  # unreadable counts are reported as a problem, not judged
    try:
        ledger_row = LedgerRow(**{f: row[f] for f in ROW_FIELDS if f in row})  # type: ignore[arg-type]
    except TypeError:
        return False
    return not ledger_row.touched()


# ── Formatting ──────────────────────────────────────────────────────────
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
            if row_field == _LAST_FIRED_FIELD:
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
    check_field, seam_field = _ROW_IDENTITY
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
