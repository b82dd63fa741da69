"""pydantic-ai's messages read as the judge's loop protocol: the request as the model receives it,
the response it returned, the run's final answer as text."""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel
from pydantic_ai import messages as pm
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import ToolDefinition as PaiToolDefinition

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
# A request's messages as the judge reads them, the system prompts they carried, and the latest
# instructions among them.
_Read = tuple[tuple[Message, ...], list[str], str | None]


def _as_history(response: pm.ModelResponse) -> _Converted:
    text = "\n".join(p.content for p in response.parts if isinstance(p, pm.TextPart))
    return (Message("assistant", text, tool_calls=_calls(response.parts)),), ()


def _convert(message: pm.ModelMessage) -> _Converted:
    system: list[str] = []
    if isinstance(message, pm.ModelRequest):
        return tuple(_request_messages(message, system)), tuple(system)
    if isinstance(message, pm.ModelResponse):
        return _as_history(message)
    return (), ()


class MessageCache:
    """What a run already read of the messages it sent, so each message is converted once per run.

    A run's history grows by a message or two per request and pydantic-ai sends the same message
    objects again each time: a message is converted when first sent and found again by identity
    (an entry holds its message, so an identity is never reused while it is cached; past the bound
    the cache starts over). The newest message of a request may still be filled in before the next
    one, so its conversion is reused only while it holds the very parts it was converted from.
    The previous request's converted prefix is reused as a whole while the new request starts
    with the same message objects, so a long run costs what it added, not what it holds.
    """

    __slots__ = ("_entries", "_marks", "_out", "_sent", "_system", "_tools")

    def __init__(self) -> None:
        # id -> (the message, its conversion, the parts it held when converted as the newest;
        # None once a later request sent it unchanged)
        self._entries: dict[int, tuple[pm.ModelMessage, _Converted, tuple[object, ...] | None]] = {}
        self._sent: list[pm.ModelMessage] = []  # the previous request's messages, in order
        self._out: list[Message] = []  # their conversions, concatenated
        self._system: list[str] = []  # the system prompts they carried
        # (len(_out), len(_system), the latest instructions so far) after each of them
        self._marks: list[tuple[int, int, str | None]] = []
        self._tools: tuple[ToolDefinition, ...] = ()  # the tools the previous request offered

    def tools(self, declared: Sequence[PaiToolDefinition]) -> tuple[ToolDefinition, ...]:
        """The tools offered, as the judge reads them: the previous request's, when they are the same.

        pydantic-ai makes its tool definitions afresh for each request, around the same schemas.
        """
        last = self._tools
        if len(last) == len(declared):
            for ours, theirs in zip(last, declared, strict=True):
                if (
                    ours.input_schema is not theirs.parameters_json_schema
                    or ours.name != theirs.name
                    or ours.description != theirs.description
                ):
                    break
            else:
                return last
        self._tools = _tools_of(declared)
        return self._tools

    def convert(self, message: pm.ModelMessage, *, newest: bool) -> _Converted:
        entry = self._entries.get(id(message))
        if entry is not None and entry[0] is message:
            converted, parts = entry[1], entry[2]
            if parts is None:
                if not newest:
                    return converted
            elif _same_parts(message, parts):
                if not newest:  # no longer the newest, and as it was: settled
                    self._entries[id(message)] = (message, converted, None)
                return converted
        converted = _convert(message)
        self._keep(message, converted, newest=newest)
        return converted

    def _keep(self, message: pm.ModelMessage, converted: _Converted, *, newest: bool) -> None:
        if len(self._entries) >= MAX_CACHED_MESSAGES:
            self._entries.clear()
        parts = tuple(getattr(message, "parts", ())) if newest else None
        self._entries[id(message)] = (message, converted, parts)

    def response(self, response: pm.ModelResponse) -> Message:
        """A response as the next request's history will hold it, read once: the run sends the
        very object back. Kept as the newest message, so it is read again if its parts change."""
        converted = _as_history(response)
        self._keep(response, converted, newest=True)
        return converted[0][0]

    def read(self, messages: Sequence[pm.ModelMessage]) -> _Read:
        """The messages, system prompts and latest instructions of a request, converting only what
        this run has not sent."""
        sent = self._sent
        # Neither the previous request's newest message nor this one's is taken with the prefix:
        # either may have been filled in since, so both go through convert.
        keep = max(0, min(len(sent) - 1, len(messages) - 1))
        if keep and not (
            messages[keep - 1] is sent[keep - 1] and all(map(operator.is_, messages[:keep], sent))
        ):
            keep = next((i for i in range(keep) if messages[i] is not sent[i]), keep)
        if keep:
            out_len, system_len, instructions = self._marks[keep - 1]
        else:
            out_len = system_len = 0
            instructions = None
        del sent[keep:], self._marks[keep:], self._out[out_len:], self._system[system_len:]
        last = len(messages) - 1
        for index in range(keep, len(messages)):
            message = messages[index]
            converted, prompts = self.convert(message, newest=index == last)
            self._out.extend(converted)
            self._system.extend(prompts)
            # What _latest_instructions finds, kept as the history grows instead of walked for each request.
            if isinstance(message, pm.ModelRequest) and message.instructions:
                instructions = message.instructions
            sent.append(message)
            self._marks.append((len(self._out), len(self._system), instructions))
        return tuple(self._out), list(self._system), instructions


