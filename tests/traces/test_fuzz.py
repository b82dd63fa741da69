"""What a hostile or broken trace hands the readers, at every field position: never a traceback.

Property-based (hypothesis). The laws under test:

- the OTLP/JSON decoder takes any JSON document and yields spans or says what it skipped;
- each dialect reads any span, whatever each of its attributes holds (wrong types, JSON that is not
  the shape, JSON nested too deep, cut short, hidden, huge), into a reading or nothing, and each
  :class:`Missing` it gives says what and why;
- the assembler takes any forest of spans (missing parents, duplicates, cycles, any order) and hands
  out runs whose steps are in start order, counting every span it read;
- the replay judges whatever the readers made, and evidence the readers could not read is never a
  pass: every encounter of a check is noted, and findings come only from what was read.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.traces.shapes import triage_book

from context_integrity.judge import Dials
from context_integrity.telemetry.schema import names
from context_integrity.traces import DIALECTS, Span, judge_runs, read_runs
from context_integrity.traces.model import ModelStep, ToolStep
from context_integrity.traces.readings import AgentReading, Missing, ModelCallReading, ToolReading
from context_integrity.traces.sources import spans_of_document
from context_integrity.traces.values import REDACTED

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
part_types = st.sampled_from(["text", "tool_call", "tool_call_response", "reasoning", "blob", "", 3])
parts = st.fixed_dictionaries(
    {"type": part_types},
    optional={
        "content": json_values,
        "id": json_values,
        "name": json_values,
        "arguments": json_values | st.text(max_size=40),
        "response": json_values,
        "result": json_values,
    },
)
messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "tool", "system", "model", "", 7])},
        optional={
            "parts": st.lists(parts, max_size=4) | json_values,
            "content": json_values,
            "tool_call_id": json_values,
        },
    ),
    max_size=5,
)
DEEP = "[" * 5000 + "]" * 5000
hostile_text = st.sampled_from(
    [
        REDACTED,
        " __REDACTED__ ",
        "",
        "{",
        "[1, 2",
        '[{"role": "user"…',
        DEEP,
        "null",
        "12",
        '"x"',
        "x" * 100_000,
        "\ud800",
    ]
)


def content_values() -> st.SearchStrategy[object]:
    """A content attribute: the structure, its JSON text, or something hostile in its place."""
    return st.one_of(
        messages,
        messages.map(json.dumps),
        json_values,
        json_values.map(lambda v: json.dumps(v)),
        hostile_text,
    )


attribute_keys = [
    names.GEN_AI_INPUT_MESSAGES,
    names.GEN_AI_OUTPUT_MESSAGES,
    names.GEN_AI_SYSTEM_INSTRUCTIONS,
    names.GEN_AI_TOOL_DEFINITIONS,
    names.GEN_AI_TOOL_CALL_ARGUMENTS,
    names.GEN_AI_TOOL_CALL_RESULT,
    names.GEN_AI_TOOL_NAME,
    names.GEN_AI_TOOL_CALL_ID,
    names.GEN_AI_AGENT_NAME,
    names.GEN_AI_RESPONSE_ID,
    names.GEN_AI_REQUEST_MODEL,
]
operations = st.sampled_from(
    [names.OPERATION_CHAT, names.OPERATION_EXECUTE_TOOL, names.OPERATION_INVOKE_AGENT, "embeddings", 5, None]
)


@st.composite
def hostile_spans(draw: st.DrawFn) -> Span:
    attributes: dict[str, object] = {names.GEN_AI_OPERATION_NAME: draw(operations)}
    for key in draw(st.lists(st.sampled_from(attribute_keys), unique=True)):
        attributes[key] = draw(content_values())
    return Span(
        trace_id="0" * 31 + "1",
        span_id=draw(st.text("0123456789abcdef", min_size=16, max_size=16)),
        parent_span_id=None,
        name=draw(st.sampled_from(["chat m", "execute_tool t", "invoke_agent a", "x", ""])),
        start_time_unix_nano=draw(st.none() | st.integers(min_value=0, max_value=2**63)),
        end_time_unix_nano=None,
        attributes=attributes,
        scope=draw(st.sampled_from([None, names.INSTRUMENTATION_NAME, "other"])),
        status=draw(st.sampled_from(["unset", "ok", "error"])),
    )


@SETTINGS
@given(span=hostile_spans())
def test_each_dialect_reads_any_span_without_raising(span: Span) -> None:
    for dialect in DIALECTS:
        dialect.claims(span)
        reading = dialect.read(span)
        if isinstance(reading, ModelCallReading):
            for missing in reading.missing:
                assert missing.what and missing.why
            assert (reading.request is None) == any(m.what.startswith("the request") for m in reading.missing)
        elif isinstance(reading, ToolReading):
            assert isinstance(reading.tool_name, str)
            for value in (reading.arguments, reading.result):
                if isinstance(value, Missing):
                    assert value.what and value.why
        else:
            assert reading is None or isinstance(reading, AgentReading)


@SETTINGS
@given(documents=st.lists(json_values | st.fixed_dictionaries({"resourceSpans": json_values}), max_size=3))
def test_any_json_document_decodes_to_spans_or_says_why(documents: list[Any]) -> None:
    said: list[str] = []
    for document in documents:
        if isinstance(document, dict):
            for span in spans_of_document(document, "fuzz", said.append):
                assert len(span.trace_id) == 32 and len(span.span_id) == 16


@st.composite
def forests(draw: st.DrawFn) -> list[Span]:
    """Spans of a few traces, parents drawn from any id (missing, a cycle, itself), in any order."""
    ids = draw(st.lists(st.text("0123456789abcdef", min_size=16, max_size=16), min_size=1, max_size=12))
    spans = []
    for span_id in ids:
        base = draw(hostile_spans())
        spans.append(
            Span(
                trace_id=draw(st.sampled_from(["0" * 31 + "1", "0" * 31 + "2"])),
                span_id=span_id,
                parent_span_id=draw(st.none() | st.sampled_from(ids) | st.just("f" * 16)),
                name=base.name,
                start_time_unix_nano=base.start_time_unix_nano,
                end_time_unix_nano=base.end_time_unix_nano,
                attributes=base.attributes,
                scope=base.scope,
                status=base.status,
            )
        )
    return draw(st.permutations(spans))


@SETTINGS
@given(spans=forests(), whole=st.booleans())
def test_any_forest_assembles_into_ordered_runs_and_judges_without_a_pass_on_missing_evidence(
    spans: list[Span], whole: bool
) -> None:
    runs = read_runs(spans, whole_traces=whole)
    assembled = list(runs)
    assert runs.spans == len(spans)
    dials = Dials(check_column_types="warn", notice_empty_lookups=True, notice_prior_turn_evidence=True)
    for run in assembled:
        starts = [s.start_time_unix_nano or 0 for s in run.steps if isinstance(s, (ModelStep, ToolStep))]
        assert starts == sorted(starts)
    for judged in judge_runs(assembled, triage_book(), dials):
        assert judged.internal_errors == ()
        for unreachable in judged.unreachable:
            assert unreachable.reason and unreachable.rows
        for step in judged.run.steps:
            if isinstance(step, ToolStep) and isinstance(step.result, Missing):
                # A result the trace does not carry is never judged: no finding is on its span.
                assert not [
                    f for f in judged.findings if f.span_id == step.span_id and f.finding.seam == "write"
                ]
