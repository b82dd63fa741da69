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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from ..findings import KINDS
from ..judge.registry import REGISTRY
from ..limits import FIND_DEFAULT_LIMIT, FIND_MAX_LEDGERS, FIND_MAX_LIMIT, FIND_MESSAGE_CHARS
from ..recording import Recording, read_recording_text
from ..recording.foreign import as_otlp_lines
from ..recording.model import FindingRecord, RunRecord, row_untouched
from ..text import clip, plural

TOOL_NAME: Final = "find_context_errors"
_PREFIX: Final = f"{TOOL_NAME}:"
_MAX_SUBJECTS: Final = 6
_MAX_WITNESSES: Final = 6
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


def read_evidence(source: str | os.PathLike[str] | Recording) -> Evidence | str:
    """The source read back, or the sentence saying why there is no evidence to read."""
    if isinstance(source, Recording):
        return Evidence(source, source.source or "the recording given", "recording")
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return (
            f'{_PREFIX} ⚠ NO FINDING EVIDENCE: there is no file at {path}. That is "no evidence", NOT '
            '"no context errors". ' + _how_to_capture()
        )
    except OSError as error:
        return f"{_PREFIX} ⚠ NO FINDING EVIDENCE: {path} could not be read ({error.strerror or error})."
    try:
        shape, lines = as_otlp_lines(text)
    except (ValueError, KeyError, TypeError) as error:
        return f"{_PREFIX} ⚠ NO FINDING EVIDENCE: {path} is not a trace this tool can read ({error})."
    recording = read_recording_text(lines)
    recording.source = str(path)
    return Evidence(recording, str(path), shape)


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
    what it reads: an unreadable source is an answer too.
    """
    shown_limit = _clamp(limit)
    evidence = read_evidence(source)
    if isinstance(evidence, str):
        refusal = _refuse_kind(kind, ())
        return refusal if refusal is not None else evidence
    recording = evidence.recording
    every = _all_findings(recording)
    refusal = _refuse_kind(kind, every)
    if refusal is not None:
        return refusal
    if recording.spans == 0:
        problems = f" ({recording.problems[0]})" if recording.problems else ""
        return (
            f"{_PREFIX} ⚠ NO FINDING EVIDENCE: {evidence.source} holds no spans{problems}. That is "
            '"no evidence", NOT "no context errors". ' + _how_to_capture()
        )
    ledgers = [run for run in recording.runs if run.ledger is not None]
    if not every and not ledgers:
        return (
            f"{_PREFIX} ⚠ {evidence.source} carries no Context Integrity events: "
            f"{plural(recording.spans, 'span')} read ({evidence.shape}), neither a finding nor a "
            'disposition ledger among them. Read it as "no evidence": the agent was not instrumented '
            "with context-integrity, or its events were dropped on the way (a collector filter, "
            "sampling). " + _how_to_capture()
        )
    return _Answer(recording, every, ledgers, kind, shown_limit).text()


def _clamp(limit: int | None) -> int:
    if limit is None or isinstance(limit, bool) or not isinstance(limit, int):
        return FIND_DEFAULT_LIMIT
    return max(1, min(limit, FIND_MAX_LIMIT))


def _all_findings(recording: Recording) -> list[FindingRecord]:
    found = [f for run in recording.runs for f in run.findings]
    found += [f for call in recording.loose_calls for f in call.findings]
    return found


def _refuse_kind(kind: str | None, recorded: Sequence[FindingRecord]) -> str | None:
    """The refusal for a kind nothing can answer about, or ``None`` (answerable, or recorded anyway)."""
    if kind is None or kind in filable_kinds() or any(f.kind == kind for f in recorded):
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
        moment = datetime.fromtimestamp(value / 1000, tz=timezone.utc)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return None


def _count(row: Mapping[str, object], field: str) -> int:
    value = row.get(field, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _row_name(row: Mapping[str, object]) -> str:
    return f"{row.get('check')}@{row.get('seam')}"


class _Answer:
    def __init__(
        self,
        recording: Recording,
        every: list[FindingRecord],
        ledgers: list[RunRecord],
        kind: str | None,
        limit: int,
    ) -> None:
        self.recording = recording
        self.ledgers = ledgers
        self.kind = kind
        self.limit = limit
        self.every = every
        self.matching = [f for f in every if kind is None or f.kind == kind]
        self.defects = [f for f in self.matching if not f.advisory]
        self.advisories = [f for f in self.matching if f.advisory]
        self.run_of = {id(f): run for run in recording.runs for f in run.findings}

    # -- the parts ------------------------------------------------------
    def text(self) -> str:
        lines = [f"{_PREFIX} {self.headline()}"]
        shown = (self.defects + self.advisories)[: self.limit]
        for number, finding in enumerate(shown, start=1):
            lines.extend(self.finding_lines(number, finding))
        lines.extend(self.footnotes())
        lines.extend(self.checkers())
        lines.append(f"{_BOUND} (no check in this build can file: {', '.join(unfilable_kinds()) or 'none'}).")
        lines.append(self.next_hint(shown))
        return "\n".join(lines)

    def rows(self) -> list[dict[str, object]]:
        return [row for run in self.ledgers for row in (run.ledger or [])]

    def headline(self) -> str:
        rows = self.rows()
        ledger_findings = sum(_count(r, "findings") for r in rows if self.kind in (None, r.get("check")))
        if ledger_findings and not self.every:
            return (
                f"⚠ EVIDENCE MISSING: the ledgers count {plural(ledger_findings, 'failing encounter')}, but "
                "the trace carries no finding events (dropped at the SDK's per-span event limit, removed "
                "by a collector, or lost to sampling). That is the opposite of a clean run."
            )
        if self.matching:
            advisory = f", plus {plural(len(self.advisories), 'advisory', 'advisories')} (counted apart)"
            total = len(self.defects) + len(self.advisories)
            about = f" of kind {self.kind!r}" if self.kind else ""
            return (
                f"{plural(len(self.defects), 'finding')}{about} filed across "
                f"{plural(len(self.recording.runs), 'run')}{advisory if self.advisories else ''} "
                f"(showing {min(self.limit, total)} of {total})."
            )
        if self.kind is not None and self.every:
            filed = sorted({f.kind for f in self.every})
            return f"no {self.kind!r} finding filed. The findings filed were of: {', '.join(filed)}. " + (
                self.coverage(rows, only=self.kind)
            )
        return "none filed" + self.coverage(rows, only=self.kind, opening=True)

    def coverage(self, rows: list[dict[str, object]], *, only: str | None, opening: bool = False) -> str:
        if not self.ledgers:
            return (
                ", AND NOTHING RECORDS WHICH CHECKS RAN: no disposition ledger was recorded, so this "
                "cannot tell a clean run from checks that never looked."
            ).lstrip(", " if not opening else "")
        relevant = [r for r in rows if only is None or r.get("check") == only]
        if not relevant:
            return (
                ". ⚠ NO CHECK WAS REGISTERED" + (f" for {only!r}" if only else "") + ": nothing looked."
            ).lstrip(". " if not opening else "")
        checked: dict[str, int] = {}
        for row in relevant:
            checked[_row_name(row)] = checked.get(_row_name(row), 0) + _count(row, "checked")
        total = sum(checked.values())
        if total == 0:
            why = self.why_nothing(relevant)
            return (". ⚠ NOTHING WAS CHECKED: " + why).lstrip(". " if not opening else "")
        silent = [name for name, count in checked.items() if count == 0]
        if silent:
            named = ", ".join(silent[:_MAX_SILENT_NAMED])
            more = f" and {len(silent) - _MAX_SILENT_NAMED} more" if len(silent) > _MAX_SILENT_NAMED else ""
            return (
                f", ⚠ AND COVERAGE IS PARTIAL: {len(silent)} of {plural(len(checked), 'registered check')} "
                f"checked nothing ({named}{more}); {plural(total, 'encounter')} were checked by the others."
            ).lstrip(", " if not opening else "")
        return (
            f". All {plural(len(checked), 'registered check')} below RAN "
            f"({plural(total, 'checked encounter')})."
        ).lstrip(". " if not opening else "")

    @staticmethod
    def why_nothing(rows: list[dict[str, object]]) -> str:
        unreachable = sum(_count(r, "unreachable") for r in rows)
        not_applicable = sum(_count(r, "not_applicable") for r in rows)
        reasons = []
        if unreachable:
            reasons.append(f"{plural(unreachable, 'encounter')} unreachable (the evidence was missing)")
        if not_applicable:
            reasons.append(f"{not_applicable} not applicable (not armed, or never met a subject)")
        detail = "; ".join(reasons) or "no row recorded any encounter"
        which = "every registered check" if len({_row_name(r) for r in rows}) > 1 else f"{_row_name(rows[0])}"
        return f"{which} was out of scope or unreachable ({detail}). Nothing filed means nothing here."

    def finding_lines(self, number: int, finding: FindingRecord) -> list[str]:
        where = [f"{finding.kind or '?'} @{finding.seam or '?'}"]
        run = self.run_of.get(id(finding))
        where.append(f"run {run.agent} (trace {run.trace_id})" if run is not None else "outside any run")
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
        notes: list[str] = []
        shown = len(self.defects) + len(self.advisories)
        if shown > self.limit:
            notes.append(
                f"({shown - self.limit} more not shown; call again with a larger limit, at most {FIND_MAX_LIMIT}.)"
            )
        in_runs = [
            f for run in self.ledgers for f in run.findings if self.kind is None or f.kind == self.kind
        ]
        counted = sum(
            _count(r, "findings") for r in self.rows() if self.kind is None or r.get("check") == self.kind
        )
        if counted > len(in_runs):
            notes.append(
                f"Note: the ledgers count {plural(counted, 'failing encounter')} for "
                f"{plural(len(in_runs), 'distinct finding')}: a defect is filed once per run however "
                "often it is re-detected, and every encounter that re-detects it is counted."
            )
        loose = [f for call in self.recording.loose_calls for f in call.findings]
        if loose:
            notes.append(
                f"Note: {plural(len(loose), 'finding')} came from tool calls outside any run, which have no ledger."
            )
        return notes

    def checkers(self) -> list[str]:
        lines: list[str] = []
        runs = self.recording.runs
        shown = runs[-FIND_MAX_LEDGERS:]
        if len(runs) > len(shown):
            lines.append(f"CHECKERS: the ledgers of the last {len(shown)} of {plural(len(runs), 'run')}:")
        for run in shown:
            lines.extend(self.ledger_lines(run))
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
            if _count(row, "unreachable"):
                parts.append(f"⚠ unreachable ×{_count(row, 'unreachable')} (SILENT, not clean)")
            if _count(row, "synthetic"):
                parts.append(f"canary ×{_count(row, 'synthetic')}")
            fired = _when_ms(row.get("last_fired_at"))
            if fired:
                parts.append(f"last fired {fired}")
            lines.append(f"  {name}: {'; '.join(parts)}")
        return lines

    def next_hint(self, shown: list[FindingRecord]) -> str:
        if shown:
            first = shown[0]
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
        return f"{_PREFIX} unknown argument(s) {', '.join(map(repr, unknown))}; it takes 'kind' and 'limit'."
    kind = given.get("kind")
    limit = given.get("limit")
    try:
        return find_context_errors(
            source,
            kind=str(kind) if kind is not None else None,
            limit=limit if isinstance(limit, int) else None,
        )
    except Exception as error:  # a tool answer, never an exception into the agent
        return f"{_PREFIX} could not read the trace ({type(error).__name__}: {clip(str(error), 200)})."
