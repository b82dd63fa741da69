"""The OpenTelemetry GenAI semantic conventions, as they stand (``gen_ai.*``; status: Development).

- ``invoke_agent`` spans: an agent run, ``gen_ai.agent.name``; its final answer in
  ``gen_ai.output.messages`` when the instrumentation records it there;
- ``chat`` / ``text_completion`` / ``generate_content`` spans: a model call. The request is
  ``gen_ai.input.messages`` (messages of typed parts: ``text``, ``tool_call``, ``tool_call_response``),
  ``gen_ai.system_instructions`` and ``gen_ai.tool.definitions``; the response
  ``gen_ai.output.messages``. Where the span carries none of them, the conventions' event
  ``gen_ai.client.inference.operation.details`` may, and is read;
- ``execute_tool`` spans: ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, and the opt-in
  ``gen_ai.tool.call.arguments`` / ``gen_ai.tool.call.result``.

Every content attribute may be the structure itself or its JSON text. Parts are read by their
type, never by the role of the message holding them: a ``tool_call_response`` part in a ``user``
message (as some instrumentations send tool results) is a tool result all the same. Content capture
is off by default in these conventions: a span without it reads as :class:`~..readings.Missing`, and
so do messages recorded as structure only (a ``text`` part with no ``content``, as pydantic-ai
writes with ``include_content=False``): a part with no content is no empty text.

Listed last in :data:`~.DIALECTS`: every other dialect writes ``gen_ai.*`` too, and knows its own
spans better. The readers here are shared with them (``messages_of``, ``response_of``, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from ...limits import MAX_REMEMBERED_DECODINGS, MAX_REMEMBERED_TEXT_CHARS
from ...loop import Message, ModelResponse, RequestFrame, Role, ToolCall, ToolDefinition
from ...telemetry.schema import names
from ..readings import AgentReading, AnswerReading, Missing, ModelCallReading, Reading, ToolReading
from ..spans import Attributes, Span
from ..values import arguments_of, looks_like_json_container, not_recorded, parsed_json, structured, text_of

KEY: Final = "genai"

MODEL_OPERATIONS: Final = frozenset(
    {names.OPERATION_CHAT, names.OPERATION_TEXT_COMPLETION, names.OPERATION_GENERATE_CONTENT}
)

_ROLES: Final[Mapping[str, Role]] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "model": "assistant",
    "ai": "assistant",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
}

_WHAT_REQUEST: Final = "the request the model received"
_WHAT_RESPONSE: Final = "the model's response"
_WHAT_TOOLS: Final = "the tools offered with the request"


def role_of(value: object) -> Role:
    """A message's role in the loop's vocabulary; an unknown role is a user's (its words are ground)."""
    return _ROLES.get(value.lower(), "user") if isinstance(value, str) else "user"


def _part_type(part: Mapping[str, Any]) -> object:
    return part.get(names.PART_TYPE)


def _text_of_part(part: Mapping[str, Any]) -> str | None:
    content = part.get("content")
    if isinstance(content, str):
        return content
    text = part.get("text")
    return text if isinstance(text, str) else None


def tool_call_of(part: Mapping[str, Any]) -> ToolCall:
    """A ``tool_call`` part as the loop's :class:`ToolCall` (arguments read as an object)."""
    name = part.get("name")
    call_id = part.get("id")
    arguments = arguments_of(part.get("arguments"), key="a tool_call part's arguments")
    return ToolCall(
        name=name if isinstance(name, str) else "",
        call_id=call_id if isinstance(call_id, str) else "",
        arguments=arguments if not isinstance(arguments, Missing) else {},
    )


def tool_response_of(part: Mapping[str, Any]) -> object:
    """A ``tool_call_response`` part's result: its ``response`` (``result`` in some writers), JSON text
    read as its structure, as the tool returned it."""
    value = part["response"] if "response" in part else part.get("result")
    if isinstance(value, str) and not looks_like_json_container(value):
        # A message's text as the model read it: parsed as JSON, "0E0" would come back as 0.0, "null"
        # as nothing and '"x"' without its quotes, and the checks would not read what the model read.
        return value
    read = structured(value, key="a tool_call_response part", what="the tool's result", text_is_value=True)
    return value if isinstance(read, Missing) else read


