"""OpenInference (Arize Phoenix's conventions): ``openinference.span.kind`` and flattened attributes.

What its instrumentors write (``spec/semantic_conventions.md``, ``spec/tool_calling.md``, and the
``openinference-semantic-conventions`` package's constants):

- ``LLM`` spans: the request as ``llm.input_messages.{i}.message.*`` (``role``, ``content`` or
  ``contents.{j}.message_content.text``, ``tool_calls.{k}.tool_call.{id,function.name,
  function.arguments}``, ``tool_call_id``, ``name``), the response as ``llm.output_messages.*``, the
  tools offered as ``llm.tools.{i}.tool.json_schema`` (a JSON schema in the OpenAI tool shape, or a
  bare parameters schema beside ``tool.name``). An absent ``function.arguments`` is ``{}``: the
  instrumentors leave out ``"{}"``;
- ``TOOL`` spans: ``tool.name``, ``tool_call.id`` (where the instrumentor knows it), the arguments as
  ``input.value`` and the result as ``output.value``, each with its ``*.mime_type``
  (``application/json`` or ``text/plain``). LangChain's tracer writes LangChain's own shapes there
  (the arguments as ``str()`` of them, the result as a serialized ``ToolMessage`` carrying the call
  id): read through :mod:`._langchain`;
- ``AGENT`` spans: an agent run (``agent.name``, else the span's name); a root ``CHAIN`` span is one
  too (a LangGraph agent), its final answer the last assistant message of the state it returns.

A value of ``__REDACTED__`` means the user hid it (``hide_inputs``, ``hide_input_text``, ...); hiding
inputs or outputs also removes ``llm.input_messages`` / ``llm.output_messages``, so a model call
whose messages are gone and whose ``input.value`` is ``__REDACTED__`` says it was hidden.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ...loop import Message, ModelResponse, RequestFrame, ToolCall, ToolDefinition
from ...telemetry.schema import names
from ..readings import AgentReading, AnswerReading, Missing, ModelCallReading, Reading, ToolReading
from ..spans import Attributes, Span
from ..values import arguments_of, hidden, is_redacted, not_recorded, parsed_json, structured, text_of
from . import _langchain, genai

KEY: Final = "openinference"

SPAN_KIND: Final = "openinference.span.kind"
KIND_LLM: Final = "LLM"
KIND_TOOL: Final = "TOOL"
KIND_AGENT: Final = "AGENT"
KIND_CHAIN: Final = "CHAIN"
INPUT_VALUE: Final = "input.value"
INPUT_MIME_TYPE: Final = "input.mime_type"
OUTPUT_VALUE: Final = "output.value"
INPUT_MESSAGES: Final = "llm.input_messages"
OUTPUT_MESSAGES: Final = "llm.output_messages"
LLM_TOOLS: Final = "llm.tools"
LLM_MODEL_NAME: Final = "llm.model_name"
TOOL_NAME: Final = "tool.name"
TOOL_CALL_ID: Final = "tool_call.id"
AGENT_NAME: Final = "agent.name"
METADATA: Final = "metadata"
# Relative to ``llm.*_messages.{i}.``.
MESSAGE_ROLE: Final = "message.role"
MESSAGE_CONTENT: Final = "message.content"
MESSAGE_CONTENTS: Final = "message.contents"
MESSAGE_NAME: Final = "message.name"
MESSAGE_TOOL_CALL_ID: Final = "message.tool_call_id"
MESSAGE_TOOL_CALLS: Final = "message.tool_calls"
CONTENT_TEXT: Final = "message_content.text"
# Relative to ``message.tool_calls.{k}.``.
CALL_ID: Final = "tool_call.id"
CALL_NAME: Final = "tool_call.function.name"
CALL_ARGUMENTS: Final = "tool_call.function.arguments"
# Relative to ``llm.tools.{i}.``.
TOOL_JSON_SCHEMA: Final = "tool.json_schema"
TOOL_DESCRIPTION: Final = "tool.description"
MIME_JSON: Final = "application/json"
# LangChain's agent name, in the metadata its tracer copies onto every span.
_LANGCHAIN_AGENT_NAME: Final = "lc_agent_name"
# smolagents' own roles, which its instrumentor records as they are: the model's calls written as
# text (its own words, never ground) and the tools' observations (named by no tool nor call id).
_AGENT_ROLES: Final[Mapping[str, str]] = {"tool-call": "assistant", "tool-response": "tool"}
_UNNAMED_RESULTS: Final = (
    "the request holds tool results that name neither their tool nor their call id "
    "(smolagents' 'tool-response' messages), so which results it still holds cannot be told"
)
# What only OpenInference writes: a span of its kind holding none of these is another convention's.
_OWN_MARKS: Final = (
    INPUT_VALUE,
    OUTPUT_VALUE,
    TOOL_NAME,
    LLM_MODEL_NAME,
    INPUT_MESSAGES,
    OUTPUT_MESSAGES,
    f"{INPUT_MESSAGES}.0.{MESSAGE_ROLE}",
    f"{OUTPUT_MESSAGES}.0.{MESSAGE_ROLE}",
    f"{LLM_TOOLS}.0.{TOOL_JSON_SCHEMA}",
    AGENT_NAME,
)
# The GenAI conventions' own content: a span holding it was written in them.
_GENAI_CONTENT: Final = (
    names.GEN_AI_INPUT_MESSAGES,
    names.GEN_AI_OUTPUT_MESSAGES,
    names.GEN_AI_TOOL_CALL_ARGUMENTS,
    names.GEN_AI_TOOL_CALL_RESULT,
)
# A flattened list index is a small decimal; a longer run of digits is no index anyone wrote.
_MAX_INDEX_DIGITS: Final = 6

_WHAT_REQUEST: Final = "the request the model received"
_WHAT_RESPONSE: Final = "the model's response"
_WHAT_ARGUMENTS: Final = "the tool's arguments"
_WHAT_RESULT: Final = "the tool's result"


def indexed(attributes: Attributes, prefix: str) -> list[dict[str, object]]:
    """The entries of a flattened list (``prefix.{i}.rest``), in index order, each as ``{rest: value}``.
    Indices may skip (instrumentors number some lists across messages); the order is kept."""
    entries: dict[int, dict[str, object]] = {}
    start = prefix + "."
    for key, value in attributes.items():
        if not key.startswith(start):
            continue
        head, _, rest = key[len(start) :].partition(".")
        if not rest or not head.isdigit() or len(head) > _MAX_INDEX_DIGITS:
            continue
        entries.setdefault(int(head), {})[rest] = value
    return [entries[index] for index in sorted(entries)]


def _text(entry: Mapping[str, object]) -> object:
    """A message's content: ``message.content``, else its text ``contents`` joined."""
    content = entry.get(MESSAGE_CONTENT)
    if content is not None:
        return content
    texts = [
        text for part in indexed(entry, MESSAGE_CONTENTS) if isinstance(text := part.get(CONTENT_TEXT), str)
    ]
    return "\n".join(texts) if texts else ""


