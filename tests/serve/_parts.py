"""What the pipeline-stage tests share: a target that keeps what it is sent, a clock the test turns,
requests built from the documented GenAI shapes, and readers of what came out."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1 import trace_pb2
from tests.traces.shapes import Trace, document, triage_book

from context_integrity.judge import Dials
from context_integrity.serve.forward import REJECTED, RETRY, SENT, Answer, Forwarder
from context_integrity.serve.hold import HeldTrace, HoldLimits
from context_integrity.serve.judging import JudgeTrace, Say, TraceJudge
from context_integrity.serve.metrics import StageMetrics
from context_integrity.serve.stage import Stage
from context_integrity.serve.view import attributes_of, span_of
from context_integrity.serve.wire import read_json
from context_integrity.telemetry.schema import FindingFields, decode_finding, names
from context_integrity.traces import JudgedRun, Span

DIALS = Dials(check_column_types="warn", notice_empty_lookups=True)


class Clock:
    """Monotonic seconds the test sets."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class RecordingTarget:
    """A forward target that keeps every request it accepts; ``down`` makes it answer retryable,
    ``refusing`` makes it refuse for good."""

    description = "the test's target"

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.payloads: list[bytes] = []
        self.down = False
        self.refusing = False
        self.sends = 0
        self._lock = threading.Lock()

    def send(self, payload: bytes) -> Answer:
        with self._lock:
            self.sends += 1
            if self.down:
                return Answer(RETRY, "down for the test")
            if self.refusing:
                return Answer(REJECTED, "HTTP 400")
            self.payloads.append(payload)
            self.requests.append(ExportTraceServiceRequest.FromString(payload))
        return Answer(SENT)

    def close(self) -> None:
        return None

    def spans(self) -> list[Out]:
        with self._lock:
            return spans_in(self.requests)


@dataclass(frozen=True)
class Out:
    """One forwarded span: the protobuf as sent, its scope, and its decoded view."""

    proto: trace_pb2.Span
    scope: str
    view: Span

    @property
    def findings(self) -> list[FindingFields]:
        problems: list[str] = []
        out = [
            decode_finding(event.attributes, problems, FindingFields)
            for event in self.view.events
            if event.name == names.FINDING_EVENT
        ]
        assert problems == []
        return out