def messages_from(value: object, conversation: str | None = None) -> tuple[Message, ...] | None:
    """Messages in the conventions' shape (``{"role", "parts"}``), or in the older ``{"role",
    "content"}`` shape; ``None`` when ``value`` is not a list of messages at all.

    With ``conversation`` (a trace id), the messages decoded for that conversation's last request
    are reused wherever this one repeats them: each request costs what it added, and the judge meets
    the very message objects it met before, as in process.
    """
    if not isinstance(value, (list, tuple)):
        return None
    return _decoded(list(value), conversation, None, calls_checked=False)


def _decoded(
    entries: list[object], conversation: str | None, text: str | None, *, calls_checked: bool
) -> tuple[Message, ...]:
    """The messages of ``entries``, remembered for ``conversation`` with the ``text`` they were
    parsed from (see :func:`messages_from`)."""
    decoded: list[tuple[Message, ...]] = []
    if conversation is not None:
        before = _CONVERSATIONS.get(conversation)
        if before is not None:
            for entry, old_entry, old in zip(entries, before.entries, before.decoded):  # noqa: B905 - the shorter
                if entry is not old_entry and entry != old_entry:
                    break
                decoded.append(old)
    for entry in entries[len(decoded) :]:
        decoded.append(tuple(_message(entry)) if isinstance(entry, Mapping) else ())
    if conversation is not None:
        if len(_CONVERSATIONS) >= MAX_REMEMBERED_DECODINGS and conversation not in _CONVERSATIONS:
            _CONVERSATIONS.clear()
        _CONVERSATIONS[conversation] = _Conversation(entries, decoded, text, calls_checked)
    return tuple(message for messages in decoded for message in messages)


@dataclass(frozen=True, slots=True)
class _Conversation:
    """One trace's last request as read: its message entries, what each decoded to, and the JSON
    text they were parsed from (``None``: they came as structure). ``calls_checked``: the entries
    were found not stripped of tool calls' arguments either (see :func:`stripped`)."""

    entries: list[object]
    decoded: list[tuple[Message, ...]]
    text: str | None
    calls_checked: bool


# Trace id -> its last request, as read.
_CONVERSATIONS: dict[str, _Conversation] = {}
# (attribute, text) -> what it decoded to: the tools offered and the instructions, on every call.
_DECODED_TEXTS: dict[tuple[str, str], object] = {}


def _extension(text: str, before: _Conversation) -> tuple[list[object], list[object]] | None:
    """``text`` read as the JSON text ``before`` was parsed from with entries appended: (every
    entry, the appended ones), the remembered entries themselves first; ``None`` when it is not.

    Each request of a run repeats the history the last one sent and adds to it, and instrumentations
    write it with the same serializer each time: the last request's text with its closing bracket
    dropped is where this one's starts. Then only what follows it is parsed, and the run's history
    is parsed once instead of once per request. A JSON list ``[A]`` (A its elements, at least one)
    followed by ``,B]`` (B at least one element) is the list of A's elements and B's: the same entries a
    whole parse makes.
    """
    if before.text is None or not before.entries:
        return None
    if text == before.text:
        return list(before.entries), []
    opened = before.text.rstrip()[:-1]  # its closing "]": it parsed as a list
    if not text.startswith(opened):
        return None
    rest = text[len(opened) :].lstrip()
    if not rest.startswith(","):
        return None
    try:
        added = parsed_json("[" + rest[1:])
    except (ValueError, RecursionError):
        return None  # read whole, which says why it cannot be
    if not isinstance(added, list) or not added:
        return None  # "[A,]" is no JSON, though "[]" is
    return [*before.entries, *added], added


def _remembered(key: str, value: object, decode: Callable[[object], _T]) -> _T:
    """``decode(value)``, remembered for a text seen before under ``key`` (the same objects back)."""
    if not isinstance(value, str) or len(value) > MAX_REMEMBERED_TEXT_CHARS:
        return decode(value)
    found = _DECODED_TEXTS.get((key, value), _NOTHING)
    if found is not _NOTHING:
        return found  # type: ignore[return-value]
    made = decode(value)
    if len(_DECODED_TEXTS) >= MAX_REMEMBERED_DECODINGS:
        _DECODED_TEXTS.clear()
    _DECODED_TEXTS[key, value] = made
    return made


_NOTHING: Final = object()
_T = TypeVar("_T")


