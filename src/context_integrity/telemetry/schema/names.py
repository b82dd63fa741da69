"""Every telemetry name the library emits: spans, events, attributes, metrics.

Dashboards, alert rules, the collector configuration, the recording reader and
the tests all depend on these strings, so they have one owner and change only
deliberately. This module imports only ``limits`` (not OpenTelemetry) so that
the recording reader (``recording/``, through ``schema``) and the deployment
tests can read it without the SDK.

The ``gen_ai.*`` names follow the OpenTelemetry GenAI semantic conventions;
they are our own constants rather than imports of the (deprecated, moving)
``opentelemetry-semantic-conventions`` names.
"""

from __future__ import annotations

from typing import Final

from ...limits import MAX_ATTRIBUTE_CHARS

# ── Instrumentation scope ───────────────────────────────────────────────
INSTRUMENTATION_NAME: Final = "context_integrity"

# ── GenAI semantic conventions ──────────────────────────────────────────
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
GEN_AI_TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
# Opt-in content attributes: never written unless the user turns content capture on.
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
GEN_AI_TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
CONTENT_ATTRIBUTES: Final[tuple[str, ...]] = (
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_SYSTEM_INSTRUCTIONS,
    GEN_AI_TOOL_DEFINITIONS,
)
# The message parts of the GenAI conventions' content attributes (``{"role", "parts": [...]}``).
PART_TYPE: Final = "type"
PART_TEXT: Final = "text"
PART_TOOL_CALL: Final = "tool_call"
PART_TOOL_CALL_RESPONSE: Final = "tool_call_response"
# The conventions' event carrying a model call's content where it is not on the span's attributes
# (read, never written).
GEN_AI_OPERATION_DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"

OPERATION_EXECUTE_TOOL: Final = "execute_tool"
OPERATION_INVOKE_AGENT: Final = "invoke_agent"
OPERATION_CHAT: Final = "chat"
# The other operations the GenAI conventions give a model call; a host span carrying one of them is
# a model call we adopt like a ``chat`` span.
OPERATION_TEXT_COMPLETION: Final = "text_completion"
OPERATION_GENERATE_CONTENT: Final = "generate_content"
# The operations of a model call (a waterfall's model rows).
MODEL_CALL_OPERATIONS: Final = frozenset(
    {OPERATION_CHAT, OPERATION_TEXT_COMPLETION, OPERATION_GENERATE_CONTENT}
)
TOOL_TYPE_FUNCTION: Final = "function"

# ── OpenInference (read, never written) ─────────────────────────────────
# Hosts instrumented by OpenInference (and Phoenix / Arize) mark their spans with a span kind
# instead of ``gen_ai.operation.name``. The strings are those of openinference-semantic-conventions
# (``SpanAttributes`` and ``OpenInferenceSpanKindValues``); a test holds them equal.
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
OPENINFERENCE_KIND_AGENT: Final = "AGENT"
OPENINFERENCE_KIND_LLM: Final = "LLM"
OPENINFERENCE_KIND_TOOL: Final = "TOOL"
OPENINFERENCE_TOOL_NAME: Final = "tool.name"
# OpenInference's id of the call a TOOL span executes (its ``tool_call.id``).
OPENINFERENCE_TOOL_ID: Final = "tool.id"

# ── Errors and refusals ─────────────────────────────────────────────────
ERROR_TYPE: Final = "error.type"
# The exception event (OpenTelemetry semantic conventions), written by us so each string is bounded.
EXCEPTION_EVENT: Final = "exception"
EXCEPTION_TYPE: Final = "exception.type"
EXCEPTION_MESSAGE: Final = "exception.message"
EXCEPTION_STACKTRACE: Final = "exception.stacktrace"
EXCEPTION_ESCAPED: Final = "exception.escaped"
ERROR_RESULT_REJECTED: Final = "context_integrity.result_rejected"
# Our own mark that a result was refused: hosts such as the MCP SDK overwrite ``error.type`` on the
# spans they own (with ``tool_error``), so the verdict also travels under a name of ours.
RESULT_REFUSED: Final = "context_integrity.result.refused"


