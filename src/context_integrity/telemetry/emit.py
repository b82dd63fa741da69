"""Emission: what we put on a span — findings, external-ground excusals, our own failures.

Written once for every kind of span (a run, a model call, a tool call; ours or a host's we
adopted), so the three say the same thing the same way. Everything that leaves here passes
:func:`clipped`: no string longer than ``limits.MAX_ATTRIBUTE_CHARS`` is ever exported, whatever
a tool named itself or returned.

Findings go on the span BEFORE it ends: the Python SDK drops events added to an ended span.
"""

from __future__ import annotations

import contextlib
import logging
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from ..findings import ExternalGrounding, Finding, kinds_of
from ..ledger import CheckId
from ..limits import MAX_ATTRIBUTE_CHARS, MAX_STACKTRACE_CHARS, MAX_STACKTRACE_FRAMES
from ..text import bounded_json, clip, render_value
from .instrumentation import instrumentation_version
from .schema import names
from .schema.attributes import finding_attributes

if TYPE_CHECKING:
    from ..judge import RunJudge
    from .instrumentation import Instrumentation

logger = logging.getLogger("context_integrity")

# An ERROR status description is read by people in a trace UI, not parsed: a line, not a page.
_MAX_STATUS_CHARS = 256

# What an exported text becomes when the application's redaction hook raised on it.
REDACTED: Final = "[redacted]"

Redactor = Callable[[str], str]


def redact(text: str, hook: Redactor | None) -> str:
    """``text`` as the application's hook lets it leave (clipped); all of it redacted if the hook fails."""
    if hook is None:
        return clip(text, MAX_ATTRIBUTE_CHARS)
    try:
        out = hook(text)
    except Exception:  # a broken hook must not leak what it was meant to hide
        return REDACTED
    return clip(out, MAX_ATTRIBUTE_CHARS) if isinstance(out, str) else REDACTED


def _redacted_keys(attributes: Mapping[str, object]) -> list[str]:
    keys = [names.FINDING_MESSAGE, names.EXTERNAL_GROUND_VALUE]
    count = attributes.get(names.FINDING_WITNESS_COUNT)
    for index in range(count if isinstance(count, int) else 0):
        keys.append(names.witness_attribute(index, "value"))
        keys.append(names.witness_attribute(index, "provenance"))
    return keys


def redacted(attributes: dict[str, AttributeValue], hook: Redactor | None) -> dict[str, AttributeValue]:
    """Every witness value, provenance and message through the hook (the rest as it is)."""
    if hook is None:
        return attributes
    for key in _redacted_keys(attributes):
        value = attributes.get(key)
        if value is not None:
            attributes[key] = redact(value if isinstance(value, str) else str(value), hook)
    return attributes


def _hook() -> Redactor | None:
    from .setup import current

    inst = current()
    return inst.redact if inst is not None else None


def exception_message(error: BaseException) -> str:
    """``str(error)``, or its type's name when the exception cannot even be printed. Never raises."""
    try:
        return str(error) or type(error).__name__
    except Exception:
        return f"<unprintable {type(error).__name__}>"


def _stacktrace(error: BaseException) -> str:
    try:
        lines = traceback.format_exception(
            type(error), error, error.__traceback__, limit=MAX_STACKTRACE_FRAMES
        )
        return clip("".join(lines), MAX_STACKTRACE_CHARS)
    except Exception:
        return type(error).__qualname__


