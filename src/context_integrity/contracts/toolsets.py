"""The application's word that a group of tools is switched off (``run.suspend``), checked once."""

from __future__ import annotations

from .errors import DeclarationError


def assert_suspension(group: object, tools: object) -> tuple[str, tuple[str, ...]]:
    """The group name and its distinct tool names; refuses a blank group or a non-list of names."""
    if not isinstance(group, str) or not group.strip():
        raise DeclarationError(
            f"run.suspend(): the group name must be a non-blank string (got {group!r}). "
            "Name the skill, toolset or server being switched off."
        )
    if isinstance(tools, str) or not isinstance(tools, (list, tuple, set, frozenset)):
        raise DeclarationError(
            f"run.suspend({group!r}): tools must be a list of tool names (got {type(tools).__name__}). "
            "Pass the names of the tools the group owns, e.g. ['open_ticket']."
        )
    names_: list[str] = []
    for name in tools:
        if not isinstance(name, str) or not name.strip():
            raise DeclarationError(
                f"run.suspend({group!r}): tools has a blank or non-string entry ({name!r}). "
                "Every entry must be a tool name exactly as it is offered."
            )
        if name not in names_:
            names_.append(name)
    return group, tuple(names_)
