"""``find_context_errors``: the findings and ledgers a trace recorded, read back for a person or a model.

It never re-runs or re-judges anything: it reads the ``context_integrity.finding`` events and the
``context_integrity.disposition`` ledgers that were recorded, from our local recording, an OTLP-JSON
export (the collector's ``file`` exporter writes the same lines), or the JSON the Jaeger and Tempo
query APIs return for a trace (:mod:`..recording.foreign`).

Its answers keep to these rules, because a reader (often a model) will take silence for health:

- a kind no check can file is refused as UNANSWERABLE, naming the kinds that can be filed, before
  any evidence is read (unless the trace does carry findings of it, which are then listed);
- a trace with no integrity data says "no evidence", never "no errors";
- a headline with nothing filed says how much was checked: nothing, only some checks (named), or
  every registered check;
- a registered row that filed nothing in a run that did work is flagged as never having run;
- advisories are shown and counted apart from defects;
- a ledger that counts more failing encounters than there are distinct findings says why.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from ..findings import KINDS
from ..judge.registry import REGISTRY
from ..limits import FIND_DEFAULT_LIMIT, FIND_MAX_LEDGERS, FIND_MAX_LIMIT, FIND_MESSAGE_CHARS
from ..recording import Recording
from ..recording.foreign import read_trace
from ..recording.model import FindingRecord, RunRecord, ToolCallRecord, row_untouched
from ..text import clip, plural, visible, visible_lines
from .arming import how_to_arm, looks_unarmed

TOOL_NAME: Final = "find_context_errors"
_PREFIX: Final = f"{TOOL_NAME}:"
_MAX_SUBJECTS: Final = 6
_MAX_WITNESSES: Final = 6
_MAX_REASONS: Final = 6
_MAX_SILENT_NAMED: Final = 4
_BOUND: Final = (
    "Green means no REGISTERED check was violated; it does not mean no context error exists. A check "
    "that is not armed, not built, or unreachable looked at nothing"
)


def filable_kinds() -> tuple[str, ...]:
    """The kinds some registered, built check can file: the only kinds worth asking about."""
    return tuple(REGISTRY.filable_kinds())


def unfilable_kinds() -> tuple[str, ...]:
    filable = set(filable_kinds())
    return tuple(kind for kind in KINDS if kind not in filable)


# ── Reading a source ────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class Evidence:
    """What was read, from where, in which shape."""

    recording: Recording
    source: str
    shape: str


def _no_evidence(path: Path, error: OSError) -> str:
    """The sentence for a source that could not be opened."""
    if isinstance(error, FileNotFoundError):
        return (
            f'{_PREFIX} ⚠ NO FINDING EVIDENCE: there is no file at {path}. That is "no evidence", NOT '
            '"no context errors". ' + _how_to_capture()
        )
    detail = error.strerror if isinstance(error.strerror, str) and error.strerror else str(error)
    return f"{_PREFIX} ⚠ NO FINDING EVIDENCE: {path} could not be read ({clip(detail, 300)})."


def _stream(
    source: str | os.PathLike[str] | Recording,
) -> tuple[Iterable[RunRecord], Recording, str, str] | str:
    """The runs of ``source`` as they are read, where the rest of what it said will be once they
    are, its name and its shape; or the sentence saying why there is no evidence to read."""
    if isinstance(source, Recording):
        return source.runs, source, source.source or "the recording given", "recording"
    path = Path(source)
    try:
        shape, stream = read_trace(path)
    except OSError as error:
        return _no_evidence(path, error)
    return stream, stream.rest, str(path), shape


def read_evidence(source: str | os.PathLike[str] | Recording) -> Evidence | str:
    """The source read back whole, or the sentence saying why there is no evidence to read.

    :func:`find_context_errors` reads as it goes instead, holding only the runs in flight.
    """
    opened = _stream(source)
    if isinstance(opened, str):
        return opened
    runs, rest, name, shape = opened
    try:
        read = list(runs)
    except OSError as error:
        return _no_evidence(Path(name), error)
    if rest.runs is not read and not rest.runs:
        rest.runs = read
    return Evidence(rest, name, shape)


def _how_to_capture() -> str:
    return (
        "To capture some: call ci.setup() before the agent runs (with no OTLP endpoint it records "
        "locally; `context-integrity report` reads that), or export the trace from your backend "
        "(the collector's file exporter, Jaeger's or Tempo's /api/traces/<id>)."
    )


# ── The answer ──────────────────────────────────────────────────────────


def find_context_errors(
    source: str | os.PathLike[str] | Recording, *, kind: str | None = None, limit: int | None = None
) -> str:
    """Read the findings and ledgers back from ``source`` and say what they do and do not show.

    ``kind`` narrows the findings listed to one defect class; ``limit`` (default
    :data:`~context_integrity.limits.FIND_DEFAULT_LIMIT`, at most
    :data:`~context_integrity.limits.FIND_MAX_LIMIT`) caps how many are listed. Never raises on
    what it reads: an unreadable source is an answer too. The source is read as it goes: memory
    follows the runs in flight, not the size of the trace.

    Every line of the answer passes :func:`~context_integrity.text.visible`: a control character
    a recorded string holds is written as its escape, never handed to a terminal or a model raw.
    """
    try:
        lines = _answer(source, kind, _clamp(limit))
    except Exception as error:  # the last net: an answer, never an exception (the fuzz keeps it unused)
        lines = [_could_not_read(error)]
    return "\n".join(visible_lines(lines))


def _could_not_read(error: Exception) -> str:
    return f"{_PREFIX} could not read the trace ({type(error).__name__}: {clip(str(error), 200)})."


def _answer(source: str | os.PathLike[str] | Recording, kind: str | None, shown_limit: int) -> list[str]:
    """The answer's lines (a one-sentence answer is one line)."""
    opened = _stream(source)
    if isinstance(opened, str):
        refusal = _refuse_kind(kind, ())
        return [refusal if refusal is not None else opened]
    runs, rest, name, shape = opened
    gathered = _Gathered(kind, shown_limit)
    try:
        for run in runs:
            gathered.run(run)
    except OSError as error:  # the file went away, or a disk failed, part-way
        return [_no_evidence(Path(name), error)]
    gathered.loose(rest.loose_calls)
    refusal = _refuse_kind(kind, gathered.kinds)
    if refusal is not None:
        return [refusal]
    if rest.spans == 0:
        problems = f" ({rest.problems[0]})" if rest.problems else ""
        return [
            f"{_PREFIX} ⚠ NO FINDING EVIDENCE: {name} holds no spans{problems}. That is "
            '"no evidence", NOT "no context errors". ' + _how_to_capture()
        ]
    if not gathered.every and not gathered.ledgers:
        return [
            f"{_PREFIX} ⚠ {name} carries no Context Integrity events: "
            f"{plural(rest.spans, 'span')} read ({shape}), neither a finding nor a "
            'disposition ledger among them. Read it as "no evidence": the agent was not instrumented '
            "with context-integrity, or its events were dropped on the way (a collector filter, "
            "sampling). " + _how_to_capture()
        ]
    return _Answer(gathered).lines()


