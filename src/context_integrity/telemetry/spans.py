"""Adoption: the span a host already opened for an operation, or one we start.

A host that traces its own agent (pydantic-ai, Logfire, an OpenInference instrumentor, MCP's
``tools/call``) has already opened the ``invoke_agent``, ``chat`` or ``execute_tool`` span we
would open. Opening a second one would double every operation in the trace, so we adopt the
host's span: our findings go onto it and it stays the host's to end. Where there is no host span,
we start ours and end it ourselves. :class:`HeldSpan` says which, so nobody has to remember.

A host span is recognised by ``gen_ai.operation.name`` (the GenAI conventions) or by
OpenInference's ``openinference.span.kind`` (AGENT / LLM / TOOL). It is found as the current span,
or handed in explicitly by an integration that holds it. A span our own tracer started is never
taken for a host's when found current: a run nested in a run, or a tool calling itself, still gets
its own span, as it always did.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Tracer
from opentelemetry.util.types import AttributeValue

from .emit import clipped, mark_error
from .schema import names

if TYPE_CHECKING:
    from .instrumentation import Instrumentation

AGENT: Final = names.OPERATION_INVOKE_AGENT
CHAT: Final = names.OPERATION_CHAT
TOOL: Final = names.OPERATION_EXECUTE_TOOL

# gen_ai.operation.name values, and OpenInference span kinds, to the one operation each stands for.
_BY_OPERATION: Final[Mapping[str, str]] = {
    names.OPERATION_INVOKE_AGENT: AGENT,
    names.OPERATION_CHAT: CHAT,
    names.OPERATION_TEXT_COMPLETION: CHAT,
    names.OPERATION_GENERATE_CONTENT: CHAT,
    names.OPERATION_EXECUTE_TOOL: TOOL,
}
_BY_OPENINFERENCE_KIND: Final[Mapping[str, str]] = {
    names.OPENINFERENCE_KIND_AGENT: AGENT,
    names.OPENINFERENCE_KIND_LLM: CHAT,
    names.OPENINFERENCE_KIND_TOOL: TOOL,
}


def tracer_of(inst: Instrumentation | None) -> Tracer:
    """Our tracer: the one ``setup()`` made, else the global provider's."""
    if inst is not None:
        return inst.tracer
    from .instrumentation import instrumentation_version

    return trace.get_tracer(names.INSTRUMENTATION_NAME, instrumentation_version())


def _attributes(span: Span) -> Mapping[str, object]:
    attributes = getattr(span, "attributes", None)
    # The SDK's span hands a mappingproxy: told before the ABC check, which runs in Python.
    return attributes if isinstance(attributes, (MappingProxyType, dict, Mapping)) else {}


def _text(attributes: Mapping[str, object], *keys: str) -> str | None:
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def operation_of(span: Span) -> str | None:
    """The operation (``AGENT``, ``CHAT``, ``TOOL``) a span stands for, or ``None``."""
    return _operation_in(_attributes(span))


def _operation_in(attributes: Mapping[str, object]) -> str | None:
    operation = attributes.get(names.GEN_AI_OPERATION_NAME)
    if isinstance(operation, str) and operation in _BY_OPERATION:
        return _BY_OPERATION[operation]
    kind = attributes.get(names.OPENINFERENCE_SPAN_KIND)
    if isinstance(kind, str):
        return _BY_OPENINFERENCE_KIND.get(kind)
    return None


def tool_name_of(span: Span) -> str | None:
    """The tool a tool span executes, by either convention's attribute."""
    return _tool_name_in(_attributes(span))


def _tool_name_in(attributes: Mapping[str, object]) -> str | None:
    return _text(attributes, names.GEN_AI_TOOL_NAME, names.OPENINFERENCE_TOOL_NAME)


def tool_call_id_of(span: Span) -> str | None:
    """The id of the call a tool span executes, when the host recorded it."""
    return _text(_attributes(span), names.GEN_AI_TOOL_CALL_ID, names.OPENINFERENCE_TOOL_ID)


def _is_ours(span: Span) -> bool:
    scope = getattr(span, "instrumentation_scope", None)
    return getattr(scope, "name", None) == names.INSTRUMENTATION_NAME


def _is_this_tool(span: Span, tool_name: str, attributes: Mapping[str, object]) -> bool:
    named = _tool_name_in(attributes)
    if named is not None:
        return named == tool_name
    # OpenInference sets ``tool.name`` only when its span ends; until then the span's name says it.
    return getattr(span, "name", None) in (tool_name, names.tool_span_name(tool_name))


