"""Request bodies in, answers out, as the OTLP specification gives them.

The laws under test:

- a binary request and its OTLP/JSON form (ids in hex, enums as integers, 64-bit integers as
  strings) read as the same request; ids in base64 (plain protobuf JSON) are taken too, and unknown
  fields are ignored, as OTLP/JSON receivers must;
- anything else is :class:`BadRequest` with a sentence saying what is wrong, never another exception,
  whatever the bytes (property-based, over arbitrary bytes and arbitrary JSON);
- gzip is undone within the request bound: a small body that inflates past it is :class:`TooLarge`,
  and a body that says gzip and is not is a bad request;
- a failure's body is a ``google.rpc.Status`` in the request's own encoding; a success's is an empty
  ``ExportTraceServiceResponse``.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
from typing import Any

import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from tests.traces.shapes import document, triage_trace

from context_integrity.serve import wire

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=30,
)


def a_request() -> tuple[ExportTraceServiceRequest, dict[str, Any]]:
    exported = document(triage_trace().spans)
    return wire.read_json(json.dumps(exported).encode()), exported


def test_the_binary_and_the_json_form_read_as_one_request() -> None:
    request, exported = a_request()
    assert wire.read_protobuf(request.SerializeToString()) == request
    span = request.resource_spans[0].scope_spans[0].spans[0]
    node = exported["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert span.trace_id.hex() == node["traceId"]
    assert span.span_id.hex() == node["spanId"]
    assert span.start_time_unix_nano == int(node["startTimeUnixNano"])
    assert span.kind == node["kind"]


def test_base64_ids_and_unknown_fields_are_taken() -> None:
    request, exported = a_request()
    node = exported["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    node["traceId"] = base64.b64encode(bytes.fromhex(node["traceId"])).decode()
    node["someFieldFromTheFuture"] = {"x": 1}
    exported["alsoUnknown"] = 3
    assert wire.read_json(json.dumps(exported).encode()) == request


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"{", "not JSON"),
        (b"[]", "not an object"),
        (b'{"resourceSpans": 7}', "not a list"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz"}]}]}]}', "traceId"),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": 5}]}]}]}',
            "not an OTLP/JSON traces request",
        ),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "soon"}]}]}]}',
            "traces request",
        ),
    ],
)
def test_bad_json_is_a_bad_request_that_says_why(body: bytes, said: str) -> None:
    with pytest.raises(wire.BadRequest, match=said):
        wire.read_json(body)


def test_bad_protobuf_is_a_bad_request_that_says_why() -> None:
    with pytest.raises(wire.BadRequest, match="not a protobuf ExportTraceServiceRequest"):
        wire.read_protobuf(b"\x0a\xff\xff\xff\xff\x0f")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_no_bytes_raise_anything_but_a_bad_request(body: bytes) -> None:
    for read in (wire.read_protobuf, wire.read_json):
        with contextlib.suppress(wire.BadRequest):
            read(body)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_no_json_raises_anything_but_a_bad_request(value: object) -> None:
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [value]}]}]}).encode()
    for candidate in (body, json.dumps(value).encode()):
        with contextlib.suppress(wire.BadRequest):
            wire.read_json(candidate)


def test_gzip_is_undone_within_the_bound() -> None:
    request, _ = a_request()
    body = request.SerializeToString()
    assert wire.gunzip(gzip.compress(body)) == body
    bomb = gzip.compress(b"\0" * 5_000_000)
    assert len(bomb) < 10_000
    with pytest.raises(wire.TooLarge, match="larger than 1,000,000 bytes"):
        wire.gunzip(bomb, limit=1_000_000)
    with pytest.raises(wire.BadRequest, match="gzip"):
        wire.gunzip(b"not gzip at all")
    with pytest.raises(wire.BadRequest, match="ends before"):
        wire.gunzip(gzip.compress(body)[:-12])


@pytest.mark.parametrize("encoding", [wire.PROTOBUF, wire.JSON])
def test_answers_are_in_the_requests_encoding(encoding: str) -> None:
    failure = wire.status(wire.INVALID_ARGUMENT, "the body is not JSON", encoding)
    success = wire.success(encoding)
    if encoding == wire.JSON:
        status = json_format.Parse(failure, status_pb2.Status())
        assert json_format.Parse(success, ExportTraceServiceResponse()) == ExportTraceServiceResponse()
    else:
        status = status_pb2.Status.FromString(failure)
        assert ExportTraceServiceResponse.FromString(success) == ExportTraceServiceResponse()
    assert status.code == wire.INVALID_ARGUMENT
    assert status.message == "the body is not JSON"


def test_only_otlps_content_types_are_read() -> None:
    assert wire.reader_for("application/x-protobuf") is not None
    assert wire.reader_for("Application/JSON; charset=utf-8") is not None
    assert wire.reader_for("text/plain") is None
    assert wire.reader_for(None) is None
