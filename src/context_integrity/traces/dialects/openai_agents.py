"""The OpenAI Agents SDK, as Logfire and contrib's ``openai-agents-v2`` instrumentation export it.

The SDK traces itself (``agents.tracing``); exporters turn its span data into OpenTelemetry spans.
OpenInference's processor writes its own conventions (read by :mod:`.openinference`). The two read
here:

- **Logfire** (``logfire.instrument_openai_agents()``, instrumentation scope ``logfire.openai_agents``)
  writes each span's data as attributes, named by ``logfire.msg_template``: ``Agent run: {name!r}``
  (``name``, ``tools``: names only), ``Function: {name}`` (``input``: the arguments' JSON, ``output``:
  the result), ``Chat completion with ...`` (``input`` / ``output``: Chat Completions messages) and
  ``Responses API ...`` (``raw_input``: the Responses input items, ``response``: the response, with its
  ``output`` items, ``instructions`` and the ``tools`` offered);
- **contrib's** ``opentelemetry-instrumentation-openai-agents-v2`` (scope
  ``opentelemetry.instrumentation.openai_agents``) writes the GenAI conventions, read as
  :mod:`.genai` reads them, except its responses: version 0.1 writes each as text parts only (a tool
  call as the text of a Python object, ``ResponseFunctionToolCall(...)``, or not at all), so every
  response is :class:`~..readings.Missing`, never a text answer. Where the SDK's
  ``trace_include_sensitive_data`` is off it writes ``readacted`` in place of content: hidden.

Neither exports the call id on a tool's span: the assembler joins each execution to the model's call
by the tool's name and the order of the calls, and says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Final

from ...loop import Message, ModelResponse, RequestFrame, ToolCall, ToolDefinition
from ...telemetry.schema import names
from ..readings import AgentReading, Missing, ModelCallReading, Reading, ToolReading
from ..spans import Span
from ..values import arguments_of, hidden, not_recorded, structured, text_of
from . import genai

KEY: Final = "openai_agents"

LOGFIRE_SCOPE: Final = "logfire.openai_agents"
CONTRIB_SCOPE: Final = "opentelemetry.instrumentation.openai_agents"
MSG_TEMPLATE: Final = "logfire.msg_template"
# Logfire's span templates, by what they start with.
AGENT_TEMPLATE: Final = "Agent run:"
FUNCTION_TEMPLATE: Final = "Function:"
CHAT_TEMPLATE: Final = "Chat completion"
RESPONSES_TEMPLATE: Final = "Responses API"
# The attributes Logfire writes the span data into.
NAME: Final = "name"
INPUT: Final = "input"
OUTPUT: Final = "output"
RAW_INPUT: Final = "raw_input"
RESPONSE: Final = "response"

# contrib 0.1 writes every response as text parts (``_normalize_output_messages_to_role_parts``).
_CONTRIB_RESPONSE: Final = (
    "contrib's openai-agents-v2 (0.1) writes a response as text parts only: its tool calls become the "
    "text of Python objects, or are left out when the response also says something, so the calls it "
    "made cannot be read"
)
# What contrib writes in place of content when the SDK's ``trace_include_sensitive_data`` is off.
CONTRIB_HIDDEN: Final = "readacted"
_WHAT_REQUEST: Final = "the request the model received"
_WHAT_RESPONSE: Final = "the model's response"


def _call(function_id: object, name: object, arguments: object) -> ToolCall:
    read = arguments_of(arguments, key="a function call's arguments") if arguments is not None else {}
    return ToolCall(
        text_of(name) or "",
        (text_of(function_id) or "").strip(),
        read if not isinstance(read, Missing) else {},
    )


def _text(content: object) -> object:
    """Chat or Responses content: a string, or its text parts joined."""
    if isinstance(content, (list, tuple)):
        texts = [part.get("text") for part in content if isinstance(part, Mapping)]
        return "\n".join(t for t in texts if isinstance(t, str))
    return "" if content is None else content


def chat_messages(value: object) -> tuple[Message, ...] | None:
    """Chat Completions messages (``{"role", "content", "tool_calls", "tool_call_id"}``); ``None``
    when ``value`` is not a list of them."""
    if not isinstance(value, (list, tuple)):
        return None
    out: list[Message] = []
    for entry in value:
        if not isinstance(entry, Mapping):
            continue
        role = genai.role_of(entry.get("role"))
        if role == "tool":
            out.append(Message("tool", entry.get("content"), tool_call_id=text_of(entry.get("tool_call_id"))))
            continue
        calls = []
        for call in entry.get("tool_calls") or ():
            if isinstance(call, Mapping):
                function = call.get("function") if isinstance(call.get("function"), Mapping) else {}
                assert isinstance(function, Mapping)
                calls.append(_call(call.get("id"), function.get("name"), function.get("arguments")))
        out.append(Message(role, _text(entry.get("content")), tool_calls=tuple(calls)))
    return tuple(out)


def response_items(value: object) -> tuple[Message, ...] | None:
    """Responses API items (messages, ``function_call``, ``function_call_output``) as messages, each
    run of function calls one assistant message; ``None`` when ``value`` is not a list of items."""
    if isinstance(value, str):
        return (Message("user", value),)
    if not isinstance(value, (list, tuple)):
        return None
    out: list[Message] = []
    calls: list[ToolCall] = []

    def flush() -> None:
        if calls:
            out.append(Message("assistant", "", tool_calls=tuple(calls)))
            calls.clear()

    for item in value:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind == "function_call":
            calls.append(_call(item.get("call_id"), item.get("name"), item.get("arguments")))
        elif kind == "function_call_output":
            flush()
            output = item.get("output")
            read = structured(
                output, key="function_call_output", what="the tool's result", text_is_value=True
            )
            out.append(
                Message(
                    "tool",
                    output if isinstance(read, Missing) else read,
                    tool_call_id=text_of(item.get("call_id")),
                )
            )
        elif "role" in item:
            role = genai.role_of(item.get("role"))
            text = _text(item.get("content"))
            if role == "assistant" and calls:
                out.append(Message("assistant", text, tool_calls=tuple(calls)))
                calls.clear()
            else:
                flush()
                out.append(Message(role, text))
    flush()
    return tuple(out)


def _merged_response(messages: Sequence[Message], response_id: str | None) -> ModelResponse:
    """One response from the output items: every text said and every call made."""
    texts = [
        m.content for m in messages if m.role == "assistant" and isinstance(m.content, str) and m.content
    ]
    calls = tuple(call for m in messages for call in m.tool_calls)
    return ModelResponse(calls=calls, text="\n".join(texts) or None, response_id=response_id)


def _offered(tools: object) -> tuple[ToolDefinition, ...]:
    out = []
    for tool in tools if isinstance(tools, (list, tuple)) else ():
        if isinstance(tool, Mapping) and tool.get("type") == "function" and isinstance(tool.get("name"), str):
            parameters = tool.get("parameters")
            out.append(
                ToolDefinition(
                    tool["name"],
                    text_of(tool.get("description")),
                    parameters if isinstance(parameters, Mapping) else None,
                )
            )
    return tuple(out)


def _logfire_chat(span: Span) -> ModelCallReading:
    attributes = span.attributes
    missing: list[Missing] = []
    request: RequestFrame | None = None
    given = structured(attributes.get(INPUT), key=INPUT, what=_WHAT_REQUEST)
    messages = chat_messages(given) if not isinstance(given, Missing) else None
    if isinstance(given, Missing):
        missing.append(given)
    elif messages is None:
        missing.append(Missing(_WHAT_REQUEST, f"{INPUT} is not a list of messages"))
    else:
        system = "\n".join(m.content for m in messages if m.role == "system" and isinstance(m.content, str))
        request = RequestFrame(
            tuple(m for m in messages if m.role != "system"),
            system or None,
            (),
            text_of(attributes.get(names.GEN_AI_REQUEST_MODEL)),
        )
        missing.append(
            Missing(
                "the tools offered with the request",
                "Logfire's Chat Completions span records the messages, not the tools offered",
            )
        )
    response: ModelResponse | None = None
    said = structured(attributes.get(OUTPUT), key=OUTPUT, what=_WHAT_RESPONSE)
    output = chat_messages(said) if not isinstance(said, Missing) else None
    if isinstance(said, Missing):
        missing.append(said)
    elif output is None:
        missing.append(Missing(_WHAT_RESPONSE, f"{OUTPUT} is not a list of messages"))
    else:
        response = genai.response_from(output)
    return ModelCallReading(request, response, tuple(missing))


def _logfire_responses(span: Span) -> ModelCallReading:
    attributes = span.attributes
    missing: list[Missing] = []
    body = structured(attributes.get(RESPONSE), key=RESPONSE, what=_WHAT_RESPONSE)
    body = body if isinstance(body, Mapping) else {}
    request: RequestFrame | None = None
    given = structured(attributes.get(RAW_INPUT), key=RAW_INPUT, what=_WHAT_REQUEST, text_is_value=True)
    messages = response_items(given) if not isinstance(given, Missing) else None
    if isinstance(given, Missing):
        missing.append(given)
    elif messages is None:
        missing.append(Missing(_WHAT_REQUEST, f"{RAW_INPUT} is not a list of Responses input items"))
    else:
        if "tools" not in body:
            missing.append(not_recorded("the tools offered with the request", f"{RESPONSE}.tools"))
        request = RequestFrame(
            messages,
            text_of(body.get("instructions")),
            _offered(body.get("tools")),
            text_of(attributes.get(names.GEN_AI_REQUEST_MODEL)),
        )
    response: ModelResponse | None = None
    items = response_items(body.get("output")) if body else None
    if items is None:
        missing.append(not_recorded(_WHAT_RESPONSE, f"{RESPONSE}.output"))
    else:
        response = _merged_response(items, text_of(body.get("id")))
    return ModelCallReading(request, response, tuple(missing))


def _logfire_function(span: Span) -> ToolReading:
    attributes = span.attributes
    result_value = attributes.get(OUTPUT)
    result = (
        not_recorded("the tool's result", OUTPUT)
        if result_value is None
        else structured(result_value, key=OUTPUT, what="the tool's result", text_is_value=True)
    )
    arguments = (
        not_recorded("the tool's arguments", INPUT)
        if attributes.get(INPUT) is None
        else arguments_of(attributes.get(INPUT), key=INPUT)
    )
    return ToolReading(text_of(attributes.get(NAME)) or span.name, None, arguments, result)


def _read_logfire(span: Span) -> Reading | None:
    template = text_of(span.attributes.get(MSG_TEMPLATE)) or ""
    if template.startswith(FUNCTION_TEMPLATE):
        return _logfire_function(span)
    if template.startswith(CHAT_TEMPLATE):
        return _logfire_chat(span)
    if template.startswith(RESPONSES_TEMPLATE):
        return _logfire_responses(span)
    if template.startswith(AGENT_TEMPLATE):
        return AgentReading(text_of(span.attributes.get(NAME)))
    return None


def _contrib_hidden(value: object) -> bool:
    """Whether contrib wrote :data:`CONTRIB_HIDDEN` in place of a part's content."""
    if isinstance(value, str):
        return f'"{CONTRIB_HIDDEN}"' in value
    if isinstance(value, (list, tuple)):
        return any(_contrib_hidden(item) for item in value)
    if isinstance(value, Mapping):
        return any(item == CONTRIB_HIDDEN or _contrib_hidden(item) for item in value.values())
    return False