def _calls(entry: Mapping[str, object]) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = []
    for call in indexed(entry, MESSAGE_TOOL_CALLS):
        name = text_of(call.get(CALL_NAME)) or ""
        raw = call.get(CALL_ARGUMENTS)
        arguments = {} if raw is None else arguments_of(raw, key=CALL_ARGUMENTS)
        calls.append(
            ToolCall(
                name=name,
                call_id=(text_of(call.get(CALL_ID)) or "").strip(),
                arguments=arguments if not isinstance(arguments, Missing) else {},
            )
        )
    return tuple(calls)


def _message(entry: Mapping[str, object]) -> Message:
    written = entry.get(MESSAGE_ROLE)
    role = genai.role_of(_AGENT_ROLES.get(written, written) if isinstance(written, str) else written)
    content = _text(entry)
    if role == "tool":
        return Message(
            "tool",
            content,
            tool_name=text_of(entry.get(MESSAGE_NAME)),
            tool_call_id=text_of(entry.get(MESSAGE_TOOL_CALL_ID)),
        )
    return Message(role, content, tool_calls=_calls(entry) if role == "assistant" else ())


def _redacted(entries: list[dict[str, object]]) -> bool:
    return any(is_redacted(value) for entry in entries for value in entry.values())


def messages_of(
    attributes: Attributes, prefix: str, what: str, value_key: str
) -> tuple[Message, ...] | Missing:
    """The messages flattened under ``prefix``, or why they are not there."""
    nested = attributes.get(prefix)
    if isinstance(nested, (list, tuple)):  # a backend that hands the list itself (Phoenix's API)
        entries = [_flat(entry) for entry in nested if isinstance(entry, Mapping)]
    else:
        entries = indexed(attributes, prefix)
    if entries:
        if _redacted(entries):
            return hidden(what, f"part of {prefix}")
        return tuple(_message(entry) for entry in entries)
    if is_redacted(attributes.get(value_key)):
        return hidden(what, value_key)
    return not_recorded(what, prefix)


