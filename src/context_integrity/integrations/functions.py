"""The plain-function integration: ``@tool`` and ``declare_tool``.

A decorated function is a tool whose every call is a :class:`~context_integrity.telemetry.run.tool_call.ToolScope`:
an ``execute_tool {name}`` span (the host's, when a framework already opened it for this call)
whose result is judged at the write seam before the caller receives it. ``declare_tool`` declares
a tool this application did not write, by name. Both raise only at definition, for a bad
declaration; nothing a tool later returns makes a wrapper raise.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Set
from typing import Any, Final, ParamSpec, Protocol, TypeVar, cast, overload

from .._memo import ToldOnce
from ..contracts import DeclarationError, ToolContract, define_contract
from ..contracts.claims import ClaimsContract, define_claims
from ..limits import MAX_ATTRIBUTE_CHARS, MAX_WARNED_DECLARATIONS
from ..telemetry.run.tool_call import ToolScope, unopened_call
from ..telemetry.setup import CONTRACTS
from ..text import clip, nearest

logger = logging.getLogger("context_integrity")

P = ParamSpec("P")
R = TypeVar("R")


class FrameworkTool(Protocol):
    """A framework's own tool object (LangChain's ``BaseTool``, the Agents SDK's ``FunctionTool``):
    it carries the name the model calls it by. ``@tool`` above one declares that name and hands the
    object back as it is."""

    @property
    def name(self) -> str: ...


FrameworkToolT = TypeVar("FrameworkToolT", bound=FrameworkTool)


class ToolDecorator(Protocol):
    """What ``tool(...)`` with declarations returns: over a function, its judged wrapper, typed as
    the function; over a framework's tool object, that object."""

    @overload
    def __call__(self, target: FrameworkToolT, /) -> FrameworkToolT: ...
    @overload
    def __call__(self, target: Callable[P, R], /) -> Callable[P, R]: ...


# Set on the decorated function itself too: a framework decorator placed under ``@tool`` registered
# the undecorated function, and that is the object the framework's integration finds at run time.
CONTRACT_ATTRIBUTE: Final = "__context_integrity_contract__"

# The call a host integration judges itself (it holds the framework's own hook for the raw
# result): when the framework calls the very wrapper named here, the wrapper passes straight
# through, so one call is judged once, under the framework's name for it.
_call_judged_by_host: contextvars.ContextVar[object | None] = contextvars.ContextVar(
    "context_integrity_call_judged_by_host", default=None
)


def contract_of(fn: object) -> ToolContract | None:
    """The contract ``@tool`` declared for ``fn`` (its wrapper or the function it wrapped), if any."""
    for key in ("contract", CONTRACT_ATTRIBUTE):
        found = getattr(fn, key, None)
        if isinstance(found, ToolContract):
            return found
    return None


class host_judges_call:
    """Within this block a call of ``fn`` (a ``@tool`` wrapper) is the host's to judge.

    A class rather than a generator context manager: it runs around every pydantic-ai tool call.
    """

    __slots__ = ("_fn", "_token")

    def __init__(self, fn: object) -> None:
        self._fn = fn
        self._token: contextvars.Token[object | None] | None = None

    def __enter__(self) -> None:
        self._token = _call_judged_by_host.set(self._fn)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _call_judged_by_host.reset(self._token)


# The decorated tools whose calls a framework integration judges itself, at the host's own seam
# (the function decorated under a framework's tool decorator): inside such a host run their
# wrapper steps aside, so each call is judged once, under the name the framework gave it.
_judged_by_host: contextvars.ContextVar[Set[str]] = contextvars.ContextVar(
    "context_integrity_judged_by_host", default=frozenset()
)


def judged_by_host(names: Set[str]) -> contextvars.Token[Set[str]]:
    """Within this context, the decorated tools ``names`` are judged by the host integration."""
    return _judged_by_host.set(names)


def release_to_wrappers(token: contextvars.Token[Set[str]]) -> None:
    """Undo :func:`judged_by_host`."""
    _judged_by_host.reset(token)


def _is_agents_tool(target: object) -> bool:
    """Whether ``target`` is an OpenAI Agents SDK ``FunctionTool``, known without importing the SDK."""
    return any(
        cls.__name__ == "FunctionTool" and cls.__module__.startswith("agents.")
        for cls in type(target).__mro__
    )


