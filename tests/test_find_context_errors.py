"""``find_context_errors`` reads findings and ledgers back, never re-judging, and never reads silence as health.

The laws under test:
(a) the three input formats -- our recording (the collector's file export is the same OTLP/JSON
    lines), Tempo's trace JSON and Jaeger's trace JSON, both written here from their APIs'
    documented shapes -- read back the same findings on the same spans and the same ledger;
(b) a kind no check can file is UNANSWERABLE (before any evidence is read), naming the filable
    kinds; an unknown word is refused as not a defect class;
(c) no file, an empty file, or spans without integrity data are "no evidence", never "no errors";
(d) with nothing filed, the headline says how much was checked: nothing, only some checks (named),
    or every registered check; a ledger that counts findings the trace lacks is EVIDENCE MISSING;
(e) a registered row all zero in a run that did work is flagged as never having run;
(f) advisories are counted apart; encounters and distinct findings are reconciled out loud;
(g) the tool definition's kind menu is exactly the kinds a registered check can file;
(h) ``context-integrity report --find`` prints the same answer.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from tests.conftest import Telemetry
from tests.recording_shapes import add_finding, emit_summary, run_span, tool_span, tracer_into

import context_integrity as ci
from context_integrity import cli
from context_integrity.findings import CHECKED_FAIL, CHECKED_PASS, KINDS, Encounter, Kind
from context_integrity.judge import REGISTERED_CHECKS
from context_integrity.judge.registry import REGISTRY, RegisteredCheck
from context_integrity.ledger import CheckId, DispositionLedger
from context_integrity.limits import FIND_MAX_LEDGERS, FIND_MAX_LIMIT
from context_integrity.recording import read_recording
from context_integrity.report.find import call_tool, filable_kinds, find_context_errors, tool_definition
from context_integrity.telemetry.export.file_export import OtlpJsonLinesSpanExporter
from context_integrity.telemetry.schema import names

# ── Writing the three formats from one real instrumented run ────────────


def _mistyped_agent() -> None:
    @ci.tool(result_columns={"size_gb": "number", "lun": "number"})
    def disks() -> list[dict[str, str]]:
        return [{"size_gb": "12", "lun": ""}]

    @ci.tool(result_columns={"size_gb": "number"})
    def volumes() -> list[dict[str, float]]:
        return [{"size_gb": 7.0}]

    with ci.run("which disks?", agent_name="storage"):
        for _ in range(3):
            disks()  # the same two defects each time: counted at every encounter, filed once
        volumes()


@pytest.fixture
def spans(telemetry: Telemetry) -> list[ReadableSpan]:
    telemetry.configure(check_column_types="warn")
    _mistyped_agent()
    return telemetry.finished()


def _recording(spans: list[ReadableSpan], path: Path) -> Path:
    OtlpJsonLinesSpanExporter(path).export(spans)
    return path


def _b64(hex_id: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_id)).decode()


def _tempo(recording: Path, path: Path) -> Path:
    """Tempo's GET /api/traces/{id}: {"batches": [ResourceSpans]}, ids base64, enum names for codes."""
    batches: list[dict[str, Any]] = []
    for line in recording.read_text().splitlines():
        for batch in json.loads(line).get("resourceSpans", []):
            for scope in batch.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    span["traceId"] = _b64(span["traceId"])
                    span["spanId"] = _b64(span["spanId"])
                    if span.get("parentSpanId"):
                        span["parentSpanId"] = _b64(span["parentSpanId"])
                    span["kind"] = "SPAN_KIND_INTERNAL"
                    code = span.get("status", {}).get("code", 0)
                    span["status"] = {
                        **span.get("status", {}),
                        "code": ["STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"][code],
                    }
            # Older Tempo names the scope list as OTLP once did.
            batch["instrumentationLibrarySpans"] = batch.pop("scopeSpans")
            batches.append(batch)
    path.write_text(json.dumps({"batches": batches}))
    return path


