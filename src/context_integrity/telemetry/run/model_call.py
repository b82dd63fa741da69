"""One model call in flight: :class:`ModelCall`, a ``chat {model}`` span judged at the compose,
wire and choice seams.

The open call is also this context's current model call (:func:`current_model_call`): a wire
reader runs inside the SDK call the application makes while the model call is open, and finds
through it the request the body it read was composed from.

Never break the host: every piece of our own work is wrapped, logged and recorded.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from opentelemetry import context as otel_context
from opentelemetry.trace import Span, SpanKind
from opentelemetry.util.types import AttributeValue

from ...findings import ExternalGrounding, Finding
from ..emit import SpanEmitter, clipped, record_internal_error, record_judge_errors, set_content, set_text
from ..schema import names
from ..schema.content import request_content, response_content
from ..spans import CHAT, HeldSpan, find_host_span, start_held, tracer_of

if TYPE_CHECKING:
    from ...loop import ModelResponse, RequestFrame, ToolCall
    from ..instrumentation import Instrumentation
    from .lifecycle import Run

_current_call: contextvars.ContextVar[ModelCall | None] = contextvars.ContextVar(
    "context_integrity_model_call", default=None
)


def current_model_call() -> ModelCall | None:
    """The model call open in this context (between ``run.request`` and its end), if any.

    A wire reader runs inside the SDK call the application makes while the model call is
    open, so this is how it finds the request the body it read was composed from.
    """
    call = _current_call.get()
    return call if call is not None and not call.ended else None


class ModelCall:
    """One model call in flight: a ``chat {model}`` span judged at the compose and choice seams.

    The span is the host's own model-call span where there is one (``host_span``, or the current
    span when it is a host's ``chat`` / OpenInference LLM span); else ours, under the run span.
    """

    def __init__(
        self, agent_run: Run, frame: RequestFrame, model: str, *, host_span: Span | None = None
    ) -> None:
        self.run = agent_run
        self.frame = frame
        self.model = model
        self.span: Span | None = None
        self.findings: list[Finding] = []
        self.excusals: list[ExternalGrounding] = []
        self._ended = False
        self._wired = False
        self._call_token: contextvars.Token[ModelCall | None] | None = _current_call.set(self)
        self._held: HeldSpan | None = None
        self._inst: Instrumentation | None = None
        self._emitting: SpanEmitter | None = None
        judged = False
        try:
            inst = self._inst = agent_run._inst
            here = otel_context.get_current()
            adopted = find_host_span(CHAT, span=host_span, context=here, run_span=agent_run.span)
            if adopted is not None:  # the host's, only enriched: never made current by us
                self._held = held = HeldSpan(adopted, owned=False)
            else:
                span_name, attributes = _static_of(model)
                parent = agent_run.child_context(here)
                self._held = held = start_held(
                    inst.tracer if inst is not None else tracer_of(None),
                    span_name,
                    kind=SpanKind.CLIENT,
                    attributes=dict(attributes),  # a copy: a sampler is handed the dict it is given
                    parent=parent,
                    activate=False,
                )
            self.span = held.span
            if inst is not None and inst.capture_content:
                # The request as the model received it, so the run can be read back and judged again.
                for key, value in request_content(frame).items():
                    set_content(held.span, key, value, owned=held.owned, hook=inst.redact)
            if agent_run.judge is not None:
                judged = True
                found = agent_run.judge.compose(frame)
                # A request is about no call yet: each finding names its own consumer tool.
                self._file(found)
        except Exception as ours:
            record_internal_error(self.span, "judging a request", ours)
            if not judged and agent_run.judge is not None:
                # The request was never handed to the judge: its encounter still counts.
                agent_run.judge.note_unreachable("compose", "judging a request", ours)

    def _emitter(self) -> SpanEmitter | None:
        """The span's emitter, made the first time a call has something to put on its span."""
        emitter = self._emitting
        if emitter is None and self._held is not None:
            emitter = self._emitting = SpanEmitter(self._held.span, self._inst)
        return emitter

    def _file(self, found: Sequence[Finding], call_ids: Sequence[str | None] = ()) -> None:
        judge = self.run.judge
        if judge is None:
            return
        # Three times a call, nearly always with nothing to hand over: looked at before it is taken.
        if judge.internal_errors:
            record_judge_errors(self.span, judge)
        passes = judge.take_passes() if judge.passes else ()
        if found or passes:
            emitter = self._emitter()
            if emitter is not None:
                if found:
                    self.findings.extend(found)
                    emitter.findings(found, call_ids=call_ids)
                emitter.passes(passes)

    @property
    def ended(self) -> bool:
        return self._ended

    def wire(self, tool_names: frozenset[str] | None, *, source: str | None = None) -> None:
        """What a wire reader read back from the serialized request body (the wire seam).

        ``None`` when the reader saw the body and could not read it. Called by the wire reader;
        a call whose body no reader saw is judged ``unreachable`` when it ends.
        """
        if self._ended:
            return
        self._wired = True
        try:
            judge = self.run.judge
            if judge is not None:
                self._file(judge.wire(self.frame, tool_names, source=source))
        except Exception as ours:
            record_internal_error(self.span, "judging the wire", ours)

    def _close_wire(self) -> None:
        if not self._wired:
            self.wire(None)

    def respond(
        self,
        response: ModelResponse | None = None,
        *,
        calls: Sequence[ToolCall] = (),
        text: str | None = None,
    ) -> None:
        """Report the response (the choice seam) and end the ``chat`` span."""
        if self._ended:
            return
        judge = self.run.judge
        judged = False
        try:
            self._close_wire()
            if response is None:
                from ...loop import ModelResponse  # loaded with the judge by the time a model answers

                response = ModelResponse(calls=tuple(calls), text=text)
            reply = response
            if reply.response_id and self._held is not None:
                set_text(self._held.span, names.GEN_AI_RESPONSE_ID, reply.response_id, owned=self._held.owned)
            if self._inst is not None and self._inst.capture_content and self._held is not None:
                set_content(
                    self._held.span,
                    names.GEN_AI_OUTPUT_MESSAGES,
                    response_content(reply),
                    owned=self._held.owned,
                    hook=self._inst.redact,
                )
            for call in reply.calls:
                # A host's garbage entry among the calls names no call to expect; the check reads it.
                # A plain try rather than ``contextlib.suppress``: this runs for every call asked for.
                try:  # noqa: SIM105
                    self.run.expect_call(call.name, call.call_id)
                except Exception:
                    pass
            if judge is not None:
                judged = True
                verdict = judge.choice(self.frame, reply)
                self._file(verdict.findings, verdict.call_ids)
                if verdict.excusals or verdict.unreachable:
                    self.excusals.extend(verdict.excusals)
                    emitter = self._emitter()
                    if emitter is not None:
                        emitter.excusals(verdict.excusals)
                        emitter.unreachable(verdict.unreachable)
        except Exception as ours:
            record_internal_error(self.span, "judging a response", ours)
            if not judged and judge is not None:
                judge.note_unreachable("choice", "judging a response", ours)
        finally:
            self.end()

    def end(self, error: BaseException | None = None) -> None:
        if self._ended:
            return
        self._close_wire()
        self._ended = True
        token, self._call_token = self._call_token, None
        # Ended from another context (a task that outlived its call, a host whose hooks each run in
        # a task of their own): nothing to restore there, and asked first rather than raised.
        if token is not None and _current_call.get() is self:
            try:  # noqa: SIM105 - a plain try: this runs on every model call
                _current_call.reset(token)
            except Exception:
                pass
        if self._held is None:
            return
        try:
            self._held.end(error)
        except Exception as ours:
            record_internal_error(None, "ending a chat span", ours)

    def __enter__(self) -> ModelCall:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.end(exc)


@functools.lru_cache(maxsize=256)
def _static_of(model: str) -> tuple[str, Mapping[str, AttributeValue]]:
    """What a model's chat spans start with (the name, the attributes, clipped as
    :func:`.emit.clipped` would), made once per model: no call changes them."""
    return names.chat_span_name(model), clipped(
        {names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT, names.GEN_AI_REQUEST_MODEL: model}
    )
