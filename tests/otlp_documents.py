"""OTLP/JSON recording lines built by hand, every string in them chosen by the test.

The hostile-reader tests put control characters, wrong types and absurd numbers in each position a
recording has; the shapes here are the ones the library writes (every name from
``telemetry.schema.names``), so a line is read as far as its hostile piece lets it be.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tests.traces.shapes import attributes

from context_integrity.findings import KINDS
from context_integrity.ledger import ROW_FIELDS
from context_integrity.telemetry.schema import names

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
RUN_ID = "b7ad6b7169203331"
TOOL_ID = "00f067aa0ba902b7"
CHAT_ID = "1f2e3d4c5b6a7980"
SUMMARY_ID = "53995c3f42cd8ad8"
START = 1_717_000_000_000_000_000


def span(
    span_id: str,
    name: str,
    parent: str | None,
    values: Mapping[str, object],
    *,
    events: list[dict[str, Any]] | None = None,
    offset: int = 0,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": TRACE_ID,
        "spanId": span_id,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(START + offset),
        "endTimeUnixNano": str(START + offset + 1_000_000),
        "attributes": attributes(values),
        "events": events or [],
        "status": status or {"code": 0},
    }
    if parent is not None:
        out["parentSpanId"] = parent
    return out


def event(name: str, values: Mapping[str, object], offset: int = 0) -> dict[str, Any]:
    return {"timeUnixNano": str(START + offset), "name": name, "attributes": attributes(values)}


def document(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": attributes({"service.name": "hostile"})},
                "scopeSpans": [{"scope": {"name": names.INSTRUMENTATION_NAME}, "spans": spans}],
            }
        ]
    }


# Every string position the readers render, with a plain value; a test replaces any of them.
TEXT_FIELDS: Mapping[str, str] = {
    "agent": "triage",
    "tool": "lookup",
    "call_id": "call-1",
    "model": "scripted",
    "status_message": "backend refused",
    "error_type": "ValueError",
    "kind": KINDS[0],
    "seam": "write",
    "message": "The lookup returned a string where a number was declared.",
    "identity": "column-type-mismatch @write [tool lookup] lun",
    "subject": "tool lookup",
    "predicate": "lun",
    "witness_subject": "tool lookup",
    "witness_predicate": "lun",
    "witness_value": "7 of 9 rows hold str",
    "witness_provenance": "tool call call-1",
    "ground_path": "id",
    "ground_value": "ORD-77",
    "ground_source": "the registry",
    "error_where": "judging a tool result",
    "check": "column-type-mismatch",
    "row_seam": "write",
    "posture": "observe",
    "outcome": "ok",
}


def recording(texts: Mapping[str, object] | None = None, **overrides: object) -> dict[str, Any]:
    """One run with a tool call (a finding, an excusal, an internal error), a chat call with a finding,
    and its summary; ``texts`` (and ``overrides``) replace any of :data:`TEXT_FIELDS`."""
    t: dict[str, object] = {**TEXT_FIELDS, **(texts or {}), **overrides}
    finding = {
        names.FINDING_KIND: t["kind"],
        names.FINDING_SEAM: t["seam"],
        names.FINDING_ADVISORY: False,
        names.FINDING_MESSAGE: t["message"],
        names.GEN_AI_TOOL_NAME: t["tool"],
        names.GEN_AI_TOOL_CALL_ID: t["call_id"],
        names.FINDING_IDENTITY: t["identity"],
        names.FINDING_SUBJECTS: [t["subject"]],
        names.FINDING_WITNESS_COUNT: 1,
        names.FINDING_PREDICATE: t["predicate"],
        names.FINDING_EPOCH: 2,
        names.witness_attribute(0, "subject"): t["witness_subject"],
        names.witness_attribute(0, "predicate"): t["witness_predicate"],
        names.witness_attribute(0, "value"): t["witness_value"],
        names.witness_attribute(0, "stratum"): "asserted",
        names.witness_attribute(0, "provenance"): t["witness_provenance"],
    }
    tool_events = [
        event(names.FINDING_EVENT, finding, 10),
        event(
            names.EXTERNAL_GROUND_EVENT,
            {
                names.EXTERNAL_GROUND_PATH: t["ground_path"],
                names.EXTERNAL_GROUND_VALUE: t["ground_value"],
                names.EXTERNAL_GROUND_SOURCE: t["ground_source"],
            },
            11,
        ),
        event(
            names.INTERNAL_ERROR_EVENT,
            {names.INTERNAL_ERROR_WHERE: t["error_where"], names.INTERNAL_ERROR_TYPE: "KeyError"},
            12,
        ),
    ]
    row = {field: 1 for field in ROW_FIELDS[2:-1]}
    summary = {
        names.POSTURE: t["posture"],
        names.WORK_EXISTED: True,
        names.RUN_OUTCOME: t["outcome"],
        **{
            names.row_attribute(str(t["check"]), str(t["row_seam"]), field): value
            for field, value in row.items()
        },
        names.row_attribute(str(t["check"]), str(t["row_seam"]), ROW_FIELDS[-1]): 1_717_000_000_123,
    }
    spans = [
        span(
            TOOL_ID,
            names.tool_span_name(str(t["tool"])),
            RUN_ID,
            {
                names.GEN_AI_OPERATION_NAME: names.OPERATION_EXECUTE_TOOL,
                names.GEN_AI_TOOL_NAME: t["tool"],
                names.GEN_AI_TOOL_CALL_ID: t["call_id"],
                names.ERROR_TYPE: t["error_type"],
            },
            events=tool_events,
            offset=10,
            status={"code": 2, "message": t["status_message"]},
        ),
        span(
            CHAT_ID,
            names.chat_span_name(str(t["model"])),
            RUN_ID,
            {names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT, names.GEN_AI_REQUEST_MODEL: t["model"]},
            events=[event(names.FINDING_EVENT, {**finding, names.GEN_AI_TOOL_NAME: t["tool"]}, 20)],
            offset=20,
        ),
        span(
            RUN_ID,
            names.run_span_name(str(t["agent"])),
            None,
            {names.GEN_AI_OPERATION_NAME: names.OPERATION_INVOKE_AGENT, names.GEN_AI_AGENT_NAME: t["agent"]},
            status={"code": 2, "message": t["status_message"]},
        ),
        span(SUMMARY_ID, names.DISPOSITION_SPAN, RUN_ID, summary, offset=30),
    ]
    return document(spans)


def line(doc: object) -> str:
    """One recording line, as the recorder writes it (non-ASCII raw)."""
    return json.dumps(doc, ensure_ascii=False) + "\n"


def jaeger(
    *,
    process_tags: object = None,
    start: object = 1_717_000_000_000_000,
    references: object = None,
    logs: object = None,
) -> dict[str, Any]:
    """Jaeger's ``GET /api/traces/{id}``: one tool span with a finding log, under process ``p1``;
    any piece can be given in the wrong shape."""
    finding_log = {
        "timestamp": 1_717_000_000_000_100,
        "fields": [
            {"key": "event", "value": names.FINDING_EVENT},
            {"key": names.FINDING_KIND, "type": "string", "value": "empty-lookup"},
        ],
    }
    span = {
        "traceID": TRACE_ID,
        "spanID": TOOL_ID,
        "operationName": names.tool_span_name("lookup"),
        "references": [{"refType": "CHILD_OF", "spanID": RUN_ID}] if references is None else references,
        "startTime": start,
        "duration": 1000,
        "tags": [
            {"key": names.GEN_AI_OPERATION_NAME, "type": "string", "value": names.OPERATION_EXECUTE_TOOL}
        ],
        "logs": [finding_log] if logs is None else logs,
        "processID": "p1",
    }
    tags = [{"key": "k", "type": "string", "value": "v"}] if process_tags is None else process_tags
    return {
        "data": [
            {"traceID": TRACE_ID, "spans": [span], "processes": {"p1": {"serviceName": "svc", "tags": tags}}}
        ]
    }
