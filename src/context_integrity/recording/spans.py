"""One OTLP/JSON span read into what the report needs of it, and nothing more.

A span is one of: a run (``invoke_agent``, or a host's agent span), a call (an
``execute_tool`` span, or any span carrying our events: a ``chat`` span with
findings, say), a run summary (``context_integrity.disposition``), or a span
whose only interest is its place in the tree. Attributes are decoded by the
partners of the functions that encoded them (:mod:`..telemetry.schema`); what
cannot be read is said in ``problems``, naming the span.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from ..telemetry import schema
from ..telemetry.schema import names
from ..text import clip, plural
from .model import FindingRecord, RunRecord, ToolCallRecord
from .otlp_json import (
    MAX_UNIX_MILLIS,
    SPAN_ID_HEX_CHARS,
    STATUS_NAMES,
    TRACE_ID_HEX_CHARS,
    Malformed,
    as_list,
    as_object,
    attributes,
    hex_id,
    int64,
    unix_time,
)

Problem = Callable[[str], None]

_OUR_CALL_EVENTS: Final = frozenset(
    {names.FINDING_EVENT, names.EXTERNAL_GROUND_EVENT, names.INTERNAL_ERROR_EVENT}
)
# What the reader takes from a span other than a summary (a summary's attributes are all its ledger).
_SPAN_KEYS: Final = frozenset(
    {
        names.GEN_AI_OPERATION_NAME,
        names.OPENINFERENCE_SPAN_KIND,
        names.GEN_AI_AGENT_NAME,
        names.GEN_AI_TOOL_NAME,
        names.OPENINFERENCE_TOOL_NAME,
        names.GEN_AI_TOOL_CALL_ID,
        names.OPENINFERENCE_TOOL_ID,
        names.GEN_AI_TOOL_TYPE,
        names.ERROR_TYPE,
        names.FINDINGS_COUNT,
        names.FINDINGS_KINDS,
    }
)
# What the plain report prints of a call: no tool type, no span-level findings summary.
_SPAN_BRIEF_KEYS: Final = _SPAN_KEYS - {names.GEN_AI_TOOL_TYPE, names.FINDINGS_COUNT, names.FINDINGS_KINDS}
RUN_PREFIX: Final = names.run_span_name("")
TOOL_PREFIX: Final = names.tool_span_name("")


@dataclass(slots=True)
class Summary:
    """A ``context_integrity.disposition`` span: the ledger of the run above it."""

    line: int
    trace_id: str
    span_id: str
    parent_span_id: str | None
    fields: schema.SummaryFields


@dataclass(slots=True)
class Place:
    """A span whose only interest is its place in the tree."""

    trace_id: str
    span_id: str
    parent_span_id: str | None


# What one span reads as: a run (its own findings and errors in it), a call, a summary, or a place.
SpanRead = RunRecord | ToolCallRecord | Summary | Place


def _optional_str(value: object) -> str | None:
    return value if type(value) is str else None


def _optional_int(value: object) -> int | None:
    return value if type(value) is int else None


def _str_list(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def is_tool_call(call: ToolCallRecord) -> bool:
    return call.operation == names.OPERATION_EXECUTE_TOOL or (
        call.operation is None and call.name.startswith(TOOL_PREFIX)
    )


def _id(value: object, size: int, what: str) -> str:
    if type(value) is str and len(value) == size and value.isalnum():
        return value.lower()  # the shape every OTLP/JSON writer uses: no further look
    return hex_id(value, size, what)


def read_span(number: int, span: dict[str, object], problem: Problem, *, details: bool) -> SpanRead:
    """Read one span found on line ``number``. Raises :class:`Malformed` for a span
    that cannot be placed in the tree (no readable ids or name).

    Without ``details`` a finding keeps what the plain report prints (kind, seam,
    message, tool, call) and not its witnesses, subjects or identity.
    """
    get = span.get
    value = get("traceId")
    if type(value) is str and len(value) == TRACE_ID_HEX_CHARS and value.isalnum():
        trace_id = value.lower()  # the shape every OTLP/JSON writer uses: no further look
    else:
        trace_id = hex_id(value, TRACE_ID_HEX_CHARS, "traceId")
    value = get("spanId")
    if type(value) is str and len(value) == SPAN_ID_HEX_CHARS and value.isalnum():
        span_id = value.lower()
    else:
        span_id = hex_id(value, SPAN_ID_HEX_CHARS, "spanId")
    value = get("parentSpanId")
    if not value:
        parent_id = None
    elif type(value) is str and len(value) == SPAN_ID_HEX_CHARS and value.isalnum():
        parent_id = value.lower()
    else:
        parent_id = hex_id(value, SPAN_ID_HEX_CHARS, "parentSpanId")
    name = get("name")
    if type(name) is not str:
        raise Malformed("it has no name")

    skipped: list[str] = []
    if name == names.DISPOSITION_SPAN:
        problems: list[str] = []
        fields = schema.decode_summary(attributes(get("attributes"), skipped), problems)
        if skipped:
            _said_skipped(name, span_id, skipped, problem)
        for text in problems:
            problem(text)
        _clamp_last_fired(fields, span_id, problem)
        return Summary(number, trace_id, span_id, parent_id, fields)

    attrs = attributes(get("attributes"), skipped, _SPAN_KEYS if details else _SPAN_BRIEF_KEYS)
    operation = schema.span_operation(attrs)
    if operation is None:
        is_run = name.startswith(RUN_PREFIX)
        is_tool = not is_run and name.startswith(TOOL_PREFIX)
    else:
        is_run = operation == names.OPERATION_INVOKE_AGENT
        is_tool = operation == names.OPERATION_EXECUTE_TOOL
    events = get("events")
    findings: list[FindingRecord] = []
    errors: list[dict[str, object]] = []
    grounds: list[dict[str, object]] = []
    if events:
        _events(
            number,
            name,
            trace_id,
            span_id,
            attrs,
            events,
            skipped,
            problem,
            details,
            findings,
            errors,
            grounds,
        )
    if skipped:
        _said_skipped(name, span_id, skipped, problem)
    dropped_events = get("droppedEventsCount")
    if dropped_events:
        problem(
            f"span {clip(name, 60)!r} ({span_id}) dropped {int64(dropped_events, 'droppedEventsCount')} "
            f"event(s) at the SDK's per-span event limit; findings among them are missing from this "
            f"report (its {names.FINDINGS_COUNT} attribute still counts them)"
        )
    # A model call that carried nothing is still a row of the HTML report's waterfall (read with
    # details); the plain report never shows it, so its stream does not keep it.
    is_model_call = details and operation in names.MODEL_CALL_OPERATIONS
    if not (is_run or is_tool or is_model_call or findings or errors or grounds):
        return Place(trace_id, span_id, parent_id)  # only its place in the tree matters

    status = get("status")
    if status:
        status = as_object(status, "status")
        code = status.get("code")
        status_code = (code if type(code) is int else int64(code, "status.code")) or 0
        message = status.get("message")
        status_message = message if type(message) is str else ""
    else:
        status_code, status_message = 0, ""
    status_name = STATUS_NAMES.get(status_code) or f"code {status_code}"

    value = get("startTimeUnixNano")
    if type(value) is str and len(value) < _FAST_TIME_DIGITS and value.isdecimal():
        start: int | None = int(value)  # the shape every writer uses
    else:
        start = _time(value, "startTimeUnixNano", f"span {clip(name, 60)!r} ({span_id})", problem)
    value = get("endTimeUnixNano")
    if not is_run and not details:
        end = None  # the plain report never shows when a call ended
    elif type(value) is str and len(value) < _FAST_TIME_DIGITS and value.isdecimal():
        end = int(value)
    else:
        end = _time(value, "endTimeUnixNano", f"span {clip(name, 60)!r} ({span_id})", problem)
    if is_run:
        agent = schema.span_agent_name(attrs)
        if agent is None:
            agent = name[len(RUN_PREFIX) :] if name.startswith(RUN_PREFIX) else name
        run = RunRecord(trace_id, span_id, parent_id, agent, name, status_name, status_message, start, end)
        run.findings = findings
        run.internal_errors = errors
        return run
    error_type = attrs.get(names.ERROR_TYPE)
    return ToolCallRecord(
        trace_id,
        span_id,
        parent_id,
        name,
        operation,
        schema.span_tool_name(attrs),
        schema.span_tool_call_id(attrs),
        _optional_str(attrs.get(names.GEN_AI_TOOL_TYPE)) if details else None,
        status_name,
        status_message,
        start,
        end,
        error_type if type(error_type) is str else None,
        _optional_int(attrs.get(names.FINDINGS_COUNT)) if details else None,
        _str_list(attrs.get(names.FINDINGS_KINDS)) if details else [],
        findings,
        grounds,
        errors,
    )


def _said_skipped(name: str, span_id: str, skipped: list[str], problem: Problem) -> None:
    problem(
        f"span {clip(name, 60)!r} ({span_id}): {plural(len(skipped), 'attribute')} could not be "
        f"read and {'was' if len(skipped) == 1 else 'were'} left out (first: {skipped[0]})"
    )


def _events(
    number: int,
    span_name: str,
    trace_id: str,
    span_id: str,
    span_attributes: Mapping[str, object],
    node: object,
    skipped: list[str],
    problem: Problem,
    details: bool,
    findings: list[FindingRecord],
    errors: list[dict[str, object]],
    grounds: list[dict[str, object]],
) -> None:
    """Our own events on a span, decoded into the three lists; every other event is skipped unread."""
    for entry in node if type(node) is list else as_list(node, "events"):
        event = entry if type(entry) is dict else as_object(entry, "an event")
        name = event.get("name")
        if type(name) is not str:
            continue  # not one of ours, whatever it is
        if name == names.FINDING_EVENT:
            keep = None if details else schema.FINDING_BRIEF_KEYS
        elif name in _OUR_CALL_EVENTS:
            keep = None
        else:
            continue
        attrs = attributes(event.get("attributes"), skipped, keep)
        raw_dropped = event.get("droppedAttributesCount")
        dropped = (int64(raw_dropped, "droppedAttributesCount") or 0) if raw_dropped else 0
        if dropped:
            problem(
                f"a {name} event on span {clip(span_name, 60)!r} lost {dropped} attribute(s) to the "
                "SDK's per-event attribute limit; what remains is reported"
            )
        if name == names.INTERNAL_ERROR_EVENT:
            errors.append(schema.decode_internal_error(attrs))
            continue
        if name == names.EXTERNAL_GROUND_EVENT:
            grounds.append(schema.decode_external_ground(attrs))
            continue
        time = event.get("timeUnixNano")
        if type(time) is str and len(time) < _FAST_TIME_DIGITS and time.isdecimal():
            at: int | None = int(time)
        else:
            at = _time(time, "timeUnixNano", f"a finding on span {clip(span_name, 60)!r}", problem)
        problems: list[str] = []
        record = schema.decode_finding(
            attrs,
            problems,
            FindingRecord,
            span_name,
            at,
            trace_id,
            span_id,
            lossy=dropped > 0,
            details=details,
        )
        for text in problems:
            problem(f"a finding on span {clip(span_name, 60)!r} {text}")
        # A finding on its own tool span may leave the tool to the span.
        if record.tool_name is None:
            record.tool_name = schema.span_tool_name(span_attributes)
        if record.call_id is None:
            record.call_id = schema.span_tool_call_id(span_attributes)
        findings.append(record)


# A decimal time shorter than this is in range as written (2**64 has 20 digits): read without a look.
_FAST_TIME_DIGITS: Final = 20


def _time(value: object, what: str, where: str, problem: Problem) -> int | None:
    """A time in any other shape than the usual: clamped, or ``None``, and said naming ``where``."""
    return unix_time(value, what, lambda text: problem(f"{where}: {text}"))


def _clamp_last_fired(fields: schema.SummaryFields, span_id: str, problem: Problem) -> None:
    """A ledger row's ``last_fired_at`` (milliseconds) clamped to the range a time can have, and said."""
    for row in fields.rows:
        value = row.get(schema.LAST_FIRED_FIELD)
        if type(value) is int and not 0 <= value <= MAX_UNIX_MILLIS:
            row[schema.LAST_FIRED_FIELD] = unix_time(
                value,
                f"{schema.LAST_FIRED_FIELD} of ledger row {row.get('check')}@{row.get('seam')}",
                lambda text: problem(f"summary span {span_id}: {text}"),
                most=MAX_UNIX_MILLIS,
            )
