"""The declarations a pydantic-ai agent carries on its own function tools, put in the book under
the names the model sees."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic_ai.toolsets import AbstractToolset, FunctionToolset

from ..contracts import DeclarationError, ToolContract, define_contract
from ..telemetry.setup import CONTRACTS
from .functions import contract_of, declare_tool, tell_bad_declaration

# The key of a pydantic-ai tool's ``metadata`` holding its declaration.
METADATA_KEY: Final = "context_integrity"
# Exactly the fields declare_tool takes, read from it so the two never drift apart.
_METADATA_FIELDS: Final = tuple(
    p.name
    for p in inspect.signature(declare_tool).parameters.values()
    if p.kind is inspect.Parameter.KEYWORD_ONLY
)


def _declaration_from_metadata(name: str, metadata: object) -> ToolContract | None:
    if not isinstance(metadata, Mapping) or METADATA_KEY not in metadata:
        return None
    declared = metadata[METADATA_KEY]
    if not isinstance(declared, Mapping):
        raise DeclarationError(
            f"Tool {name!r}: metadata[{METADATA_KEY!r}] is {type(declared).__name__}, not a mapping. "
            f"Pass a dict with any of {', '.join(_METADATA_FIELDS)}."
        )
    unknown = [key for key in declared if key not in _METADATA_FIELDS]
    if unknown:
        raise DeclarationError(
            f"Tool {name!r}: metadata[{METADATA_KEY!r}] has unknown field(s) {', '.join(map(repr, unknown))}. "
            f"The fields are those of declare_tool: {', '.join(_METADATA_FIELDS)}."
        )
    fields = {key: declared[key] for key in _METADATA_FIELDS if key in declared}
    return define_contract(name, **fields)


def _function_tools(agent: object) -> list[tuple[str, Any]]:
    """(framework name, pydantic-ai ``Tool``) for every function tool the agent itself carries."""
    found: list[tuple[str, Any]] = []

    def visit(toolset: AbstractToolset[Any]) -> None:
        if isinstance(toolset, FunctionToolset):
            found.extend(toolset.tools.items())

    for toolset in getattr(agent, "toolsets", ()) or ():
        if isinstance(toolset, AbstractToolset):
            toolset.apply(visit)
    return found


@dataclass(slots=True)
class AgentDeclarations:
    """What a run's agent declared, put in the book under the framework's tool names."""

    functions: dict[str, object] = field(default_factory=dict)  # tool name -> the callable registered
    superseded: set[str] = field(default_factory=set)  # python names a framework name replaced


def declare_agent_tools(agent: object) -> AgentDeclarations:
    """Put the agent's own declarations in the book, under the names the model sees.

    The declaration closest to the tool wins: its own ``metadata``, then a ``@ci.tool`` on the
    function it runs (re-declared under the framework's name), then ``ci.declare_tool`` by name. A
    bad metadata declaration is logged naming the tool, the field and the fix: at run time it
    never raises.
    """
    out = AgentDeclarations()
    for name, pai_tool in _function_tools(agent):
        function = getattr(pai_tool, "function", None)
        out.functions[name] = function
        try:
            contract = _declaration_from_metadata(name, getattr(pai_tool, "metadata", None))
        except DeclarationError as bad:
            tell_bad_declaration(bad)
            continue
        if contract is None:
            decorated = contract_of(function)
            if decorated is None:
                continue
            if decorated.name != name:
                out.superseded.add(decorated.name)
            contract = dataclasses.replace(decorated, name=name)
        if CONTRACTS.get(name) != contract:
            CONTRACTS.declare(contract)
    return out
