"""The stage: every span received is forwarded, the agent work among them judged on the way.

:meth:`Stage.accept` takes one decoded request (from either receiver). Each span is read by the
dialects once (:func:`~context_integrity.traces.detect.detect`):

- a span no dialect reads as agent work is forwarded at once (where its trace is held, where it sits
  is kept for the assembler); so is every span of a trace with no agent work: nothing is held for it;
- a span of agent work is held with its trace (:mod:`.hold`) until the trace is due, then the trace
  is judged (:mod:`.judging`), its findings and summary written on it (:mod:`.annotate`), and forwarded;
- a span of agent work whose trace was judged already is forwarded unchanged and counted late; one
  the hold has no room for is forwarded unjudged and counted; so is a whole trace whose judging
  failed, and one the library judged in process already (its summary span is in it).

Nothing makes a sender wait on judging or on the forward target: the hold's lock is held only for
bookkeeping, and at most :data:`~context_integrity.limits.SERVE_MAX_SENDER_WAIT_SECONDS` is waited for
it (past that the request's spans are forwarded unjudged and counted); the forwarder's queue never
waits (:mod:`.forward`). :meth:`Stage.stop` is the SIGTERM path: judge what is complete, forward
everything held, drain the queue, all within :data:`~context_integrity.limits.SERVE_SHUTDOWN_SECONDS`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1 import trace_pb2

from ..limits import (
    SERVE_MAX_NOTES_PER_TRACE,
    SERVE_MAX_SENDER_WAIT_SECONDS,
    SERVE_SHUTDOWN_JUDGE_SECONDS,
    SERVE_SHUTDOWN_SECONDS,
)
from ..telemetry.schema import names
from ..text import clip
from ..traces.detect import detect
from ..traces.dialects import DIALECTS
from ..traces.readings import AgentReading
from ..traces.replay import JudgedRun
from ..traces.spans import Span
from .annotate import judged_request, unjudged_request
from .forward import Forwarder
from .hold import DEFAULT_LIMITS, HOLD_FULL, LATE, Envelope, HeldSpan, HeldTrace, Hold, HoldLimits
from .judging import JudgeTrace
from .metrics import (
    UNJUDGED_AT_SOURCE,
    UNJUDGED_BUSY,
    UNJUDGED_HOLD_FULL,
    UNJUDGED_JUDGE_FAILED,
    UNJUDGED_SHUTDOWN,
    UNJUDGED_TRACE_FULL,
    StageMetrics,
)
from .view import attributes_of, place_of, proto_place_of, signs_of, span_of
from .wire import SPAN_ID_BYTES, TRACE_ID_BYTES

logger = logging.getLogger("context_integrity.serve")

_SERVICE_NAME: Final = "service.name"
# The longest the judging thread sleeps between looks at the hold (a run span's arrival wakes it).
_IDLE_SECONDS: Final = 0.5
# A dialect's failures on spans (never expected) logged one by one; the rest are counted only.
_LOGGED_DIALECT_FAILURES: Final = 100


@dataclass(slots=True)
class _Work:
    """A span of agent work read on arrival, before the hold is asked to take it."""

    trace_id: bytes
    held: HeldSpan


class _Resource:
    """One ``ResourceSpans``' resource, its attributes decoded and its bytes taken when first asked."""

    __slots__ = ("_attributes", "_key", "_resource_spans")

    def __init__(self, resource_spans: trace_pb2.ResourceSpans) -> None:
        self._resource_spans = resource_spans
        self._attributes: dict[str, object] | None = None
        self._key: bytes | None = None

    @property
    def attributes(self) -> dict[str, object]:
        if self._attributes is None:
            self._attributes = attributes_of(self._resource_spans.resource.attributes)
        return self._attributes

    def key(self) -> bytes:
        if self._key is None:
            self._key = self._resource_spans.resource.SerializeToString()
        return self._key


@dataclass(slots=True)
class _Place:
    """A span no dialect reads: forwarded at once; where it sits is kept if its trace is held."""

    trace_id: bytes
    span: trace_pb2.Span
    resource: _Resource
    scope: str
    view: Span | None

    def place(self) -> Span:
        if self.view is not None:
            return place_of(self.view)
        return proto_place_of(self.span, self.resource.attributes, self.scope)


@dataclass(slots=True)
class _SourceSummary:
    """The library's own summary span: the trace's run was judged in process."""

    trace_id: bytes


