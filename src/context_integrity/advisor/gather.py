"""Evidence from recorded runs: each run's profile, merged, and the same runs judged again (``--retro``).

A run whose in-process profile was recorded on its summary span (``setup(profile=True)``, content
capture off) is read from that profile; any other run is replayed through the judge with profiling
on (the same collector, so the two read alike), which needs its content. A run with neither is
counted, and said: it holds no evidence.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final

from ..judge.book import ContractBook
from ..judge.dials import Dials
from ..judge.profile import Profile, ProfileUnreadable, decode_profile
from ..limits import MAX_LISTED_PROBLEMS
from ..traces.model import TracedRun
from ..traces.replay import JudgedRun, judge_run
from .claims import ClaimsEvidence
from .proposals import Proposals
from .render import proposed_contracts

# The dials a replay gathers a profile under: nothing armed, nothing judged, only evidence counted.
_PROFILING: Final = Dials(profile=True)
# The dials the proposals are judged under in ``--retro``: every declaration-armed check on, in warn.
RETRO_DIALS: Final = Dials(check_column_types="warn", notice_empty_lookups=True)


@dataclass(slots=True)
class Evidence:
    """What the runs of a source hold, merged: the profile, and how each run contributed to it."""

    profile: Profile = field(default_factory=Profile)
    claims: ClaimsEvidence = field(default_factory=ClaimsEvidence)
    runs: int = 0
    from_recorded_profile: int = 0
    replayed: int = 0
    # Runs with no recorded profile and no content a replay could read.
    without_evidence: int = 0
    problems: list[str] = field(default_factory=list)

    def problem(self, text: str) -> None:
        if len(self.problems) < MAX_LISTED_PROBLEMS:
            self.problems.append(text)

    def sentence(self) -> str:
        """How the runs were read, in one sentence."""
        parts = []
        if self.from_recorded_profile:
            parts.append(f"{self.from_recorded_profile} from the profile recorded on their summary span")
        if self.replayed:
            parts.append(f"{self.replayed} replayed from their content")
        if self.without_evidence:
            parts.append(
                f"{self.without_evidence} with neither (no content captured and no profile recorded: "
                "setup(profile=True) records one without content)"
            )
        said = f"{self.runs} run(s) read" + (": " + "; ".join(parts) if parts else "")
        if self.runs and not self.replayed:
            said += "; claims are proposed from content only, and none was read"
        return said


def gather(runs: Iterable[TracedRun]) -> Evidence:
    """Every run's profile, merged. Runs are read one at a time and let go: memory stays flat."""
    evidence = Evidence()
    for run in runs:
        evidence.runs += 1
        evidence.claims.observe(run)
        if run.profile is not None:
            try:
                evidence.profile.merge(decode_profile(run.profile))
                evidence.from_recorded_profile += 1
                continue
            except ProfileUnreadable as error:
                evidence.problem(
                    f"run {run.trace_id}/{run.span_id}: its recorded profile was not read ({error})"
                )
        judged = judge_run(run, ContractBook(), _PROFILING)
        gathered = judged.profile
        if gathered is None or not gathered.tools:
            evidence.without_evidence += 1
            continue
        evidence.replayed += 1
        evidence.profile.merge(gathered)
    evidence.profile.runs = evidence.runs
    return evidence


def retro(runs: Iterable[TracedRun], proposals: Proposals) -> Iterator[JudgedRun]:
    """The runs judged under the proposed declarations, as the user would see them once adopted."""
    book = proposed_book(proposals)
    for run in runs:
        yield judge_run(run, book, RETRO_DIALS)


def proposed_book(proposals: Proposals) -> ContractBook:
    """A contract book declaring the proposals, as a contracts file of them would."""
    book = ContractBook()
    contracts = proposed_contracts(proposals)
    book.declare_all(contracts.tools, contracts.claims, contracts.toolsets)
    return book