def _clamp(limit: int | None) -> int:
    if limit is None or isinstance(limit, bool) or not isinstance(limit, int):
        return FIND_DEFAULT_LIMIT
    return max(1, min(limit, FIND_MAX_LIMIT))


def _refuse_kind(kind: str | None, recorded: Iterable[str]) -> str | None:
    """The refusal for a kind nothing can answer about, or ``None`` (answerable, or recorded anyway)."""
    if kind is None or kind in filable_kinds() or kind in recorded:
        return None
    can = ", ".join(filable_kinds())
    if kind not in KINDS:
        return (
            f"{_PREFIX} {clip(str(kind), 80)!r} is not a defect class this library knows. Classes this "
            f"build can file: {can}. Call again with one of those, or with no 'kind' at all."
        )
    return (
        f"{_PREFIX} ⚠ UNANSWERABLE: {kind!r} is a defect class the finding type names, and no check in "
        "this build can file it. Nothing ever looked for one, so silence about it is not evidence of "
        f"its absence. Classes this build can file: {can}. Call again with one of those, or with no "
        "'kind' at all."
    )


def _when_ms(value: object) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            moment = datetime.fromtimestamp(value / 1000, tz=timezone.utc)
        except (OverflowError, ValueError, OSError):  # a ledger built by hand, past any time
            return None
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return None