def spans_in(requests: Iterable[ExportTraceServiceRequest]) -> list[Out]:
    out: list[Out] = []
    for request in requests:
        for resource_spans in request.resource_spans:
            resource = attributes_of(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    out.append(
                        Out(span, scope_spans.scope.name, span_of(span, resource, scope_spans.scope.name))
                    )
    return out


def request_of(*traces: Trace, service: str = "agent") -> ExportTraceServiceRequest:
    """The traces' spans as one OTLP request (through the stage's own OTLP/JSON reader)."""
    body = json.dumps(document([span for trace in traces for span in trace.spans], service=service))
    return read_json(body.encode())


@dataclass
class Rig:
    """A stage driven by hand: the test turns the clock, judges what is due, sends what is queued."""

    stage: Stage
    target: RecordingTarget
    clock: Clock
    metrics: StageMetrics
    judged: list[HeldTrace] = field(default_factory=list)

    def accept(self, *traces: Trace) -> None:
        self.stage.accept(request_of(*traces))

    def after(self, seconds: float) -> int:
        """Let ``seconds`` pass, judge what is due, and send everything queued; traces judged."""
        self.clock.now += seconds
        judged = self.stage.judge_due()
        self.flush()
        return judged

    def flush(self) -> None:
        while self.stage.forwarder.send_once() is not None:
            pass

    def count(self, name: str, **labels: str) -> int:
        return int(self.metrics.value(name + "_total", **labels))

    def accounted(self) -> tuple[int, int]:
        """(received, forwarded + dropped): every span either forwarded or counted."""
        dropped = sum(
            self.count(names.SERVE_SPANS_DROPPED, reason=reason)
            for reason in ("queue_full", "rejected", "shutdown")
        )
        return self.count(names.SERVE_SPANS_RECEIVED), self.count(names.SERVE_SPANS_FORWARDED) + dropped


def rig(
    judge: JudgeTrace | None = None,
    *,
    quiet: float = 1.0,
    max_wait: float = 30.0,
    cap_bytes: int | None = None,
    **limits: Any,
) -> Rig:
    clock = Clock()
    metrics = StageMetrics()
    target = RecordingTarget()
    forwarder = (
        Forwarder(target, metrics, clock=clock)
        if cap_bytes is None
        else Forwarder(target, metrics, clock=clock, cap_bytes=cap_bytes)
    )
    stage = Stage(
        judge or TraceJudge(triage_book(), DIALS),
        forwarder,
        metrics,
        limits=HoldLimits(quiet_seconds=quiet, max_wait_seconds=max_wait, **limits),
        clock=clock,
    )
    return Rig(stage, target, clock, metrics)


def wait_for(condition: Callable[[], object], what: str, timeout_s: float = 60) -> None:
    """Poll ``condition`` until it holds, or fail saying ``what`` was waited for."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")


def failing_judge(trace: HeldTrace, say: Say) -> Sequence[JudgedRun]:
    raise RuntimeError("the stand-in judge fails")


def judge_counting(
    calls: list[HeldTrace], inner: JudgeTrace
) -> Callable[[HeldTrace, Say], Sequence[JudgedRun]]:
    def judge(trace: HeldTrace, say: Say) -> Sequence[JudgedRun]:
        calls.append(trace)
        return inner(trace, say)

    return judge


# ── many small traces, built straight as protobuf ────────────────────────

MISTYPED_EVERY = 10  # every tenth trace's tool returns a number where a string is declared


def small_traces(count: int, *, first: int = 0, run_span: bool = True) -> ExportTraceServiceRequest:
    """``count`` agent runs in the GenAI conventions, two spans each (a ``list_hosts`` call under an
    ``invoke_agent`` span); every :data:`MISTYPED_EVERY`-th returns a mistyped ``wwpn``."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    service = resource_spans.resource.attributes.add(key="service.name")
    service.value.string_value = "fleet-agent"
    spans = resource_spans.scope_spans.add()
    spans.scope.name = "some-genai-instrumentation"
    for index in range(first, first + count):
        trace_id = index.to_bytes(16, "big")
        run_id = (2 * index + 1).to_bytes(8, "big")
        wwpn: object = 7 if index % MISTYPED_EVERY == 0 else "c0:50:76"
        tool = spans.spans.add(
            trace_id=trace_id,
            span_id=(2 * index + 2).to_bytes(8, "big"),
            parent_span_id=run_id,
            name=names.tool_span_name("list_hosts"),
            start_time_unix_nano=1_000 + index,
            end_time_unix_nano=2_000 + index,
        )
        for key, value in (
            (names.GEN_AI_OPERATION_NAME, names.OPERATION_EXECUTE_TOOL),
            (names.GEN_AI_TOOL_NAME, "list_hosts"),
            (names.GEN_AI_TOOL_CALL_ID, f"call-{index}"),
            (names.GEN_AI_TOOL_CALL_ARGUMENTS, "{}"),
            (names.GEN_AI_TOOL_CALL_RESULT, json.dumps([{"host": f"esx-{index}", "wwpn": wwpn}])),
        ):
            tool.attributes.add(key=key).value.string_value = value
        if not run_span:
            continue
        run = spans.spans.add(
            trace_id=trace_id,
            span_id=run_id,
            name=names.run_span_name("fleet"),
            start_time_unix_nano=500 + index,
            end_time_unix_nano=3_000 + index,
        )
        for key, value in (
            (names.GEN_AI_OPERATION_NAME, names.OPERATION_INVOKE_AGENT),
            (names.GEN_AI_AGENT_NAME, "fleet"),
        ):
            run.attributes.add(key=key).value.string_value = value
    return request


def span_keys(spans: Iterable[trace_pb2.Span]) -> set[tuple[bytes, bytes]]:
    return {(span.trace_id, span.span_id) for span in spans}
