"""Reading a recording back, and the report made from it.

The laws under test:

- Round trip: what the instrumentation records through the SDK and the
  OTLP/JSON-lines exporter reads back field for field: the run, its tool calls,
  every finding with its witnesses, the ledger rows in registration order (with
  ``last_fired_at`` only where a check fired), totals, posture, work-existed,
  outcome, and the calls made outside any run. Ids are the SDK's own, in hex.
- A run's findings are all of its findings (tool spans, chat spans, the run
  span itself) in time order; only ``execute_tool`` spans are tool calls; a model
  call is kept, findings or not, when read with details (the HTML waterfall's rows).
- Order does not matter: the lines of a recording, in any order, read the same.
- Ownership follows the parent chain however deep; a chain that breaks at a
  span missing from the recording is reported, never silently dropped.
- The findings counter reads as the latest cumulative value per series, added
  up per kind, seam and tool (delta points are added up).
- Every bad input gets its own problem naming its line (not JSON, truncated,
  not UTF-8, not an object, no OTLP key, a broken span id), an empty recording
  says so, and a missing file raises a sentence that says what to do.
- The report shows every finding message, a ledger row for every registered
  check, and flags a row that never ran in a run where work existed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import Counter, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, PeriodicExportingMetricReader
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.util.types import AttributeValue
from tests.recording_shapes import (
    AGENT,
    LOOKUP_FINDING,
    LOOKUP_TOOL,
    LOOSE_FINDING,
    LOOSE_TOOL,
    MODEL,
    WIRE_FINDING,
    WRITE_FINDING,
    WRITE_TOOL,
    Scenario,
    add_finding,
    chat_span,
    emit_summary,
    hex_span_id,
    record_scenario,
    run_span,
    scenario_ledger,
    tool_span,
    tracer_into,
    untouched_rows,
    witness_expectation,
)

from context_integrity.findings import Finding
from context_integrity.judge import REGISTERED_CHECKS
from context_integrity.ledger import ROW_FIELDS, DispositionLedger
from context_integrity.paths import RECORDING_ENV_VAR, RECORDING_FILE_NAME, default_recording_path
from context_integrity.recording import FindingRecord, Recording, read_recording, read_recording_text
from context_integrity.recording import otlp_json as otlp
from context_integrity.report import format_report
from context_integrity.report import text as report_text
from context_integrity.telemetry.export.file_export import (
    OtlpJsonLinesMetricExporter,
    OtlpJsonLinesSpanExporter,
)
from context_integrity.telemetry.schema import COUNT_FIELDS, names


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    return record_scenario(tmp_path_factory.mktemp("rec") / "recording.otlp.jsonl")


@pytest.fixture(scope="module")
def read(scenario: Scenario) -> Recording:
    return read_recording(scenario.path)


def assert_finding(record: FindingRecord, finding: Finding) -> None:
    assert record.kind == finding.kind
    assert record.seam == finding.seam
    assert record.predicate == finding.predicate
    assert record.advisory is finding.advisory
    assert record.message == finding.message
    assert record.identity == finding.identity(with_epoch=False)
    assert record.subjects == [subject.render() for subject in finding.subjects]
    assert record.epoch == finding.epoch
    assert record.witnesses == [witness_expectation(w) for w in finding.witnesses]


# ── Round trip ──────────────────────────────────────────────────────────
def test_round_trip_reads_one_run_with_the_sdk_ids_in_hex(scenario: Scenario, read: Recording) -> None:
    assert read.problems == []
    assert len(read.runs) == 1
    run = read.runs[0]
    assert run.trace_id == scenario.trace_id
    assert len(run.trace_id) == otlp.TRACE_ID_HEX_CHARS
    assert run.span_id == scenario.run_span_id
    assert len(run.span_id) == otlp.SPAN_ID_HEX_CHARS
    assert run.parent_span_id is None
    assert run.agent == AGENT
    assert run.name == names.run_span_name(AGENT)
    assert run.start_time_unix_nano is not None and run.end_time_unix_nano is not None
    assert run.start_time_unix_nano <= run.end_time_unix_nano


def test_round_trip_reads_tool_calls_in_start_order_with_their_attributes(
    scenario: Scenario, read: Recording
) -> None:
    run = read.runs[0]
    assert [call.span_id for call in run.tool_calls] == scenario.tool_span_ids
    lookup, write = run.tool_calls
    assert (lookup.tool_name, lookup.call_id, lookup.name) == (
        LOOKUP_TOOL,
        "call-1",
        names.tool_span_name(LOOKUP_TOOL),
    )
    assert (write.tool_name, write.call_id) == (WRITE_TOOL, "call-2")
    assert lookup.operation == names.OPERATION_EXECUTE_TOOL
    assert lookup.tool_type == names.TOOL_TYPE_FUNCTION
    assert lookup.parent_span_id == run.span_id
    assert (lookup.findings_count, lookup.findings_kinds) == (1, [LOOKUP_FINDING.kind])
    assert_finding(lookup.findings[0], LOOKUP_FINDING)
    assert_finding(write.findings[0], WRITE_FINDING)
    assert write.external_grounds == [{"path": "args.order_id", "value": "ORD-77", "source": "user message"}]


def test_a_chat_span_with_findings_is_not_a_tool_call(read: Recording) -> None:
    run = read.runs[0]
    assert [call.name for call in run.other_calls] == [names.chat_span_name(MODEL)]
    assert run.other_calls[0].operation == names.OPERATION_CHAT
    assert all(call.operation == names.OPERATION_EXECUTE_TOOL for call in run.tool_calls)


def test_a_model_call_without_findings_is_kept_for_the_waterfall_only_with_details(tmp_path: Path) -> None:
    """A chat span that carried nothing is a row of the HTML report's waterfall (read with details);
    the plain report, streamed without details, still keeps only what it prints."""
    from context_integrity.recording import RecordingStream

    path = tmp_path / "r.jsonl"
    provider, tracer = tracer_into(path)
    with run_span(tracer, AGENT) as run:
        with chat_span(tracer, MODEL):
            pass
        with tool_span(tracer, LOOKUP_TOOL, "call-1"):
            pass
        with chat_span(tracer, MODEL):
            pass
        emit_summary(tracer, run, scenario_ledger())
    provider.shutdown()
    (detailed,) = read_recording(path).runs
    assert [call.operation for call in detailed.other_calls] == [names.OPERATION_CHAT] * 2
    assert all(call.end_time_unix_nano is not None and not call.findings for call in detailed.other_calls)
    (plain,) = list(RecordingStream(path, details=False))
    assert plain.other_calls == []
    assert [call.tool_name for call in plain.tool_calls] == [LOOKUP_TOOL]


def test_run_findings_are_every_finding_in_the_run_in_time_order(scenario: Scenario, read: Recording) -> None:
    run = read.runs[0]
    assert len(run.findings) == len(scenario.findings_in_order)
    for record, finding in zip(run.findings, scenario.findings_in_order, strict=True):
        assert_finding(record, finding)
    times = [f.time_unix_nano or 0 for f in run.findings]
    assert times == sorted(times)
    claim = run.findings[-1]
    assert claim.span_name == run.name  # claim-seam findings sit on the run span
    assert (claim.tool_name, claim.call_id) == (None, None)
    lookup = run.findings[0]
    assert (lookup.tool_name, lookup.call_id, lookup.span_id) == (
        LOOKUP_TOOL,
        "call-1",
        scenario.tool_span_ids[0],
    )


def test_witness_epoch_is_absent_when_the_witness_had_none(read: Recording) -> None:
    fields_present = [set(w) for w in read.runs[0].findings[0].witnesses]
    assert fields_present == [set(witness_expectation(w)) for w in LOOKUP_FINDING.witnesses]
    assert "epoch" not in witness_expectation(LOOKUP_FINDING.witnesses[0])  # the fixture really lacks one
    assert fields_present[0] != fields_present[1]


def test_ledger_rows_round_trip_in_registration_order(scenario: Scenario, read: Recording) -> None:
    run = read.runs[0]
    assert run.ledger == scenario.ledger_rows
    assert [(row["check"], row["seam"]) for row in run.ledger or []] == [
        (c.check, c.seam) for c in REGISTERED_CHECKS
    ]
    fired = [row for row in scenario.ledger_rows if ROW_FIELDS[-1] in row]
    assert fired and len(fired) < len(scenario.ledger_rows)  # present where fired, absent elsewhere
    assert run.totals == scenario.totals
    assert (run.posture, run.work_existed, run.outcome) == ("observe", True, "ok")


def test_a_call_outside_any_run_is_a_loose_call(scenario: Scenario, read: Recording) -> None:
    assert [call.span_id for call in read.loose_calls] == [scenario.loose_span_id]
    loose = read.loose_calls[0]
    assert loose.trace_id == scenario.loose_trace_id != scenario.trace_id
    assert loose.parent_span_id is None
    assert loose.tool_name == LOOSE_TOOL
    assert_finding(loose.findings[0], LOOSE_FINDING)
    assert all(LOOSE_FINDING.message != f.message for f in read.runs[0].findings)


def test_counts_of_what_was_read(read: Recording) -> None:
    assert read.spans == 6  # run, two tools, chat, summary, the loose tool
    assert read.metric_points > 0
    assert read.lines == len(Path(read.source or "").read_text().splitlines())


# ── Metrics ─────────────────────────────────────────────────────────────
def test_finding_counter_reads_the_latest_cumulative_value_added_over_series(
    scenario: Scenario, read: Recording
) -> None:
    assert read.finding_counts == scenario.metric_counts


def test_finding_counter_in_delta_temporality_adds_points_up(tmp_path: Path) -> None:
    path = tmp_path / "delta.jsonl"
    reader = PeriodicExportingMetricReader(
        OtlpJsonLinesMetricExporter(path, preferred_temporality={Counter: AggregationTemporality.DELTA}),
        export_interval_millis=3_600_000,
    )
    provider = MeterProvider(metric_readers=[reader])
    counter = provider.get_meter(names.INSTRUMENTATION_NAME).create_counter(names.FINDINGS_METRIC)
    attrs = {names.METRIC_KIND: "empty-lookup", names.METRIC_SEAM: "write", names.METRIC_TOOL: "t"}
    for amount in (1, 2, 3):
        counter.add(amount, attrs)
        reader.force_flush()
    provider.shutdown()
    assert read_recording(path).finding_counts == {("empty-lookup", "write", "t"): 6}


# ── Order and ownership ─────────────────────────────────────────────────
@pytest.fixture(scope="module")
def scenario_lines(scenario: Scenario) -> list[str]:
    return scenario.path.read_text().splitlines(keepends=True)


def _comparable(recording: Recording) -> tuple[object, ...]:
    return (recording.runs, recording.loose_calls, recording.problems, recording.finding_counts)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_order_of_lines_reads_the_same(scenario_lines: list[str], data: st.DataObject) -> None:
    shuffled = data.draw(st.permutations(scenario_lines))
    assert _comparable(read_recording_text(shuffled)) == _comparable(read_recording_text(scenario_lines))


def test_spans_split_across_many_batches_still_group_into_the_run(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record_scenario(path, with_metrics=False)
    # The summary span and every tool span arrive before the run span.
    lines = path.read_text().splitlines()
    run_lines = [line for line in lines if names.run_span_name(AGENT) in line]
    assert len(run_lines) == 1
    assert lines.index(run_lines[0]) > 0
    recording = read_recording(path)
    assert len(recording.runs) == 1 and recording.runs[0].ledger is not None


def test_a_tool_call_under_a_foreign_span_still_belongs_to_its_run(tmp_path: Path) -> None:
    path = tmp_path / "nested.jsonl"
    provider, tracer = tracer_into(path)
    with (
        run_span(tracer, AGENT) as run,
        tracer.start_as_current_span("framework step"),
        tracer.start_as_current_span("retry"),
        tool_span(tracer, LOOKUP_TOOL, "c1") as span,
    ):
        add_finding(span, LOOKUP_FINDING, tool=LOOKUP_TOOL, call_id="c1")
    provider.shutdown()
    recording = read_recording(path)
    assert recording.loose_calls == []
    assert [c.call_id for c in recording.runs[0].tool_calls] == ["c1"]
    assert recording.runs[0].span_id == hex_span_id(run)
    assert recording.runs[0].ledger is None  # no summary span was emitted


def test_a_nested_run_owns_its_own_calls(tmp_path: Path) -> None:
    path = tmp_path / "sub.jsonl"
    provider, tracer = tracer_into(path)
    with run_span(tracer, "outer"):
        with tool_span(tracer, "a", "outer-call"):
            pass
        with run_span(tracer, "inner"), tool_span(tracer, "b", "inner-call"):
            pass
    provider.shutdown()
    runs = {run.agent: run for run in read_recording(path).runs}
    assert [c.call_id for c in runs["outer"].tool_calls] == ["outer-call"]
    assert [c.call_id for c in runs["inner"].tool_calls] == ["inner-call"]


def test_calls_whose_run_span_is_missing_are_loose_and_reported(scenario_lines: list[str]) -> None:
    without_run = [line for line in scenario_lines if names.run_span_name(AGENT) not in line]
    recording = read_recording_text(without_run)
    assert recording.runs == []
    assert {c.tool_name for c in recording.loose_calls} >= {LOOKUP_TOOL, WRITE_TOOL, LOOSE_TOOL}
    run_span_id = read_recording_text(scenario_lines).runs[0].span_id
    broken = [p for p in recording.problems if run_span_id in p and "not in the recording" in p]
    assert len(broken) == 3  # two tool spans and the chat span
    assert any(names.DISPOSITION_SPAN in p and "no run span" in p for p in recording.problems)


def test_a_span_read_twice_is_kept_once_and_reported(scenario_lines: list[str]) -> None:
    doubled = [*scenario_lines, *scenario_lines]
    recording = read_recording_text(doubled)
    assert _comparable(read_recording_text(scenario_lines))[:2] == _comparable(recording)[:2]
    assert sum("already read" in p for p in recording.problems) == 6


# ── Summary span details ────────────────────────────────────────────────
def test_a_summary_that_writes_every_zero_reads_the_same(tmp_path: Path) -> None:
    """Recordings from before the sparse counts wrote every field of every row, zeros included."""
    path = tmp_path / "dense.jsonl"
    provider, tracer = tracer_into(path)
    ledger = scenario_ledger()
    # LedgerRow.as_dict() types its values as object; past check and seam they are the counts (ints).
    dense = cast(
        "dict[str, AttributeValue]",
        {
            names.row_attribute(row.check, row.seam, field): value
            for row in ledger.report()
            for field, value in row.as_dict().items()
            if field not in ROW_FIELDS[:2]
        },
    )
    with run_span(tracer, AGENT) as run:
        emit_summary(tracer, run, ledger, extra=dense)
    provider.shutdown()
    recording = read_recording(path)
    assert recording.problems == []
    assert recording.runs[0].ledger == [row.as_dict() for row in ledger.report()]


def test_outcome_and_posture_read_as_recorded(tmp_path: Path) -> None:
    path = tmp_path / "error.jsonl"
    provider, tracer = tracer_into(path)
    with run_span(tracer, AGENT) as run:
        emit_summary(
            tracer,
            run,
            DispositionLedger(REGISTERED_CHECKS),
            posture="dev",
            work_existed=False,
            outcome="cancelled",
        )
    provider.shutdown()
    run_record = read_recording(path).runs[0]
    assert (run_record.posture, run_record.work_existed, run_record.outcome) == ("dev", False, "cancelled")
    assert run_record.never_ran() == []  # no work, so an all-zero row is not a dead check


def test_events_dropped_at_the_sdk_limit_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "cap.jsonl"
    provider = TracerProvider(span_limits=SpanLimits(max_events=1))
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonLinesSpanExporter(path)))
    tracer = provider.get_tracer(names.INSTRUMENTATION_NAME)
    with tool_span(tracer, LOOKUP_TOOL, "c1", [LOOKUP_FINDING.kind] * 3) as span:
        for _ in range(3):
            add_finding(span, LOOKUP_FINDING)
    provider.shutdown()
    recording = read_recording(path)
    assert len(recording.loose_calls[0].findings) == 1
    assert recording.loose_calls[0].findings_count == 3
    assert any("dropped 2 event(s)" in p for p in recording.problems)


# ── Bad input ───────────────────────────────────────────────────────────
def _one_line(scenario_lines: list[str]) -> str:
    return next(line for line in scenario_lines if names.tool_span_name(LOOKUP_TOOL) in line)


def test_a_line_that_is_not_json_is_a_problem_naming_its_line(scenario_lines: list[str]) -> None:
    recording = read_recording_text([scenario_lines[0], "this is not json\n", *scenario_lines[1:]])
    assert [p for p in recording.problems if p.startswith("line 2: not JSON (")] == recording.problems
    assert len(recording.runs) == 1


def test_a_truncated_final_line_is_reported_as_truncated(tmp_path: Path, scenario_lines: list[str]) -> None:
    path = tmp_path / "cut.jsonl"
    line = _one_line(scenario_lines)
    path.write_text("".join(scenario_lines) + line[: len(line) // 2])
    recording = read_recording(path)
    assert len(recording.problems) == 1
    assert recording.problems[0].startswith(f"line {len(scenario_lines) + 1}: truncated")


def test_a_truncated_line_in_the_middle_is_just_not_json(scenario_lines: list[str]) -> None:
    line = _one_line(scenario_lines)
    recording = read_recording_text([line[: len(line) // 2] + "\n", *scenario_lines])
    assert recording.problems[0].startswith("line 1: not JSON")


def test_an_empty_file_says_it_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    recording = read_recording(path)
    assert recording.runs == [] and recording.loose_calls == []
    assert len(recording.problems) == 1 and "empty" in recording.problems[0]
    assert "blank" in read_recording_text(["\n", "  \n"]).problems[0]


def test_a_missing_file_raises_a_sentence_that_says_what_to_do(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / RECORDING_FILE_NAME
    with pytest.raises(FileNotFoundError) as raised:
        read_recording(missing)
    text = str(raised.value)
    assert str(missing) in text and RECORDING_ENV_VAR in text and "setup()" in text


def test_a_directory_raises_a_sentence_naming_the_file_to_pass(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError, match=RECORDING_FILE_NAME):
        read_recording(tmp_path)


def test_json_without_any_otlp_key_is_a_problem_listing_its_keys() -> None:
    recording = read_recording_text(['{"resource_spans": [], "hello": 1}\n'])
    assert len(recording.problems) == 1
    problem = recording.problems[0]
    assert problem.startswith("line 1: no ") and "resource_spans" in problem
    assert all(key in problem for key in otlp.RESOURCE_KEYS)


def test_json_that_is_not_an_object_is_a_problem() -> None:
    assert read_recording_text(["[1, 2]\n"]).problems == ["line 1: expected a JSON object, found a list"]


def test_unknown_fields_beside_known_ones_are_ignored(scenario_lines: list[str]) -> None:
    document = json.loads(_one_line(scenario_lines))
    document["somethingNew"] = {"x": 1}
    span = document[otlp.RESOURCE_SPANS][0]["scopeSpans"][0]["spans"][0]
    span["futureField"] = [1]
    del span["parentSpanId"]  # a root tool call, so the line stands on its own
    recording = read_recording_text([json.dumps(document)])
    assert recording.problems == []
    assert [c.tool_name for c in recording.loose_calls] == [LOOKUP_TOOL]


def test_a_span_with_a_broken_id_is_skipped_and_named(scenario_lines: list[str]) -> None:
    document = json.loads(_one_line(scenario_lines))
    document[otlp.RESOURCE_SPANS][0]["scopeSpans"][0]["spans"][0]["traceId"] = "xyz"
    recording = read_recording_text([json.dumps(document) + "\n"])
    assert recording.loose_calls == []
    assert recording.problems == [
        f"line 1: span {names.tool_span_name(LOOKUP_TOOL)!r} skipped: traceId 'xyz' is not a "
        f"{otlp.TRACE_ID_HEX_CHARS}-hex-digit id"
    ]


def test_an_unreadable_attribute_is_left_out_without_losing_the_span(scenario_lines: list[str]) -> None:
    document = json.loads(_one_line(scenario_lines))
    span = document[otlp.RESOURCE_SPANS][0]["scopeSpans"][0]["spans"][0]
    del span["parentSpanId"]
    span["attributes"].append({"key": names.ERROR_TYPE, "value": {"intValue": "twelve"}})
    recording = read_recording_text([json.dumps(document)])
    [call] = recording.loose_calls
    assert_finding(call.findings[0], LOOKUP_FINDING)
    assert call.error_type is None
    [problem] = recording.problems
    assert problem.startswith("line 1: span ") and "1 attribute could not be read" in problem
    assert names.ERROR_TYPE in problem


def test_attributes_the_report_does_not_read_are_not_even_looked_at(scenario_lines: list[str]) -> None:
    """The reader takes what the report needs from a span; an odd attribute it never reads
    costs nothing and says nothing."""
    document = json.loads(_one_line(scenario_lines))
    span = document[otlp.RESOURCE_SPANS][0]["scopeSpans"][0]["spans"][0]
    del span["parentSpanId"]
    span["attributes"].append({"key": "some.vendor.attribute", "value": {"intValue": "twelve"}})
    recording = read_recording_text([json.dumps(document)])
    assert recording.problems == []
    assert_finding(recording.loose_calls[0].findings[0], LOOKUP_FINDING)


def test_a_ledger_row_with_non_integer_counts_is_reported_and_not_judged(scenario_lines: list[str]) -> None:
    summary_line = next(line for line in scenario_lines if names.DISPOSITION_SPAN in line)
    document = json.loads(summary_line)
    span = document[otlp.RESOURCE_SPANS][0]["scopeSpans"][0]["spans"][0]
    first = REGISTERED_CHECKS[0]
    for attribute in span["attributes"]:
        if attribute["key"] == names.row_attribute(first.check, first.seam, COUNT_FIELDS[0]):
            attribute["value"] = {"stringValue": "lots"}
    lines = [line for line in scenario_lines if line is not summary_line] + [json.dumps(document)]
    recording = read_recording_text(lines)
    assert any(f"ledger row 0 has non-integer {COUNT_FIELDS[0]}" in p for p in recording.problems)
    assert recording.runs[0].ledger is not None
    assert recording.runs[0].ledger[0][COUNT_FIELDS[0]] == "lots"
    format_report(recording)  # renders without raising


def test_a_malformed_resource_list_is_a_problem() -> None:
    recording = read_recording_text([json.dumps({otlp.RESOURCE_SPANS: {"not": "a list"}})])
    assert recording.problems == [
        f"line 1: {otlp.RESOURCE_SPANS}: {otlp.RESOURCE_SPANS} is an object, not a list"
    ]


def test_a_line_that_is_not_utf8_is_a_problem(tmp_path: Path, scenario_lines: list[str]) -> None:
    path = tmp_path / "bytes.jsonl"
    path.write_bytes(b"\xff\xfe garbage\n" + "".join(scenario_lines).encode())
    recording = read_recording(path)
    assert len(recording.runs) == 1
    assert len(recording.problems) == 1 and recording.problems[0].startswith("line 1: not UTF-8")


def test_ids_written_as_base64_protobuf_json_are_accepted(scenario_lines: list[str]) -> None:
    import base64

    document = json.loads(_one_line(scenario_lines))
    span = document[otlp.RESOURCE_SPANS][0]["scopeSpans"][0]["spans"][0]
    expected = span["traceId"]
    for key in ("traceId", "spanId", "parentSpanId"):
        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    recording = read_recording_text([json.dumps(document)])
    assert recording.loose_calls[0].trace_id == expected


def test_log_lines_are_tolerated_and_counted() -> None:
    log_line = {otlp.RESOURCE_LOGS: [{"scopeLogs": [{"logRecords": [{"body": {"stringValue": "x"}}] * 2}]}]}
    recording = read_recording_text([json.dumps(log_line)])
    assert (recording.log_records, recording.problems) == (2, [])


# ── The report ──────────────────────────────────────────────────────────
def _flat(text: str) -> str:
    return " ".join(text.split())


def test_report_shows_every_finding_message(scenario: Scenario, read: Recording) -> None:
    report = _flat(format_report(read))
    for finding in [*scenario.findings_in_order, LOOSE_FINDING]:
        assert _flat(finding.message) in report
        assert f"{finding.kind} @{finding.seam}" in report
    assert scenario.trace_id in report and AGENT in report


def test_report_has_a_ledger_row_for_every_registered_check(read: Recording) -> None:
    lines = format_report(read).splitlines()
    for check in REGISTERED_CHECKS:
        assert any(line.split()[:2] == [check.check, check.seam] for line in lines), check


def test_report_ledger_columns_line_up(read: Recording) -> None:
    lines = format_report(read).splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == list(ROW_FIELDS[:2]))
    table = lines[header : header + 1 + len(REGISTERED_CHECKS)]
    checked_column = table[0].index(report_text._column_label(ROW_FIELDS[2])) + len(
        report_text._column_label(ROW_FIELDS[2])
    )
    # Right-aligned counts end where their header ends.
    assert all(line[checked_column - 1].isdigit() for line in table[1:])


def test_report_flags_rows_that_never_ran_when_work_existed(read: Recording) -> None:
    report = format_report(read)
    flagged = [line for line in report.splitlines() if "registered but never ran" in line]
    expected = untouched_rows(scenario_ledger())
    assert expected  # the scenario leaves some checks untouched
    assert len(flagged) == len(expected)
    for row, line in zip(expected, flagged, strict=True):
        assert f"{row.check} @{row.seam}" in line


def test_report_does_not_flag_all_zero_rows_when_no_work_existed(tmp_path: Path) -> None:
    path = tmp_path / "idle.jsonl"
    provider, tracer = tracer_into(path)
    with run_span(tracer, AGENT) as run:
        emit_summary(tracer, run, DispositionLedger(REGISTERED_CHECKS), work_existed=False)
    provider.shutdown()
    assert "never ran" not in format_report(read_recording(path)).replace("0 never-ran rows", "")


def test_verbose_report_shows_witnesses(read: Recording) -> None:
    plain, verbose = format_report(read), format_report(read, verbose=True)
    witness = LOOKUP_FINDING.witnesses[1]
    assert f"provenance={witness.provenance}" in verbose
    assert f"provenance={witness.provenance}" not in plain


def test_report_lists_problems_and_ends_with_a_summary(scenario_lines: list[str]) -> None:
    report = format_report(read_recording_text([*scenario_lines, "oops\n"]))
    assert "problems (1):" in report
    last = report.rstrip("\n").splitlines()[-1]
    assert last.startswith("summary: 1 run, 5 findings, 1 call outside any run")
    assert last.endswith("1 problem")


def test_report_is_stable(read: Recording) -> None:
    assert format_report(read) == format_report(read)
    assert "\x1b[" not in format_report(read, verbose=True)


def test_report_of_a_run_without_a_summary_says_so(tmp_path: Path) -> None:
    path = tmp_path / "nosummary.jsonl"
    provider, tracer = tracer_into(path)
    with run_span(tracer, AGENT), chat_span(tracer, MODEL) as chat:
        add_finding(chat, WIRE_FINDING)
    provider.shutdown()
    report = format_report(read_recording(path))
    assert f"no {names.DISPOSITION_SPAN} span" in report


# ── Default path ────────────────────────────────────────────────────────
def test_default_path_prefers_the_environment_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(RECORDING_ENV_VAR, str(tmp_path / "mine.jsonl"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert default_recording_path() == tmp_path / "mine.jsonl"


def test_default_path_lives_under_xdg_state_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(RECORDING_ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    path = default_recording_path()
    assert path.parent.parent == tmp_path and path.name == RECORDING_FILE_NAME


def test_default_path_falls_back_to_local_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(RECORDING_ENV_VAR, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    for state_home in (None, "relative/dir"):  # a relative XDG path is ignored
        if state_home is None:
            monkeypatch.delenv("XDG_STATE_HOME", raising=False)
        else:
            monkeypatch.setenv("XDG_STATE_HOME", state_home)
        assert default_recording_path().parent.parent == tmp_path / ".local" / "state"


def _is_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # the parent is a module, not a package
        return False


def _imports_of(module: str) -> set[str]:
    """The modules one of ours imports, by name (relative imports resolved, ``from a import b``
    counted as ``a.b`` when ``b`` is a module)."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text())
    package = module if spec.submodule_search_locations else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found.add(base)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                if base.startswith("context_integrity") and _is_module(candidate):
                    found.add(candidate)
    return found


@pytest.mark.parametrize(
    "root",
    [
        "context_integrity.recording",
        "context_integrity.recording.reader",
        "context_integrity.report",
        "context_integrity.paths",
        "context_integrity.telemetry.schema",
    ],
)
def test_reading_back_never_imports_opentelemetry(root: str) -> None:
    """Everything the reader and the report import, transitively within the package, is SDK-free."""
    seen: set[str] = set()
    pending = [root]
    foreign: set[str] = set()
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        seen.add(module)
        for name in _imports_of(module):
            if name.startswith("context_integrity.") or name == "context_integrity":
                if name != "context_integrity":  # the top-level surface is not the reader's to hold
                    pending.append(name)
            else:
                foreign.add(name.partition(".")[0])
    assert "context_integrity.telemetry.schema" in seen or root == "context_integrity.paths"
    assert not foreign & {"opentelemetry", "google"}, sorted(foreign)


def test_the_recording_path_is_a_leaf() -> None:
    assert not [
        name for name in _imports_of("context_integrity.paths") if name.startswith("context_integrity")
    ]
