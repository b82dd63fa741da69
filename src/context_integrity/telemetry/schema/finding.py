"""The shapes on a call's span: a finding and its indexed witnesses, an excusal, an internal
error, and what a span's attributes say it is (a run, a model call, a tool call)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, TypeVar

from ...findings import Finding, Witness
from ...limits import MAX_ATTRIBUTE_CHARS
from ...text import clip
from . import names
from .common import Attributes, clipped, library_version, optional_int, optional_str, scalar, str_list


# ── A finding and its witnesses ─────────────────────────────────────────
def witness_attributes(index: int, witness: Witness) -> Attributes:
    """Witness ``index`` as ``context_integrity.witness.<index>.<field>``; ``epoch`` only when set."""
    out: Attributes = {
        names.witness_attribute(index, "subject"): witness.subject.render(),
        names.witness_attribute(index, "predicate"): witness.predicate,
        names.witness_attribute(index, "value"): scalar(witness.value),
        names.witness_attribute(index, "stratum"): witness.stratum,
        names.witness_attribute(index, "provenance"): clip(witness.provenance, MAX_ATTRIBUTE_CHARS),
    }
    if witness.epoch is not None:
        out[names.witness_attribute(index, "epoch")] = witness.epoch
    return out


def finding_attributes(finding: Finding, *, tool_name: str | None, call_id: str | None) -> Attributes:
    """The flat attribute set of one ``context_integrity.finding`` event (and log record)."""
    # What names the finding first (the plain report reads these and stops), then the rest.
    out: Attributes = {
        names.FINDING_KIND: finding.kind,
        names.FINDING_SEAM: finding.seam,
        names.FINDING_ADVISORY: finding.advisory,
        names.FINDING_MESSAGE: clip(finding.message, MAX_ATTRIBUTE_CHARS),
    }
    if tool_name is not None:
        out[names.GEN_AI_TOOL_NAME] = tool_name
    if call_id is not None:
        out[names.GEN_AI_TOOL_CALL_ID] = call_id
    out[names.FINDING_IDENTITY] = finding.identity(with_epoch=False)
    out[names.FINDING_SUBJECTS] = [s.render() for s in finding.subjects]
    out[names.FINDING_WITNESS_COUNT] = len(finding.witnesses)
    if finding.predicate is not None:
        out[names.FINDING_PREDICATE] = finding.predicate
    if finding.epoch is not None:
        out[names.FINDING_EPOCH] = finding.epoch
    for index, witness in enumerate(finding.witnesses):
        out.update(witness_attributes(index, witness))
    return out


def provenance_attributes(finding: Finding) -> Attributes:
    """Which evaluator filed a finding: the library version and the version of the check's rule."""
    # Read when a finding is written: a judge made it, so the registry is loaded by then.
    from ...judge.registry import REGISTRY

    out: Attributes = {names.EVALUATOR_VERSION: library_version()}
    rule = REGISTRY.rule_version(finding.kind)
    if rule is not None:
        out[names.EVALUATOR_RULE_VERSION] = rule
    return out


def finding_event_attributes(finding: Finding, *, tool_name: str | None, call_id: str | None) -> Attributes:
    """The attributes of one ``context_integrity.finding`` span event, as every writer puts it on a
    span (the run in process, the pipeline stage): the finding, who filed it, every string clipped."""
    return clipped(
        {
            **finding_attributes(finding, tool_name=tool_name, call_id=call_id),
            **provenance_attributes(finding),
        }
    )


@dataclass(slots=True)
class FindingFields:
    """What a finding event's attributes say, as plain data.

    ``witnesses`` hold the fields of :data:`names.WITNESS_FIELDS` that were
    recorded (``epoch`` is absent when the witness had none); subjects are
    rendered (``"tool lookup"``).
    """

    kind: str
    seam: str
    predicate: str | None
    advisory: bool
    message: str
    identity: str
    tool_name: str | None
    call_id: str | None
    witnesses: list[dict[str, object]] = field(default_factory=list)
    subjects: list[str] = field(default_factory=list)
    epoch: int | None = None


