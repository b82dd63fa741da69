"""Flush and shutdown that keep their time limit, whatever the exporter does.

The SDK's batch processors wait on their exporter: a collector that is down, or an exporter that
hangs, makes ``force_flush(timeout_millis=2000)`` block for tens of seconds and process exit for
longer. Here the SDK's work runs on a daemon thread and we wait for it only as long as we were
given; what is still unsent at the deadline is counted (by the tally each exporter we built is
wrapped in) and said in one log line, never silently lost.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

logger = logging.getLogger("context_integrity")


class Tally:
    """What an exporter we built sent and failed to send, counted across its worker threads."""

    def __init__(self) -> None:
        self.sent = 0
        self.failed = 0
        self._lock = threading.Lock()

    def count(self, sent: bool, items: int) -> None:
        with self._lock:
            if sent:
                self.sent += items
            else:
                self.failed += items


class TallyingSpanExporter(SpanExporter, Tally):
    """An exporter we built, counting what it was handed and what it sent."""

    def __init__(self, inner: SpanExporter) -> None:
        Tally.__init__(self)
        self.inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception:
            result = SpanExportResult.FAILURE
        self.count(result is SpanExportResult.SUCCESS, len(spans))
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        flush = getattr(self.inner, "force_flush", None)
        return bool(flush(timeout_millis)) if callable(flush) else True


def within(work: Callable[[], Any], timeout_millis: float, name: str) -> bool:
    """Run ``work`` on a daemon thread; ``True`` when it finished within the time given."""
    thread = threading.Thread(target=work, name=f"context_integrity-{name}", daemon=True)
    thread.start()
    thread.join(max(timeout_millis, 0) / 1000)
    return not thread.is_alive()


def flush_all(providers: Sequence[Any], timeout_millis: float) -> bool:
    """``force_flush`` every provider, all of them within ``timeout_millis`` together. Never raises."""
    outcome: list[bool] = []
    deadline = time.monotonic() + max(timeout_millis, 0) / 1000

    def work() -> None:
        ok = True
        for provider in providers:
            left = max(int((deadline - time.monotonic()) * 1000), 0)
            try:
                ok = provider.force_flush(left) is not False and ok
            except Exception:
                logger.exception("context_integrity: force_flush failed for %r", provider)
                ok = False
        outcome.append(ok)

    finished = within(work, timeout_millis, "flush")
    return finished and all(outcome)


def unsent(ended: int, tallies: Sequence[TallyingSpanExporter]) -> int:
    """Spans ended in this process that an exporter we built has neither sent nor failed to send."""
    if not tallies:
        return 0
    return max(max(ended - t.sent - t.failed, 0) for t in tallies)


def say_unsent(what: str, timeout_millis: float, ended: int, tallies: Sequence[TallyingSpanExporter]) -> None:
    """The one log line for a flush or shutdown that ran out of time."""
    waiting = unsent(ended, tallies)
    failed = sum(t.failed for t in tallies)
    counted = (
        f"{waiting} span(s) ended here were not sent (still queued, or dropped when the queue was full) "
        f"and {failed} failed to send; "
        if tallies
        else ""
    )
    logger.warning(
        "context_integrity: %s did not finish within %d ms: %sthe exporter is not answering, and "
        "what it still holds is lost if the process exits now.",
        what,
        int(timeout_millis),
        counted,
    )
