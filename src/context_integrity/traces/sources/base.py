"""What every trace source is: spans, streamed, with the traces it knows to be whole marked.

A source yields :class:`~..spans.Span` one at a time and never holds a whole file. A source that
fetches whole traces (Tempo, Jaeger, Phoenix by trace, a trace document) yields a
:class:`TraceComplete` after each, so its runs are judged at once; a source of spans in the order
they ended (a recording, a Collector export) yields none, and the assembler waits for each trace's
root span. What a source skips it says through the ``say`` it is handed; a source that cannot be read
at all raises :class:`SourceError`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..spans import Span

Say = Callable[[str], None]


class SourceError(Exception):
    """A trace source that cannot be read: the message is one sentence saying which and what to do.

    Raised when the source is opened (a missing file, an unknown scheme, a backend that does not
    answer) or while it is read (a backend that fails part-way). ``context-integrity judge`` exits 2
    with it.
    """


@dataclass(frozen=True, slots=True)
class TraceComplete:
    """Every span of ``trace_id`` has been yielded: its runs can be judged now."""

    trace_id: str


SourceItem = Span | TraceComplete


class SpanSource(ABC):
    """Spans from one place. ``description`` names it in reports ("recording.jsonl",
    "Tempo at http://tempo:3200, trace 4bf9...")."""

    description: str

    @abstractmethod
    def items(self, say: Say) -> Iterator[SourceItem]:
        """The spans, in whatever order the source holds them, with a :class:`TraceComplete` after
        each trace the source knows is whole. Raises :class:`SourceError` when the source fails."""
