"""Judging a held trace: the same assembler, replay and checks as ``context-integrity judge``.

Each span of agent work was read by its dialect once, when it arrived (:mod:`.stage`); judging hands
those readings to the assembler (:func:`~context_integrity.traces.assemble.assemble`) through
:class:`Recalled` dialects, which answer for each span with what was read then, so no span is read
twice. Every run the assembler finds is replayed into the judge (:func:`~context_integrity.traces.
replay.judge_run`) under the stage's contracts and dials.

A judge is any :data:`JudgeTrace`; tests inject stand-ins (one that fails, one that is slow).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..judge.book import ContractBook
from ..judge.dials import Dials
from ..traces.assemble import assemble
from ..traces.readings import Reading
from ..traces.replay import JudgedRun, judge_run
from ..traces.spans import Span
from .hold import HeldTrace

Say = Callable[[str], None]
# What judges a trace: its held spans and places in, its judged runs out. It may raise: the stage
# then forwards the trace unchanged and counts it.
JudgeTrace = Callable[[HeldTrace, Say], Sequence[JudgedRun]]


class Recalled:
    """A dialect that answers for the spans one dialect read when they arrived, with that reading."""

    def __init__(self, key: str, readings: Mapping[str, tuple[str, Reading]]) -> None:
        self.key = key
        self._readings = readings

    def claims(self, span: Span) -> bool:
        found = self._readings.get(span.span_id)
        return found is not None and found[0] == self.key

    def read(self, span: Span) -> Reading | None:
        return self._readings[span.span_id][1]


@dataclass(frozen=True, slots=True)
class TraceJudge:
    """The real judge: the registry's checks under ``contracts`` and ``dials``."""

    contracts: ContractBook
    dials: Dials

    def __call__(self, trace: HeldTrace, say: Say) -> list[JudgedRun]:
        readings = {held.place.span_id: (held.dialect, held.reading) for held in trace.spans}
        keys = dict.fromkeys(dialect for dialect, _ in readings.values())
        dialects = tuple(Recalled(key, readings) for key in keys)
        # The assembler hands a trace's runs out when its root span arrives: the roots go last, so
        # every other span of the trace is in by then.
        spans = [held.place for held in trace.spans] + trace.places
        spans.sort(key=lambda span: span.parent_span_id is None)
        runs = assemble(spans, say, dialects=dialects)
        return [judge_run(run, self.contracts, self.dials) for run in runs]
