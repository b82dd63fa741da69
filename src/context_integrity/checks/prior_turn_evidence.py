"""prior-turn-evidence @ claim: every value the answer states was served in an earlier turn.

THE FAILURE. In a conversation, the user asks a follow-up; the model answers from
the values it read in an earlier turn (or from its own earlier answer) without
looking again, and the answer is stale the moment anything changed. Every value in
it is grounded, so token grounding passes it.

ADVISORY BY CONSTRUCTION: restating an earlier value is often legitimate ("as I said,
esx-07"); this marks a place to look, never a verdict. Armed by the dial
``notice_prior_turn_evidence=True``.

THE INDEX (:func:`evidence_index_of`), over the run's last request as it stands:
walking its messages in order, each user message opens a turn -- except the ones the
application marks as its own correction frames (``Message(..., correction=True)``) --
and each tool message is indexed: structured content (or JSON-looking text) walked
for keys and leaves, strings indexed whole and as tokens, other text as tokens. Each
lowercased form maps to the LATEST turn that served it. The index is bounded by
``limits.MAX_EVIDENCE_FORMS``; past it, new forms are dropped and the index says so.

THE EXTRACTOR (:func:`answer_values_of`): identifiers of four or more characters that
contain a digit and mix it with letters or ``: _ - / .``, and numbers of four or more
digits. Values a user message or the system instructions supplied are skipped: the
user said them, so restating them is no staleness.

THE RULE, in order: an empty answer -> ``unreachable``; the index was truncated ->
``not-applicable`` (its stamps cannot be trusted); no user turn -> ``unreachable`` (no
boundary); no answer value the index grounds -> ``unreachable``; any grounded value
served in this turn -> ``checked-pass`` (one fresh value falsifies "every value is
older"); else ``checked-fail`` with one advisory finding, whose message says more
when this turn served no tool result at all.

It can under-report, never over-report: the index is the window as sent, so turn
distances are floors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from ..findings import (
    CHECKED_FAIL,
    CHECKED_PASS,
    NOT_APPLICABLE,
    UNREACHABLE,
    Encounter,
    Finding,
    Subject,
    Witness,
)
from ..limits import MAX_ARGUMENT_DEPTH, MAX_EVIDENCE_FORM_CHARS, MAX_EVIDENCE_FORMS
from ..loop import Message, RequestFrame, content_text
from ..text import Text, plural
from . import CANARY_EPOCH, as_canary

PRIOR_TURN_EVIDENCE_CEILING: Final = (
    "Restating an earlier value is indistinguishable from here from a legitimate reference to it; turns "
    "are counted over the window as sent, so distances are floors; values the user or the system "
    "instructions supplied are invisible to this notice; it marks a place to look, never a verdict."
)

GROUNDING_PREDICATE: Final = "grounding"
TOOL_RESULTS_THIS_TURN_PREDICATE: Final = "tool-results-this-turn"
ANSWER_SUBJECT: Final = Subject(kind="answer", id="final")

_TOKEN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9:_\-/.]*")
_SEPARATORS: Final = frozenset(":_-/.")
_MIN_VALUE_CHARS: Final = 4


def _tokens(text: str) -> list[str]:
    out = []
    for match in _TOKEN.finditer(text):
        token = match.group(0).rstrip(":_-/.")
        if token:
            out.append(token)
    return out


def is_data_value(token: str) -> bool:
    """An identifier (>= 4 chars, a digit mixed with letters or ``: _ - / .``) or a >= 4-digit number."""
    if len(token) < _MIN_VALUE_CHARS:
        return False
    if token.isdigit():
        return True
    if not any(ch.isdigit() for ch in token):
        return False
    return any(ch.isalpha() or ch in _SEPARATORS for ch in token)


def answer_values_of(text: str) -> list[str]:
    """The answer's data values, lowercased, distinct, in order."""
    return list(dict.fromkeys(token.lower() for token in _tokens(text) if is_data_value(token)))


