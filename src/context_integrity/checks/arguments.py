"""Reading a tool call's arguments: shared by the grounding checks.

Both unsupported-argument (at the choice seam) and empty-lookup (at the
write seam) judge a call argument by argument, and both must name the exact
argument they mean, so a finding's predicate is the argument's dot-path
(``machine``, ``filter.hosts.0``) and two bad arguments of one call are two
defects. The walk lives here, once, so the two checks can never disagree
about what a "leaf" or a "path" is.

Arguments come from a model and are not trusted to be well-formed: the walk
is bounded, survives cycles and never raises. (A schema's enum words are read
once, at definition, by :func:`context_integrity.contracts.declared_enum_values`.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from .. import limits

# The path of a string that IS the arguments (not inside them). Models send
# an object; a framework that forwards an unparsed string still gets a name.
ROOT_PATH: Final = "$"


def _join(prefix: str, key: object) -> str:
    try:
        part = key if isinstance(key, str) else str(key)
    except Exception:  # a key whose __str__ raises still needs a name
        part = f"<{type(key).__name__}>"
    return f"{prefix}.{part}" if prefix else part


def _walk(
    node: object,
    path: str,
    depth: int,
    on_path: set[int],
    out: list[tuple[str, str]],
) -> None:
    if isinstance(node, str):
        out.append((path or ROOT_PATH, str(node)))
        return
    if depth >= limits.MAX_ARGUMENT_DEPTH:
        return
    if isinstance(node, Mapping):
        children: list[tuple[object, object]] = list(node.items())
    elif isinstance(node, (list, tuple)):
        children = list(enumerate(node))
    else:
        return  # numbers, booleans, None and opaque objects are not string leaves
    marker = id(node)
    if marker in on_path:  # a cycle: this container is its own ancestor
        return
    on_path.add(marker)
    try:
        for key, child in children:
            _walk(child, _join(path, key), depth + 1, on_path, out)
    finally:
        on_path.discard(marker)


def argument_leaves(arguments: object) -> list[tuple[str, str]]:
    """Every string leaf of ``arguments`` with its dot-path, in walk order.

    Mappings are walked by key, lists and tuples by numeric index; anything
    that is not a string, a mapping, a list or a tuple is skipped. The walk
    stops at :data:`limits.MAX_ARGUMENT_DEPTH` and at cycles. A container
    shared by two paths is walked under both (each path is its own argument).
    A bare string as the whole arguments is reported under :data:`ROOT_PATH`.
    Never raises: a mapping that fails mid-walk yields the leaves read so far.
    """
    out: list[tuple[str, str]] = []
    # A plain try rather than ``contextlib.suppress``: this runs for every armed call.
    try:  # noqa: SIM105
        _walk(arguments, "", 0, set(), out)
    except Exception:  # a hostile mapping: keep what was read before it failed
        pass
    return out
