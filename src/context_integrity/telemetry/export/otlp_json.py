"""Finished spans straight to OTLP/JSON: the writing half of the recording's codec.

The recording used to encode spans to protobuf (the SDK's ``encode_spans``),
render that with protobuf's JSON mapping and then rewrite every id from base64
to hex: three passes, two of them in Python. This builds the OTLP/JSON document
directly from the SDK's spans in one pass, with exactly the semantics of
``encode_spans`` + ``MessageToDict(use_integers_for_enums=True)`` + hex ids (a
test holds the two equal): proto3 JSON leaves out fields at their default value,
writes 64-bit integers as decimal strings and non-finite doubles as ``"NaN"`` /
``"Infinity"``, and lists fields in field-number order. The reading half is
:mod:`context_integrity.recording.otlp_json`.
"""

from __future__ import annotations

import base64
import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind

_logger = logging.getLogger("context_integrity")
_warned_unencodable = False

JsonObject = dict[str, Any]

# OTLP's Span.SpanKind numbers (SPAN_KIND_INTERNAL = 1, ...).
_SPAN_KINDS: Final[Mapping[SpanKind, int]] = {
    SpanKind.INTERNAL: 1,
    SpanKind.SERVER: 2,
    SpanKind.CLIENT: 3,
    SpanKind.PRODUCER: 4,
    SpanKind.CONSUMER: 5,
}
# SpanFlags: the context's is-remote bit is known (always), and set.
_FLAG_HAS_IS_REMOTE: Final = 0x100
_FLAG_IS_REMOTE: Final = 0x200
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


class _Unencodable(ValueError):
    """A value OTLP cannot carry; the protobuf encoder drops such an attribute, and so do we."""


def _double(value: float) -> float | str:
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def any_value(value: object) -> JsonObject:
    """One ``AnyValue``. The type tests run in the SDK encoder's order (``bool`` before ``int``)."""
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise _Unencodable(f"{value} does not fit in an int64")
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": _double(value)}
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode("ascii")}
    if isinstance(value, Sequence):
        values = [any_value(item) for item in value]
        return {"arrayValue": {"values": values} if values else {}}
    if isinstance(value, Mapping):
        entries = attributes(value, strict=True)
        return {"kvlistValue": {"values": entries} if entries else {}}
    raise _Unencodable(f"invalid type {type(value).__name__}")


def attributes(mapping: Mapping[str, object] | None, *, strict: bool = False) -> list[JsonObject]:
    """An attribute list. Strings, the overwhelming case, skip the general path."""
    out: list[JsonObject] = []
    if not mapping:
        return out
    for key, value in mapping.items():
        if type(value) is str:
            encoded: JsonObject = {"stringValue": value}
        else:
            try:
                encoded = any_value(value)
            except _Unencodable as error:
                if strict:
                    raise
                _warn_unencodable(key, error)
                continue
        out.append({"key": key, "value": encoded} if key else {"value": encoded})
    return out


def _warn_unencodable(key: str, error: _Unencodable) -> None:
    global _warned_unencodable
    if not _warned_unencodable:  # once per process: the same bad attribute recurs on every span
        _warned_unencodable = True
        _logger.warning(
            "context_integrity: attribute %r left out of the recording (%s); further such attributes "
            "are left out without a warning, as OTLP's protobuf encoder leaves them out",
            key,
            error,
        )


def _flags(context: SpanContext | None) -> int:
    if context is not None and context.is_remote:
        return _FLAG_HAS_IS_REMOTE | _FLAG_IS_REMOTE
    return _FLAG_HAS_IS_REMOTE


def _trace_state(context: SpanContext) -> str:
    state = context.trace_state
    return ",".join(f"{key}={value}" for key, value in state.items()) if state is not None else ""