def _flat(value: Mapping[str, Any], prefix: str = "") -> dict[str, object]:
    """A nested mapping as the flat ``{"message.role": ...}`` keys the instrumentors write."""
    out: dict[str, object] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, Mapping):
            out.update(_flat(item, name + "."))
        elif isinstance(item, (list, tuple)) and item and all(isinstance(i, Mapping) for i in item):
            for index, element in enumerate(item):
                out.update(_flat(element, f"{name}.{index}."))
        else:
            out[name] = item
    return out


def tools_of(attributes: Attributes) -> tuple[ToolDefinition, ...] | Missing | None:
    """The tools offered (``llm.tools.*``); ``None`` when the span records none."""
    entries = indexed(attributes, LLM_TOOLS)
    if not entries:
        return None
    tools: list[ToolDefinition] = []
    for entry in entries:
        schema = entry.get(TOOL_JSON_SCHEMA)
        read = structured(schema, key=f"{LLM_TOOLS}.*.{TOOL_JSON_SCHEMA}", what="a tool's schema")
        if not isinstance(read, Mapping):
            return Missing(
                "the tools offered with the request",
                f"{LLM_TOOLS}.*.{TOOL_JSON_SCHEMA} holds no tool schema "
                "(the framework handed the tracer its own tool objects)",
            )
        body = read.get("function") if isinstance(read.get("function"), Mapping) else read
        assert isinstance(body, Mapping)
        name = text_of(entry.get(TOOL_NAME)) or text_of(body.get("name"))
        if not name:
            return Missing("the tools offered with the request", f"a tool in {LLM_TOOLS} has no name")
        parameters = (
            body.get("parameters") if "parameters" in body else (read if "properties" in read else None)
        )
        tools.append(
            ToolDefinition(
                name,
                text_of(entry.get(TOOL_DESCRIPTION)) or text_of(body.get("description")),
                parameters if isinstance(parameters, Mapping) else None,
            )
        )
    return tuple(tools)


def _model_call(span: Span) -> ModelCallReading:
    attributes = span.attributes
    missing: list[Missing] = []
    request: RequestFrame | None = None
    messages = messages_of(attributes, INPUT_MESSAGES, _WHAT_REQUEST, INPUT_VALUE)
    if isinstance(messages, Missing):
        missing.append(messages)
    else:
        system = "\n".join(m.content for m in messages if m.role == "system" and isinstance(m.content, str))
        tools = tools_of(attributes)
        if tools is None:
            missing.append(not_recorded("the tools offered with the request", LLM_TOOLS))
            tools = ()
        elif isinstance(tools, Missing):
            missing.append(tools)
            tools = ()
        if any(m.role == "tool" and m.tool_call_id is None and m.tool_name is None for m in messages):
            missing.append(
                Missing("the tools offered with the request, and the results it holds", _UNNAMED_RESULTS)
            )
        request = RequestFrame(
            tuple(m for m in messages if m.role != "system"),
            system or None,
            tools,
            text_of(attributes.get(LLM_MODEL_NAME)),
        )
    response: ModelResponse | None = None
    output = messages_of(attributes, OUTPUT_MESSAGES, _WHAT_RESPONSE, OUTPUT_VALUE)
    if isinstance(output, Missing):
        missing.append(output)
    else:
        response = genai.response_from(output)
    return ModelCallReading(request, response, tuple(missing))


def _tool(span: Span) -> ToolReading:
    attributes = span.attributes
    name = text_of(attributes.get(TOOL_NAME)) or span.name
    call_id = text_of(attributes.get(TOOL_CALL_ID))
    result: object
    raw_result = attributes.get(OUTPUT_VALUE)
    if raw_result is None:
        result = not_recorded(_WHAT_RESULT, OUTPUT_VALUE)
    else:
        result = structured(raw_result, key=OUTPUT_VALUE, what=_WHAT_RESULT, text_is_value=True)
        message = _langchain.tool_message(result)
        if message is not None:  # LangChain's ToolMessage: its content is the result, it knows the call
            call_id = call_id or text_of(message.get("tool_call_id"))
            content = message.get("content")
            read = structured(content, key=OUTPUT_VALUE, what=_WHAT_RESULT, text_is_value=True)
            result = read if not isinstance(read, Missing) or content is None else content
    return ToolReading(name, call_id or None, _arguments(attributes), result)


