"""What ``setup()`` configured: :class:`Instrumentation`, and the process-wide book of declared tools.

Every run and call reads its tracer, meter, event logger, dials and span processor from here; the
providers it owns (or only flushes, when they are the application's) are flushed and shut down
through it, each within its bound.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from opentelemetry.metrics import Counter, Meter
from opentelemetry.trace import Tracer

from ..judge import ContractBook, Dials
from ..limits import EXIT_FLUSH_MILLIS
from .export.bounded import TallyingSpanExporter, flush_all, say_unsent, within
from .export.options import ExporterOptions

if TYPE_CHECKING:
    from .run.processor import DispositionSpanProcessor

logger = logging.getLogger("context_integrity")


@functools.cache
def instrumentation_version() -> str:
    """The installed package's version, read on first use: importlib.metadata costs more to import
    than the rest of ``import context_integrity`` put together."""
    try:
        from importlib.metadata import version

        return version("context-integrity")
    except Exception:  # running from a source tree
        return "0.0.0+source"


# The process-wide book of declared tools: decorators run at import time,
# usually before setup(), so the book cannot belong to one setup call.
CONTRACTS: Final = ContractBook()


@dataclass
class Instrumentation:
    """What ``setup()`` configured: where telemetry goes, and the dials in force."""

    tracer: Tracer
    meter: Meter
    findings_counter: Counter
    dials: Dials
    destination: str
    processor: DispositionSpanProcessor | None = None
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
        """Flush and shut down the providers this library created (not the application's), in bound."""
        deadline = time.monotonic() + timeout_millis / 1000
        flushed = flush_all(self._flushable, timeout_millis)

        def close() -> None:
            for provider in self._owned:
                try:
                    provider.shutdown()
                except Exception:
                    logger.exception("context_integrity: shutdown failed for %r", provider)

        left = max((deadline - time.monotonic()) * 1000, 0)
        if not (within(close, left, "shutdown") and flushed):
            self._say_unsent("shutdown", timeout_millis)

    def _say_unsent(self, what: str, timeout_millis: float) -> None:
        ended = self.processor.ended if self.processor is not None else 0
        say_unsent(what, timeout_millis, ended, self._tallies)