def span(sdk_span: ReadableSpan) -> JsonObject:
    """One span, as ``encode_spans`` would write it, ids in hex."""
    context = sdk_span.get_span_context()
    assert context is not None, "a finished SDK span always has its context"
    out: JsonObject = {"traceId": format(context.trace_id, "032x"), "spanId": format(context.span_id, "016x")}
    trace_state = _trace_state(context)
    if trace_state:
        out["traceState"] = trace_state
    parent = sdk_span.parent
    if parent:
        out["parentSpanId"] = format(parent.span_id, "016x")
    if sdk_span.name:
        out["name"] = sdk_span.name
    out["kind"] = _SPAN_KINDS[sdk_span.kind]
    if sdk_span.start_time:
        out["startTimeUnixNano"] = str(sdk_span.start_time)
    if sdk_span.end_time:
        out["endTimeUnixNano"] = str(sdk_span.end_time)
    encoded_attributes = attributes(sdk_span.attributes)
    if encoded_attributes:
        out["attributes"] = encoded_attributes
    if sdk_span.dropped_attributes:
        out["droppedAttributesCount"] = sdk_span.dropped_attributes
    if sdk_span.events:
        events = []
        for event in sdk_span.events:
            encoded: JsonObject = {}
            if event.timestamp:
                encoded["timeUnixNano"] = str(event.timestamp)
            if event.name:
                encoded["name"] = event.name
            event_attributes = attributes(event.attributes)
            if event_attributes:
                encoded["attributes"] = event_attributes
            if event.dropped_attributes:
                encoded["droppedAttributesCount"] = event.dropped_attributes
            events.append(encoded)
        out["events"] = events
    if sdk_span.dropped_events:
        out["droppedEventsCount"] = sdk_span.dropped_events
    if sdk_span.links:
        links = []
        for link in sdk_span.links:
            linked: JsonObject = {
                "traceId": format(link.context.trace_id, "032x"),
                "spanId": format(link.context.span_id, "016x"),
            }
            link_attributes = attributes(link.attributes)
            if link_attributes:
                linked["attributes"] = link_attributes
            if link.dropped_attributes:
                linked["droppedAttributesCount"] = link.dropped_attributes
            linked["flags"] = _flags(link.context)
            links.append(linked)
        out["links"] = links
    if sdk_span.dropped_links:
        out["droppedLinksCount"] = sdk_span.dropped_links
    status = sdk_span.status
    if status is not None:
        encoded_status: JsonObject = {}
        if status.description:
            encoded_status["message"] = status.description
        if status.status_code.value:
            encoded_status["code"] = status.status_code.value
        out["status"] = encoded_status
    out["flags"] = _flags(parent)
    return out


def resource_json(resource: Resource) -> JsonObject:
    encoded = attributes(resource.attributes)
    return {"attributes": encoded} if encoded else {}


def _scope(scope: InstrumentationScope | None) -> JsonObject:
    if scope is None:
        return {}
    out: JsonObject = {}
    if scope.name:
        out["name"] = scope.name
    if scope.version:
        out["version"] = scope.version
    encoded = attributes(scope.attributes)
    if encoded:
        out["attributes"] = encoded
    return out


def spans_document(spans: Sequence[ReadableSpan]) -> JsonObject:
    """Spans grouped by resource, then by instrumentation scope, as one OTLP/JSON request.

    Resources and scopes group by equality, as ``encode_spans`` groups them;
    the usual single resource object is compared by identity first, so its
    (JSON-hashing) ``__hash__`` never runs.
    """
    groups: list[tuple[Resource, dict[InstrumentationScope | None, list[JsonObject]]]] = []
    last_resource: Resource | None = None
    last_scopes: dict[InstrumentationScope | None, list[JsonObject]] = {}
    for sdk_span in spans:
        resource = sdk_span.resource
        if resource is not last_resource:
            for known, known_scopes in groups:
                if known is resource or known == resource:
                    scopes = known_scopes
                    break
            else:
                scopes = {}
                groups.append((resource, scopes))
            last_resource, last_scopes = resource, scopes
        scope = sdk_span.instrumentation_scope or None
        bucket = last_scopes.get(scope)
        if bucket is None:
            bucket = last_scopes[scope] = []
        bucket.append(span(sdk_span))
    resource_spans: list[JsonObject] = []
    for resource, scopes in groups:
        scope_spans: list[JsonObject] = []
        for scope, encoded in scopes.items():
            entry: JsonObject = {"scope": _scope(scope), "spans": encoded}
            if scope is not None and scope.schema_url:
                entry["schemaUrl"] = scope.schema_url
            scope_spans.append(entry)
        resource_entry: JsonObject = {"resource": resource_json(resource), "scopeSpans": scope_spans}
        if resource.schema_url:
            resource_entry["schemaUrl"] = resource.schema_url
        resource_spans.append(resource_entry)
    return {"resourceSpans": resource_spans} if resource_spans else {}