@dataclass(slots=True)
class EvidenceIndex:
    """What each served form was last served by: form -> turn, plus the counts the rule reads."""

    turn_of: dict[str, int] = field(default_factory=dict)
    exempt: set[str] = field(default_factory=set)
    current_turn: int = 0
    tool_results_this_turn: int = 0
    truncated: bool = False
    budget: int = MAX_EVIDENCE_FORMS

    def stamp(self, form: str, turn: int) -> None:
        if form in self.turn_of or len(self.turn_of) < self.budget:
            self.turn_of[form] = turn  # re-serving re-stamps, even past the budget
        else:
            self.truncated = True

    def stamp_text(self, text: str, turn: int) -> None:
        whole = text.strip().lower()
        # A long string can never equal an answer token; only its tokens can.
        if whole and len(whole) <= MAX_EVIDENCE_FORM_CHARS:
            self.stamp(whole, turn)
        for token in _tokens(text):
            self.stamp(token.lower(), turn)

    def stamp_structure(self, node: object, turn: int, depth: int = 0) -> None:
        if depth > MAX_ARGUMENT_DEPTH:
            return
        if isinstance(node, str):
            self.stamp_text(node, turn)
        elif isinstance(node, bool) or node is None:
            return
        elif isinstance(node, (int, float)):
            self.stamp_text(str(node), turn)
        elif isinstance(node, Mapping):
            for key, child in list(node.items()):
                self.stamp_text(str(key), turn)
                self.stamp_structure(child, turn, depth + 1)
        elif isinstance(node, (list, tuple)):
            for child in node:
                self.stamp_structure(child, turn, depth + 1)
        else:
            self.stamp_text(content_text(node), turn)


def _exempt_text(index: EvidenceIndex, text: str) -> None:
    for token in _tokens(text):
        index.exempt.add(token.lower())


def _index_tool_content(index: EvidenceIndex, content: object, turn: int) -> None:
    if isinstance(content, str):
        stripped = content.lstrip()
        if stripped.startswith(("{", "[")):
            try:
                index.stamp_structure(json.loads(content), turn)
                return
            except ValueError:
                pass
        index.stamp_text(str(content), turn)
    else:
        index.stamp_structure(content, turn)


def evidence_index_of(frame: RequestFrame | None, *, budget: int = MAX_EVIDENCE_FORMS) -> EvidenceIndex:
    """Index every value a request's tool results served, stamped with its user turn. Never raises."""
    index = EvidenceIndex(budget=budget)
    if frame is None:
        return index
    if isinstance(frame.system, str):
        _exempt_text(index, frame.system)
    for message in frame.messages:
        role = getattr(message, "role", None)
        if role == "user":
            if not getattr(message, "correction", False):
                index.current_turn += 1
                index.tool_results_this_turn = 0
                _exempt_text(index, content_text(getattr(message, "content", "")))
        elif role == "system":
            _exempt_text(index, content_text(getattr(message, "content", "")))
        elif role == "tool":
            index.tool_results_this_turn += 1
            _index_tool_content(index, getattr(message, "content", ""), index.current_turn)
    return index


@dataclass(frozen=True, slots=True)
class GroundingReading:
    """How the answer's values sit in the index."""

    from_this_turn: int
    from_prior_turns: int
    latest_prior_turn: int
    current_turn: int
    tool_results_this_turn: int
    truncated: bool


def reading_of(index: EvidenceIndex, values: list[str]) -> GroundingReading:
    this = prior = 0
    latest = -1
    for value in values:
        if value in index.exempt:
            continue
        turn = index.turn_of.get(value)
        if turn is None:
            continue
        if turn >= index.current_turn:
            this += 1
        else:
            prior += 1
            latest = max(latest, turn)
    return GroundingReading(
        this, prior, max(latest, 0), index.current_turn, index.tool_results_this_turn, index.truncated
    )


