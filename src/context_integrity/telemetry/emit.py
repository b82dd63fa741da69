"""Emission: what we put on a span — findings, external-ground excusals, our own failures.

Written once for every kind of span (a run, a model call, a tool call; ours or a host's we
adopted), so the three say the same thing the same way. Everything that leaves here passes
:func:`clipped`: no string longer than ``limits.MAX_ATTRIBUTE_CHARS`` is ever exported, whatever
a tool named itself or returned, and opt-in content (:func:`content`) is clipped at
``limits.MAX_CONTENT_CHARS``. Before that, every value a tool, a model or a user handed the run
passes the application's redaction hook whole (:mod:`context_integrity.redaction`): a finding is
rendered from its quoted values only after the hook has seen them, once per encounter.

Findings go on the span BEFORE it ends: the Python SDK drops events added to an ended span.
"""

from __future__ import annotations

import contextlib
import logging
import traceback
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from ..findings import ExternalGrounding, Finding, kinds_of
from ..ledger import CheckId
from ..limits import (
    MAX_ATTRIBUTE_CHARS,
    MAX_CONTENT_CHARS,
    MAX_REDACTED_CHARS,
    MAX_STACKTRACE_CHARS,
    MAX_STACKTRACE_FRAMES,
)
from ..redaction import REDACTED, Redaction, Redactor, rendered_finding
from ..text import bounded_json, clip, exception_message, render_value
from .instrumentation import instrumentation_version
from .schema import names
from .schema.common import clipped as _clipped
from .schema.finding import finding_event_attributes, provenance_attributes

if TYPE_CHECKING:
    from ..judge import RunJudge
    from .instrumentation import Instrumentation

logger = logging.getLogger("context_integrity")

# An ERROR status description is read by people in a trace UI, not parsed: a line, not a page.
_MAX_STATUS_CHARS = 256


def redact(text: str, hook: Redactor | None, limit: int = MAX_ATTRIBUTE_CHARS) -> str:
    """``text``, which came from a tool, a model or a user, as the hook lets it leave: handed to the
    hook whole, then clipped to ``limit``; all of it redacted if the hook fails."""
    return clip(Redaction(hook).whole(text), limit)


def _hook() -> Redactor | None:
    from .setup import current

    inst = current()
    return inst.redact if inst is not None else None


def _stacktrace(error: BaseException, hook: Redactor | None) -> str:
    """The exception's innermost frames; its message and the source lines it shows are the world's,
    so the hook sees the whole text before it is clipped."""
    try:
        lines = traceback.format_exception(
            type(error), error, error.__traceback__, limit=MAX_STACKTRACE_FRAMES
        )
        return redact("".join(lines), hook, MAX_STACKTRACE_CHARS)
    except Exception:
        return type(error).__qualname__