def _message(entry: Mapping[str, Any]) -> list[Message]:
    role = role_of(entry.get("role"))
    parts = entry.get("parts")
    correction = entry.get("correction") is True
    if not isinstance(parts, (list, tuple)):
        content = entry.get("content")
        call_id = entry.get("tool_call_id")
        if role == "tool" or call_id is not None:
            return [
                Message(
                    "tool",
                    content,
                    tool_name=text_of(entry.get("name")),
                    tool_call_id=call_id if isinstance(call_id, str) else None,
                )
            ]
        return [Message(role, "" if content is None else content, correction=correction)]
    out: list[Message] = []
    texts: list[str] = []
    calls: list[ToolCall] = []

    def flush() -> None:
        if texts or calls:
            out.append(Message(role, "\n".join(texts), tool_calls=tuple(calls), correction=correction))
            texts.clear()
            calls.clear()

    for part in parts:
        if not isinstance(part, Mapping):
            if isinstance(part, str):
                texts.append(part)
            continue
        kind = _part_type(part)
        if kind == names.PART_TEXT:
            text = _text_of_part(part)
            if text is not None:
                texts.append(text)
        elif kind == names.PART_TOOL_CALL:
            calls.append(tool_call_of(part))
        elif kind == names.PART_TOOL_CALL_RESPONSE:
            flush()
            call_id = part.get("id")
            out.append(
                Message(
                    "tool",
                    tool_response_of(part),
                    tool_name=text_of(part.get("name")),
                    tool_call_id=call_id if isinstance(call_id, str) else None,
                )
            )
        # Other parts (reasoning, media, server tools) are no ground and ask for no call.
    flush()
    if not out and role != "tool":
        out.append(Message(role, "", correction=correction))
    return out


WITHHELD: Final = "the instrumentation recorded their structure only (content capture is off)"
# Which keys of each part type hold its content: a part without any of them was stripped of it.
_CONTENT_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    names.PART_TEXT: ("content", "text"),
    names.PART_TOOL_CALL_RESPONSE: ("response", "result"),
}
_CALL_CONTENT_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    **_CONTENT_KEYS,
    names.PART_TOOL_CALL: ("arguments",),
}


def stripped(value: object, *, calls: bool = False) -> bool:
    """Whether messages (as read, not as text) hold a part stripped of its content. A ``tool_call``
    without ``arguments`` counts only with ``calls`` (the conventions make a call's arguments
    optional: it is stripped only where the span's other content is)."""
    if not isinstance(value, (list, tuple)):
        return False
    content_keys = _CALL_CONTENT_KEYS if calls else _CONTENT_KEYS
    for message in value:
        parts = message.get("parts") if isinstance(message, Mapping) else None
        if not isinstance(parts, (list, tuple)):
            continue
        for part in parts:
            if not isinstance(part, Mapping):
                continue
            kind = part.get(names.PART_TYPE)
            keys = content_keys.get(kind) if isinstance(kind, str) else None
            if keys is not None and not any(key in part for key in keys):
                return True
    return False


def messages_of(
    value: object,
    *,
    key: str,
    what: str = _WHAT_REQUEST,
    conversation: str | None = None,
    withheld: str = WITHHELD,
    stripped_calls: bool = False,
) -> tuple[Message, ...] | Missing:
    """The messages of attribute ``key``, or why they cannot be read (``conversation``: see
    :func:`messages_from`; JSON text that extends the conversation's last request is parsed from
    where that one ended: see :func:`_extension`). Messages stripped of their content (see
    :func:`stripped`) are ``Missing``, ``withheld`` saying why."""
    before = _CONVERSATIONS.get(conversation) if conversation is not None else None
    extended = _extension(value, before) if before is not None and isinstance(value, str) else None
    read: object
    unchecked: object
    if extended is not None:
        assert before is not None
        read, added = extended
        # The remembered entries were checked when they were read, as strictly as now or more.
        unchecked = added if before.calls_checked or not stripped_calls else read
    else:
        read = structured(value, key=key, what=what)
        if isinstance(read, Missing):
            return read
        unchecked = read
    if stripped(unchecked, calls=stripped_calls):
        return Missing(what, f"{key} holds its messages without their content: {withheld}")
    if not isinstance(read, (list, tuple)):
        return Missing(what, f"{key} is not a list of messages")
    return _decoded(
        list(read), conversation, value if isinstance(value, str) else None, calls_checked=stripped_calls
    )


