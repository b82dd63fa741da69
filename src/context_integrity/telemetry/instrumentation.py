"""What ``setup()`` configured: :class:`Instrumentation`, and the process-wide book of declared tools.

Every run and call reads its tracer, meter, event logger, dials and span processor from here; the
providers it owns (or only flushes, when they are the application's) are flushed and shut down
through it, each within its bound.
"""

from __future__ import annotations

import contextlib
import logging
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from opentelemetry.metrics import Counter, Meter
from opentelemetry.trace import Tracer

from ..judge import ContractBook, Dials
from ..limits import EXIT_FLUSH_MILLIS
from .export.bounded import GuestSpanProcessor, TallyingSpanExporter, flush_all, say_unsent, within
from .export.options import ExporterOptions
from .schema.common import library_version

if TYPE_CHECKING:
    from .export.phoenix import PhoenixAnnotationProcessor
    from .run.processor import DispositionSpanProcessor

logger = logging.getLogger("context_integrity")


# The library's version, as the instrumentation scope and each finding's provenance give it.
instrumentation_version = library_version


# The process-wide book of declared tools: decorators run at import time,
# usually before setup(), so the book cannot belong to one setup call.
CONTRACTS: Final = ContractBook()

# The providers an Instrumentation made and shut down: a later setup() never joins one again (a
# global provider, once installed, cannot be replaced, and a shut-down one exports nothing).
_RETIRED: Final[weakref.WeakSet[Any]] = weakref.WeakSet()


def retired(provider: object) -> bool:
    """Whether ``provider`` is one this library made and has shut down."""
    try:
        return provider in _RETIRED
    except TypeError:  # not weakly referable: not one of ours
        return False


@dataclass
class Instrumentation:
    """What ``setup()`` configured: where telemetry goes, and the dials in force."""

    tracer: Tracer
    meter: Meter
    findings_counter: Counter
    dials: Dials
    destination: str
    processor: DispositionSpanProcessor | None = None
    phoenix: PhoenixAnnotationProcessor | None = None
    recording_path: Path | None = None
    # Whether the traces themselves go to the local recording (not only metrics or log events).
    traces_recorded: bool = False
    # The resource of the SDK TracerProvider our span processor sits on: a host span carrying another
    # was made by a provider setup() never joined (see telemetry.run.lifecycle).
    trace_resource: Any | None = None
    capture_content: bool = False
    event_logger: Any | None = None
    # Which records the event logger writes per finding: our own ``context_integrity.finding``
    # (log_events) and the GenAI conventions' ``gen_ai.evaluation.result`` (evaluation_events).
    log_events: bool = False
    evaluation_events: bool | Literal["all"] = False
    redact: Callable[[str], str] | None = None
    options: ExporterOptions = field(default_factory=ExporterOptions)
    _owned: list[Any] = field(default_factory=list, repr=False)
    _flushable: list[Any] = field(default_factory=list, repr=False)
    _tallies: list[TallyingSpanExporter] = field(default_factory=list, repr=False)
    # The processors we added to a provider the application owns (see bounded.GuestSpanProcessor).
    _guests: list[GuestSpanProcessor] = field(default_factory=list, repr=False)

    @property
    def contracts(self) -> ContractBook:
        return CONTRACTS

    def force_flush(self, timeout_millis: int = 10_000) -> bool:
        """Push everything buffered to its exporter now, within ``timeout_millis``. Never raises.

        ``False`` when something could not be sent in time; how much is said in one log line.
        """
        if flush_all(self._flushable, timeout_millis):
            return True
        self._say_unsent("flush", timeout_millis)
        return False

    def shutdown(self, timeout_millis: int = EXIT_FLUSH_MILLIS) -> None:
        """Flush and shut down the providers this library created (not the application's), and the
        processors it added to the application's (left inert on it), all within ``timeout_millis``."""
        deadline = time.monotonic() + timeout_millis / 1000
        flushed = flush_all(self._flushable, timeout_millis)
        # Inert at once, in this thread: the application's provider (whose own exit shuts down every
        # processor it holds) finds ours with nothing left to do, whatever our exporters do.
        detached = [inner for guest in self._guests if (inner := guest.detach()) is not None]

        def close() -> None:
            for inner in detached:
                try:
                    inner.shutdown()
                except Exception as error:
                    logger.warning("context_integrity: %s.shutdown failed: %s", type(inner).__name__, error)
            for provider in self._owned:
                with contextlib.suppress(TypeError):  # retired first: shutting down may run out of time
                    _RETIRED.add(provider)
                try:
                    provider.shutdown()
                except Exception as error:
                    logger.warning(
                        "context_integrity: %s.shutdown failed: %s", type(provider).__name__, error
                    )

        left = max((deadline - time.monotonic()) * 1000, 0)
        if not (within(close, left, "shutdown") and flushed):
            self._say_unsent("shutdown", timeout_millis)

    def _say_unsent(self, what: str, timeout_millis: float) -> None:
        ended = self.processor.ended if self.processor is not None else 0
        annotations = self.phoenix.unposted() if self.phoenix is not None else None
        say_unsent(what, timeout_millis, ended, self._tallies, annotations)
