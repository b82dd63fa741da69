"""Real OpenTelemetry spans shaped the way the library's instrumentation emits them.

The recording tests write these through the SDK (a private ``TracerProvider``,
never the global one) into the OTLP/JSON-lines exporters and read them back.
Every name comes from ``telemetry.names``; every ledger row from
``DispositionLedger(REGISTERED_CHECKS).report()``; finding, row and summary attributes from the
instrumentation's own ``telemetry.schema`` — so the reader is proven
against exactly what the library writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Span, Tracer, set_span_in_context
from opentelemetry.util.types import AttributeValue

from context_integrity.findings import (
    CHECKED_FAIL,
    CHECKED_PASS,
    NOT_APPLICABLE,
    Finding,
    Stratum,
    Subject,
    Witness,
)
from context_integrity.judge import REGISTERED_CHECKS
from context_integrity.ledger import DispositionLedger, LedgerRow
from context_integrity.telemetry.export.file_export import (
    OtlpJsonLinesMetricExporter,
    OtlpJsonLinesSpanExporter,
)
from context_integrity.telemetry.schema import (
    finding_attributes,
    names,
    summary_attributes,
)


def witness_expectation(witness: Witness) -> dict[str, object]:
    """A witness as the reader returns it: subject rendered, absent fields left out."""
    out: dict[str, object] = {}
    for witness_field in names.WITNESS_FIELDS:
        value = getattr(witness, witness_field)
        if value is None:
            continue
        out[witness_field] = value.render() if isinstance(value, Subject) else value
    return out


def add_finding(span: Span, finding: Finding, *, tool: str | None = None, call_id: str | None = None) -> None:
    span.add_event(names.FINDING_EVENT, finding_attributes(finding, tool_name=tool, call_id=call_id))


def emit_summary(
    tracer: Tracer,
    run_span: Span,
    ledger: DispositionLedger,
    *,
    posture: str = "observe",
    work_existed: bool = True,
    outcome: str = "ok",
    extra: dict[str, AttributeValue] | None = None,
) -> None:
    attributes = summary_attributes(
        ledger.report(), ledger.totals(), posture=posture, work_existed=work_existed, outcome=outcome
    )
    with tracer.start_as_current_span(
        names.DISPOSITION_SPAN,
        context=set_span_in_context(run_span),
        attributes={**attributes, **(extra or {})},
    ):
        pass


@contextmanager
def run_span(tracer: Tracer, agent: str) -> Iterator[Span]:
    with tracer.start_as_current_span(
        names.run_span_name(agent),
        attributes={
            names.GEN_AI_OPERATION_NAME: names.OPERATION_INVOKE_AGENT,
            names.GEN_AI_AGENT_NAME: agent,
        },
    ) as span:
        yield span


@contextmanager
def tool_span(tracer: Tracer, tool: str, call_id: str, kinds: list[str] | None = None) -> Iterator[Span]:
    attributes: dict[str, AttributeValue] = {
        names.GEN_AI_OPERATION_NAME: names.OPERATION_EXECUTE_TOOL,
        names.GEN_AI_TOOL_NAME: tool,
        names.GEN_AI_TOOL_CALL_ID: call_id,
        names.GEN_AI_TOOL_TYPE: names.TOOL_TYPE_FUNCTION,
    }
    if kinds:
        attributes[names.FINDINGS_COUNT] = len(kinds)
        attributes[names.FINDINGS_KINDS] = kinds
    with tracer.start_as_current_span(names.tool_span_name(tool), attributes=attributes) as span:
        yield span


@contextmanager
def chat_span(tracer: Tracer, model: str) -> Iterator[Span]:
    with tracer.start_as_current_span(
        names.chat_span_name(model),
        attributes={names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT, names.GEN_AI_REQUEST_MODEL: model},
    ) as span:
        yield span


def tracer_into(path: Path) -> tuple[TracerProvider, Tracer]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonLinesSpanExporter(path)))
    return provider, provider.get_tracer(names.INSTRUMENTATION_NAME)


def hex_trace_id(span: Span) -> str:
    return format(span.get_span_context().trace_id, "032x")


def hex_span_id(span: Span) -> str:
    return format(span.get_span_context().span_id, "016x")


# ── The scenario ────────────────────────────────────────────────────────
LOOKUP_TOOL = "lookup_order"
WRITE_TOOL = "write_ticket"
LOOSE_TOOL = "ping_inventory"
AGENT = "support-bot"
MODEL = "gpt-test"


def _witness(
    subject: str, predicate: str, value: str, epoch: int | None, stratum: Stratum, provenance: str
) -> Witness:
    kind, _, ident = subject.partition(" ")
    return Witness(Subject(kind, ident), predicate, value, epoch, stratum, provenance)


LOOKUP_FINDING = Finding(
    kind="column-type-mismatch",
    seam="write",
    subjects=(Subject("tool", LOOKUP_TOOL),),
    predicate="amount",
    witnesses=(
        _witness(f"tool {LOOKUP_TOOL}", "amount:type", "number", None, "asserted", "contract"),
        _witness(f"tool {LOOKUP_TOOL}", "amount", '"1240"', 3, "asserted", "result row 0"),
    ),
    epoch=3,
    message=(
        'lookup_order declared its amount column as a number, but row 0 carried the string "1240"; '
        "a model reading this row sees text where the contract promised a quantity."
    ),
)
WRITE_FINDING = Finding(
    kind="unsupported-argument",
    seam="choice",
    subjects=(Subject("tool", WRITE_TOOL), Subject("entity", "ORD-77")),
    predicate=None,
    witnesses=(
        _witness(f"tool {WRITE_TOOL}", "order_id", '"ORD-77"', 4, "asserted", "call arguments"),
        _witness("entity ORD-77", "served", "never", None, "quoted", "history"),
    ),
    epoch=None,
    message="write_ticket was called with order id ORD-77, which no tool served in this run.",
    advisory=True,
)
WIRE_FINDING = Finding(
    kind="invariant-violation",
    seam="wire",
    subjects=(Subject("map", "orders"),),
    predicate="lun",
    witnesses=(_witness("map orders", "lun", "''", 2, "asserted", "request body"),),
    epoch=2,
    message="The request sent to the model carried LUN 0 as an empty string.",
)
CLAIM_FINDING = Finding(
    kind="unsupported-claim",
    seam="claim",
    subjects=(Subject("answer", "final"),),
    predicate="total",
    witnesses=(_witness("answer final", "total", "1300", None, "asserted", "final answer"),),
    epoch=None,
    message="The final answer states a total of 1300 that no tool result settled.",
)
LOOSE_FINDING = Finding(
    kind="empty-lookup",
    seam="write",
    subjects=(Subject("tool", LOOSE_TOOL),),
    predicate=None,
    witnesses=(),
    epoch=None,
    message="ping_inventory returned no rows for a lookup declared to find one.",
)


@dataclass
class Scenario:
    """What the scenario recorded, to compare the reading against."""

    path: Path
    trace_id: str = ""
    run_span_id: str = ""
    tool_span_ids: list[str] = field(default_factory=list)
    loose_trace_id: str = ""
    loose_span_id: str = ""
    ledger_rows: list[dict[str, object]] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)
    findings_in_order: list[Finding] = field(default_factory=list)
    metric_counts: dict[tuple[str, str, str], int] = field(default_factory=dict)


def scenario_ledger() -> DispositionLedger:
    """Some rows fired, some passed, one unarmed, the rest untouched."""
    ledger = DispositionLedger(REGISTERED_CHECKS)
    by_kind = {(c.check, c.seam): c for c in REGISTERED_CHECKS}
    ledger.note(by_kind[(LOOKUP_FINDING.kind, LOOKUP_FINDING.seam)], CHECKED_PASS)
    ledger.note(by_kind[(LOOKUP_FINDING.kind, LOOKUP_FINDING.seam)], CHECKED_FAIL, at_ms=1_717_000_000_123)
    ledger.note(by_kind[(WRITE_FINDING.kind, WRITE_FINDING.seam)], CHECKED_FAIL, at_ms=1_717_000_001_000)
    ledger.note(by_kind[(WIRE_FINDING.kind, WIRE_FINDING.seam)], CHECKED_FAIL, at_ms=1_717_000_002_000)
    ledger.note(by_kind[(CLAIM_FINDING.kind, CLAIM_FINDING.seam)], CHECKED_FAIL, at_ms=1_717_000_003_000)
    ledger.note(REGISTERED_CHECKS[-1], NOT_APPLICABLE)
    return ledger


def untouched_rows(ledger: DispositionLedger) -> list[LedgerRow]:
    return [row for row in ledger.report() if not row.touched()]


def record_scenario(path: Path, *, with_metrics: bool = True) -> Scenario:
    """One run (two tool calls, a chat call, a claim finding, a summary) and one loose call."""
    scenario = Scenario(path=path)
    provider, tracer = tracer_into(path)
    ledger = scenario_ledger()
    with run_span(tracer, AGENT) as run:
        scenario.trace_id = hex_trace_id(run)
        scenario.run_span_id = hex_span_id(run)
        with tool_span(tracer, LOOKUP_TOOL, "call-1", [LOOKUP_FINDING.kind]) as span:
            add_finding(span, LOOKUP_FINDING, tool=LOOKUP_TOOL, call_id="call-1")
            scenario.tool_span_ids.append(hex_span_id(span))
        with chat_span(tracer, MODEL) as span:
            add_finding(span, WIRE_FINDING)
        with tool_span(tracer, WRITE_TOOL, "call-2", [WRITE_FINDING.kind]) as span:
            add_finding(span, WRITE_FINDING, tool=WRITE_TOOL, call_id="call-2")
            span.add_event(
                names.EXTERNAL_GROUND_EVENT,
                {
                    names.EXTERNAL_GROUND_PATH: "args.order_id",
                    names.EXTERNAL_GROUND_VALUE: "ORD-77",
                    names.EXTERNAL_GROUND_SOURCE: "user message",
                },
            )
            scenario.tool_span_ids.append(hex_span_id(span))
        add_finding(run, CLAIM_FINDING)
        emit_summary(tracer, run, ledger)
    with tool_span(tracer, LOOSE_TOOL, "call-9", [LOOSE_FINDING.kind]) as loose:
        add_finding(loose, LOOSE_FINDING, tool=LOOSE_TOOL, call_id="call-9")
        scenario.loose_trace_id = hex_trace_id(loose)
        scenario.loose_span_id = hex_span_id(loose)
    provider.shutdown()
    scenario.ledger_rows = [row.as_dict() for row in ledger.report()]
    scenario.totals = ledger.totals()
    scenario.findings_in_order = [LOOKUP_FINDING, WIRE_FINDING, WRITE_FINDING, CLAIM_FINDING]
    if with_metrics:
        scenario.metric_counts = record_finding_counter(path)
    return scenario


def record_finding_counter(path: Path) -> dict[tuple[str, str, str], int]:
    """Two collections of the findings counter; the second is the one that counts."""
    reader = PeriodicExportingMetricReader(
        OtlpJsonLinesMetricExporter(path), export_interval_millis=3_600_000
    )
    provider = MeterProvider(metric_readers=[reader])
    counter = provider.get_meter(names.INSTRUMENTATION_NAME).create_counter(
        names.FINDINGS_METRIC, unit=names.FINDINGS_METRIC_UNIT
    )

    def attrs(finding: Finding, tool: str) -> dict[str, AttributeValue]:
        return {
            names.METRIC_KIND: finding.kind,
            names.METRIC_SEAM: finding.seam,
            names.METRIC_TOOL: tool,
            names.METRIC_ADVISORY: finding.advisory,
        }

    counter.add(1, attrs(LOOKUP_FINDING, LOOKUP_TOOL))
    reader.force_flush()
    counter.add(2, attrs(LOOKUP_FINDING, LOOKUP_TOOL))
    counter.add(1, attrs(WRITE_FINDING, WRITE_TOOL))
    # The same kind/seam/tool, advisory this time: a separate series that adds up.
    counter.add(1, {**attrs(LOOKUP_FINDING, LOOKUP_TOOL), names.METRIC_ADVISORY: True})
    reader.force_flush()
    provider.shutdown()
    return {
        (LOOKUP_FINDING.kind, LOOKUP_FINDING.seam, LOOKUP_TOOL): 4,
        (WRITE_FINDING.kind, WRITE_FINDING.seam, WRITE_TOOL): 1,
    }