def system_of(value: object, *, key: str = names.GEN_AI_SYSTEM_INSTRUCTIONS) -> str | Missing | None:
    """System instructions: a list of parts (their texts joined), or plain text; ``None`` if absent."""
    if value is None:
        return None
    if isinstance(value, str) and not value.lstrip().startswith(("[", "{")):
        return value
    read = structured(value, key=key, what="the system instructions")
    if isinstance(read, Missing):
        return read
    if isinstance(read, str):
        return read
    parts = read if isinstance(read, (list, tuple)) else [read]
    texts = [text for part in parts if isinstance(part, Mapping) and (text := _text_of_part(part))]
    texts += [part for part in parts if isinstance(part, str)]
    return "\n".join(texts) if texts else None


def tools_of(
    value: object, *, key: str = names.GEN_AI_TOOL_DEFINITIONS
) -> tuple[ToolDefinition, ...] | Missing:
    """Tool definitions: ``{"type", "name", "description", "parameters"}`` (or the OpenAI shape with
    a ``function`` object), parameters as an object or its JSON text."""
    read = structured(value, key=key, what=_WHAT_TOOLS)
    if isinstance(read, Missing):
        return read
    if not isinstance(read, (list, tuple)):
        return Missing(_WHAT_TOOLS, f"{key} is not a list of tool definitions")
    tools: list[ToolDefinition] = []
    for entry in read:
        if not isinstance(entry, Mapping):
            continue
        body = entry.get("function") if isinstance(entry.get("function"), Mapping) else entry
        assert isinstance(body, Mapping)
        name = body.get("name")
        if not isinstance(name, str) or not name:
            continue
        schema = body.get("parameters", body.get("input_schema"))
        parsed = (
            structured(schema, key=f"{key} parameters", what="a tool's schema")
            if schema is not None
            else None
        )
        tools.append(
            ToolDefinition(
                name,
                text_of(body.get("description")),
                parsed if isinstance(parsed, Mapping) else None,
            )
        )
    return tuple(tools)


def response_from(messages: Sequence[Message], response_id: str | None = None) -> ModelResponse:
    """The response the first output message (choice 0) makes: its text and its tool calls."""
    assistant = [m for m in messages if m.role == "assistant"] or list(messages[:1])
    if not assistant:
        return ModelResponse(response_id=response_id)
    first = assistant[0]
    text = first.content if isinstance(first.content, str) and first.content else None
    return ModelResponse(calls=first.tool_calls, text=text, response_id=response_id)


def response_of(
    value: object,
    *,
    key: str,
    response_id: str | None = None,
    withheld: str = WITHHELD,
    stripped_calls: bool = False,
) -> ModelResponse | Missing:
    read = messages_of(value, key=key, what=_WHAT_RESPONSE, withheld=withheld, stripped_calls=stripped_calls)
    if isinstance(read, Missing):
        return read
    return response_from(read, response_id)


def answer_of(value: object, *, key: str, time_unix_nano: int | None = None) -> AnswerReading | Missing:
    """The final answer: the text of the last assistant message of ``key``."""
    read = messages_of(value, key=key, what="the run's final answer")
    if isinstance(read, Missing):
        return read
    said = [m for m in read if m.role == "assistant"] or list(read)
    if not said:
        return Missing("the run's final answer", f"{key} holds no message")
    last = said[-1]
    text = last.content if isinstance(last.content, str) else None
    return AnswerReading(text, None, time_unix_nano)


def content_attributes(span: Span) -> Attributes:
    """The span's attributes, with the content the conventions' operation-details event carries
    where the span itself has none of it."""
    attributes = span.attributes
    if names.GEN_AI_INPUT_MESSAGES in attributes or not span.events:
        return attributes
    for event in span.events:
        if event.name == names.GEN_AI_OPERATION_DETAILS_EVENT and event.attributes:
            return {**event.attributes, **attributes}
    return attributes


