"""OpenLLMetry (Traceloop): ``traceloop.*`` attributes, and the legacy ``gen_ai.prompt.*`` keys.

What its instrumentors write (``opentelemetry-semantic-conventions-ai``'s ``SpanAttributes``, the
LangChain instrumentor's ``callback_handler.py`` and ``span_utils.py``):

- ``traceloop.span.kind`` (``workflow``, ``task``, ``agent``, ``tool``, ``llm``), ``traceloop.entity.name``,
  ``traceloop.entity.input`` / ``traceloop.entity.output`` (JSON). What the entity was handed is
  wrapped: ``{"args": [...], "kwargs": {...}}`` for a decorated function, LangChain's
  ``{"input_str": ..., "tags", "metadata", ...}`` for a tool (``input_str`` is ``str()`` of the
  arguments, a Python literal) and ``{"inputs": ...}`` for a chain; what it returned is
  ``{"output": ...}`` (a tool: a serialized ``ToolMessage``) or ``{"outputs": ...}`` (a chain: the
  agent's state). The tool spans' ``gen_ai.tool.call.arguments`` / ``.result`` hold the same wrappers;
  both are unwrapped here;
- model calls: the GenAI conventions' ``gen_ai.input.messages`` / ``gen_ai.output.messages`` in recent
  versions, else the legacy flattened ``gen_ai.prompt.{i}.{role,content,tool_call_id,
  tool_calls.{k}.*}`` and ``gen_ai.completion.{i}.*``, the tools offered as
  ``gen_ai.tool.definitions`` or ``llm.request.functions.{i}.*``.

Content capture is on unless ``TRACELOOP_TRACE_CONTENT=false``; without it the content attributes are
absent, and say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ...loop import Message, ModelResponse, RequestFrame, ToolCall, ToolDefinition
from ...telemetry.schema import names
from ..readings import AgentReading, AnswerReading, Missing, ModelCallReading, Reading, ToolReading
from ..spans import Attributes, Span
from ..values import arguments_of, first_of, structured, text_of
from . import _langchain, genai
from .openinference import indexed

KEY: Final = "openllmetry"

SPAN_KIND: Final = "traceloop.span.kind"
ENTITY_NAME: Final = "traceloop.entity.name"
ENTITY_INPUT: Final = "traceloop.entity.input"
ENTITY_OUTPUT: Final = "traceloop.entity.output"
WORKFLOW_NAME: Final = "traceloop.workflow.name"
KIND_TOOL: Final = "tool"
KIND_LLM: Final = "llm"
AGENT_KINDS: Final = frozenset({"workflow", "agent"})
LEGACY_PROMPTS: Final = "gen_ai.prompt"
LEGACY_COMPLETIONS: Final = "gen_ai.completion"
LEGACY_FUNCTIONS: Final = "llm.request.functions"
# What marks a span as OpenLLMetry's, cheaply: its own attributes, or a legacy prompt or completion.
_MARKS: Final = (
    SPAN_KIND,
    WORKFLOW_NAME,
    ENTITY_INPUT,
    ENTITY_OUTPUT,
    f"{LEGACY_PROMPTS}.0.role",
    f"{LEGACY_PROMPTS}.0.content",
    f"{LEGACY_COMPLETIONS}.0.role",
    f"{LEGACY_COMPLETIONS}.0.content",
)
_CONTENT_OFF: Final = (
    "content capture is off (TRACELOOP_TRACE_CONTENT=false), or this instrumentor does not record it"
)

_WHAT_REQUEST: Final = "the request the model received"
_WHAT_RESPONSE: Final = "the model's response"
_WHAT_ARGUMENTS: Final = "the tool's arguments"
_WHAT_RESULT: Final = "the tool's result"


def unwrapped_input(value: object, key: str) -> Mapping[str, Any] | Missing:
    """A tool's arguments from an entity input: ``{"args", "kwargs"}``, LangChain's ``{"input_str"}``,
    or the arguments themselves."""
    read = structured(value, key=key, what=_WHAT_ARGUMENTS, text_is_value=True)
    if isinstance(read, Missing):
        return read
    if isinstance(read, Mapping) and "input_str" in read:
        text = read["input_str"]
        parsed = arguments_of(text, key=f"{key} input_str") if isinstance(text, str) else None
        if isinstance(parsed, Mapping) and "$" not in parsed:
            return parsed
        literal = _langchain.python_literal(text) if isinstance(text, str) else None
        if isinstance(literal, Mapping):
            return dict(literal)
        return Missing(
            _WHAT_ARGUMENTS,
            f"{key} holds the tool's input_str ({text!r:.60}), which names no arguments",
        )
    if isinstance(read, Mapping) and "kwargs" in read and "args" in read:
        positional, keywords = read.get("args"), read.get("kwargs")
        if positional:
            return Missing(_WHAT_ARGUMENTS, f"{key} holds positional arguments, which have no names")
        return dict(keywords) if isinstance(keywords, Mapping) else {}
    if isinstance(read, Mapping):
        return dict(read)
    return {"$": read}


def unwrapped_output(value: object, key: str) -> tuple[object, str | None]:
    """A tool's result from an entity output (``{"output": ...}``, a ``ToolMessage``'s content, or the
    value itself), with the call id a ``ToolMessage`` carries."""
    read = structured(value, key=key, what=_WHAT_RESULT, text_is_value=True)
    if isinstance(read, Missing):
        return read, None
    message = _langchain.tool_message(read)
    if message is not None:
        content = message.get("content")
        parsed = structured(content, key=key, what=_WHAT_RESULT, text_is_value=True)
        return (parsed if not isinstance(parsed, Missing) else content), text_of(message.get("tool_call_id"))
    if isinstance(read, Mapping) and set(read) <= {"output", "kwargs"} and "output" in read:
        return read["output"], None
    return read, None


def _tool(span: Span) -> ToolReading:
    attributes = span.attributes
    name = (
        text_of(attributes.get(names.GEN_AI_TOOL_NAME)) or text_of(attributes.get(ENTITY_NAME)) or span.name
    )
    given = first_of(attributes, ENTITY_INPUT, names.GEN_AI_TOOL_CALL_ARGUMENTS)
    arguments = (
        Missing(_WHAT_ARGUMENTS, f"the span has no {ENTITY_INPUT}: {_CONTENT_OFF}")
        if given is None
        else unwrapped_input(given[1], given[0])
    )
    returned = first_of(attributes, ENTITY_OUTPUT, names.GEN_AI_TOOL_CALL_RESULT)
    call_id = text_of(attributes.get(names.GEN_AI_TOOL_CALL_ID))
    result: object
    if returned is None:
        result = Missing(_WHAT_RESULT, f"the span has no {ENTITY_OUTPUT}: {_CONTENT_OFF}")
    else:
        result, carried = unwrapped_output(returned[1], returned[0])
        call_id = call_id or carried
    return ToolReading(name, call_id or None, arguments, result)


def _legacy_calls(entry: Mapping[str, object]) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = []
    for call in indexed(entry, "tool_calls"):
        raw = call.get("arguments")
        arguments = {} if raw is None else arguments_of(raw, key="tool_calls.*.arguments")
        calls.append(
            ToolCall(
                text_of(call.get("name")) or "",
                (text_of(call.get("id")) or "").strip(),
                arguments if not isinstance(arguments, Missing) else {},
            )
        )
    return tuple(calls)


def legacy_messages(attributes: Attributes, prefix: str) -> tuple[Message, ...] | None:
    """The flattened ``gen_ai.prompt.*`` / ``gen_ai.completion.*`` messages; ``None`` if none."""
    entries = indexed(attributes, prefix)
    if not entries:
        return None
    out: list[Message] = []
    for entry in entries:
        role = genai.role_of(entry.get("role"))
        content = entry.get("content")
        if role == "tool":
            out.append(Message("tool", content, tool_call_id=text_of(entry.get("tool_call_id"))))
        else:
            out.append(Message(role, "" if content is None else content, tool_calls=_legacy_calls(entry)))
    return tuple(out)


def _legacy_tools(attributes: Attributes) -> tuple[ToolDefinition, ...] | None:
    entries = indexed(attributes, LEGACY_FUNCTIONS)
    if not entries:
        return None
    tools = []
    for entry in entries:
        name = text_of(entry.get("name"))
        if not name:
            continue
        schema = entry.get("parameters")
        read = (
            structured(schema, key=f"{LEGACY_FUNCTIONS}.*.parameters", what="a tool's schema")
            if schema
            else None
        )
        tools.append(
            ToolDefinition(
                name, text_of(entry.get("description")), read if isinstance(read, Mapping) else None
            )
        )
    return tuple(tools)


def _model_call(span: Span) -> ModelCallReading:
    attributes = span.attributes
    if names.GEN_AI_INPUT_MESSAGES in attributes or names.GEN_AI_OUTPUT_MESSAGES in attributes:
        read = genai.model_call_of(attributes, span.trace_id)
        said = tuple(
            Missing(
                m.what,
                m.why.replace(
                    "(content capture is off, or this instrumentation does not record it)",
                    f"({_CONTENT_OFF})",
                ),
            )
            for m in read.missing
        )
        return ModelCallReading(read.request, read.response, said)
    missing: list[Missing] = []
    request: RequestFrame | None = None
    prompts = legacy_messages(attributes, LEGACY_PROMPTS)
    if prompts is None:
        missing.append(
            Missing(
                _WHAT_REQUEST,
                f"the span has no {names.GEN_AI_INPUT_MESSAGES} nor {LEGACY_PROMPTS}.*: {_CONTENT_OFF}",
            )
        )
    else:
        tools = _legacy_tools(attributes)
        if tools is None:
            definitions = attributes.get(names.GEN_AI_TOOL_DEFINITIONS)
            read_tools = genai.tools_of(definitions) if definitions is not None else None
            if isinstance(read_tools, tuple):
                tools = read_tools
            else:
                missing.append(
                    Missing(
                        "the tools offered with the request",
                        f"the span has no {LEGACY_FUNCTIONS}.* nor {names.GEN_AI_TOOL_DEFINITIONS}",
                    )
                )
        system = "\n".join(m.content for m in prompts if m.role == "system" and isinstance(m.content, str))
        model = text_of(attributes.get(names.GEN_AI_REQUEST_MODEL))
        request = RequestFrame(
            tuple(m for m in prompts if m.role != "system"), system or None, tools or (), model
        )
    response: ModelResponse | None = None
    completions = legacy_messages(attributes, LEGACY_COMPLETIONS)
    if completions is None:
        missing.append(
            Missing(
                _WHAT_RESPONSE,
                f"the span has no {names.GEN_AI_OUTPUT_MESSAGES} nor {LEGACY_COMPLETIONS}.*: {_CONTENT_OFF}",
            )
        )
    else:
        response = genai.response_from(completions, text_of(attributes.get(names.GEN_AI_RESPONSE_ID)))
    return ModelCallReading(request, response, tuple(missing))


def _agent(span: Span) -> AgentReading:
    attributes = span.attributes
    name = (
        text_of(attributes.get(names.GEN_AI_AGENT_NAME))
        or text_of(attributes.get(ENTITY_NAME))
        or text_of(attributes.get(WORKFLOW_NAME))
    )
    answer: AnswerReading | None = None
    output = attributes.get(ENTITY_OUTPUT)
    if output is not None:
        read = structured(output, key=ENTITY_OUTPUT, what="the run's final answer", text_is_value=True)
        said = _langchain.state_messages(read)
        if said is not None:
            content = _langchain.last_assistant_text(said)
            if content is not None:
                answer = AnswerReading(content, None, span.end_time_unix_nano)
        elif isinstance(read, str):
            answer = AnswerReading(read, None, span.end_time_unix_nano)
    return AgentReading(name, answer)


def read_openllmetry(span: Span) -> Reading | None:
    """What an OpenLLMetry span says of the agent's work (``None``: no agent work)."""
    attributes = span.attributes
    kind = attributes.get(SPAN_KIND)
    if not isinstance(kind, str):
        kind = None  # a span kind that is no text names no kind (and a list cannot be looked up)
    operation = genai.operation_of(span)
    if kind == KIND_TOOL or operation == names.OPERATION_EXECUTE_TOOL:
        return _tool(span)
    if operation in genai.MODEL_OPERATIONS or kind == KIND_LLM or f"{LEGACY_PROMPTS}.0.role" in attributes:
        return _model_call(span)
    if kind in AGENT_KINDS or operation == names.OPERATION_INVOKE_AGENT:
        return _agent(span)
    return None


class OpenLLMetryDialect:
    """OpenLLMetry's instrumentors (Traceloop)."""

    key = KEY
    # What every span it claims carries (see Dialect.claims): one of its marks' attribute keys.
    signs: Final = _MARKS

    def claims(self, span: Span) -> bool:
        attributes = span.attributes
        return any(mark in attributes for mark in _MARKS)

    def read(self, span: Span) -> Reading | None:
        return read_openllmetry(span)


DIALECT: Final = OpenLLMetryDialect()
