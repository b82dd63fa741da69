"""GenAI evaluation events: the explanation passes the redaction hook, and opt-in pass events.

Read back from a real SDK pipeline: the spans the tracer provider exported and the log records
the logger provider exported.
"""

from __future__ import annotations

from collections.abc import Callable

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.redaction import REDACTED
from context_integrity.telemetry.schema import names

SECRET = "sk-live-SECRET-0123456789"
KIND = "column-type-mismatch"


def _setup(
    telemetry: Telemetry, evaluation_events: object, redact: Callable[[str], str] | None = None
) -> tuple[InMemoryLogRecordExporter, ci.Run]:
    exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]  # the SDK's __init__ is unannotated
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    ci.setup(
        tracer_provider=telemetry.provider,
        meter_provider=telemetry.meter_provider,
        logger_provider=logger_provider,
        evaluation_events=evaluation_events,  # type: ignore[arg-type]
        check_column_types="warn",
        redact=redact,
    )
    ci.declare_tool("lookup", result_columns={"lun": "number"})
    with ci.run("q") as agent_run:
        agent_run.tool_result("lookup", "good", [{"lun": 7}])
        agent_run.tool_result("lookup", "bad", [{"lun": f"LUN {SECRET}"}])
    return exporter, agent_run


def _tool_spans(telemetry: Telemetry) -> dict[str, ReadableSpan]:
    return {
        str((s.attributes or {})[names.GEN_AI_TOOL_CALL_ID]): s
        for s in telemetry.finished()
        if s.name == names.tool_span_name("lookup")
    }


def _evaluations(exporter: InMemoryLogRecordExporter) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for data in exporter.get_finished_logs():
        record = data.log_record
        if record.event_name == names.GEN_AI_EVALUATION_RESULT_EVENT:
            out.append(
                {**dict(record.attributes or {}), "span_id": record.span_id, "trace_id": record.trace_id}
            )
    return out


def _finding_message(span: ReadableSpan) -> object:
    (event,) = [e for e in span.events if e.name == names.FINDING_EVENT]
    return dict(event.attributes or {})[names.FINDING_MESSAGE]


def test_the_evaluation_explanation_is_the_finding_message_as_the_redact_hook_let_it_leave(
    telemetry: Telemetry,
) -> None:
    exporter, _ = _setup(telemetry, True, redact=lambda text: text.replace(SECRET, "[key]"))
    (evaluation,) = _evaluations(exporter)
    explanation = evaluation[names.GEN_AI_EVALUATION_EXPLANATION]
    assert isinstance(explanation, str) and "[key]" in explanation and SECRET not in explanation
    assert explanation == _finding_message(_tool_spans(telemetry)["bad"])


def test_a_raising_redact_hook_redacts_the_evaluation_explanation(telemetry: Telemetry) -> None:
    def broken(text: str) -> str:
        raise RuntimeError("hook broke")

    exporter, _ = _setup(telemetry, True, redact=broken)
    (evaluation,) = _evaluations(exporter)
    explanation = evaluation[names.GEN_AI_EVALUATION_EXPLANATION]
    # Each value the hook failed on is redacted whole; the sentence around it is ours.
    assert isinstance(explanation, str) and f'the first is "{REDACTED}"' in explanation
    assert SECRET not in explanation and "LUN" not in explanation
    assert explanation == _finding_message(_tool_spans(telemetry)["bad"])


def test_evaluation_events_all_adds_one_pass_event_per_checked_pass_encounter_in_its_span(
    telemetry: Telemetry,
) -> None:
    exporter, agent_run = _setup(telemetry, names.EVALUATION_EVENTS_ALL)
    spans = _tool_spans(telemetry)
    evaluations = _evaluations(exporter)
    by_label = {
        label: [e for e in evaluations if e[names.GEN_AI_EVALUATION_SCORE_LABEL] == label]
        for label in (names.EVALUATION_LABEL_PASS, names.EVALUATION_LABEL_FAIL)
    }
    # One pass event per checked-pass encounter of every check, as the ledger counts them.
    assert len(by_label[names.EVALUATION_LABEL_PASS]) == sum(
        r.checked - r.findings for r in agent_run.ledger()
    )
    evaluations = [e for e in evaluations if e[names.GEN_AI_EVALUATION_NAME] == names.evaluation_name(KIND)]
    by_label = {
        label: [e for e in evaluations if e[names.GEN_AI_EVALUATION_SCORE_LABEL] == label]
        for label in (names.EVALUATION_LABEL_PASS, names.EVALUATION_LABEL_FAIL)
    }
    for label, call_id, score in (
        (names.EVALUATION_LABEL_PASS, "good", names.EVALUATION_SCORE_PASS),
        (names.EVALUATION_LABEL_FAIL, "bad", names.EVALUATION_SCORE_FAIL),
    ):
        (evaluation,) = by_label[label]
        span = spans[call_id]
        assert (evaluation["trace_id"], evaluation["span_id"]) == (
            span.context.trace_id,
            span.context.span_id,
        )
        assert evaluation[names.GEN_AI_EVALUATION_NAME] == names.evaluation_name(KIND)
        assert evaluation[names.GEN_AI_EVALUATION_SCORE_VALUE] == score
    assert names.GEN_AI_EVALUATION_EXPLANATION not in by_label[names.EVALUATION_LABEL_PASS][0]


def test_evaluation_events_true_stays_fail_only(telemetry: Telemetry) -> None:
    exporter, _ = _setup(telemetry, True)
    labels = [e[names.GEN_AI_EVALUATION_SCORE_LABEL] for e in _evaluations(exporter)]
    assert labels == [names.EVALUATION_LABEL_FAIL]
