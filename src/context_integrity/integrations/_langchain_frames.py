"""LangChain objects as the judge sees them: requests, responses and tool declarations.

Pure translation, no telemetry: a ``ModelRequest`` becomes a :class:`RequestFrame`, an
``AIMessage`` a :class:`ModelResponse`, and a tool's own metadata (or a ``@ci.tool`` function
inside it) a contract in the book, under the LangChain tool name. Only imported by
:mod:`.langchain`, which needs LangChain installed.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool

from .._memo import IdentityMemo
from ..contracts import DeclarationError, ToolContract
from ..contracts.errors import refuse
from ..loop import Message, ModelResponse, RequestFrame, Role, ToolCall, ToolDefinition, content_text
from ..telemetry.emit import record_internal_error
from ..telemetry.setup import CONTRACTS
from . import _langchain_mcp, functions
from ._offered import SameTools
from .functions import declare_tool

# The key of a LangChain tool's ``metadata`` that holds its declaration.
METADATA_KEY: Final = "context_integrity"
# The fields the metadata may hold: exactly the ones declare_tool takes, read from it.
_DECLARATION_FIELDS: Final = tuple(
    p.name for p in inspect.signature(declare_tool).parameters.values() if p.kind is p.KEYWORD_ONLY
)

_ROLES: Final[Mapping[str, Role]] = {
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "tool": "tool",
    "system": "system",
    "developer": "system",
}

# Tool definitions by tool object: a schema is rendered once per tool, not once per request.
_MAX_DEFINITIONS: Final = 512
_definitions: Final[IdentityMemo[BaseTool, ToolDefinition]] = IdentityMemo(_MAX_DEFINITIONS)
_MAX_CACHED_MESSAGES: Final = 4096
_model_names: Final[IdentityMemo[object, str]] = IdentityMemo(_MAX_DEFINITIONS)
# Python names of @ci.tool functions declared again under their LangChain tool's name.
_renamed: set[str] = set()


def model_name(model: object) -> str:
    """The model's own name for itself, else its class name (read once per model object)."""
    return _model_names.of(model, _read_model_name)


def _read_model_name(model: object) -> str:
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def _calls(message: AIMessage, offered: frozenset[str] | None = None) -> tuple[ToolCall, ...]:
    out: list[ToolCall] = []
    for call in message.tool_calls:
        name = call.get("name")
        if not isinstance(name, str) or (offered is not None and name not in offered):
            continue
        args = call.get("args")
        out.append(ToolCall(name, str(call.get("id") or ""), dict(args) if isinstance(args, Mapping) else {}))
    return tuple(out)


def message(m: BaseMessage) -> Message:
    """One LangChain message as a protocol message (the tool result keeps its call id)."""
    role = _ROLES.get(str(getattr(m, "type", "")), None)
    if role is None:
        role = _ROLES.get(str(getattr(m, "role", "")), "user")
    if isinstance(m, AIMessage):
        return Message("assistant", m.content, tool_calls=_calls(m))
    if role == "tool":
        name = getattr(m, "name", None)
        call_id = getattr(m, "tool_call_id", None)
        return Message(
            "tool",
            m.content,
            tool_name=name if isinstance(name, str) and name else None,
            tool_call_id=call_id if isinstance(call_id, str) else None,
        )
    return Message(role, m.content)


def _schema(tool: BaseTool) -> Mapping[str, Any] | None:
    schema = tool.tool_call_schema
    if isinstance(schema, Mapping):
        return schema
    render = getattr(schema, "model_json_schema", None)
    rendered = render() if callable(render) else None
    return rendered if isinstance(rendered, Mapping) else None


def definition(tool: object) -> ToolDefinition | None:
    """A tool as offered: a ``BaseTool`` or a provider-format dict; ``None`` if it is neither."""
    if isinstance(tool, Mapping):
        function = tool.get("function")
        spec: Mapping[str, Any] = function if isinstance(function, Mapping) else tool
        name = spec.get("name")
        if not isinstance(name, str):
            return None
        description = spec.get("description")
        parameters = spec.get("parameters", spec.get("input_schema"))
        return ToolDefinition(
            name,
            description if isinstance(description, str) else None,
            parameters if isinstance(parameters, Mapping) else None,
        )
    if not isinstance(tool, BaseTool):
        return None
    return _definitions.of(tool, _definition_of)


def _definition_of(tool: BaseTool) -> ToolDefinition:
    return ToolDefinition(tool.name, tool.description or None, _schema(tool))


def _definitions_of(tools: tuple[object, ...]) -> tuple[ToolDefinition, ...]:
    return tuple(d for d in (definition(t) for t in tools) if d is not None)


# The definitions of the tools a request offers (every request of one agent offers the same).
definitions: Final = SameTools(_definitions_of)