def clipped(attributes: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """The attributes with every string, and every string in a sequence, cut to the bound."""
    out: dict[str, AttributeValue] = {}
    for key, value in attributes.items():
        if isinstance(value, str):
            out[key] = clip(value, MAX_ATTRIBUTE_CHARS)
        elif isinstance(value, (list, tuple)):
            out[key] = [clip(v, MAX_ATTRIBUTE_CHARS) if isinstance(v, str) else v for v in value]
        else:
            out[key] = value
    return out


# Which of our own failures were already logged with a traceback: a bug that fires on every call
# must put its traceback in the log once, not once per call. Every occurrence is still recorded
# on its span.
_LOGGED_FAILURES: set[tuple[str, str]] = set()
_MAX_LOGGED_FAILURES = 256


def record_internal_error(span: Span | None, where: str, error: BaseException) -> None:
    """Log our own failure and put it on the record; the host never sees it."""
    key = (where, type(error).__qualname__)
    if key not in _LOGGED_FAILURES and len(_LOGGED_FAILURES) < _MAX_LOGGED_FAILURES:
        _LOGGED_FAILURES.add(key)
        logger.error(
            "context_integrity: %s failed: %r (the agent was not affected; repeats are logged at debug)",
            where,
            error,
            exc_info=error,
        )
    else:
        logger.debug("context_integrity: %s failed again: %r", where, error)
    if span is None:
        return
    with contextlib.suppress(Exception):
        span.add_event(
            names.INTERNAL_ERROR_EVENT,
            clipped({names.INTERNAL_ERROR_WHERE: where, names.INTERNAL_ERROR_TYPE: type(error).__qualname__}),
        )


def record_judge_errors(span: Span | None, judge: RunJudge | None) -> None:
    """Put the failures the judge caught inside its checks on the span they happened under."""
    if judge is None:
        return
    for problem in judge.take_internal_errors():
        record_internal_error(span, f"check {problem.where}", problem.error)


def mark_error(span: Span, error: BaseException) -> None:
    """Put an exception that ended an operation on its span: event, ERROR status, ``error.type``.

    Written by us rather than ``span.record_exception`` so the message and the stack trace are
    bounded and pass the redaction hook, and an exception whose ``__str__`` raises is still recorded.
    """
    hook = _hook()
    message = redact(exception_message(error), hook)
    kind = clip(type(error).__qualname__, MAX_ATTRIBUTE_CHARS)
    span.add_event(
        names.EXCEPTION_EVENT,
        {
            names.EXCEPTION_TYPE: kind,
            names.EXCEPTION_MESSAGE: message,
            names.EXCEPTION_STACKTRACE: _stacktrace(error)
            if hook is None
            else redact(_stacktrace(error), hook),
            names.EXCEPTION_ESCAPED: True,
        },
    )
    span.set_status(Status(StatusCode.ERROR, clip(message, _MAX_STATUS_CHARS)))
    span.set_attribute(names.ERROR_TYPE, kind)


def mark_refused(span: Span) -> None:
    """Enforce replaced a tool's result: the call is an error, of our own ``error.type``."""
    span.set_status(Status(StatusCode.ERROR, "result rejected by context_integrity"))
    span.set_attribute(names.ERROR_TYPE, names.ERROR_RESULT_REJECTED)
    span.set_attribute(names.RESULT_REFUSED, True)


def content(value: object) -> str:
    """Opt-in content for a ``gen_ai.*`` attribute: bounded JSON, never the whole payload."""
    try:
        text = bounded_json(value, MAX_ATTRIBUTE_CHARS)
    except Exception:
        text = render_value(value, MAX_ATTRIBUTE_CHARS)
    return clip(text, MAX_ATTRIBUTE_CHARS)


def set_content(span: Span, key: str, value: object, *, owned: bool) -> None:
    """Opt-in content on a span; on a host's span, never over an attribute the host already set."""
    set_text(span, key, content(value), owned=owned)


def set_text(span: Span, key: str, value: str, *, owned: bool) -> None:
    """A clipped string attribute; on a host's span, never over an attribute the host already set."""
    if not owned and key in (getattr(span, "attributes", None) or {}):
        return
    span.set_attribute(key, clip(value, MAX_ATTRIBUTE_CHARS))


def subject_tool(finding: Finding) -> str | None:
    """The tool a finding is about, when it names one."""
    for subject in finding.subjects:
        if subject.kind == "tool":
            return subject.id
    return None


class SpanEmitter:
    """Everything we put on one span, and the span-level summary of its findings.

    ``count`` and ``kinds`` accumulate over the span's life, so the summary attributes
    (which Tempo's span metrics and TraceQL select on) always cover every finding on it.
    """

    __slots__ = ("_redact", "count", "inst", "kinds", "span")

    def __init__(self, span: Span, inst: Instrumentation | None) -> None:
        self.span = span
        self.inst = inst
        self.count = 0
        self.kinds: list[str] = []
        self._redact = inst.redact if inst is not None else None

    def findings(
        self,
        found: Sequence[Finding],
        *,
        tool_name: str | None = None,
        call_id: str | None = None,
        call_ids: Sequence[str | None] = (),
    ) -> None:
        """One event per finding (and a counter increment, and optionally a log record).

        ``tool_name`` when the span is one tool's call; otherwise each finding names its own
        tool. ``call_ids[i]`` is the call the i-th finding is about, else ``call_id``.
        """
        if not found:
            return
        for index, finding in enumerate(found):
            tool = tool_name if tool_name is not None else subject_tool(finding)
            about = call_ids[index] if index < len(call_ids) else call_id
            attributes = redacted(
                clipped(
                    {**finding_attributes(finding, tool_name=tool, call_id=about), **provenance(finding)}
                ),
                self._redact,
            )
            self.span.add_event(names.FINDING_EVENT, attributes)
            if self.inst is not None:
                self._count(finding, tool)
                if self.inst.event_logger is not None:
                    try:
                        self._log_records(finding, attributes)
                    except Exception as ours:
                        record_internal_error(self.span, "writing a finding's log records", ours)
        self.count += len(found)
        for kind in kinds_of(found):
            if kind not in self.kinds:
                self.kinds.append(kind)
        self.span.set_attribute(names.FINDINGS_COUNT, self.count)
        self.span.set_attribute(names.FINDINGS_KINDS, list(self.kinds))

    def excusals(self, excusals: Sequence[ExternalGrounding]) -> None:
        """One event per argument the application's external grounds vouched for."""
        for excusal in excusals:
            self.span.add_event(
                names.EXTERNAL_GROUND_EVENT,
                redacted(
                    clipped(
                        {
                            names.GEN_AI_TOOL_NAME: excusal.tool_name,
                            names.GEN_AI_TOOL_CALL_ID: excusal.call_id,
                            names.EXTERNAL_GROUND_PATH: excusal.path,
                            names.EXTERNAL_GROUND_VALUE: excusal.value,
                            names.EXTERNAL_GROUND_SOURCE: excusal.source,
                        }
                    ),
                    self._redact,
                ),
            )

    def unreachable(self, reasons: Sequence[tuple[CheckId, str]]) -> None:
        """One event per check that could not look, saying why (a declaration that could not be read)."""
        for row, reason in reasons:
            self.span.add_event(
                names.UNREACHABLE_EVENT,
                clipped({names.UNREACHABLE_CHECK: row.render(), names.UNREACHABLE_REASON: reason}),
            )

    def _count(self, finding: Finding, tool: str | None) -> None:
        assert self.inst is not None
        self.inst.findings_counter.add(
            1,
            clipped(
                {
                    names.METRIC_KIND: finding.kind,
                    names.METRIC_SEAM: finding.seam,
                    names.METRIC_TOOL: tool or "",
                    names.METRIC_ADVISORY: finding.advisory,
                }
            ),
        )

    def _log_records(self, finding: Finding, attributes: dict[str, AttributeValue]) -> None:
        """The finding as log records, each in the evaluated span's context (its trace and span ids)."""
        from opentelemetry._logs import SeverityNumber

        inst = self.inst
        assert inst is not None and inst.event_logger is not None
        severity = SeverityNumber.INFO if finding.advisory else SeverityNumber.WARN
        severity_text = "INFO" if finding.advisory else "WARN"
        context = trace.set_span_in_context(self.span)
        if inst.log_events:
            inst.event_logger.emit(
                body=redact(finding.message, self._redact),
                attributes=attributes,
                event_name=names.FINDING_LOG_EVENT_NAME,
                context=context,
                severity_number=severity,
                severity_text=severity_text,
            )
        if inst.evaluation_events:
            # The explanation is the finding event's message as the redaction hook already let it leave.
            explanation = attributes.get(names.FINDING_MESSAGE)
            inst.event_logger.emit(
                attributes=evaluation_attributes(
                    finding, self.span, explanation=explanation if isinstance(explanation, str) else REDACTED
                ),
                event_name=names.GEN_AI_EVALUATION_RESULT_EVENT,
                context=context,
                severity_number=severity,
                severity_text=severity_text,
            )

    def passes(self, checks: Sequence[CheckId]) -> None:
        """One pass ``gen_ai.evaluation.result`` per ``checked-pass`` encounter (evaluation_events="all")."""
        inst = self.inst
        if not checks or inst is None or inst.event_logger is None:
            return
        if inst.evaluation_events != names.EVALUATION_EVENTS_ALL:
            return
        from opentelemetry._logs import SeverityNumber

        context = trace.set_span_in_context(self.span)
        for check in checks:
            try:
                inst.event_logger.emit(
                    attributes=pass_attributes(check, self.span),
                    event_name=names.GEN_AI_EVALUATION_RESULT_EVENT,
                    context=context,
                    severity_number=SeverityNumber.INFO,
                    severity_text="INFO",
                )
            except Exception as ours:
                record_internal_error(self.span, "writing a pass evaluation event", ours)
                return


def wants_passes(inst: Instrumentation | None) -> bool:
    """Whether the judge should keep its ``checked-pass`` encounters for pass evaluation events."""
    return (
        inst is not None
        and inst.event_logger is not None
        and inst.evaluation_events == names.EVALUATION_EVENTS_ALL
    )


def _rule_version(check: str) -> str | None:
    # Read when a finding or pass is emitted: a judge made it, so the registry is loaded by then.
    from ..judge.registry import REGISTRY

    return REGISTRY.rule_version(check)


def provenance(finding: Finding) -> dict[str, AttributeValue]:
    """Which evaluator filed a finding: the library version and the check's rule version."""
    out: dict[str, AttributeValue] = {names.EVALUATOR_VERSION: instrumentation_version()}
    rule = _rule_version(finding.kind)
    if rule is not None:
        out[names.EVALUATOR_RULE_VERSION] = rule
    return out


def evaluation_attributes(finding: Finding, span: Span, *, explanation: str) -> dict[str, AttributeValue]:
    """One finding as the GenAI conventions' ``gen_ai.evaluation.result`` attributes.

    A finding is a failed evaluation: label ``fail``, score ``0.0``; an advisory says so in
    ``context_integrity.finding.advisory``. ``explanation`` is the message as already redacted for
    the finding event. ``gen_ai.response.id`` is copied from the evaluated span when it carries one,
    for backends that correlate by response rather than by span.
    """
    attributes: dict[str, Any] = {
        names.GEN_AI_EVALUATION_NAME: names.evaluation_name(finding.kind),
        names.GEN_AI_EVALUATION_SCORE_LABEL: names.EVALUATION_LABEL_FAIL,
        names.GEN_AI_EVALUATION_SCORE_VALUE: names.EVALUATION_SCORE_FAIL,
        names.GEN_AI_EVALUATION_EXPLANATION: explanation,
        names.FINDING_KIND: finding.kind,
        names.FINDING_SEAM: finding.seam,
        names.FINDING_ADVISORY: finding.advisory,
        names.FINDING_IDENTITY: finding.identity(),
        **provenance(finding),
    }
    return _with_response_id(attributes, span)


def pass_attributes(check: CheckId, span: Span) -> dict[str, AttributeValue]:
    """One ``checked-pass`` encounter as a passed ``gen_ai.evaluation.result``: label ``pass``, score ``1.0``."""
    attributes: dict[str, Any] = {
        names.GEN_AI_EVALUATION_NAME: names.evaluation_name(check.check),
        names.GEN_AI_EVALUATION_SCORE_LABEL: names.EVALUATION_LABEL_PASS,
        names.GEN_AI_EVALUATION_SCORE_VALUE: names.EVALUATION_SCORE_PASS,
        names.FINDING_KIND: check.check,
        names.FINDING_SEAM: check.seam,
        names.EVALUATOR_VERSION: instrumentation_version(),
    }
    rule = _rule_version(check.check)
    if rule is not None:
        attributes[names.EVALUATOR_RULE_VERSION] = rule
    return _with_response_id(attributes, span)


def _with_response_id(attributes: dict[str, Any], span: Span) -> dict[str, AttributeValue]:
    response_id = (getattr(span, "attributes", None) or {}).get(names.GEN_AI_RESPONSE_ID)
    if isinstance(response_id, str) and response_id:
        attributes[names.GEN_AI_RESPONSE_ID] = response_id
    return clipped(attributes)
