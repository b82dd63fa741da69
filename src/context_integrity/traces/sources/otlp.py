"""OTLP/JSON documents into :class:`~..spans.Span`: one ``{"resourceSpans": [...]}`` at a time.

Every line of our recording and of the Collector's ``file`` exporter is such a document, Tempo's and
Jaeger's trace JSON are converted into one (:mod:`context_integrity.recording.foreign`), and ``serve``
receives one per ``ExportTraceServiceRequest`` (:func:`spans_of_otlp_request`). The protocol's own
field shapes are read by :mod:`context_integrity.recording.otlp_json`, the one decoder of OTLP/JSON:
a span that cannot be placed (no readable ids, no name) is said and skipped, an attribute that
cannot be read is said and left out, and nothing raises.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Final

from ...recording.otlp_json import (
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
)
from ...text import clip, plural
from ..spans import EMPTY, Span, SpanEvent

Say = Callable[[str], None]

# OTLP's span kinds, by number and by the enum names some exports write.
_KINDS: Final[Mapping[object, str]] = {
    0: "unspecified",
    1: "internal",
    2: "server",
    3: "client",
    4: "producer",
    5: "consumer",
    **{
        f"SPAN_KIND_{name.upper()}": name
        for name in ("unspecified", "internal", "server", "client", "producer", "consumer")
    },
}
_STATUS_BY_NAME: Final = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}


def _nothing(text: str) -> None:
    return None


def spans_of_document(document: Mapping[str, object], origin: str, say: Say = _nothing) -> Iterator[Span]:
    """The spans of one OTLP/JSON traces document (``resourceSpans``); ``origin`` names where it was
    read (a line, a URL) in what is said about it."""
    try:
        entries = as_list(document.get(RESOURCE_SPANS), RESOURCE_SPANS)
    except Malformed as error:
        say(f"{origin}: {error}")
        return
    for entry in entries:
        try:
            resource_spans = as_object(entry, "a resourceSpans entry")
            resource_node = resource_spans.get("resource")
            skipped: list[str] = []
            resource = (
                attributes(as_object(resource_node, "a resource").get("attributes"), skipped)
                if resource_node is not None
                else EMPTY
            )
            if skipped:
                say(f"{origin}: {plural(len(skipped), 'resource attribute')} left out (first: {skipped[0]})")
            scopes = resource_spans.get("scopeSpans", resource_spans.get("instrumentationLibrarySpans"))
            for scope_entry in as_list(scopes, "scopeSpans"):
                scope_spans = as_object(scope_entry, "a scopeSpans entry")
                scope = _scope_name(scope_spans)
                for node in as_list(scope_spans.get("spans"), "spans"):
                    span = _span(node, resource, scope, origin, say)
                    if span is not None:
                        yield span
        except Malformed as error:
            say(f"{origin}: {error}; the spans of that entry were skipped")
        except RecursionError:
            say(f"{origin}: nested too deeply to read; the spans of that entry were skipped")


def spans_of_otlp_request(document: Mapping[str, object], say: Say = _nothing) -> Iterator[Span]:
    """The spans of one ``ExportTraceServiceRequest`` in its JSON mapping (``{"resourceSpans": ...}``,
    ids in hex or in protobuf JSON's base64), for a pipeline stage that receives OTLP."""
    return spans_of_document(document, "the request", say)


def _scope_name(scope_spans: Mapping[str, object]) -> str | None:
    for key in ("scope", "instrumentationLibrary"):
        node = scope_spans.get(key)
        if isinstance(node, dict):
            name = node.get("name")
            if isinstance(name, str):
                return name
    return None


def _span(
    node: object, resource: Mapping[str, object], scope: str | None, origin: str, say: Say
) -> Span | None:
    name: object = None
    try:
        span = as_object(node, "a span")
        name = span.get("name")
        if not isinstance(name, str):
            raise Malformed("it has no name")
        trace_id = hex_id(span.get("traceId"), TRACE_ID_HEX_CHARS, "traceId")
        span_id = hex_id(span.get("spanId"), SPAN_ID_HEX_CHARS, "spanId")
        parent = span.get("parentSpanId")
        parent_id = hex_id(parent, SPAN_ID_HEX_CHARS, "parentSpanId") if parent else None
        skipped: list[str] = []
        attrs = attributes(span.get("attributes"), skipped)
        events = tuple(_events(span.get("events"), skipped))
        if skipped:
            say(
                f"{origin}: span {clip(name, 60)!r} ({span_id}): {plural(len(skipped), 'attribute')} could not "
                f"be read and {'was' if len(skipped) == 1 else 'were'} left out (first: {skipped[0]})"
            )
        status, message = _status(span.get("status"))
        return Span(
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=parent_id,
            name=name,
            start_time_unix_nano=int64(span.get("startTimeUnixNano"), "startTimeUnixNano"),
            end_time_unix_nano=int64(span.get("endTimeUnixNano"), "endTimeUnixNano"),
            attributes=attrs,
            events=events,
            status=status,
            status_message=message,
            kind=_KINDS.get(span.get("kind"), "internal"),
            resource=resource,
            scope=scope,
            origin=origin,
        )
    except Malformed as error:
        label = f"span {clip(name, 60)!r}" if isinstance(name, str) else "a span"
        say(f"{origin}: {label} skipped: {error}")
    except RecursionError:
        say(f"{origin}: a span nested too deeply to read was skipped")
    return None


def _events(node: object, skipped: list[str]) -> Iterator[SpanEvent]:
    for entry in as_list(node, "events"):
        event = as_object(entry, "an event")
        name = event.get("name")
        yield SpanEvent(
            name=name if isinstance(name, str) else "",
            time_unix_nano=int64(event.get("timeUnixNano"), "timeUnixNano"),
            attributes=attributes(event.get("attributes"), skipped),
        )


def _status(node: object) -> tuple[str, str]:
    if not node:
        return "unset", ""
    status = as_object(node, "status")
    code = status.get("code")
    if isinstance(code, str) and code in _STATUS_BY_NAME:
        number: int | None = _STATUS_BY_NAME[code]
    else:
        number = int64(code, "status.code")
    message = status.get("message")
    return STATUS_NAMES.get(number or 0, f"code {number}"), message if isinstance(message, str) else ""
