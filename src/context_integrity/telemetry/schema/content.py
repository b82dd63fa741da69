"""What content capture writes on a model call's span: the request and response in the GenAI
conventions' shape, so a recorded run can be read back and judged again.

``gen_ai.input.messages`` and ``gen_ai.output.messages`` hold messages of typed parts (``text``,
``tool_call``, ``tool_call_response``), ``gen_ai.system_instructions`` a list of text parts and
``gen_ai.tool.definitions`` the tools offered with their schemas. Two fields beyond the conventions'
(their messages allow extra fields) keep what the loop's data model says and the conventions do not:
a tool result's ``name`` (the tool), a user message's ``correction`` (the application wrote it), and
when each final answer was given (:data:`ANSWER_TIME`).

The partner reader is :mod:`context_integrity.traces.dialects.genai`, which reads every instrumentation
writing these conventions; a round-trip test holds the two to each other.
"""

from __future__ import annotations

from typing import Any, Final

from ...loop import Message, ModelResponse, RequestFrame, ToolCall
from . import names

# When a final answer was given (Unix nanoseconds), on each answer the run span lists: a run of several
# turns answers once per turn, and each answer is judged where it was given.
ANSWER_TIME: Final = "time_unix_nano"


def _call_part(call: ToolCall) -> dict[str, Any]:
    return {
        names.PART_TYPE: names.PART_TOOL_CALL,
        "id": call.call_id,
        "name": call.name,
        "arguments": call.arguments,
    }


def message_parts(message: Message) -> dict[str, Any]:
    """One message in the conventions' shape."""
    if message.role == "tool":
        part: dict[str, Any] = {
            names.PART_TYPE: names.PART_TOOL_CALL_RESPONSE,
            "id": message.tool_call_id,
            "response": message.content,
        }
        if message.tool_name is not None:
            part["name"] = message.tool_name
        return {"role": "tool", "parts": [part]}
    parts: list[dict[str, Any]] = []
    content = message.content
    if isinstance(content, str):
        if content:
            parts.append({names.PART_TYPE: names.PART_TEXT, "content": content})
    elif content is not None:
        parts.append({names.PART_TYPE: names.PART_TEXT, "content": content})
    parts.extend(_call_part(call) for call in message.tool_calls)
    out: dict[str, Any] = {"role": message.role, "parts": parts}
    if message.correction:
        out["correction"] = True
    return out


def request_content(frame: RequestFrame) -> dict[str, Any]:
    """A request's content attributes: messages, system instructions (when any), tools offered."""
    out: dict[str, Any] = {names.GEN_AI_INPUT_MESSAGES: [message_parts(m) for m in frame.messages]}
    if frame.system:
        out[names.GEN_AI_SYSTEM_INSTRUCTIONS] = [{names.PART_TYPE: names.PART_TEXT, "content": frame.system}]
    out[names.GEN_AI_TOOL_DEFINITIONS] = [
        {
            names.PART_TYPE: "function",
            "name": tool.name,
            **({"description": tool.description} if tool.description is not None else {}),
            **({"parameters": tool.input_schema} if tool.input_schema is not None else {}),
        }
        for tool in frame.tools
    ]
    return out


def response_content(response: ModelResponse) -> list[dict[str, Any]]:
    """A response as ``gen_ai.output.messages``: one assistant message, its text and its calls."""
    parts: list[dict[str, Any]] = []
    if response.text:
        parts.append({names.PART_TYPE: names.PART_TEXT, "content": response.text})
    parts.extend(_call_part(call) for call in response.calls)
    return [{"role": "assistant", "parts": parts}]


def answer_content(text: str | None) -> dict[str, Any]:
    """One final answer as an assistant message (the run span's ``gen_ai.output.messages`` lists them)."""
    return {
        "role": "assistant",
        "parts": [{names.PART_TYPE: names.PART_TEXT, "content": text}] if text else [],
    }