class Stage:
    """The hold, the judge and the forwarder, and the thread that judges due traces."""

    def __init__(
        self,
        judge: JudgeTrace,
        forwarder: Forwarder,
        metrics: StageMetrics,
        *,
        limits: HoldLimits = DEFAULT_LIMITS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.judge = judge
        self.forwarder = forwarder
        self.metrics = metrics
        self.hold = Hold(limits)
        self._clock = clock
        self._nudge = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._judge_loop, name="serve-judge", daemon=True)
        self.ready = False
        self._dialect_failures = 0
        self._signs = signs_of(DIALECTS)

    # ── receiving ───────────────────────────────────────────────────
    def accept(self, request: ExportTraceServiceRequest, body: bytes | None = None) -> None:
        """Take one request's spans: hold the agent work, forward the rest now. Never raises.

        ``body`` is the request as received in binary protobuf, when it was: if nothing of it is
        held it is forwarded as it came, without encoding it again.
        """
        now = self._clock()
        signs = self._signs
        if body is not None and signs is not None and not signs.may_claim(body):
            self._pass_through(request, body, now)  # not one span of it can be agent work
            return
        decided: list[list[list[object]]] = []
        total = 0
        for resource_spans in request.resource_spans:
            resource = _Resource(resource_spans)
            per_scope: list[list[object]] = []
            decided.append(per_scope)
            for scope_spans in resource_spans.scope_spans:
                per_span: list[object] = []
                per_scope.append(per_span)
                envelope: Envelope | None = None
                scope_name = scope_spans.scope.name
                # Spans that carry no dialect's sign are no agent work: not decoded at all.
                sifted = signs is not None and not signs.scope_may_claim(scope_name)
                for span in scope_spans.spans:
                    total += 1
                    if len(span.trace_id) != TRACE_ID_BYTES or len(span.span_id) != SPAN_ID_BYTES:
                        per_span.append(None)  # no trace to hold it in: forwarded as it came
                        continue
                    data: bytes | None = None
                    if sifted:
                        assert signs is not None
                        data = span.SerializeToString()
                        if not signs.may_claim(data):
                            per_span.append(_Place(span.trace_id, span, resource, scope_name, None))
                            continue
                    try:
                        view = span_of(span, resource.attributes, scope_name)
                        dialect, reading = detect(view, self._say_dialect)
                    except Exception as error:  # our own bug: the span still goes on, unjudged
                        logger.error(
                            "reading a span failed: %r; it is forwarded unjudged", error, exc_info=error
                        )
                        per_span.append(None)
                        continue
                    if reading is None:
                        if view.scope == names.INSTRUMENTATION_NAME and view.name == names.DISPOSITION_SPAN:
                            per_span.append(_SourceSummary(span.trace_id))
                        else:
                            per_span.append(_Place(span.trace_id, span, resource, scope_name, view))
                        continue
                    if envelope is None:
                        envelope = (
                            resource.key(),
                            resource_spans.schema_url,
                            scope_spans.scope.SerializeToString(),
                            scope_spans.schema_url,
                        )
                    assert dialect is not None
                    per_span.append(
                        _Work(
                            span.trace_id,
                            HeldSpan(
                                data if data is not None else span.SerializeToString(),
                                envelope,
                                place_of(view),
                                dialect.key,
                                reading,
                                now,
                                isinstance(reading, AgentReading),
                            ),
                        )
                    )
        self.metrics.received.inc(total)
        forward_now = self._hold(decided, now)
        self._forward_now(request, body, decided, forward_now, total, now)

    def _pass_through(self, request: ExportTraceServiceRequest, body: bytes, now: float) -> None:
        """A request in which no dialect's sign appears: forwarded as it came. Only where one of its
        spans belongs to a held trace is where it sits kept, for the assembler."""
        total = 0
        hold = self.hold
        placed = bool(len(hold)) and hold.lock.acquire(timeout=SERVE_MAX_SENDER_WAIT_SECONDS)
        try:
            for resource_spans in request.resource_spans:
                resource: _Resource | None = None
                for scope_spans in resource_spans.scope_spans:
                    spans = scope_spans.spans
                    total += len(spans)
                    if not placed:
                        continue
                    for span in spans:
                        if hold.is_held(span.trace_id):
                            resource = resource or _Resource(resource_spans)
                            place = proto_place_of(span, resource.attributes, scope_spans.scope.name)
                            hold.place(span.trace_id, place, now)
        finally:
            if placed:
                hold.lock.release()
        self.metrics.received.inc(total)
        self.forwarder.put(body, total, now)

    def _hold(self, decided: list[list[list[object]]], now: float) -> list[list[list[bool]]]:
        """Offer each span of agent work to the hold; which spans go out now."""
        late = hold_full = trace_full = busy = 0
        run_arrived = False
        hold = self.hold
        got_lock = hold.lock.acquire(timeout=SERVE_MAX_SENDER_WAIT_SECONDS)
        try:
            out: list[list[list[bool]]] = []
            for per_scope in decided:
                scopes: list[list[bool]] = []
                out.append(scopes)
                for per_span in per_scope:
                    flags: list[bool] = []
                    scopes.append(flags)
                    for item in per_span:
                        if isinstance(item, _Work):
                            if not got_lock:
                                busy += 1
                                flags.append(True)
                                continue
                            refusal = hold.take(item.trace_id, item.held)
                            if refusal is None:
                                run_arrived |= item.held.is_run
                                flags.append(False)
                                continue
                            if refusal is LATE:
                                late += 1
                            elif refusal is HOLD_FULL:
                                hold_full += 1
                            else:
                                trace_full += 1
                            flags.append(True)
                        else:
                            if got_lock:
                                if isinstance(item, _Place):
                                    if hold.is_held(item.trace_id):  # its place, only where needed
                                        hold.place(item.trace_id, item.place(), now)
                                elif isinstance(item, _SourceSummary):
                                    hold.mark_judged_at_source(item.trace_id, now)
                                    run_arrived = True
                            flags.append(True)
            held_traces, held_bytes = len(hold), hold.bytes
        finally:
            if got_lock:
                hold.lock.release()
        if late:
            self.metrics.late.inc(late)
        if hold_full:
            self.metrics.unjudged.labels(UNJUDGED_HOLD_FULL).inc(hold_full)
        if trace_full:
            self.metrics.unjudged.labels(UNJUDGED_TRACE_FULL).inc(trace_full)
        if busy:
            self.metrics.unjudged.labels(UNJUDGED_BUSY).inc(busy)
        self.metrics.held_traces.set(held_traces)
        self.metrics.held_bytes.set(held_bytes)
        if run_arrived:
            self._nudge.set()
        return out

    def _forward_now(
        self,
        request: ExportTraceServiceRequest,
        body: bytes | None,
        decided: list[list[list[object]]],
        flags: list[list[list[bool]]],
        total: int,
        now: float,
    ) -> None:
        count = sum(flag for scopes in flags for per_span in scopes for flag in per_span)
        if count == 0:
            return
        if count == total:
            payload = body if body is not None else request.SerializeToString()
            self.forwarder.put(payload, count, now)
            return
        out = ExportTraceServiceRequest()
        for resource_spans, scopes in zip(request.resource_spans, flags, strict=True):
            if not any(any(per_span) for per_span in scopes):
                continue
            resource_out = out.resource_spans.add()
            resource_out.resource.CopyFrom(resource_spans.resource)
            resource_out.schema_url = resource_spans.schema_url
            for scope_spans, per_span in zip(resource_spans.scope_spans, scopes, strict=True):
                if not any(per_span):
                    continue
                scope_out = resource_out.scope_spans.add()
                scope_out.scope.CopyFrom(scope_spans.scope)
                scope_out.schema_url = scope_spans.schema_url
                scope_out.spans.extend(
                    span for span, flag in zip(scope_spans.spans, per_span, strict=True) if flag
                )
        self.forwarder.put(out.SerializeToString(), count, now)

    def _say_dialect(self, text: str) -> None:
        # A dialect that fails on one span fails on the next like it: the first few reach the log.
        self._dialect_failures += 1
        if self._dialect_failures <= _LOGGED_DIALECT_FAILURES:
            logger.warning("%s", text)

    # ── judging ─────────────────────────────────────────────────────
    def start(self) -> None:
        self.forwarder.start()
        self._thread.start()
        self.ready = True

    def _judge_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                self.judge_due()
            except Exception as error:  # our own bug: the loop must go on, or nothing is forwarded
                logger.error("the judging loop failed: %r", error, exc_info=error)
            with self.hold.lock:
                next_due = self.hold.next_due()
            wait = (
                _IDLE_SECONDS if next_due is None else min(_IDLE_SECONDS, max(0.0, next_due - self._clock()))
            )
            self._nudge.wait(wait)
            self._nudge.clear()

    def judge_due(self) -> int:
        """Judge and forward every trace due now; how many."""
        with self.hold.lock:
            due = self.hold.take_due(self._clock())
            self.metrics.held_traces.set(len(self.hold))
            self.metrics.held_bytes.set(self.hold.bytes)
        for trace in due:
            self.settle(trace)
        return len(due)

    def settle(self, trace: HeldTrace, *, judge: bool = True, reason: str = UNJUDGED_SHUTDOWN) -> None:
        """Forward one trace out of the hold: judged, or (``judge=False``, a failure, a judgment at
        source) as it came, counted under its reason."""
        if trace.judged_at_source:
            judge, reason = False, UNJUDGED_AT_SOURCE
        payload: bytes | None = None
        if judge:
            started = time.perf_counter()
            try:
                runs = self.judge(trace, _Notes(trace.trace_id))
                payload = judged_request(trace, runs).SerializeToString()
            except Exception as error:
                logger.error(
                    "judging a trace failed: %r; its %d spans are forwarded unjudged",
                    error,
                    len(trace.spans),
                    exc_info=error,
                    extra={"trace_id": trace.trace_id.hex()},
                )
                reason = UNJUDGED_JUDGE_FAILED
            else:
                self.metrics.judge_seconds.observe(time.perf_counter() - started)
                self.metrics.judged.inc()
                self._count(trace, runs)
        if payload is None:
            self.metrics.unjudged.labels(reason).inc(len(trace.spans))
            payload = unjudged_request(trace).SerializeToString()
        self.forwarder.put(payload, len(trace.spans), trace.first)

    def _count(self, trace: HeldTrace, runs: Sequence[JudgedRun]) -> None:
        for judged in runs:
            service = judged.run.service
            for found in judged.findings:
                finding = found.finding
                self.metrics.finding(finding.kind, finding.seam, found.tool_name, finding.advisory, service)
            for error in judged.internal_errors:
                logger.error(
                    "the judge shielded an internal error: %s",
                    error,
                    extra={"trace_id": trace.trace_id.hex()},
                )

    # ── stopping ────────────────────────────────────────────────────
    def stop(
        self,
        *,
        bound_seconds: float = SERVE_SHUTDOWN_SECONDS,
        judge_seconds: float = SERVE_SHUTDOWN_JUDGE_SECONDS,
    ) -> None:
        """Judge every held trace whose run has ended, forward the rest unjudged, drain the queue;
        all within ``bound_seconds`` (judging within ``judge_seconds`` of them). The receivers are
        stopped first, by the caller."""
        started = self._clock()
        self.ready = False
        self._stopping.set()
        self._nudge.set()
        if self._thread.is_alive():
            self._thread.join(timeout=judge_seconds)
        with self.hold.lock:
            held = self.hold.take_all()
        judged = unjudged = 0
        for trace in held:
            complete = trace.run_ended and self._clock() - started < judge_seconds
            self.settle(trace, judge=complete, reason=UNJUDGED_SHUTDOWN)
            judged += complete
            unjudged += not complete
        self.metrics.held_traces.set(0)
        self.metrics.held_bytes.set(0)
        dropped = self.forwarder.close(started + bound_seconds)
        logger.info(
            "stopped: %d held traces judged, %d forwarded unjudged, %d spans the target had not taken dropped",
            judged,
            unjudged,
            dropped,
            extra={
                "received": int(self.metrics.value(names.SERVE_SPANS_RECEIVED + "_total")),
                "forwarded": int(self.metrics.value(names.SERVE_SPANS_FORWARDED + "_total")),
            },
        )


class _Notes:
    """What the assembler and the judge say about one trace, to the log, a few lines a trace."""

    __slots__ = ("_said", "_trace_id")

    def __init__(self, trace_id: bytes) -> None:
        self._trace_id = trace_id
        self._said = 0

    def __call__(self, text: str) -> None:
        self._said += 1
        if self._said <= SERVE_MAX_NOTES_PER_TRACE:
            logger.info("%s", clip(text, 1000), extra={"trace_id": self._trace_id.hex()})
