"""The one reader of what a tool returned: a rowset, a declared absence, or neither.

Every write-seam check reads a result through :func:`read_result`, once per
result, so two checks can never disagree about what a result is (they once
did, about a named tuple of dicts).

What counts, in Python terms (see DESIGN.md):

* a **rowset** is a ``list`` or ``tuple`` whose every element is a ``Mapping``,
  a pydantic ``BaseModel`` instance or a dataclass instance; the empty list is
  a rowset of zero rows;
* an **absence** is an :class:`Absence`, the tool's own "the search ran and
  matched nothing" (made with :func:`absent`);
* a non-empty ``list`` or ``tuple`` of anything else (ids, prose, nested lists) is
  **items**: something was found, but there are no columns to judge;
* MCP content blocks (``{"type": "text", "text": ...}`` and the SDK's ``TextContent`` and its
  siblings) are never rows: a list of them is **items**; an MCP ``CallToolResult`` (the SDK's
  model, its wire dict, or fastmcp's client dataclass) is read through :func:`judged_value`, on
  its structured content;
* everything else is **other**: prose, ``None``, a ``{"rows": [...]}`` wrapper,
  scalars, a named tuple (one record, not rows), and any generator or
  iterator, which is never consumed.

A list or tuple is read through the base type's own iteration, bounded by its
real length, so a subclass whose ``__iter__`` never ends or has side effects is
read exactly as the data it holds. A result whose own code raises while it is
read (a ``Mapping`` whose ``__getitem__`` throws, a property that throws) is
**unreadable**: "could not look", never "nothing was wrong". Never raises.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Mapping
from itertools import islice
from typing import TYPE_CHECKING, Final, Literal, NamedTuple, TypeGuard

from .columns import is_model_class

if TYPE_CHECKING:
    from pydantic import BaseModel

ResultShape = Literal["rowset", "items", "absence", "other", "unreadable"]


class Absence(str):
    """A tool's declared "the search ran and matched nothing".

    It is a ``str`` on purpose: frameworks that hand tool results to the model
    as text keep working, and the model reads a plain sentence. It also
    carries what was looked for and why nothing matched, for the checks.
    Make one with :func:`absent`.

    What was looked for is kept on ``.looked_for`` and deliberately NOT written
    into the sentence: tool results are ground for the grounding checks, so a
    sentence repeating the value would ground it, and a made-up id retried
    after its own "not found" would pass as served.
    """

    looked_for: object
    reason: str | None

    def __new__(cls, looked_for: object = None, reason: str | None = None) -> Absence:
        text = "No match: the search ran and found nothing."
        if isinstance(reason, str) and reason.strip():
            text += f" Reason: {reason.strip()}"
            if not text.endswith((".", "!", "?")):
                text += "."
        made = super().__new__(cls, text)
        made.looked_for = looked_for
        made.reason = reason
        return made

    def __getnewargs__(self) -> tuple[object, str | None]:  # type: ignore[override]
        # copy and pickle rebuild from what was looked for, not from the text
        return (self.looked_for, self.reason)


def absent(looked_for: object = None, *, reason: str | None = None) -> Absence:
    """Return this from a lookup tool when the search ran and matched nothing.

    ``looked_for`` is what was searched for (kept whole on ``.looked_for`` for
    the checks, never echoed into the text the model reads); ``reason`` is an
    optional explanation shown to the model.
    """
    return Absence(looked_for, reason)


def is_absence(value: object) -> TypeGuard[Absence]:
    """Whether ``value`` is a declared absence made by :func:`absent` (a type checker then knows it
    is one, and so a ``str``)."""
    return isinstance(value, Absence)


class ResultReading(NamedTuple):
    """What one tool result is, read once.

    For a rowset, ``rows`` holds each row as a mapping of column name to value:
    the caller's own mappings (a list of 10,000 dicts is not copied row by
    row); pydantic-model rows and mixed rows are adapted, each into a fresh
    ``dict`` of its fields. ``plain`` is true when every row is exactly a
    ``dict``, which lets the column check take its fastest path. Rows that
    are all instances of one dataclass are not adapted: ``fields`` names its
    fields (the only columns such a row has), and either ``rows`` holds each
    instance's own attribute dict, or ``columns`` holds, per field, every
    row's value in row order (read in one C-level pass) and ``rows`` is
    empty. ``row_count`` counts either way.

    A named tuple rather than a frozen dataclass: one is made for every tool result, and a
    frozen dataclass spends more on being made than the column check spends on ten clean rows.
    """

    shape: ResultShape
    rows: tuple[Mapping[str, object], ...] = ()
    plain: bool = False
    # Rows of one dataclass type: ``fields`` are its fields, the only columns its rows have. Their
    # values are either the rows' own attribute dicts in ``rows`` (read in place), or, read in one
    # C-level pass into ``columns``, per field the values of every row (``rows`` then empty).
    fields: tuple[str, ...] | None = None
    columns: tuple[tuple[object, ...], ...] = ()
    column_length: int = 0  # how many rows ``columns`` holds

    @property
    def row_count(self) -> int:
        return self.column_length if self.columns else len(self.rows)

    @property
    def is_rowset(self) -> bool:
        return self.shape == "rowset"

    @property
    def empty(self) -> bool:
        """An absence, or a rowset of zero rows: the two shapes that say "found nothing"."""
        return self.shape == "absence" or (self.shape == "rowset" and not self.row_count)


OTHER: Final = ResultReading("other")
ITEMS: Final = ResultReading("items")
UNREADABLE: Final = ResultReading("unreadable")
ABSENCE: Final = ResultReading("absence")
NO_ROWS: Final = ResultReading("rowset", (), plain=True)

_RowPlan = Literal["mapping", "model", "dataclass"]


def _plan_for(row_type: type) -> _RowPlan | None:
    """How rows of one Python type are read, decided once per type, not per row."""
    if issubclass(row_type, Mapping):
        return "mapping"
    if is_model_class(row_type):
        return "model"
    # ``row_type`` is the type of an element, so a dataclass CLASS placed in the
    # list has type ``type`` here and is (rightly) not read as a row.
    if dataclasses.is_dataclass(row_type):
        return "dataclass"
    return None


def _model_row(row: BaseModel) -> dict[str, object]:
    # pydantic v2 keeps field values in ``__dict__`` and ``extra='allow'``
    # extras in ``__pydantic_extra__``; reading both is what the model would
    # serialise, without running validators or computed fields.
    cells = dict(vars(row))
    extra = getattr(row, "__pydantic_extra__", None)
    if extra:
        cells.update(extra)
    return cells


_MISSING: Final = object()


def _dataclass_row(row: object, names: tuple[str, ...]) -> dict[str, object]:
    cells: dict[str, object] = {}
    for name in names:
        # A field that was never set (``field(init=False)`` with no default)
        # is an absent key, not an error.
        value = getattr(row, name, _MISSING)
        if value is not _MISSING:
            cells[name] = value
    return cells


_PLAIN_ROWS: Final[frozenset[type]] = frozenset({dict})

# MCP's content block types, by the ``type`` they carry, with the field each one must have.
CONTENT_BLOCK_FIELDS: Final[Mapping[str, str]] = {
    "text": "text",
    "image": "data",
    "audio": "data",
    "resource": "resource",
    "resource_link": "uri",
}


def is_content_block(value: object) -> bool:
    """An MCP content block, as a pydantic model of the SDK or as its dict form. Never raises."""
    try:
        if isinstance(value, Mapping):
            kind = value.get("type")
            return isinstance(kind, str) and CONTENT_BLOCK_FIELDS.get(kind, "\0") in value
        kind = getattr(value, "type", None)
        needed = CONTENT_BLOCK_FIELDS.get(kind) if isinstance(kind, str) else None
        return needed is not None and is_model_class(type(value)) and hasattr(value, needed)
    except Exception:
        return False


# ── MCP tool results ────────────────────────────────────────────────────

_NOT_JUDGED: Final = object()
_ABSENT: Final = object()


class McpResult(NamedTuple):
    """An MCP ``CallToolResult``, whichever shape carried it: its content blocks, structured
    content, error flag, ``_meta``, and (fastmcp's client only) ``data``, the structured content
    already parsed and unwrapped (absent elsewhere)."""

    content: object
    structured: object
    is_error: object
    meta: object
    data: object = _ABSENT


# The attribute names of the result's fields: snake_case in the SDK's 2.x line and in fastmcp's
# client dataclass, camelCase (like the wire) in the SDK's 1.x line, which LangChain's MCP adapter
# still requires.
_FIELD_NAMES: Final = (("structured_content", "is_error"), ("structuredContent", "isError"))


def mcp_result(value: object) -> McpResult | None:
    """``value`` read as an MCP ``CallToolResult`` (the SDK's model of either line, its wire dict,
    or fastmcp's client dataclass), else ``None``. Raises what the value's own code raises."""
    if isinstance(value, Mapping):
        if "content" in value and ("isError" in value or "structuredContent" in value):
            return McpResult(
                value.get("content"), value.get("structuredContent"), value.get("isError"), value.get("_meta")
            )
        return None
    kind = type(value)
    model = is_model_class(kind)
    if not (model or dataclasses.is_dataclass(kind)) or not hasattr(value, "content"):
        return None
    for structured, is_error in _FIELD_NAMES:
        if hasattr(value, is_error) and (model or hasattr(value, structured)):
            return McpResult(
                getattr(value, "content", None),
                getattr(value, structured, None),
                getattr(value, is_error),
                getattr(value, "meta", None),
                getattr(value, "data", _ABSENT) if not model else _ABSENT,
            )
    return None


def judged_value(value: object, *, wrapped: bool = False) -> object:
    """The part of a tool result the write seam judges. Never raises.

    An MCP ``CallToolResult`` (see :func:`mcp_result`) is judged on its structured content,
    unwrapped from ``{"result": ...}`` when the tool's output schema says it wraps (``wrapped``);
    fastmcp's, whose structured content is absent, on its ``data`` (parsed and unwrapped already).
    An error result, or one with no structured content (only content blocks), is judged as nothing
    (not-applicable). Anything else is itself.
    """
    if type(value) is list:
        return value  # the common result: no list is a ``CallToolResult``
    try:
        fields = mcp_result(value)
        if fields is None:
            return value
        if fields.is_error:
            return _NOT_JUDGED
        structured = fields.structured
        if structured is None:
            return _NOT_JUDGED if fields.data is _ABSENT or fields.data is None else fields.data
        if wrapped and isinstance(structured, Mapping) and list(structured) == ["result"]:
            return structured["result"]
        return structured
    except Exception:
        return _NOT_JUDGED


def _elements(value: list[object] | tuple[object, ...]) -> tuple[object, ...]:
    """The elements a list or tuple holds, read through the base type, never a subclass's ``__iter__``.

    Bounded by the length ``len`` reports, so neither a subclass's endless ``__iter__`` nor a lying
    ``__len__`` can make the read longer than the data (a ``__len__`` that raises: unreadable).
    """
    if type(value) is tuple or type(value) is list:
        return tuple(value)
    count = len(value)
    base = list.__iter__(value) if isinstance(value, list) else tuple.__iter__(value)
    return tuple(islice(base, max(0, count)))


def _is_record(value: object) -> bool:
    """A named tuple is one record with fields, not a list of rows."""
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def _reads_as_its_dict(row_type: type, fields: tuple[dataclasses.Field[object], ...]) -> bool:
    """Whether every instance's ``vars()`` holds exactly what reading its fields would read.

    True for the plain dataclass: no ``__slots__`` and no overridden attribute access anywhere in
    its classes, no field shadowed by a class-level data descriptor, every field set by ``__init__``.
    """
    classes = [klass for klass in row_type.__mro__ if klass is not object]
    for klass in classes:
        own = vars(klass)
        if "__slots__" in own or "__getattribute__" in own or "__getattr__" in own:
            return False
    for f in fields:
        if not f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            return False
        for klass in classes:
            if f.name in vars(klass):
                shadow = type(vars(klass)[f.name])
                if hasattr(shadow, "__set__") or hasattr(shadow, "__delete__"):
                    return False
                break
    return True


# ``vars`` as a C-level getter: the builtin takes its argument as a tuple, made anew for every row.
_OWN_DICT: Final = operator.attrgetter("__dict__")


def _records(row_type: type, elements: tuple[object, ...]) -> ResultReading | None:
    """Rows of one dataclass type, every field read in one C-level pass; ``None`` when a field is unset."""
    fields = dataclasses.fields(row_type)
    names = tuple(f.name for f in fields)
    if not names:
        return None
    if _reads_as_its_dict(row_type, fields):
        # Each row's own attribute dict IS its row (read in place, never copied or written): the
        # rowset is then plain dicts and takes the fastest path. ``fields`` goes with them: an
        # attribute that is no field is never a column.
        return ResultReading("rowset", tuple(map(_OWN_DICT, elements)), plain=True, fields=names)
    getter = operator.attrgetter(*names)
    try:
        if len(names) == 1:
            columns: tuple[tuple[object, ...], ...] = (tuple(map(getter, elements)),)
        else:
            columns = tuple(zip(*map(getter, elements), strict=True))
    except AttributeError:  # a field never set: the row-by-row read says "absent key" for it
        return None
    return ResultReading("rowset", fields=names, columns=columns, column_length=len(elements))


def read_result(value: object) -> ResultReading:
    """Read a tool's own return value once: rowset, absence, other or unreadable. Never raises."""
    if type(value) is list:
        # The common result, a list of plain dicts, decided before anything else is asked. A dict
        # without a "type" key is no content block, which spares the general look at the first row.
        elements: tuple[object, ...] = tuple(value)
        if (
            elements
            and set(map(type, elements)) == _PLAIN_ROWS
            and (dict.get(elements[0], "type") is None or not is_content_block(elements[0]))  # type: ignore[call-overload]
        ):
            return ResultReading("rowset", elements, True)  # type: ignore[arg-type]
    if isinstance(value, Absence):
        return ABSENCE
    if value is _NOT_JUDGED or not isinstance(value, (list, tuple)) or _is_record(value):
        # Generators and other iterators land here untouched: judging them
        # would consume the result before the model could read it.
        return OTHER
    try:
        elements = _elements(value)
        if not elements:
            return NO_ROWS
        row_types = set(map(type, elements))
        if is_content_block(elements[0]):
            return ITEMS  # MCP content blocks carry text for the model, never rows to judge
        if row_types == _PLAIN_ROWS:
            # The common result, a list of plain dicts: no plan to make, no row to adapt.
            return ResultReading("rowset", elements, plain=True)  # type: ignore[arg-type]
        plans: dict[type, _RowPlan] = {}
        for row_type in row_types:
            plan = _plan_for(row_type)
            if plan is None:
                return ITEMS  # scalars, lists, classes, prose: found something, but no columns
            plans[row_type] = plan
        if all(plan == "mapping" for plan in plans.values()):
            return ResultReading("rowset", elements)  # type: ignore[arg-type]
        if len(plans) == 1 and "dataclass" in plans.values():
            records = _records(next(iter(plans)), elements)
            if records is not None:
                return records
        field_names = {
            row_type: tuple(f.name for f in dataclasses.fields(row_type))
            for row_type, plan in plans.items()
            if plan == "dataclass"
        }
        rows: list[Mapping[str, object]] = []
        for row in elements:
            plan = plans[type(row)]
            if plan == "mapping":
                rows.append(row)  # type: ignore[arg-type]
            elif plan == "model":
                rows.append(_model_row(row))  # type: ignore[arg-type]
            else:
                rows.append(_dataclass_row(row, field_names[type(row)]))
        return ResultReading("rowset", tuple(rows), plain=all(type(row) is dict for row in rows))
    except Exception:  # the result's own code raised (a property, a __getattr__): we could not look
        return UNREADABLE
