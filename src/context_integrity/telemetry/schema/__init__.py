"""Every attribute shape the library writes, as an encode/decode pair.

The instrumentation encodes with these functions; the recording reader decodes
with their partners. One owner per shape (a finding and its indexed witnesses,
an excusal, an internal error, the run summary with its ledger rows) means the
writer and the reader cannot drift apart, and a round-trip test holds each pair
to the other.

Like :mod:`..names`, this package imports no OpenTelemetry: the reader runs
wherever the package is installed. Encoders never raise and clip every string
they did not compose themselves. Decoders are tolerant: they read what is there,
and say what is missing or malformed in ``problems`` instead of failing.

- :mod:`.finding`: findings and witnesses, excusals, internal errors, what a span is;
- :mod:`.summary`: the run summary and its ledger rows;
- :mod:`.recording`: the recording's record of spans it could not keep.
"""

from __future__ import annotations

from .common import Attributes, AttributeValue, clipped, is_int, library_version, scalar
from .finding import (
    FINDING_BRIEF_KEYS,
    FINDING_REQUIRED,
    FindingFields,
    decode_external_ground,
    decode_finding,
    decode_internal_error,
    decode_witnesses,
    external_ground_attributes,
    finding_attributes,
    finding_event_attributes,
    internal_error_attributes,
    provenance_attributes,
    span_agent_name,
    span_operation,
    span_tool_call_id,
    span_tool_name,
    witness_attributes,
)
from .recording import decode_dropped, dropped_attributes
from .summary import (
    COUNT_FIELDS,
    LAST_FIRED_FIELD,
    ROW_IDENTITY,
    SPARSE_COUNT_FIELDS,
    SummaryFields,
    decode_summary,
    summary_attributes,
)

__all__ = [
    "COUNT_FIELDS",
    "FINDING_BRIEF_KEYS",
    "FINDING_REQUIRED",
    "LAST_FIRED_FIELD",
    "ROW_IDENTITY",
    "SPARSE_COUNT_FIELDS",
    "AttributeValue",
    "Attributes",
    "FindingFields",
    "SummaryFields",
    "clipped",
    "decode_dropped",
    "decode_external_ground",
    "decode_finding",
    "decode_internal_error",
    "decode_summary",
    "decode_witnesses",
    "dropped_attributes",
    "external_ground_attributes",
    "finding_attributes",
    "finding_event_attributes",
    "internal_error_attributes",
    "is_int",
    "library_version",
    "provenance_attributes",
    "scalar",
    "span_agent_name",
    "span_operation",
    "span_tool_call_id",
    "span_tool_name",
    "summary_attributes",
    "witness_attributes",
]