# ── Span names ──────────────────────────────────────────────────────────
# Span names carry a host- or model-chosen name: bounded like every exported string.
def tool_span_name(tool: str) -> str:
    return f"{OPERATION_EXECUTE_TOOL} {tool[:MAX_ATTRIBUTE_CHARS]}"


def run_span_name(agent: str) -> str:
    return f"{OPERATION_INVOKE_AGENT} {agent[:MAX_ATTRIBUTE_CHARS]}"


# A ``ci.run`` written around a framework's own run: the framework's ``invoke_agent`` is the run,
# and ours becomes a plain grouping span under this name and operation, never a second invoke_agent.
OPERATION_USER_RUN: Final = "context_integrity.run"


def user_run_span_name(agent: str) -> str:
    return f"{OPERATION_USER_RUN} {agent}"


def chat_span_name(model: str) -> str:
    return f"{OPERATION_CHAT} {model[:MAX_ATTRIBUTE_CHARS]}"


# ── Findings ────────────────────────────────────────────────────────────
_NS: Final = "context_integrity"
FINDING_EVENT: Final = f"{_NS}.finding"
FINDING_KIND: Final = f"{_NS}.finding.kind"
FINDING_SEAM: Final = f"{_NS}.finding.seam"
FINDING_PREDICATE: Final = f"{_NS}.finding.predicate"
FINDING_ADVISORY: Final = f"{_NS}.finding.advisory"
FINDING_MESSAGE: Final = f"{_NS}.finding.message"
FINDING_IDENTITY: Final = f"{_NS}.finding.identity"
FINDING_SUBJECTS: Final = f"{_NS}.finding.subjects"
FINDING_EPOCH: Final = f"{_NS}.finding.epoch"
FINDING_WITNESS_COUNT: Final = f"{_NS}.finding.witness_count"

WITNESS_PREFIX: Final = f"{_NS}.witness"
WITNESS_FIELDS: Final[tuple[str, ...]] = (
    "subject",
    "predicate",
    "value",
    "epoch",
    "stratum",
    "provenance",
)


def witness_attribute(index: int, field: str) -> str:
    """``context_integrity.witness.<index>.<field>``."""
    return f"{WITNESS_PREFIX}.{index}.{field}"


# Span-level summaries: let Tempo span metrics and TraceQL select spans
# without reading events, and survive the SDK's per-span event cap.
FINDINGS_COUNT: Final = f"{_NS}.findings.count"
FINDINGS_KINDS: Final = f"{_NS}.findings.kinds"

EXTERNAL_GROUND_EVENT: Final = f"{_NS}.external_ground_used"
EXTERNAL_GROUND_PATH: Final = f"{_NS}.external_ground.path"
EXTERNAL_GROUND_VALUE: Final = f"{_NS}.external_ground.value"
EXTERNAL_GROUND_SOURCE: Final = f"{_NS}.external_ground.source"

# What the application told the run of its toolsets (``run.suspend`` / ``run.resume``), as events on
# the run span: no trace holds them otherwise, and the compose invariant judges requests against them.
TOOLSET_SUSPENDED_EVENT: Final = f"{_NS}.toolset.suspended"
TOOLSET_RESUMED_EVENT: Final = f"{_NS}.toolset.resumed"
TOOLSET_GROUP: Final = f"{_NS}.toolset.group"
TOOLSET_TOOLS: Final = f"{_NS}.toolset.tools"

# Recorded when our own code failed and the host was shielded from it.
INTERNAL_ERROR_EVENT: Final = f"{_NS}.internal_error"
INTERNAL_ERROR_WHERE: Final = f"{_NS}.internal_error.where"
INTERNAL_ERROR_TYPE: Final = f"{_NS}.internal_error.type"

# An encounter the ledger counts unreachable, said with its reason where one can be named. In
# process, on a call's span: the declaration that arms the check was made (by an MCP server) and could
# not be read (with the check). Judged from a trace (``serve``), on the run's summary span: which rows
# were counted unreachable, on which span, and why (evidence the trace does not carry).
UNREACHABLE_EVENT: Final = f"{_NS}.unreachable"
UNREACHABLE_CHECK: Final = f"{_NS}.unreachable.check"
UNREACHABLE_REASON: Final = f"{_NS}.unreachable.reason"
UNREACHABLE_ROWS: Final = f"{_NS}.unreachable.rows"
UNREACHABLE_SPAN_ID: Final = f"{_NS}.unreachable.span_id"