def _jaeger_tag(key: str, value: object) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "type": "bool", "value": value}
    if isinstance(value, int):
        return {"key": key, "type": "int64", "value": value}
    if isinstance(value, float):
        return {"key": key, "type": "float64", "value": value}
    if isinstance(value, (list, tuple)):
        return {"key": key, "type": "string", "value": json.dumps(list(value))}  # how Jaeger flattens arrays
    return {"key": key, "type": "string", "value": str(value)}


def _jaeger(spans: list[ReadableSpan], path: Path) -> Path:
    """Jaeger's GET /api/traces/{id}: {"data": [{traceID, spans, processes}]}, times in microseconds."""
    traces: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        assert span.context is not None and span.start_time is not None and span.end_time is not None
        trace_id = format(span.context.trace_id, "032x")
        item: dict[str, Any] = {
            "traceID": trace_id,
            "spanID": format(span.context.span_id, "016x"),
            "operationName": span.name,
            "references": (
                [{"refType": "CHILD_OF", "traceID": trace_id, "spanID": format(span.parent.span_id, "016x")}]
                if span.parent is not None
                else []
            ),
            "startTime": span.start_time // 1000,
            "duration": (span.end_time - span.start_time) // 1000,
            "tags": [_jaeger_tag(k, v) for k, v in (span.attributes or {}).items()]
            + [{"key": "otel.status_code", "type": "string", "value": span.status.status_code.name}],
            "logs": [
                {
                    "timestamp": event.timestamp // 1000,
                    "fields": [{"key": "event", "type": "string", "value": event.name}]
                    + [_jaeger_tag(k, v) for k, v in (event.attributes or {}).items()],
                }
                for event in span.events
            ],
            "processID": "p1",
        }
        traces.setdefault(trace_id, []).append(item)
    data = [
        {"traceID": t, "spans": s, "processes": {"p1": {"serviceName": "storage", "tags": []}}}
        for t, s in traces.items()
    ]
    path.write_text(json.dumps({"data": data}))
    return path


@pytest.fixture
def formats(spans: list[ReadableSpan], tmp_path: Path) -> dict[str, Path]:
    recording = _recording(spans, tmp_path / "recording.otlp.jsonl")
    return {
        "recording": recording,
        "tempo": _tempo(recording, tmp_path / "tempo.json"),
        "jaeger": _jaeger(spans, tmp_path / "jaeger.json"),
    }


def _findings_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("[")]


def test_the_three_formats_read_back_the_same_findings_and_ledger(
    spans: list[ReadableSpan], formats: dict[str, Path]
) -> None:
    answers = {shape: find_context_errors(path) for shape, path in formats.items()}
    recorded = [
        (format(s.context.span_id, "016x"), dict(e.attributes or {})[names.FINDING_MESSAGE])
        for s in spans
        if s.context is not None
        for e in s.events
        if e.name == names.FINDING_EVENT
    ]
    assert len(recorded) == 2  # size_gb and lun on the first disks call; the others re-detect them
    for shape, answer in answers.items():
        assert (
            answer.splitlines()[0] == "find_context_errors: 2 findings filed across 1 run (showing 2 of 2)."
        ), shape
        listed = _findings_of(answer)
        for span_id, message in recorded:
            assert isinstance(message, str)
            assert any(message[:100] in line for line in listed), (shape, message)
            assert f"({span_id})" in answer, shape
        assert "column-type-mismatch@write: ran 4×; 3 findings" in answer, shape
    assert answers["recording"] == answers["tempo"] == answers["jaeger"]


def test_encounters_and_distinct_findings_are_reconciled_out_loud(formats: dict[str, Path]) -> None:
    answer = find_context_errors(formats["recording"])
    assert "the ledgers count 3 failing encounters for 2 distinct findings" in answer


def test_a_collector_file_export_reads_like_the_recording(formats: dict[str, Path], tmp_path: Path) -> None:
    # The collector's file exporter writes one ExportTraceServiceRequest per line: all spans in one.
    lines = [json.loads(line) for line in formats["recording"].read_text().splitlines()]
    merged = {"resourceSpans": [batch for line in lines for batch in line["resourceSpans"]]}
    export = tmp_path / "collector-export.json"
    export.write_text(json.dumps(merged) + "\n")
    assert find_context_errors(export) == find_context_errors(formats["recording"]).replace(
        str(formats["recording"]), str(export)
    )