def _finding(reading: GroundingReading, epoch: int) -> Finding:
    count = reading.from_prior_turns
    distance = reading.current_turn - reading.latest_prior_turn
    if reading.tool_results_this_turn == 0:
        tail = "This turn called no tool and served no result, so the answer was assembled entirely from the conversation."
    else:
        tail = (
            f"This turn served {plural(reading.tool_results_this_turn, 'tool result')} and the answer states no "
            "value from any of them."
        )
    message = Text(
        f"The final answer states {plural(count, 'value')} the run can ground, and every one of them was last "
        f"served in turn {reading.latest_prior_turn} or earlier -- at least {plural(distance, 'turn')} before "
        f"this one (turn {reading.current_turn}), which contributed none of them. {tail} "
        f"{PRIOR_TURN_EVIDENCE_CEILING} Nothing here blocked the answer, revised it or changed a byte of it."
    )
    witnesses = (
        Witness(
            ANSWER_SUBJECT,
            GROUNDING_PREDICATE,
            Text(f"{plural(count, 'grounded value')}, none of them served by this turn"),
            epoch,
            "asserted",
            Text("the answer's data values, looked up in the run's evidence index"),
        ),
        Witness(
            Subject(kind="turn", id=str(reading.latest_prior_turn)),
            GROUNDING_PREDICATE,
            Text("served the newest result the answer drew on"),
            epoch,
            "asserted",
            Text(
                f"turn {reading.latest_prior_turn}, at least {plural(distance, 'turn')} before turn "
                f"{reading.current_turn}"
            ),
        ),
        Witness(
            ANSWER_SUBJECT,
            TOOL_RESULTS_THIS_TURN_PREDICATE,
            reading.tool_results_this_turn,
            epoch,
            "asserted",
            Text(
                "no tool result in this turn"
                if reading.tool_results_this_turn == 0
                else "tool messages after the last user turn"
            ),
        ),
    )
    return Finding(
        kind="prior-turn-evidence",
        seam="claim",
        subjects=(ANSWER_SUBJECT,),
        predicate=GROUNDING_PREDICATE,
        witnesses=witnesses,
        epoch=epoch,
        message=message,
        advisory=True,
    )


def prior_turn_evidence_of(reading: GroundingReading, epoch: int = 0) -> Encounter:
    """The pure rule over a reading (see the module docstring for the order)."""
    if reading.truncated:
        return Encounter(findings=[], disposition=NOT_APPLICABLE)
    if reading.current_turn == 0:
        return Encounter(findings=[], disposition=UNREACHABLE)
    if reading.from_this_turn == 0 and reading.from_prior_turns == 0:
        return Encounter(findings=[], disposition=UNREACHABLE)
    if reading.from_this_turn > 0:
        return Encounter(findings=[], disposition=CHECKED_PASS)
    return Encounter(findings=[_finding(reading, epoch)], disposition=CHECKED_FAIL)


def prior_turn_evidence_of_answer(
    text: str | None, frame: RequestFrame | None, *, epoch: int = 0, budget: int = MAX_EVIDENCE_FORMS
) -> Encounter:
    """The whole check over one answer and the last request of the run. An empty answer is unreachable."""
    if not text or not text.strip():
        return Encounter(findings=[], disposition=UNREACHABLE)
    index = evidence_index_of(frame, budget=budget)
    return prior_turn_evidence_of(reading_of(index, answer_values_of(text)), epoch)


def prior_turn_evidence_canary() -> Encounter:
    """A two-turn conversation whose second answer restates only a turn-one value, through the real check."""
    frame = RequestFrame.of(
        [
            Message("user", "Which host owns the initiator?"),
            Message("tool", [{"host": "canary-host-0417"}], tool_name="canary_tool"),
            Message("assistant", "canary-host-0417"),
            Message("user", "And now?"),
        ]
    )
    return as_canary(prior_turn_evidence_of_answer("Still canary-host-0417.", frame, epoch=CANARY_EPOCH))