# On a client's tool span, for a result an MCP server judged and said so in its _meta: the server
# whose verdict was taken (its findings are on its own span, not filed again here), or the server
# whose verdict was not, its contract for the tool differing from this process's.
JUDGED_AT_SERVER: Final = f"{_NS}.judged_at_server"
SERVER_CONTRACT_DIFFERS: Final = f"{_NS}.judged_at_server.contract_differs"

# ── The run summary ─────────────────────────────────────────────────────
DISPOSITION_SPAN: Final = f"{_NS}.disposition"
POSTURE: Final = f"{_NS}.posture"
DIAL_PREFIX: Final = f"{_NS}.dial"
WORK_EXISTED: Final = f"{_NS}.work_existed"
RUN_OUTCOME: Final = f"{_NS}.run.outcome"
# The run's profile, when profiling is on: compact JSON of names and counts, never a value
# (context_integrity.judge.profile owns its form).
PROFILE: Final = f"{_NS}.profile"
TOTALS_PREFIX: Final = f"{_NS}.totals"
ROW_PREFIX: Final = f"{_NS}.row"


def dial_attribute(dial: str) -> str:
    """``context_integrity.dial.<name>``: one dial in force, on the summary span."""
    return f"{DIAL_PREFIX}.{dial}"


def totals_attribute(field: str) -> str:
    """``context_integrity.totals.<field>``."""
    return f"{TOTALS_PREFIX}.{field}"


def row_attribute(check: str, seam: str, field: str) -> str:
    """``context_integrity.row.<check>.<seam>.<field>``: one scalar per row field, for queries."""
    return f"{ROW_PREFIX}.{check}.{seam}.{field}"


# ── Metrics ─────────────────────────────────────────────────────────────
FINDINGS_METRIC: Final = f"{_NS}.findings"
FINDINGS_METRIC_UNIT: Final = "{finding}"
METRIC_KIND: Final = "kind"
METRIC_SEAM: Final = "seam"
METRIC_TOOL: Final = "tool"
METRIC_ADVISORY: Final = "advisory"


def prometheus_metric_name(otel_name: str, *, counter: bool = True) -> str:
    """The name a Prometheus exporter gives an OpenTelemetry metric (dots to underscores, ``_total``)."""
    name = otel_name.replace(".", "_")
    return f"{name}_total" if counter else name


PROMETHEUS_FINDINGS_METRIC: Final = prometheus_metric_name(FINDINGS_METRIC)

# ── Log-based events ────────────────────────────────────────────────────
FINDING_LOG_EVENT_NAME: Final = FINDING_EVENT

# ── GenAI evaluation events (opt-in: setup(evaluation_events=True)) ─────
# The semantic conventions' ``gen_ai.evaluation.result`` event (status: Development), one per
# finding, parented to the evaluated span. It has no body; everything is in attributes.
GEN_AI_EVALUATION_RESULT_EVENT: Final = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
# The documented values of our score label (low cardinality, as the conventions ask) and the score
# each carries: a finding is a failed evaluation; a ``checked-pass`` encounter (only with
# setup(evaluation_events="all")) a passed one.
EVALUATION_LABEL_FAIL: Final = "fail"
EVALUATION_SCORE_FAIL: Final = 0.0
EVALUATION_LABEL_PASS: Final = "pass"
EVALUATION_SCORE_PASS: Final = 1.0
# The evaluation_events value that adds the pass events to the fail-only default.
EVALUATION_EVENTS_ALL: Final = "all"


def evaluation_name(kind: str) -> str:
    """``context_integrity.<kind>``: the check kind, namespaced, as ``gen_ai.evaluation.name``."""
    return f"{_NS}.{kind}"


# Evaluator provenance, on every finding event (span event, log record, evaluation event): which
# library version and which version of the check's rule filed it.
EVALUATOR_VERSION: Final = f"{_NS}.evaluator.version"
EVALUATOR_RULE_VERSION: Final = f"{_NS}.evaluator.rule_version"