def test_the_demo_reads_back_with_its_findings_and_ledgers(tmp_path: Path) -> None:
    recording = tmp_path / "demo.jsonl"
    # A process of its own: the global tracer provider can be set once per process.
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "context_integrity.cli",
            "demo",
            "--only",
            "column-types",
            "--recording",
            str(recording),
        ],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    answer = find_context_errors(recording, limit=FIND_MAX_LIMIT)
    read = read_recording(recording)
    filed = [f for run in read.runs for f in run.findings]
    defects = [f for f in filed if not f.advisory]
    assert defects and answer.startswith(
        f"find_context_errors: {len(defects)} findings filed across {len(read.runs)} run"
    )
    assert len(_findings_of(answer)) == min(len(filed), FIND_MAX_LIMIT)
    for finding in filed[:FIND_MAX_LIMIT]:
        assert f"({finding.span_id})" in answer
    assert answer.count("CHECKERS, run ") == min(len(read.runs), FIND_MAX_LEDGERS)
    for row in REGISTERED_CHECKS:
        assert f"  {row.render()}: " in answer


# ── (b) unanswerable kinds ──────────────────────────────────────────────

UNBUILT: Kind = "duplicate-execution"


@pytest.fixture
def unbuilt(monkeypatch: pytest.MonkeyPatch) -> Kind:
    """A build in which no check files duplicate-execution (as before its check landed)."""
    kept = tuple(e for e in REGISTRY.entries if all(row.check != UNBUILT for row in e.rows))
    monkeypatch.setattr(REGISTRY, "_entries", kept)
    assert UNBUILT not in filable_kinds()
    return UNBUILT


def test_a_kind_no_check_can_file_is_unanswerable_before_evidence_is_read(
    unbuilt: str, tmp_path: Path, formats: dict[str, Path]
) -> None:
    assert unbuilt in KINDS
    for source in (tmp_path / "missing.jsonl", formats["recording"]):
        answer = find_context_errors(source, kind=unbuilt)
        assert answer.startswith(f"find_context_errors: ⚠ UNANSWERABLE: {unbuilt!r}")
        assert "silence about it is not evidence of its absence" in answer
        assert ", ".join(filable_kinds()) in answer


def test_a_kind_a_check_can_file_is_answered(formats: dict[str, Path]) -> None:
    for kind in filable_kinds():
        assert "UNANSWERABLE" not in find_context_errors(formats["recording"], kind=kind)


def test_an_unknown_word_is_not_a_defect_class(formats: dict[str, Path]) -> None:
    answer = find_context_errors(formats["recording"], kind="type-confusion")
    assert "'type-confusion' is not a defect class this library knows" in answer
    assert ", ".join(filable_kinds()) in answer


def test_a_filable_kind_that_matched_nothing_names_the_kinds_filed_and_its_coverage(
    formats: dict[str, Path],
) -> None:
    answer = find_context_errors(formats["recording"], kind="empty-lookup")
    assert "no 'empty-lookup' finding filed. The findings filed were of: column-type-mismatch." in answer
    assert "NOTHING WAS CHECKED: empty-lookup@write was out of scope" in answer


# ── (c) no evidence ─────────────────────────────────────────────────────


