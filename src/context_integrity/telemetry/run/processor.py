"""The run-end span processor: one ``context_integrity.disposition`` summary span per run.

The summary is emitted from ``on_end`` of the run span, so it is written
exactly once however the run ended (normally, by exception, by cancellation)
and even when something other than :class:`~context_integrity.telemetry.run.lifecycle.Run`
ended the span. A run that adopted a host's run span (one this provider may never see end)
has its summary written by :meth:`DispositionSpanProcessor.emit_under` when the run ends.
The summary span is a child of the run span and carries the disposition ledger once, as
scalar attributes: TraceQL, span metrics, Jaeger's tag search and every trace UI's attribute
view read them (no row events: the ledger twice was most of the span's weight).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Tracer

from ...ledger import LedgerRow
from ..schema import names, summary_attributes

logger = logging.getLogger("context_integrity")

# Runs whose span has started but not ended. A leaked (never-ended) run span
# must not grow this forever: past the bound the oldest expectation is dropped
# and said so in the log.
MAX_OPEN_RUNS = 10_000


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What the summary span says about one run."""

    rows: Sequence[LedgerRow]
    totals: dict[str, int]
    posture: str
    work_existed: bool
    outcome: str
    dials: Mapping[str, str] = field(default_factory=dict)
    profile: str | None = None


SummarySource = Callable[[], RunSummary]


class DispositionSpanProcessor(SpanProcessor):
    """Emits the summary span when a run span it was told about ends."""

    def __init__(self, tracer_source: Callable[[], Tracer]) -> None:
        self._tracer_source = tracer_source
        self._tracer: Tracer | None = None
        self._expected: OrderedDict[int, SummarySource] = OrderedDict()
        self._lock = threading.Lock()
        # Spans ended in this provider: what a bounded flush measures the unsent against.
        self.ended = 0

    def expect(self, span_id: int, source: SummarySource) -> None:
        """Remember that the span ``span_id`` is a run whose end needs a summary."""
        with self._lock:
            self._expected[span_id] = source
            while len(self._expected) > MAX_OPEN_RUNS:
                dropped, _ = self._expected.popitem(last=False)
                logger.warning(
                    "context_integrity: more than %d runs are open at once; the oldest (span %016x) "
                    "will end without a disposition summary. Is a run span never ended?",
                    MAX_OPEN_RUNS,
                    dropped,
                )

    def forget(self, span_id: int) -> None:
        """The run span ``span_id`` will have its summary written elsewhere (:meth:`emit_under`)."""
        with self._lock:
            self._expected.pop(span_id, None)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        context = span.context
        if context is None:
            return
        with self._lock:
            self.ended += 1
            source = self._expected.pop(context.span_id, None)
        if source is None:
            return
        try:
            self._emit(context, span.end_time, source())
        except Exception:  # the exporter path must never reach the host
            logger.exception("context_integrity: could not emit the disposition summary span")

    def emit_under(self, run_span: SpanContext, summary: RunSummary) -> None:
        """Write the summary now, under a run span that is not ours to end. Never raises."""
        try:
            self._emit(run_span, None, summary)
        except Exception:  # the exporter path must never reach the host
            logger.exception("context_integrity: could not emit the disposition summary span")

    def _emit(self, run_span: SpanContext, at: int | None, summary: RunSummary) -> None:
        if self._tracer is None:
            self._tracer = self._tracer_source()
        parent = trace.set_span_in_context(NonRecordingSpan(run_span))
        span = self._tracer.start_span(
            names.DISPOSITION_SPAN,
            context=parent,
            kind=SpanKind.INTERNAL,
            start_time=at,
            attributes=summary_attributes(
                summary.rows,
                summary.totals,
                posture=summary.posture,
                work_existed=summary.work_existed,
                outcome=summary.outcome,
                dials=summary.dials,
                profile=summary.profile,
            ),
        )
        span.end(end_time=at)

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True