F = TypeVar("F", bound=FindingFields)
FINDING_REQUIRED: Final = (names.FINDING_KIND, names.FINDING_SEAM, names.FINDING_MESSAGE)
# What decode_finding(details=False) reads: the attributes that name a finding.
FINDING_BRIEF_KEYS: Final = frozenset(
    {*FINDING_REQUIRED, names.FINDING_ADVISORY, names.GEN_AI_TOOL_NAME, names.GEN_AI_TOOL_CALL_ID}
)


def _count_witnesses(attributes: Mapping[str, object]) -> int:
    """How many witnesses an event carries when it does not say."""
    count = 0
    while any(names.witness_attribute(count, f) in attributes for f in names.WITNESS_FIELDS):
        count += 1
    return count


def decode_witnesses(
    attributes: Mapping[str, object], problems: list[str], *, lossy: bool = False
) -> list[dict[str, object]]:
    """The witnesses of :func:`witness_attributes`, in index order.

    ``lossy`` says the event lost attributes to the SDK's limit, so a hollow
    witness is expected rather than a problem.
    """
    declared = optional_int(attributes.get(names.FINDING_WITNESS_COUNT))
    # A declared count can never exceed the attributes present: a corrupt
    # count must not make the reader loop for ever.
    count = min(declared, len(attributes)) if declared is not None else _count_witnesses(attributes)
    witnesses: list[dict[str, object]] = []
    for index in range(count):
        witness: dict[str, object] = {}
        for witness_field in names.WITNESS_FIELDS:
            key = names.witness_attribute(index, witness_field)
            if key in attributes:
                witness[witness_field] = attributes[key]
        if not witness and not lossy:
            problems.append(f"declares {count} witness(es) but witness {index} has no attributes")
        witnesses.append(witness)
    return witnesses


def decode_finding(
    attributes: Mapping[str, object],
    problems: list[str],
    into: type[F],
    *where: object,
    lossy: bool = False,
    details: bool = True,
) -> F:
    """The partner of :func:`finding_attributes`, built as ``into``: a :class:`FindingFields`
    or a subclass, whose own further fields ``where`` fills, in order.

    A missing kind, seam or message is a problem, and the finding is still
    returned with what it has. Without ``details`` only what names the finding
    is read (kind, seam, advisory, message, tool, call): no witnesses, subjects,
    identity, predicate or epoch.
    """
    get = attributes.get
    kind = get(names.FINDING_KIND)
    seam = get(names.FINDING_SEAM)
    message = get(names.FINDING_MESSAGE)
    if kind is None or seam is None or message is None:
        missing = [key for key in FINDING_REQUIRED if key not in attributes]
        problems.append(f"lacks {', '.join(missing)}; it is reported with what it has")
    tool_name = get(names.GEN_AI_TOOL_NAME)
    call_id = get(names.GEN_AI_TOOL_CALL_ID)
    if details:
        return into(
            "" if kind is None else str(kind),
            "" if seam is None else str(seam),
            optional_str(get(names.FINDING_PREDICATE)),
            get(names.FINDING_ADVISORY) is True,
            "" if message is None else str(message),
            str(get(names.FINDING_IDENTITY, "")),
            tool_name if type(tool_name) is str else None,
            call_id if type(call_id) is str else None,
            decode_witnesses(attributes, problems, lossy=lossy),
            str_list(get(names.FINDING_SUBJECTS)),
            optional_int(get(names.FINDING_EPOCH)),
            *where,
        )
    return into(
        kind if type(kind) is str else ("" if kind is None else str(kind)),
        seam if type(seam) is str else ("" if seam is None else str(seam)),
        None,
        get(names.FINDING_ADVISORY) is True,
        message if type(message) is str else ("" if message is None else str(message)),
        "",
        tool_name if type(tool_name) is str else None,
        call_id if type(call_id) is str else None,
        [],
        [],
        None,
        *where,
    )


