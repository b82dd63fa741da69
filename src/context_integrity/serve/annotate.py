"""A judged trace's spans, with the judgment written on them, as one ``ExportTraceServiceRequest``.

What the library writes in process, written here on spans in flight, with the same names and
encoders (:mod:`context_integrity.telemetry.schema`):

- each finding as a ``context_integrity.finding`` event on the span it is about (the event's time is
  the finding's, else the span's end), and ``context_integrity.findings.count`` / ``.kinds`` on that
  span, covering every finding on it;
- per run, one ``context_integrity.disposition`` summary span under the run span (a new span id, in
  the run span's resource, under the library's instrumentation scope), holding the ledger as the
  in-process summary does, and one ``context_integrity.unreachable`` event per encounter the trace
  could not feed, with its reason (at most :data:`~context_integrity.limits.SERVE_MAX_UNREACHABLE_EVENTS`).

Every held span goes out, judged or not: a span with nothing filed on it goes out as it came.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from google.protobuf.internal.containers import RepeatedCompositeFieldContainer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1 import trace_pb2

from ..findings import kinds_of
from ..limits import SERVE_MAX_UNREACHABLE_EVENTS
from ..telemetry.schema import (
    clipped,
    finding_event_attributes,
    library_version,
    names,
    summary_attributes,
)
from ..traces.replay import JudgedFinding, JudgedRun
from .hold import Envelope, HeldTrace

_INTERNAL: Final = trace_pb2.Span.SpanKind.SPAN_KIND_INTERNAL
# The outcome a summary written from a trace states: the run span's own status says no more.
_OUTCOME_ERROR: Final = "error"
_OUTCOME_OK: Final = "ok"


def put(pairs: RepeatedCompositeFieldContainer[KeyValue], key: str, value: object) -> None:
    """Set one attribute, replacing any the span already had under ``key``."""
    for index, pair in enumerate(pairs):
        if pair.key == key:
            del pairs[index]
            break
    pair = pairs.add()
    pair.key = key
    _set(pair.value, value)


def _set(target: AnyValue, value: object) -> None:
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        target.int_value = value
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, (list, tuple)):
        array = target.array_value
        array.SetInParent()
        for item in value:
            _set(array.values.add(), item)
    else:
        target.string_value = str(value)


def _add_attributes(
    pairs: RepeatedCompositeFieldContainer[KeyValue], attributes: Mapping[str, object]
) -> None:
    for key, value in attributes.items():
        pair = pairs.add()
        pair.key = key
        _set(pair.value, value)


def _event(span: trace_pb2.Span, name: str, time: int, attributes: Mapping[str, object]) -> None:
    event = span.events.add()
    event.name = name
    event.time_unix_nano = time
    _add_attributes(event.attributes, attributes)


def _write_findings(span: trace_pb2.Span, found: Sequence[JudgedFinding]) -> None:
    for judged in found:
        attributes = finding_event_attributes(
            judged.finding, tool_name=judged.tool_name, call_id=judged.call_id
        )
        _event(span, names.FINDING_EVENT, judged.time_unix_nano or span.end_time_unix_nano, attributes)
    put(span.attributes, names.FINDINGS_COUNT, len(found))
    put(span.attributes, names.FINDINGS_KINDS, kinds_of([judged.finding for judged in found]))


def summary_span(judged: JudgedRun) -> trace_pb2.Span:
    """The run's ``context_integrity.disposition`` span, under its run span."""
    run = judged.run
    at = run.end_time_unix_nano or run.start_time_unix_nano or 0
    span = trace_pb2.Span(
        trace_id=bytes.fromhex(run.trace_id),
        span_id=secrets.token_bytes(8),
        parent_span_id=bytes.fromhex(run.span_id),
        name=names.DISPOSITION_SPAN,
        kind=_INTERNAL,
        start_time_unix_nano=at,
        end_time_unix_nano=at,
    )
    _add_attributes(
        span.attributes,
        summary_attributes(
            judged.ledger,
            judged.totals,
            posture=judged.dials.reported_posture(),
            work_existed=judged.work_existed,
            outcome=_OUTCOME_ERROR if run.status == "error" else _OUTCOME_OK,
            dials=judged.dials.in_force(),
        ),
    )
    for unreachable in judged.unreachable[:SERVE_MAX_UNREACHABLE_EVENTS]:
        _event(
            span,
            names.UNREACHABLE_EVENT,
            at,
            clipped(
                {
                    names.UNREACHABLE_ROWS: [row.render() for row in unreachable.rows],
                    names.UNREACHABLE_SPAN_ID: unreachable.span_id,
                    names.UNREACHABLE_REASON: unreachable.reason,
                }
            ),
        )
    return span


class _Request:
    """An ``ExportTraceServiceRequest`` being built, one ``ResourceSpans`` / ``ScopeSpans`` per envelope."""

    def __init__(self) -> None:
        self.request = ExportTraceServiceRequest()
        self._scopes: dict[Envelope, trace_pb2.ScopeSpans] = {}

    def scope(self, envelope: Envelope) -> trace_pb2.ScopeSpans:
        found = self._scopes.get(envelope)
        if found is None:
            resource, resource_schema, scope, scope_schema = envelope
            resource_spans = self.request.resource_spans.add()
            resource_spans.resource.CopyFrom(Resource.FromString(resource))
            resource_spans.schema_url = resource_schema
            found = resource_spans.scope_spans.add()
            found.scope.CopyFrom(InstrumentationScope.FromString(scope))
            found.schema_url = scope_schema
            self._scopes[envelope] = found
        return found


def our_scope_envelope(envelope: Envelope) -> Envelope:
    """``envelope``'s resource under the library's instrumentation scope (where summary spans go)."""
    scope = InstrumentationScope(name=names.INSTRUMENTATION_NAME, version=library_version())
    return (envelope[0], envelope[1], scope.SerializeToString(), "")


def judged_request(trace: HeldTrace, runs: Iterable[JudgedRun]) -> ExportTraceServiceRequest:
    """Every held span of ``trace``, findings written on those they are about, and each run's summary."""
    by_span: dict[str, list[JudgedFinding]] = {}
    runs = list(runs)
    for judged in runs:
        for finding in judged.findings:
            by_span.setdefault(finding.span_id, []).append(finding)
    out = _Request()
    envelopes: dict[str, Envelope] = {}
    for held in trace.spans:
        span_id = held.place.span_id
        envelopes[span_id] = held.envelope
        span = out.scope(held.envelope).spans.add()
        span.MergeFromString(held.data)
        found = by_span.get(span_id)
        if found is not None:
            _write_findings(span, found)
    for judged in runs:
        envelope = envelopes.get(judged.run.span_id) or trace.spans[0].envelope
        out.scope(our_scope_envelope(envelope)).spans.append(summary_span(judged))
    return out.request


def unjudged_request(trace: HeldTrace) -> ExportTraceServiceRequest:
    """Every held span of ``trace`` as it came (a judge that failed, a shutdown, a judgment at source)."""
    out = _Request()
    for held in trace.spans:
        out.scope(held.envelope).spans.add().MergeFromString(held.data)
    return out.request
