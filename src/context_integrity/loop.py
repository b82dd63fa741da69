"""The loop's data model: what the judge sees of an agent loop (requests, messages, tool calls, responses).

These are plain frozen dataclasses, fed by application code and framework
integrations. They validate nothing beyond what the checks need and never
raise on odd content: a message whose content is a list of parts, a dict, a
pydantic model or something stranger is still a message, and
:func:`message_text` renders it deterministically.

Sequences may be passed as lists (or any iterable): ``__post_init__``
converts them to tuples, so a frame stays hashable-in-spirit and immutable.
:meth:`RequestFrame.of` is the same constructor with an ``Iterable`` signature,
for callers who want their type checker to agree.

This module imports only the vocabulary; the checks import it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from .findings import ExternalGround, ExternalGrounding

__all__ = [
    "ExternalGround",
    "ExternalGrounding",
    "FrameGround",
    "Message",
    "ModelResponse",
    "RequestFrame",
    "ToolCall",
    "ToolDefinition",
    "content_text",
    "frame_ground",
    "message_text",
    "tool_names_present",
]

Role = Literal["system", "user", "assistant", "tool"]

# The role whose words are the model's own, and therefore never ground.
_ASSISTANT: str = "assistant"
_TOOL: str = "tool"


def _as_tuple(value: object) -> tuple[Any, ...]:
    """Any iterable as a tuple; ``None`` or a non-iterable as ``()``. Never raises."""
    if isinstance(value, tuple):
        return value
    if value is None or isinstance(value, (str, bytes)):
        return ()
    if not isinstance(value, Iterable):
        return ()
    try:
        return tuple(value)
    except Exception:  # a hostile iterable must not reach the host
        return ()


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call a model response asked for: which tool, under which id, with what arguments."""

    name: str
    call_id: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a request.

    ``content`` is a string, or whatever structure the framework carries
    (a list of content parts, a dict, ...). ``tool_name`` and
    ``tool_call_id`` identify a tool result; ``tool_calls`` are the calls an
    assistant message asked for; ``correction`` marks a user-role message the
    application wrote itself (it opens no turn for prior-turn evidence).
    """

    role: Role
    content: object = ""
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    # A user-role message the application wrote itself (a correction or retry frame), not the
    # person: it does not open a conversation turn.
    correction: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", _as_tuple(self.tool_calls))


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as offered to the model: its name, description and argument schema."""

    name: str
    description: str | None = None
    input_schema: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class RequestFrame:
    """One request assembled for the model: instructions, messages and offered tools."""

    messages: tuple[Message, ...]
    system: str | None = None
    tools: tuple[ToolDefinition, ...] = ()
    model: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", _as_tuple(self.messages))
        if not isinstance(self.tools, tuple):
            object.__setattr__(self, "tools", _as_tuple(self.tools))

    @classmethod
    def of(
        cls,
        messages: Iterable[Message],
        *,
        system: str | None = None,
        tools: Iterable[ToolDefinition] = (),
        model: str | None = None,
    ) -> RequestFrame:
        """Build a frame from any iterables (lists, generators); they are read once."""
        return cls(messages=_as_tuple(messages), system=system, tools=_as_tuple(tools), model=model)


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """What the model answered: the tool calls it made and any text."""

    calls: tuple[ToolCall, ...] = ()
    text: str | None = None
    # The provider's id of this response, when it gave one (``gen_ai.response.id`` on the chat span).
    response_id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.calls, tuple):
            object.__setattr__(self, "calls", _as_tuple(self.calls))


@dataclass(frozen=True, slots=True)
class FrameGround:
    """The texts of one request, split by who wrote them.

    ``grounded`` is what the run served: the system instructions and every
    non-assistant message (user, tool, system). ``assistant`` is the model's
    own earlier text, which is never evidence.
    """

    grounded: tuple[str, ...]
    assistant: tuple[str, ...]


# ── Rendering content ────────────────────────────────────────────────────


# ``json.dumps`` with these options builds this very encoder on every call; it keeps no state.
_ENCODE: Final = json.JSONEncoder(default=str, ensure_ascii=False).encode


def _json_text(value: object) -> str:
    """Compact JSON of ``value`` (``default=str``); ``repr`` when JSON refuses; never raises."""
    try:
        return _ENCODE(value)
    except Exception:  # circular references, non-string keys, a hostile __str__
        pass
    try:
        return repr(value)
    except Exception:
        return ""


def _part_text(part: object) -> str:
    if isinstance(part, str):
        return str(part)
    try:
        if type(part) is dict or isinstance(part, Mapping):  # a plain dict (a row) skips the ABC check
            if part.get("type") == "text":
                text = part.get("text")
                if isinstance(text, str):
                    return str(text)
        elif getattr(part, "type", None) == "text" and isinstance(getattr(part, "text", None), str):
            return str(part.text)  # type: ignore[attr-defined]  # an MCP TextContent model
        return _ENCODE(part)  # what _json_text does first, without its call: once per row of a result
    except Exception:
        pass
    return _json_text(part)