def _read_contrib(span: Span) -> Reading | None:
    reading = genai.read_genai(span)
    if isinstance(reading, ModelCallReading):
        missing = [*reading.missing, Missing(_WHAT_RESPONSE, _CONTRIB_RESPONSE)]
        request = reading.request
        if _contrib_hidden(span.attributes.get(names.GEN_AI_INPUT_MESSAGES)):
            request = None
            missing.append(
                hidden(_WHAT_REQUEST, f"part of {names.GEN_AI_INPUT_MESSAGES} ({CONTRIB_HIDDEN!r})")
            )
        return ModelCallReading(request, None, tuple(missing))
    if isinstance(reading, ToolReading):
        attributes = span.attributes
        if attributes.get(names.GEN_AI_TOOL_CALL_ARGUMENTS) == CONTRIB_HIDDEN:
            reading = dataclasses.replace(
                reading, arguments=hidden("the tool's arguments", names.GEN_AI_TOOL_CALL_ARGUMENTS)
            )
        if attributes.get(names.GEN_AI_TOOL_CALL_RESULT) == CONTRIB_HIDDEN:
            reading = dataclasses.replace(
                reading, result=hidden("the tool's result", names.GEN_AI_TOOL_CALL_RESULT)
            )
    return reading


def read_openai_agents(span: Span) -> Reading | None:
    """What a span of the Agents SDK, exported by Logfire or contrib, says (``None``: no agent work)."""
    if span.scope == LOGFIRE_SCOPE:
        return _read_logfire(span)
    return _read_contrib(span)


class OpenAIAgentsDialect:
    """The OpenAI Agents SDK's traces, as Logfire and contrib's instrumentation export them."""

    key = KEY
    # What every span it claims carries (see Dialect.claims): one of the two scopes' names.
    signs: Final = (LOGFIRE_SCOPE, CONTRIB_SCOPE)

    def claims(self, span: Span) -> bool:
        return span.scope in (LOGFIRE_SCOPE, CONTRIB_SCOPE)

    def read(self, span: Span) -> Reading | None:
        return read_openai_agents(span)


DIALECT: Final = OpenAIAgentsDialect()
