"""Other instrumentations' spans, read into the loop's data model and judged by the same judge.

Read the runs a source holds, judge each under declarations, render them like a recording::

    from context_integrity.judge import ContractBook, Dials
    from context_integrity.traces import judge_runs, read_runs, recording_of

    runs = read_runs("traces.jsonl")  # or "tempo+http://tempo:3200" with trace_id=... / service=...
    judged = list(judge_runs(runs, ContractBook(), Dials(check_column_types="warn")))
    recording = recording_of(judged, source=runs.description, problems=runs.problems)

- :mod:`.sources`: where spans come from (files, Tempo, Jaeger, Phoenix, an OTLP request), as
  :class:`~.spans.Span`; :func:`read_runs` takes a SOURCE string;
- :mod:`.spans`: one span as every source hands it;
- :mod:`.dialects`: one module per instrumentation, and the fixed order they are tried in
  (:data:`~.dialects.DIALECTS`); :mod:`.detect` asks them;
- :mod:`.readings`: what a dialect reads from one span; :mod:`.values` reads attribute values;
- :mod:`.assemble`: spans grouped by trace into runs (:mod:`.model`: :class:`TracedRun` and its steps);
- :mod:`.replay`: a run fed to the same judge the integrations feed (:func:`judge_run`);
- :mod:`.records`: judged runs as recording records, for the text and HTML reports.

Never imports the OpenTelemetry SDK, like :mod:`context_integrity.recording`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import _lazy

if TYPE_CHECKING:
    from .dialects import DIALECTS, Dialect
    from .model import AnswerStep, ModelStep, Step, ToolStep, TracedRun
    from .read import TraceRuns, read_runs
    from .records import recording_of, run_record
    from .replay import JudgedFinding, JudgedRun, Unreachable, judge_run, judge_runs
    from .sources import SourceError, SpanSource, TraceComplete, open_source, spans_of_otlp_request
    from .spans import Span, SpanEvent

# name -> the module that owns it
_HOMES: dict[str, str] = {
    "DIALECTS": "dialects",
    "Dialect": "dialects",
    "AnswerStep": "model",
    "ModelStep": "model",
    "Step": "model",
    "ToolStep": "model",
    "TracedRun": "model",
    "TraceRuns": "read",
    "read_runs": "read",
    "recording_of": "records",
    "run_record": "records",
    "JudgedFinding": "replay",
    "JudgedRun": "replay",
    "Unreachable": "replay",
    "judge_run": "replay",
    "judge_runs": "replay",
    "SourceError": "sources",
    "SpanSource": "sources",
    "TraceComplete": "sources",
    "open_source": "sources",
    "spans_of_otlp_request": "sources",
    "Span": "spans",
    "SpanEvent": "spans",
}

__all__ = [
    "DIALECTS",
    "AnswerStep",
    "Dialect",
    "JudgedFinding",
    "JudgedRun",
    "ModelStep",
    "SourceError",
    "Span",
    "SpanEvent",
    "SpanSource",
    "Step",
    "ToolStep",
    "TraceComplete",
    "TraceRuns",
    "TracedRun",
    "Unreachable",
    "judge_run",
    "judge_runs",
    "open_source",
    "read_runs",
    "recording_of",
    "run_record",
    "spans_of_otlp_request",
]


def __getattr__(name: str) -> Any:
    return _lazy.load(__name__, _HOMES, name, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
