"""A run read from spans: the steps the judge replays, in the order the agent took them.

:class:`TracedRun` is what the assembler hands out for each agent run found in a trace, whatever the
dialect its spans were written in. Its steps are in the loop's own data model, the same the
in-process integrations feed the judge; ``notes`` and ``missing`` say what had to be assumed and
what could not be seen, so a report never reads "passed" where it means "could not look".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..loop import ModelResponse, RequestFrame
from .readings import Missing

# How a tool step's call id was found: recorded on the span, or joined to the model's call by the
# tool's name and the order of the calls (the Agents SDK exports no call id), or made up because
# no model call named the tool (the call is judged alone, and the report says so).
CallIdSource = Literal["recorded", "joined", "invented"]


@dataclass(frozen=True, slots=True)
class ModelStep:
    """A model call: the request (``None`` if not captured) and the response (likewise)."""

    span_id: str
    start_time_unix_nano: int | None
    request: RequestFrame | None
    response: ModelResponse | None
    missing: tuple[Missing, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolStep:
    """A tool execution: its arguments and raw result, either possibly :class:`Missing`."""

    span_id: str
    start_time_unix_nano: int | None
    tool_name: str
    call_id: str
    call_id_source: CallIdSource
    arguments: Mapping[str, Any] | Missing
    result: object


@dataclass(frozen=True, slots=True)
class AnswerStep:
    """The run's final answer; ``span_id`` is the span it was read from (the run span, usually)."""

    span_id: str
    text: str | None
    output: object = None


Step = ModelStep | ToolStep | AnswerStep


@dataclass(frozen=True, slots=True)
class TracedRun:
    """One agent run read from a trace.

    ``span_id`` is the run's span: the agent span, or the trace's root where no span says it is an
    agent run (``notes`` then says so). ``dialects`` are the dialects that read its spans, in the
    detector's order. ``missing`` holds what the run as a whole lacks (spans whose parent is not in
    the trace, a final answer that was never recorded).
    """

    trace_id: str
    span_id: str
    agent_name: str
    steps: tuple[Step, ...]
    dialects: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    missing: tuple[Missing, ...] = ()
    service: str | None = None
    start_time_unix_nano: int | None = None
    end_time_unix_nano: int | None = None
    span_count: int = 0
