"""The recording's span encoder writes exactly what the SDK's protobuf encoding says, as OTLP/JSON.

The laws under test, over generated spans (every attribute type OpenTelemetry
accepts, non-finite doubles, empty strings and arrays, out-of-range integers,
events, links, remote parents, trace state, every status, several resources and
scopes in one batch):

- the document equals ``MessageToDict(encode_spans(spans))`` with ids in hex:
  the encoding the recording wrote before, field for field;
- turned back into protobuf it serialises to the same bytes as ``encode_spans``.
"""

from __future__ import annotations

import base64
import math
from typing import Any, cast

from google.protobuf.json_format import ParseDict
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import (
    Link,
    SpanContext,
    SpanKind,
    StatusCode,
    TraceFlags,
    TraceState,
    set_span_in_context,
)
from opentelemetry.trace.span import NonRecordingSpan

from context_integrity.telemetry.export.file_export import to_otlp_json
from context_integrity.telemetry.export.otlp_json import spans_document

texts = st.text(max_size=12)
# NaN as Python spells it: OTLP/JSON writes "NaN" and cannot carry another NaN's payload bits.
floats = st.floats(allow_nan=False) | st.just(math.nan)
ints = st.integers(min_value=-(2**63), max_value=2**63 - 1)
scalars = st.one_of(st.booleans(), texts, ints, floats)
values = st.one_of(
    scalars,
    st.lists(texts, max_size=3),
    st.lists(ints, max_size=3),
    st.lists(floats, max_size=3),
    st.lists(st.booleans(), max_size=3),
    st.integers(min_value=2**63, max_value=2**70),  # beyond int64: dropped, as the SDK's encoder drops it
)
attribute_sets = st.dictionaries(texts, values, max_size=5)
span_ids = st.integers(min_value=1, max_value=2**64 - 1)
trace_ids = st.integers(min_value=1, max_value=2**128 - 1)
contexts = st.builds(
    lambda trace_id, span_id, remote, state: SpanContext(
        trace_id, span_id, is_remote=remote, trace_flags=TraceFlags(1), trace_state=TraceState(state)
    ),
    trace_ids,
    span_ids,
    st.booleans(),
    st.lists(
        st.tuples(st.sampled_from(["a", "vendor"]), st.sampled_from(["1", "x2"])),
        max_size=2,
        unique_by=lambda kv: kv[0],
    ),
)
span_specs = st.fixed_dictionaries(
    {
        "name": texts,
        "kind": st.sampled_from(list(SpanKind)),
        "attributes": attribute_sets,
        "events": st.lists(st.tuples(texts, attribute_sets), max_size=3),
        "links": st.lists(st.tuples(contexts, attribute_sets), max_size=2),
        "parent": st.none() | contexts,
        "status": st.tuples(st.sampled_from(list(StatusCode)), st.none() | texts),
        "provider": st.integers(min_value=0, max_value=2),
        "scope": st.sampled_from([("a", None), ("a", "1.0"), ("b", "2")]),
    }
)
RESOURCES = [
    Resource.create({"service.name": "one"}),
    Resource.create({"service.name": "one"}),  # equal to the first, a different object
    Resource({"service.name": "two", "n": 2}, schema_url="https://example.com/schema"),
]


def make_spans(specs: list[dict[str, Any]]) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    providers = [TracerProvider(resource=resource) for resource in RESOURCES]
    for provider in providers:
        provider.add_span_processor(SimpleSpanProcessor(memory))
    for spec in specs:
        name, version = spec["scope"]
        tracer = providers[spec["provider"]].get_tracer(name, version)
        parent = spec["parent"]
        context = set_span_in_context(NonRecordingSpan(parent)) if parent is not None else None
        span = tracer.start_span(
            spec["name"],
            context=context,
            kind=spec["kind"],
            attributes=spec["attributes"],
            links=[Link(linked, attrs) for linked, attrs in spec["links"]],
        )
        for event_name, attrs in spec["events"]:
            span.add_event(event_name, attrs)
        code, description = spec["status"]
        span.set_status(code, description if code is StatusCode.ERROR else None)
        span.end()
    for provider in providers:
        provider.shutdown()
    return list(memory.get_finished_spans())


def as_protobuf(document: dict[str, Any]) -> ExportTraceServiceRequest:
    def to_base64(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("traceId", "spanId", "parentSpanId"):
                    node[key] = base64.b64encode(bytes.fromhex(value)).decode()
                else:
                    to_base64(value)
        elif isinstance(node, list):
            for item in node:
                to_base64(item)

    to_base64(document)
    # ParseDict fills and returns the message it is given; protobuf has no stubs here (Any).
    return cast(ExportTraceServiceRequest, ParseDict(document, ExportTraceServiceRequest()))


@settings(max_examples=150, deadline=None)
@given(specs=st.lists(span_specs, min_size=1, max_size=6))
def test_the_document_is_the_protobuf_encoding_as_otlp_json(specs: list[dict[str, Any]]) -> None:
    spans = make_spans(specs)
    document = spans_document(spans)
    assert document == to_otlp_json(encode_spans(spans))
    expected = encode_spans(spans).SerializeToString(deterministic=True)
    assert as_protobuf(document).SerializeToString(deterministic=True) == expected


def test_no_spans_is_no_document() -> None:
    assert spans_document([]) == {}