def find_host_span(
    operation: str,
    *,
    tool_name: str | None = None,
    span: Span | None = None,
    context: Context | None = None,
    run_span: Span | None = None,
) -> Span | None:
    """The host's span for ``operation``, or ``None`` when there is none to adopt.

    ``span`` is one an integration knows is the host's: taken as it is while it records. Otherwise
    the current span (of ``context``, the current context by default), when it records, is not
    ours, stands for ``operation`` and (for a tool) executes ``tool_name``. ``run_span`` is the
    enclosing run's span: when it is the current one (the usual case), it stands for the run, not
    for a model or tool call, and nothing more is read from it.
    """
    if span is not None:
        return span if span.is_recording() else None
    current = trace.get_current_span(context)
    if current is run_span or not current.is_recording() or _is_ours(current):
        return None
    attributes = _attributes(current)  # read once: the SDK builds a new view on every read
    if _operation_in(attributes) != operation:
        return None
    if operation == TOOL and tool_name is not None and not _is_this_tool(current, tool_name, attributes):
        return None
    return current


def foreign_current_span() -> Span | None:
    """The current span when it records and another instrumentation started it (a host's span
    an integration knows stands for the operation at hand, whatever its kind), else ``None``."""
    current = trace.get_current_span()
    if not current.is_recording() or _is_ours(current):
        return None
    return current


class HeldSpan:
    """A span we work on, and whether it is ours to end (``owned``) or the host's, only enriched."""

    __slots__ = ("_token", "owned", "span")

    def __init__(self, span: Span, *, owned: bool, token: contextvars.Token[Context] | None = None) -> None:
        self.span = span
        self.owned = owned
        self._token = token

    def detach(self) -> None:
        """Give back the context we made current, if we did; safe to call twice."""
        token, self._token = self._token, None
        if token is not None:
            # A plain try rather than ``contextlib.suppress``: this runs on every tool call.
            try:  # noqa: SIM105
                otel_context.detach(token)
            except Exception:
                pass

    def end(self, error: BaseException | None = None) -> None:
        """Detach, and end the span if it is ours (marked with ``error``).

        An adopted span, and an exception that ended its operation, are the host's to record.
        """
        if self._token is not None:
            self.detach()
        if self.owned:
            try:
                if error is not None:
                    mark_error(self.span, error)
            finally:  # however the error is recorded (or fails to be), the span ends
                self.span.end()


def adopt_or_start(
    operation: str,
    name: str,
    *,
    tracer: Tracer,
    kind: SpanKind,
    attributes: Mapping[str, AttributeValue],
    host: Span | None = None,
    tool_name: str | None = None,
    parent: Context | None = None,
    activate: bool = True,
    search: bool = True,
) -> HeldSpan:
    """Adopt the host's span for ``operation`` (see :func:`find_host_span`), or start ours.

    Only a span we start gets ``attributes``: a host's span keeps what the host wrote. With
    ``activate`` the held span is made current until :meth:`HeldSpan.detach` (a span found
    current already is). ``parent`` is where a span we start goes (and the context it is made
    current in); the current context by default.
    """
    # ``search=False``: the caller looked already, and ``host`` is what it found (or ``None``).
    adopted = find_host_span(operation, tool_name=tool_name, span=host) if search else host
    if adopted is not None:
        token = None
        if activate and trace.get_current_span() is not adopted:
            token = otel_context.attach(trace.set_span_in_context(adopted))
        return HeldSpan(adopted, owned=False, token=token)
    return start_held(
        tracer, name, kind=kind, attributes=clipped(attributes), parent=parent, activate=activate
    )


def start_held(
    tracer: Tracer,
    name: str,
    *,
    kind: SpanKind,
    attributes: Mapping[str, AttributeValue],
    parent: Context | None = None,
    activate: bool = True,
) -> HeldSpan:
    """Start our span, with ``attributes`` already clipped (:func:`.emit.clipped`), and hold it.

    With ``activate`` it is made current in ``parent``'s context (the current one by default).
    A plain ``start_span`` and one context attach: ``start_as_current_span`` would wrap every
    call in two generator-based context managers.
    """
    span = tracer.start_span(name, context=parent, kind=kind, attributes=attributes)
    token = otel_context.attach(trace.set_span_in_context(span, parent)) if activate else None
    return HeldSpan(span, owned=True, token=token)