def _arguments(attributes: Attributes) -> Mapping[str, Any] | Missing:
    raw = attributes.get(INPUT_VALUE)
    if raw is None:
        return not_recorded(_WHAT_ARGUMENTS, INPUT_VALUE)
    if is_redacted(raw):
        return hidden(_WHAT_ARGUMENTS, INPUT_VALUE)
    if isinstance(raw, Mapping):
        return dict(raw)
    if not isinstance(raw, str):
        return {"$": raw}
    try:
        read = parsed_json(raw)
    except (ValueError, RecursionError):
        read = _langchain.python_literal(raw) if raw.lstrip().startswith("{") else None
    if isinstance(read, Mapping) and isinstance(read.get("kwargs"), Mapping) and "args" in read:
        # A wrapped call (smolagents' tools): keyword arguments; positional ones have no names.
        if read.get("args"):
            return Missing(_WHAT_ARGUMENTS, f"{INPUT_VALUE} holds positional arguments, which have no names")
        return dict(read["kwargs"])
    if isinstance(read, Mapping):
        return dict(read)
    return Missing(
        _WHAT_ARGUMENTS,
        f"{INPUT_VALUE} holds the tool's input as text, not its arguments by name "
        "(LangChain's tracer writes the input string a single-argument tool was given)",
    )


def _agent_name(span: Span) -> str | None:
    attributes = span.attributes
    name = text_of(attributes.get(AGENT_NAME))
    if name:
        return name
    metadata = attributes.get(METADATA)
    read = structured(metadata, key=METADATA, what="metadata") if metadata is not None else None
    if isinstance(read, Mapping) and isinstance(read.get(_LANGCHAIN_AGENT_NAME), str):
        return str(read[_LANGCHAIN_AGENT_NAME])
    return span.name or None


def _agent(span: Span) -> AgentReading:
    """An agent run; its answer: the last assistant message where its output is a LangGraph state,
    else, on an ``AGENT`` span, the output itself (smolagents' final answer: text, or a JSON object
    for a typed answer). A root ``CHAIN`` span's other outputs are a chain's, not an answer."""
    attributes = span.attributes
    raw = attributes.get(OUTPUT_VALUE)
    answer: AnswerReading | None = None
    missing: tuple[Missing, ...] = ()
    if is_redacted(raw):
        missing = (hidden("the run's final answer", OUTPUT_VALUE),)
    elif raw is not None:
        read = structured(raw, key=OUTPUT_VALUE, what="the run's final answer", text_is_value=True)
        said = _langchain.state_messages(read)
        if said is not None:
            content = _langchain.last_assistant_text(said)
            if content is not None:
                answer = AnswerReading(content, None, span.end_time_unix_nano)
        elif attributes.get(SPAN_KIND) == KIND_AGENT and not isinstance(read, Missing):
            text = raw if isinstance(raw, str) else None
            output = dict(read) if isinstance(read, Mapping) else None
            answer = AnswerReading(text, output, span.end_time_unix_nano)
    return AgentReading(_agent_name(span), answer, None, missing)


def read_openinference(span: Span) -> Reading | None:
    """What an OpenInference span says of the agent's work (``None``: no agent work)."""
    kind = span.attributes.get(SPAN_KIND)
    if kind == KIND_LLM:
        return _model_call(span)
    if kind == KIND_TOOL:
        return _tool(span)
    if kind == KIND_AGENT or (kind == KIND_CHAIN and span.parent_span_id is None):
        return _agent(span)
    return None


class OpenInferenceDialect:
    """OpenInference's conventions, whichever framework its instrumentor traced."""

    key = KEY
    # What every span it claims carries (see Dialect.claims): the span kind's attribute key.
    signs: Final = (SPAN_KIND,)

    def claims(self, span: Span) -> bool:
        attributes = span.attributes
        if SPAN_KIND not in attributes:
            return False
        if names.GEN_AI_OPERATION_NAME not in attributes:
            return True
        # A span in the GenAI conventions as Phoenix stores it: Phoenix infers a span kind and adds
        # a partial translation into OpenInference's attributes (no output messages, the arguments
        # as tool.parameters). The conventions' own content is the original: the GenAI dialect reads
        # it. So does it a span with none of OpenInference's own attributes.
        return not any(key in attributes for key in _GENAI_CONTENT) and any(
            mark in attributes for mark in _OWN_MARKS
        )

    def read(self, span: Span) -> Reading | None:
        return read_openinference(span)


DIALECT: Final = OpenInferenceDialect()
