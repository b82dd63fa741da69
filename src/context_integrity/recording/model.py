"""What a recording reads back as: runs, their calls and findings, the ledger, plain data."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from ..ledger import LedgerRow
from ..telemetry.schema import COUNT_FIELDS, FindingFields, is_int

# Kind, seam and tool: the attribute set the findings counter is summarised by.
FindingCountKey = tuple[str, str, str]


@dataclass(slots=True)
class FindingRecord(FindingFields):
    """One ``context_integrity.finding`` event: its attributes (:class:`FindingFields`) and where it sat."""

    span_name: str = ""
    time_unix_nano: int | None = None
    trace_id: str = ""
    span_id: str = ""


@dataclass(slots=True)
class ToolCallRecord:
    """A call span: an ``execute_tool`` span, or another span (a ``chat`` span,
    say) that carried our events. ``operation`` says which."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    operation: str | None
    tool_name: str | None
    call_id: str | None
    tool_type: str | None
    status: str
    status_message: str
    start_time_unix_nano: int | None
    end_time_unix_nano: int | None
    error_type: str | None = None
    # The span-level summary attributes, as recorded (None when absent).
    findings_count: int | None = None
    findings_kinds: list[str] = field(default_factory=list)
    findings: list[FindingRecord] = field(default_factory=list)
    external_grounds: list[dict[str, object]] = field(default_factory=list)
    internal_errors: list[dict[str, object]] = field(default_factory=list)


_COUNTS: Final = operator.itemgetter(*COUNT_FIELDS)


# The ledger's rule, asked once per pattern of counts: the same few patterns recur in every run.
_UNTOUCHED: dict[tuple[object, ...], bool] = {}
# The same, for a whole ledger: its rows' counts -> the indices of the rows never touched.
_UNTOUCHED_ROWS: dict[tuple[tuple[object, ...], ...], tuple[int, ...]] = {}
_MAX_PATTERNS: Final = 1024


def _untouched(counts: tuple[object, ...]) -> bool:
    if not all(is_int(value) for value in counts):
        return False  # unreadable counts are reported as a problem, not judged
    return not LedgerRow("", "", **dict(zip(COUNT_FIELDS, counts, strict=True))).touched()  # type: ignore[arg-type]


def row_untouched(row: Mapping[str, object]) -> bool:
    """Whether a row read back records no encounter at all, by the ledger's own rule."""
    try:
        counts = _COUNTS(row)
        known = _UNTOUCHED.get(counts)
    except (KeyError, TypeError):  # a count missing, or not even hashable: not judged
        return False
    if known is None:
        known = _untouched(counts)
        if len(_UNTOUCHED) < _MAX_PATTERNS:
            _UNTOUCHED[counts] = known
    return known


@dataclass(slots=True)
class RunRecord:
    """One ``invoke_agent`` span with everything recorded under it.

    ``ledger``, ``totals``, ``posture``, ``work_existed`` and ``outcome`` come
    from the run's ``context_integrity.disposition`` summary span; ``ledger`` is
    ``None`` when no summary span was recorded for the run.
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    agent: str
    name: str
    status: str
    status_message: str
    start_time_unix_nano: int | None
    end_time_unix_nano: int | None
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    # Non-tool spans in the run that carried our events (chat spans with findings).
    other_calls: list[ToolCallRecord] = field(default_factory=list)
    findings: list[FindingRecord] = field(default_factory=list)
    internal_errors: list[dict[str, object]] = field(default_factory=list)
    ledger: list[dict[str, object]] | None = None
    totals: dict[str, int] = field(default_factory=dict)
    posture: str | None = None
    work_existed: bool | None = None
    outcome: str | None = None
    # The run's profile (names and counts, JSON text) when profiling was on: what ``suggest`` reads.
    profile: str | None = None
    # A run judged from a trace (``context_integrity.traces``): what reading it had to assume, and
    # each encounter the trace could not feed, with its reason. Empty for a run read from a recording.
    notes: list[str] = field(default_factory=list)
    unreachable: list[str] = field(default_factory=list)

    def never_ran(self) -> list[dict[str, object]]:
        """Ledger rows that read all-zero although the run says work existed."""
        ledger = self.ledger
        if not self.work_existed or not ledger:
            return []
        try:
            pattern = tuple(map(_COUNTS, ledger))
            untouched = _UNTOUCHED_ROWS.get(pattern)
        except (KeyError, TypeError):  # a row that lacks a count, or holds an unhashable one
            return [row for row in ledger if row_untouched(row)]
        if untouched is None:
            untouched = tuple(index for index, row in enumerate(ledger) if row_untouched(row))
            if len(_UNTOUCHED_ROWS) < _MAX_PATTERNS:
                _UNTOUCHED_ROWS[pattern] = untouched
        return [ledger[index] for index in untouched]


@dataclass(slots=True)
class Recording:
    """Everything read from one recording."""

    runs: list[RunRecord] = field(default_factory=list)
    loose_calls: list[ToolCallRecord] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Problems past the first limits.MAX_LISTED_PROBLEMS: counted, not kept.
    unlisted_problems: int = 0
    # Spans the writer could not keep, as the recording's own drop records say, and (some of)
    # the traces they belonged to: the runs of those traces are incomplete.
    dropped_spans: int = 0
    dropped_traces: list[str] = field(default_factory=list)
    # The older part of this recording that rotation moved aside, when there is one.
    rotated: str | None = None
    # Latest value of the findings counter per (kind, seam, tool), summed over
    # every other attribute (advisory, the process that wrote it).
    finding_counts: dict[FindingCountKey, int] = field(default_factory=dict)
    lines: int = 0
    spans: int = 0
    metric_points: int = 0
    log_records: int = 0
    source: str | None = None
