"""A received protobuf span as the trace readers' :class:`~context_integrity.traces.spans.Span`.

The dialects read :class:`Span`, never protobuf, so a span the pipeline receives is read exactly as
the same span read from a file or a backend. Attribute values are decoded as OTLP/JSON's are
(:mod:`context_integrity.recording.otlp_json`): strings, booleans, integers, floats, lists, mappings,
bytes left as base64. A value nested deeper than :data:`MAX_VALUE_DEPTH` is read as ``None``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1 import trace_pb2

from ..recording.otlp_json import STATUS_NAMES
from ..traces.sources.otlp import SPAN_KINDS
from ..traces.spans import EMPTY, Span, SpanEvent

# Protobuf allows a hundred levels; no attribute a dialect reads nests past a handful.
MAX_VALUE_DEPTH: Final = 32


def value_of(value: AnyValue, depth: int = 0) -> object:
    """An ``AnyValue`` as a Python value (``None`` for an empty one)."""
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value
    if which == "int_value":
        return value.int_value
    if which == "bool_value":
        return value.bool_value
    if which == "double_value":
        return value.double_value
    if depth >= MAX_VALUE_DEPTH:
        return None
    if which == "array_value":
        return [value_of(item, depth + 1) for item in value.array_value.values]
    if which == "kvlist_value":
        return attributes_of(value.kvlist_value.values, depth + 1)
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return None


def attributes_of(pairs: Iterable[KeyValue], depth: int = 0) -> dict[str, object]:
    """An attribute list as a dict (a key written twice keeps its last value, as OTLP/JSON's reader)."""
    out: dict[str, object] = {}
    for pair in pairs:
        value = pair.value
        if value.WhichOneof("value") == "string_value":  # most attributes: no call down
            out[pair.key] = value.string_value
        else:
            out[pair.key] = value_of(value, depth)
    return out


def _time(nanos: int) -> int | None:
    return nanos or None


def span_of(span: trace_pb2.Span, resource: Mapping[str, object], scope: str | None) -> Span:
    """The whole span: ids in hex, attributes and events decoded, its resource's attributes and scope."""
    return _span(span, resource, scope, whole=True)


def proto_place_of(span: trace_pb2.Span, resource: Mapping[str, object], scope: str | None) -> Span:
    """:func:`place_of` a span never decoded whole."""
    return _span(span, resource, scope, whole=False)


def _span(span: trace_pb2.Span, resource: Mapping[str, object], scope: str | None, *, whole: bool) -> Span:
    status = span.status
    return Span(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex() or None,
        name=span.name,
        start_time_unix_nano=_time(span.start_time_unix_nano),
        end_time_unix_nano=_time(span.end_time_unix_nano),
        attributes=attributes_of(span.attributes) if whole and span.attributes else EMPTY,
        events=tuple(
            SpanEvent(
                event.name,
                _time(event.time_unix_nano),
                attributes_of(event.attributes) if event.attributes else EMPTY,
            )
            for event in span.events
        )
        if whole
        else (),
        status=STATUS_NAMES.get(status.code, f"code {status.code}"),
        status_message=status.message,
        kind=SPAN_KINDS.get(span.kind, "internal") if whole else "internal",
        resource=resource,
        scope=scope or None,
        origin="the pipeline",
    )


@dataclass(frozen=True, slots=True)
class Signs:
    """What a span must carry for some dialect to claim it (each dialect's ``signs``): a scope name,
    or a string in the span's serialized bytes (an attribute key). ``None`` when a dialect says none:
    every span is then asked."""

    scopes: frozenset[str]
    in_bytes: tuple[bytes, ...]

    def scope_may_claim(self, scope: str) -> bool:
        return scope in self.scopes

    def may_claim(self, data: bytes) -> bool:
        return any(sign in data for sign in self.in_bytes)


def signs_of(dialects: Iterable[object]) -> Signs | None:
    found: list[str] = []
    for dialect in dialects:
        signs = getattr(dialect, "signs", None)
        if not signs:
            return None
        found.extend(signs)
    return Signs(frozenset(found), tuple(sign.encode("utf-8") for sign in found))


def place_of(span: Span) -> Span:
    """Only where ``span`` sits in its trace (ids, name, times, status, its resource and scope): what
    the assembler needs of a span beside its reading, to follow parent links and name the service."""
    return Span(
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        name=span.name,
        start_time_unix_nano=span.start_time_unix_nano,
        end_time_unix_nano=span.end_time_unix_nano,
        status=span.status,
        status_message=span.status_message,
        resource=span.resource,
        scope=span.scope,
        origin=span.origin,
    )
