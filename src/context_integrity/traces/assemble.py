"""The run assembler: spans, in any order, grouped by trace into the runs the judge replays.

Spans are exported as they end, children before their parents, so a trace's root span is the last
of it to arrive. A trace's runs are handed out as soon as its root has arrived, when the source says
the trace is whole (:class:`~.sources.TraceComplete`), or at the end of the source; memory follows
the traces in flight (:data:`~context_integrity.limits.MAX_OPEN_TRACES_JUDGED`, and the characters of
content they hold, :data:`~context_integrity.limits.MAX_HELD_TRACE_CHARS`), never the size of the
source. Each span is read by its dialect as it arrives (:mod:`.detect`) and only the reading kept.

A run is an agent span with everything under it: nested agent spans fold into the outermost one. A
trace with agent work and no agent span at all is one run rooted at the trace's root, and says so.
Its steps are ordered by start time; each tool execution is joined to the model's call by the call id
it carries, else by the tool's name and the order of the calls (said: the Agents SDK exports none),
else judged under a made-up id (said). Duplicate span ids, spans whose parent is not in the trace,
spans that arrive after their trace was judged, spans past the bounds: counted and said, never a
traceback.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..limits import MAX_HELD_TRACE_CHARS, MAX_OPEN_TRACES_JUDGED, MAX_SPANS_PER_TRACE
from ..loop import Message, ModelResponse, RequestFrame
from ..telemetry.schema import names
from ..text import clip, plural
from .detect import detect
from .dialects import DIALECTS, Dialect
from .dialects.ours import KEY as OURS
from .model import SPANS_NOT_READ, AnswerStep, CallIdSource, ModelStep, Step, ToolsetStep, ToolStep, TracedRun
from .readings import (
    AgentReading,
    AnswerReading,
    Missing,
    ModelCallReading,
    ProfileReading,
    Reading,
    ToolReading,
    ToolsetChange,
)
from .spans import Span

Say = Callable[[str], None]

_SERVICE_NAME: Final = "service.name"
# Traces judged and forgotten, remembered so a span arriving after its trace is named as such.
_REMEMBERED_DONE: Final = 4 * MAX_OPEN_TRACES_JUDGED
# Span names and scopes quoted when a trace's dialect is unknown.
_QUOTED: Final = 3
# How many more spans a trace rooted in our own run span waits for the summary span written right
# after it (the two can be a batch apart when other threads' spans land between them); past it, the
# trace is judged without the summary.
_SUMMARY_GRACE_SPANS: Final = 256


@dataclass(slots=True)
class _Held:
    """What a trace keeps of one span of agent work: its place, its times, its reading."""

    span_id: str
    parent_id: str | None
    name: str
    start: int | None
    end: int | None
    status: str
    status_message: str
    service: str | None
    dialect: str
    reading: Reading
    order: int


@dataclass(slots=True)
class _Trace:
    trace_id: str
    parents: dict[str, str | None] = field(default_factory=dict)
    work: list[_Held] = field(default_factory=list)
    chars: int = 0
    claimed: bool = False
    root: str | None = None
    duplicates: int = 0
    dropped: int = 0
    unclaimed_names: list[str] = field(default_factory=list)
    unclaimed_scopes: list[str] = field(default_factory=list)
    # Our own summary span has arrived (it usually follows our run span; it may precede it).
    summarized: bool = False


def _chars(span: Span) -> int:
    """The characters of text a span carries: the measure of what reading it keeps."""
    total = len(span.name)
    for value in span.attributes.values():
        if type(value) is str:
            total += len(value)
    for event in span.events:
        for value in event.attributes.values():
            if type(value) is str:
                total += len(value)
    return total


class Assembler:
    """Takes spans in any order; hands out each run once its trace is whole, or at the end."""

    def __init__(
        self,
        say: Say,
        *,
        dialects: Sequence[Dialect] = DIALECTS,
        max_open_traces: int = MAX_OPEN_TRACES_JUDGED,
        max_held_chars: int = MAX_HELD_TRACE_CHARS,
        max_spans_per_trace: int = MAX_SPANS_PER_TRACE,
        whole_traces: bool = False,
    ) -> None:
        self._say = say
        # A source of whole traces marks each (TraceComplete), its spans in no order: the root span's
        # arrival then says nothing of the rest.
        self._settle_on_root = not whole_traces
        self._dialects = dialects
        self._max_open = max_open_traces
        self._max_chars = max_held_chars
        self._max_spans = max_spans_per_trace
        self._traces: OrderedDict[str, _Trace] = OrderedDict()
        self._done: OrderedDict[str, int] = OrderedDict()
        self._held_chars = 0
        self._order = 0
        # Traces whose root is our own run span, waiting for the summary span we write just after it
        # ends (it may carry the run's profile): trace id -> the span count when the root arrived.
        self._awaiting_summary: OrderedDict[str, int] = OrderedDict()
        self.spans = 0
        self.late = 0
        self.runs = 0

    # ── taking spans in ──────────────────────────────────────────────
    def add(self, span: Span) -> Iterator[TracedRun]:
        """Take one span; the runs its arrival made whole."""
        self.spans += 1
        trace_id = span.trace_id
        while self._awaiting_summary:
            waiting, since = next(iter(self._awaiting_summary.items()))
            if waiting == trace_id or self.spans - since <= _SUMMARY_GRACE_SPANS:
                break
            del self._awaiting_summary[waiting]  # its summary never came: judged without it
            if waiting in self._traces:
                yield from self._settle(waiting)
        trace = self._traces.get(trace_id)
        if trace is None:
            if trace_id in self._done:
                self._late(span)
                return
            trace = self._traces[trace_id] = _Trace(trace_id)
            if len(self._traces) > self._max_open:
                oldest = next(iter(self._traces))
                self._say(
                    f"trace {oldest} was still waiting for its root span when more than {self._max_open} traces "
                    "were open; it is judged with what it had"
                )
                yield from self._settle(oldest)
        if span.span_id in trace.parents:
            trace.duplicates += 1
            return
        if len(trace.parents) >= self._max_spans:
            trace.dropped += 1
            return
        trace.parents[span.span_id] = span.parent_span_id
        if span.parent_span_id is None:
            trace.root = span.span_id
        dialect, reading = detect(span, self._say, self._dialects)
        if dialect is None:
            if len(trace.unclaimed_names) < _QUOTED and span.name not in trace.unclaimed_names:
                trace.unclaimed_names.append(span.name)
            if (
                span.scope
                and len(trace.unclaimed_scopes) < _QUOTED
                and span.scope not in trace.unclaimed_scopes
            ):
                trace.unclaimed_scopes.append(span.scope)
        else:
            trace.claimed = True
        if reading is not None:
            size = _chars(span)
            if trace.chars + size > self._max_chars:
                trace.dropped += 1
                del trace.parents[span.span_id]
                return
            trace.chars += size
            self._held_chars += size
            service = span.resource.get(_SERVICE_NAME)
            self._order += 1
            trace.work.append(
                _Held(
                    span.span_id,
                    span.parent_span_id,
                    span.name,
                    span.start_time_unix_nano,
                    span.end_time_unix_nano,
                    span.status,
                    span.status_message,
                    service if isinstance(service, str) else None,
                    dialect.key if dialect is not None else "",
                    reading,
                    self._order,
                )
            )
            while self._held_chars > self._max_chars and next(iter(self._traces)) != trace_id:
                oldest = next(iter(self._traces))
                self._say(
                    f"trace {oldest} was still waiting for its root span when the traces in flight held more "
                    f"than {self._max_chars:,} characters of content; it is judged with what it had"
                )
                yield from self._settle(oldest)
        if span.name == names.DISPOSITION_SPAN:
            trace.summarized = True
            if trace_id in self._awaiting_summary:
                del self._awaiting_summary[trace_id]
                yield from self._settle(trace_id)
        elif span.parent_span_id is None and self._settle_on_root:
            ours = dialect is not None and dialect.key == OURS and isinstance(reading, AgentReading)
            if ours and not trace.summarized:
                self._awaiting_summary[trace_id] = self.spans
            else:
                yield from self._settle(trace_id)

    def complete(self, trace_id: str) -> Iterator[TracedRun]:
        """The source says every span of ``trace_id`` has arrived."""
        if trace_id in self._traces:
            yield from self._settle(trace_id)

    def finish(self) -> Iterator[TracedRun]:
        """The end of the source: every trace still open, judged with what it has."""
        while self._traces:
            yield from self._settle(next(iter(self._traces)))

    def _late(self, span: Span) -> None:
        # A span after its trace was judged: said only when it carries agent work (our own summary
        # span, written when the run span ends, is expected after it).
        _, reading = detect(span, lambda text: None, self._dialects)
        if reading is None:
            return
        self.late += 1
        self._done[span.trace_id] += 1
        if self._done[span.trace_id] == 1:
            self._say(
                f"span {clip(span.name, 60)!r} ({span.span_id}) of trace {span.trace_id} arrived after its trace "
                "was judged (its root span had arrived); it is not judged, and later ones of that trace are counted"
            )

    # ── settling a trace ────────────────────────────────────────────
    def _settle(self, trace_id: str) -> Iterator[TracedRun]:
        self._awaiting_summary.pop(trace_id, None)
        trace = self._traces.pop(trace_id)
        self._held_chars -= trace.chars
        self._done[trace_id] = 0
        while len(self._done) > _REMEMBERED_DONE:
            self._done.popitem(last=False)
        self._say_about(trace)
        for run in _runs_of(trace, self._say):
            self.runs += 1
            yield run

    def _say_about(self, trace: _Trace) -> None:
        if trace.duplicates:
            self._say(
                f"trace {trace.trace_id}: {plural(trace.duplicates, 'span')} arrived a second time with the same "
                "span id; the first copy of each was read"
            )
        if trace.dropped:
            self._say(
                f"trace {trace.trace_id}: {plural(trace.dropped, 'span')} past the bound on one trace "
                f"({self._max_spans:,} spans, {self._max_chars:,} characters of content) were not read; "
                "its runs are judged with what came before"
            )
        if not trace.claimed and trace.parents:
            scopes = (
                f"; scopes {', '.join(map(repr, trace.unclaimed_scopes))}" if trace.unclaimed_scopes else ""
            )
            self._say(
                f"trace {trace.trace_id}: no span is in a dialect this reader knows ({plural(len(trace.parents), 'span')}, "
                f"e.g. {', '.join(repr(clip(n, 40)) for n in trace.unclaimed_names)}{scopes}); nothing in it could be judged"
            )


# ── a trace's runs ──────────────────────────────────────────────────────


def _runs_of(trace: _Trace, say: Say) -> Iterator[TracedRun]:
    if not trace.work:
        return
    parents = trace.parents
    agents = {held.span_id: held for held in trace.work if isinstance(held.reading, AgentReading)}
    outer: dict[str, str | None] = {}

    def outermost(span_id: str) -> str | None:
        """The outermost agent span at or above ``span_id`` (``None``: none)."""
        chain: list[str] = []
        current: str | None = span_id
        while current is not None and current not in outer and len(chain) <= len(parents):
            chain.append(current)
            current = parents.get(current)
        top = outer.get(current) if current is not None else None
        for visited in reversed(chain):  # from the top down: the first agent met is the outermost
            if top is None and visited in agents:
                top = visited
            outer[visited] = top
        return outer[span_id]

    broken = sum(1 for span_id, parent in parents.items() if parent is not None and parent not in parents)
    groups: dict[str | None, list[_Held]] = {}
    for held in trace.work:
        groups.setdefault(outermost(held.span_id), []).append(held)
    loose = groups.pop(None, [])
    notes: list[str] = []
    if broken and len(parents) > 1:
        say(
            f"trace {trace.trace_id}: {plural(broken, 'span')} hang from a parent that is not in the trace "
            "(a span missing from the export, or a trace cut short)"
        )
    if not groups:
        root = trace.root or loose[0].span_id
        notes.append(
            f"no span in this trace says it is an agent run; its {plural(len(loose), 'span')} of agent work "
            f"are judged as one run rooted at the trace's root span ({root})"
        )
        yield _run(trace, None, root, loose, notes)
        return
    if loose:
        if len(groups) == 1:
            notes.append(
                f"{plural(len(loose), 'span')} of agent work sit outside the agent span (their parent is not in "
                "the trace, or they ran before the agent did); they are judged as part of this run"
            )
            (only,) = groups
            groups[only].extend(loose)
        else:
            say(
                f"trace {trace.trace_id}: {plural(len(loose), 'span')} of agent work sit outside every agent span "
                f"of the trace's {len(groups)} runs; they are not judged"
            )
    for agent_id, members in groups.items():
        assert agent_id is not None
        yield _run(trace, agents[agent_id], agent_id, members, list(notes))


def _not_read(trace: _Trace) -> tuple[Missing, ...]:
    if not trace.dropped:
        return ()
    return (
        Missing(
            SPANS_NOT_READ,
            f"{plural(trace.dropped, 'span')} of the trace past the bound on one trace were not read, "
            "so the run is judged with what came before them",
        ),
    )


def _run(trace: _Trace, agent: _Held | None, root: str, members: list[_Held], notes: list[str]) -> TracedRun:
    members.sort(key=lambda held: (held.start or 0, held.end or 0, held.order))
    missing: list[Missing] = list(_not_read(trace))
    answers: tuple[AnswerReading, ...] = ()
    toolsets: tuple[ToolsetChange, ...] = ()
    agent_name: str | None = None
    if agent is not None:
        reading = agent.reading
        assert isinstance(reading, AgentReading)
        agent_name = reading.agent_name
        answers = reading.answers or ((reading.answer,) if reading.answer is not None else ())
        toolsets = reading.toolsets
        missing.extend(reading.missing)
    nested = [h for h in members if isinstance(h.reading, AgentReading) and h is not agent]
    if nested:
        notes.append(
            f"{plural(len(nested), 'nested agent span')} ({', '.join(clip(h.name, 40) for h in nested[:_QUOTED])}) "
            "folded into this run: one judge for the whole run"
        )
    steps: list[tuple[int, int, Step]] = []
    models = [h for h in members if isinstance(h.reading, ModelCallReading)]
    tools = [h for h in members if isinstance(h.reading, ToolReading)]
    joined = _joined_calls(models, tools)
    names_by_call = _tool_names(models, tools, joined)
    previous: tuple[Message, ...] = ()
    for held in models:
        step = _model_step(held, names_by_call, previous)
        if step.request is not None:
            previous = step.request.messages
        steps.append((held.start or 0, held.order, step))
    counts: dict[CallIdSource, int] = {"recorded": 0, "joined": 0, "invented": 0}
    for held in tools:
        call_id, source = joined[held.span_id]
        counts[source] += 1
        steps.append((held.start or 0, held.order, _tool_step(held, call_id, source)))
    if counts["joined"]:
        notes.append(
            f"{plural(counts['joined'], 'tool execution')} carry no call id: each was joined to the model's "
            "call of the same tool in the order the calls were made, so which call a result answers is inferred"
        )
    if counts["invented"]:
        notes.append(
            f"{plural(counts['invented'], 'tool execution')} match no call the model was seen to make; each is "
            "judged under a made-up call id"
        )
    ordered = [step for _, _, step in sorted(steps, key=lambda item: (item[0], item[1]))]
    end = agent.end if agent is not None else max((h.end or 0 for h in members), default=None)
    said_at = agent.span_id if agent is not None else root
    for change in toolsets:
        _place(ordered, ToolsetStep(said_at, change.group, change.tools, change.time_unix_nano))
    for given in answers:
        _place(ordered, AnswerStep(said_at, given.text, given.output, given.time_unix_nano))
    profile = next((h.reading.text for h in members if isinstance(h.reading, ProfileReading)), None)
    head = agent or (members[0] if members else None)
    dialects = tuple(dict.fromkeys(h.dialect for h in members if h.dialect))
    return TracedRun(
        trace_id=trace.trace_id,
        span_id=root,
        agent_name=agent_name or (agent.name if agent is not None else "agent"),
        steps=tuple(ordered),
        dialects=dialects,
        notes=tuple(notes),
        missing=tuple(missing),
        service=head.service if head is not None else None,
        start_time_unix_nano=agent.start
        if agent is not None
        else min((h.start or 0 for h in members), default=None),
        end_time_unix_nano=end,
        span_count=len(members),
        name=agent.name if agent is not None else "",
        status=agent.status if agent is not None else "unset",
        status_message=agent.status_message if agent is not None else "",
        profile=profile,
    )


def _when(step: Step) -> int | None:
    if isinstance(step, (AnswerStep, ToolsetStep)):
        return step.time_unix_nano
    return step.start_time_unix_nano


def _place(ordered: list[Step], step: AnswerStep | ToolsetStep) -> None:
    """Insert what the run span says happened at a moment where it happened: after every step that
    started before it (with no time, last)."""
    at = step.time_unix_nano
    position = len(ordered)
    if at is not None:
        position = next(
            (index for index, other in enumerate(ordered) if (_when(other) or 0) > at), len(ordered)
        )
    ordered.insert(position, step)


def _joined_calls(models: Sequence[_Held], tools: Sequence[_Held]) -> dict[str, tuple[str, CallIdSource]]:
    """Each tool execution's call id and where it came from: recorded on its span; else the first
    call of that tool the model made before it and no execution took; else made up."""
    asked: list[tuple[int, str, str]] = []  # (when the model call started, tool, call id)
    for held in models:
        reading = held.reading
        assert isinstance(reading, ModelCallReading)
        if reading.response is not None:
            asked.extend((held.start or 0, call.name, call.call_id) for call in reading.response.calls)
    taken = {
        reading.call_id
        for held in tools
        if isinstance(reading := held.reading, ToolReading) and reading.call_id is not None
    }
    out: dict[str, tuple[str, CallIdSource]] = {}
    invented = 0
    for held in sorted(tools, key=lambda h: (h.start or 0, h.order)):
        reading = held.reading
        assert isinstance(reading, ToolReading)
        if reading.call_id is not None:
            out[held.span_id] = (reading.call_id, "recorded")
            continue
        match = next(
            (
                entry
                for entry in asked
                if entry[1] == reading.tool_name and entry[2] not in taken and entry[0] <= (held.start or 0)
            ),
            None,
        )
        if match is not None and match[2]:
            taken.add(match[2])
            out[held.span_id] = (match[2], "joined")
        else:
            invented += 1
            out[held.span_id] = (f"{reading.tool_name}-{invented}", "invented")
    return out


def _tool_names(
    models: Iterable[_Held], tools: Iterable[_Held], joined: Mapping[str, tuple[str, CallIdSource]]
) -> dict[str, str]:
    """Call id -> tool name, from every call the model made and every execution seen in the run."""
    names: dict[str, str] = {}
    for held in models:
        reading = held.reading
        if isinstance(reading, ModelCallReading) and reading.response is not None:
            for call in reading.response.calls:
                if call.call_id and call.name:
                    names.setdefault(call.call_id, call.name)
    for held in tools:
        reading = held.reading
        if isinstance(reading, ToolReading):
            names.setdefault(joined[held.span_id][0], reading.tool_name)
    return names


def _named(frame: RequestFrame, names: Mapping[str, str]) -> RequestFrame:
    """``frame`` with each tool message that names only its call id named by its tool too, as the
    frames the integrations build in process are (a window may have dropped the call that asked)."""
    if not names or not any(
        m.role == "tool" and m.tool_name is None and m.tool_call_id for m in frame.messages
    ):
        return frame
    messages = tuple(
        dataclasses.replace(m, tool_name=names[m.tool_call_id])
        if m.role == "tool" and m.tool_name is None and m.tool_call_id is not None and m.tool_call_id in names
        else m
        for m in frame.messages
    )
    return dataclasses.replace(frame, messages=messages)


def _error_of(held: _Held) -> str | None:
    if held.status != "error":
        return None
    return held.status_message or "the span ended in error"


def _shared(frame: RequestFrame, previous: tuple[Message, ...]) -> RequestFrame:
    """``frame`` holding the previous request's very message objects wherever it repeats them.

    In process a host hands each request the messages it already sent; read from spans, every
    request's history is decoded anew. Shared again, the judge's conversation index costs what each
    request added (it follows messages by identity), as it does in process.
    """
    messages = frame.messages
    if not previous or not messages:
        return frame
    start = 0
    if messages[0] != previous[0]:  # a window that dropped the oldest messages: find where it starts
        start = next((index for index, old in enumerate(previous) if old == messages[0]), -1)
        if start < 0:
            return frame
    shared: list[Message] = []
    for index, message in enumerate(messages):
        old = previous[start + index] if start + index < len(previous) else None
        if old is None or (old is not message and old != message):
            shared.extend(messages[index:])
            break
        shared.append(old)
    return dataclasses.replace(frame, messages=tuple(shared))


def _model_step(held: _Held, names: Mapping[str, str], previous: tuple[Message, ...]) -> ModelStep:
    reading = held.reading
    assert isinstance(reading, ModelCallReading)
    request = _shared(_named(reading.request, names), previous) if reading.request is not None else None
    response: ModelResponse | None = reading.response
    return ModelStep(
        span_id=held.span_id,
        start_time_unix_nano=held.start,
        request=request,
        response=response,
        missing=reading.missing,
        name=held.name,
        end_time_unix_nano=held.end,
        error=_error_of(held),
    )


def _tool_step(held: _Held, call_id: str, source: CallIdSource) -> ToolStep:
    reading = held.reading
    assert isinstance(reading, ToolReading)
    return ToolStep(
        span_id=held.span_id,
        start_time_unix_nano=held.start,
        tool_name=reading.tool_name,
        call_id=call_id,
        call_id_source=source,
        arguments=reading.arguments,
        result=reading.result,
        name=held.name,
        end_time_unix_nano=held.end,
        error=_error_of(held),
    )


def assemble(spans: Iterable[Span], say: Say, **options: Any) -> Iterator[TracedRun]:
    """Every run in ``spans`` (for callers holding spans already: a test, one OTLP request)."""
    assembler = Assembler(say, **options)
    for span in spans:
        yield from assembler.add(span)
    yield from assembler.finish()
