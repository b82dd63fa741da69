"""Flush and shutdown that keep their time limit, whatever the exporter does.

The SDK's batch processors wait on their exporter: a collector that is down, or an exporter that
hangs, makes ``force_flush(timeout_millis=2000)`` block for tens of seconds and process exit for
longer. Here the SDK's work runs on a daemon thread and we wait for it only as long as we were
given; what is still unsent at the deadline is counted (by the tally each exporter we built is
wrapped in) and said in one log line, never silently lost.

A processor we add to a provider the application owns (the run summary, the Phoenix annotations)
goes on it as a :class:`GuestSpanProcessor`: the application's provider flushes and shuts it down
(at its own exit, for up to the SDK's 30 s) only within ``limits.EXIT_FLUSH_MILLIS``, and
``ci.shutdown()`` makes it inert, so a later ``setup()`` on the same provider starts clean.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ...limits import EXIT_FLUSH_MILLIS

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
            except Exception as error:  # the SDK's MeterProvider raises when a reader timed out
                logger.warning(
                    "context_integrity: %s.force_flush failed: %s",
                    type(provider).__name__,
                    " ".join(str(error).split()) or type(error).__name__,
                )
                ok = False
        outcome.append(ok)

    finished = within(work, timeout_millis, "flush")
    return finished and all(outcome)


class GuestSpanProcessor(SpanProcessor):
    """A processor of ours on a provider the application owns: bounded, and inert once we leave.

    The application's provider calls ``force_flush`` and ``shutdown`` on every processor it holds
    (its own exit joins each for up to 30 s): ours answers within ``limits.EXIT_FLUSH_MILLIS``
    whatever its exporter does. :meth:`leave` (``ci.shutdown()``) shuts ours down, within a bound,
    and from then on it passes nothing on; the provider keeps only this empty shell.
    """

    def __init__(self, inner: SpanProcessor) -> None:
        self.inner = inner
        self.left = False

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if not self.left:
            self.inner.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if not self.left:
            self.inner.on_end(span)

    def leave(self, timeout_millis: float = EXIT_FLUSH_MILLIS) -> bool:
        """Pass nothing more on, at once, and shut ours down within ``timeout_millis`` (and
        EXIT_FLUSH_MILLIS); ``False`` when it did not finish in time (its exporter is not
        answering: what it held is lost)."""
        if self.left:
            return True
        self.left = True
        return within(self.inner.shutdown, min(timeout_millis, EXIT_FLUSH_MILLIS), "shutdown")

    def detach(self) -> SpanProcessor | None:
        """Pass nothing more on, at once; the processor to shut down (``None`` when already left)."""
        if self.left:
            return None
        self.left = True
        return self.inner

    def shutdown(self) -> None:
        self.leave()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        if self.left:
            return True
        bound = min(timeout_millis, EXIT_FLUSH_MILLIS)
        done: list[bool] = []
        finished = within(lambda: done.append(self.inner.force_flush(bound)), bound, "flush")
        return finished and all(done)


def unsent(ended: int, tallies: Sequence[TallyingSpanExporter]) -> int:
    """Spans ended in this process that an exporter we built has neither sent nor failed to send."""
    if not tallies:
        return 0
    return max(max(ended - t.sent - t.failed, 0) for t in tallies)


def say_unsent(
    what: str,
    timeout_millis: float,
    ended: int,
    tallies: Sequence[TallyingSpanExporter],
    annotations: int | None = None,
) -> None:
    """The one log line for a flush or shutdown that ran out of time. ``annotations`` counts the
    findings never posted to Phoenix, when annotations were on."""
    waiting = unsent(ended, tallies)
    failed = sum(t.failed for t in tallies)
    counted = (
        f"{waiting} span(s) ended here were not sent (still queued, or dropped when the queue was full) "
        f"and {failed} failed to send; "
        if tallies
        else ""
    )
    if annotations is not None:
        counted += f"{annotations} finding(s) were not posted to Phoenix as annotations; "
    logger.warning(
        "context_integrity: %s did not finish within %d ms: %sthe exporter is not answering, and "
        "what it still holds is lost if the process exits now.",
        what,
        int(timeout_millis),
        counted,
    )