# ── Phoenix span annotations (opt-in: setup(phoenix_annotations=url)) ───
# One annotation name for every finding, so Phoenix shows them in one column, labelled by kind.
PHOENIX_ANNOTATION_NAME: Final = f"{_NS}.finding"
# Who judged: deterministic code (OpenInference's and Phoenix's ``annotator_kind`` vocabulary).
ANNOTATOR_KIND_CODE: Final = "CODE"

# ── Post-hoc results (``context-integrity judge --export``) ─────────────
# An ended span cannot change, so each finding about one also goes out as a carrier span with one
# link to it, as OpenInference's annotations spec carries post-hoc feedback (``spec/annotations.md``):
# span kind EVALUATOR, the feedback as ``annotations.0.annotation.<field>``. The strings are those of
# openinference-semantic-conventions (``OpenInferenceSpanKindValues``, ``AnnotationAttributes``).
FINDING_CARRIER_SPAN: Final = f"{_NS}.evaluation"
OPENINFERENCE_KIND_EVALUATOR: Final = "EVALUATOR"
ANNOTATION_FIELDS: Final = (
    "name",
    "score",
    "label",
    "explanation",
    "annotator_kind",
    "identifier",
    "metadata",
)


def annotation_attribute(index: int, field: str) -> str:
    """``annotations.<index>.annotation.<field>``: one field of one flattened OpenInference annotation."""
    return f"annotations.{index}.annotation.{field}"


# ── The local recording's own account of itself ─────────────────────────
# A log record the recording writes into itself when spans could not be kept: how many, and (some
# of) the traces they belonged to, so a reader of the file knows which runs are incomplete.
RECORDING_DROPPED_EVENT: Final = f"{_NS}.recording.dropped"
RECORDING_DROPPED_SPANS: Final = f"{_NS}.recording.dropped_spans"
RECORDING_DROPPED_TRACES: Final = f"{_NS}.recording.dropped_traces"

# ── The pipeline stage's own metrics (``context-integrity serve --metrics``) ─
# Prometheus names, served by the stage itself. The findings it files count under the library's own
# findings metric (PROMETHEUS_FINDINGS_METRIC, same labels plus the run's service), so the alert
# rules that page on findings filed in process page on findings filed in the pipeline too.
SERVE_METRIC_PREFIX: Final = f"{_NS}_serve"
SERVE_SPANS_RECEIVED: Final = f"{SERVE_METRIC_PREFIX}_spans_received"
SERVE_SPANS_FORWARDED: Final = f"{SERVE_METRIC_PREFIX}_spans_forwarded"
SERVE_SPANS_LATE: Final = f"{SERVE_METRIC_PREFIX}_spans_late"
SERVE_SPANS_DROPPED: Final = f"{SERVE_METRIC_PREFIX}_spans_dropped"
SERVE_SPANS_UNJUDGED: Final = f"{SERVE_METRIC_PREFIX}_spans_unjudged"
SERVE_TRACES_JUDGED: Final = f"{SERVE_METRIC_PREFIX}_traces_judged"
SERVE_TRACES_HELD: Final = f"{SERVE_METRIC_PREFIX}_traces_held"
SERVE_HELD_BYTES: Final = f"{SERVE_METRIC_PREFIX}_held_bytes"
SERVE_QUEUE_BYTES: Final = f"{SERVE_METRIC_PREFIX}_retry_queue_bytes"
SERVE_FORWARD_SECONDS: Final = f"{SERVE_METRIC_PREFIX}_receipt_to_forward_seconds"
SERVE_JUDGE_SECONDS: Final = f"{SERVE_METRIC_PREFIX}_judge_seconds"
SERVE_FORWARD_FAILURES: Final = f"{SERVE_METRIC_PREFIX}_forward_failures"
SERVE_REQUESTS_REFUSED: Final = f"{SERVE_METRIC_PREFIX}_requests_refused"
# The reason label of the dropped, unjudged and refused counters, and its values.
SERVE_REASON: Final = "reason"
# Metric label of the service a finding's run ran in (the resource's service.name, as the
# Collector's resource_to_telemetry_conversion names it).
SERVE_SERVICE_LABEL: Final = "service_name"
