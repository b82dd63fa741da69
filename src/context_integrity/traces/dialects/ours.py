"""Our own spans, so a run recorded here can be judged again under new declarations.

We write the GenAI conventions (:mod:`.genai`) under our instrumentation scope
(``context_integrity``), with content capture (``setup(capture_content=True)``) putting on each
span what a later judge needs: the run span's question and answers, each ``chat`` span's request
(messages, system instructions, tools offered) and response, each ``execute_tool`` span's arguments
and result. Four things are ours alone, and read here:

- content is clipped when it is written (:data:`~context_integrity.limits.MAX_CONTENT_CHARS`): a value
  cut short is no longer JSON, and reads as :class:`~..readings.Missing` saying so;
- a declared absence (``ci.absent``) is recorded as its sentence and read back as one;
- what the application told the run of its toolsets (``run.suspend`` / ``run.resume``) is recorded as
  events on the run span, and replayed where it was said;
- the run's summary span and the grouping span of a ``ci.run`` written around a framework's run
  are no agent work (the findings and ledger they carry are the old judgment, not evidence).

Without content capture our spans say which calls happened and nothing of what they carried: each
check reads ``unreachable`` with that reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ...contracts.results import Absence
from ...telemetry.schema import names
from ...telemetry.schema.content import ANSWER_TIME
from ..readings import (
    AgentReading,
    AnswerReading,
    Missing,
    ProfileReading,
    Reading,
    ToolReading,
    ToolsetChange,
)
from ..spans import Span
from ..values import structured
from .genai import messages_from, read_genai

KEY: Final = "ours"

_ABSENCE_SENTENCE: Final = str(Absence())
_REASON_MARK: Final = " Reason: "
_NOT_WORK: Final = frozenset({names.DISPOSITION_SPAN})
_TOOLSET_EVENTS: Final = frozenset({names.TOOLSET_SUSPENDED_EVENT, names.TOOLSET_RESUMED_EVENT})


def _absence(result: object) -> object:
    """Our recording of ``ci.absent(...)`` (its sentence, as JSON text) as the absence it was."""
    if not isinstance(result, str) or not result.startswith(_ABSENCE_SENTENCE):
        return result
    rest = result[len(_ABSENCE_SENTENCE) :]
    if not rest:
        return Absence()
    if rest.startswith(_REASON_MARK):
        return Absence(None, rest[len(_REASON_MARK) :].rstrip("."))
    return result


def _answers(value: object, default_time: int | None) -> tuple[AnswerReading, ...] | Missing:
    """Every answer the run span lists (one per turn), each with when it was given."""
    what = "the run's final answer"
    read = structured(value, key=names.GEN_AI_OUTPUT_MESSAGES, what=what)
    if isinstance(read, Missing):
        return read
    if not isinstance(read, list):
        return Missing(what, f"{names.GEN_AI_OUTPUT_MESSAGES} is not a list of messages")
    out: list[AnswerReading] = []
    for entry in read:
        messages = messages_from([entry])
        if not messages or not isinstance(entry, Mapping):
            continue
        content = messages[0].content
        at = entry.get(ANSWER_TIME)
        out.append(
            AnswerReading(
                content if isinstance(content, str) and content else None,
                None,
                at if isinstance(at, int) and not isinstance(at, bool) else default_time,
            )
        )
    return tuple(out)


def _toolsets(span: Span) -> tuple[ToolsetChange, ...]:
    """What the application told the run of its toolsets (``run.suspend`` / ``run.resume``)."""
    out: list[ToolsetChange] = []
    for event in span.events:
        if event.name not in _TOOLSET_EVENTS:
            continue
        group = event.attributes.get(names.TOOLSET_GROUP)
        if not isinstance(group, str):
            continue
        tools: tuple[str, ...] | None = None
        if event.name == names.TOOLSET_SUSPENDED_EVENT:
            listed = event.attributes.get(names.TOOLSET_TOOLS)
            tools = (
                tuple(t for t in listed if isinstance(t, str)) if isinstance(listed, (list, tuple)) else ()
            )
        out.append(ToolsetChange(group, tools, event.time_unix_nano))
    return tuple(out)


def read_ours(span: Span) -> Reading | None:
    if span.name in _NOT_WORK:
        # The old judgment is not evidence; the profile beside it is (names and counts, for suggest).
        profile = span.attributes.get(names.PROFILE)
        return ProfileReading(profile) if isinstance(profile, str) and profile else None
    if span.attributes.get(names.GEN_AI_OPERATION_NAME) == names.OPERATION_USER_RUN:
        return None  # the grouping span around a framework's run: the framework's span is the run
    reading = read_genai(span)
    if isinstance(reading, ToolReading):
        result = _absence(reading.result)
        if result is not reading.result:
            return ToolReading(reading.tool_name, reading.call_id, reading.arguments, result)
    if isinstance(reading, AgentReading):
        toolsets = _toolsets(span) if span.events else ()
        value = span.attributes.get(names.GEN_AI_OUTPUT_MESSAGES)
        if value is None:
            return AgentReading(
                reading.agent_name, reading.answer, missing=reading.missing, toolsets=toolsets
            )
        answers = _answers(value, span.end_time_unix_nano)
        if isinstance(answers, Missing):
            return AgentReading(reading.agent_name, missing=(answers,), toolsets=toolsets)
        return AgentReading(
            reading.agent_name, answers[-1] if answers else None, answers=answers, toolsets=toolsets
        )
    return reading


class OursDialect:
    """The spans this library writes (instrumentation scope ``context_integrity``)."""

    key = KEY
    # What every span it claims carries (see Dialect.claims): our instrumentation scope's name.
    signs: Final = (names.INSTRUMENTATION_NAME,)

    def claims(self, span: Span) -> bool:
        return span.scope == names.INSTRUMENTATION_NAME

    def read(self, span: Span) -> Reading | None:
        return read_ours(span)


DIALECT: Final = OursDialect()
