"""What a dialect reads from one span: an agent run, a model call, a tool execution or a final answer.

A dialect turns one :class:`~.spans.Span` into at most one reading, in the loop's own data model
(:mod:`context_integrity.loop`), so that the judge sees exactly what it sees in process. What the span
should carry and does not (content capture off, a value the user hid, no call id) is a
:class:`Missing`, never a guess: the replay turns it into an ``unreachable`` encounter with its reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..loop import Message, ModelResponse, RequestFrame


@dataclass(frozen=True, slots=True)
class Missing:
    """Evidence a span does not carry: ``what`` is missing (``"the tool's result"``) and ``why``
    (``"content capture is off: the span has no gen_ai.tool.call.result"``)."""

    what: str
    why: str


@dataclass(frozen=True, slots=True)
class AnswerReading:
    """The run's final answer: its text, and ``output`` (parsed from JSON) when the agent had
    structured output. ``time_unix_nano`` is when it was given, where the dialect says (an answer
    given before a follow-up turn is judged there, not at the run's end)."""

    text: str | None
    output: object = None
    time_unix_nano: int | None = None


@dataclass(frozen=True, slots=True)
class ToolsetChange:
    """What the application told the run of a group of tools, where the dialect records it: the
    group suspended (``tools`` its tools) or resumed (``tools`` is ``None``), and when."""

    group: str
    tools: tuple[str, ...] | None
    time_unix_nano: int | None


@dataclass(frozen=True, slots=True)
class AgentReading:
    """An agent run's span. ``answer`` is the final answer where the dialect writes it on the run
    span (pydantic-ai's ``final_result``); ``messages`` the whole history where it writes that there
    (``pydantic_ai.all_messages``), for runs whose model spans carry no content. ``answers`` holds
    every answer, in order, where the run span records one per conversation turn (``answer`` is then
    the last of them); each is judged where it was given."""

    agent_name: str | None
    answer: AnswerReading | None = None
    messages: tuple[Message, ...] | None = None
    missing: tuple[Missing, ...] = ()
    answers: tuple[AnswerReading, ...] = ()
    toolsets: tuple[ToolsetChange, ...] = ()


@dataclass(frozen=True, slots=True)
class ModelCallReading:
    """One model call: the request as the model received it and the response it gave.

    ``request`` is ``None`` when the span carries no request content, ``response`` when it carries
    no response; ``missing`` says why.
    """

    request: RequestFrame | None
    response: ModelResponse | None
    missing: tuple[Missing, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolReading:
    """One tool execution: the tool, the call id the model gave it (``None`` where the dialect
    exports none), its arguments and its raw result (a JSON string parsed), or why either is
    missing."""

    tool_name: str
    call_id: str | None
    arguments: Mapping[str, Any] | Missing
    result: object


@dataclass(frozen=True, slots=True)
class ProfileReading:
    """A run's profile as an in-process run wrote it on its summary span (names and counts, no
    values: :mod:`context_integrity.judge.profile`), for ``suggest`` to read where content is off."""

    text: str


Reading = AgentReading | ModelCallReading | ToolReading | AnswerReading | ProfileReading
