"""pydantic-ai's messages read as the judge's loop protocol: the request as the model receives it,
the response it returned, the run's final answer as text."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel
from pydantic_ai import messages as pm
from pydantic_ai.models import ModelRequestParameters

from ..limits import MAX_ATTRIBUTE_CHARS
from ..loop import Message, ModelResponse, RequestFrame, ToolCall, ToolDefinition, content_text
from ..text import bounded_json, clip


def _user_content(content: object) -> object:
    """A user prompt's content; a non-text part (an image, a file) stands as its type name only."""
    if isinstance(content, str) or not isinstance(content, Sequence):
        return content
    return [item if isinstance(item, str) else f"<{type(item).__name__}>" for item in content]


def _arguments(part: pm.ToolCallPart) -> Mapping[str, Any]:
    try:
        return part.args_as_dict()
    except Exception:  # arguments that are not JSON: the call still happened, with nothing readable
        return {}


def _calls(parts: Sequence[object], outputs: frozenset[str] = frozenset()) -> tuple[ToolCall, ...]:
    return tuple(
        ToolCall(name=p.tool_name, call_id=p.tool_call_id, arguments=_arguments(p))
        for p in parts
        if isinstance(p, pm.ToolCallPart) and p.tool_name not in outputs
    )


def _request_messages(request: pm.ModelRequest, system: list[str]) -> list[Message]:
    out: list[Message] = []
    for part in request.parts:
        if isinstance(part, pm.SystemPromptPart):
            system.append(part.content)
        elif isinstance(part, pm.UserPromptPart):
            out.append(Message("user", _user_content(part.content)))
        elif isinstance(part, pm.ToolReturnPart):
            # Rendered here, once per run for each result (see MessageCache), as the judge would
            # render it: the frame-reading checks read text, and a long run re-sends every result.
            out.append(
                Message(
                    "tool",
                    content_text(part.content),
                    tool_name=part.tool_name,
                    tool_call_id=part.tool_call_id,
                )
            )
        elif isinstance(part, pm.RetryPromptPart):
            out.append(
                Message(
                    "tool" if part.tool_name else "user",
                    part.model_response(),
                    tool_name=part.tool_name,
                    tool_call_id=part.tool_call_id,
                )
            )
        elif isinstance(part, pm.RetryFeedbackPart):
            out.append(Message("user", getattr(part, "content", "")))
    return out


# One message as the judge reads it: its messages, and the system prompts it carried.
_Converted = tuple[tuple[Message, ...], tuple[str, ...]]


def _convert(message: pm.ModelMessage) -> _Converted:
    system: list[str] = []
    if isinstance(message, pm.ModelRequest):
        return tuple(_request_messages(message, system)), tuple(system)
    if isinstance(message, pm.ModelResponse):
        text = "\n".join(p.content for p in message.parts if isinstance(p, pm.TextPart))
        return (Message("assistant", text, tool_calls=_calls(message.parts)),), ()
    return (), ()


class MessageCache:
    """Conversions of the messages a run already sent, by identity.

    A run's history grows by a message or two per request and pydantic-ai sends the same message
    objects again each time, so converting only the new ones keeps a long run linear. The newest
    message is always converted afresh (it may still be filled in); an entry holds its message, so
    an identity is never reused while it is cached; past the bound the cache starts over.
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[pm.ModelMessage, _Converted]] = {}

    def convert(self, message: pm.ModelMessage, *, newest: bool) -> _Converted:
        if newest:
            return _convert(message)
        entry = self._entries.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]
        converted = _convert(message)
        if len(self._entries) >= MAX_CACHED_MESSAGES:
            self._entries.clear()
        self._entries[id(message)] = (message, converted)
        return converted


MAX_CACHED_MESSAGES: Final = 4096


def frame_of(
    messages: Sequence[pm.ModelMessage],
    parameters: ModelRequestParameters,
    model: str | None,
    cache: MessageCache | None = None,
) -> RequestFrame:
    """The request as the model receives it: instructions, messages with tool results, tools offered."""
    system: list[str] = []
    out: list[Message] = []
    latest_instructions: str | None = None
    last = len(messages) - 1
    for index, message in enumerate(messages):
        converted, prompts = (
            cache.convert(message, newest=index == last) if cache is not None else _convert(message)
        )
        out.extend(converted)
        system.extend(prompts)
        if isinstance(message, pm.ModelRequest):
            latest_instructions = message.instructions or latest_instructions
    parts = parameters.instruction_parts
    if parts:
        system.extend(p.content for p in parts if isinstance(p.content, str))
    elif latest_instructions:
        system.append(latest_instructions)
    tools = tuple(
        ToolDefinition(name=t.name, description=t.description, input_schema=t.parameters_json_schema)
        for t in parameters.declared_function_tools
    )
    return RequestFrame(
        messages=tuple(out), system="\n\n".join(s for s in system if s) or None, tools=tools, model=model
    )


def response_of(response: pm.ModelResponse, parameters: ModelRequestParameters) -> ModelResponse:
    """The calls a response makes (the output tool is the answer, not a call) and its text."""
    outputs = frozenset(t.name for t in parameters.output_tools)
    text = "\n".join(p.content for p in response.parts if isinstance(p, pm.TextPart))
    return ModelResponse(calls=_calls(response.parts, outputs), text=text or None)


def answer_text(output: object) -> str:
    """The final output as text: itself when a string, else its bounded JSON."""
    if isinstance(output, str):
        return output
    try:
        if isinstance(output, BaseModel):
            plain: object = output.model_dump(mode="json")
        elif dataclasses.is_dataclass(output) and not isinstance(output, type):
            plain = dataclasses.asdict(output)
        else:
            plain = output
        return bounded_json(plain, MAX_ATTRIBUTE_CHARS)
    except Exception:
        return clip(type(output).__name__, MAX_ATTRIBUTE_CHARS)
