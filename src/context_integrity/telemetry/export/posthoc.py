"""Judged runs sent after the fact into the traces they judged (``context-integrity judge --export``).

A span that ended cannot be changed, so what a live run puts on its spans goes out beside them:

- per run, the summary span (``context_integrity.disposition``, the attributes a live run's summary
  carries) as a child of the judged run's span, in its trace;
- per finding, a ``context_integrity.finding`` log record and a ``gen_ai.evaluation.result`` log
  record, each in the context of the span the finding is about, so each carries that span's trace
  and span ids (the log-based events OpenTelemetry moves span events to);
- per finding, a carrier span (``context_integrity.evaluation``) with exactly one link, to the
  span the finding is about, as OpenInference's annotations spec carries post-hoc feedback: span
  kind ``EVALUATOR``, the finding as the annotation ``annotations.0.annotation.*``, and the same
  ``context_integrity.finding`` event a live span carries, so queries over finding events find it.
  Its parent is the summary span; the link, never the parent, names the span judged.

Every span is stamped with the judged moment (the run's end; a finding's own time), so the trace
reads as it happened. The exporters are the ones ``setup()`` builds (:mod:`.exporters`), on
providers of its own (never the process's global ones); :meth:`PosthocExport.close` flushes and
shuts them down within a bound and says what was sent and what was not.

:class:`PhoenixFindings` posts each finding as a Phoenix span annotation on the judged span
(``--phoenix``), through the exporter ``setup(phoenix_annotations=...)`` uses.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, TraceFlags
from opentelemetry.util.types import AttributeValue

from ...limits import EXIT_FLUSH_MILLIS, MAX_ATTRIBUTE_CHARS, MAX_FAILED_ANNOTATION_POSTS
from ...text import clip
from ..emit import clipped, finding_records, provenance
from ..instrumentation import instrumentation_version
from ..schema import finding_attributes, names, summary_attributes
from .bounded import Tally, TallyingSpanExporter, flush_all, within
from .exporters import ExportPlan, otlp_log_exporter, otlp_span_exporter
from .phoenix import MAX_ANNOTATIONS_PER_POST, METADATA_KEYS, PhoenixAnnotationExporter, finding_annotation

if TYPE_CHECKING:
    from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult

    from ...traces.replay import JudgedFinding, JudgedRun

# The service the post-hoc spans and records are exported as, unless OTEL_SERVICE_NAME names one.
SERVICE_NAME: Final = "context-integrity-judge"
_RUN_OUTCOME_OK: Final = "ok"
_RUN_OUTCOME_ERROR: Final = "error"


def _remote(trace_id: str, span_id: str) -> SpanContext | None:
    """The context of a span already exported (hex ids), or ``None`` for ids that are not."""
    try:
        context = SpanContext(
            trace_id=int(trace_id, 16),
            span_id=int(span_id, 16),
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
    except (TypeError, ValueError):
        return None
    return context if context.is_valid else None


def carrier_attributes(attributes: Mapping[str, AttributeValue]) -> dict[str, AttributeValue]:
    """A finding's event attributes as the carrier span's: the OpenInference annotation (span kind
    EVALUATOR, ``annotations.0.annotation.<field>``) beside the finding's own scalar attributes."""
    annotation = finding_annotation("", attributes)
    result = annotation["result"]
    fields: dict[str, AttributeValue] = {
        "name": annotation["name"],
        "score": result["score"],
        "label": result["label"],
        "explanation": result["explanation"],
        "annotator_kind": annotation["annotator_kind"],
        "identifier": annotation["identifier"],
        "metadata": clip(json.dumps(annotation["metadata"], default=str), MAX_ATTRIBUTE_CHARS),
    }
    out: dict[str, AttributeValue] = {names.OPENINFERENCE_SPAN_KIND: names.OPENINFERENCE_KIND_EVALUATOR}
    out.update({names.annotation_attribute(0, field): value for field, value in fields.items()})
    for key in (names.FINDING_KIND, names.FINDING_MESSAGE, *METADATA_KEYS):
        if key in attributes:
            out[key] = attributes[key]
    return out


