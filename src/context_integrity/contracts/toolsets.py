"""Groups of tools: the application's word that one is switched off (``run.suspend``), and a
group declared by name (a contracts file's ``[toolsets.NAME]``), each checked once.

A declared toolset gives ``run.suspend(NAME)`` its tools; one declared ``suspended`` is switched
off from the start of every run, so a request that still offers one of its tools is an
invariant-violation at the compose seam wherever the run is judged (in process, or read back
from a trace, where no ``run.suspend`` call was recorded).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .errors import DeclarationError, KeyPath


@dataclass(frozen=True, slots=True)
class Toolset:
    """A named group of tools, and whether it is switched off for every run."""

    name: str
    tools: tuple[str, ...]
    suspended: bool = False


Refusal = Callable[[str, str, KeyPath], DeclarationError]


def _group_and_tools(group: object, tools: object, refuse: Refusal) -> tuple[str, tuple[str, ...]]:
    if not isinstance(group, str) or not group.strip():
        raise refuse(
            f"the group name must be a non-blank string (got {group!r}).",
            "Name the skill, toolset or server being switched off.",
            (),
        )
    if isinstance(tools, str) or not isinstance(tools, (list, tuple, set, frozenset)):
        raise refuse(
            f"tools must be a list of tool names (got {type(tools).__name__}).",
            "Pass the names of the tools the group owns, e.g. ['open_ticket'].",
            ("tools",),
        )
    names_: list[str] = []
    for index, name in enumerate(tools):
        if not isinstance(name, str) or not name.strip():
            raise refuse(
                f"tools has a blank or non-string entry ({name!r}).",
                "Every entry must be a tool name exactly as it is offered.",
                ("tools", index),
            )
        if name not in names_:
            names_.append(name)
    return group, tuple(names_)


def assert_suspension(group: object, tools: object) -> tuple[str, tuple[str, ...]]:
    """The group name and its distinct tool names; refuses a blank group or a non-list of names."""
    where = "run.suspend()" if not isinstance(group, str) or not group.strip() else f"run.suspend({group!r})"

    def refuse(problem: str, fix: str, at: KeyPath) -> DeclarationError:
        return DeclarationError(f"{where}: {problem} {fix}")

    return _group_and_tools(group, tools, refuse)


def define_toolset(name: object, tools: object, *, suspended: object = False) -> Toolset:
    """Validate a declared toolset: a non-blank name, a non-empty list of tool names, a boolean."""

    def refuse(problem: str, fix: str, at: KeyPath) -> DeclarationError:
        error = DeclarationError(f"Toolset {name!r}: {problem} {fix}")
        error.at = at
        return error

    group, names_ = _group_and_tools(name, tools, refuse)
    if not names_:
        raise refuse(
            "tools is empty, so the toolset owns nothing.",
            "Name the tools it owns, e.g. tools = ['open_ticket'].",
            ("tools",),
        )
    if not isinstance(suspended, bool):
        raise refuse(
            f"suspended is {type(suspended).__name__} ({suspended!r}), not a boolean.",
            "Write suspended = true for a toolset switched off in every run, or leave it out.",
            ("suspended",),
        )
    return Toolset(group, names_, suspended)