# ── What a span is ───────────────────────────────────────────────────────
# Hosts instrumented with OpenInference mark their spans with a span kind instead of
# ``gen_ai.operation.name``; their agent, model and tool spans are runs, model calls and tool calls.
_BY_OPENINFERENCE_KIND: Final[Mapping[str, str]] = {
    names.OPENINFERENCE_KIND_AGENT: names.OPERATION_INVOKE_AGENT,
    names.OPENINFERENCE_KIND_LLM: names.OPERATION_CHAT,
    names.OPENINFERENCE_KIND_TOOL: names.OPERATION_EXECUTE_TOOL,
}


def span_operation(attributes: Mapping[str, object]) -> str | None:
    """The GenAI operation a span's attributes say it is: ``gen_ai.operation.name``, else the
    operation an OpenInference span kind stands for."""
    operation = attributes.get(names.GEN_AI_OPERATION_NAME)
    if type(operation) is str:
        return operation
    kind = attributes.get(names.OPENINFERENCE_SPAN_KIND)
    return _BY_OPENINFERENCE_KIND.get(kind) if type(kind) is str else None


def _first_text(attributes: Mapping[str, object], *keys: str) -> str | None:
    for key in keys:
        value = attributes.get(key)
        if type(value) is str and value:
            return value
    return None


def span_tool_name(attributes: Mapping[str, object]) -> str | None:
    """The tool a call span executes, in the GenAI or the OpenInference spelling."""
    value = attributes.get(names.GEN_AI_TOOL_NAME)
    if type(value) is str and value:
        return value
    return _first_text(attributes, names.OPENINFERENCE_TOOL_NAME)


def span_tool_call_id(attributes: Mapping[str, object]) -> str | None:
    """The id of the call a tool span executes, in the GenAI or the OpenInference spelling."""
    value = attributes.get(names.GEN_AI_TOOL_CALL_ID)
    if type(value) is str and value:
        return value
    return _first_text(attributes, names.OPENINFERENCE_TOOL_ID)


def span_agent_name(attributes: Mapping[str, object]) -> str | None:
    return _first_text(attributes, names.GEN_AI_AGENT_NAME)


# ── Excusals and our own failures ───────────────────────────────────────
_EXTERNAL_GROUND_KEYS: Final = {
    "path": names.EXTERNAL_GROUND_PATH,
    "value": names.EXTERNAL_GROUND_VALUE,
    "source": names.EXTERNAL_GROUND_SOURCE,
}
_INTERNAL_ERROR_KEYS: Final = {"where": names.INTERNAL_ERROR_WHERE, "type": names.INTERNAL_ERROR_TYPE}


def external_ground_attributes(
    *, tool_name: str | None, call_id: str | None, path: str, value: str, source: str
) -> Attributes:
    """One ``context_integrity.external_ground_used`` event: the application vouched for a value."""
    out: Attributes = {
        names.EXTERNAL_GROUND_PATH: clip(path, MAX_ATTRIBUTE_CHARS),
        names.EXTERNAL_GROUND_VALUE: clip(value, MAX_ATTRIBUTE_CHARS),
        names.EXTERNAL_GROUND_SOURCE: clip(source, MAX_ATTRIBUTE_CHARS),
    }
    if tool_name is not None:
        out[names.GEN_AI_TOOL_NAME] = tool_name
    if call_id is not None:
        out[names.GEN_AI_TOOL_CALL_ID] = call_id
    return out


def decode_external_ground(attributes: Mapping[str, object]) -> dict[str, object]:
    """The partner of :func:`external_ground_attributes`: ``path``, ``value``, ``source`` as recorded."""
    return {label: attributes[key] for label, key in _EXTERNAL_GROUND_KEYS.items() if key in attributes}


def internal_error_attributes(where: str, error: BaseException) -> Attributes:
    """One ``context_integrity.internal_error`` event: where our code failed, and with what type."""
    return {names.INTERNAL_ERROR_WHERE: where, names.INTERNAL_ERROR_TYPE: type(error).__qualname__}


def decode_internal_error(attributes: Mapping[str, object]) -> dict[str, object]:
    """The partner of :func:`internal_error_attributes`: ``where`` and ``type`` as recorded."""
    return {label: attributes[key] for label, key in _INTERNAL_ERROR_KEYS.items() if key in attributes}