class _TallyingLogExporter(Tally):
    """The log exporter we built, counting the records it sent and failed to send."""

    def __init__(self, inner: LogRecordExporter) -> None:
        super().__init__()
        self.inner = inner

    def export(self, batch: Sequence[Any]) -> LogRecordExportResult:
        from opentelemetry.sdk._logs.export import LogRecordExportResult

        try:
            result = self.inner.export(batch)
        except Exception:
            result = LogRecordExportResult.FAILURE
        self.count(result is LogRecordExportResult.SUCCESS, len(batch))
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()  # type: ignore[no-untyped-call]

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self.inner.force_flush(timeout_millis))


@dataclass(frozen=True, slots=True)
class Sent:
    """What an export sent and what it could not: spans and log records, each counted."""

    spans: int
    spans_failed: int
    records: int
    records_failed: int
    unsent: int
    finished: bool

    def sentence(self, endpoint: str) -> str:
        said = f"sent {self.spans} spans and {self.records} log records to {endpoint}"
        lost = self.spans_failed + self.records_failed + self.unsent
        if lost or not self.finished:
            said += f"; {lost} could not be sent (the endpoint refused them or did not answer in time)"
        return said


class PosthocExport:
    """Sends judged runs' summaries, finding records and carrier spans over OTLP to ``endpoint``.

    ``endpoint`` is a base URL (``http://collector:4318``; gRPC's port with ``protocol="grpc"``);
    the ``OTEL_EXPORTER_OTLP_*`` environment applies as it does to ``setup()``. Raises
    :class:`~context_integrity.SetupError` only for a protocol it does not know.
    """

    def __init__(
        self, endpoint: str, *, protocol: str | None = None, headers: Mapping[str, str] | None = None
    ) -> None:
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.environment_variables import OTEL_SERVICE_NAME

        plan = ExportPlan.resolve(endpoint, protocol, headers)
        resource = Resource.create(
            {} if os.environ.get(OTEL_SERVICE_NAME) else {"service.name": SERVICE_NAME}
        )
        self.endpoint = endpoint
        self._spans = TallyingSpanExporter(otlp_span_exporter(plan, endpoint))
        self._records = _TallyingLogExporter(otlp_log_exporter(plan, endpoint))
        self._tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self._tracer_provider.add_span_processor(BatchSpanProcessor(self._spans))
        self._logger_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
        self._logger_provider.add_log_record_processor(BatchLogRecordProcessor(self._records))  # type: ignore[arg-type]
        self._tracer = self._tracer_provider.get_tracer(names.INSTRUMENTATION_NAME, instrumentation_version())
        self._logger = self._logger_provider.get_logger(names.INSTRUMENTATION_NAME, instrumentation_version())
        self.ended_spans = 0
        self.emitted_records = 0

    def judged(self, judged: JudgedRun) -> None:
        """Send one judged run's summary span, and each finding's log records and carrier span."""
        run = judged.run
        run_context = _remote(run.trace_id, run.span_id)
        if run_context is None:
            return
        at = run.end_time_unix_nano or run.start_time_unix_nano
        totals = judged.totals
        summary = self._tracer.start_span(
            names.DISPOSITION_SPAN,
            context=trace.set_span_in_context(NonRecordingSpan(run_context)),
            kind=SpanKind.INTERNAL,
            start_time=at,
            attributes=summary_attributes(
                judged.ledger,
                totals,
                posture=judged.dials.reported_posture(),
                work_existed=judged.work_existed,
                outcome=_RUN_OUTCOME_ERROR if run.status == "error" else _RUN_OUTCOME_OK,
                dials=judged.dials.in_force(),
            ),
        )
        under_summary = trace.set_span_in_context(summary)
        for finding in judged.findings:
            self._finding(run.trace_id, finding, under_summary, at)
        summary.end(end_time=at)
        self.ended_spans += 1

    def _finding(self, trace_id: str, judged: JudgedFinding, parent: Any, fallback: int | None) -> None:
        about = _remote(trace_id, judged.span_id)
        if about is None:
            return
        finding = judged.finding
        attributes = clipped(
            {
                **finding_attributes(finding, tool_name=judged.tool_name, call_id=judged.call_id),
                **provenance(finding),
            }
        )
        finding_records(
            self._logger,
            finding,
            attributes,
            NonRecordingSpan(about),
            log_events=True,
            evaluation_events=True,
        )
        self.emitted_records += 2
        when = judged.time_unix_nano or fallback
        carrier = self._tracer.start_span(
            names.FINDING_CARRIER_SPAN,
            context=parent,
            kind=SpanKind.INTERNAL,
            links=[Link(about)],
            start_time=when,
            attributes=carrier_attributes(attributes),
        )
        carrier.add_event(names.FINDING_EVENT, attributes, timestamp=when)
        carrier.set_attribute(names.FINDINGS_COUNT, 1)
        carrier.set_attribute(names.FINDINGS_KINDS, [finding.kind])
        carrier.end(end_time=when)
        self.ended_spans += 1

    def close(self, timeout_millis: int = EXIT_FLUSH_MILLIS) -> Sent:
        """Flush and shut down, within ``timeout_millis`` together; what was sent and what was not."""
        providers = (self._tracer_provider, self._logger_provider)
        flushed = flush_all(providers, timeout_millis)

        def shut() -> None:
            for provider in providers:
                provider.shutdown()

        finished = within(shut, timeout_millis, "export-shutdown") and flushed
        spans, records = self._spans, self._records
        unsent = max(self.ended_spans - spans.sent - spans.failed, 0) + max(
            self.emitted_records - records.sent - records.failed, 0
        )
        return Sent(spans.sent, spans.failed, records.sent, records.failed, unsent, finished)