MAX_CACHED_MESSAGES: Final = 4096


def _same_parts(message: pm.ModelMessage, parts: tuple[object, ...]) -> bool:
    now = getattr(message, "parts", ())
    return len(now) == len(parts) and all(map(operator.is_, now, parts))


def _read(messages: Sequence[pm.ModelMessage]) -> _Read:
    out: list[Message] = []
    system: list[str] = []
    for message in messages:
        converted, prompts = _convert(message)
        out.extend(converted)
        system.extend(prompts)
    return tuple(out), system, _latest_instructions(messages)


def _tools_of(declared: Sequence[PaiToolDefinition]) -> tuple[ToolDefinition, ...]:
    return tuple(
        ToolDefinition(name=t.name, description=t.description, input_schema=t.parameters_json_schema)
        for t in declared
    )


def _latest_instructions(messages: Sequence[pm.ModelMessage]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, pm.ModelRequest) and message.instructions:
            return message.instructions
    return None


def frame_of(
    messages: Sequence[pm.ModelMessage],
    parameters: ModelRequestParameters,
    model: str | None,
    cache: MessageCache | None = None,
) -> RequestFrame:
    """The request as the model receives it: instructions, messages with tool results, tools offered."""
    out, system, latest_instructions = cache.read(messages) if cache is not None else _read(messages)
    parts = parameters.instruction_parts
    if parts:
        system.extend(p.content for p in parts if isinstance(p.content, str))
    elif latest_instructions:
        system.append(latest_instructions)
    declared = parameters.declared_function_tools
    tools = cache.tools(declared) if cache is not None else _tools_of(declared)
    return RequestFrame(
        messages=out, system="\n\n".join(s for s in system if s) or None, tools=tools, model=model
    )


def response_of(
    response: pm.ModelResponse, parameters: ModelRequestParameters, cache: MessageCache | None = None
) -> ModelResponse:
    """The calls a response makes (the output tool is the answer, not a call) and its text."""
    outputs = frozenset(t.name for t in parameters.output_tools)
    if cache is None:
        text = "\n".join(p.content for p in response.parts if isinstance(p, pm.TextPart))
        return ModelResponse(calls=_calls(response.parts, outputs), text=text or None)
    # Read once for both: as the answer judged now, and as the history the next request sends.
    history = cache.response(response)
    calls = history.tool_calls
    if outputs:
        calls = tuple(call for call in calls if call.name not in outputs)
    content = history.content
    return ModelResponse(calls=calls, text=content if isinstance(content, str) and content else None)


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
