"""The vocabulary every check, the ledger and the telemetry speak.

One owner for each closed set: the seams a check can stand at, the kinds of
defect a finding can name, and the dispositions an encounter can end in.
Everything else in the package reads these tuples instead of retyping the
words, so a dashboard, an alert rule and a test all agree by construction.

This module is a leaf: it imports nothing from the rest of the package.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, get_args

# ── Seams: where in an agent run a check stands ─────────────────────────
Seam = Literal["write", "compose", "wire", "choice", "claim"]
SEAMS: Final[tuple[Seam, ...]] = get_args(Seam)
# What stands at each seam, in a reader's words (the demo's key, the docs).
SEAM_MEANINGS: Final[Mapping[Seam, str]] = {
    "write": "a tool's result",
    "compose": "a request being assembled",
    "wire": "what actually crossed to the model provider",
    "choice": "the calls a model response makes",
    "claim": "the final answer",
}
assert tuple(SEAM_MEANINGS) == SEAMS, "every seam, in order, has its meaning"

# ── Kinds: plain defect names, never the algebra term ───────────────────
Kind = Literal[
    "invariant-violation",
    "dangling-reference",
    "unsupported-argument",
    "unsupported-claim",
    "empty-lookup",
    "column-type-mismatch",
    "missing-column",
    "prior-turn-evidence",
    "duplicate-execution",
]
KINDS: Final[tuple[Kind, ...]] = get_args(Kind)

# ── Dispositions: exactly one per encounter ─────────────────────────────
Disposition = Literal["checked-pass", "checked-fail", "not-applicable", "unreachable"]
DISPOSITIONS: Final[tuple[Disposition, ...]] = get_args(Disposition)
CHECKED_PASS: Final[Disposition] = "checked-pass"
CHECKED_FAIL: Final[Disposition] = "checked-fail"
NOT_APPLICABLE: Final[Disposition] = "not-applicable"
UNREACHABLE: Final[Disposition] = "unreachable"

# History is quotation; serving is asserting.
Stratum = Literal["asserted", "quoted"]
STRATA: Final[tuple[Stratum, ...]] = get_args(Stratum)


@dataclass(frozen=True, slots=True)
class Subject:
    """What a finding or a witness is about: a tool, a map, an entity, the answer."""

    kind: str
    id: str

    def render(self) -> str:
        return f"{self.kind} {self.id}"


def tool_subject(name: str) -> Subject:
    return Subject(kind="tool", id=name)


@dataclass(frozen=True, slots=True)
class Witness:
    """One assertion a finding rests on: who said what about which predicate."""

    subject: Subject
    predicate: str
    value: object
    epoch: int | None
    stratum: Stratum
    provenance: str


@dataclass(frozen=True, slots=True)
class Finding:
    """One defect a check filed: a plain sentence plus the witnesses behind it.

    ``advisory`` marks doubt rather than contradiction ("a place to look");
    ``synthetic`` marks canary material that must never count as real.
    """

    kind: Kind
    seam: Seam
    subjects: tuple[Subject, ...]
    predicate: str | None
    witnesses: tuple[Witness, ...]
    epoch: int | None
    message: str
    advisory: bool = False
    synthetic: bool = False

    def identity(self, *, with_epoch: bool = True) -> str:
        return finding_identity(self, with_epoch=with_epoch)


def finding_identity(finding: Finding, *, with_epoch: bool = True) -> str:
    """The key two findings share when they are the same defect.

    ``advisory`` is deliberately not part of it: a doubt and a contradiction
    about the same subjects and predicate are one defect, and the first wins.
    Without the epoch it is the per-run key: one event per defect per run,
    however many iterations re-detect it.
    """
    epoch = finding.epoch if with_epoch else None
    return identity_of(finding.kind, finding.seam, finding.subjects, finding.predicate, epoch)


def identity_of(
    kind: Kind, seam: Seam, subjects: Iterable[Subject], predicate: str | None, epoch: int | None = None
) -> str:
    """:func:`finding_identity` of a finding not built yet: a check asks it before building one."""
    rendered = " + ".join(sorted(subject.render() for subject in subjects))
    at = "" if epoch is None else str(epoch)
    return f"{kind} @{seam} [{rendered}] {predicate or ''} {at}".rstrip()


def dedupe_findings(findings: Iterable[Finding], *, with_epoch: bool = True) -> list[Finding]:
    """Keep the first finding of each identity, in input order."""
    seen: set[str] = set()
    kept: list[Finding] = []
    for finding in findings:
        key = finding_identity(finding, with_epoch=with_epoch)
        if key not in seen:
            seen.add(key)
            kept.append(finding)
    return kept


@dataclass(frozen=True, slots=True)
class ExternalGround:
    """A value the application verified itself (not served by the run), and who vouches for it.

    ``source`` is an audit label that travels with every excusal, so a reader
    can follow the chain of the app's assertion instead of trusting it.
    """

    value: str
    source: str


@dataclass(frozen=True, slots=True)
class ExternalGrounding:
    """The record of one argument excused only by an application's external ground."""

    tool_name: str
    call_id: str
    path: str
    value: str
    source: str


@dataclass(frozen=True, slots=True)
class Encounter:
    """What one check concluded about one subject: its findings and its disposition.

    ``refusal`` is set only by a check that may refuse (the column check in
    ``enforce`` mode, when it filed something): the sentence the caller
    receives instead of the result.
    """

    findings: list[Finding] = field(default_factory=list)
    disposition: Disposition = NOT_APPLICABLE
    refusal: str | None = None
    # For a check that judges several calls at once (one model response): ``call_ids[i]`` is the id of
    # the call ``findings[i]`` is about, and ``excusals`` the arguments an external ground excused.
    call_ids: list[str | None] = field(default_factory=list)
    excusals: list[ExternalGrounding] = field(default_factory=list)
    # For a check that judges several subjects in one look (every claim of one answer): one
    # disposition per subject, each counted in the ledger; empty means ``disposition`` counts once.
    dispositions: list[Disposition] = field(default_factory=list)
    # Why an ``unreachable`` encounter could not look, when the check can say (a declaration that
    # could not be read): the caller puts it on the span beside the ledger's count.
    reason: str | None = None

    def disposition_of(self, kind: Kind) -> Disposition:
        """The disposition of one kind of a check that files several kinds from one look."""
        if self.disposition in (NOT_APPLICABLE, UNREACHABLE):
            return self.disposition
        if not self.findings:
            return CHECKED_PASS
        return CHECKED_FAIL if any(f.kind == kind for f in self.findings) else CHECKED_PASS


def kinds_of(findings: Sequence[Finding]) -> list[Kind]:
    """The distinct kinds among findings, in first-seen order."""
    out: list[Kind] = []
    for finding in findings:
        if finding.kind not in out:
            out.append(finding.kind)
    return out