# What a text part's JSON holds; a list whose JSON holds it anywhere is read part by part.
_TEXT_PART_MARK: Final = '"type": "text"'
_ROW_BOUNDARY: Final = "}, {"


def _rows_text(parts: list[object] | tuple[object, ...]) -> str | None:
    """What the parts' texts joined by newlines are when every part is a plain dict and none a text
    part (the rows of a tool's result), from one encode of the whole list; else ``None``.

    The list's JSON is its parts' JSON joined by ``", "``, each boundary ``"}, {"``: when the JSON
    holds that string exactly once per boundary, no part holds it, and the boundaries are those.
    """
    if len(parts) < 2 or set(map(type, parts)) != {dict}:
        return None
    try:
        whole = _ENCODE(parts)
    except Exception:  # circular, non-string keys, a hostile __str__: read part by part
        return None
    if _TEXT_PART_MARK in whole or whole.count(_ROW_BOUNDARY) != len(parts) - 1:
        return None
    return whole[1:-1].replace(_ROW_BOUNDARY, "}\n{")


def _mcp_result_text(content: object) -> str | None:
    """The text an MCP ``CallToolResult`` (model or wire dict) puts before the model, else ``None``.

    Its content blocks' texts, then its structured content as JSON: both reach the model, so both
    are ground for the arguments it chooses next.
    """
    try:
        if isinstance(content, Mapping):
            if "content" not in content or not ("isError" in content or "structuredContent" in content):
                return None
            blocks, structured = content.get("content"), content.get("structuredContent")
        elif hasattr(content, "content") and hasattr(content, "is_error"):
            blocks, structured = (
                getattr(content, "content", None),
                getattr(content, "structured_content", None),
            )
        else:
            return None
        parts = [_part_text(block) for block in blocks] if isinstance(blocks, (list, tuple)) else []
        if structured is not None:
            parts.append(_json_text(structured))
        return "\n".join(parts)
    except Exception:
        return None


def content_text(content: object) -> str:
    """Render message content as text, deterministically, without ever raising.

    A string is itself; ``None`` is empty; a list or tuple of parts is its
    parts' texts joined by newlines (a text part ``{"type": "text", "text": ...}``
    contributes its text, a string part itself, any other part its JSON);
    anything else is its JSON (``default=str``), or its ``repr`` when JSON
    cannot render it.
    """
    if isinstance(content, str):
        return str(content)  # a str subclass (an Absence) renders as its plain text
    if content is None:
        return ""
    if isinstance(content, (list, tuple)):
        rows = _rows_text(content)
        if rows is not None:
            return rows
        try:
            return "\n".join([_part_text(part) for part in content])
        except Exception:
            return _json_text(content)
    mcp_text = _mcp_result_text(content)
    return mcp_text if mcp_text is not None else _json_text(content)


def message_text(message: Message) -> str:
    """The text of one message's content (see :func:`content_text`)."""
    return content_text(getattr(message, "content", ""))


# ── Reading a frame ──────────────────────────────────────────────────────


def tool_names_present(frame: RequestFrame) -> frozenset[str]:
    """The names of the tools whose results are in ``frame``.

    A tool message that lacks ``tool_name`` is named through the assistant
    message that asked for it (its ``tool_calls[].call_id`` equals the tool
    message's ``tool_call_id``): wire-shape histories often carry only the
    call id, and a re-fetched result must still count as present. A tool
    message whose asker is no longer in the frame cannot be named and is
    left out.
    """
    asked: dict[str, str] = {}
    names: set[str] = set()
    for message in frame.messages:
        role = getattr(message, "role", None)
        if role == _ASSISTANT:
            for call in _as_tuple(getattr(message, "tool_calls", ())):
                call_id = getattr(call, "call_id", None)
                name = getattr(call, "name", None)
                if isinstance(call_id, str) and isinstance(name, str) and name:
                    asked[call_id] = name
        elif role == _TOOL:
            name = getattr(message, "tool_name", None)
            if isinstance(name, str) and name:
                names.add(name)
                continue
            call_id = getattr(message, "tool_call_id", None)
            if isinstance(call_id, str) and call_id in asked:
                names.add(asked[call_id])
    return frozenset(names)


def frame_ground(frame: RequestFrame) -> FrameGround:
    """Split ``frame`` into what the run served and what the model itself wrote.

    Empty texts are left out of both, so their counts are counts of texts
    that could ground something. An assistant message's tool-call arguments
    are in neither: a value the model chose before is not ground for the
    value it chooses now.
    """
    grounded: list[str] = []
    assistant: list[str] = []
    if isinstance(frame.system, str) and frame.system:
        grounded.append(str(frame.system))
    for message in frame.messages:
        text = message_text(message)
        if not text:
            continue
        if getattr(message, "role", None) == _ASSISTANT:
            assistant.append(text)
        else:
            grounded.append(text)
    return FrameGround(grounded=tuple(grounded), assistant=tuple(assistant))