def _count(row: Mapping[str, object], field: str) -> int:
    value = row.get(field, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _row_name(row: Mapping[str, object]) -> str:
    return f"{row.get('check')}@{row.get('seam')}"


@dataclass(slots=True)
class _Shown:
    """One finding the answer lists, and the run it was filed in (``None``: outside any run)."""

    finding: FindingRecord
    agent: str | None
    trace_id: str | None


class _Gathered:
    """What the answer needs of a trace, taken run by run as the reader hands them out: counts,
    the first findings to list, the ledgers' rows summed, the last ledgers to print. Its size
    follows the answer's bounds, never the trace's."""

    def __init__(self, kind: str | None, limit: int) -> None:
        self.kind = kind
        self.limit = limit
        self.every = 0
        # The kinds filed, as far as the answer ever names them (a hostile trace may hold any number).
        self.kinds: set[str] = set()
        self.defects: list[_Shown] = []
        self.advisories: list[_Shown] = []
        self.defect_count = 0
        self.advisory_count = 0
        self.runs = 0
        self.ledgers = 0
        self.in_runs = 0  # findings of the kind asked, in runs that have a ledger
        self.loose_findings = 0
        # Over the ledger rows of the kind asked (all rows without one): checked encounters per row
        # name (the first names only), and the counts the headline and the footnotes read.
        self.checked: dict[str, int] = {}
        self.row_names = 0
        self.relevant_rows = 0
        self.unreachable = 0
        self.not_applicable = 0
        self.counted = 0  # findings the relevant rows count
        self.last: deque[list[str]] = deque(maxlen=FIND_MAX_LEDGERS)

    def _finding(self, finding: FindingRecord, run: RunRecord | None) -> None:
        self.every += 1
        if len(self.kinds) < _MAX_KINDS_NAMED:
            self.kinds.add(finding.kind)
        if self.kind is not None and finding.kind != self.kind:
            return
        shown = self.advisories if finding.advisory else self.defects
        if finding.advisory:
            self.advisory_count += 1
        else:
            self.defect_count += 1
        if len(shown) < self.limit:
            shown.append(_Shown(finding, run.agent if run else None, run.trace_id if run else None))

    def run(self, run: RunRecord) -> None:
        self.runs += 1
        for finding in run.findings:
            self._finding(finding, run)
        if run.ledger is None:
            self.last.append(_Answer.ledger_lines(run))
            return
        self.ledgers += 1
        self.in_runs += sum(1 for f in run.findings if self.kind is None or f.kind == self.kind)
        for row in run.ledger:
            if self.kind is not None and row.get("check") != self.kind:
                continue
            self.relevant_rows += 1
            name = _row_name(row)
            if name in self.checked or len(self.checked) < _MAX_ROW_NAMES:
                self.checked[name] = self.checked.get(name, 0) + _count(row, "checked")
            self.unreachable += _count(row, "unreachable")
            self.not_applicable += _count(row, "not_applicable")
            self.counted += _count(row, "findings")
        self.last.append(_Answer.ledger_lines(run))

    def loose(self, calls: Sequence[ToolCallRecord]) -> None:
        for call in calls:
            for finding in call.findings:
                self.loose_findings += 1
                self._finding(finding, None)


# The distinct kinds and ledger row names an answer keeps while it reads (a real trace has a few).
_MAX_KINDS_NAMED: Final = 64
_MAX_ROW_NAMES: Final = 256


class _Answer:
    def __init__(self, gathered: _Gathered) -> None:
        self.g = gathered
        self.kind = gathered.kind
        self.limit = gathered.limit

    # -- the parts ------------------------------------------------------
    def lines(self) -> list[str]:
        lines = [f"{_PREFIX} {self.headline()}"]
        shown = (self.g.defects + self.g.advisories)[: self.limit]
        for number, entry in enumerate(shown, start=1):
            lines.extend(self.finding_lines(number, entry))
        lines.extend(self.footnotes())
        lines.extend(self.checkers())
        lines.append(f"{_BOUND} (no check in this build can file: {', '.join(unfilable_kinds()) or 'none'}).")
        lines.append(self.next_hint(shown))
        return lines

    def headline(self) -> str:
        g = self.g
        if g.counted and not g.every:
            return (
                f"⚠ EVIDENCE MISSING: the ledgers count {plural(g.counted, 'failing encounter')}, but "
                "the trace carries no finding events (dropped at the SDK's per-span event limit, removed "
                "by a collector, or lost to sampling). That is the opposite of a clean run."
            )
        total = g.defect_count + g.advisory_count
        if total:
            advisory = f", plus {plural(g.advisory_count, 'advisory', 'advisories')} (counted apart)"
            about = f" of kind {self.kind!r}" if self.kind else ""
            return (
                f"{plural(g.defect_count, 'finding')}{about} filed across "
                f"{plural(g.runs, 'run')}{advisory if g.advisory_count else ''} "
                f"(showing {min(self.limit, total)} of {total})."
            )
        if self.kind is not None and g.every:
            filed = sorted(g.kinds)
            return f"no {self.kind!r} finding filed. The findings filed were of: {', '.join(filed)}. " + (
                self.coverage(opening=False)
            )
        return "none filed" + self.coverage(opening=True)

    def coverage(self, *, opening: bool) -> str:
        g = self.g
        if not g.ledgers:
            return (
                ", AND NOTHING RECORDS WHICH CHECKS RAN: no disposition ledger was recorded, so this "
                "cannot tell a clean run from checks that never looked."
            ).lstrip(", " if not opening else "")
        if not g.relevant_rows:
            only = self.kind
            return (
                ". ⚠ NO CHECK WAS REGISTERED" + (f" for {only!r}" if only else "") + ": nothing looked."
            ).lstrip(". " if not opening else "")
        total = sum(g.checked.values())
        if total == 0:
            return (". ⚠ NOTHING WAS CHECKED: " + self.why_nothing()).lstrip(". " if not opening else "")
        silent = [name for name, count in g.checked.items() if count == 0]
        if silent:
            named = ", ".join(silent[:_MAX_SILENT_NAMED])
            more = f" and {len(silent) - _MAX_SILENT_NAMED} more" if len(silent) > _MAX_SILENT_NAMED else ""
            return (
                f", ⚠ AND COVERAGE IS PARTIAL: {len(silent)} of {plural(len(g.checked), 'registered check')} "
                f"checked nothing ({named}{more}); {plural(total, 'encounter')} were checked by the others."
            ).lstrip(", " if not opening else "")
        return (
            f". All {plural(len(g.checked), 'registered check')} below RAN "
            f"({plural(total, 'checked encounter')})."
        ).lstrip(". " if not opening else "")

    def why_nothing(self) -> str:
        g = self.g
        reasons = []
        if g.unreachable:
            reasons.append(f"{plural(g.unreachable, 'encounter')} unreachable (the evidence was missing)")
        if g.not_applicable:
            reasons.append(f"{g.not_applicable} not applicable (not armed, or never met a subject)")
        detail = "; ".join(reasons) or "no row recorded any encounter"
        which = "every registered check" if len(g.checked) > 1 else next(iter(g.checked), "the check")
        return f"{which} was out of scope or unreachable ({detail}). Nothing filed means nothing here."

    def finding_lines(self, number: int, entry: _Shown) -> list[str]:
        finding = entry.finding
        where = [f"{finding.kind or '?'} @{finding.seam or '?'}"]
        where.append(
            f"run {entry.agent} (trace {entry.trace_id})" if entry.agent is not None else "outside any run"
        )
        if finding.tool_name:
            where.append(f"tool {finding.tool_name}")
        if finding.call_id:
            where.append(f"call {finding.call_id}")
        if finding.epoch is not None:
            where.append(f"epoch {finding.epoch}")
        tag = " · ADVISORY, counted apart" if finding.advisory else ""
        message = clip(finding.message or "(no message recorded)", FIND_MESSAGE_CHARS)
        lines = [f"[{number}] {' · '.join(where)}{tag}: {message}"]
        if finding.subjects:
            subjects = finding.subjects[:_MAX_SUBJECTS]
            more = (
                f" (+{len(finding.subjects) - len(subjects)} more)"
                if len(finding.subjects) > len(subjects)
                else ""
            )
            lines.append(f"    about: {', '.join(subjects)}{more}")
        lines.append(
            f"    filed on span {finding.span_name!r} ({finding.span_id}) in trace {finding.trace_id}"
        )
        if finding.witnesses:
            lines.append(f"    witnesses ({len(finding.witnesses)}):")
            for witness in finding.witnesses[:_MAX_WITNESSES]:
                said = f"{witness.get('subject', '?')} {witness.get('predicate', '?')} = {witness.get('value', '?')}"
                source = witness.get("provenance")
                lines.append(
                    f"      - {clip(said, 200)}" + (f" ({clip(str(source), 120)})" if source else "")
                )
        else:
            lines.append("    ⚠ no witness was recorded with it")
        return lines

    def footnotes(self) -> list[str]:
        g = self.g
        notes: list[str] = []
        shown = g.defect_count + g.advisory_count
        if shown > self.limit:
            notes.append(
                f"({shown - self.limit} more not shown; call again with a larger limit, at most {FIND_MAX_LIMIT}.)"
            )
        if g.counted > g.in_runs:
            notes.append(
                f"Note: the ledgers count {plural(g.counted, 'failing encounter')} for "
                f"{plural(g.in_runs, 'distinct finding')}: a defect is filed once per run however "
                "often it is re-detected, and every encounter that re-detects it is counted."
            )
        if g.loose_findings:
            notes.append(
                f"Note: {plural(g.loose_findings, 'finding')} came from tool calls outside any run, which have no ledger."
            )
        return notes

    def checkers(self) -> list[str]:
        lines: list[str] = []
        g = self.g
        if g.runs > len(g.last):
            lines.append(f"CHECKERS: the ledgers of the last {len(g.last)} of {plural(g.runs, 'run')}:")
        for ledger in g.last:
            lines.extend(ledger)
        return lines

    @staticmethod
    def ledger_lines(run: RunRecord) -> list[str]:
        head = f"CHECKERS, run {run.agent} (trace {run.trace_id})"
        if run.ledger is None:
            return [
                f"{head}: ⚠ no disposition ledger was recorded for this run; which checks ran is unknown."
            ]
        existed = {True: "yes", False: "no", None: "?"}[run.work_existed]
        lines = [
            f"{head}, posture {run.posture or '?'}, work existed: {existed}, outcome {run.outcome or '?'}:"
        ]
        if not run.ledger:
            lines.append("  ⚠ NO CHECK WAS REGISTERED in this run.")
        for row in run.ledger:
            name = _row_name(row)
            if run.work_existed and row_untouched(row):
                lines.append(
                    f"  ⚠ {name}: REGISTERED BUT NEVER RAN, it filed no disposition at all in a run that "
                    "did work (wiring rot)"
                )
                continue
            checked, found = _count(row, "checked"), _count(row, "findings")
            parts = [f"ran {checked}×" if checked else "⚠ ran 0×, nothing at this seam was actually checked"]
            if found:
                parts.append(plural(found, "finding"))
            elif checked:
                parts.append("0 findings, the checker ran and found nothing")
            if _count(row, "not_applicable"):
                parts.append(f"not applicable ×{_count(row, 'not_applicable')}")
                if looks_unarmed(row) and (arm := how_to_arm(row.get("check"), row.get("seam"))) is not None:
                    parts.append(f"unarmed: {arm}")
            if _count(row, "unreachable"):
                parts.append(f"⚠ unreachable ×{_count(row, 'unreachable')} (SILENT, not clean)")
            if _count(row, "synthetic"):
                parts.append(f"canary ×{_count(row, 'synthetic')}")
            fired = _when_ms(row.get("last_fired_at"))
            if fired:
                parts.append(f"last fired {fired}")
            lines.append(f"  {name}: {'; '.join(parts)}")
        # A run judged from a trace says why each unreachable encounter was: the evidence it lacked.
        for reason in run.unreachable[:_MAX_REASONS]:
            lines.append(f"  ⚠ could not be judged: {clip(reason, FIND_MESSAGE_CHARS)}")
        if len(run.unreachable) > _MAX_REASONS:
            lines.append(f"  ... and {len(run.unreachable) - _MAX_REASONS} more reasons")
        return lines

    def next_hint(self, shown: list[_Shown]) -> str:
        if shown:
            first = shown[0].finding
            return f"Next: open span {first.span_id} of trace {first.trace_id} in your trace UI to see it in place."
        return (
            "Next: arm the checks that checked nothing (docs/checks/index.md says what arms each), "
            "or call again with no 'kind'."
        )


# ── As a tool an agent can mount ────────────────────────────────────────


def tool_definition() -> dict[str, Any]:
    """``find_context_errors`` as a tool: name, description and a JSON input schema.

    The ``kind`` menu lists only kinds a registered check can file, read from the registry.
    """
    missing = unfilable_kinds()
    return {
        "name": TOOL_NAME,
        "description": (
            "Read back the context-integrity findings (defects in what the agent's tools and model "
            "handed each other) and the per-run ledger of which checks ran, from the recorded trace. "
            "It never re-judges: it reports what was recorded, says 'no evidence' when nothing was, and "
            "says how much was checked when nothing was filed. "
            + (f"No check in this build can file: {', '.join(missing)}." if missing else "")
        ).strip(),
        "input_schema": {
            "type": "object",
            "properties": {
                "kind": {
                    "type": "string",
                    "enum": list(filable_kinds()),
                    "description": "Only findings of this defect class. Omit for all.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": FIND_MAX_LIMIT,
                    "default": FIND_DEFAULT_LIMIT,
                    "description": "How many findings to list.",
                },
            },
            "additionalProperties": False,
        },
    }


def call_tool(source: str | os.PathLike[str] | Recording, arguments: Mapping[str, object] | None) -> str:
    """Answer one call of the tool, with ``arguments`` as the model sent them. Never raises."""
    given = dict(arguments or {})
    unknown = sorted(set(given) - {"kind", "limit"})
    if unknown:
        named = ", ".join(repr(clip(str(name), 80)) for name in unknown[:5])
        return visible(f"{_PREFIX} unknown argument(s) {named}; it takes 'kind' and 'limit'.")
    kind = given.get("kind")
    limit = given.get("limit")
    try:
        return find_context_errors(
            source,
            kind=str(kind) if kind is not None else None,
            limit=limit if isinstance(limit, int) else None,
        )
    except Exception as error:  # a tool answer, never an exception into the agent
        return visible(_could_not_read(error))
