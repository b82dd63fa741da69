"""The hold: the spans of agent work, by trace, until their trace is judged.

Only spans a dialect reads as agent work are held (their findings go on them); every other span is
forwarded the moment it arrives, and where its trace is held, where it sits (ids and parent, no
attributes) is kept so the assembler can follow parent links through it. A trace is *due*:

- when its agent run span has arrived (spans are exported as they end) and no span of it has arrived
  for the quiet period (:data:`~context_integrity.limits.SERVE_QUIET_SECONDS`), or
- at the maximum wait from its first held span
  (:data:`~context_integrity.limits.SERVE_MAX_WAIT_SECONDS`), run span or not.

Everything is bounded: the traces held, their serialized bytes together, the spans of one trace, the
judged traces remembered for telling a late span. A span past a bound is not taken (the caller
forwards it unjudged and counts it); nothing here ever waits for room.

The hold is bookkeeping only: a caller takes :attr:`Hold.lock` around :meth:`Hold.take` and the
like, and never judges or forwards while holding it.
"""

from __future__ import annotations

import heapq
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final, Literal

from ..limits import (
    SERVE_MAX_HELD_BYTES,
    SERVE_MAX_HELD_TRACES,
    SERVE_MAX_SPANS_PER_TRACE,
    SERVE_MAX_WAIT_SECONDS,
    SERVE_QUIET_SECONDS,
    SERVE_REMEMBERED_TRACES,
)
from ..traces.readings import Reading
from ..traces.spans import Span

# An envelope of held spans: their resource and scope, serialized, each with its schema URL. Spans
# of one trace from one resource and scope share an envelope whatever request brought them.
Envelope = tuple[bytes, str, bytes, str]


@dataclass(frozen=True, slots=True)
class HeldSpan:
    """One span of agent work: its bytes as received, its envelope, where it sits, what was read."""

    data: bytes
    envelope: Envelope
    place: Span
    dialect: str
    reading: Reading
    received: float
    # Whether it is an agent run span: its arrival makes the trace's end near.
    is_run: bool


@dataclass(frozen=True, slots=True)
class HoldLimits:
    """The hold's bounds and clocks (the defaults are :mod:`~context_integrity.limits`')."""

    quiet_seconds: float = SERVE_QUIET_SECONDS
    max_wait_seconds: float = SERVE_MAX_WAIT_SECONDS
    max_traces: int = SERVE_MAX_HELD_TRACES
    max_bytes: int = SERVE_MAX_HELD_BYTES
    max_spans_per_trace: int = SERVE_MAX_SPANS_PER_TRACE
    remembered: int = SERVE_REMEMBERED_TRACES


DEFAULT_LIMITS: Final = HoldLimits()


@dataclass(slots=True)
class HeldTrace:
    """A trace with agent work, while its spans arrive."""

    trace_id: bytes
    first: float
    last: float
    spans: list[HeldSpan] = field(default_factory=list)
    # Where the spans no dialect reads sit (already forwarded), for the assembler's parent links.
    places: list[Span] = field(default_factory=list)
    bytes: int = 0
    run_ended: bool = False
    # The library judged this trace in process already (its summary span is in it).
    judged_at_source: bool = False

    def due(self, limits: HoldLimits) -> float:
        """When the trace is to be judged, on the hold's clock."""
        deadline = self.first + limits.max_wait_seconds
        if self.run_ended:
            deadline = min(deadline, self.last + limits.quiet_seconds)
        return deadline


Refusal = Literal["judged", "hold full", "trace full"]
LATE: Final[Refusal] = "judged"
HOLD_FULL: Final[Refusal] = "hold full"
TRACE_FULL: Final[Refusal] = "trace full"


class Hold:
    """The traces held, by id, with their due times. Take :attr:`lock` around every call."""

    def __init__(self, limits: HoldLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self.lock = threading.Lock()
        self._traces: dict[bytes, HeldTrace] = {}
        self._judged: OrderedDict[bytes, None] = OrderedDict()
        self._due: list[tuple[float, bytes]] = []
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._traces)

    def is_judged(self, trace_id: bytes) -> bool:
        """Whether ``trace_id`` was judged (or forwarded unjudged) and forgotten: its spans are late."""
        return trace_id in self._judged

    def is_held(self, trace_id: bytes) -> bool:
        return trace_id in self._traces

    def take(self, trace_id: bytes, span: HeldSpan) -> Refusal | None:
        """Hold ``span`` with its trace; ``None`` when held, else why it was not."""
        if trace_id in self._judged:
            return LATE
        size = len(span.data)
        trace = self._traces.get(trace_id)
        if trace is None:
            limits = self.limits
            if len(self._traces) >= limits.max_traces or self.bytes + size > limits.max_bytes:
                return HOLD_FULL
            trace = self._traces[trace_id] = HeldTrace(trace_id, span.received, span.received)
            heapq.heappush(self._due, (trace.due(limits), trace_id))
        elif len(trace.spans) >= self.limits.max_spans_per_trace or self.bytes + size > self.limits.max_bytes:
            return TRACE_FULL
        trace.spans.append(span)
        trace.bytes += size
        self.bytes += size
        self._arrived(trace, span.received, run=span.is_run)
        return None

    def place(self, trace_id: bytes, place: Span, received: float) -> bool:
        """Keep where a span no dialect reads sits, if its trace is held; whether it is."""
        trace = self._traces.get(trace_id)
        if trace is None or len(trace.places) >= self.limits.max_spans_per_trace:
            return False
        trace.places.append(place)
        self._arrived(trace, received, run=False)
        return True

    def mark_judged_at_source(self, trace_id: bytes, received: float) -> None:
        """The library's own summary span of ``trace_id`` arrived: the run was judged in process."""
        trace = self._traces.get(trace_id)
        if trace is not None:
            trace.judged_at_source = True
            self._arrived(trace, received, run=True)

    def _arrived(self, trace: HeldTrace, now: float, *, run: bool) -> None:
        if now > trace.last:
            trace.last = now
        if run and not trace.run_ended:
            # The due time comes nearer once: an entry for it. Later arrivals only move it later,
            # which take_due finds when the entry comes up (at most two entries per trace).
            trace.run_ended = True
            heapq.heappush(self._due, (trace.due(self.limits), trace.trace_id))

    def next_due(self) -> float | None:
        """The earliest a trace may be due (an entry may be early: :meth:`take_due` puts it back)."""
        return self._due[0][0] if self._due else None

    def take_due(self, now: float) -> list[HeldTrace]:
        """The traces due at ``now``, out of the hold and remembered as judged."""
        out: list[HeldTrace] = []
        while self._due and self._due[0][0] <= now:
            _, trace_id = heapq.heappop(self._due)
            trace = self._traces.get(trace_id)
            if trace is None:
                continue  # released already
            due = trace.due(self.limits)
            if due <= now:
                out.append(self._release(trace))
            else:  # a span arrived since: due later
                heapq.heappush(self._due, (due, trace_id))
        return out

    def take_all(self) -> list[HeldTrace]:
        """Every trace held, oldest first, out of the hold (shutdown)."""
        out = [self._release(trace) for trace in list(self._traces.values())]
        self._due.clear()
        return out

    def _release(self, trace: HeldTrace) -> HeldTrace:
        del self._traces[trace.trace_id]
        self.bytes -= trace.bytes
        judged = self._judged
        judged[trace.trace_id] = None
        while len(judged) > self.limits.remembered:
            judged.popitem(last=False)
        if not self._traces:
            self._due.clear()
        return trace

    def traces(self) -> Iterator[HeldTrace]:
        return iter(list(self._traces.values()))
