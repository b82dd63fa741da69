"""Reading runs from a source: spans in, :class:`~.model.TracedRun` out, each as soon as it is whole.

:func:`read_runs` opens a SOURCE string (:func:`~.sources.open_source`), or takes a
:class:`~.sources.SpanSource` or any iterable of spans, and returns a :class:`TraceRuns`: iterate it
for the runs; afterwards it says what it read and what it could not use.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime

from .assemble import Assembler
from .dialects import DIALECTS, Dialect
from .model import TracedRun
from .problems import Problems
from .sources import SourceItem, SpanSource, TraceComplete, open_source


class TraceRuns:
    """The runs of one source, read as they come.

    Iterating yields each run once its trace is whole; the source is read once, on the first
    iteration. After it, :attr:`problems` holds what could not be used (bounded: the first ones word
    for word, the rest counted), and :attr:`spans`, :attr:`runs` and :attr:`late_spans` count what was
    read. A source that fails raises :class:`~.sources.SourceError`.
    """

    def __init__(
        self,
        source: SpanSource | Iterable[SourceItem],
        *,
        description: str | None = None,
        dialects: Sequence[Dialect] = DIALECTS,
    ) -> None:
        self._source = source
        self._dialects = dialects
        self.description = description or getattr(source, "description", "spans")
        self.problems = Problems()
        self.spans = 0
        self.runs = 0
        self.late_spans = 0

    def __iter__(self) -> Iterator[TracedRun]:
        say = self.problems.say
        assembler = Assembler(say, dialects=self._dialects)
        source = self._source
        items = source.items(say) if isinstance(source, SpanSource) else source
        try:
            for item in items:
                if isinstance(item, TraceComplete):
                    yield from assembler.complete(item.trace_id)
                else:
                    yield from assembler.add(item)
            yield from assembler.finish()
        finally:
            self.spans, self.runs, self.late_spans = assembler.spans, assembler.runs, assembler.late
        if assembler.spans == 0:
            say(f"{self.description}: no spans were read")


def read_runs(
    source: str | os.PathLike[str] | SpanSource | Iterable[SourceItem],
    *,
    trace_id: str | None = None,
    service: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    project: str | None = None,
    headers: Mapping[str, str] | None = None,
    dialects: Sequence[Dialect] = DIALECTS,
) -> TraceRuns:
    """The agent runs in ``source``: a SOURCE string (a file path, ``tempo+http://...``,
    ``jaeger+http://...``, ``phoenix+http://...``: see :mod:`.sources`), a span source, or spans.

    Raises :class:`~.sources.SourceError` at once for a source that cannot be opened or options it
    cannot take; iterating may raise it for a backend that fails part-way.
    """
    if isinstance(source, (str, os.PathLike)):
        opened = open_source(
            source, trace_id=trace_id, service=service, start=start, end=end, project=project, headers=headers
        )
        return TraceRuns(opened, dialects=dialects)
    return TraceRuns(source, dialects=dialects)