def test_no_file_and_an_empty_file_are_no_evidence(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    for source in (tmp_path / "missing.jsonl", empty):
        answer = find_context_errors(source)
        assert "⚠ NO FINDING EVIDENCE" in answer
        assert '"no evidence", NOT "no context errors"' in answer


def test_spans_without_integrity_events_are_no_evidence(tmp_path: Path) -> None:
    plain = tmp_path / "plain-jaeger.json"
    plain.write_text(
        json.dumps(
            {
                "data": [
                    {
                        "traceID": "0af7651916cd43dd8448eb211c80319c",
                        "spans": [
                            {
                                "traceID": "0af7651916cd43dd8448eb211c80319c",
                                "spanID": "b7ad6b7169203331",
                                "operationName": "GET /orders",
                                "references": [],
                                "startTime": 1_700_000_000_000_000,
                                "duration": 1200,
                                "tags": [{"key": "http.method", "type": "string", "value": "GET"}],
                                "logs": [],
                                "processID": "p1",
                            }
                        ],
                        "processes": {"p1": {"serviceName": "shop", "tags": []}},
                    }
                ]
            }
        )
    )
    answer = find_context_errors(plain)
    assert "carries no Context Integrity events: 1 span read (jaeger)" in answer
    assert 'Read it as "no evidence"' in answer


# ── (d), (e) coverage, missing evidence, never-ran rows ─────────────────


def _ledger_recording(path: Path, ledger: DispositionLedger, *, work_existed: bool = True) -> Path:
    provider, tracer = tracer_into(path)
    with run_span(tracer, "agent") as run, tool_span(tracer, "lookup", "call-1"):
        pass
    emit_summary(tracer, run, ledger, work_existed=work_existed)
    provider.shutdown()
    return path


def test_a_clean_run_where_every_check_ran_says_so(tmp_path: Path) -> None:
    ledger = DispositionLedger(REGISTERED_CHECKS)
    for row in REGISTERED_CHECKS:
        ledger.note(row, CHECKED_PASS)
    answer = find_context_errors(_ledger_recording(tmp_path / "r.jsonl", ledger))
    assert answer.splitlines()[0] == (
        f"find_context_errors: none filed. All {len(REGISTERED_CHECKS)} registered checks below RAN "
        f"({len(REGISTERED_CHECKS)} checked encounters)."
    )


def test_a_clean_run_with_partial_coverage_names_the_silent_checks(tmp_path: Path) -> None:
    ledger = DispositionLedger(REGISTERED_CHECKS)
    ledger.note(REGISTERED_CHECKS[0], CHECKED_PASS)
    for row in REGISTERED_CHECKS[1:]:
        ledger.note(row, "not-applicable")
    headline = find_context_errors(_ledger_recording(tmp_path / "r.jsonl", ledger)).splitlines()[0]
    silent = len(REGISTERED_CHECKS) - 1
    assert (
        f"none filed, ⚠ AND COVERAGE IS PARTIAL: {silent} of {len(REGISTERED_CHECKS)} registered checks"
        in headline
    )
    assert REGISTERED_CHECKS[1].render() in headline and REGISTERED_CHECKS[0].render() not in headline


def test_a_run_where_nothing_was_checked_says_so(tmp_path: Path) -> None:
    ledger = DispositionLedger(REGISTERED_CHECKS)
    for row in REGISTERED_CHECKS:
        ledger.note(row, "not-applicable")
    headline = find_context_errors(_ledger_recording(tmp_path / "r.jsonl", ledger)).splitlines()[0]
    assert "none filed. ⚠ NOTHING WAS CHECKED: every registered check was out of scope" in headline


def test_a_ledger_counting_findings_the_trace_lacks_is_evidence_missing(tmp_path: Path) -> None:
    ledger = DispositionLedger(REGISTERED_CHECKS)
    ledger.note(REGISTERED_CHECKS[0], CHECKED_FAIL, at_ms=1)
    headline = find_context_errors(_ledger_recording(tmp_path / "r.jsonl", ledger)).splitlines()[0]
    assert "⚠ EVIDENCE MISSING: the ledgers count 1 failing encounter" in headline
    assert "opposite of a clean run" in headline


def test_a_row_all_zero_in_a_run_that_worked_is_flagged_as_never_having_run(tmp_path: Path) -> None:
    ledger = DispositionLedger(REGISTERED_CHECKS)
    for row in REGISTERED_CHECKS[1:]:
        ledger.note(row, "not-applicable")
    answer = find_context_errors(_ledger_recording(tmp_path / "r.jsonl", ledger))
    assert f"⚠ {REGISTERED_CHECKS[0].render()}: REGISTERED BUT NEVER RAN" in answer
    quiet = find_context_errors(_ledger_recording(tmp_path / "q.jsonl", ledger, work_existed=False))
    assert "REGISTERED BUT NEVER RAN" not in quiet


def test_findings_without_a_ledger_say_nothing_records_which_checks_ran(tmp_path: Path) -> None:
    from tests.recording_shapes import LOOKUP_FINDING

    provider, tracer = tracer_into(tmp_path / "r.jsonl")
    with run_span(tracer, "agent"), tool_span(tracer, "lookup_order", "call-1") as span:
        add_finding(span, LOOKUP_FINDING, tool="lookup_order", call_id="call-1")
    provider.shutdown()
    answer = find_context_errors(tmp_path / "r.jsonl", kind="empty-lookup")
    assert "The findings filed were of: column-type-mismatch." in answer.splitlines()[0]
    assert "AND NOTHING RECORDS WHICH CHECKS RAN" in answer.splitlines()[0]
    assert "⚠ no disposition ledger was recorded for this run" in answer


# ── (f) advisories ──────────────────────────────────────────────────────


def test_advisories_are_listed_and_counted_apart(tmp_path: Path) -> None:
    from tests.recording_shapes import LOOKUP_FINDING, WRITE_FINDING

    provider, tracer = tracer_into(tmp_path / "r.jsonl")
    ledger = DispositionLedger(REGISTERED_CHECKS)
    with run_span(tracer, "agent") as run:
        with tool_span(tracer, "lookup_order", "call-1") as span:
            add_finding(span, LOOKUP_FINDING, tool="lookup_order", call_id="call-1")
        with tool_span(tracer, "write_ticket", "call-2") as span:
            add_finding(span, WRITE_FINDING, tool="write_ticket", call_id="call-2")
        emit_summary(tracer, run, ledger)
    provider.shutdown()
    answer = find_context_errors(tmp_path / "r.jsonl")
    assert answer.splitlines()[0] == (
        "find_context_errors: 1 finding filed across 1 run, plus 1 advisory (counted apart) (showing 2 of 2)."
    )
    (advisory_line,) = [line for line in _findings_of(answer) if WRITE_FINDING.kind in line]
    assert "ADVISORY, counted apart" in advisory_line


# ── (g) the tool definition ─────────────────────────────────────────────


def test_the_tool_schema_offers_only_the_kinds_a_check_can_file(unbuilt: str) -> None:
    definition = tool_definition()
    schema = definition["input_schema"]
    assert definition["name"] == "find_context_errors"
    assert schema["properties"]["kind"]["enum"] == list(REGISTRY.filable_kinds())
    assert unbuilt not in schema["properties"]["kind"]["enum"]
    assert f"No check in this build can file: {unbuilt}." in definition["description"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["limit"]["maximum"] == FIND_MAX_LIMIT


def test_a_newly_registered_check_joins_the_menu(unbuilt: Kind) -> None:
    entry = RegisteredCheck(
        "fake check",
        rows=(CheckId(unbuilt, "choice"),),
        choice=lambda state, seen: Encounter(disposition=CHECKED_PASS),
    )
    REGISTRY.register(entry)
    try:
        assert unbuilt in tool_definition()["input_schema"]["properties"]["kind"]["enum"]
    finally:
        REGISTRY.unregister(entry)


def test_the_tool_answers_its_calls_and_refuses_unknown_arguments(formats: dict[str, Path]) -> None:
    assert call_tool(formats["recording"], {"kind": "column-type-mismatch", "limit": 1}).startswith(
        "find_context_errors: 2 findings of kind 'column-type-mismatch' filed across 1 run (showing 1 of 2)."
    )
    assert "unknown argument(s) 'since'" in call_tool(formats["recording"], {"since": "yesterday"})
    assert "(showing 2 of 2)" in call_tool(formats["recording"], {"limit": 1000})


# ── (h) the command line ────────────────────────────────────────────────


def test_report_find_prints_the_same_answer(
    formats: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    for path in formats.values():
        assert cli.main(["report", "--find", str(path)]) == 0
        assert capsys.readouterr().out.rstrip("\n") == find_context_errors(path)
    with pytest.raises(SystemExit) as refused:  # a bad kind is bad usage: exit 2, the kinds named
        cli.main(["report", "--find", "--kind", "not-a-kind", str(formats["jaeger"])])
    assert refused.value.code == 2
    said = capsys.readouterr()
    assert said.out == "" and "'not-a-kind' is not a kind of finding" in said.err
    assert all(kind in said.err for kind in KINDS)