def clipped(attributes: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """The attributes with every string, and every string in a sequence, cut to the bound."""
    # The schema's attribute values are a subset of the SDK's: the same dict, typed for the SDK.
    return cast("dict[str, AttributeValue]", _clipped(attributes))


# Which of our own failures were already logged with a traceback: a bug that fires on every call
# must put its traceback in the log once, not once per call. Every occurrence is still recorded
# on its span.
_LOGGED_FAILURES: set[tuple[str, str]] = set()
_MAX_LOGGED_FAILURES = 256


def record_internal_error(span: Span | None, where: str, error: BaseException) -> None:
    """Log our own failure and put it on the record; the host never sees it."""
    key = (where, type(error).__qualname__)
    hook = _hook()
    # The exception's message may quote what a tool handed us: with a redaction hook set, the log
    # line carries it (and the stack trace) as the hook lets it leave, never the raw exception.
    said: object = (
        error if hook is None else f"{type(error).__qualname__}: {redact(exception_message(error), hook)}"
    )
    if key not in _LOGGED_FAILURES and len(_LOGGED_FAILURES) < _MAX_LOGGED_FAILURES:
        _LOGGED_FAILURES.add(key)
        if hook is None:
            logger.error(
                "context_integrity: %s failed: %r (the agent was not affected; repeats are logged at debug)",
                where,
                error,
                exc_info=error,
            )
        else:
            logger.error(
                "context_integrity: %s failed: %s (the agent was not affected; repeats are logged at "
                "debug)\n%s",
                where,
                said,
                _stacktrace(error, hook),
            )
    else:
        logger.debug(
            "context_integrity: %s failed again: %s", where, said if hook is not None else repr(error)
        )
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
            names.EXCEPTION_STACKTRACE: _stacktrace(error, hook),
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


def content(value: object, hook: Redactor | None) -> str:
    """Opt-in content for a ``gen_ai.*`` attribute: bounded JSON, never the whole payload, through
    the redaction hook before it is clipped at ``MAX_CONTENT_CHARS``. The hook is handed
    ``MAX_REDACTED_CHARS`` more than can leave, so a secret that crosses the clip was whole in what
    it saw."""
    limit = MAX_CONTENT_CHARS if hook is None else MAX_CONTENT_CHARS + MAX_REDACTED_CHARS
    try:
        text = bounded_json(value, limit)
    except Exception:
        text = render_value(value, limit)
    return clip(Redaction(hook).whole(text, limit), MAX_CONTENT_CHARS)


def set_content(span: Span, key: str, value: object, *, owned: bool, hook: Redactor | None) -> None:
    """Opt-in content on a span; on a host's span, never over an attribute the host already set.
    Clipped at ``MAX_CONTENT_CHARS``, not the attribute bound: a recording judged offline reads it."""
    if not owned and key in (getattr(span, "attributes", None) or {}):
        return
    span.set_attribute(key, content(value, hook))


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
        # One look's findings share one redaction: a value they all quote is handed over once.
        redaction = Redaction(self._redact)
        for index, finding in enumerate(found):
            tool = tool_name if tool_name is not None else subject_tool(finding)
            about = call_ids[index] if index < len(call_ids) else call_id
            # Rendered from its quoted values after the hook has seen each whole; plain strings only,
            # so a queued span never holds a quoted value (a tool's whole result) alive.
            shown = rendered_finding(finding, redaction)
            attributes = cast(
                "dict[str, AttributeValue]", finding_event_attributes(shown, tool_name=tool, call_id=about)
            )
            self.span.add_event(names.FINDING_EVENT, attributes)
            if self.inst is not None:
                self._count(shown, tool)
                if self.inst.event_logger is not None:
                    try:
                        self._log_records(shown, attributes)
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
        redaction = Redaction(self._redact)
        for excusal in excusals:
            # The value and the path (its keys are the model's) are the world's; the source is the
            # application's own label.
            self.span.add_event(
                names.EXTERNAL_GROUND_EVENT,
                clipped(
                    {
                        names.GEN_AI_TOOL_NAME: excusal.tool_name,
                        names.GEN_AI_TOOL_CALL_ID: excusal.call_id,
                        names.EXTERNAL_GROUND_PATH: redaction.whole(excusal.path),
                        names.EXTERNAL_GROUND_VALUE: redaction.whole(excusal.value),
                        names.EXTERNAL_GROUND_SOURCE: excusal.source,
                    }
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
        inst = self.inst
        assert inst is not None and inst.event_logger is not None
        finding_records(
            inst.event_logger,
            finding,
            attributes,
            self.span,
            log_events=inst.log_events,
            evaluation_events=bool(inst.evaluation_events),
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


def finding_records(
    event_logger: Any,
    finding: Finding,
    attributes: dict[str, AttributeValue],
    evaluated: Span,
    *,
    log_events: bool,
    evaluation_events: bool,
) -> None:
    """One finding as log records in the context of the span it evaluates (so each carries that
    span's trace and span ids): our ``context_integrity.finding`` record (``log_events``) and the
    GenAI conventions' ``gen_ai.evaluation.result`` (``evaluation_events``). ``finding`` is already
    rendered through the redaction hook (:func:`~context_integrity.redaction.rendered_finding`) and
    ``attributes`` are its finding event's. ``evaluated`` may be a span that ended long ago (a
    ``NonRecordingSpan`` of its context), as when a recorded trace is judged after the fact."""
    from opentelemetry._logs import SeverityNumber

    severity = SeverityNumber.INFO if finding.advisory else SeverityNumber.WARN
    severity_text = "INFO" if finding.advisory else "WARN"
    context = trace.set_span_in_context(evaluated)
    if log_events:
        event_logger.emit(
            body=clip(finding.message, MAX_ATTRIBUTE_CHARS),
            attributes=attributes,
            event_name=names.FINDING_LOG_EVENT_NAME,
            context=context,
            severity_number=severity,
            severity_text=severity_text,
        )
    if evaluation_events:
        # The explanation is the finding event's message as the redaction hook already let it leave.
        explanation = attributes.get(names.FINDING_MESSAGE)
        event_logger.emit(
            attributes=evaluation_attributes(
                finding, evaluated, explanation=explanation if isinstance(explanation, str) else REDACTED
            ),
            event_name=names.GEN_AI_EVALUATION_RESULT_EVENT,
            context=context,
            severity_number=severity,
            severity_text=severity_text,
        )


def provenance(finding: Finding) -> dict[str, AttributeValue]:
    """Which evaluator filed a finding: the library version and the check's rule version."""
    return cast("dict[str, AttributeValue]", provenance_attributes(finding))


def evaluation_attributes(finding: Finding, span: Span, *, explanation: str) -> dict[str, AttributeValue]:
    """One finding as the GenAI conventions' ``gen_ai.evaluation.result`` attributes.

    A finding is a failed evaluation: label ``fail``, score ``0.0``; an advisory says so in
    ``context_integrity.finding.advisory``. ``finding`` is rendered through the redaction hook and
    ``explanation`` is its message as the finding event carries it. ``gen_ai.response.id`` is copied from the evaluated span when it carries one,
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