def model_call_of(
    attributes: Attributes, conversation: str | None = None, *, withheld: str = WITHHELD
) -> ModelCallReading:
    """A model call from the conventions' attributes; ``conversation`` (its trace id) lets the
    history its requests repeat be decoded once; ``withheld`` says why messages recorded without
    their content are missing."""
    missing: list[Missing] = []
    request: RequestFrame | None = None
    messages = messages_of(
        attributes.get(names.GEN_AI_INPUT_MESSAGES),
        key=names.GEN_AI_INPUT_MESSAGES,
        conversation=conversation,
        withheld=withheld,
    )
    if isinstance(messages, Missing):
        missing.append(messages)
    else:
        system = _remembered(
            names.GEN_AI_SYSTEM_INSTRUCTIONS, attributes.get(names.GEN_AI_SYSTEM_INSTRUCTIONS), system_of
        )
        if isinstance(system, Missing):
            missing.append(system)
            system = None
        tools = _remembered(
            names.GEN_AI_TOOL_DEFINITIONS, attributes.get(names.GEN_AI_TOOL_DEFINITIONS), tools_of
        )
        if isinstance(tools, Missing):
            missing.append(tools)
            tools = ()
        model = attributes.get(names.GEN_AI_REQUEST_MODEL)
        request = RequestFrame(messages, system, tools, model if isinstance(model, str) else None)
    response_id = text_of(attributes.get(names.GEN_AI_RESPONSE_ID))
    read = response_of(
        attributes.get(names.GEN_AI_OUTPUT_MESSAGES),
        key=names.GEN_AI_OUTPUT_MESSAGES,
        response_id=response_id,
        withheld=withheld,
        # A request stripped of its content strips the calls' arguments too.
        stripped_calls=isinstance(messages, Missing) and withheld in messages.why,
    )
    response: ModelResponse | None = None
    if isinstance(read, Missing):
        missing.append(read)
    else:
        response = read
    return ModelCallReading(request, response, tuple(missing))


def tool_name_of(span: Span, attributes: Attributes) -> str:
    name = attributes.get(names.GEN_AI_TOOL_NAME)
    if isinstance(name, str) and name:
        return name
    prefix = names.tool_span_name("")
    return span.name[len(prefix) :] if span.name.startswith(prefix) else span.name


def tool_of(span: Span, attributes: Attributes) -> ToolReading:
    call_id = attributes.get(names.GEN_AI_TOOL_CALL_ID)
    result_value = attributes.get(names.GEN_AI_TOOL_CALL_RESULT)
    result = (
        not_recorded("the tool's result", names.GEN_AI_TOOL_CALL_RESULT)
        if result_value is None
        else structured(
            result_value, key=names.GEN_AI_TOOL_CALL_RESULT, what="the tool's result", text_is_value=True
        )
    )
    return ToolReading(
        tool_name=tool_name_of(span, attributes),
        call_id=call_id if isinstance(call_id, str) and call_id else None,
        arguments=arguments_of(
            attributes.get(names.GEN_AI_TOOL_CALL_ARGUMENTS), key=names.GEN_AI_TOOL_CALL_ARGUMENTS
        ),
        result=result,
    )


def agent_of(attributes: Attributes, span: Span) -> AgentReading:
    name = attributes.get(names.GEN_AI_AGENT_NAME)
    output = attributes.get(names.GEN_AI_OUTPUT_MESSAGES)
    answer = (
        answer_of(output, key=names.GEN_AI_OUTPUT_MESSAGES, time_unix_nano=span.end_time_unix_nano)
        if output is not None
        else None
    )
    return AgentReading(
        agent_name=name if isinstance(name, str) and name else None,
        answer=answer if isinstance(answer, AnswerReading) else None,
        missing=(answer,) if isinstance(answer, Missing) else (),
    )


def operation_of(span: Span) -> str | None:
    """The span's ``gen_ai.operation.name``; else the operation its name starts with."""
    operation = span.attributes.get(names.GEN_AI_OPERATION_NAME)
    if isinstance(operation, str):
        return operation
    head = span.name.split(" ", 1)[0]
    return head if head in _NAMED_OPERATIONS else None


_NAMED_OPERATIONS: Final = frozenset(
    {names.OPERATION_INVOKE_AGENT, names.OPERATION_EXECUTE_TOOL, *MODEL_OPERATIONS}
)


def read_genai(span: Span) -> Reading | None:
    """What a span in the conventions says of the agent's work (``None``: no agent work)."""
    operation = operation_of(span)
    if operation == names.OPERATION_EXECUTE_TOOL:
        return tool_of(span, span.attributes)
    if operation in MODEL_OPERATIONS:
        return model_call_of(content_attributes(span), span.trace_id)
    if operation == names.OPERATION_INVOKE_AGENT:
        return agent_of(span.attributes, span)
    return None


class GenAIDialect:
    """The OpenTelemetry GenAI semantic conventions."""

    key = KEY
    # What every span it claims carries (see Dialect.claims): the operation's attribute key.
    signs: Final = (names.GEN_AI_OPERATION_NAME,)

    def claims(self, span: Span) -> bool:
        return names.GEN_AI_OPERATION_NAME in span.attributes

    def read(self, span: Span) -> Reading | None:
        return read_genai(span)


DIALECT: Final = GenAIDialect()
