"""Every attribute shape round-trips: what the instrumentation encodes, the reader decodes.

The laws under test, for each encode/decode pair in ``telemetry.schema``:

- Decoding the encoded attributes gives back the value, field for field, as
  the reader reports it (subjects rendered, strings clipped to the attribute
  bound, a witness's absent epoch absent), with no problem reported.
- The same holds after the attributes have been through a real SDK span, the
  recording's OTLP/JSON encoding and the reader's OTLP/JSON codec.
- A decoder given less than its encoder writes reports what is missing instead
  of raising.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from context_integrity.findings import KINDS, SEAMS, STRATA, Finding, Subject, Witness
from context_integrity.judge import REGISTERED_CHECKS
from context_integrity.ledger import ROW_FIELDS, CheckId, LedgerRow
from context_integrity.limits import MAX_ATTRIBUTE_CHARS
from context_integrity.recording import otlp_json
from context_integrity.telemetry import schema
from context_integrity.telemetry.export.file_export import spans_document
from context_integrity.telemetry.schema import names
from context_integrity.text import clip

texts = st.text(max_size=40) | st.text(min_size=MAX_ATTRIBUTE_CHARS - 2, max_size=MAX_ATTRIBUTE_CHARS + 40)
small_ints = st.integers(min_value=0, max_value=2**40)
values = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**62), max_value=2**62)
    | st.floats(allow_nan=False)
    | texts
    | st.lists(st.integers(), max_size=3)
    | st.dictionaries(st.text(max_size=5), st.integers(), max_size=3)
)
subjects = st.builds(Subject, st.sampled_from(["tool", "map", "entity", "answer"]), st.text(max_size=20))
witnesses = st.builds(
    Witness,
    subject=subjects,
    predicate=st.text(max_size=30),
    value=values,
    epoch=st.none() | small_ints,
    stratum=st.sampled_from(STRATA),
    provenance=texts,
)
findings = st.builds(
    Finding,
    kind=st.sampled_from(KINDS),
    seam=st.sampled_from(SEAMS),
    subjects=st.lists(subjects, max_size=3).map(tuple),
    predicate=st.none() | st.text(max_size=30),
    witnesses=st.lists(witnesses, max_size=4).map(tuple),
    epoch=st.none() | small_ints,
    message=texts,
    advisory=st.booleans(),
)


def expected_finding(finding: Finding, tool: str | None, call_id: str | None) -> dict[str, object]:
    return {
        "kind": finding.kind,
        "seam": finding.seam,
        "predicate": finding.predicate,
        "advisory": finding.advisory,
        "message": clip(finding.message, MAX_ATTRIBUTE_CHARS),
        "identity": finding.identity(with_epoch=False),
        "tool_name": tool,
        "call_id": call_id,
        "subjects": [s.render() for s in finding.subjects],
        "epoch": finding.epoch,
        "witnesses": [
            {
                key: value
                for key, value in {
                    "subject": w.subject.render(),
                    "predicate": w.predicate,
                    "value": schema.scalar(w.value),
                    "epoch": w.epoch,
                    "stratum": w.stratum,
                    "provenance": clip(w.provenance, MAX_ATTRIBUTE_CHARS),
                }.items()
                if not (key == "epoch" and value is None)
            }
            for w in finding.witnesses
        ],
    }


def fields_of(decoded: schema.FindingFields) -> dict[str, object]:
    return {name: getattr(decoded, name) for name in schema.FindingFields.__slots__}


def through_the_recording(attributes: schema.Attributes, *, as_event: bool) -> dict[str, object]:
    """The attributes as the reader sees them after a real span and the recording's encoding."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer(names.INSTRUMENTATION_NAME).start_as_current_span("s") as span:
        if as_event:
            span.add_event(names.FINDING_EVENT, attributes)
        else:
            span.set_attributes(attributes)
    provider.shutdown()
    spans: list[ReadableSpan] = list(memory.get_finished_spans())
    line = json.loads(json.dumps(spans_document(spans)))
    [node] = line[otlp_json.RESOURCE_SPANS][0]["scopeSpans"][0]["spans"]
    if as_event:
        node = node["events"][0]
    return otlp_json.attributes(node.get("attributes"))


tools = st.none() | st.text(min_size=1, max_size=20)


@settings(max_examples=200, deadline=None)
@given(finding=findings, tool=tools, call_id=tools)
def test_a_finding_round_trips(finding: Finding, tool: str | None, call_id: str | None) -> None:
    problems: list[str] = []
    encoded = schema.finding_attributes(finding, tool_name=tool, call_id=call_id)
    decoded = schema.decode_finding(encoded, problems, schema.FindingFields)
    assert fields_of(decoded) == expected_finding(finding, tool, call_id)
    assert problems == []


@settings(max_examples=40, deadline=None)
@given(finding=findings, tool=tools, call_id=tools)
def test_a_finding_round_trips_through_a_span_and_the_recording(
    finding: Finding, tool: str | None, call_id: str | None
) -> None:
    problems: list[str] = []
    attributes = through_the_recording(
        schema.finding_attributes(finding, tool_name=tool, call_id=call_id), as_event=True
    )
    decoded = schema.decode_finding(attributes, problems, schema.FindingFields)
    assert fields_of(decoded) == expected_finding(finding, tool, call_id)
    assert problems == []