class MessageCache:
    """Each LangChain message translated once per run: a request carries the whole history."""

    __slots__ = ("_last", "_seen")

    def __init__(self) -> None:
        self._seen: IdentityMemo[BaseMessage, Message] = IdentityMemo(_MAX_CACHED_MESSAGES)
        # The previous request's messages and their translation: the next request usually
        # repeats them as its prefix (same objects), so that part is reused without lookups.
        self._last: tuple[tuple[BaseMessage, ...], tuple[Message, ...]] = ((), ())

    def all(self, messages: Iterable[BaseMessage]) -> tuple[Message, ...]:
        """The request's messages translated, reusing the previous request's common prefix."""
        given = tuple(messages)
        before, translated = self._last
        shared = 0
        for old, new in zip(before, given, strict=False):
            if old is not new:
                break
            shared += 1
        out = translated[:shared] + tuple(self(m) for m in given[shared:])
        self._last = (given, out)
        return out

    def __call__(self, m: BaseMessage) -> Message:
        return self._seen.of(m, message)


def frame(request: Any, cache: MessageCache | None, model: str | None = None) -> RequestFrame:
    """The request the model receives: system prompt, messages, the tools offered.

    Read at the innermost middleware, so every trimming and edit an outer one made is in it.
    The structured-output tools LangChain adds when it binds are not offered tools: the model's
    "call" of one is the run's answer (the claim seam), not a tool call. Without ``translate``
    the messages are left out (no check will read them).
    """
    return RequestFrame(
        messages=cache.all(request.messages) if cache is not None else (),
        system=request.system_prompt,
        tools=definitions(request.tools),
        model=model or model_name(request.model),
    )


def response(ai: AIMessage | None, offered: frozenset[str]) -> ModelResponse:
    """The calls an answer makes to offered tools, with the model's call ids, and its text."""
    if ai is None:
        return ModelResponse()
    text = content_text(ai.content)
    response_id = ai.id if isinstance(ai.id, str) and ai.id else None
    return ModelResponse(calls=_calls(ai, offered), text=text or None, response_id=response_id)


def answer_text(ai: AIMessage | None, structured: object) -> str:
    """The final answer as text: the structured response's JSON when there is one."""
    if structured is not None:
        dump = getattr(structured, "model_dump_json", None)
        if callable(dump):
            try:
                return str(dump())
            except Exception:
                pass
        try:
            return json.dumps(structured, default=str, ensure_ascii=False)
        except Exception:
            return repr(structured)
    return content_text(ai.content) if ai is not None else ""


def _wrapped_contract(tool: BaseTool) -> ToolContract | None:
    """The contract of a ``@ci.tool`` function a LangChain tool wraps, if it wraps one."""
    for attribute in ("func", "coroutine"):
        contract = getattr(getattr(tool, attribute, None), "contract", None)
        if isinstance(contract, ToolContract):
            return contract
    return None


def _declare_from_metadata(tool: BaseTool, fields: object) -> None:
    if not isinstance(fields, Mapping):
        raise refuse(
            tool.name,
            f"metadata[{METADATA_KEY!r}] is a {type(fields).__name__};",
            f"make it a dict with any of {', '.join(_DECLARATION_FIELDS)}",
        )
    unknown = sorted(str(k) for k in fields if k not in _DECLARATION_FIELDS)
    if unknown:
        raise refuse(
            tool.name,
            f"metadata[{METADATA_KEY!r}] has unknown field(s) {', '.join(unknown)};",
            f"use only {', '.join(_DECLARATION_FIELDS)} (the fields declare_tool takes)",
        )
    declare_tool(tool.name, **{str(k): v for k, v in fields.items()})


def declare_tools(tools: Iterable[object] | None, *, strict: bool) -> None:
    """Declare every tool that carries its own declaration and is not declared yet.

    A ``BaseTool.metadata["context_integrity"]`` mapping is declared as ``declare_tool`` would;
    a tool made by LangChain's MCP adapter is declared from what its server published; a
    ``@ci.tool`` function inside a LangChain tool is declared again under the LangChain
    name, which is the name the model calls. A tool declared by name already keeps that
    declaration. ``strict`` (while an agent is being created) lets a bad declaration raise,
    naming the tool, the field and the fix; at run time it is logged and recorded instead.
    """
    for tool in tools or ():
        if not isinstance(tool, BaseTool) or CONTRACTS.get(tool.name) is not None:
            continue
        try:
            metadata = tool.metadata
            if isinstance(metadata, Mapping) and METADATA_KEY in metadata:
                _declare_from_metadata(tool, metadata[METADATA_KEY])
                continue
            if _langchain_mcp.is_adapter_tool(tool):
                _langchain_mcp.declare(tool)  # what its MCP server published with it
                continue
            contract = _wrapped_contract(tool)
            if contract is not None and contract.name != tool.name:
                CONTRACTS.declare(dataclasses.replace(contract, name=tool.name))
                if len(_renamed) < _MAX_DEFINITIONS:
                    _renamed.add(contract.name)
        except DeclarationError as bad:
            if strict:
                raise
            functions.tell_bad_declaration(bad)
        except Exception as ours:
            record_internal_error(None, "reading a LangChain tool's declaration", ours)


def warn_unoffered(agent_name: str, offered: Iterable[object]) -> None:
    """One warning per run naming the declared tools this agent does not offer."""
    names = {d.name for d in (definition(t) for t in offered) if d is not None}
    if names:
        functions.warn_unoffered(
            "LangChain",
            agent_name,
            names,
            superseded=_renamed,
            fix='declare a LangChain tool under its LangChain name (@tool("name")).',
        )
