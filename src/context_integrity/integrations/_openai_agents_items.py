"""The Agents SDK's Responses-shaped items, read into the judge's protocol.

What ``on_llm_start`` receives (the model's final input, after ``call_model_input_filter``) and
what ``on_llm_end`` receives (the model's output) become a :class:`RequestFrame` and the tool calls
of a response. Items are dicts or the SDK's pydantic models; both are read by key, so this module
imports nothing from the SDK. An item of a kind the checks have no use for (reasoning, a hosted
tool's call) is left out; nothing here raises on odd content.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from ..loop import Message, RequestFrame, Role, ToolCall, ToolDefinition, content_text

# The SDK's message roles, as the protocol names them ("developer" is the Responses API's system).
_ROLES: dict[str, Role] = {
    "user": "user",
    "system": "system",
    "developer": "system",
    "assistant": "assistant",
}


# Whether items of a type are read by key, kept per type: the SDK's items are pydantic models, and
# the Mapping ABC's isinstance is Python-level work on every read. Bounded: types are few.
_MAPPING_TYPES: dict[type, bool] = {}
_MAX_MAPPING_TYPES = 256


Reader = Callable[[str, None], Any]


def _reader(item: object) -> Reader:
    """How ``item``'s fields are read, asked once per item: ``reader(key, None)`` is the field or ``None``."""
    kind = type(item)
    if kind is dict:  # the usual shape
        return item.get  # type: ignore[attr-defined, no-any-return]
    try:
        mapping = _MAPPING_TYPES.get(kind)
    except TypeError:  # a type whose metaclass made it unhashable: asked every time
        mapping = isinstance(item, Mapping)
    if mapping is None:
        mapping = isinstance(item, Mapping)
        if len(_MAPPING_TYPES) < _MAX_MAPPING_TYPES:
            _MAPPING_TYPES[kind] = mapping
    if mapping:
        return item.get  # type: ignore[attr-defined, no-any-return]
    return partial(getattr, item)


def _text(content: object) -> str:
    """A message's content parts (``input_text`` / ``output_text`` / ``refusal``) as text."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        texts: list[str] = []
        for part in content:
            get = _reader(part)
            text = get("text", None)
            if not isinstance(text, str):
                text = get("refusal", None)
            texts.append(text if isinstance(text, str) else content_text(part))
        return "\n".join(texts)
    return content_text(content)


def arguments_of(raw: object) -> Mapping[str, Any]:
    """A call's arguments: the JSON object the model wrote, ``{}`` when it wrote something else."""
    # Text is asked first: the model writes its arguments as JSON text, and the Mapping ABC's
    # isinstance is Python-level work on every call.
    if isinstance(raw, str):
        if not raw:
            return {}
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return raw if isinstance(raw, Mapping) else {}


# A run's history comes back whole every turn: each call is read once, by id, and kept.
CallMemo = dict[tuple[str, object], ToolCall]


def _call_of(get: Reader, memo: CallMemo | None = None) -> ToolCall | None:
    """The call a ``function_call`` item (read by ``get``) asks for."""
    name, call_id = get("name", None), get("call_id", None)
    if not isinstance(name, str) or not isinstance(call_id, str):
        return None
    raw = get("arguments", None)
    key = (call_id, raw if isinstance(raw, str) else id(raw))
    if memo is not None:
        known = memo.get(key)
        if known is not None and known.name == name:
            return known
    call = ToolCall(name=name, call_id=call_id, arguments=arguments_of(raw))
    if memo is not None and isinstance(raw, str):
        memo[key] = call
    return call


def messages_of(items: Iterable[object], memo: CallMemo | None = None) -> list[Message]:
    """The input items as messages: consecutive function calls are one assistant message's calls,
    each output a tool message named after the call it answers."""
    messages: list[Message] = []
    asked: dict[str, str] = {}
    pending: list[ToolCall] = []

    def flush() -> None:
        if pending:
            messages.append(Message("assistant", "", tool_calls=tuple(pending)))
            pending.clear()

    for item in items:
        get = _reader(item)
        kind = get("type", None)
        if kind == "function_call":
            call = _call_of(get, memo)
            if call is not None:
                asked[call.call_id] = call.name
                pending.append(call)
            continue
        flush()
        if kind == "function_call_output":
            call_id = get("call_id", None)
            call_id = call_id if isinstance(call_id, str) else None
            messages.append(
                Message(
                    "tool",
                    _text(get("output", None)),
                    tool_name=asked.get(call_id or ""),
                    tool_call_id=call_id,
                )
            )
            continue
        role = get("role", None)
        if kind in (None, "message") and isinstance(role, str) and role in _ROLES:
            messages.append(Message(_ROLES[role], _text(get("content", None))))
    flush()
    return messages


def definitions_of(tools: Iterable[object]) -> tuple[ToolDefinition, ...]:
    """The tools offered, as the model sees them: name, description and argument schema."""
    out: list[ToolDefinition] = []
    for tool in tools:
        name = getattr(tool, "name", None)
        if not isinstance(name, str) or not name:
            continue
        description = getattr(tool, "description", None)
        schema = getattr(tool, "params_json_schema", None)
        out.append(
            ToolDefinition(
                name=name,
                description=description if isinstance(description, str) else None,
                input_schema=schema if isinstance(schema, Mapping) else None,
            )
        )
    return tuple(out)


def frame_of(
    system_prompt: str | None,
    items: Sequence[object],
    tools: tuple[ToolDefinition, ...],
    *,
    model: str | None,
    memo: CallMemo | None = None,
) -> RequestFrame:
    return RequestFrame(
        messages=tuple(messages_of(items, memo)) if items else (),
        system=system_prompt if isinstance(system_prompt, str) else None,
        tools=tools,
        model=model,
    )


def response_of(output: Iterable[object]) -> tuple[tuple[ToolCall, ...], str | None]:
    """A model response's function calls, with the model's call ids, and its text."""
    calls: list[ToolCall] = []
    texts: list[str] = []
    for item in output:
        get = _reader(item)
        kind = get("type", None)
        if kind == "function_call":
            call = _call_of(get)
            if call is not None:
                calls.append(call)
        elif kind == "message":
            texts.append(_text(get("content", None)))
    return tuple(calls), ("\n".join(texts) if texts else None)


def model_name(model: object) -> str | None:
    """The model an agent names: its string, or a model object's ``model`` string."""
    if isinstance(model, str) and model:
        return model
    named = getattr(model, "model", None)
    if isinstance(named, str) and named:
        return named
    return type(model).__name__ if model is not None else None


def answer_text(output: object) -> str:
    """The final output as text: itself, a pydantic model's JSON, else its rendering."""
    if isinstance(output, str):
        return output
    dump = getattr(output, "model_dump_json", None)
    if callable(dump):
        try:
            text = dump()
            if isinstance(text, str):
                return text
        except Exception:
            pass
    return content_text(output)