def test_a_finding_missing_its_core_says_so_and_keeps_what_it_has() -> None:
    problems: list[str] = []
    decoded = schema.decode_finding(
        {names.FINDING_SEAM: "write", names.FINDING_WITNESS_COUNT: 1}, problems, schema.FindingFields
    )
    assert decoded.seam == "write" and decoded.kind == "" and decoded.witnesses == [{}]
    assert problems == [
        f"lacks {names.FINDING_KIND}, {names.FINDING_MESSAGE}; it is reported with what it has",
        "declares 1 witness(es) but witness 0 has no attributes",
    ]


def test_a_witness_count_larger_than_the_attributes_is_bounded() -> None:
    problems: list[str] = []
    decoded = schema.decode_witnesses({names.FINDING_WITNESS_COUNT: 10**12}, problems, lossy=True)
    assert decoded == [{}]  # bounded by the attributes present, not by the claim
    assert problems == []


def _row(check: CheckId, counts: tuple[int, int, int, int, int], fired: int | None) -> LedgerRow:
    return LedgerRow(check.check, check.seam, *counts, fired)


rows = st.builds(
    _row,
    st.sampled_from(REGISTERED_CHECKS),
    st.tuples(small_ints, small_ints, small_ints, small_ints, small_ints),
    st.none() | small_ints,
)
ledgers = st.lists(rows, max_size=len(REGISTERED_CHECKS), unique_by=lambda row: row.check_id)
totals = st.fixed_dictionaries({count: small_ints for count in schema.COUNT_FIELDS})


@settings(max_examples=100, deadline=None)
@given(ledger=ledgers, totals=totals, work_existed=st.booleans(), through_a_span=st.booleans())
def test_a_summary_round_trips(
    ledger: list[LedgerRow], totals: dict[str, int], work_existed: bool, through_a_span: bool
) -> None:
    encoded = schema.summary_attributes(
        ledger, totals, posture="dev", work_existed=work_existed, outcome="abandoned"
    )
    attributes: Any = through_the_recording(encoded, as_event=False) if through_a_span else encoded
    problems: list[str] = []
    decoded = schema.decode_summary(attributes, problems)
    assert decoded.rows == [row.as_dict() for row in ledger]
    assert decoded.totals == totals
    assert (decoded.posture, decoded.work_existed, decoded.outcome) == ("dev", work_existed, "abandoned")
    assert problems == []


def test_a_summary_row_with_a_broken_count_is_reported_not_dropped() -> None:
    row = LedgerRow(*REGISTERED_CHECKS[0])
    encoded: dict[str, object] = dict(
        schema.summary_attributes([row], {}, posture="observe", work_existed=True, outcome="ok")
    )
    encoded[names.row_attribute(row.check, row.seam, "checked")] = "lots"
    del encoded[names.row_attribute(row.check, row.seam, "not_applicable")]
    problems: list[str] = []
    [decoded] = schema.decode_summary(encoded, problems).rows
    assert decoded["checked"] == "lots"
    assert problems == ["ledger row 0 lacks not_applicable", "ledger row 0 has non-integer checked"]


@given(path=texts, value=texts, source=texts, tool=tools, call_id=tools)
def test_an_external_ground_round_trips(
    path: str, value: str, source: str, tool: str | None, call_id: str | None
) -> None:
    encoded = schema.external_ground_attributes(
        tool_name=tool, call_id=call_id, path=path, value=value, source=source
    )
    assert schema.decode_external_ground(encoded) == {
        "path": clip(path, MAX_ATTRIBUTE_CHARS),
        "value": clip(value, MAX_ATTRIBUTE_CHARS),
        "source": clip(source, MAX_ATTRIBUTE_CHARS),
    }


def test_an_internal_error_round_trips() -> None:
    class Odd(KeyError):
        pass

    encoded = schema.internal_error_attributes("judge.write", Odd("x"))
    assert schema.decode_internal_error(encoded) == {"where": "judge.write", "type": Odd.__qualname__}


@given(ledger=ledgers, totals=totals)
def test_the_exceptional_counts_are_written_only_when_nonzero(
    ledger: list[LedgerRow], totals: dict[str, int]
) -> None:
    encoded = schema.summary_attributes(ledger, totals, posture="observe", work_existed=True, outcome="ok")
    for row in ledger:
        for row_field in ROW_FIELDS[2:]:
            value = getattr(row, row_field)
            written = names.row_attribute(row.check, row.seam, row_field) in encoded
            if row_field in schema.SPARSE_COUNT_FIELDS:
                assert written is (value != 0)
            elif row_field == schema.LAST_FIRED_FIELD:
                assert written is (value is not None)
            else:
                assert written  # the everyday counts, zero or not
    for key, value in totals.items():
        written = names.totals_attribute(key) in encoded
        assert written is (value != 0 or key not in schema.SPARSE_COUNT_FIELDS)


def test_the_sparse_counts_are_row_fields() -> None:
    assert set(schema.SPARSE_COUNT_FIELDS) <= set(schema.COUNT_FIELDS)


@given(count=st.integers(min_value=1, max_value=10**9), traces=st.lists(st.text(max_size=32), max_size=40))
def test_a_drop_record_round_trips(count: int, traces: list[str]) -> None:
    from context_integrity.limits import MAX_DROPPED_TRACES_NAMED

    encoded = schema.dropped_attributes(count, traces)
    assert schema.decode_dropped(encoded) == (count, traces[:MAX_DROPPED_TRACES_NAMED])
    assert schema.decode_dropped({names.FINDING_KIND: "x"}) is None  # another record
