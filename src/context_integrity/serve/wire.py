"""OTLP on the wire: request bodies in, response bodies out, as the OTLP specification gives them.

A request is an ``ExportTraceServiceRequest``, in binary protobuf (gRPC, and OTLP/HTTP with
``application/x-protobuf``) or in OTLP/JSON (``application/json``: protobuf's JSON mapping with
trace and span ids in hex and enums as integers). A body that cannot be read raises
:class:`BadRequest` with a sentence that says why; the receivers answer it as the specification
says (HTTP 400 with a ``google.rpc.Status`` body in the request's own encoding, gRPC
``INVALID_ARGUMENT``), and a body past :data:`~context_integrity.limits.SERVE_MAX_REQUEST_BYTES`
raises :class:`TooLarge` (HTTP 413, gRPC ``RESOURCE_EXHAUSTED``). Nothing here raises anything else.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Callable
from typing import Final

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from ..limits import SERVE_MAX_REQUEST_BYTES
from ..recording.otlp_json import (
    RESOURCE_SPANS,
    SPAN_ID_HEX_CHARS,
    TRACE_ID_HEX_CHARS,
    Malformed,
    as_list,
    as_object,
    hex_id,
)
from ..text import clip

TRACES_PATH: Final = "/v1/traces"
PROTOBUF: Final = "application/x-protobuf"
JSON: Final = "application/json"
GZIP: Final = "gzip"
# The gRPC method an OTLP trace exporter calls.
GRPC_SERVICE: Final = "opentelemetry.proto.collector.trace.v1.TraceService"
GRPC_METHOD: Final = "Export"
GRPC_EXPORT_PATH: Final = f"/{GRPC_SERVICE}/{GRPC_METHOD}"

# The bytes of a span id and a trace id.
TRACE_ID_BYTES: Final = TRACE_ID_HEX_CHARS // 2
SPAN_ID_BYTES: Final = SPAN_ID_HEX_CHARS // 2

# How much of a reason a refusal quotes back to the sender.
_MAX_REASON_CHARS: Final = 300


class BadRequest(ValueError):
    """A request body that is not an ``ExportTraceServiceRequest``; the message says why."""


class TooLarge(ValueError):
    """A request body past the bound, as received or once gzip is undone."""


def too_large_message(limit: int = SERVE_MAX_REQUEST_BYTES) -> str:
    return f"the request is larger than {limit:,} bytes; send smaller batches"


def gunzip(body: bytes, limit: int = SERVE_MAX_REQUEST_BYTES) -> bytes:
    """A gzip body undone, never past ``limit`` bytes (a small bomb must not become gigabytes)."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as error:
        raise BadRequest(f"the body says it is gzip, and is not ({error})") from None
    if len(out) > limit:
        raise TooLarge(too_large_message(limit))
    if not inflater.eof:
        raise BadRequest("the gzip body ends before its stream does")
    return out


def read_protobuf(body: bytes) -> ExportTraceServiceRequest:
    """A binary ``ExportTraceServiceRequest``."""
    try:
        request: ExportTraceServiceRequest = ExportTraceServiceRequest.FromString(body)
    except (DecodeError, RecursionError) as error:
        raise BadRequest(f"the body is not a protobuf ExportTraceServiceRequest ({_reason(error)})") from None
    return request


def read_json(body: bytes) -> ExportTraceServiceRequest:
    """An OTLP/JSON ``ExportTraceServiceRequest``: protobuf's JSON mapping, with the ids in hex
    (base64, as plain protobuf JSON writes them, is taken too) and unknown fields ignored."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError) as error:
        raise BadRequest(f"the body is not JSON ({_reason(error)})") from None
    try:
        _ids_to_base64(as_object(document, "the request"))
        request: ExportTraceServiceRequest = json_format.ParseDict(
            document, ExportTraceServiceRequest(), ignore_unknown_fields=True
        )
    except Malformed as error:
        raise BadRequest(f"the body is not an OTLP/JSON traces request: {error}") from None
    except (json_format.ParseError, RecursionError, TypeError, ValueError) as error:
        raise BadRequest(f"the body is not an OTLP/JSON traces request ({_reason(error)})") from None
    return request


def _ids_to_base64(document: dict[str, object]) -> None:
    """Rewrite every trace and span id of an OTLP/JSON request into protobuf JSON's base64, in place."""
    for resource_entry in as_list(document.get(RESOURCE_SPANS), RESOURCE_SPANS):
        resource_spans = as_object(resource_entry, "a resourceSpans entry")
        for scope_entry in as_list(resource_spans.get("scopeSpans"), "scopeSpans"):
            scope_spans = as_object(scope_entry, "a scopeSpans entry")
            for span_node in as_list(scope_spans.get("spans"), "spans"):
                span = as_object(span_node, "a span")
                _rewrite(span, "traceId", TRACE_ID_HEX_CHARS)
                _rewrite(span, "spanId", SPAN_ID_HEX_CHARS)
                _rewrite(span, "parentSpanId", SPAN_ID_HEX_CHARS)
                for link_node in as_list(span.get("links"), "links"):
                    link = as_object(link_node, "a link")
                    _rewrite(link, "traceId", TRACE_ID_HEX_CHARS)
                    _rewrite(link, "spanId", SPAN_ID_HEX_CHARS)


def _rewrite(node: dict[str, object], key: str, size: int) -> None:
    value = node.get(key)
    if value is None or value == "":
        return
    node[key] = base64.b64encode(bytes.fromhex(hex_id(value, size, key))).decode("ascii")


def _reason(error: BaseException) -> str:
    if isinstance(error, RecursionError):
        return "nested too deeply"
    return clip(str(error) or type(error).__name__, _MAX_REASON_CHARS)


# ── What the receivers answer ───────────────────────────────────────────


def success(encoding: str) -> bytes:
    """The body of a full success: an empty ``ExportTraceServiceResponse``, in ``encoding``."""
    return _encode(ExportTraceServiceResponse(), encoding)


def status(code: int, message: str, encoding: str) -> bytes:
    """A failure's body: a ``google.rpc.Status``, in the request's encoding, as OTLP/HTTP requires."""
    return _encode(status_pb2.Status(code=code, message=clip(message, _MAX_REASON_CHARS)), encoding)


def _encode(message: ExportTraceServiceResponse | status_pb2.Status, encoding: str) -> bytes:
    if encoding == JSON:
        text: str = json_format.MessageToJson(message, indent=None)
        return text.encode("utf-8")
    data: bytes = message.SerializeToString()
    return data


INVALID_ARGUMENT: Final = code_pb2.INVALID_ARGUMENT
RESOURCE_EXHAUSTED: Final = code_pb2.RESOURCE_EXHAUSTED
UNAVAILABLE: Final = code_pb2.UNAVAILABLE

# Which reader a content type names (parameters such as ``charset`` aside); ``None``: neither.
Reader = Callable[[bytes], ExportTraceServiceRequest]


def reader_for(content_type: str | None) -> tuple[str, Reader] | None:
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind == PROTOBUF:
        return PROTOBUF, read_protobuf
    if kind == JSON:
        return JSON, read_json
    return None
