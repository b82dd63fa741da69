"""LangChain's own shapes, as the instrumentations that trace it write them into attributes.

OpenInference and OpenLLMetry both record what LangChain's callbacks hand them: a tool's input as
``input_str`` (``str()`` of the arguments: a Python literal, not JSON), a tool's output as a
serialized ``ToolMessage`` (``{"type": "tool", "data": {...}}`` or the ``{"lc": 1, "kwargs": {...}}``
constructor form), and a LangGraph agent's state as ``{"messages": [...]}`` of serialized messages.
The readers here turn those into plain values; each never raises and answers ``None`` for anything
else. Shared by the dialects that read LangChain's spans, so each shape has one reader.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any, Final

from ...limits import MAX_PYTHON_LITERAL_CHARS

# LangChain's message types, as its serializations name them, in the loop's roles.
_ROLES: Final[Mapping[str, str]] = {
    "human": "user",
    "HumanMessage": "user",
    "ai": "assistant",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "system": "system",
    "SystemMessage": "system",
    "tool": "tool",
    "ToolMessage": "tool",
}


def python_literal(text: str) -> object | None:
    """``text`` read as the Python literal ``str()`` wrote (``"{'host': 'esx-07'}"``); ``None`` when
    it is not one. Literals only (``ast.literal_eval`` runs no code), and only up to
    :data:`~context_integrity.limits.MAX_PYTHON_LITERAL_CHARS`."""
    if len(text) > MAX_PYTHON_LITERAL_CHARS:
        return None
    try:
        value: object = ast.literal_eval(text.strip())
        return value
    except Exception:  # not a literal; or nested past the parser's limits (MemoryError, RecursionError)
        return None


def message_fields(value: object) -> tuple[str, Mapping[str, Any]] | None:
    """A serialized LangChain message as (its role in the loop's vocabulary, its fields): the
    ``{"type", "data"}`` form (``messages_to_dict``) or the ``{"lc": 1, "id": [..., "ToolMessage"],
    "kwargs"}`` constructor form (``dumpd``)."""
    if not isinstance(value, Mapping):
        return None
    if isinstance(value.get("data"), Mapping):
        kind, fields = value.get("type"), value["data"]
    elif isinstance(value.get("kwargs"), Mapping) and isinstance(value.get("id"), (list, tuple)):
        ids = value["id"]
        kind, fields = (ids[-1] if ids else None), value["kwargs"]
    else:
        return None
    role = _ROLES.get(kind) if isinstance(kind, str) else None
    if role is None:
        role = _ROLES.get(fields.get("type")) if isinstance(fields.get("type"), str) else None
    return (role, fields) if role is not None else None


def tool_message(value: object) -> Mapping[str, Any] | None:
    """The fields of a serialized ``ToolMessage`` (``content``, ``tool_call_id``, ``name``), or
    ``None``; also found inside an ``{"output": ...}`` wrapper."""
    if isinstance(value, Mapping) and "output" in value and "type" not in value:
        value = value["output"]
    read = message_fields(value)
    if read is None or read[0] != "tool":
        return None
    return read[1]


def state_messages(value: object) -> list[tuple[str, Mapping[str, Any]]] | None:
    """The serialized messages of a LangGraph agent's state (``{"messages": [...]}``, also inside an
    ``{"outputs": ...}`` wrapper), each as (role, fields); ``None`` when ``value`` holds none."""
    if isinstance(value, Mapping) and isinstance(value.get("outputs"), Mapping):
        value = value["outputs"]
    messages = value.get("messages") if isinstance(value, Mapping) else None
    if not isinstance(messages, (list, tuple)):
        return None
    out = [read for entry in messages if (read := message_fields(entry)) is not None]
    return out or None


def last_assistant_text(messages: list[tuple[str, Mapping[str, Any]]]) -> str | None:
    """The content of the last assistant message among a state's ``messages``, when it is text: the
    run's final answer as LangGraph left it."""
    last = [fields for role, fields in messages if role == "assistant"]
    content = last[-1].get("content") if last else None
    return content if isinstance(content, str) else None
