"""The span processor in front of the local recording: nothing lost without saying so.

The SDK's ``BatchSpanProcessor`` drops a span whenever its queue is full, and in a tight
loop that was most of them (68%), a run's summary lost apart from its run, all of it said
only in a debug log. This processor keeps the same shape (a bounded queue, one writer
thread, batches of :data:`~context_integrity.limits.RECORDING_BATCH_SPANS` spans a line)
and changes what happens when the queue is full:

- the span that ends waits for the writer to make room, at most
  :data:`~context_integrity.limits.MAX_RECORDING_WAIT_MILLIS`. A writer that keeps up (a
  local file nearly always does) therefore paces a tight loop instead of losing its spans;
- if the room does not come in time (a disk that does not answer), the span is dropped and
  counted, and until the writer catches up no span waits again: one wait per stall, so the
  host's tool path never waits on the disk for longer than that, however long the stall;
- dropped spans are counted, their traces noted, and the count is written into the
  recording itself as a ``context_integrity.recording.dropped`` log record (so
  ``context-integrity report`` says which runs are incomplete) and said in one log line
  per stall.

``force_flush`` and ``shutdown`` keep their time limits; whatever is still queued at the
deadline is counted as dropped and said the same way.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter

from ...limits import (
    EXIT_FLUSH_MILLIS,
    MAX_DROPPED_TRACES_NAMED,
    MAX_RECORDING_QUEUE_SPANS,
    MAX_RECORDING_WAIT_MILLIS,
    RECORDING_BATCH_SPANS,
    RECORDING_DELAY_MILLIS,
)

logger = logging.getLogger("context_integrity")

DropRecorder = Callable[[int, Sequence[str], "Resource | None"], bool]


class RecordingSpanProcessor(SpanProcessor):
    """Batches ended spans to ``exporter`` on one thread; counts, records and says what it drops."""

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        record_dropped: DropRecorder | None = None,
        where: str = "the recording",
        max_queue: int = MAX_RECORDING_QUEUE_SPANS,
        batch: int = RECORDING_BATCH_SPANS,
        delay_millis: float = RECORDING_DELAY_MILLIS,
        max_wait_millis: float = MAX_RECORDING_WAIT_MILLIS,
    ) -> None:
        self._exporter = exporter
        self._record_dropped = record_dropped
        self._where = where
        self._max_queue = max(max_queue, 1)
        self._batch = max(min(batch, self._max_queue), 1)
        self._delay_s = delay_millis / 1000
        self._max_wait_s = max_wait_millis / 1000
        self._start()
        # A forked child gets a fresh queue and writer (the parent's thread does not exist there).
        ref = weakref.ref(self)

        def restart_in_child() -> None:
            processor = ref()
            if processor is not None:
                processor._start()

        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=restart_in_child)

    def _start(self) -> None:
        self._queue: deque[ReadableSpan] = deque()
        self._cond = threading.Condition()
        self._shedding = False  # a wait timed out: no span waits again until the writer catches up
        self._flushing = 0  # flushes waiting: the writer writes what it has without waiting for a batch
        self._closed = False
        # Counters: spans that ended, that were queued, that the writer took (in queue order).
        self.ended = 0
        self.dropped = 0
        self._queued = 0
        self._taken = 0
        self._written = 0
        # Drops not yet recorded in the file, and (some of) their traces.
        self._unrecorded = 0
        self._unrecorded_traces: list[str] = []
        self._resource: Resource | None = None
        self._worker = threading.Thread(target=self._work, name="context_integrity-recording", daemon=True)
        self._worker.start()

    # -- the host's side ---------------------------------------------------
    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        context = span.context
        if context is None or not context.trace_flags.sampled:
            return
        with self._cond:
            self.ended += 1
            if self._closed:
                self._drop(span)
                return
            if len(self._queue) >= self._max_queue:
                if not self._shedding:
                    deadline = time.monotonic() + self._max_wait_s
                    while len(self._queue) >= self._max_queue and not self._closed:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            self._shedding = True
                            break
                        self._cond.notify_all()
                        self._cond.wait(left)
                if len(self._queue) >= self._max_queue or self._closed:
                    self._drop(span)
                    return
            self._queue.append(span)
            self._queued += 1
            if len(self._queue) >= self._batch:
                self._cond.notify_all()

    def _drop(self, span: ReadableSpan) -> None:
        # Called with the condition held.
        self.dropped += 1
        self._unrecorded += 1
        if self._resource is None:
            self._resource = span.resource
        context = span.context
        if context is not None and len(self._unrecorded_traces) < MAX_DROPPED_TRACES_NAMED:
            trace_id = format(context.trace_id, "032x")
            if trace_id not in self._unrecorded_traces:
                self._unrecorded_traces.append(trace_id)
        self._cond.notify_all()  # the writer records the drop even when it has nothing to write

    # -- the writer ---------------------------------------------------------
    def _work(self) -> None:
        while True:
            with self._cond:
                while not (self._closed or self._unrecorded):
                    if self._queue and (self._flushing or len(self._queue) >= self._batch):
                        break
                    if not self._cond.wait(self._delay_s) and self._queue:
                        break  # the delay passed: write what there is
                if self._closed and not self._queue and not self._unrecorded:
                    return
                items = [self._queue.popleft() for _ in range(min(self._batch, len(self._queue)))]
                self._taken += len(items)
                self._cond.notify_all()  # room: spans waiting for it go on
            if items:
                self._export(items)
            self._record_drops()
            with self._cond:
                self._written += len(items)
                if self._shedding and len(self._queue) <= self._max_queue // 2:
                    self._shedding = False
                self._cond.notify_all()

    def _export(self, items: list[ReadableSpan]) -> None:
        try:
            self._exporter.export(items)
        except Exception:  # the writer thread must live on; the exporter says its own failures
            logger.exception("context_integrity: the recording's exporter failed")

    def _record_drops(self) -> None:
        with self._cond:
            count, traces, resource = self._unrecorded, self._unrecorded_traces, self._resource
            self._unrecorded, self._unrecorded_traces = 0, []
        if not count:
            return
        recorded = False
        if self._record_dropped is not None:
            try:
                recorded = self._record_dropped(count, traces, resource)
            except Exception:
                recorded = False
        shown = ", ".join(traces[:3]) + (", ..." if len(traces) > 3 else "")
        logger.warning(
            "context_integrity: %d span(s) could not be kept in %s (the writer fell behind for longer "
            "than %d ms; traces %s)%s. `context-integrity report` marks the runs they belonged to.",
            count,
            self._where,
            int(self._max_wait_s * 1000),
            shown or "unknown",
            "; the recording says so" if recorded else "; the recording could not be told",
        )

    # -- flush and shutdown ----------------------------------------------------
    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Write everything that ended before this call, within ``timeout_millis``."""
        deadline = time.monotonic() + max(timeout_millis, 0) / 1000
        with self._cond:
            goal = self._queued
            self._flushing += 1
            self._cond.notify_all()
            try:
                while self._written < goal or self._unrecorded:
                    left = deadline - time.monotonic()
                    if left <= 0 or not self._worker.is_alive():
                        return False
                    self._cond.wait(left)
                return True
            finally:
                self._flushing -= 1

    def shutdown(self, timeout_millis: float = EXIT_FLUSH_MILLIS) -> None:
        """Write what is queued, within ``timeout_millis``; what is left then is dropped, counted and said."""
        flushed = self.force_flush(int(timeout_millis))
        with self._cond:
            if self._closed:
                return
            self._closed = True
            left = [] if flushed else list(self._queue)
            self._queue.clear()
            for span in left:
                self._drop(span)
            self._cond.notify_all()
        self._worker.join(timeout=max(timeout_millis, 0) / 1000)
        if self._unrecorded:  # the writer is gone or stuck: say it here
            self._record_drops()
        try:
            self._exporter.shutdown()
        except Exception:
            logger.exception("context_integrity: the recording's exporter failed to shut down")
