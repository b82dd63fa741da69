"""A run read from spans: the steps the judge replays, in the order the agent took them.

:class:`TracedRun` is what the assembler hands out for each agent run found in a trace, whatever the
dialect its spans were written in. Its steps are in the loop's own data model, the same the
in-process integrations feed the judge; ``notes`` and ``missing`` say what had to be assumed and
what could not be seen, so a report never reads "passed" where it means "could not look".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..loop import ModelResponse, RequestFrame
from .readings import Missing

# How a tool step's call id was found: recorded on the span, or joined to the model's call by the
# tool's name and the order of the calls (the Agents SDK exports no call id), or made up because
# no model call named the tool (the call is judged alone, and the report says so).
CallIdSource = Literal["recorded", "joined", "invented"]

# What a run lacks when spans of its trace were not read (past a bound, or after it was judged): any
# seam may have had work among them, so every armed check of the run reads unreachable once for it.
SPANS_NOT_READ: Final = "spans of its trace"


@dataclass(frozen=True, slots=True)
class ModelStep:
    """A model call: the request (``None`` if not captured) and the response (likewise).

    ``error`` is set when the span ended in error (the provider failed): like a call that raised in
    process, it has no response to judge. ``name`` is the span's name, for the report.
    """

    span_id: str
    start_time_unix_nano: int | None
    request: RequestFrame | None
    response: ModelResponse | None
    missing: tuple[Missing, ...] = ()
    name: str = ""
    end_time_unix_nano: int | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ToolStep:
    """A tool execution: its arguments and raw result, either possibly :class:`Missing`.

    ``error`` is set when the tool raised (the span ended in error): as in process, a call that
    raised has no result to judge.
    """

    span_id: str
    start_time_unix_nano: int | None
    tool_name: str
    call_id: str
    call_id_source: CallIdSource
    arguments: Mapping[str, Any] | Missing
    result: object
    name: str = ""
    end_time_unix_nano: int | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class AnswerStep:
    """The run's final answer; ``span_id`` is the span it was read from (the run span, usually).

    ``time_unix_nano`` orders it among the steps when it is known (an answer given mid-run, before a
    follow-up turn); without it the answer comes last.
    """

    span_id: str
    text: str | None
    output: object = None
    time_unix_nano: int | None = None


@dataclass(frozen=True, slots=True)
class ToolsetStep:
    """The application suspended a group of tools (``tools``), or resumed it (``tools`` is ``None``):
    ``run.suspend`` / ``run.resume``, as the run span recorded it."""

    span_id: str
    group: str
    tools: tuple[str, ...] | None
    time_unix_nano: int | None = None


Step = ModelStep | ToolStep | AnswerStep | ToolsetStep


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
    # The run span's name and status (``"unset"``, ``"ok"``, ``"error"``), for the report.
    name: str = ""
    status: str = "unset"
    status_message: str = ""
    # The profile an in-process run wrote on its summary span (JSON text), when it did.
    profile: str | None = None
