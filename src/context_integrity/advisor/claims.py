"""Claims evidence: answer fields whose value matches a fact a tool served for the same entity.

A claim says: the answer's field ``port.status`` states the fact ``status`` of entity ``fc1/3``, which
a tool settles. Evidence for one is a run whose structured answer held, at that field, the value a
tool's result held for that fact of that entity — while the answer also named the entity. Facts are
read from ``ci.semantic`` envelopes, and from plain rows: any short text field of a row may name the
entity and any other field may be the fact, so a proposal for a tool we never wrapped also says which
field names the entity and which fields settle facts (``settles``).

This needs the runs' content (a profile holds no values), and is proposed only where the same claim
held in most runs whose answer had the field: the rest are what the claim check would have filed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from ..contracts.results import judged_value, read_result
from ..contracts.semantic import fact_rows_of
from ..traces.model import AnswerStep, ToolStep, TracedRun
from ..traces.readings import Missing

# A claim is proposed when it held in at least this many runs, and in at least this share of the
# runs whose answer had its field.
MIN_CLAIM_RUNS: Final = 3
MIN_CLAIM_SHARE: Final = 0.5
# How much of each answer and result is read: answer fields, rows per result, fields per row, the
# length of a text that may name an entity, and the candidate claims remembered (past it, those
# seen in one run only are forgotten: a claim worth proposing recurs).
_MAX_ANSWER_FIELDS: Final = 64
_MAX_ANSWER_DEPTH: Final = 4
_MAX_ROWS: Final = 100
_MAX_ROW_FIELDS: Final = 16
_MAX_ENTITY_CHARS: Final = 64
MAX_CLAIM_CANDIDATES: Final = 50_000
_MAX_ANSWER_CHARS: Final = 65_536

# (agent, answer path, entity, fact field, tool, the row field naming the entity or None for an envelope)
Candidate = tuple[str, str, str, str, str, str | None]


@dataclass(frozen=True, slots=True)
class ClaimProposal:
    """One claim: the answer field, the entity and fact it states, the tool that settles it, and
    the runs it held in out of those whose answer had the field."""

    agent: str
    path: str
    entity: str
    field: str
    tool: str
    entity_field: str | None
    held: int
    runs_with_field: int


def _scalar(value: object) -> str | None:
    """A value as the claim check compares it: text stripped and folded, numbers by value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        number = float(value)
        return repr(int(number)) if number.is_integer() else repr(number)
    if isinstance(value, str):
        text = value.strip().casefold()
        return text or None
    return None