class PhoenixFindings:
    """Posts each judged run's findings to the Phoenix at ``base_url``, each as a span annotation on
    the span it is about (``--phoenix``), through the exporter ``setup(phoenix_annotations=...)``
    uses, :data:`~.phoenix.MAX_ANNOTATIONS_PER_POST` to a request. After
    :data:`~context_integrity.limits.MAX_FAILED_ANNOTATION_POSTS` requests in a row fail, the rest
    are counted and not sent: a Phoenix that is down does not hold a large judgement for a timeout
    per run. Never raises."""

    def __init__(self, base_url: str, *, headers: Mapping[str, str] | None = None) -> None:
        self.base_url = base_url
        self._exporter = PhoenixAnnotationExporter(base_url, headers=headers)
        self._held: list[dict[str, Any]] = []
        self._failed_in_a_row = 0
        self.failed = 0

    @property
    def posted(self) -> int:
        return self._exporter.posted

    def judged(self, judged: JudgedRun) -> None:
        for index, found in enumerate(judged.findings):
            attributes = clipped(
                {
                    **finding_attributes(found.finding, tool_name=found.tool_name, call_id=found.call_id),
                    **provenance(found.finding),
                }
            )
            self._held.append(finding_annotation(found.span_id, attributes, index))
        if len(self._held) >= MAX_ANNOTATIONS_PER_POST:
            self._post()

    def close(self) -> None:
        """Post what is held."""
        if self._held:
            self._post()

    def _post(self) -> None:
        batch, self._held = self._held, []
        if self._failed_in_a_row >= MAX_FAILED_ANNOTATION_POSTS:
            self.failed += len(batch)
            return
        before = self._exporter.posted
        ok = self._exporter.post(batch)
        self.failed += len(batch) - (self._exporter.posted - before)
        self._failed_in_a_row = 0 if ok else self._failed_in_a_row + 1