def _framework_tool_name(target: object) -> str | None:
    """The name a framework's tool object shows the model, when ``target`` is one (LangChain's
    ``BaseTool``, the Agents SDK's ``FunctionTool``): its integration judges its calls, so it is
    declared under that name, not wrapped."""
    if not (_is_langchain_tool(target) or _is_agents_tool(target)):
        return None
    name = getattr(target, "name", None)
    return name if isinstance(name, str) else ""


def _open_call(
    contract: ToolContract, signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> ToolScope | str | None:
    """The call's scope; else the refusal to hand over (enforce cannot judge it); else ``None``."""
    if contract.name in _judged_by_host.get():
        return None
    try:
        # The arguments are bound only if a check (or capture_content) asks for them.
        return ToolScope(contract, functools.partial(_arguments_of, signature, args, kwargs))
    except Exception as ours:
        return unopened_call(contract, ours)


def _signature_of(fn: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _arguments_of(
    signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Mapping[str, Any]:
    """A call's arguments by parameter name (``**kwargs`` spread, ``self``/``cls`` left out)."""
    if signature is None:
        return dict(kwargs)
    try:
        bound = signature.bind_partial(*args, **kwargs)
    except TypeError:
        return dict(kwargs)
    out: dict[str, Any] = {}
    for key, value in bound.arguments.items():
        kind = signature.parameters[key].kind
        if kind is inspect.Parameter.VAR_KEYWORD and isinstance(value, Mapping):
            out.update(value)
        elif key not in ("self", "cls"):
            out[key] = value
    return out


def _refuse_unknown(where: str, tool_name: object, unknown: Mapping[str, object]) -> None:
    if not unknown:
        return
    # The keywords are read off the signature, so the message never lags behind a new field.
    takes = [
        p.name
        for p in inspect.signature(tool if where.startswith("ci.tool") else declare_tool).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    word = next(iter(unknown))
    close = nearest(word, takes)
    hint = f" Did you mean {close!r}?" if close else ""
    raise DeclarationError(
        f"Tool {tool_name!r}: {where} got an unknown keyword {word!r}.{hint} It takes: {', '.join(takes)}."
    )


# Names declared by ``@tool`` on a plain function. Its own wrapper judges every call wherever it is
# made, so no host needs to offer it: a framework run that does not is no sign of a typo.
_WRAPPED_NAMES: set[str] = set()


def declare_tool(
    name: str,
    *,
    result_columns: object = None,
    arguments_from: object = None,
    input_schema: Mapping[str, Any] | None = None,
    description: str | None = None,
    once_per_run: bool = False,
    result_kind: object = None,
    settles: object = None,
    replace: bool = False,
    **unknown: object,
) -> ToolContract:
    """Declare the contract of a tool this application did not write (a framework or MCP tool).

    ``result_kind`` names what the result is (e.g. ``'dataset/rows'``); it is informational, and
    travels over MCP with the other declarations. ``settles={"entity": "port", "facts": ["status"]}``
    says its rows settle facts (which field names the entity, which fields are facts of it), for
    the claims contract to compare an answer against.

    Raises :class:`~context_integrity.DeclarationError` naming the tool, the field
    and the fix when a declaration cannot be honoured, a keyword is misspelled, or the
    name is already declared with a different contract (pass ``replace=True`` to mean it).
    """
    _refuse_unknown("declare_tool()", name, unknown)
    contract = define_contract(
        name,
        description=description,
        result_columns=result_columns,
        arguments_from=arguments_from,
        input_schema=input_schema,
        once_per_run=once_per_run,
        result_kind=result_kind,
        settles=settles,
    )
    CONTRACTS.declare(contract, replace=replace is True)
    _WRAPPED_NAMES.discard(contract.name)
    return contract


def warn_unoffered(
    host: str, agent_name: str, offered: Iterable[str], *, superseded: Set[str], fix: str
) -> None:
    """One warning naming the declared tools this host run never offered, if any.

    A declaration under a name the model never sees (a typo, the Python name of a tool the
    framework renamed) arms nothing, silently; each integration calls this once per host run so
    the ``context_integrity`` logger says so. ``superseded``: Python names a framework name
    replaced (the declaration was moved, not lost); ``fix``: how this host names a tool. Only
    declarations that need a host to offer them count: ``@tool`` on a plain function is judged
    by its own wrapper, so a process that also calls such functions itself is not warned about them.
    """
    seen = frozenset(offered)
    missing = sorted(CONTRACTS.names() - seen - superseded - _WRAPPED_NAMES)
    if missing:
        # A near match among the offered names is most likely the tool meant: said beside the name.
        offered_names = sorted(seen)
        named = [
            f"{name!r} (did you mean {close!r}?)" if (close := nearest(name, offered_names)) else repr(name)
            for name in missing
        ]
        logger.warning(
            "context_integrity: declared tool(s) %s are not offered by %s agent %r (offered: %s), so "
            "nothing is judged for them in this run; a declaration is matched by the tool name the "
            "model sees: %s",
            clip(", ".join(named), MAX_ATTRIBUTE_CHARS),
            host,
            agent_name,
            clip(", ".join(map(repr, sorted(seen))) or "none", MAX_ATTRIBUTE_CHARS),
            fix,
        )


# The bad declarations read at run time already told, by their message (which names the tool and
# the field): a process running the agent a thousand times is told once.
_TOLD_BAD_DECLARATIONS: Final[ToldOnce[str]] = ToldOnce(MAX_WARNED_DECLARATIONS)


def tell_bad_declaration(error: DeclarationError) -> None:
    """A declaration a framework tool carries, found bad when a run reads it (raising there would
    break the host's run): logged once per process, its message naming the tool, the field and the
    fix; repeats, and any past the bound, at debug."""
    message = str(error)
    if not _TOLD_BAD_DECLARATIONS.first(message):
        logger.debug("context_integrity: %s (the tool is not judged until it is fixed)", message)
        return
    logger.error("context_integrity: %s (the tool is not judged until it is fixed)", message)


def declare_claims(output_model: object, claims: object) -> ClaimsContract:
    """Declare which typed answer fields claim which settled facts (arms unsupported-claim).

    ``output_model`` is the agent's pydantic output model; ``claims`` maps an answer field (a
    dot-path) to the ``(entity, field)`` a tool settles with ``ci.semantic(...)``. Raises
    :class:`~context_integrity.DeclarationError` without a model, when empty, or with a blank
    entity or field.
    """
    contract = define_claims(output_model, claims)
    CONTRACTS.declare_claims(contract)
    return contract


def _first_line(doc: str | None) -> str | None:
    if not doc:
        return None
    stripped = inspect.cleandoc(doc).strip()
    return stripped.splitlines()[0] if stripped else None


def _is_langchain_tool(target: object) -> bool:
    """Whether ``target`` is a LangChain ``BaseTool``, known without importing LangChain."""
    return any(
        cls.__name__ == "BaseTool" and cls.__module__.startswith("langchain_core.tools")
        for cls in type(target).__mro__
    )


@overload
def tool(fn: FrameworkToolT, /) -> FrameworkToolT: ...
@overload
def tool(fn: Callable[P, R], /) -> Callable[P, R]: ...
@overload
def tool(
    fn: None = None,
    /,
    *,
    result_columns: object = None,
    arguments_from: object = None,
    name: str | None = None,
    description: str | None = None,
    input_schema: Mapping[str, Any] | None = None,
    once_per_run: bool = False,
    result_kind: object = None,
    settles: object = None,
    replace: bool = False,
) -> ToolDecorator: ...
def tool(
    fn: Callable[P, R] | FrameworkTool | None = None,
    /,
    *,
    result_columns: object = None,
    arguments_from: object = None,
    name: str | None = None,
    description: str | None = None,
    input_schema: Mapping[str, Any] | None = None,
    once_per_run: bool = False,
    result_kind: object = None,
    settles: object = None,
    replace: bool = False,
    **unknown: object,
) -> Callable[P, R] | FrameworkTool | ToolDecorator:
    """Declare a tool's contract and instrument its calls (sync or async).

    ``result_columns`` says what its rows contain; ``arguments_from`` names the
    tools whose results its arguments come from; ``once_per_run=True`` says its effect must
    happen once per run (a repeat with equal arguments is a duplicate-execution). A bad declaration raises
    :class:`~context_integrity.DeclarationError` here, at definition; nothing
    the tool later returns can make the wrapper raise.
    """

    if isinstance(fn, str):
        raise DeclarationError(
            f"Tool {fn!r}: ci.tool({fn!r}) passes the name where the function goes. "
            f"Write @ci.tool(name={fn!r}) (with any other declarations as keywords)."
        )
    if fn is not None and not callable(fn) and _framework_tool_name(fn) is None:
        raise DeclarationError(
            f"ci.tool() decorates a function, and got {type(fn).__name__} {fn!r:.80}. "
            "Write @ci.tool above a def, or @ci.tool(result_columns=..., arguments_from=...)."
        )
    if fn is not None or name is not None:
        _refuse_unknown(
            "ci.tool()", name or _framework_tool_name(fn) or getattr(fn, "__name__", None), unknown
        )

    def decorate(target: Callable[P, R]) -> Callable[P, R]:
        framework_name = _framework_tool_name(target)
        # A misspelled keyword, refused naming the function it decorates (known only here).
        _refuse_unknown("ci.tool()", name or framework_name or getattr(target, "__name__", None), unknown)
        if framework_name is not None:
            # Above the framework's decorator: the framework's name is the one the model calls.
            declare_tool(
                framework_name,
                result_columns=result_columns,
                arguments_from=arguments_from,
                input_schema=input_schema,
                once_per_run=once_per_run,
                description=description,
                settles=settles,
            )
            return target
        if not callable(target):
            raise DeclarationError(
                f"ci.tool(...) decorates a function, and got {type(target).__name__} {target!r:.80}. "
                "Put it above a def."
            )
        contract = declare_tool(
            name or str(getattr(target, "__name__", "")),
            result_columns=result_columns,
            arguments_from=arguments_from,
            input_schema=input_schema,
            once_per_run=once_per_run,
            description=description or _first_line(getattr(target, "__doc__", None)),
            result_kind=result_kind,
            settles=settles,
            replace=replace,
        )
        _WRAPPED_NAMES.add(contract.name)
        signature = _signature_of(target)
        # A function that refuses attributes (a builtin, a slotted callable) is still declared by name.
        with contextlib.suppress(AttributeError, TypeError):
            setattr(target, CONTRACT_ATTRIBUTE, contract)

        if inspect.iscoroutinefunction(target):
            async_target: Callable[..., Awaitable[Any]] = target

            @functools.wraps(target)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                if _call_judged_by_host.get() is async_wrapper:
                    passing = _call_judged_by_host.set(None)  # consumed: nested calls are ours again
                    try:
                        return await async_target(*args, **kwargs)
                    finally:
                        _call_judged_by_host.reset(passing)
                call = _open_call(contract, signature, args, kwargs)
                if not isinstance(call, ToolScope):
                    result = await async_target(*args, **kwargs)
                    return result if call is None else call
                try:
                    result = await async_target(*args, **kwargs)
                except BaseException as error:
                    call.fail(error)
                    raise
                return call.finish(result)

            async_wrapper.contract = contract  # type: ignore[attr-defined]
            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(target)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            # The mark is read inline: this runs on every call, and almost never matches.
            if _call_judged_by_host.get() is wrapper:
                passing = _call_judged_by_host.set(None)  # consumed: nested calls are ours again
                try:
                    return target(*args, **kwargs)
                finally:
                    _call_judged_by_host.reset(passing)
            call = _open_call(contract, signature, args, kwargs)
            if not isinstance(call, ToolScope):
                result = target(*args, **kwargs)
                return result if call is None else call  # type: ignore[return-value]
            try:
                result = target(*args, **kwargs)
            except BaseException as error:
                call.fail(error)
                raise
            return call.finish(result)  # type: ignore[no-any-return]

        wrapper.contract = contract  # type: ignore[attr-defined]
        return wrapper

    # decorate takes a framework's tool object too (handed back as it is): the overloads and
    # ToolDecorator say which type comes back for which target, which one signature cannot.
    if fn is None:
        return cast(ToolDecorator, decorate)
    return decorate(cast("Callable[P, R]", fn))