def _leaves(value: object, path: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    if depth > _MAX_ANSWER_DEPTH or not isinstance(value, Mapping):
        return
    for key, child in list(value.items())[:_MAX_ANSWER_FIELDS]:
        if not isinstance(key, str) or not key.isidentifier():
            continue
        here = f"{path}.{key}" if path else key
        if isinstance(child, Mapping):
            yield from _leaves(child, here, depth + 1)
        elif (folded := _scalar(child)) is not None:
            yield here, folded


def _structured(step: AnswerStep) -> Mapping[str, object] | None:
    """The answer as a JSON object: its typed output, else its text when that is one (a typed
    answer recorded as text, as the claim check reads it too)."""
    if isinstance(step.output, Mapping):
        return step.output
    text = step.text
    if isinstance(text, str) and text[:1] == "{" and len(text) <= _MAX_ANSWER_CHARS:
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            return None
        return parsed if isinstance(parsed, dict) else None
    return None


def _key_fields(rows: Sequence[Mapping[str, object]]) -> frozenset[str]:
    """The fields that may name a row's entity: text that differs from row to row (a key). With
    one row, any text field may."""
    values: dict[str, set[object]] = {}
    for row in rows:
        for key, value in list(row.items())[:_MAX_ROW_FIELDS]:
            if isinstance(key, str) and isinstance(value, str):
                values.setdefault(key, set()).add(value)
    return frozenset(key for key, seen in values.items() if len(seen) == len(rows))


def _facts(step: ToolStep) -> Iterator[tuple[str, str, str, str | None]]:
    """(entity, fact field, folded value, entity field) for what one tool result settles or may."""
    result = step.result
    if isinstance(result, Missing):
        return
    settled = fact_rows_of(result, tool_name=step.tool_name, call_id=step.call_id, epoch=0)
    if settled:
        for fact in settled[:_MAX_ROWS]:
            folded = _scalar(fact.value)
            if folded is not None:
                yield fact.entity.strip(), fact.field, folded, None
        return
    try:
        reading = read_result(judged_value(result))
    except Exception:  # a result the reader cannot take settles nothing
        return
    if not reading.is_rowset:
        return
    rows = reading.rows[:_MAX_ROWS]
    keys = _key_fields(rows)
    for row in rows:
        fields = [
            (k, v) for k, v in list(row.items())[:_MAX_ROW_FIELDS] if isinstance(k, str) and k.isidentifier()
        ]
        for entity_field, entity in fields:
            if entity_field not in keys or not isinstance(entity, str) or not entity.strip():
                continue
            if len(entity) > _MAX_ENTITY_CHARS:
                continue
            for fact_field, value in fields:
                if fact_field != entity_field and (folded := _scalar(value)) is not None:
                    yield entity.strip(), fact_field, folded, entity_field


@dataclass(slots=True)
class ClaimsEvidence:
    """Candidate claims counted over runs (each at most once a run), bounded."""

    held: dict[Candidate, int] = field(default_factory=dict)
    # (agent, answer path) -> runs whose structured answer had that field.
    runs_with_field: dict[tuple[str, str], int] = field(default_factory=dict)

    def observe(self, run: TracedRun) -> None:
        answers = [
            output for step in run.steps if isinstance(step, AnswerStep) and (output := _structured(step))
        ]
        if not answers:
            return
        leaves: dict[str, str] = {}
        for answer in answers:
            leaves.update(_leaves(answer))
        if not leaves:
            return
        agent = run.agent_name
        for path in leaves:
            key = (agent, path)
            self.runs_with_field[key] = self.runs_with_field.get(key, 0) + 1
        named = set(leaves.values())
        by_value: dict[str, list[str]] = {}
        for path, value in leaves.items():
            by_value.setdefault(value, []).append(path)
        found: set[Candidate] = set()
        for step in run.steps:
            if not isinstance(step, ToolStep):
                continue
            for entity, fact_field, value, entity_field in _facts(step):
                paths = by_value.get(value)
                folded_entity = entity.casefold()
                if not paths or folded_entity not in named:
                    continue
                for path in paths:
                    if leaves.get(path) == folded_entity and entity_field is not None:
                        continue  # the field naming the entity is not a claim about it
                    found.add((agent, path, entity, fact_field, step.tool_name, entity_field))
        for candidate in found:
            self.held[candidate] = self.held.get(candidate, 0) + 1
        if len(self.held) > MAX_CLAIM_CANDIDATES:
            self.held = {key: count for key, count in self.held.items() if count > 1}

    def proposals(self) -> tuple[ClaimProposal, ...]:
        """The best-held claim per answer field, where it held often enough."""
        best: dict[tuple[str, str], tuple[int, Candidate]] = {}
        for candidate, count in self.held.items():
            key = (candidate[0], candidate[1])
            if key not in best or count > best[key][0]:
                best[key] = (count, candidate)
        out = []
        for key, (count, candidate) in sorted(best.items()):
            runs = self.runs_with_field.get(key, 0)
            if count >= MIN_CLAIM_RUNS and count >= MIN_CLAIM_SHARE * runs:
                agent, path, entity, fact_field, tool, entity_field = candidate
                out.append(ClaimProposal(agent, path, entity, fact_field, tool, entity_field, count, runs))
        return tuple(out)


def settles_of(claims: Iterable[ClaimProposal]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Tool -> (the row field naming the entity, the fields settling facts) the claims need, for the
    tools whose rows are plain rows (an envelope says it itself)."""
    out: dict[str, tuple[str, list[str]]] = {}
    for claim in claims:
        if claim.entity_field is None:
            continue
        entity_field, facts = out.setdefault(claim.tool, (claim.entity_field, []))
        if entity_field == claim.entity_field and claim.field not in facts:
            facts.append(claim.field)
    return {tool: (entity_field, tuple(facts)) for tool, (entity_field, facts) in out.items()}
