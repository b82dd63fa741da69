"""``judge --export`` and ``judge --phoenix``: results sent after the fact into the traces judged.

The laws under test, against a receiver that speaks OTLP/HTTP:

1. Per judged run, one ``context_integrity.disposition`` summary span in the judged trace, a child of
   the run's span, whose ledger reads back equal to the judged run's.
2. Per finding, a ``context_integrity.finding`` and a ``gen_ai.evaluation.result`` log record, each
   carrying the judged span's trace and span ids.
3. Per finding, a carrier span with exactly one link, to the span the finding is about: span kind
   EVALUATOR and the OpenInference annotation (name, score, label, explanation, annotator kind,
   identifier, JSON metadata), and the finding event a live span carries; its parent the summary span.
4. An endpoint that does not answer costs a bounded wait and a sentence counting what was not sent;
   the exit status is the judging's.
5. ``--phoenix`` posts one annotation per finding on the judged span, as the live exporter does.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from tests.fake_phoenix import FakePhoenix as PhoenixApi
from tests.telemetry.otlp_receiver import Receiver, attributes_of, receiver, records_of, spans_of
from tests.telemetry.test_phoenix_annotations import phoenix, refusing_phoenix
from tests.test_judge_cli import COMMAND, TRIAGE_CONTRACTS, judge, workdir
from tests.traces.shapes import Trace, document, triage_trace, write_lines

from context_integrity.limits import EXIT_FLUSH_MILLIS
from context_integrity.telemetry import schema
from context_integrity.telemetry.export.phoenix import ANNOTATIONS_PATH, annotation_identifier
from context_integrity.telemetry.schema import names

__all__ = ["phoenix", "receiver", "refusing_phoenix", "workdir"]  # fixtures, imported for the tests below


@pytest.fixture
def two_runs(workdir: Path) -> tuple[Path, list[Trace]]:
    traces = [triage_trace(), triage_trace(invented_host="esx-42")]
    write_lines(workdir / "triage.jsonl", [document(t.spans) for t in traces])
    (workdir / "contracts.toml").write_text(TRIAGE_CONTRACTS)
    return workdir / "triage.jsonl", traces


def _hex(raw: bytes) -> str:
    return raw.hex()


def test_export_writes_summaries_records_and_carriers_into_the_judged_traces(
    two_runs: tuple[Path, list[Trace]], receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    path, traces = two_runs
    endpoint = f"http://127.0.0.1:{receiver.server_address[1]}"
    status, out, err = judge(
        capsys, str(path), "--contracts", "contracts.toml", "--format", "json", "--export", endpoint
    )
    assert status == 0
    findings = [json.loads(line) for line in out.splitlines()]
    assert len(findings) == 2
    assert f"{COMMAND}: sent 4 spans and 4 log records to {endpoint}" in err

    spans: list[Any] = spans_of(receiver)
    summaries = [s for s in spans if s.name == names.DISPOSITION_SPAN]
    carriers = [s for s in spans if s.name == names.FINDING_CARRIER_SPAN]
    assert len(summaries) == 2 and len(carriers) == 2

    for trace in traces:
        run_span = trace.spans[-1]["spanId"]
        (summary,) = [s for s in summaries if _hex(s.trace_id) == trace.trace_id]
        assert _hex(summary.parent_span_id) == run_span
        problems: list[str] = []
        rows = {
            (r["check"], r["seam"]): r
            for r in schema.decode_summary(attributes_of(summary.attributes), problems).rows
        }
        assert problems == []
        assert rows["unsupported-argument", "choice"]["findings"] == 1
        assert rows["column-type-mismatch", "write"]["checked"] == 1

        (finding,) = [f for f in findings if f["trace_id"] == trace.trace_id]
        (carrier,) = [c for c in carriers if _hex(c.trace_id) == trace.trace_id]
        assert _hex(carrier.parent_span_id) == _hex(summary.span_id)
        (link,) = carrier.links
        assert (_hex(link.trace_id), _hex(link.span_id)) == (trace.trace_id, finding["span_id"])
        carried = attributes_of(carrier.attributes)
        assert carried[names.OPENINFERENCE_SPAN_KIND] == names.OPENINFERENCE_KIND_EVALUATOR
        annotation = {
            field: carried.get(names.annotation_attribute(0, field)) for field in names.ANNOTATION_FIELDS
        }
        assert annotation["name"] == names.PHOENIX_ANNOTATION_NAME
        assert annotation["label"] == "unsupported-argument"
        assert annotation["score"] == names.EVALUATION_SCORE_FAIL
        assert annotation["explanation"] == finding["message"]
        assert annotation["annotator_kind"] == names.ANNOTATOR_KIND_CODE
        metadata = json.loads(str(annotation["metadata"]))
        assert metadata[names.FINDING_PREDICATE] == "host"
        assert annotation["identifier"] == annotation_identifier(str(metadata[names.FINDING_IDENTITY]))
        (event,) = carrier.events
        assert event.name == names.FINDING_EVENT
        assert attributes_of(event.attributes)[names.GEN_AI_TOOL_CALL_ID] == "call_2"

        received: list[Any] = records_of(receiver)
        records = [r for r in received if _hex(r.trace_id) == trace.trace_id]
        assert {r.event_name for r in records} == {
            names.FINDING_LOG_EVENT_NAME,
            names.GEN_AI_EVALUATION_RESULT_EVENT,
        }
        for record in records:
            assert _hex(record.span_id) == finding["span_id"]
        (evaluation,) = [r for r in records if r.event_name == names.GEN_AI_EVALUATION_RESULT_EVENT]
        evaluated = attributes_of(evaluation.attributes)
        assert evaluated[names.GEN_AI_EVALUATION_NAME] == names.evaluation_name("unsupported-argument")
        assert evaluated[names.GEN_AI_EVALUATION_SCORE_LABEL] == names.EVALUATION_LABEL_FAIL


def test_the_carrier_names_match_openinference_semantic_conventions() -> None:
    from openinference.semconv.trace import AnnotationAttributes, OpenInferenceSpanKindValues, SpanAttributes

    assert OpenInferenceSpanKindValues.EVALUATOR.value == names.OPENINFERENCE_KIND_EVALUATOR
    for field in names.ANNOTATION_FIELDS:
        constant = getattr(AnnotationAttributes, f"ANNOTATION_{field.upper()}")
        assert names.annotation_attribute(0, field) == f"{SpanAttributes.ANNOTATIONS}.0.{constant}"


def test_an_endpoint_that_does_not_answer_costs_a_bounded_wait_and_a_sentence(
    two_runs: tuple[Path, list[Trace]], capsys: pytest.CaptureFixture[str]
) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()  # accepts connections and never answers
    try:
        endpoint = f"http://127.0.0.1:{listener.getsockname()[1]}"
        began = time.monotonic()
        status, _, err = judge(
            capsys,
            str(two_runs[0]),
            "--contracts",
            "contracts.toml",
            "--export",
            endpoint,
            "--fail-on",
            "any",
        )
        took = time.monotonic() - began
    finally:
        listener.close()
    assert status == 1  # the judging's status, not the export's
    assert "could not be sent" in err
    assert took < 2 * EXIT_FLUSH_MILLIS / 1000 + 5


# ── --phoenix, against a server that answers as Phoenix's annotations API ──


def test_phoenix_gets_one_annotation_per_finding_on_the_judged_span(
    two_runs: tuple[Path, list[Trace]], phoenix: PhoenixApi, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = two_runs
    status, out, err = judge(
        capsys, str(path), "--contracts", "contracts.toml", "--format", "json", "--phoenix", phoenix.url
    )
    assert status == 0
    findings = [json.loads(line) for line in out.splitlines()]
    assert f"{COMMAND}: posted 2 findings to Phoenix at {phoenix.url} as span annotations" in err
    posted = [annotation for path_posted, batch in phoenix.posts for annotation in batch]
    assert {path_posted for path_posted, _ in phoenix.posts} == {ANNOTATIONS_PATH}
    assert sorted(a["span_id"] for a in posted) == sorted(f["span_id"] for f in findings)
    for annotation in posted:
        assert annotation["name"] == names.PHOENIX_ANNOTATION_NAME
        assert annotation["annotator_kind"] == names.ANNOTATOR_KIND_CODE
        assert annotation["result"]["label"] == "unsupported-argument"
        assert annotation["metadata"][names.GEN_AI_TOOL_CALL_ID] == "call_2"


def test_a_phoenix_that_refuses_is_counted_not_raised(
    two_runs: tuple[Path, list[Trace]], refusing_phoenix: PhoenixApi, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = judge(
        capsys, str(two_runs[0]), "--contracts", "contracts.toml", "--phoenix", refusing_phoenix.url
    )
    assert status == 0
    assert "posted 0 findings" in err and "2 could not be posted" in err


def test_a_phoenix_that_is_down_is_not_asked_again_and_again(
    workdir: Path,
    refusing_phoenix: PhoenixApi,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from context_integrity.limits import MAX_FAILED_ANNOTATION_POSTS
    from context_integrity.telemetry.export import posthoc

    monkeypatch.setattr(posthoc, "MAX_ANNOTATIONS_PER_POST", 1)  # one request a finding
    runs = 2 * MAX_FAILED_ANNOTATION_POSTS
    write_lines(workdir / "many.jsonl", [document(triage_trace().spans) for _ in range(runs)])
    (workdir / "contracts.toml").write_text(TRIAGE_CONTRACTS)
    status, _, err = judge(
        capsys, "many.jsonl", "--contracts", "contracts.toml", "--phoenix", refusing_phoenix.url
    )
    assert status == 0
    assert len(refusing_phoenix.posts) == MAX_FAILED_ANNOTATION_POSTS
    assert (
        f"posted 0 findings to Phoenix at {refusing_phoenix.url} as span annotations; {runs} could not be posted"
        in err
    )
